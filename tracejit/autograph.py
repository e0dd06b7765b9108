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

import contextlib
import contextvars
import functools
import os
import sys
import types

import numpy as np

from . import autograph_rewrite
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
        _factories[code] = autograph_rewrite.make_factory(fn) if _user_code(code) else None
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
