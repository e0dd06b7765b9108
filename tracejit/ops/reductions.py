"""Reductions (sum, max, min, prod, argmax, argmin) and scans (cumsum, cumprod) over static axes.

``axes`` is a sorted tuple of non-negative axes; reduced axes are removed (keepdims is a reshape
in the NumPy layer). max/min propagate NaN like NumPy. argmax/argmin return the first index of the
extreme value (a NaN counts as the extreme, as in NumPy) and are not differentiable.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type


def _check_axes(name, x, axes):
    if tuple(sorted(set(axes))) != tuple(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"{name}: bad axes {axes} for shape {x.shape}")


def _reduce(name, np_fn, *, identity, kinds, **props):
    def shape_rule(x, *, axes):
        _check_axes(name, x, axes)
        if x.dtype.kind not in kinds:
            raise DTypeError(f"{name} is not defined for dtype {x.dtype}")
        if identity is None and any(x.shape[a] == 0 for a in axes):
            raise ShapeError(f"{name}: zero-size axis in shape {x.shape} has no identity; "
                             f"use the initial= argument or check the shape")
        return Type(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes), x.weak)

    def impl(x, *, axes):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return np.asarray(np_fn(x, axis=tuple(axes)), dtype=x.dtype)

    return Primitive(name, "reduction", shape_rule, impl, identity=identity, **props)


reduce_sum_p = _reduce("reduce_sum", np.sum, identity=0, kinds="bifc", linear=True)
reduce_prod_p = _reduce("reduce_prod", np.prod, identity=1, kinds="ifc")
reduce_max_p = _reduce("reduce_max", np.max, identity=None, kinds="bif")
reduce_min_p = _reduce("reduce_min", np.min, identity=None, kinds="bif")


def _arg_shape(name):
    def shape_rule(x, *, axis):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {x.shape}")
        if x.shape[axis] == 0:
            raise ShapeError(f"{name}: attempt to get {name} of an empty sequence "
                             f"(shape {x.shape}, axis {axis})")
        if x.dtype.kind not in "bif":
            raise DTypeError(f"{name} is not defined for dtype {x.dtype}")
        return Type(dtypes.int64, tuple(d for i, d in enumerate(x.shape) if i != axis))
    return shape_rule


argmax_p = Primitive("argmax", "reduction", _arg_shape("argmax"),
                     lambda x, *, axis: np.asarray(np.argmax(x, axis=axis), dtype=np.int64))
argmin_p = Primitive("argmin", "reduction", _arg_shape("argmin"),
                     lambda x, *, axis: np.asarray(np.argmin(x, axis=axis), dtype=np.int64))


def _scan(name, np_fn, **props):
    def shape_rule(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {x.shape}")
        if x.dtype.kind not in "ifc":
            raise DTypeError(f"{name} is not defined for dtype {x.dtype}")
        return x

    def impl(x, *, axis, reverse):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            if reverse:
                return np.flip(np_fn(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
            return np.asarray(np_fn(x, axis=axis, dtype=x.dtype))

    return Primitive(name, "reduction", shape_rule, impl, scan=True, **props)


cumsum_p = _scan("cumsum", np.cumsum, linear=True)
cumprod_p = _scan("cumprod", np.cumprod)
