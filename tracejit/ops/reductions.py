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
from .. import ad_util as ad
from ..core import REGISTRY


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


reduce_sum_p = _reduce("reduce_sum", np.sum, identity=0, kinds="biufc", linear=True)


def _kept(ndim, axes):
    return tuple(a for a in range(ndim) if a not in axes)


ad.deflinear(reduce_sum_p, lambda ct, x, *, axes: [
    ad.broadcast_in_dim(ct, x.ty.shape, _kept(x.ty.ndim, axes))])
reduce_prod_p = _reduce("reduce_prod", np.prod, identity=1, kinds="iufc")


def _reduce_prod_jvp(primals, tangents, *, axes):
    """d prod = sum_j t_j * prod_{k != j} x_k, with the exclusive products from a left and a
    right cumprod (exact when some x_k are zero; no division)."""
    (x,), (t,) = primals, tangents
    ans = reduce_prod_p.bind(x, axes=axes)
    xt = ad.ty(x)
    n = int(np.prod([xt.shape[a] for a in axes], dtype=np.int64))
    if ad.is_zero(t) or n == 0:
        return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
    kept = _kept(xt.ndim, axes)
    flat = tuple(xt.shape[a] for a in kept) + (n,)

    def lay_out(v):
        return ad.reshape(ad.transpose(v, kept + tuple(axes)), flat)

    xf, last = lay_out(x), len(flat) - 1
    one = ad.lit(1, xt.dtype)
    shift = dict(start=(0,) * len(flat), limit=flat[:-1] + (n - 1,), step=(1,) * len(flat))
    lo, hi = (0,) * last, (0,) * last
    left = REGISTRY["pad"].bind(REGISTRY["slice"].bind(
        cumprod_p.bind(xf, axis=last, reverse=False), **shift), one, lo=lo + (1,), hi=hi + (0,))
    right = REGISTRY["pad"].bind(REGISTRY["slice"].bind(
        cumprod_p.bind(xf, axis=last, reverse=True), start=(0,) * last + (1,), limit=flat,
        step=(1,) * len(flat)), one, lo=lo + (0,), hi=hi + (1,))
    others = ad.mul(left, right)
    return ans, ad.reduce_sum(ad.mul(lay_out(t), others), (last,))


reduce_prod_p.jvp = _reduce_prod_jvp
reduce_max_p = _reduce("reduce_max", np.max, identity=None, kinds="biuf")
reduce_min_p = _reduce("reduce_min", np.min, identity=None, kinds="biuf")


def _chooser_jvp(prim):
    """reduce_max/min: the tangent is the mean of the tangents of all tied extreme elements, so
    the cotangent is split equally among tied maxima (as JAX). NaN is an extreme like NumPy."""
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if ad.is_zero(t):
            return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
        xt = ad.ty(x)
        loc = ad.eq(x, ad.broadcast_in_dim(ans, xt.shape, _kept(xt.ndim, axes)))
        counts = ad.reduce_sum(ad.convert(loc, xt.dtype), axes)
        return ans, ad.div(ad.reduce_sum(ad.select(loc, t, 0), axes), counts)
    prim.jvp = rule


_chooser_jvp(reduce_max_p)
_chooser_jvp(reduce_min_p)


def _arg_shape(name):
    def shape_rule(x, *, axis):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {x.shape}")
        if x.shape[axis] == 0:
            raise ShapeError(f"{name}: attempt to get {name} of an empty sequence "
                             f"(shape {x.shape}, axis {axis})")
        if x.dtype.kind not in "biuf":
            raise DTypeError(f"{name} is not defined for dtype {x.dtype}")
        return Type(dtypes.int64, tuple(d for i, d in enumerate(x.shape) if i != axis))
    return shape_rule


argmax_p = Primitive("argmax", "reduction", _arg_shape("argmax"),
                     lambda x, *, axis: np.asarray(np.argmax(x, axis=axis), dtype=np.int64))
argmin_p = Primitive("argmin", "reduction", _arg_shape("argmin"),
                     lambda x, *, axis: np.asarray(np.argmin(x, axis=axis), dtype=np.int64))
ad.defnondiff(argmax_p, "integer result")
ad.defnondiff(argmin_p, "integer result")


def _scan(name, np_fn, **props):
    def shape_rule(x, *, axis, reverse):
        if not 0 <= axis < x.ndim:
            raise ShapeError(f"{name}: axis {axis} out of range for shape {x.shape}")
        if x.dtype.kind not in "iufc":
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
ad.deflinear(cumsum_p, lambda ct, x, *, axis, reverse: [
    cumsum_p.bind(ct, axis=axis, reverse=not reverse)])
cumprod_p = _scan("cumprod", np.cumprod)


_CUMPROD_DENSE = 16       # axis length up to which the dense (fused, O(n²)) JVP is used


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    """dy_i = sum_{j <= i} t_j * prod_{k <= i, k != j} x_k, exact with zeros (no division).
    Short axes: a cumprod of x with x_j replaced by 1, for every j (O(n²), one fused loop);
    longer ones: the product rule's recurrence dy_i = x_i dy_{i-1} + y_{i-1} t_i as an
    associative scan (O(n log n); it was O(n²) time and memory for every length)."""
    (x,), (t,) = primals, tangents
    ans = cumprod_p.bind(x, axis=axis, reverse=reverse)
    if ad.is_zero(t):
        return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
    xt = ad.ty(x)
    n, nd = xt.shape[axis], xt.ndim
    if n > _CUMPROD_DENSE:
        return ans, _cumprod_jvp_doubling(x, t, ans, axis, reverse)
    big = (n,) + xt.shape
    j = np.arange(n).reshape((n,) + (1,) * nd)
    k = np.arange(n).reshape((1,) * (axis + 1) + (n,) + (1,) * (nd - axis - 1))
    eye = np.broadcast_to(j == k, big)
    before = np.broadcast_to(j >= k if reverse else j <= k, big)      # j contributes to k
    dims = tuple(range(1, nd + 1))
    z = cumprod_p.bind(ad.select(eye, 1, ad.broadcast_in_dim(x, big, dims)), axis=axis + 1,
                       reverse=reverse)
    t_j = ad.transpose(t, (axis,) + tuple(i for i in range(nd) if i != axis))   # t_j along 0
    t_j = ad.broadcast_in_dim(t_j, big, (0,) + tuple(i + 1 for i in range(nd) if i != axis))
    terms = ad.select(before, ad.mul(t_j, z), 0)
    return ans, ad.reduce_sum(terms, (0,))


def _cumprod_jvp_doubling(x, t, y, axis, reverse):
    """The recurrence dy_i = x_i dy_{i-1} + y_{i-1} t_i along ``axis`` (from the end for
    ``reverse``) as an associative scan, JAX's form of cumprod's derivative: element i is the
    map d -> a_i d + b_i, and ceil(log2 n) rounds compose each with the one s places before it
    (s = 1, 2, 4, ...), (a, b)_i <- (a_{i-s} a_i, a_i b_{i-s} + b_i). O(n log n) elementwise
    work in log n vector steps, exact with zeros (no division), linear in t, so its transpose
    is the same steps reversed; a sequential scan here ran its n steps one by one in the
    interpreter (72 s for grad over 10^5 elements, fuzz 12004 #410)."""
    n = ad.ty(x).shape[axis]
    dtype = ad.ty(x).dtype
    a = x
    b = ad.mul(_shifted(y, axis, 1, ad.lit(1, dtype), reverse), t)
    s = 1
    while s < n:
        b = ad.add(ad.mul(a, _shifted(b, axis, s, ad.lit(0, dtype), reverse)), b)
        if 2 * s < n:
            a = ad.mul(a, _shifted(a, axis, s, ad.lit(1, dtype), reverse))
        s *= 2
    return b


def _shifted(v, axis, s, fill, reverse):
    """``v`` moved ``s`` places along ``axis`` (towards the end; the start for ``reverse``),
    ``fill`` in the places it leaves."""
    shape = ad.ty(v).shape
    nd = len(shape)
    start, limit = [0] * nd, list(shape)
    if reverse:
        start[axis] = s
    else:
        limit[axis] -= s
    part = REGISTRY["slice"].bind(v, start=tuple(start), limit=tuple(limit), step=(1,) * nd)
    lo, hi = [0] * nd, [0] * nd
    (hi if reverse else lo)[axis] = s
    return REGISTRY["pad"].bind(part, fill, lo=tuple(lo), hi=tuple(hi))


cumprod_p.jvp = _cumprod_jvp
