"""Structural primitives: data movement with static shapes.

broadcast_in_dim, reshape, transpose, slice, concatenate, pad, rev, iota, take (gather along one
axis) and scatter (functional update along one axis). Negative gather indices wrap as in NumPy;
an out-of-range index raises IndexError (the interpreter through NumPy, compiled code through an
error code checked after the call).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type


def _bcast_shape(x, *, shape, dims):
    if len(dims) != x.ndim or any(not 0 <= d < len(shape) for d in dims) or \
            list(dims) != sorted(dims):
        raise ShapeError(f"broadcast_in_dim: bad dims {dims} for {x.shape} -> {shape}")
    for i, d in enumerate(dims):
        if x.shape[i] not in (1, shape[d]):
            raise ShapeError(f"cannot broadcast shape {x.shape} to {shape}")
    return Type(x.dtype, tuple(shape), x.weak)


def _bcast_impl(x, *, shape, dims):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape).copy()


broadcast_in_dim_p = Primitive("broadcast_in_dim", "structural", _bcast_shape, _bcast_impl,
                               linear=True)


def _reshape_shape(x, *, shape):
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ShapeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into {shape}")
    return Type(x.dtype, tuple(shape), x.weak)


reshape_p = Primitive("reshape", "structural", _reshape_shape,
                      lambda x, *, shape: np.reshape(np.asarray(x), shape).copy(), linear=True)


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: axes {perm} are not a permutation for shape {x.shape}")
    return Type(x.dtype, tuple(x.shape[p] for p in perm), x.weak)


transpose_p = Primitive("transpose", "structural", _transpose_shape,
                        lambda x, *, perm: np.transpose(np.asarray(x), perm).copy(), linear=True)


def _slice_shape(x, *, start, limit, step):
    if not (len(start) == len(limit) == len(step) == x.ndim):
        raise ShapeError(f"slice: {start} {limit} {step} do not match rank of {x.shape}")
    shape = []
    for s, l, st, d in zip(start, limit, step, x.shape):
        if st <= 0 or not (0 <= s <= d) or not (s <= l <= d):
            raise ShapeError(f"slice: bad bounds start={start} limit={limit} step={step} "
                             f"for shape {x.shape}")
        shape.append(max(0, -(-(l - s) // st)))
    return Type(x.dtype, tuple(shape), x.weak)


def _slice_impl(x, *, start, limit, step):
    return np.asarray(x)[tuple(slice(s, l, st) for s, l, st in zip(start, limit, step))].copy()


slice_p = Primitive("slice", "structural", _slice_shape, _slice_impl, linear=True)


def _concat_shape(*xs, axis):
    first = xs[0]
    for x in xs:
        if x.dtype != first.dtype:
            raise DTypeError(f"concatenate: dtypes {[str(t.dtype) for t in xs]} differ")
        if x.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, first.shape))
                                       if i != axis):
            raise ShapeError(f"concatenate along axis {axis}: shapes {[t.shape for t in xs]} "
                             f"differ outside that axis")
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return Type(first.dtype, tuple(shape), all(x.weak for x in xs))


concatenate_p = Primitive("concatenate", "structural", _concat_shape,
                          lambda *xs, axis: np.concatenate([np.asarray(x) for x in xs], axis),
                          linear=True)


def _pad_shape(x, value, *, lo, hi):
    if value.shape != () or value.dtype != x.dtype:
        raise ShapeError(f"pad: the padding value must be a {x.dtype} scalar, got {value}")
    if len(lo) != x.ndim or len(hi) != x.ndim or min((*lo, *hi), default=0) < 0:
        raise ShapeError(f"pad: bad widths lo={lo} hi={hi} for shape {x.shape}")
    return Type(x.dtype, tuple(d + a + b for d, a, b in zip(x.shape, lo, hi)), x.weak)


def _pad_impl(x, value, *, lo, hi):
    x = np.asarray(x)
    return np.pad(x, list(zip(lo, hi)), constant_values=value).astype(x.dtype)


pad_p = Primitive("pad", "structural", _pad_shape, _pad_impl, linear=True)


def _rev_shape(x, *, axes):
    if any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"rev: axes {axes} out of range for shape {x.shape}")
    return x


rev_p = Primitive("rev", "structural", _rev_shape,
                  lambda x, *, axes: np.flip(np.asarray(x), axes).copy(), linear=True)


def _iota_shape(*, dtype, shape, axis):
    return Type(dtypes.canonical(dtype), tuple(shape))


def _iota_impl(*, dtype, shape, axis):
    ar = np.arange(shape[axis], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[axis] = shape[axis]
    return np.broadcast_to(ar.reshape(expanded), shape).copy()


iota_p = Primitive("iota", "structural", _iota_shape, _iota_impl)


def _take_shape(x, idx, *, axis):
    if idx.dtype.kind != "i":
        raise DTypeError(f"take: indices must be integers, got {idx.dtype}")
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"take: axis {axis} out of range for shape {x.shape}")
    return Type(x.dtype, x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.weak)


def _take_impl(x, idx, *, axis):
    return np.take(np.asarray(x), np.asarray(idx), axis=axis)


# take(x, idx)[..., j..., ...] = x[..., idx[j...], ...]: gather along one axis
take_p = Primitive("take", "structural", _take_shape, _take_impl)

SCATTER_MODES = ("set", "add", "mul", "min", "max")


def _scatter_shape(x, idx, upd, *, axis, mode):
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter mode {mode!r}")
    expected = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
    if idx.dtype.kind != "i":
        raise DTypeError(f"scatter: indices must be integers, got {idx.dtype}")
    if upd.shape != expected or upd.dtype != x.dtype:
        raise ShapeError(f"scatter: updates {upd} do not match {expected} {x.dtype}")
    return x


def _scatter_impl(x, idx, upd, *, axis, mode):
    x = np.array(x, copy=True)
    idx = np.asarray(idx)
    upd = np.asarray(upd)
    n = x.shape[axis]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"index {int(idx.max()) if idx.max() >= n else int(idx.min())} is out "
                         f"of bounds for axis {axis} with size {n}")
    xm = np.moveaxis(x, axis, 0)
    um = np.moveaxis(upd.reshape(x.shape[:axis] + (idx.size,) + x.shape[axis + 1:]), axis, 0)
    flat = idx.reshape(-1)
    if mode == "set":
        xm[flat] = um
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
        ufunc.at(xm, flat, um)
    return x


# scatter(x, idx, upd): x with x[..., idx[j], ...] (mode)= upd[..., j, ...]; repeats accumulate
scatter_p = Primitive("scatter", "structural", _scatter_shape, _scatter_impl)
