"""Arrays a traced function creates with NumPy are traced arrays.

``out = np.zeros(n); out[0] = x[0] * 2`` is ordinary NumPy, but NumPy's creation functions with
concrete arguments never meet a tracer: they would return a plain ndarray, which cannot hold a
traced value. So while a trace runs, the creation functions in the ``numpy`` module
(``CREATION`` below) are replaced by wrappers that, called from the traced function's code on
the thread that is tracing, return a traced array of NumPy's value: a broadcast literal for
zeros/ones/empty/full, else a constant of NumPy's own result (exact dtypes and values). Its value
stays *known* (``Tracer.known``), so code that inspects it concretely (``int(a[0])``, ``if``,
a mask, a shape) works as it did on the ndarray.

Everything else goes to NumPy's function unchanged: calls outside any trace, from other threads
(the builder is a context variable), and from NumPy, SciPy and tracejit themselves (the caller's
module is looked up, once per call, only while tracing). The wrappers are installed when the first
trace starts and removed when the last one ends, so code that is not being traced pays nothing.
Code that bound a creation function to its own name (``from numpy import zeros``) calls NumPy's
directly and gets a plain array, as before. The functions of ``np.random``'s global state and
Python's ``print`` are swapped the same way: called from user code while tracing, they draw
and print each time the compiled code runs (see their sections below).
"""
from __future__ import annotations

import builtins
import functools
import operator
import os
import sys
import threading
import warnings

import numpy as np

from .. import core, dtypes, forksafe
from ..errors import TracerWarning
from ..config import config
from ..ops.callback import draw, python_print
from ..core import Tracer, current_builder
from ._base import filled, has_tracer, strong
from . import creation, mutation

_LIBRARIES = ("numpy", "tracejit", "scipy")


def _from_library(depth=2) -> bool:
    frame = sys._getframe(depth)
    name = frame.f_globals.get("__name__", "")
    while name == "tracejit.autograph":     # a call from converted user code: its caller's
        frame = frame.f_back                # (autograph.stmt_call -> autograph.call -> here)
        name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name.partition(".")[0] in _LIBRARIES


def _array(value) -> Tracer:
    """A traced array (not a scalar: ``np.array(5.0) += 1`` writes) of a concrete value."""
    out = current_builder().constant(value)
    out.frozen = False
    out.builder.c_roots.add(id(out))
    return out


def _uniform(shape, value, dtype) -> Tracer:
    out = filled(shape if isinstance(shape, (tuple, list)) else (shape,), value, dtype)
    out.frozen = False
    out.builder.c_roots.add(id(out))
    return out


def _c_order(order):
    return order in ("C", "K", "A", None)


def _shape(shape) -> tuple:
    """A static shape (a traced size with a known value counts; others raise, as NumPy would)."""
    if isinstance(shape, (int, np.integer, Tracer)):
        shape = (shape,)
    return tuple(operator.index(s) for s in shape)


def _zeros(shape, dtype=float, order="C", **kw):
    if not _c_order(order) or kw:
        return None
    return _uniform(_shape(shape), 0, np.dtype(dtype))


def _ones(shape, dtype=None, order="C", **kw):
    out = _zeros(shape, dtype if dtype is not None else float, order, **kw)
    return None if out is None else _uniform(out.shape, 1, out.dtype)


def _full(shape, fill_value, dtype=None, order="C", **kw):
    if not _c_order(order) or kw:
        return None
    if isinstance(fill_value, Tracer) or has_tracer([shape]):
        out = mutation.value(creation.full(shape, fill_value, dtype=dtype))
        out.frozen = False
        return out
    sample = np.full((), fill_value, dtype=dtype)
    shp = _shape(shape)
    if np.ndim(fill_value) != 0:
        return _array(np.full(shp, fill_value, dtype=dtype))
    return _uniform(shp, sample[()], sample.dtype)


def _like(value):
    def fn(a, dtype=None, order="K", subok=True, shape=None, **kw):
        if isinstance(a, Tracer) or kw or not _c_order(order):
            return None
        ref = np.asarray(a)
        return _uniform(ref.shape if shape is None else _shape(shape), value,
                        ref.dtype if dtype is None else np.dtype(dtype))
    return fn


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kw):
    if isinstance(a, Tracer) or isinstance(fill_value, Tracer) or kw or not _c_order(order):
        return None
    ref = np.asarray(a)
    return _full(ref.shape if shape is None else shape, fill_value,
                 ref.dtype if dtype is None else dtype)


def _array_fn(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, **kw):
    if kw or not _c_order(order):
        return None
    if has_tracer([object]):
        out = strong(creation.array(object, dtype=dtype, ndmin=ndmin))
        if out is object and copy is not False:
            out = mutation.value(out)
        if isinstance(out, Tracer) and out.ndim == 0 and out is not object:
            out.frozen = False
        return out
    if isinstance(object, np.ndarray) and copy is False or \
            not isinstance(object, (list, tuple, np.ndarray, np.generic, int, float, complex,
                                    bool)):
        return None                        # NumPy's answer (the same object, or not numeric)
    return _array(np.array(object, dtype=dtype, ndmin=ndmin))


def _asarray(a, dtype=None, order=None, **kw):
    if isinstance(a, np.ndarray) and (dtype is None or np.dtype(dtype) == a.dtype):
        return None                        # the caller's array itself, as NumPy returns it
    if isinstance(a, Tracer):
        out = creation.asarray(a, dtype=dtype)
        if out is a and mutation.is_scalar(a):     # a new 0-d array of a scalar
            out = mutation.value(a)
            out.frozen = False
        made = strong(out)
        if made is not out and made.ndim == 0:
            made.frozen = False                     # (an array, not a scalar)
        return made
    return _array_fn(a, dtype=dtype, order=order or "K", **kw)


def _copy(a, order="K", subok=False):
    if isinstance(a, Tracer):
        return None                        # np.copy(tracer) reaches __array_function__
    return _array_fn(a, copy=True, order=order)


def _computed(np_fn):
    """A function of concrete numbers (eye, arange, ...): NumPy's result as a traced array."""
    def fn(*args, **kwargs):
        if has_tracer(args) or has_tracer(list(kwargs.values())):
            return None                    # NumPy dispatches traced operands (or says why not)
        out = np_fn(*args, **kwargs)
        return _array(out) if isinstance(out, np.ndarray) and \
            out.dtype.kind in "biufc" and _supported(out.dtype) else None
    return fn


def _supported(dt):
    try:
        dtypes.canonical(dt)
        return True
    except Exception:
        return False


CREATION = {
    "zeros": _zeros, "empty": _zeros, "ones": _ones, "full": _full,
    "zeros_like": _like(0), "empty_like": _like(0), "ones_like": _like(1),
    "full_like": _full_like, "array": _array_fn, "asarray": _asarray,
    "asanyarray": _asarray, "ascontiguousarray": _asarray, "copy": _copy,
    "eye": _computed(np.eye), "identity": _computed(np.identity), "tri": _computed(np.tri),
    "arange": _computed(np.arange), "linspace": _computed(np.linspace),
    "logspace": _computed(np.logspace), "geomspace": _computed(np.geomspace),
    "indices": _computed(np.indices),
}
_ORIGINAL = {name: getattr(np, name) for name in CREATION}


def _wrapper(name):
    original, traced = _ORIGINAL[name], CREATION[name]

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if current_builder() is not None and not _from_library():
            out = traced(*args, **kwargs)
            if out is not None:
                return out
        return original(*args, **kwargs)
    wrapper.__tracejit_original__ = original
    return wrapper


_WRAPPERS = {name: _wrapper(name) for name in CREATION}


def traced_ndarray(shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
    """``np.ndarray(shape, dtype)`` called from converted code (autograph.call) while tracing: a
    traced array of uninitialised values, as np.empty. The type itself is never replaced (that
    would change ``type(a) is np.ndarray`` and pickling for every thread); a call of it is,
    where autograph rewrote the calls of a traced function. None (NumPy's own array) for the
    other forms (over a buffer, with strides)."""
    if current_builder() is None or buffer is not None or strides is not None or \
            not _c_order(order):
        return None
    return _zeros(shape, dtype)


# NumPy's random numbers while tracing ---------------------------------------------------------
# ``np.random.normal(size=3)`` in a traced function would run once, while tracing: its sample
# would become a constant of the compiled code, every call returning the same "random" numbers.
# So while a trace runs, numpy.random's functions (the bound methods of NumPy's global
# RandomState) and ``default_rng`` are replaced like the creation functions. Called from user
# code on the tracing thread, a function of the global state becomes a ``numpy_draw`` step, run
# each time the compiled code runs (``np.random.seed(0)`` too). ``default_rng`` returns a
# subclass of np.random.Generator, on the same bit generator, whose sampling methods warn once
# per call site (a generator made in the trace is made once: its sample is baked), pointing to
# tracejit.random. The classes themselves stay (``isinstance(g, np.random.Generator)`` must
# keep working), so a generator made before the trace began, or by calling
# ``Generator``/``RandomState`` directly, is NumPy's own object, whose methods are C methods of
# an immutable type: converted code draws from it at run time (``autograph.numpy_draw``).

_NP_RANDOM_STATE = np.random.mtrand._rand
_RANDOM_FUNCTIONS = tuple(n for n in dir(np.random) if n not in ("get_state", "set_state")
                          and getattr(getattr(np.random, n), "__self__", None)
                          is _NP_RANDOM_STATE)
_warned_sites: set = set()


def _user_caller(depth):
    frame = sys._getframe(depth)
    while frame.f_globals.get("__name__", "") == "tracejit.autograph":
        frame = frame.f_back
    return frame


def _warn_frozen_sample(what, depth=3):
    """Warn (once per call site) that ``what`` draws one sample at trace time."""
    frame = _user_caller(depth)
    site = (frame.f_code.co_filename, frame.f_lineno)
    if site in _warned_sites:
        return
    _warned_sites.add(site)
    warnings.warn_explicit(
        f"{what} called while tracing ({os.path.basename(site[0])}:{site[1]}): NumPy draws the "
        f"sample once, now, and the compiled function returns that same sample on every call. "
        f"Draw inside the trace with tracejit.random and a key argument instead, e.g. "
        f"`import tracejit.random as jr; def f(key, x): return x + jr.normal(key, x.shape)`, "
        f"called with a new key each time (jr.split(key)).",
        TracerWarning, site[0], site[1], module=frame.f_globals.get("__name__"))


def _sampling(original, method=None):
    """A function of NumPy's global RandomState (``np.random.normal``) that, called from user
    code while tracing, draws each time the compiled function runs, from NumPy's global state
    (``ops.callback.draw``): the program sees NumPy's own sequence, as if run as NumPy code."""
    @functools.wraps(original)
    def sample(*args, **kwargs):
        if current_builder() is not None and not _from_library():
            return draw(method or original, args, kwargs)
        return original(*args, **kwargs)
    sample.__tracejit_original__ = original
    return sample


def _warning_subclass(base, prefix):
    """``base`` (np.random.Generator) with sampling methods that warn."""
    names = [n for n in dir(base) if not n.startswith("_") and callable(getattr(base, n)) and
             n not in ("spawn", "get_state", "set_state", "seed", "bit_generator")]
    ns = {}
    for name in names:
        def method(self, *args, __name=name, **kwargs):
            if current_builder() is not None and not _from_library():
                _warn_frozen_sample(f"{prefix}.{__name}")
            return getattr(super(cls, self), __name)(*args, **kwargs)
        method.__name__ = name
        ns[name] = method
    cls = type(f"Traced{base.__name__}", (base,), ns)
    cls.__module__ = __name__
    return cls


_TracedGenerator = _warning_subclass(np.random.Generator, "np.random.Generator")


def _default_rng(original):
    @functools.wraps(original)
    def default_rng(*args, **kwargs):
        out = original(*args, **kwargs)
        if current_builder() is None or _from_library() or type(out) is not np.random.Generator:
            return out
        return _TracedGenerator(out.bit_generator)    # the same bit generator: the same stream
    default_rng.__tracejit_original__ = original
    return default_rng


RANDOM = {name: _sampling(getattr(np.random, name)) for name in _RANDOM_FUNCTIONS}
RANDOM["default_rng"] = _default_rng(np.random.default_rng)
# (np.random.seed is a module function: run, in a trace, as the global RandomState's seed)
RANDOM["seed"] = _sampling(np.random.seed, _NP_RANDOM_STATE.seed)


# Python's print while tracing ----------------------------------------------------------------
# ``print(x)`` in a traced function would print once, while tracing (a tracer, not a value).
# While a trace runs, ``builtins.print`` called from user code on the tracing thread becomes a
# run-time print (ops.callback.python_print): the compiled code prints what, and as often as,
# the Python program would (inside converted loops too). Other threads, library code and
# ``config.autograph = False`` get Python's own print.
_PRINT = builtins.print


def _print(*args, **kwargs):
    if current_builder() is not None and config.autograph and not _from_library():
        return python_print(*args, **kwargs)
    return _PRINT(*args, **kwargs)


_print.__tracejit_original__ = _PRINT
_SWAPS = [(np, name, _WRAPPERS[name], _ORIGINAL[name]) for name in CREATION] + \
    [(np.random, name, fn, fn.__tracejit_original__) for name, fn in RANDOM.items()] + \
    [(builtins, "print", _print, _PRINT)]

_lock = threading.Lock()
_active = 0
# taken around os.fork (a leaf lock, held only to swap the functions): a child forked while
# another thread entered a trace would otherwise wait for it forever (1 child in ~1000 did).
# A child may keep the wrappers installed for its parent's other threads' traces: they call
# the originals outside a trace, so that costs a check per call, never a different result.
forksafe.register(_lock, forksafe.LEAF)


class _NumpyOfExtensions:
    """What compiled extension modules see as ``np`` while the wrappers are installed: NumPy
    with its own functions. Their calls (``np.empty`` inside ``RandomState.randn``) come from
    C, where the caller's frame is the user's: the wrapper would hand them a tracer, which
    Cython casts to an ndarray unchecked (a crash)."""

    def __init__(self):
        for module, name, _, original in _SWAPS:
            if module is np:
                setattr(self, name, original)
        self.random = _NumpyRandomOfExtensions()

    def __getattr__(self, name):
        return getattr(np, name)


class _NumpyRandomOfExtensions:
    def __init__(self):
        for module, name, _, original in _SWAPS:
            if module is np.random:
                setattr(self, name, original)

    def __getattr__(self, name):
        return getattr(np.random, name)


_EXT_NP = None
_ext_bindings: list = []         # (extension module's dict, name) bound to numpy, while swapped
_ext_seen = [0, []]              # (len(sys.modules) when scanned, what the scan found)


def _extension_bindings():
    """The globals of compiled extension modules (.so) bound to the numpy module."""
    if _ext_seen[0] != len(sys.modules):
        found = []
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None) or ""
            if not path.endswith((".so", ".pyd")):
                continue
            d = getattr(module, "__dict__", {})
            found += [(d, k) for k, v in list(d.items()) if v is np]
        _ext_seen[:] = [len(sys.modules), found]
    return _ext_seen[1]


def _enter():
    global _active, _EXT_NP
    with _lock:
        _active += 1
        if _active == 1:
            for module, name, wrapper, _ in _SWAPS:
                setattr(module, name, wrapper)
            if _EXT_NP is None:
                _EXT_NP = _NumpyOfExtensions()
            for d, k in _extension_bindings():
                if d.get(k) is np:
                    d[k] = _EXT_NP
                    _ext_bindings.append((d, k))


def _exit():
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            for module, name, wrapper, original in _SWAPS:
                if getattr(module, name) is wrapper:
                    setattr(module, name, original)
            for d, k in _ext_bindings:
                if d.get(k) is _EXT_NP:
                    d[k] = np
            _ext_bindings.clear()


core.register_trace_hooks(_enter, _exit)
