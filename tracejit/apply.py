"""``apply_along_axis`` and ``apply_over_axes`` on tracers, for ``tracejit.numpy``.

NumPy's ``apply_along_axis`` calls the function once per 1-d slice in a Python loop; traced, that
loop would unroll into one copy of the function per slice. Here the function is traced once, for
one slice, and batched over all the other axes with ``vmap`` (as JAX's), so its derivatives and
vmap compose like any other code. These functions live above the NumPy layer because ``vmap``
does (``vmapped.py``); the package root installs them in ``tracejit.numpy``, where NumPy's
``__array_function__`` dispatch finds them. On concrete arrays they are NumPy's own.
"""
from __future__ import annotations

import numpy as np

from . import numpy as tnp
from .core import Tracer, type_of
from .numpy._base import as_traceable, normalize_axis
from .vmapped import vmap

__all__ = ["apply_along_axis", "apply_over_axes"]


def _traced(values) -> bool:
    return any(isinstance(v, Tracer) for v in values)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's apply_along_axis: ``func1d(slice, *args, **kwargs)`` for every 1-d slice of
    ``arr`` along ``axis``; the dimensions of its result replace ``axis`` (NumPy's layout).
    Traced: one trace of ``func1d``, batched by ``vmap`` over the other axes."""
    if not _traced((arr, *args, *kwargs.values())):
        return np.apply_along_axis(func1d, axis, arr, *args, **kwargs)
    arr = as_traceable(arr)
    shape = type_of(arr).shape
    axis = normalize_axis(axis, len(shape), "apply_along_axis")
    rest = shape[:axis] + shape[axis + 1:]
    if 0 in rest:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    rows = tnp.reshape(tnp.moveaxis(arr, axis, -1), (-1, shape[axis]))
    out = vmap(lambda row: as_traceable(func1d(row, *args, **kwargs)))(rows)
    res = type_of(out).shape[1:]
    out = tnp.reshape(out, rest + res)
    # the result's own dimensions go where ``axis`` was
    k = len(rest)
    perm = list(range(axis)) + list(range(k, k + len(res))) + list(range(axis, k))
    return tnp.transpose(out, perm)


def apply_over_axes(func, a, axes):
    """NumPy's apply_over_axes: ``a = func(a, axis)`` for each axis in turn, a result with one
    dimension fewer getting it back (as a length-1 axis)."""
    if not _traced((a,)):
        return np.apply_over_axes(func, a, axes)
    val = as_traceable(a)
    n = type_of(val).ndim
    for axis in np.atleast_1d(axes):
        axis = int(axis) + n if axis < 0 else int(axis)
        res = as_traceable(func(val, axis))
        if type_of(res).ndim != n:
            res = tnp.expand_dims(res, axis)
            if type_of(res).ndim != n:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val
