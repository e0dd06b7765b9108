"""Python control flow on traced values, converted to graph control flow.

A trace that fails because Python branched on a traced value (``if x.sum() > 0:``, ``while err >
tol:``, ``for i in range(n)`` with a traced ``n``, ``a if c else b``, ``c1 and c2``, ``not c``)
is traced again with the user's functions *converted*: their source is parsed once per code
object and rewritten (autograph_rewrite.py) so that

- ``if t: A else: B`` becomes two local functions of the variables the branches assign, run
  through :func:`if_stmt`: a concrete test runs one branch as Python does; a traced one becomes
  ``tracejit.cond`` (both branches traced, one runs); branches that ``return`` give
  :func:`if_return`, and both must return the same structure, shapes and dtypes;
- ``while t: A`` becomes a test and a body function of the variables the body assigns, run through
  :func:`while_stmt`: a concrete test loops in Python (unrolled, as before), a traced one becomes
  ``tracejit.while_loop`` from the iteration where the test first depends on traced data;
- ``for x in range(...)`` and every ``for`` with a ``break`` run through :func:`for_stmt`: over a
  concrete range or sequence (a list, an iterator, a traced array's rows) the loop unrolls as
  before; a range with a traced bound, or a ``break`` whose condition becomes traced, gives a
  ``while_loop`` carrying the index (the remaining items taken by a traced index). Other ``for``
  loops run as written (their ifs converted);
- ``break``, ``continue`` and ``return`` inside loops become flags first (``while not broken
  and t``; the statements after one run under ``if not flag``; a return stores its value,
  carried by the loops as zeros until set, and the function returns it after them);
- ``a[i]`` reads a NumPy array indexed by traced values through a traced copy of it
  (:func:`getitem`);
- ``a if t else b``, ``and``, ``or``, ``not`` take the traced forms (cond, logical_and/or/not)
  only for traced operands, Python's otherwise; an ``and``/``or`` operand after a traced one
  that raises a Python error while traced raises it at run time, only when Python would
  have evaluated it (:func:`_deferred`);
- a call whose result a statement drops, made inside the body of a construct traced as a
  cond/while_loop, is a Python side effect that runs once, while tracing: :func:`stmt_call`
  warns of it, once per line (``print`` is not one: while tracing, it prints at run time,
  see numpy/intercept.py);
- calls of other user functions go through :func:`call`, which converts them too (library code:
  NumPy, SciPy, tracejit, the standard library, site-packages, is called as is);
- a draw from a NumPy ``RandomState``/``Generator`` object made outside the trace
  (``rs.randn(n)``, where NumPy's C methods cannot be intercepted) becomes ``numpy_draw``, run
  each time the compiled code runs, as the NumPy program would. A trace after which such a
  generator reachable from the function (closures, defaults, globals it names, the functions
  those hold) has moved is traced again converted, the generator's state put back first
  (:func:`generators_of`, :func:`drew`).

Variables follow Python: a loop variable ends with the last item (unchanged when the loop ran
zero times); a variable first assigned inside a loop that became a while_loop, or in an ``if``
branch not taken, is unassigned after it (the converted code deletes it: using it raises
UnboundLocalError saying why). A loop variable keeps its structure, shape and dtype across a
traced loop (else a ConcretizationError names it and the line), and errors raised inside a
converted loop name it. Loops containing ``try``, ``match``, ``yield``, ``await`` or
``global``/``nonlocal`` are left as written (a traced test there still raises the
ConcretizationError naming the line). Arrays a branch or loop writes into (``x[i] = v``,
``x += v``) are written into the caller's array after the ``cond``/``while_loop``, as NumPy would
have. Converted code runs only while tracing; ``config.autograph = False`` turns conversion off.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import re
import sys
import types
import warnings

import numpy as np

from . import autograph_rewrite
# (the statement helpers the converted code calls as __tj.if_stmt, ...)
from .autograph_control import (Undefined, for_stmt, if_return, if_stmt,  # noqa: F401
                                is_traced_bool, pred_of, range_, traced_construct, while_stmt)
from .config import config
from .core import Tracer, current_builder
from .errors import CompilerError, TracerError, TracerWarning
from .ir import Type
from .numpy import intercept
from .ops.callback import draw, pure_callback_p

_active: contextvars.ContextVar = contextvars.ContextVar("tracejit_autograph", default=False)
# variable name -> why a converted construct left it unassigned (explains an UnboundLocalError)
_unbound_why: contextvars.ContextVar = contextvars.ContextVar("tracejit_autograph_unbound",
                                                             default=None)
_factories: dict = {}          # code object -> factory (or None: cannot be converted)
_GENERATORS = (np.random.RandomState, np.random.Generator)


def active() -> bool:
    return _active.get()


@contextlib.contextmanager
def enabled(on: bool = True):
    """Context: convert the user functions traced in the body (see :func:`call`)."""
    token, why = _active.set(on), _unbound_why.set({})
    try:
        yield
    finally:
        _unbound_why.reset(why)
        _active.reset(token)


# --- running converted code ------------------------------------------------------------------

def call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, with ``fn`` converted when conversion is on and it is user code;
    ``np.ndarray(shape)`` makes a traced array (intercept.traced_ndarray); a draw from a NumPy
    generator object (``rs.randn(n)``) runs when the compiled code runs."""
    if fn is np.ndarray:
        out = intercept.traced_ndarray(*args, **kwargs)
        if out is not None:
            return out
    if _active.get() and config.autograph:
        if isinstance(getattr(fn, "__self__", None), _GENERATORS) and \
                current_builder() is not None:
            return numpy_draw(fn, *args, **kwargs)
        conv = converted(fn)
        if conv is not None:
            try:
                return conv(*args, **kwargs)
            except UnboundLocalError as e:
                raise _explained(e) from None
    return fn(*args, **kwargs)


def stmt_call(where, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as a statement of converted code (its result dropped: a call
    made for its side effect), ``where`` its (file, line). Inside the body of a converted
    construct being traced as a graph, a Python side effect runs once, now, not each time the
    compiled construct runs: a TracerWarning says so, once per line. Not for what runs with
    the compiled code anyway: ``print`` (a run-time print), NumPy functions and draws (traced
    operations, ``numpy_draw``), methods of traced arrays, tracejit's own functions, and user
    functions (converted: their own statements are checked)."""
    construct = traced_construct() if _active.get() and config.autograph else None
    if construct is not None and where not in _warned_effects and _runs_once(fn):
        _warned_effects.add(where)
        what, line = construct
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
        warnings.warn_explicit(
            f"{os.path.basename(where[0])}:{where[1]}: `{name}(...)` is a Python side effect "
            f"inside the {what} at {line}, which depends on traced values and became graph "
            f"control flow: it ran once, while tracing, and does not run each time the "
            f"compiled code runs that {what} (Python would have run it "
            f"{'on each iteration' if 'loop' in what else 'on the branch taken'}). Return the "
            f"values from the construct and act on them after it, use tracejit.debug.print or "
            f"tracejit.pure_callback for run-time effects, or keep the test concrete.",
            TracerWarning, where[0], where[1])
    return call(fn, *args, **kwargs)


_warned_effects: set = set()


def _runs_once(fn) -> bool:
    """Whether calling ``fn`` while tracing is a Python side effect the compiled code will not
    repeat (see :func:`stmt_call`)."""
    if isinstance(fn, np.ufunc) or \
            isinstance(getattr(fn, "__self__", None), (Tracer,) + _GENERATORS):
        return False
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "tracejit"):
        return False
    return converted(fn) is None


def unbound(value) -> bool:
    """Whether a converted statement left the variable unassigned (the converted code then
    deletes it: using it raises UnboundLocalError, as in Python)."""
    if not isinstance(value, Undefined):
        return False
    reasons = _unbound_why.get()
    if value.why and reasons is not None:
        reasons[value.name] = value.why
    return True


def _explained(e):
    """``e`` (an UnboundLocalError) saying why, when a converted loop left the variable
    unassigned."""
    match = re.search(r"variable '(\w+)'", str(e))
    why = (_unbound_why.get() or {}).get(match.group(1)) if match else None
    if not why or getattr(e, "tracejit_explained", False):
        return e
    out = UnboundLocalError(f"{e}: {match.group(1)!r} {why}").with_traceback(e.__traceback__)
    out.tracejit_explained = True
    return out


def load(values: dict, names):
    """The current values of ``names`` (``locals()`` of the converted function)."""
    return tuple(values[n] if n in values else Undefined(n) for n in names)


def ifexp(test, then_fn, else_fn):
    if not is_traced_bool(test):
        return then_fn() if test else else_fn()
    from .control import cond
    return cond(pred_of(test, "a conditional expression"), then_fn, else_fn)


def and_(*fns):
    """``a and b and ...`` (each operand a function): see :func:`_short_circuit`."""
    return _short_circuit(fns, True)


def or_(*fns):
    """``a or b or ...`` (each operand a function): see :func:`_short_circuit`."""
    return _short_circuit(fns, False)


def _short_circuit(fns, is_and):
    """Python's ``and`` (``is_and``) or ``or`` over the operand functions ``fns``, turning into
    logical_and/logical_or from the first traced operand on. An operand after a traced one that
    raises while traced is deferred (``_deferred``): Python would have evaluated it only for
    one truth of the traced value. tracejit's own refusals (``TracerError``) and internal
    errors are raised at once: Python would have run that operand, so a run-time error would
    refuse a valid program late."""
    import tracejit.numpy as tnp
    value = fns[0]()
    for fn in fns[1:]:
        if is_traced_bool(value):
            try:
                right = fn()
            except (TracerError, CompilerError):
                raise
            except Exception as e:          # noqa: BLE001 (the user's error, raised later)
                return _deferred(value, is_and, e)
            value = (tnp.logical_and if is_and else tnp.logical_or)(value, right)
        elif bool(value) != is_and:         # and: a false operand ends it; or: a true one
            return value
        else:
            value = fn()
    return value


def _deferred(value, raise_when, error):
    """``value`` (traced), after raising ``error`` when the compiled function runs if its truth
    is ``raise_when``: the right operand of ``and`` (``raise_when=True``) or ``or`` (False)
    raised ``error`` while traced, and Python evaluates it only for that truth (and returns
    ``value`` itself otherwise, so later operands never matter). A host callback
    (``pure_callback_p``) does it: it is the one primitive that can raise any Python exception
    at run time, and its bool operand has no tangent."""
    pred = pred_of(value, "the left operand of 'and'/'or'")
    raiser = _Raiser(error, raise_when)
    return pure_callback_p.bind(pred, callback=raiser, result_types=(Type(np.dtype(bool), ()),),
                                vectorized=False)[0]


class _Raiser:
    """The callback of :func:`_deferred`: raises a fresh copy of the traced operand's error
    (same type and message, the original chained) when the operand is ``raise_when``."""

    def __init__(self, error, raise_when):
        self.error, self.raise_when = error, raise_when
        self.__name__ = f"the deferred {type(error).__name__} of an 'and'/'or' operand"

    def __call__(self, pred):
        if bool(pred) == self.raise_when:
            try:
                fresh = type(self.error)(*self.error.args)
            except Exception:               # noqa: BLE001 (an exception class with other args)
                raise self.error from None
            raise fresh from self.error
        return [np.asarray(pred)]


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


slice_ = slice


def getitem(value, index):
    """``value[index]``; a NumPy array indexed by traced values is read as a traced array (NumPy
    itself would ask for the index's concrete value)."""
    if isinstance(value, np.ndarray) and any(
            isinstance(i, Tracer) for i in (index if isinstance(index, tuple) else (index,))) \
            and current_builder() is not None:
        value = current_builder().constant(value)
    return value[index]


def not_(x):
    if is_traced_bool(x):
        import tracejit.numpy as tnp
        return tnp.logical_not(x)
    return not x



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



def numpy_draw(method, *args, **kwargs):
    """``method(*args, **kwargs)``, a sampling method of a NumPy RandomState or Generator
    object (``rs.randn(20, 3)``), drawn each time the compiled function runs, so the program
    sees the samples, and leaves the generator in the state, that running it as NumPy code
    would (``ops.callback.draw``). The arguments must be concrete (sizes, scales). (Converted
    code calls this for draws from generators made outside the trace.)"""
    return draw(method, args, kwargs)


# --- NumPy generators drawn from while tracing ----------------------------------------------

def _names(code):
    """The global names ``code`` and the functions defined in it read."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def generators_of(fn, depth: int = 6) -> list:
    """The NumPy RandomState/Generator objects reachable from ``fn`` through closures,
    defaults, the globals its code names, bound methods, partials, wrapped functions and
    small containers (``depth`` levels): the ones a trace of ``fn`` may draw from."""
    found, seen = [], set()

    def visit(obj, d):
        if id(obj) in seen or d < 0:
            return
        seen.add(id(obj))
        if isinstance(obj, _GENERATORS):
            found.append(obj)
        elif isinstance(obj, types.MethodType):
            visit(obj.__func__, d)
            visit(obj.__self__, d - 1)
        elif isinstance(obj, functools.partial):
            for v in (obj.func, *obj.args, *obj.keywords.values()):
                visit(v, d - 1)
        elif isinstance(obj, types.FunctionType):
            cells = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
            g = obj.__globals__
            for v in cells + list(obj.__defaults__ or ()) + list(
                    (obj.__kwdefaults__ or {}).values()) + \
                    [g[n] for n in _names(obj.__code__) if n in g]:
                visit(v, d - 1)
        elif isinstance(obj, (list, tuple)) and len(obj) <= 64:
            for v in obj:
                visit(v, d - 1)
        elif isinstance(obj, dict) and len(obj) <= 64:
            for v in obj.values():
                visit(v, d - 1)
        elif getattr(obj, "__wrapped__", None) is not None and not isinstance(obj, type):
            visit(obj.__wrapped__, d)              # tracejit's traced and derivative objects
    visit(fn, depth)
    return found


def _state(g):
    return g.get_state() if isinstance(g, np.random.RandomState) else g.bit_generator.state


def states(gens) -> list:
    return [_state(g) for g in gens]


def drew(gens, before) -> list:
    """The generators among ``gens`` whose state moved since ``before`` (put back as it was)."""
    moved = []
    for g, old in zip(gens, before):
        if not _same(_state(g), old):
            moved.append(g)
            if isinstance(g, np.random.RandomState):
                g.set_state(old)
            else:
                g.bit_generator.state = old
    return moved


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(np.array_equal(a, b))
