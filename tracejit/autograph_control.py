"""Converted Python statements as graph control flow: the run-time helpers that the code
rewritten by autograph_rewrite.py calls for ``if`` (:func:`if_stmt`, :func:`if_return`),
``while`` (:func:`while_stmt`) and ``for`` (:func:`for_stmt`, :func:`range_`).

Invariants: each helper gets the construct's local functions and the current values of the
variables it assigns or reads, and returns their values after it. With a concrete test (or a
concrete range or sequence) it runs Python's control flow, so the trace holds the same
operations as unconverted code; with a traced one it traces every branch once (``cond``) or the
body once (``while_loop``, from the first iteration whose test is traced). Variables a traced
loop carries keep their structure, shapes and dtypes (checked, naming the variable); a variable
first assigned inside a traced loop is unassigned after it (``Undefined``, deleted by the
converted code), as after a Python loop that ran zero times; an array written in a branch or
loop is the caller's object afterwards, as in NumPy. While a body is traced as a graph,
:func:`traced_construct` names the construct (Python side effects there run once, while
tracing: autograph warns of them).
"""
from __future__ import annotations

import contextlib
import contextvars
import itertools

import numpy as np

from . import autograph_rewrite, tree
from .core import Tracer
from .errors import ConcretizationError

class Undefined:
    """A variable not assigned on the path taken so far (assigned later, in a branch or loop);
    ``why``: said when the converted code uses it after the construct."""

    def __init__(self, name, why=""):
        self.name, self.why = name, why

    def __repr__(self):
        return f"<undefined variable {self.name!r}>"

    def _used(self, *args, **kwargs):
        e = UnboundLocalError(f"variable {self.name!r} is used before it is assigned"
                              + (f": {self.name!r} {self.why}" if self.why else ""))
        e.tracejit_explained = True              # (autograph.call adds nothing to it)
        raise e


# a value read before its assignment (inside a converted construct, which got it as an argument
# instead of the unbound name): any use raises UnboundLocalError, as the name would
for _op in ("bool", "len", "iter", "getitem", "setitem", "call", "float", "int", "index",
            "array", "neg", "pos", "abs", "invert", "array_ufunc", "array_function") + tuple(
        p + op for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                          "and", "or", "xor", "lshift", "rshift") for p in ("", "r", "i")) + \
        ("lt", "le", "gt", "ge"):
    setattr(Undefined, f"__{_op}__", Undefined._used)


# (what, line) of the innermost converted construct whose body is being traced as a graph (a
# cond's branches, a while_loop's test and body): Python side effects there run once, now
_tracing_body: contextvars.ContextVar = contextvars.ContextVar("tracejit_autograph_body",
                                                               default=None)


def traced_construct():
    """``(what, line)`` of the converted ``if``/``while``/``for`` whose body is being traced
    into a cond or while_loop right now (innermost), or None."""
    return _tracing_body.get()


@contextlib.contextmanager
def _tracing(what, line):
    token = _tracing_body.set((what, line))
    try:
        yield
    finally:
        _tracing_body.reset(token)


def is_traced_bool(x) -> bool:
    """Whether ``x`` is a traced value whose truth is known only at run time."""
    if not isinstance(x, Tracer):
        return False
    return x.known(need=True) is None


def pred_of(test, what):
    """A traced test as a bool scalar (NumPy's truth value rules)."""
    import tracejit.numpy as tnp
    if test.ndim != 0 and test.size != 1:
        raise ValueError(f"The truth value of an array with more than one element is ambiguous "
                         f"({what} on a traced array of shape {test.shape}). Use a.any() or "
                         f"a.all()")
    test = tnp.reshape(test, ())
    return test if test.dtype == np.bool_ else tnp.not_equal(test, 0)


def _traceable(x) -> bool:
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
    if not is_traced_bool(test):
        return (then_fn if test else else_fn)(*values)
    from .control import cond
    from .errors import ShapeError
    from .numpy import mutation
    pred = pred_of(test, "if")
    carried = _carried(values, names, reads)
    seen = []                        # per branch: (non-array outputs, kept bindings, written)
    fill = {}                        # output position -> the other branch's value, for zeros

    def branch(fn):
        def run(*vals):
            full = list(values)
            params = dict(zip(carried, vals))
            for i, v in params.items():
                full[i] = v
            start = {i: v.irvar for i, v in params.items() if isinstance(v, Tracer)}
            with _tracing("`if`", line):
                outs = list(fn(*full))
            box, res = {}, []
            for k, o in enumerate(outs):
                i = k - offset
                if k in fill and isinstance(o, Undefined):
                    o = outs[k] = _zeros_like(fill[k])
                if isinstance(o, Undefined) or not _traceable(o) or \
                        (0 <= i and names[k] in reads and i not in params):
                    box[k] = o
                    res.append(None)
                else:
                    res.append(o)
            kept = {i for i in params if offset + i < len(outs) and outs[offset + i] is params[i]}
            wrote = {i for i in start if params[i].irvar is not start[i]}
            seen.append((box, kept, wrote, outs))
            return tuple(res) + tuple(params[i] for i in carried)
        return run

    while True:
        try:
            outs = list(cond(pred, branch(then_fn), branch(else_fn),
                             *[values[i] for i in carried]))
            break
        except ShapeError as e:
            if len(seen) == 2 and not fill and _fill_returned(names, seen, fill):
                seen.clear()             # (an early return's value: traced again, with zeros)
                continue
            if len(seen) == 2 and seen[0][0].keys() != seen[1][0].keys():
                name = names[min(seen[0][0].keys() ^ seen[1][0].keys())]
                raise _error(f"variable {name!r} is assigned in only one branch of an `if` on "
                             f"a traced value (or is an array in one and not in the other); "
                             f"assign it before the `if`", line) from None
            what = "the values returned on its paths (by an early `return` in it or in a " \
                "loop there)" if offset else "what its branches assign"
            raise ShapeError(f"{e} (the `if` at {line}, on a traced value, became a cond: "
                             f"{what} must have the same structure, shapes and dtypes)") \
                from None
    (t_box, t_kept, t_wrote, _), (f_box, f_kept, f_wrote, _) = seen
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


def _fill_returned(names, seen, fill) -> bool:
    """Marks the early-return value (``__tj_retval``) one branch leaves unassigned, when the
    other assigns it, to be zeros of that type (read only where ``__tj_returned`` is set)."""
    (t_box, *_, t_outs), (f_box, *_, f_outs) = seen
    for k in t_box.keys() ^ f_box.keys():
        if names[k] != autograph_rewrite.RETVAL:
            return False
        fill[k] = f_outs[k] if k in t_box else t_outs[k]
    return bool(fill)


def _zeros_like(value):
    from .core import type_of
    import tracejit.numpy as tnp
    leaves, treedef = tree.flatten(value)
    return tree.unflatten(treedef, [tnp.zeros(type_of(x).shape, type_of(x).dtype)
                                    for x in leaves])


def if_return(test, then_fn, else_fn, values, names, rebound, line, reads=frozenset()):
    """A converted ``if`` whose branches both end in ``return`` (early returns folded in): the
    branches give (returned value, the variables they assign); returns the value."""
    if not is_traced_bool(test):
        return (then_fn if test else else_fn)(*values)[0]

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
        if is_traced_bool(test):
            break
        if not test:
            return values
        values = tuple(body_fn(*values))
    return _while_traced(test_fn, body_fn, values, names, rebound, line, reads, "while")


def for_stmt(iterable, test_fn, body_fn, values, names, rebound, line, reads=frozenset()):
    """A converted ``for``: ``body_fn(item, *values)`` per item while ``test_fn`` (the loop's
    "not broken" flag, None without ``break``) holds. Over a concrete range or sequence it is
    Python's loop (unrolled, as unconverted code); from the first iteration whose flag is
    traced, or over a range with a traced bound, a ``tracejit.while_loop`` with the index
    carried (the remaining items of a sequence taken by a traced index)."""
    values = tuple(values)
    if isinstance(iterable, TracedRange):
        return _for_traced(iterable, test_fn, body_fn, values, names, rebound, line, reads)
    items = iter(iterable)
    for k in itertools.count():
        if test_fn is not None:              # (checked before the next item is taken)
            test = test_fn(*values)
            if is_traced_bool(test):
                rest = _rest(iterable, k, items, line)
                return _for_traced(rest, test_fn, body_fn, values, names, rebound, line, reads)
            if not test:
                break
        try:
            item = next(items)
        except StopIteration:
            break
        values = tuple(body_fn(item, *values))
    return values


def _rest(iterable, k, items, line):
    """The items not taken yet, as a range or an array (a list or an iterator's items stacked
    leaf by leaf, when they have one structure, shape and dtype)."""
    import tracejit.numpy as tnp
    from .errors import ShapeError
    if isinstance(iterable, range):
        return iterable[k:]
    if isinstance(iterable, (Tracer, np.ndarray)):
        return _Stacked([iterable[k:]], tree.LEAF, len(iterable) - k)
    rest = [tree.flatten(v) for v in items]
    if not rest:
        return range(0)
    treedef = rest[0][1]
    try:
        if all(td == treedef and _traceable(leaves) for leaves, td in rest):
            return _Stacked([tnp.stack([leaves[j] for leaves, _ in rest])
                             for j in range(len(rest[0][0]))], treedef, len(rest))
    except ShapeError:
        pass                                     # (leaves of different shapes)
    raise _error(f"a `break` in a `for` loop over a {type(iterable).__name__} depends on a "
                 f"traced value, so the loop became a while_loop taking the items by a traced "
                 f"index, but they are not numbers or arrays of one structure, shape and "
                 f"dtype; loop over range(len(...)) instead", line)


class _Stacked:
    """Items of one pytree structure, stacked leaf by leaf: ``seq[i]`` for a traced ``i``."""

    def __init__(self, leaves, treedef, n):
        self.leaves, self.treedef, self.n = leaves, treedef, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        import tracejit.numpy as tnp
        return tree.unflatten(self.treedef, [tnp.take(leaf, i, axis=0) for leaf in self.leaves])


class TracedRange:
    """``range(start, stop, step)`` with a traced start or stop (a concrete nonzero step)."""

    def __init__(self, *args):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range expected 1 to 3 arguments, got {len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
        for b in (start, stop, step):
            if np.dtype(getattr(b, "dtype", type(b))).kind not in "biu":
                raise TypeError(f"range() of a {type(b).__name__} of dtype "
                                f"{np.dtype(getattr(b, 'dtype', type(b)))}: its bounds must be "
                                f"integers")
        if isinstance(step, Tracer):
            if step.known(need=True) is None:
                raise ConcretizationError("range() with a traced step: the direction of "
                                          "the loop would be known only at run time; give a "
                                          "concrete step")
            step = int(step.known(need=True))
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        self.start, self.stop, self.step = start, stop, int(step)


def range_(fn, *args):
    """``range(*args)``; a :class:`TracedRange` when ``fn`` is the builtin and a bound is traced
    (``for i in range(n)`` with a traced ``n`` becomes a while_loop)."""
    if fn is range and any(isinstance(a, Tracer) and a.known(need=True) is None for a in args):
        return TracedRange(*args)
    return fn(*args)


def _for_traced(seq, test_fn, body_fn, values, names, rebound, line, reads):
    """The items of ``seq`` (a range, an array or stacked items) through a while_loop carrying
    the item of a range, or the index into the others. That integer is weakly typed in the
    body, as the Python int a range gives (``x_f32 * i`` stays float32)."""
    import tracejit.numpy as tnp
    index = len(names)
    if isinstance(seq, (range, TracedRange)):
        if isinstance(seq, range) and len(seq) == 0:
            return values
        first, step = seq.start, seq.step

        def more(k):
            return k < seq.stop if step > 0 else k > seq.stop

        def item_of(k):
            return k
    else:
        n = len(seq)
        if n == 0:
            return values
        first, step = 0, 1

        def more(k):
            return k < n

        def item_of(k):
            return seq[k]

    def test(*vals):
        go = more(vals[index])
        return go if test_fn is None else tnp.logical_and(go, test_fn(*vals[:index]))

    def body(*vals):
        k = vals[index]
        return tuple(body_fn(item_of(k), *vals[:index])) + (k + step,)

    start = (first if first.dtype == np.int64 else tnp.astype(first, np.int64)) \
        if isinstance(first, Tracer) else np.int64(first)
    out = _while_traced(test, body, values + (start,), names + ("<loop index>",),
                        rebound, line, reads, "for", weak_last=True)
    return out[:index]


def _while_traced(test_fn, body_fn, values, names, rebound, line, reads, what,
                  weak_last=False):
    """The loop from here on as a ``tracejit.while_loop`` of the variables it assigns (and the
    arrays it reads, which a call may write into); ``weak_last``: the last value (a ``for``
    loop's integer) is weakly typed in the loop."""
    from .control import while_loop
    values = _placeholders(body_fn, values, names, reads)
    carried = _carried(values, names, reads)
    values = tuple(Undefined(v.name, f"(in the `{what}` loop at {line}, which became a "
                             f"while_loop: a value one iteration leaves for the next must be "
                             f"assigned before the loop)") if isinstance(v, Undefined) else v
                   for v in values)
    for i, v in enumerate(values):
        if not isinstance(v, Undefined) and i not in carried and names[i] not in reads:
            raise _error(f"variable {names[i]!r} ({type(values[i]).__name__}) is changed by a "
                         f"`{what}` loop on a traced value; loop variables must be arrays or "
                         f"numbers", line)

    def full(vals):
        out = list(values)
        for i, v in zip(carried, vals):
            out[i] = v
        return out

    def cond_fun(vals):
        with _tracing(f"`{what}` loop", line):
            return pred_of(test_fn(*full(vals)), what)

    wrote = set()

    def body_fun(vals):
        start = [v.irvar if isinstance(v, Tracer) else None for v in vals]
        with _tracing(f"`{what}` loop", line):
            outs = body_fn(*full(vals))
        wrote.update(i for k, i in enumerate(carried)
                     if start[k] is not None and vals[k].irvar is not start[k])
        for k, i in enumerate(carried):
            if isinstance(outs[i], Undefined):
                raise _error(f"variable {names[i]!r} is deleted in a `{what}` loop on a traced "
                             f"value", line)
            if start[k] is not None and vals[k].irvar is not start[k] and \
                    outs[i] is not vals[k]:
                raise _error(f"array {names[i]!r} is written into and then rebound in a "
                             f"`{what}` loop on a traced value; write into a copy, or do not "
                             f"rebind it", line)
            _check_carry(names[i], vals[k], outs[i], what, line)
        return tuple(outs[i] for i in carried)

    import tracejit.numpy as tnp
    init = []
    for i in carried:                            # (numbers as arrays; tuples leaf by leaf)
        leaves, treedef = tree.flatten(values[i])
        init.append(tree.unflatten(treedef, [v if isinstance(v, Tracer) else tnp.asarray(v)
                                             for v in leaves]))
    sizes = {i: len(v) for i, v in enumerate(values)
             if names[i] in reads and isinstance(v, (list, dict, set))}
    try:
        weak = (len(tree.flatten(init)[0]) - 1,) if weak_last else ()
        res = list(while_loop(cond_fun, body_fun, tuple(init), weak_leaves=weak))
    except ConcretizationError as e:
        if getattr(e, "tracejit_construct", False):
            raise
        out = ConcretizationError(
            f"{e.args[0].rstrip()}\n(in the `{what}` loop at {line}, which became a while_loop "
            f"because it runs on traced values: there the loop index and the variables the loop "
            f"changes are traced; keep such values out of shapes and Python conversions, or "
            f"make the loop's bounds and test concrete)")
        out.tracejit_construct = True
        raise out.with_traceback(e.__traceback__) from None
    for i, n in sizes.items():
        if len(values[i]) != n:
            raise _error(f"{type(values[i]).__name__} {names[i]!r} is changed in place in the "
                         f"`{what}` loop on a traced value: the loop became a while_loop, "
                         f"whose body runs once while tracing; collect the values into a "
                         f"preallocated array instead (a[i] = v)", line)
    for k, i in enumerate(carried):
        if names[i] in reads and i not in wrote:
            res[k] = values[i]                   # only read: the same array
    why = (f"is first assigned inside the `{what}` loop at {line}, which became a while_loop "
           f"(it runs on traced values, maybe zero times), so it is unassigned after the loop; "
           f"assign it before the loop")
    return tuple(Undefined(v.name, why) if isinstance(v, Undefined) else v
                 for v in _settle(values, full(res), names, rebound))


def _check_carry(name, old, new, what, line):
    """A loop variable keeps its structure, shape and dtype from one iteration to the next."""
    from .core import type_of
    (a, ta), (b, tb) = tree.flatten(old), tree.flatten(new)
    types = [(type_of(x), type_of(y)) for x, y in zip(a, b)]
    if ta == tb and all(t.shape == u.shape and (t.dtype == u.dtype or u.weak and
                        np.can_cast(u.dtype, t.dtype, "same_kind")) for t, u in types):
        return
    if ta != tb:
        change = f"its structure from {ta} to {tb}"
    else:
        t, u = next((t, u) for t, u in types if t.shape != u.shape or t.dtype != u.dtype)
        change = f"from {t.dtype}{list(t.shape)} to {u.dtype}{list(u.shape)}"
    raise _error(f"variable {name!r} changes {change} in an iteration of the `{what}` loop "
                 f"on a traced value (a while_loop): a loop variable keeps its shape and dtype; "
                 f"give it its final dtype and shape before the loop (0.0 rather than 0, a "
                 f"preallocated array written into rather than one that grows)", line)


def _placeholders(body_fn, values, names, reads):
    """The value an early ``return`` inside the loop stores (``__tj_retval``), unassigned
    before it, as zeros of the type the body gives it: the loop carries it, and it is read only
    when ``__tj_returned`` is set, i.e. after the body assigned it (the type is found by
    tracing the body once more, aside)."""
    from .core import make_graph, type_of
    from .ir import Type
    todo = [i for i, n in enumerate(names) if n == autograph_rewrite.RETVAL and
            isinstance(values[i], Undefined)]
    if not todo:
        return values
    carried = _carried(values, names, reads)
    leaves, treedef = tree.flatten(tuple(values[i] for i in carried))
    found = []

    def probe(*flat):
        full = list(values)
        for i, v in zip(carried, tree.unflatten(treedef, list(flat))):
            full[i] = v
        out = body_fn(*full)[todo[0]]
        if not isinstance(out, Undefined) and _traceable(out):
            found.append(out)
        return []

    make_graph(probe, [Type(type_of(x).dtype, type_of(x).shape) for x in leaves])
    if not found:
        return values
    return tuple(_zeros_like(found[0]) if i == todo[0] else v for i, v in enumerate(values))


def _error(message, line):
    e = ConcretizationError(f"{message} ({line})")
    e.tracejit_construct = True          # names the converted construct: not annotated again
    return e
