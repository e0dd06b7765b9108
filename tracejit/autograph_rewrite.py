"""The source rewriting behind tracejit/autograph.py: a user function's AST, with its Python
control flow turned into calls of autograph's run-time helpers (``__tj.if_stmt`` ...).

Invariants: the rewritten function has the user's parameters, defaults and line numbers (errors
and provenance name the user's lines); every converted construct becomes local functions of the
variables it assigns or reads plus one helper call assigning them back, so the helper decides at
run time between Python's control flow (concrete values: the same operations as unconverted
code) and graph control flow (traced values); ``__tj`` is the only name the rewrite adds to the
function's scope besides ``__tj_*`` locals. This module only reads and builds ASTs (no tracejit
imports): autograph.py compiles what it returns.
"""
from __future__ import annotations

import ast
import copy
import inspect
import os
import textwrap

def make_factory(fn):
    """A function ``factory(__tj, *free variables) -> the converted fn`` (compiled once per code
    object), or None when ``fn`` cannot be converted (no source, super(), a generator)."""
    if "__class__" in fn.__code__.co_freevars or fn.__code__.co_flags & (
            inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None
    try:
        lines, first = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    ast.increment_lineno(tree, first - 1)
    if fn.__name__ == "<lambda>":
        fdef = _lambda_def(tree, fn)
    else:
        fdef = tree.body[0] if tree.body else None
        if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
            return None
    if fdef is None:
        return None
    fdef.decorator_list = []
    _strip_header(fdef.args)
    fdef.returns = None
    filename = fn.__code__.co_filename
    fdef = _Converter(filename).visit(fdef)
    freevars = list(fn.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="__tj_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg("__tj")] + [ast.arg(n) for n in freevars],
                           kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[],
        returns=None, type_params=[])
    module = ast.fix_missing_locations(ast.Module([factory], type_ignores=[]))
    namespace: dict = {}
    try:
        exec(compile(module, filename, "exec"), namespace)
    except SyntaxError:
        return None
    return namespace["__tj_factory"]


def _strip_header(args):
    """Default values and annotations as None placeholders: the factory runs the ``def`` where
    the names they read may not exist (``rs=rs`` of an enclosing function's local), and
    autograph.converted sets the function's own defaults afterwards."""
    args.defaults = [ast.Constant(None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(None) for d in args.kw_defaults]
    for a in args.posonlyargs + args.args + args.kwonlyargs + \
            [x for x in (args.vararg, args.kwarg) if x is not None]:
        a.annotation = None


def _lambda_def(tree, fn):
    """The lambda ``fn`` (the only lambda on its line with its parameters) as a function
    definition, or None."""
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and
             n.lineno == code.co_firstlineno and
             tuple(a.arg for a in n.args.posonlyargs + n.args.args + n.args.kwonlyargs) == params]
    if len(found) != 1:
        return None
    lam = found[0]
    fdef = ast.FunctionDef(name="__tj_lambda", args=lam.args, body=[ast.Return(lam.body)],
                           decorator_list=[], returns=None, type_params=[])
    return ast.copy_location(fdef, lam)


_EXITS = (ast.Break, ast.Continue, ast.Return, ast.Yield, ast.YieldFrom, ast.Global,
          ast.Nonlocal, ast.Await)


def _has_exit(nodes, loop_level=True) -> bool:
    """Whether ``nodes`` contain a statement leaving them (break/continue of this loop level,
    return, yield), ignoring nested functions and the break/continue of nested loops."""
    for node in nodes:
        for sub in _walk_scope(node, loop_level):
            if isinstance(sub, _EXITS):
                return True
    return False


def _walk_scope(node, loop_level):
    stack = [(node, loop_level)]
    while stack:
        n, own = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(n, (ast.Break, ast.Continue)) and not own:
            continue
        yield n
        inner = own and not isinstance(n, (ast.For, ast.While, ast.AsyncFor))
        for child in ast.iter_child_nodes(n):
            stack.append((child, inner))


def _assigned(nodes):
    """(every name the statements bind, the names bound by plain or tuple assignment)."""
    names, rebound = [], set()

    def add(n, plain):
        if n not in names:
            names.append(n)
        if plain:
            rebound.add(n)

    def targets(t, plain):
        if isinstance(t, ast.Name):
            add(t.id, plain)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e, plain)
        elif isinstance(t, ast.Starred):
            targets(t.value, plain)
        elif isinstance(t, (ast.Subscript, ast.Attribute)) and isinstance(
                _base_name(t), str):
            add(_base_name(t), False)            # written into: the array object changes

    for node in nodes:
        for sub in _walk_scope(node, False):
            if isinstance(sub, ast.Assign):
                for t in sub.targets:
                    targets(t, True)
            elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
                targets(sub.target, isinstance(sub, ast.AnnAssign))
            elif isinstance(sub, (ast.For, ast.AsyncFor)):
                targets(sub.target, True)
            elif isinstance(sub, ast.NamedExpr):
                targets(sub.target, True)
            elif isinstance(sub, (ast.With, ast.AsyncWith)):
                for item in sub.items:
                    if item.optional_vars is not None:
                        targets(item.optional_vars, True)
            elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub is not node:
                add(sub.name, True)
            elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                for a in sub.names:
                    add((a.asname or a.name).split(".")[0], True)
            elif isinstance(sub, ast.Delete):
                for t in sub.targets:
                    targets(t, True)
    return names, rebound


def _ends_in_return(stmts) -> bool:
    """The block returns at its end on every path and nothing before leaves it."""
    if not stmts or _has_exit(stmts[:-1], loop_level=False):
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _ends_in_return(last.body) and \
        _ends_in_return(last.orelse)


def _fold_returns(stmts):
    """Early returns as branches: after ``if t: ...; return a`` (one branch returns, the other
    falls through) the statements that follow move into the branch that falls through (which
    then ends in ``return None`` if they fall off the end), recursively, so that every such
    ``if`` has two branches that both return.

    A branch that returns only on some of its paths (``if a: [if b: return x]; rest``) gets
    the statements that follow too, before its own ifs are folded: folding it alone would
    make its fall-through path return None instead of running ``rest`` (the following
    statements are copied into each branch that needs them)."""
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Return):
            return stmts[:i + 1]         # what follows (the copied rest, say) never runs
        if not isinstance(st, ast.If) or not _has_exit(st.body + st.orelse, loop_level=False):
            continue
        rest = stmts[i + 1:]
        rb, ro = _ends_in_return(st.body), _ends_in_return(st.orelse)
        if rb and ro:
            st.body, st.orelse = _fold_returns(st.body), _fold_returns(st.orelse)
            return stmts[:i + 1]
        new = []
        for block, returns in ((st.body, rb), (st.orelse, ro)):
            # (folded on a copy: folding rewrites nested ifs in place, and a block that cannot
            # be folded must stay as written)
            block = _fold_returns(copy.deepcopy(block if returns else block + rest))
            if not _ends_in_return(block):
                if _has_exit(block, loop_level=False):
                    return stmts                 # a return inside a loop: left as written
                block = block + [ast.copy_location(ast.Return(None), (block or [st])[-1])]
            new.append(block)
        st.body, st.orelse = new
        return stmts[:i + 1]
    return stmts


# --- break, continue and return inside loops, as flags -----------------------------------------

RETURNED, RETVAL = "__tj_returned", "__tj_retval"
_KEEP_AS_WRITTEN = (ast.Try, ast.TryStar, ast.Match, ast.Yield, ast.YieldFrom, ast.Global,
                    ast.Nonlocal, ast.Await, ast.AsyncFor, ast.AsyncWith)


def _flag(name, value, where):
    return ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], ast.Constant(value)),
                             where)


def _none_set(flags, where):
    """``not (f1 or f2 ...)`` (built after conversion would have run: calls __tj.not_/or_)."""
    names = [ast.Name(f, ast.Load()) for f in flags]
    test = names[0] if len(names) == 1 else ast.BoolOp(ast.Or(), names)
    return ast.copy_location(ast.UnaryOp(ast.Not(), test), where)


def lower_exits(stmts, fresh, level="function"):
    """``break``/``continue`` of loops and ``return`` inside loops become flag variables, so
    that the loops (and the ifs around the exits) can be converted: ``break`` sets the loop's
    break flag, which its test checks (``while not brk and test``; a ``for`` stops before its
    next item); ``continue`` sets a flag cleared at the top of the body; the statements after
    one that may set a flag run under ``if not flag``; ``return v`` inside a loop stores v in
    ``__tj_retval``, sets ``__tj_returned`` and breaks out of every enclosing loop, and the
    function returns it after the outermost one. Loops containing try/match/yield/await/
    global/nonlocal stay as written (with the loops around them, when they return).
    ``level``: "function", "loop" (inside a lowered loop) or "kept" (inside one kept)."""
    out = []
    for st in stmts:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(st)                       # (a scope of its own: lowered when visited)
            continue
        inner = level if not isinstance(st, (ast.For, ast.While)) else \
            "loop" if level != "kept" and _lowerable(st) else "kept"
        for field in ("body", "orelse", "finalbody"):
            block = getattr(st, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(st, field, lower_exits(block, fresh, level if field != "body" or not
                                               isinstance(st, (ast.For, ast.While)) else inner))
        for handler in getattr(st, "handlers", ()):
            handler.body = lower_exits(handler.body, fresh, level)
        if inner == "loop" and isinstance(st, (ast.For, ast.While)):
            out.extend(_lower_loop(st, fresh, level))
        else:
            out.append(st)
    return out


def _lowerable(loop) -> bool:
    return not any(isinstance(sub, _KEEP_AS_WRITTEN) for n in loop.body
                   for sub in _walk_scope(n, False))


def _lower_loop(loop, fresh, level):
    exits = [n for st in loop.body for n in _walk_scope(st, True)
             if isinstance(n, (ast.Break, ast.Continue, ast.Return))]
    if not exits:                                # (an else clause always runs)
        after, loop.orelse = loop.orelse, []
        return [loop] + after
    returns = any(isinstance(n, ast.Return) for n in exits) or any(   # (or in inner loops)
        isinstance(n, ast.Name) and n.id == RETURNED for st in loop.body
        for n in _walk_scope(st, False))
    brk = fresh("break") if returns or any(isinstance(n, ast.Break) for n in exits) else None
    cont = fresh("continue") if any(isinstance(n, ast.Continue) for n in exits) else None
    flags = [f for f in (brk, cont) if f]
    loop.body = _guard(_replace_exits(loop.body, brk, cont), flags)
    if cont:
        loop.body.insert(0, _flag(cont, False, loop.body[0]))
    before, after = [], []
    if brk:
        before.append(_flag(brk, False, loop))
        if isinstance(loop, ast.While):
            loop.test = ast.copy_location(ast.BoolOp(ast.And(), [
                _none_set([brk], loop.test), loop.test]), loop.test)
        else:
            loop.tj_break = brk                  # read by _Converter.visit_For
    if loop.orelse:
        after = [ast.copy_location(ast.If(_none_set([brk], loop), loop.orelse, []), loop)] \
            if brk else loop.orelse
        loop.orelse = []
    if returns:
        leave = ast.Break() if level == "loop" else ast.Return(ast.Name(RETVAL, ast.Load()))
        after.append(ast.copy_location(ast.If(ast.Name(RETURNED, ast.Load()),
                                              [ast.copy_location(leave, loop)], []), loop))
    return before + [loop] + after


def _replace_exits(stmts, brk, cont):
    """The loop's own break/continue and every return in it (not in nested loops, which were
    lowered first) as flag assignments."""
    out = []
    for st in stmts:
        if isinstance(st, ast.Break):
            out.append(_flag(brk, True, st))
        elif isinstance(st, ast.Continue):
            out.append(_flag(cont, True, st))
        elif isinstance(st, ast.Return):
            value = st.value if st.value is not None else ast.Constant(None)
            out += [ast.copy_location(ast.Assign([ast.Name(RETVAL, ast.Store())], value), st),
                    _flag(RETURNED, True, st), _flag(brk, True, st)]
        else:
            if isinstance(st, (ast.If, ast.With)):
                st.body = _replace_exits(st.body, brk, cont)
            if isinstance(st, ast.If):
                st.orelse = _replace_exits(st.orelse, brk, cont)
            out.append(st)
    return out


def _sets_flag(st, flags) -> bool:
    return any(isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and
               n.targets[0].id in flags and isinstance(n.value, ast.Constant) and
               n.value.value is True for n in _walk_scope(st, False))


def _guard(stmts, flags):
    """The statements after one that may set a flag run under ``if not (flags)``."""
    out = []
    for i, st in enumerate(stmts):
        if isinstance(st, (ast.If, ast.With)):
            st.body = _guard(st.body, flags)
        if isinstance(st, ast.If):
            st.orelse = _guard(st.orelse, flags)
        out.append(st)
        rest = stmts[i + 1:]
        if rest and _sets_flag(st, flags):
            out.append(ast.copy_location(ast.If(_none_set(flags, rest[0]),
                                                _guard(rest, flags), []), rest[0]))
            break
    return out


def _base_name(t):
    while isinstance(t, (ast.Subscript, ast.Attribute)):
        if isinstance(t, ast.Attribute):
            return None                          # obj.attr = v: not an array write we track
        t = t.value
    return t.id if isinstance(t, ast.Name) else None


def _tj(attr):
    return ast.Attribute(ast.Name("__tj", ast.Load()), attr, ast.Load())


class _Converter(ast.NodeTransformer):
    def __init__(self, filename):
        self.filename = filename
        self.count = 0
        self.scopes = []             # per enclosing function: its local variable names

    def _fresh(self, what):
        self.count += 1
        return f"__tj_{what}_{self.count}"

    def _def(self, name, params, body, node):
        fn = ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params],
                                          kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])
        return ast.copy_location(fn, node)

    def _result(self, names):
        """``return __tj.load(locals(), names)`` (a name a construct inside left unassigned,
        and deleted, is Undefined there)."""
        return ast.Return(ast.Call(_tj("load"), [ast.Call(ast.Name("locals", ast.Load()), [], []),
                                                 ast.Constant(tuple(names))], []))

    def _statement(self, node, helper, fns, names, rebound, extra=(), load_names=None,
                   reads=()):
        """``(names...) = __tj.helper(*extra, fns..., __tj.load(locals(), names), names, ...)``"""
        line = f"{os.path.basename(self.filename)}:{node.lineno}"
        loaded = tuple(names if load_names is None else load_names)
        consts = [ast.Constant(loaded), ast.Constant(frozenset(rebound)), ast.Constant(line),
                  ast.Constant(frozenset(reads))]
        values = ast.Call(_tj("load"), [ast.Call(ast.Name("locals", ast.Load()), [], []),
                                        ast.Constant(loaded)], [])
        call = ast.Call(_tj(helper), list(extra) + [ast.Name(f, ast.Load()) for f in fns] +
                        [values] + consts, [])
        target = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
        assign = ast.Assign([target], call) if names else ast.Expr(call)
        return ast.copy_location(assign, node)

    def visit_FunctionDef(self, node):
        body = lower_exits(node.body, self._fresh)
        if any(isinstance(n, ast.Name) and n.id == RETURNED for st in body
               for n in _walk_scope(st, False)):
            body.insert(0, _flag(RETURNED, False, body[0]))
        node.body = _fold_returns(body)
        a = node.args
        params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs] + \
            [x.arg for x in (a.vararg, a.kwarg) if x is not None]
        self.scopes.append(set(params) | set(_assigned(node.body)[0]))
        self.generic_visit(node)
        self.scopes.pop()
        return node

    def _reads(self, nodes, assigned):
        """The enclosing function's variables the statements read but do not assign (arrays a
        call there may write into)."""
        local = self.scopes[-1] if self.scopes else set()
        found = []
        for node in nodes:
            for sub in _walk_scope(node, False):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and \
                        sub.id in local and sub.id not in assigned and sub.id not in found \
                        and not sub.id.startswith("__tj"):
                    found.append(sub.id)
        return found

    def _analyse(self, nodes):
        """(variables to pass, those rebound, those only read) of statements, taken from
        the code as written (before the statements inside are converted)."""
        names, rebound = _assigned(nodes)
        reads = self._reads(nodes, names)
        return names + reads, rebound, reads

    def visit_If(self, node):
        returns = _ends_in_return(node.body) and _ends_in_return(node.orelse)
        exits = _has_exit(node.body + node.orelse, loop_level=False)
        names, rebound, reads = self._analyse(node.body + node.orelse)
        self.generic_visit(node)
        if returns:
            return self._if_return(node, names, rebound, reads)
        if exits:
            return node
        t, f = self._fresh("then"), self._fresh("else")
        return [self._def(t, names, node.body + [self._result(names)], node),
                self._def(f, names, node.orelse + [self._result(names)], node),
                self._statement(node, "if_stmt", [t, f], names, rebound, [node.test],
                                reads=reads)] + self._unbind(names, node)

    def _if_return(self, node, names, rebound, reads):
        """``if t: A; return a`` / ``else: B; return b`` as ``return __tj.if_return(...)``."""
        t, f = self._fresh("then"), self._fresh("else")
        defs = []
        for name, body in ((t, node.body), (f, node.orelse)):
            ret = body[-1]
            value = ret.value if ret.value is not None else ast.Constant(None)
            both = ast.Tuple([value, ast.Tuple([ast.Name(n, ast.Load()) for n in names],
                                                ast.Load())], ast.Load())
            defs.append(self._def(name, names, body[:-1] + [ast.copy_location(
                ast.Return(both), ret)], node))
        call = self._statement(node, "if_return", [t, f], [], rebound, [node.test],
                               load_names=names, reads=reads)
        return defs + [ast.copy_location(ast.Return(call.value), node)]

    def visit_While(self, node):
        exits = node.orelse or _has_exit(node.body)
        names, rebound, reads = self._analyse([node.test] + node.body)
        self.generic_visit(node)
        if exits:
            return node
        c, b = self._fresh("test"), self._fresh("body")
        return [self._def(c, names, [ast.Return(node.test)], node),
                self._def(b, names, node.body + [self._result(names)], node),
                self._statement(node, "while_stmt", [c, b], names, rebound, reads=reads)] + \
            self._unbind(names, node)

    def visit_For(self, node):
        """``for target in iterable`` over ``range(...)`` (whose bounds may be traced) or with
        a ``break`` (lowered to a flag): ``__tj.for_stmt`` with a body function taking the
        item; other for loops run as written (unrolled, their ifs converted)."""
        brk = getattr(node, "tj_break", None)
        it = node.iter
        is_range = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
            it.func.id == "range" and not it.keywords and \
            not any(isinstance(a, ast.Starred) for a in it.args)
        if node.orelse or _has_exit(node.body) or not (brk or is_range):
            self.generic_visit(node)
            return node
        item = ast.Assign([node.target], ast.Name("__tj_item", ast.Load()))
        names, rebound, reads = self._analyse([item] + node.body)
        self.generic_visit(node)
        item = ast.copy_location(ast.Assign([node.target], ast.Name("__tj_item", ast.Load())),
                                 node)
        if is_range:                             # (visit_Call made it __tj.call(range, ...))
            node.iter = ast.copy_location(ast.Call(_tj("range_"), node.iter.args, []), it)
        b = self._fresh("body")
        defs = [self._def(b, ["__tj_item"] + names, [item] + node.body +
                          [self._result(names)], node)]
        test = ast.Constant(None)
        if brk:
            t = self._fresh("test")
            defs.append(self._def(t, names, [ast.Return(ast.Call(
                _tj("not_"), [ast.Name(brk, ast.Load())], []))], node))
            test = ast.Name(t, ast.Load())
        return defs + [self._statement(node, "for_stmt", [b], names, rebound,
                                       [node.iter, test], reads=reads)] + \
            self._unbind(names, node)

    def _unbind(self, names, node):
        """``if __tj.unbound(v): del v`` for each variable: one the construct left unassigned
        (a branch not taken, a loop that ran zero times) is unbound again, as in Python."""
        return [ast.copy_location(ast.If(ast.Call(_tj("unbound"), [ast.Name(n, ast.Load())],
                                                  []),
                                         [ast.Delete([ast.Name(n, ast.Del())])], []), node)
                for n in names if not n.startswith("__tj")]

    def visit_IfExp(self, node):
        self.generic_visit(node)
        lam = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                        defaults=[]), e) for e in (node.body, node.orelse)]
        return ast.copy_location(ast.Call(_tj("ifexp"), [node.test] + lam, []), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        lam = [ast.Lambda(ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[],
                                        defaults=[]), v) for v in node.values]
        helper = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(ast.Call(_tj(helper), lam, []), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Call(_tj("not_"), [node.operand], []), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("locals", "super", "globals",
                                                                  "vars", "eval", "exec"):
            return node
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min") and \
                not node.keywords:
            return ast.copy_location(ast.Call(_tj(node.func.id + "_"), node.args, []), node)
        return ast.copy_location(ast.Call(_tj("call"), [node.func] + node.args, node.keywords),
                                 node)

    def visit_Expr(self, node):
        """A call whose result is dropped (``xs.append(v)``, ``print(x)``), made for its side
        effect: ``__tj.stmt_call(where, f, ...)``, which says when that effect would run once,
        while tracing, instead of each time the converted construct runs."""
        self.generic_visit(node)
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                isinstance(value.func.value, ast.Name) and value.func.value.id == "__tj" and \
                value.func.attr == "call":
            where = ast.Constant((self.filename, node.lineno))
            node.value = ast.copy_location(
                ast.Call(_tj("stmt_call"), [where] + value.args, value.keywords), value)
        return node

    def visit_Lambda(self, node):
        return node                                # (their bodies stay as written)

    def visit_Subscript(self, node):
        """``a[i]`` read as ``__tj.getitem(a, i)`` (a NumPy array indexed by traced values is
        read through a traced copy); slices become ``slice`` objects."""
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Call(_tj("getitem"), [node.value, _index(node.slice)], []),
                                 node)


def _index(node):
    """An index expression (``1:n, ::2``) as an expression building it."""
    if isinstance(node, ast.Slice):
        parts = [p if p is not None else ast.Constant(None)
                 for p in (node.lower, node.upper, node.step)]
        return ast.copy_location(ast.Call(_tj("slice_"), parts, []), node)
    if isinstance(node, ast.Tuple):
        return ast.copy_location(ast.Tuple([_index(e) for e in node.elts], ast.Load()), node)
    return node
