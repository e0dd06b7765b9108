"""Array creation: zeros ones full eye arange linspace *_like, array/asarray.

Sizes and ranges must be concrete (shapes are static); fill values may be traced.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..ops import structural as st
from ._base import broadcast_to, concrete_bound, convert, filled, implements, static_shape

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "eye", "identity", "arange", "linspace", "array", "asarray", "copy",
           "tri", "tril", "triu"]


def _dtype(dtype, default=dtypes.float64):
    return default if dtype is None else dtypes.canonical(dtype)


def zeros(shape, dtype=float, order="C"):
    return np.zeros(static_shape(shape, "zeros"), dtype=dtype)


def ones(shape, dtype=float, order="C"):
    return np.ones(static_shape(shape, "ones"), dtype=dtype)


def empty(shape, dtype=float, order="C"):
    """Zeros: tracejit never hands out uninitialised memory."""
    return np.zeros(static_shape(shape, "empty"), dtype=dtype)


def eye(N, M=None, k=0, dtype=float, order="C"):
    """numpy.eye (a concrete array; the sizes must be concrete)."""
    static_shape((N, M, k), "eye")
    return np.eye(N, M, k, dtype=dtype)


def identity(n, dtype=None):
    static_shape(n, "identity")
    return np.identity(n, dtype=dtype)


tri = np.tri


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C"):
    """An array of ``shape`` filled with ``fill_value`` (which may be traced)."""
    shape = (shape,) if isinstance(shape, (int, np.integer, Tracer)) else tuple(shape)
    static_shape(shape, "full")
    t = type_of(fill_value)
    dt = _dtype(dtype, t.dtype)
    v = convert(fill_value, dt)
    if not isinstance(v, Tracer):
        return np.full(shape, getattr(v, "value", v), dtype=dt)
    return broadcast_to(v, shape)


def _like(value):
    def fn(a, dtype=None, order="K", subok=True, shape=None):
        t = type_of(a)
        shp = t.shape if shape is None else static_shape(shape, "zeros_like")
        shp = (shp,) if isinstance(shp, (int, np.integer)) else tuple(shp)
        dt = t.dtype if dtype is None else dtypes.canonical(dtype)
        if isinstance(a, Tracer):           # a traced array like its model (.at, x[i] = v)
            return filled(shp, value, dt)
        return np.full(shp, value, dtype=dt)
    return fn


zeros_like = implements(None, name="zeros_like")(_like(0))
ones_like = implements(None, name="ones_like")(_like(1))
empty_like = implements(None, name="empty_like")(_like(0))


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """An array like ``a`` filled with ``fill_value``; traced when ``a`` or the value is."""
    t = type_of(a)
    shp = t.shape if shape is None else shape
    dt = t.dtype if dtype is None else dtypes.canonical(dtype)
    if isinstance(a, Tracer) and not isinstance(fill_value, Tracer):
        shp = (shp,) if isinstance(shp, (int, np.integer)) else tuple(static_shape(shp,
                                                                                    "full_like"))
        return filled(shp, np.asarray(fill_value).astype(dt)[()], dt)
    return full(shp, fill_value, dtype=dt)


@implements(np.arange)
def arange(start, stop=None, step=None, dtype=None):
    for v in (start, stop, step):
        concrete_bound(v, "arange")
    return np.arange(start, stop, step, dtype=dtype)


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Evenly spaced values, NumPy's algorithm step for step; ``start``/``stop`` may be traced
    (scalars or arrays, broadcast together), ``num`` must be concrete."""
    from ._base import broadcast_shapes, result_type
    from .logic import where
    from .math import add, equal, floor, multiply, subtract, true_divide
    from .shape import moveaxis
    concrete_bound(num, "linspace(num=...)")
    num = int(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    dt, _ = result_type(start, stop, 1.0)
    dt = dtypes.float_dtype(dt)
    start, stop = convert(start, dt), convert(stop, dt)
    shape = broadcast_shapes("linspace", type_of(start).shape, type_of(stop).shape)
    delta = subtract(stop, start)
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * len(shape))
    if div > 0:
        from .reductions import any as any_
        step = true_divide(delta, div)
        # NumPy switches the whole result to (y / div) * delta if any step is zero
        y = where(any_(equal(step, 0)), multiply(true_divide(y, div), delta), multiply(y, step))
    else:
        step = np.nan
        y = multiply(y, delta)
    y = add(y, start)
    if endpoint and num > 1:
        last = np.arange(num).reshape((-1,) + (1,) * len(shape)) == num - 1
        y = where(last, stop, y)
    y = broadcast_to(y, (num,) + shape)
    if axis != 0:
        from ._base import normalize_axis
        y = moveaxis(y, 0, normalize_axis(axis, len(shape) + 1, "linspace"))
    if dtype is not None:
        odt = dtypes.canonical(dtype)
        if odt.kind in "bi":
            y = floor(y)
        y = convert(y, odt) if isinstance(y, Tracer) else np.asarray(y).astype(odt)
    if retstep:
        return y, step
    return y


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
    return Tracer(a.builder, a.irvar) if isinstance(a, Tracer) else array(a)


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
