"""Python control flow on traced values, converted to graph control flow.

A trace that fails because Python branched on a traced value (``if x.sum() > 0:``, ``while err >
tol:``, ``a if c else b``, ``c1 and c2``, ``not c``) is traced again with the user's functions
*converted*: their source is parsed once per code object and rewritten so that

- ``if t: A else: B`` becomes two local functions of the variables the branches assign, run
  through :func:`if_stmt`: a concrete test runs one branch as Python does; a traced one becomes
  ``tracejit.cond`` (both branches traced, one runs);
- ``while t: A`` becomes a test and a body function of the variables the body assigns, run through
  :func:`while_stmt`: a concrete test loops in Python (unrolled, as before), a traced one becomes
  ``tracejit.while_loop`` from the iteration where the test first depends on traced data;
- ``a if t else b``, ``and``, ``or``, ``not`` take the traced forms (cond, logical_and/or/not)
  only for traced operands, Python's otherwise;
- calls of other user functions go through :func:`call`, which converts them too (library code:
  NumPy, SciPy, tracejit, the standard library, site-packages, is called as is).

Statements with ``break``, ``continue``, ``return``, ``yield`` or ``global``/``nonlocal`` inside
the converted construct are left as written (a traced test there still raises the
ConcretizationError naming the line). Arrays a branch writes into (``x[i] = v``, ``x += v``) are
written into the caller's array after the ``cond``, as NumPy would have. Converted code runs only
while tracing; ``config.autograph = False`` turns conversion off.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
import copy
import functools
import inspect
import os
import sys
import textwrap
import types

import numpy as np

from .config import config
from .core import Tracer

_active: contextvars.ContextVar = contextvars.ContextVar("tracejit_autograph", default=False)
_factories: dict = {}          # code object -> factory (or None: cannot be converted)


class Undefined:
    """A variable not assigned on the path taken so far (assigned later, in a branch or loop)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<undefined variable {self.name!r}>"


def active() -> bool:
    return _active.get()


@contextlib.contextmanager
def enabled(on: bool = True):
    """Context: convert the user functions traced in the body (see :func:`call`)."""
    token = _active.set(on)
    try:
        yield
    finally:
        _active.reset(token)


# --- running converted code ------------------------------------------------------------------

def call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, with ``fn`` converted when conversion is on and it is user code."""
    if _active.get() and config.autograph:
        conv = converted(fn)
        if conv is not None:
            return conv(*args, **kwargs)
    return fn(*args, **kwargs)


def _is_traced_bool(x) -> bool:
    if not isinstance(x, Tracer):
        return False
    return x.known(need=True) is None


def _pred(test, what):
    """A traced test as a bool scalar (NumPy's truth value rules)."""
    import tracejit.numpy as tnp
    if test.ndim != 0 and test.size != 1:
        raise ValueError(f"The truth value of an array with more than one element is ambiguous "
                         f"({what} on a traced array of shape {test.shape}). Use a.any() or "
                         f"a.all()")
    test = tnp.reshape(test, ())
    return test if test.dtype == np.bool_ else tnp.not_equal(test, 0)


def load(values: dict, names):
    """The current values of ``names`` (``locals()`` of the converted function)."""
    return tuple(values[n] if n in values else Undefined(n) for n in names)


def _traceable(x) -> bool:
    from . import tree
    leaves = tree.flatten(x)[0]
    return all(isinstance(v, (Tracer, np.ndarray, np.generic, bool, int, float, complex))
               for v in leaves)


def _settle(old, new, names, rebound):
    """The values to bind after a converted loop: an array the loop only wrote into (never
    rebound by ``name = ...``) keeps its identity and receives the new value in place."""
    from .numpy import mutation
    out = []
    for o, n, name in zip(old, new, names):
        if name not in rebound and isinstance(o, Tracer) and isinstance(n, Tracer) and \
                o.frozen is False and n is not o and o.ty == n.ty:
            mutation.assign(o, n)
            out.append(o)
        else:
            out.append(n)
    return tuple(out)


def if_stmt(test, then_fn, else_fn, values, names, rebound, line, reads=frozenset(),
            offset=0):
    """A converted ``if``: Python's when ``test`` is concrete, ``tracejit.cond`` when traced.
    (``offset``: the branches return that many values before the variables.)

    Writes follow NumPy: an array a branch writes into (through any name or view) is the
    caller's object, so its final contents in the branch are an output of the cond, written
    into the outer array afterwards; a name still bound to that object in both branches stays
    bound to the outer array."""
    if not _is_traced_bool(test):
        return (then_fn if test else else_fn)(*values)
    from .control import cond
    from .errors import ShapeError
    from .numpy import mutation
    pred = _pred(test, "if")
    carried = _carried(values, names, reads)
    seen = []                        # per branch: (non-array outputs, kept bindings, written)

    def branch(fn):
        def run(*vals):
            full = list(values)
            params = dict(zip(carried, vals))
            for i, v in params.items():
                full[i] = v
            start = {i: v.irvar for i, v in params.items() if isinstance(v, Tracer)}
            outs = fn(*full)
            box, res = {}, []
            for k, o in enumerate(outs):
                i = k - offset
                if isinstance(o, Undefined) or not _traceable(o) or \
                        (0 <= i and names[k] in reads and i not in params):
                    box[k] = o
                    res.append(None)
                else:
                    res.append(o)
            kept = {i for i in params if offset + i < len(outs) and outs[offset + i] is params[i]}
            wrote = {i for i in start if params[i].irvar is not start[i]}
            seen.append((box, kept, wrote))
            return tuple(res) + tuple(params[i] for i in carried)
        return run

    try:
        outs = list(cond(pred, branch(then_fn), branch(else_fn), *[values[i] for i in carried]))
    except ShapeError:
        if len(seen) == 2 and seen[0][0].keys() != seen[1][0].keys():
            name = names[min(seen[0][0].keys() ^ seen[1][0].keys())]
            raise _error(f"variable {name!r} is assigned in only one branch of an `if` on a "
                         f"traced value (or is an array in one and not in the other); assign it "
                         f"before the `if`", line) from None
        raise
    (t_box, t_kept, t_wrote), (f_box, f_kept, f_wrote) = seen
    outs, finals = outs[:len(names)], outs[len(names):]
    for k, name in enumerate(names):
        if k in t_box or k in f_box:
            a, b = t_box.get(k, outs[k]), f_box.get(k, outs[k])
            if a is not b:
                kind = "assigned in only one branch" if isinstance(a, Undefined) or \
                    isinstance(b, Undefined) else "a non-array value that differs between branches"
                raise _error(f"variable {name!r} is {kind} of an `if` on a traced value; assign "
                             f"it before the `if` (as an array of the type the branches give it)",
                             line)
            outs[k] = a
    for i, final in zip(carried, finals):
        old = values[i]
        if i in t_wrote | f_wrote and isinstance(old, Tracer) and old.frozen is False:
            mutation.assign(old, final)          # the caller's array, written in a branch
        if i in t_kept & f_kept:
            outs[offset + i] = old
    return tuple(outs)


def if_return(test, then_fn, else_fn, values, names, rebound, line, reads=frozenset()):
    """A converted ``if`` whose branches both end in ``return`` (early returns folded in): the
    branches give (returned value, the variables they assign); returns the value."""
    if not _is_traced_bool(test):
        return (then_fn if test else else_fn)(*values)[0]

    from . import tree
    same = []                        # per branch: returned leaf position -> variable position

    def ret(fn):
        def run(*vals):
            # (after a return only the arrays written in place matter: the parameters, which
            # if_stmt compares with what it passed in)
            out = fn(*vals)[0]
            same.append({k: j for k, leaf in enumerate(tree.flatten(out)[0])
                         for j, v in enumerate(vals) if leaf is v and isinstance(v, Tracer)})
            return (out,) + vals
        return run
    out = if_stmt(test, ret(then_fn), ret(else_fn), values, ("<return value>",) + names,
                  rebound, line, reads, offset=1)[0]
    # a variable both branches return as is (``return (x,)`` on both paths, x written in
    # place before or in a branch) is the caller's object, as in NumPy: if_stmt has written
    # the branch's contents into it, so return it rather than the cond's output
    keep = {k: j for k, j in same[0].items() if same[1].get(k) == j} if len(same) == 2 else {}
    if keep:
        leaves, treedef = tree.flatten(out)
        out = tree.unflatten(treedef, [values[keep[k]] if k in keep else leaf
                                       for k, leaf in enumerate(leaves)])
    return out


def _carried(values, names, reads):
    """Positions carried through a cond/while: the assigned variables holding numbers or
    arrays, and the arrays only read (a call in the body may write into them)."""
    return [i for i, (v, n) in enumerate(zip(values, names)) if not isinstance(v, Undefined)
            and _traceable(v) and (n not in reads or
                                   isinstance(v, Tracer) and v.frozen is False)]


def while_stmt(test_fn, body_fn, values, names, rebound, line, reads=frozenset()):
    """A converted ``while``: Python's loop while the test is concrete, then
    ``tracejit.while_loop`` from the first iteration whose test is traced."""
    values = tuple(values)
    while True:
        test = test_fn(*values)
        if _is_traced_bool(test):
            break
        if not test:
            return values
        values = tuple(body_fn(*values))
    from .control import while_loop
    carried = _carried(values, names, reads)
    for i, v in enumerate(values):
        if not isinstance(v, Undefined) and i not in carried and names[i] not in reads:
            raise _error(f"variable {names[i]!r} ({type(values[i]).__name__}) is changed by a "
                         f"`while` loop on a traced value; loop variables must be arrays or "
                         f"numbers", line)

    def full(vals):
        out = list(values)
        for i, v in zip(carried, vals):
            out[i] = v
        return out

    def cond_fun(vals):
        return _pred(test_fn(*full(vals)), "while")

    wrote = set()

    def body_fun(vals):
        start = [v.irvar if isinstance(v, Tracer) else None for v in vals]
        outs = body_fn(*full(vals))
        wrote.update(i for k, i in enumerate(carried)
                     if start[k] is not None and vals[k].irvar is not start[k])
        for k, i in enumerate(carried):
            if isinstance(outs[i], Undefined):
                raise _error(f"variable {names[i]!r} is deleted in a `while` loop on a traced "
                             f"value", line)
            if start[k] is not None and vals[k].irvar is not start[k] and \
                    outs[i] is not vals[k]:
                raise _error(f"array {names[i]!r} is written into and then rebound in a "
                             f"`while` loop on a traced value; write into a copy, or do not "
                             f"rebind it", line)
        return tuple(outs[i] for i in carried)

    import tracejit.numpy as tnp
    init = tuple(values[i] if isinstance(values[i], Tracer) else tnp.asarray(values[i])
                 for i in carried)
    res = list(while_loop(cond_fun, body_fun, init))
    for k, i in enumerate(carried):
        if names[i] in reads and i not in wrote:
            res[k] = values[i]                   # only read: the same array
    return _settle(values, full(res), names, rebound)


def ifexp(test, then_fn, else_fn):
    if not _is_traced_bool(test):
        return then_fn() if test else else_fn()
    from .control import cond
    return cond(_pred(test, "a conditional expression"), then_fn, else_fn)


def and_(*fns):
    import tracejit.numpy as tnp
    value = fns[0]()
    for fn in fns[1:]:
        if _is_traced_bool(value):
            value = tnp.logical_and(value, fn())
        elif not value:
            return value
        else:
            value = fn()
    return value


def or_(*fns):
    import tracejit.numpy as tnp
    value = fns[0]()
    for fn in fns[1:]:
        if _is_traced_bool(value):
            value = tnp.logical_or(value, fn())
        elif value:
            return value
        else:
            value = fn()
    return value


def _extreme(builtin, name):
    def fn(*args, **kwargs):
        items = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        if kwargs or len(items) < 2 and len(args) > 1 or \
                not any(isinstance(v, Tracer) for v in items):
            return builtin(*args, **kwargs)
        import tracejit.numpy as tnp
        return functools.reduce(getattr(tnp, name), items)
    return fn


max_ = _extreme(max, "maximum")      # max(a, b) of traced values: np.maximum (not a branch)
min_ = _extreme(min, "minimum")


def not_(x):
    if _is_traced_bool(x):
        import tracejit.numpy as tnp
        return tnp.logical_not(x)
    return not x


def _error(message, line):
    from .errors import ConcretizationError
    return ConcretizationError(f"{message} ({line})")


# --- converting ------------------------------------------------------------------------------

_LIBRARY_ROOTS = tuple({os.path.dirname(os.__file__), os.path.dirname(np.__file__),
                        os.path.dirname(os.path.abspath(__file__))} |
                       {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))})


def _user_code(code) -> bool:
    path = os.path.abspath(code.co_filename)
    if code.co_filename.startswith("<"):
        return False
    return not any(path.startswith(r + os.sep) for r in _LIBRARY_ROOTS if r)


def converted(fn):
    """The converted version of a user function (or bound method), or None when it is library
    code or cannot be converted (no source, a lambda, super(), a generator)."""
    if isinstance(fn, types.MethodType):
        inner = converted(fn.__func__)
        return None if inner is None else types.MethodType(inner, fn.__self__)
    if not isinstance(fn, types.FunctionType) or getattr(fn, "__tracejit_converted__", False):
        return None
    code = fn.__code__
    if code not in _factories:
        _factories[code] = _make_factory(fn) if _user_code(code) else None
    factory = _factories[code]
    if factory is None:
        return None
    cells = [c.cell_contents if _filled(c) else Undefined(n)
             for n, c in zip(code.co_freevars, fn.__closure__ or ())]
    new = types.FunctionType(factory.__code__, fn.__globals__)(sys.modules[__name__], *cells)
    new.__defaults__, new.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    new.__tracejit_converted__ = True
    return functools.wraps(fn)(new)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _make_factory(fn):
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
        return ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in names], ast.Load()))

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
        node.body = _fold_returns(node.body)
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
                                reads=reads)]

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
                self._statement(node, "while_stmt", [c, b], names, rebound, reads=reads)]

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

    def visit_Lambda(self, node):
        return node                                # (their bodies stay as written)
