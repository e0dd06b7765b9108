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
from .. import ad_util as ad


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


def _bcast_transpose(ct, x, *, shape, dims):
    """Sum over the new axes and over the size-1 axes that were stretched."""
    xs = x.ty.shape
    summed = [d for d in range(len(shape)) if d not in dims] + \
        [dims[i] for i in range(len(xs)) if xs[i] == 1 and shape[dims[i]] != 1]
    return [ad.reshape(ad.reduce_sum(ct, summed), xs)]


ad.deflinear(broadcast_in_dim_p, _bcast_transpose)


def _reshape_shape(x, *, shape):
    if int(np.prod(shape, dtype=np.int64)) != x.size:
        raise ShapeError(f"cannot reshape array of shape {x.shape} (size {x.size}) into {shape}")
    return Type(x.dtype, tuple(shape), x.weak)


reshape_p = Primitive("reshape", "structural", _reshape_shape,
                      lambda x, *, shape: np.reshape(np.asarray(x), shape).copy(), linear=True)
ad.deflinear(reshape_p, lambda ct, x, *, shape: [ad.reshape(ct, x.ty.shape)])


def _transpose_shape(x, *, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ShapeError(f"transpose: axes {perm} are not a permutation for shape {x.shape}")
    return Type(x.dtype, tuple(x.shape[p] for p in perm), x.weak)


transpose_p = Primitive("transpose", "structural", _transpose_shape,
                        lambda x, *, perm: np.transpose(np.asarray(x), perm).copy(), linear=True)
ad.deflinear(transpose_p, lambda ct, x, *, perm: [ad.transpose(ct, np.argsort(perm))])


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


def _slice_transpose(ct, x, *, start, limit, step):
    """Zeros with ``ct`` placed at the sliced positions: per strided axis, interleave zeros
    (expand, pad, reshape); then pad to the operand's shape."""
    full = x.ty.shape
    zero = ad.lit(0, x.ty.dtype)
    lo, hi = list(start), []
    for a, (s, st, n) in enumerate(zip(start, step, full)):
        m = ad.ty(ct).shape[a]
        if st > 1 and m > 0:
            shp = ad.ty(ct).shape
            ex = ad.reshape(ct, shp[:a + 1] + (1,) + shp[a + 1:])
            nd = len(shp) + 1
            pads = [0] * nd
            pads[a + 1] = st - 1
            ex = pad_p.bind(ex, zero, lo=(0,) * nd, hi=tuple(pads))
            ct = ad.reshape(ex, shp[:a] + (m * st,) + shp[a + 1:])
            keep = min(m * st, n - s)
            if keep < m * st:
                shp = ad.ty(ct).shape
                ct = slice_p.bind(ct, start=(0,) * len(shp),
                                  limit=shp[:a] + (keep,) + shp[a + 1:], step=(1,) * len(shp))
        hi.append(n - s - ad.ty(ct).shape[a])
    return [pad_p.bind(ct, zero, lo=tuple(lo), hi=tuple(hi))]


ad.deflinear(slice_p, _slice_transpose)


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


def _concat_transpose(ct, *xs, axis):
    outs, offset = [], 0
    shp = ad.ty(ct).shape
    for x in xs:
        size = ad.ty(x).shape[axis]
        if ad.is_undefined(x):
            start = [0] * len(shp)
            start[axis] = offset
            limit = list(shp)
            limit[axis] = offset + size
            outs.append(slice_p.bind(ct, start=tuple(start), limit=tuple(limit),
                                     step=(1,) * len(shp)))
        else:
            outs.append(None)
        offset += size
    return outs


ad.deflinear(concatenate_p, _concat_transpose)


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


def _pad_transpose(ct, x, value, *, lo, hi):
    shp = ad.ty(ct).shape
    inner = slice_p.bind(ct, start=tuple(lo), limit=tuple(d - h for d, h in zip(shp, hi)),
                         step=(1,) * len(shp))
    ct_value = None
    if ad.is_undefined(value):
        every = tuple(range(len(shp)))
        ct_value = ad.sub(ad.reduce_sum(ct, every), ad.reduce_sum(inner, every))
    return [inner if ad.is_undefined(x) else None, ct_value]


ad.deflinear(pad_p, _pad_transpose)


def _rev_shape(x, *, axes):
    if any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"rev: axes {axes} out of range for shape {x.shape}")
    return x


rev_p = Primitive("rev", "structural", _rev_shape,
                  lambda x, *, axes: np.flip(np.asarray(x), axes).copy(), linear=True)
ad.deflinear(rev_p, lambda ct, x, *, axes: [rev_p.bind(ct, axes=axes)])


def _iota_shape(*, dtype, shape, axis):
    return Type(dtypes.canonical(dtype), tuple(shape))


def _iota_impl(*, dtype, shape, axis):
    ar = np.arange(shape[axis], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[axis] = shape[axis]
    return np.broadcast_to(ar.reshape(expanded), shape).copy()


iota_p = Primitive("iota", "structural", _iota_shape, _iota_impl)
ad.defnondiff(iota_p, "no operands (an index constant)")


def _take_shape(x, idx, *, axis):
    if idx.dtype.kind != "i":
        raise DTypeError(f"take: indices must be integers, got {idx.dtype}")
    if not 0 <= axis < x.ndim:
        raise ShapeError(f"take: axis {axis} out of range for shape {x.shape}")
    return Type(x.dtype, x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.weak)


def _take_impl(x, idx, *, axis):
    x, idx = np.asarray(x), np.asarray(idx)
    n = x.shape[axis]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = int(idx.max()) if idx.max() >= n else int(idx.min())
        what = "an index" if bad == -2**62 else f"index {bad}"   # the NumPy layer's marker
        raise IndexError(f"{what} is out of bounds for axis {axis} with size {n} (a traced "
                         f"index checked when the function ran)")
    return np.take(x, idx, axis=axis)


# take(x, idx)[..., j..., ...] = x[..., idx[j...], ...]: gather along one axis
take_p = Primitive("take", "structural", _take_shape, _take_impl)
ad.defjvp(take_p, lambda g, ans, x, idx, *, axis: take_p.bind(g, idx, axis=axis), None)
take_p.transpose = lambda ct, x, idx, *, axis: [   # scatter-add: repeated indices accumulate
    scatter_p.bind(ad.zeros(x.ty), idx, ct, axis=axis, mode="add"), None]

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


def _scatter_jvp(primals, tangents, *, axis, mode):
    """set/add are linear in (x, updates) jointly; mul/min/max are not differentiable yet."""
    x, idx, upd = primals
    tx, _, tu = tangents
    ans = scatter_p.bind(x, idx, upd, axis=axis, mode=mode)
    if ad.is_zero(tx) and ad.is_zero(tu):
        return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
    if mode not in ("set", "add"):
        raise NotImplementedError(f"differentiating scatter with mode={mode!r} (x.at[idx].{mode}) "
                                  f"is not supported yet; use .set/.add or where()")
    t = scatter_p.bind(ad.instantiate(tx, ad.tangent_type(ad.ty(x))), idx,
                       ad.instantiate(tu, ad.tangent_type(ad.ty(upd))), axis=axis, mode=mode)
    return ans, t


def _scatter_transpose(ct, x, idx, upd, *, axis, mode):
    """add: x gets ct, updates gather it. set: overwritten slots of x get 0 and, with repeated
    indices, only the update that was written last (the winner) gets its slot's cotangent."""
    assert not ad.is_undefined(idx)
    ut = upd.ty if ad.is_undefined(upd) else ad.ty(upd)
    ct_x = ct_u = None
    if mode == "add":
        ct_x = ct if ad.is_undefined(x) else None
        if ad.is_undefined(upd):
            ct_u = take_p.bind(ct, idx, axis=axis)
        return [ct_x, None, ct_u]
    if ad.is_undefined(x):
        ct_x = scatter_p.bind(ct, idx, ad.zeros(ut), axis=axis, mode="set")
    if ad.is_undefined(upd):
        n = ad.ty(ct).shape[axis]
        ishape = ad.ty(idx).shape
        order = np.arange(int(np.prod(ishape, dtype=np.int64)), dtype=np.int64).reshape(ishape)
        winner = scatter_p.bind(np.full((n,), -1, np.int64), idx, order, axis=0, mode="set")
        won = ad.eq(take_p.bind(winner, idx, axis=0), order)
        won = ad.broadcast_in_dim(won, ut.shape, tuple(range(axis, axis + len(ishape))))
        ct_u = ad.select(won, take_p.bind(ct, idx, axis=axis), 0)
    return [ct_x, None, ct_u]


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
