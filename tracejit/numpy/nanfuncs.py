"""NumPy's NaN-ignoring reductions on tracers: nanmax, nanmin, nanargmax, nanargmin, nanprod,
nanmean, nanvar, nanstd, nancumsum, nancumprod, nanmedian, nanquantile and nanpercentile
(method 'linear'; nansum is in reductions.py).

Each follows NumPy's ``numpy/lib/_nanfunctions_impl.py`` step for step: NaNs are replaced by the
operation's neutral value (or -inf/+inf for the extrema) and counted out, so values and dtypes
are NumPy's, float32 means divided in float64 and cast back as NumPy's ``_divide_by_count``
does. An all-NaN slice gives NaN where NumPy gives NaN (with its RuntimeWarning, which tracejit
does not emit) and raises ``ValueError: All-NaN slice encountered`` at run time where NumPy
raises (nanargmax/nanargmin). Integer and bool arrays hold no NaN: NumPy's plain reductions.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import type_of
from ..errors import UnsupportedError
from ..ops.elementwise import check
from ._base import as_traceable, implements

__all__ = ["nanmax", "nanmin", "nanargmax", "nanargmin", "nanprod", "nanmean", "nanvar",
           "nanstd", "nancumsum", "nancumprod", "nanmedian", "nanquantile", "nanpercentile"]


def _inexact(a) -> bool:
    return type_of(a).dtype.kind in "fc"


def _replaced(a, value):
    """``a`` with its NaNs replaced by ``value``, and the NaN mask (None for exact dtypes)."""
    from .logic import where
    from .math import isnan
    if not _inexact(a):
        return a, None
    mask = isnan(a)
    return where(mask, value, a), mask


def _no_out(out, name):
    if out is not None:
        raise UnsupportedError(f"np.{name}(..., out=) on tracers; write out[...] = np.{name}(a)")


def _extremum(a, axis, keepdims, reduce, fill, name):
    from .logic import where
    from .reductions import all as all_
    a = as_traceable(a)
    filled, mask = _replaced(a, fill)
    out = reduce(filled, axis=axis, keepdims=keepdims)
    if mask is None:
        return out
    return where(all_(mask, axis=axis, keepdims=keepdims), np.nan, out)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    """Maximum ignoring NaNs (NaN for an all-NaN slice)."""
    from .reductions import max as max_
    _no_out(out, "nanmax")
    return _extremum(a, axis, keepdims, max_, -np.inf, "nanmax")


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    """Minimum ignoring NaNs (NaN for an all-NaN slice)."""
    from .reductions import min as min_
    _no_out(out, "nanmin")
    return _extremum(a, axis, keepdims, min_, np.inf, "nanmin")


def _arg(a, axis, keepdims, reduce, fill):
    from .reductions import all as all_, any as any_
    a = as_traceable(a)
    filled, mask = _replaced(a, fill)
    if mask is not None:
        filled = check(any_(all_(mask, axis=axis)), filled, error="all_nan_slice")
    return reduce(filled, axis=axis, keepdims=keepdims)


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    """Index of the maximum ignoring NaNs; ValueError for an all-NaN slice."""
    from .reductions import argmax
    _no_out(out, "nanargmax")
    return _arg(a, axis, keepdims is True, argmax, -np.inf)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    """Index of the minimum ignoring NaNs; ValueError for an all-NaN slice."""
    from .reductions import argmin
    _no_out(out, "nanargmin")
    return _arg(a, axis, keepdims is True, argmin, np.inf)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
            where=np._NoValue):
    """Product treating NaNs as one."""
    from .reductions import prod
    _no_out(out, "nanprod")
    return prod(_replaced(as_traceable(a), 1)[0], axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum treating NaNs as zero."""
    from .reductions import cumsum
    _no_out(out, "nancumsum")
    return cumsum(_replaced(as_traceable(a), 0)[0], axis=axis, dtype=dtype)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product treating NaNs as one."""
    from .reductions import cumprod
    _no_out(out, "nancumprod")
    return cumprod(_replaced(as_traceable(a), 1)[0], axis=axis, dtype=dtype)


def _divide_by_count(total, count):
    """NumPy's ``_divide_by_count``: the division in the promoted dtype, cast back to the
    total's dtype (float32 totals are divided in float64)."""
    from ._base import convert
    return convert(total / count, type_of(total).dtype)


def _count(mask, axis, keepdims):
    from .math import logical_not
    from .reductions import sum as sum_
    return sum_(logical_not(mask), axis=axis, dtype=np.intp, keepdims=keepdims)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
    """Mean of the non-NaN values (NaN for an all-NaN slice)."""
    from .reductions import mean, sum as sum_
    _no_out(out, "nanmean")
    a = as_traceable(a)
    filled, mask = _replaced(a, 0)
    if mask is None:
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    total = sum_(filled, axis=axis, dtype=dtype, keepdims=keepdims)
    return _divide_by_count(total, _count(mask, axis, keepdims))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    """Variance of the non-NaN values (NaN where fewer than ``ddof`` + 1 remain)."""
    from .logic import where as select
    from .math import conj, multiply, subtract
    from .reductions import sum as sum_, var
    _no_out(out, "nanvar")
    if correction is not np._NoValue:
        ddof = correction
    a = as_traceable(a)
    filled, mask = _replaced(a, 0)
    if mask is None:
        return var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    cnt = _count(mask, axis, True)
    avg = _divide_by_count(sum_(filled, axis=axis, dtype=dtype, keepdims=True), cnt)
    dev = select(mask, 0, subtract(filled, avg).astype(type_of(filled).dtype))
    sqr = multiply(dev, conj(dev)).real if dtypes.is_complex(type_of(dev).dtype) else \
        multiply(dev, dev)
    total = sum_(sqr, axis=axis, dtype=dtype, keepdims=keepdims)
    dof = (cnt if keepdims else _count(mask, axis, False)) - ddof
    return select(dof <= 0, np.nan, _divide_by_count(total, dof))


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    """Standard deviation of the non-NaN values."""
    from .math import sqrt
    _no_out(out, "nanstd")
    return sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                       correction=correction))


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    """Median of the non-NaN values of each slice (NaN for an all-NaN slice)."""
    from .indexing import take_along_axis
    from .logic import where
    from .math import isnan, logical_not
    from .reductions import sum as sum_
    from .shape import reshape
    from .sorting import _reduce_axes, median, sort
    _no_out(out, "nanmedian")
    keepdims = keepdims is True
    if not _inexact(as_traceable(a)):
        return median(a, axis=axis, keepdims=keepdims)
    part, keep_shape = _reduce_axes(a, axis, keepdims, "nanmedian")
    part = sort(part, -1)                                  # NaNs last
    k = sum_(logical_not(isnan(part)), axis=-1, keepdims=True)
    hi = take_along_axis(part, where(k > 0, k // 2, 0), -1)[..., 0]
    lo = take_along_axis(part, where(k > 1, (k - 1) // 2, 0), -1)[..., 0]
    n = k[..., 0]
    result = where(n % 2 == 1, hi, (lo + hi) / 2)
    result = where(n == 0, np.nan, result)
    return reshape(result, keep_shape) if keepdims else result


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None, interpolation=None):
    """NumPy's nanquantile (method 'linear') at concrete quantiles ``q`` in [0, 1]."""
    return _nan_q(a, q, axis, out, method, keepdims, weights, interpolation, 1, "nanquantile")


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None, interpolation=None):
    """NumPy's nanpercentile (method 'linear') at concrete percentiles ``q`` in [0, 100]."""
    return _nan_q(a, q, axis, out, method, keepdims, weights, interpolation, 100,
                  "nanpercentile")


def _nan_q(a, q, axis, out, method, keepdims, weights, interpolation, scale, name):
    from .sorting import _concrete_q, _quantile
    _no_out(out, name)
    if weights is not None or interpolation is not None:
        raise UnsupportedError(f"np.{name}(..., weights=/interpolation=) on tracers")
    keepdims = keepdims is True
    weak_q = type(q) in (int, float)
    q = np.asanyarray(np.true_divide(_concrete_q(q, name), scale) if scale != 1 else
                      _concrete_q(q, name))
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError(f"{'Percentiles' if scale == 100 else 'Quantiles'} must be in the "
                         f"range [0, {scale}]")
    a = as_traceable(a)
    if type_of(a).dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    if not _inexact(a):                            # no NaNs: NumPy's quantile
        return _quantile(a, q, axis, method, keepdims, weak_q, name)
    if method != "linear":
        raise UnsupportedError(f"np.{name}: only method='linear' is supported on tracers (the "
                               f"count of non-NaN values differs per slice)")
    if not weak_q and type_of(a).dtype != np.float64:
        # NumPy's dtype then depends on the data (float32 where the first slice is all NaN,
        # float64 elsewhere) and its values mix both precisions
        raise UnsupportedError(f"np.{name} of a {type_of(a).dtype} array at an array of "
                               f"quantiles on tracers: pass a.astype(np.float64) or one "
                               f"Python-number quantile per call")
    return _nan_linear(a, q, axis, keepdims, weak_q, name)


def _nan_linear(a, q, axis, keepdims, weak_q, name):
    """NumPy's linear quantile of each slice's non-NaN values (sorted first: NaNs last), with
    the count n per slice traced: virtual index (n - 1) q, neighbours, ``_lerp``; a Python
    q interpolates in the data's dtype (weak), an array q in float64."""
    from .indexing import take_along_axis
    from .logic import where
    from .math import floor, isnan, logical_not, maximum
    from .reductions import sum as sum_
    from .shape import reshape, stack
    from .sorting import _reduce_axes, sort
    part, keep_shape = _reduce_axes(a, axis, keepdims, name)
    part = sort(part, -1)
    dt = type_of(part).dtype
    out_dt = dt if weak_q else np.result_type(dt, q.dtype, np.float64)
    n = sum_(logical_not(isnan(part)), axis=-1, keepdims=True)
    last = maximum(n - 1, 0)
    nm1 = (n - 1).astype(np.float64)
    results = []
    for qv in q.ravel():
        if q.dtype.kind in "biu":                  # integer virtual indices: read directly
            r = take_along_axis(part, where(qv == 0, 0, last), -1).astype(out_dt)
        else:
            virtual = nm1 * float(qv)
            prev = floor(virtual)
            above, below = virtual >= nm1, virtual < 0
            lo_i = where(above, last, where(below, 0, prev.astype(np.int64)))
            hi_i = where(above, last, where(below, 0, lo_i + 1))
            gamma = virtual - where(above, -1.0, where(below, 0.0, prev))
            lo = take_along_axis(part, lo_i, -1).astype(out_dt)
            hi = take_along_axis(part, hi_i, -1).astype(out_dt)
            diff = hi - lo
            # NumPy's _lerp; a weak q's gamma and 1 - gamma are rounded to the data's dtype
            r = where(gamma >= 0.5, hi - diff * (1.0 - gamma).astype(out_dt),
                      lo + diff * gamma.astype(out_dt))
        results.append(where(n == 0, np.nan, r)[..., 0].astype(out_dt))
    result = stack(results).reshape(q.shape + type_of(results[0]).shape) if q.ndim else \
        results[0]
    if keepdims:
        result = reshape(result, q.shape + keep_shape)
    return result
