"""Array creation: zeros ones full eye arange linspace *_like, array/asarray.

Sizes and ranges must be concrete (shapes are static); fill values may be traced.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import ConcretizationError
from ..ops import structural as st
from ._base import broadcast_to, convert, implements

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "eye", "identity", "arange", "linspace", "array", "asarray", "copy",
           "tri", "tril", "triu"]


def _dtype(dtype, default=dtypes.float64):
    return default if dtype is None else dtypes.canonical(dtype)


def _static_shape(shape, fname):
    for d in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        _concrete(d, f"{fname}(shape)")
    return shape


def zeros(shape, dtype=float, order="C"):
    return np.zeros(_static_shape(shape, "zeros"), dtype=dtype)


def ones(shape, dtype=float, order="C"):
    return np.ones(_static_shape(shape, "ones"), dtype=dtype)


empty = zeros             # never hand out uninitialised memory
eye = np.eye
identity = np.identity
tri = np.tri


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C"):
    """An array of ``shape`` filled with ``fill_value`` (which may be traced)."""
    shape = (shape,) if isinstance(shape, (int, np.integer, Tracer)) else tuple(shape)
    _static_shape(shape, "full")
    t = type_of(fill_value)
    dt = _dtype(dtype, t.dtype)
    v = convert(fill_value, dt)
    if not isinstance(v, Tracer):
        return np.full(shape, getattr(v, "value", v), dtype=dt)
    return broadcast_to(v, shape)


def _like(value):
    def fn(a, dtype=None, order="K", subok=True, shape=None):
        t = type_of(a)
        shp = t.shape if shape is None else shape
        dt = t.dtype if dtype is None else dtypes.canonical(dtype)
        return np.full(shp, value, dtype=dt)
    return fn


zeros_like = implements(None, name="zeros_like")(_like(0))
ones_like = implements(None, name="ones_like")(_like(1))
empty_like = implements(None, name="empty_like")(_like(0))


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    t = type_of(a)
    return full(t.shape if shape is None else shape, fill_value,
                dtype=t.dtype if dtype is None else dtype)


def _concrete(x, fname):
    if isinstance(x, Tracer):
        raise ConcretizationError(f"{fname} needs concrete bounds (the result shape depends on "
                                  f"them); got a traced {x.ty}. Pass them as static arguments.")
    return x


@implements(np.arange)
def arange(start, stop=None, step=None, dtype=None):
    for v in (start, stop, step):
        _concrete(v, "arange")
    return np.arange(start, stop, step, dtype=dtype)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Evenly spaced values; ``start``/``stop`` may be traced, ``num`` must be concrete."""
    from .math import add, multiply, subtract
    _concrete(num, "linspace(num=...)")
    div = (num - 1) if endpoint else num
    step_frac = np.arange(num, dtype=np.float64) / div if div > 0 else np.zeros(num)
    if endpoint and num > 1:
        step_frac[-1] = 1.0
    start_t, stop_t = type_of(start), type_of(stop)
    if start_t.shape or stop_t.shape or axis != 0:
        from ..errors import UnsupportedError
        raise UnsupportedError("linspace with traced array endpoints is not supported yet")
    delta = subtract(stop, start)
    out = add(start, multiply(delta, step_frac))
    if endpoint and num > 1:
        from .logic import where
        out = where(np.arange(num) == num - 1, stop, out)     # the endpoint exactly
    if dtype is not None:
        out = out.astype(dtype)
    if retstep:
        return out, (multiply(delta, 1.0 / div) if div > 0 else np.nan)
    return out


@implements(np.array)
def array(object, dtype=None, copy=True, order="K", ndmin=0):
    """Like numpy.array; nested lists of tracers are stacked."""
    from .shape import stack
    if isinstance(object, Tracer):
        out = object
    elif isinstance(object, (list, tuple)):
        out = stack([array(o) for o in object]) if object else np.array(object)
    else:
        out = np.asarray(object)
    if dtype is not None:
        out = convert(out, dtypes.canonical(dtype)) if isinstance(out, Tracer) else \
            out.astype(dtype)
    while type_of(out).ndim < ndmin:
        from .shape import expand_dims
        out = expand_dims(out, 0)
    return out


@implements(np.asarray)
def asarray(a, dtype=None, order=None):
    return array(a, dtype=dtype)


@implements(np.copy)
def copy(a, order="K"):
    return a


@implements(np.tril)
def tril(m, k=0):
    from .logic import where
    t = type_of(m)
    mask = np.tri(t.shape[-2], t.shape[-1], k, dtype=bool)
    return where(mask, m, 0)


@implements(np.triu)
def triu(m, k=0):
    from .logic import where
    t = type_of(m)
    mask = ~np.tri(t.shape[-2], t.shape[-1], k - 1, dtype=bool)
    return where(mask, m, 0)
