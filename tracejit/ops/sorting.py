"""Sorting primitives: ``argsort`` (along one axis; ``stable`` or in NumPy's default order)
and ``searchsorted``.

Everything else is a composite (``numpy/sorting.py``): a sort is the gather
``take_along_axis(x, argsort(x))``, so its derivative is the permutation of the tangents with no
rule of its own; median, percentile, partition are built from the sort. Both primitives have
integer results (no derivative). The order is NumPy's: stable, NaN last, complex values by real
then imaginary part. On the llvm backend they run as NumPy fallbacks (no native lowering yet).
"""
from __future__ import annotations

import numpy as np

from .. import ad_util as ad
from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type
from . import elementwise as ew
from . import reductions as red
from . import structural as st


def _argsort_shape(x, *, axis, stable):
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"argsort: axis {axis} out of range for shape {x.shape}")
    return Type(dtypes.int64, x.shape)


def _argsort_impl(x, *, axis, stable):
    return np.argsort(np.asarray(x), axis=axis, kind="stable" if stable else None).astype(
        np.int64)


argsort_p = Primitive("argsort", "other", _argsort_shape, _argsort_impl)
ad.defnondiff(argsort_p, "argsort has integer results (sort itself is a gather: differentiable)")
argsort_p.batch = lambda args, dims, B, *, axis, stable: (
    argsort_p.bind(args[0], axis=axis + 1, stable=stable), 0)


def _searchsorted_shape(a, v, *, side):
    if a.ndim != 1:
        raise ShapeError(f"searchsorted: the sorted array must be 1-D, got shape {a.shape}")
    if a.dtype != v.dtype:
        raise DTypeError(f"searchsorted: operand dtypes {a.dtype} and {v.dtype} differ")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return Type(dtypes.int64, v.shape)


def _searchsorted_impl(a, v, *, side):
    return np.asarray(np.searchsorted(np.asarray(a), np.asarray(v), side=side), np.int64)


# searchsorted(a, v)[...] = the insertion point of v[...] in the sorted 1-D a (NumPy's order)
searchsorted_p = Primitive("searchsorted", "other", _searchsorted_shape, _searchsorted_impl)
ad.defnondiff(searchsorted_p, "searchsorted has integer results")


def _searchsorted_batch(args, dims, B, *, side):
    a, v = args
    if dims[0] is None:                   # one sorted array: every example's values at once
        return searchsorted_p.bind(a, v, side=side), dims[1]
    # a sorted array per example: count the elements before each value, in NumPy's order (NaN
    # after every number and equal to NaN); O(n) per value
    if dtypes.is_complex(a.dtype):
        raise NotImplementedError("vmap of searchsorted over complex sorted arrays")
    n, vshape = a.shape[-1], tuple(v.shape[1:]) if dims[1] is not None else tuple(v.shape)
    m = int(np.prod(vshape, dtype=np.int64))
    vb = v if dims[1] is not None else st.broadcast_in_dim_p.bind(
        v, shape=(B,) + vshape, dims=tuple(range(1, 1 + len(vshape))))
    shape = (B, m, n)
    vals = st.broadcast_in_dim_p.bind(st.reshape_p.bind(vb, shape=(B, m)), shape=shape,
                                      dims=(0, 1))
    rows = st.broadcast_in_dim_p.bind(a, shape=shape, dims=(0, 2))
    if side == "left":
        before = ew.lt_p.bind(rows, vals)
    else:
        before = ew.le_p.bind(rows, vals)
    if a.dtype.kind == "f":
        nan_v = ew.isnan_p.bind(vals)
        extra = nan_v if side == "right" else ew.and_p.bind(nan_v, ew.not_p.bind(
            ew.isnan_p.bind(rows)))
        before = ew.or_p.bind(before, extra)
    count = red.reduce_sum_p.bind(ew.convert_p.bind(before, dtype=dtypes.int64), axes=(2,))
    return st.reshape_p.bind(count, shape=(B,) + vshape), 0


searchsorted_p.batch = _searchsorted_batch
