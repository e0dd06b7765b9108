"""Sorting and order statistics on tracers: sort, argsort, partition, argpartition,
searchsorted, lexsort, median, quantile and percentile (``ndarray.sort``/``argsort`` too),
JAX's ``top_k`` and ``unique`` with JAX's static ``size=``.

A sort is the gather ``take_along_axis(a, argsort(a))`` (``ops/sorting.py``), so it is
differentiable (the tangents are permuted) and batched like any gather. Order statistics follow
NumPy's own algorithms step for step, with the quantiles ``q`` concrete: the virtual indices,
neighbours and interpolation weights are computed with NumPy's formulas on concrete values, then
the sorted array is gathered and interpolated with NumPy's ``_lerp`` (so results are NumPy's to
the bit, dtypes included: a Python-scalar ``q`` keeps a float32 array's dtype, an array ``q``
promotes to float64). A slice holding a NaN gives NaN, as NumPy's (NaN sorts last).
``partition``/``argpartition`` return the full sort, which meets NumPy's contract (the order
inside each side of the kth element is unspecified).

Which argsort: a default-kind ``argsort`` keeps NumPy's own order of ties (its introsort's), so
it runs NumPy's argsort on every backend. Everything else sorts stably, which the llvm backend
does natively (``backend/emit/sortlib.py``): ``sort`` (equal values are identical, except that
``-0.0`` and ``0.0``, and NaNs of different payloads, keep their input order, where NumPy's
SIMD value sort places them its own way, which NumPy's argsort does not reproduce either),
partition and argpartition (any order of ties meets NumPy's contract), the order statistics,
lexsort and top_k.
"""
from __future__ import annotations

import operator

import numpy as np

from ..core import Tracer, static_value, type_of
from ..errors import ConcretizationError, UnsupportedError
from ..ops.sorting import argsort_p, searchsorted_p
from ._base import as_traceable, implements, normalize_axis, result_type

__all__ = ["sort", "argsort", "partition", "argpartition", "searchsorted", "median",
           "quantile", "percentile", "lexsort", "top_k", "unique"]


def _axis_and_array(a, axis, name):
    """``(a, axis)`` with ``axis=None`` meaning the flattened array, as NumPy."""
    from .mutation import ravel
    a = as_traceable(a)
    if axis is None or type_of(a).ndim == 0:
        return ravel(a), 0
    return a, normalize_axis(axis, type_of(a).ndim, name)


def _no_order(order, name):
    if order is not None:
        raise UnsupportedError(f"{name}(order=...): structured arrays are not supported")


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """Indices that sort ``a`` along ``axis`` (NaN last), as int64; ties in NumPy's order."""
    _no_order(order, "argsort")
    a, axis = _axis_and_array(a, axis, "argsort")
    return argsort_p.bind(a, axis=axis, stable=_stable(kind, stable))


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``a`` sorted along ``axis``, stably (a gather: differentiable)."""
    _no_order(order, "sort")
    return _sorted(a, axis)


def _sorted(a, axis):
    """``a`` sorted stably along ``axis`` (module docstring: why stably)."""
    from .indexing import take_along_axis
    a, axis = _axis_and_array(a, axis, "sort")
    return take_along_axis(a, argsort_p.bind(a, axis=axis, stable=True), axis)


def _stable(kind, stable) -> bool:
    """Whether ties keep their order: NumPy's default sort kind makes no promise (its result is
    NumPy's own, on every backend); kind='stable'/'mergesort' or stable=True does."""
    return bool(stable) or kind in ("stable", "mergesort")


def _kth(a, kth, axis, name):
    n = type_of(a).shape[axis]
    for k in np.ravel(kth):
        k = operator.index(k)
        if not -n <= k < n:
            raise ValueError(f"kth(={k}) out of bounds ({n})")


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's partition: here the full sort (every kth element in its sorted place)."""
    _no_order(order, "partition")
    b, ax = _axis_and_array(a, axis, "partition")
    _kth(b, kth, ax, "partition")
    return _sorted(b, ax)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's argpartition: here the stable argsort."""
    _no_order(order, "argpartition")
    b, ax = _axis_and_array(a, axis, "argpartition")
    _kth(b, kth, ax, "argpartition")
    return argsort_p.bind(b, axis=ax, stable=True)


def sort_inplace(self, axis=-1, kind=None, order=None, *, stable=None):
    """``x.sort()``: sorts ``x`` in place (a write, seen by its views and base)."""
    from .mutation import assign, value
    assign(self, sort(value(self), axis, kind, order))


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """Insertion points of ``v`` in the sorted 1-D ``a`` (NumPy's order: NaN last)."""
    from ._base import convert
    from .indexing import take
    a = as_traceable(a)
    if sorter is not None:
        a = take(a, sorter)
    dt, _ = result_type(a, v)
    return searchsorted_p.bind(convert(a, dt), convert(as_traceable(v), dt), side=side)


def _reduce_axes(a, axis, keepdims, name):
    """NumPy's ``_ureduce``: ``a`` with the reduced axes moved last and merged, and the shape a
    keepdims result takes."""
    from .shape import reshape, transpose
    a = as_traceable(a)
    t = type_of(a)
    axes = tuple(range(t.ndim)) if axis is None else \
        tuple(sorted(normalize_axis(x, t.ndim, name) for x in np.atleast_1d(axis)))
    kept = [d for d in range(t.ndim) if d not in axes]
    merged = reshape(transpose(a, kept + list(axes)),
                     tuple(t.shape[d] for d in kept) + (-1,))
    keep_shape = tuple(1 if d in axes else t.shape[d] for d in range(t.ndim))
    return merged, keep_shape


def _nan_fixed(part, result):
    """NumPy's ``_median_nancheck``: where a slice's last sorted value is NaN, that NaN."""
    from .logic import where
    from .math import isnan
    if type_of(part).dtype.kind not in "fc" or type_of(part).shape[-1] == 0:
        return result
    last = part[..., -1]
    return where(isnan(last), last, result)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's median: the mean of the middle one or two sorted values (NaN if any is NaN)."""
    from .reductions import mean
    from .shape import reshape
    if out is not None:
        raise UnsupportedError("np.median(..., out=) on tracers; write out[...] = np.median(a)")
    part, keep_shape = _reduce_axes(a, axis, keepdims, "median")
    part = _sorted(part, -1)
    n = type_of(part).shape[-1]
    lo = n // 2 if n % 2 else n // 2 - 1
    result = _nan_fixed(part, mean(part[..., lo:n // 2 + 1], axis=-1))
    return reshape(result, keep_shape) if keepdims else result


_CONTINUOUS = {"linear": None, "interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5),
               "weibull": (0, 0), "median_unbiased": (1 / 3.0, 1 / 3.0),
               "normal_unbiased": (3 / 8.0, 3 / 8.0), "averaged_inverted_cdf": "averaged",
               "midpoint": "midpoint"}
_DISCRETE = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}


def _virtual_index(n, q, method):
    """NumPy's virtual indices of the quantiles ``q`` (concrete) among ``n`` sorted values."""
    if method in _DISCRETE:
        return _DISCRETE[method]((n - 1) * q).astype(np.intp)
    how = _CONTINUOUS[method]
    if how is None:
        return (n - 1) * q
    if how == "averaged":
        return (n * q) - 1
    if how == "midpoint":
        return 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    alpha, beta = how
    return n * q + (alpha + q * (1 - alpha - beta)) - 1


def _neighbours(virtual, n, inexact):
    """NumPy's ``_get_indexes``: the sorted positions around each virtual index."""
    prev = np.array(np.floor(virtual))
    nxt = np.array(prev + 1)
    above, below = virtual >= n - 1, virtual < 0
    prev[above], nxt[above] = -1, -1
    prev[below], nxt[below] = 0, 0
    if inexact:
        nans = np.isnan(virtual)
        prev[nans], nxt[nans] = -1, -1
    return prev.astype(np.intp), nxt.astype(np.intp)


def _lerp(a, b, t):
    """NumPy's ``_lerp``: ``a + (b - a) t``, computed from ``b``'s side where ``t >= 0.5``."""
    from .logic import where
    diff = b - a
    low = a + diff * t
    high = b - diff * (1 - t)
    return where(np.asarray(t) >= 0.5, high, low) if not isinstance(t, float) else \
        (high if t >= 0.5 else low)


def _quantile(a, q, axis, method, keepdims, weak_q, name):
    from .indexing import take
    from .logic import where
    from .math import isnan
    from .shape import moveaxis, reshape
    if method not in _CONTINUOUS and method not in _DISCRETE:
        known = sorted([*_CONTINUOUS, *_DISCRETE])
        raise (UnsupportedError if method in ("inverted_cdf", "closest_observation")
               else ValueError)(f"{name}: method {method!r} is not supported on tracers "
                                f"(supported: {known})")
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    part, keep_shape = _reduce_axes(a, axis, keepdims, name)
    if type_of(part).dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    part = _sorted(part, -1)
    n = type_of(part).shape[-1]
    inexact = type_of(part).dtype.kind == "f"
    virtual = np.asanyarray(_virtual_index(n, q, method))
    # NumPy reads the sorted values directly for the discrete methods and for 'linear' at
    # integer virtual indices (other methods interpolate even then)
    if method in _DISCRETE or method == "linear" and virtual.dtype.kind in "iu":
        result = take(part, virtual, axis=-1)
    else:
        prev, nxt = _neighbours(virtual, n, inexact)
        gamma = np.asanyarray(virtual - prev)
        if method == "averaged_inverted_cdf":
            gamma = np.where(gamma == 0, 0.5, 1.0)
        elif method == "midpoint":
            gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
        gamma = np.asanyarray(gamma, dtype=virtual.dtype)
        t = float(gamma) if weak_q else gamma
        result = _lerp(take(part, prev, axis=-1), take(part, nxt, axis=-1), t)
    if inexact and n:
        last = part[..., -1]
        last = reshape(last, type_of(last).shape + (1,) * q.ndim)
        result = where(isnan(last), last, result)
    if q.ndim:                                   # q's dimensions come first, as in NumPy
        result = moveaxis(result, list(range(-q.ndim, 0)), list(range(q.ndim)))
    if keepdims:
        result = reshape(result, q.shape + keep_shape)
    return result


def _concrete_q(q, name):
    q = static_value(q)
    if isinstance(q, Tracer):
        raise ConcretizationError(f"{name} with traced quantiles: the positions to read depend "
                                  f"on their values; pass them as Python numbers or a NumPy "
                                  f"array")
    return np.asanyarray(q)


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """NumPy's quantile of traced data at concrete quantiles ``q`` in [0, 1]."""
    if out is not None or weights is not None or interpolation is not None:
        raise UnsupportedError("np.quantile(..., out=/weights=/interpolation=) on tracers")
    weak_q = type(q) in (int, float)
    q = _concrete_q(q, "quantile")
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _quantile(a, q, axis, method, keepdims, weak_q, "quantile")


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """NumPy's percentile of traced data at concrete percentiles ``q`` in [0, 100]."""
    if out is not None or weights is not None or interpolation is not None:
        raise UnsupportedError("np.percentile(..., out=/weights=/interpolation=) on tracers")
    weak_q = type(q) in (int, float)
    q = np.true_divide(_concrete_q(q, "percentile"), 100)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile(a, np.asanyarray(q), axis, method, keepdims, weak_q, "percentile")


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """Indices that sort by the last key, ties broken by the one before it, and so on (NumPy's
    order: NaN last): stable argsorts from the first key to the last."""
    from .indexing import take_along_axis
    if isinstance(keys, (tuple, list)):
        ks = [as_traceable(k) for k in keys]
    else:
        keys = as_traceable(keys)
        ks = [keys[i] for i in range(type_of(keys).shape[0])] if type_of(keys).ndim else []
    if not ks:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if len({type_of(k).shape for k in ks}) > 1:
        raise ValueError("all keys need to be the same shape")
    if type_of(ks[0]).ndim == 0:
        raise np.exceptions.AxisError("axis -1 is out of bounds for array of dimension 0")
    ax = normalize_axis(axis, type_of(ks[0]).ndim, "lexsort")
    idx = argsort_p.bind(ks[0], axis=ax, stable=True)
    for k in ks[1:]:
        order = argsort_p.bind(take_along_axis(k, idx, ax), axis=ax, stable=True)
        idx = take_along_axis(idx, order, ax)
    return idx


def top_k(operand, k):
    """The ``k`` largest entries along the last axis and their indices (int64), largest first,
    equal entries in index order and NaN above every number, as JAX's ``lax.top_k``. The
    values are a gather: their derivative routes each cotangent to its entry."""
    from .indexing import take_along_axis
    from .shape import flip
    x = as_traceable(operand)
    ty = type_of(x)
    if ty.ndim == 0:
        raise ValueError("top_k needs an operand with at least one axis")
    n, k = ty.shape[-1], operator.index(k)
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} is outside [0, {n}] (the last axis' length)")
    # a stable ascending sort of the reversed row, reversed: descending, ties by lower index
    perm = argsort_p.bind(flip(x, -1), axis=ty.ndim - 1, stable=True)
    idx = np.int64(n - 1) - flip(perm, -1)[..., :k]
    return take_along_axis(x, idx, -1), idx


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None):
    """NumPy's unique of the flattened array (sorted distinct values; ``equal_nan``: one NaN),
    with JAX's ``size``/``fill_value``: exactly ``size`` values, the first ``size`` distinct
    ones, then ``fill_value`` (default: the smallest value) where there are fewer; the padded
    first indices are the smallest value's, the padded counts 0. Traced arrays need ``size``
    (how many distinct values there are is known only when the function runs)."""
    flags = (return_index, return_inverse, return_counts)
    if not isinstance(ar, Tracer) and not isinstance(fill_value, Tracer):
        res = np.unique(ar, *flags, axis=axis, equal_nan=equal_nan)
        return res if size is None else _padded(res, flags, operator.index(size), fill_value)
    if size is None:
        raise ConcretizationError(
            "unique of a traced array: how many distinct values there are is known only when "
            "the function runs; pass tracejit.numpy.unique(x, size=n, fill_value=f) for exactly "
            "n values (the first n distinct ones, then f)")
    if axis is not None and type_of(ar).ndim != 1:
        raise UnsupportedError("tracejit.numpy.unique(..., axis=...) of a traced array with "
                               "more than one axis: unique rows are not supported; use axis=None")
    return _unique_traced(as_traceable(ar), flags, operator.index(size), fill_value, equal_nan)


def _padded(res, flags, size, fill_value):
    """NumPy's unique results cut or padded to ``size`` entries (``unique``'s docstring)."""
    res = list(res) if any(flags) else [res]
    values, k = res[0], len(res[0])
    fill = values[:1] if fill_value is None else np.asarray(fill_value, values.dtype)
    res[0] = np.concatenate([values[:size], np.broadcast_to(fill, (max(0, size - k),))
                             if k or fill_value is not None else np.zeros(size, values.dtype)])
    pos = 1
    if flags[0]:
        idx = res[pos]
        res[pos] = np.concatenate([idx[:size], np.full(max(0, size - k), idx[0] if k else 0)])
        pos += 1
    pos += flags[1]
    if flags[2]:
        res[pos] = np.concatenate([res[pos][:size], np.zeros(max(0, size - k), np.int64)])
    return tuple(res) if any(flags) else res[0]


def _unique_traced(a, flags, size, fill_value, equal_nan):
    """Sort, mark the first of each run of equal values, and find the ``k``-th mark with a
    binary search of the marks' running count (native on llvm, O(size log n))."""
    from ._base import convert
    from .creation import arange
    from .indexing import take
    from .logic import where
    from .math import isnan, not_equal
    from .mutation import ravel
    from .reductions import cumsum
    from .shape import concatenate, reshape
    shape = type_of(a).shape
    a = ravel(a)
    n = type_of(a).shape[0]
    perm = argsort_p.bind(a, axis=0, stable=True)
    aux = take(a, perm)
    if n == 0:          # nothing to find: the fill (or 0) everywhere, as the concrete path
        fill = 0 if fill_value is None else fill_value
        values = convert(np.zeros(size, type_of(a).dtype) + np.asarray(fill, type_of(a).dtype),
                         type_of(a).dtype)
        starts = ends = np.zeros(size, np.int64)
        valid = np.zeros(size, bool)
    else:
        new = not_equal(aux[1:], aux[:-1])
        if equal_nan and type_of(a).dtype.kind in "fc":
            new = new & ~(isnan(aux[1:]) & isnan(aux[:-1]))
        runs = cumsum(convert(concatenate([np.ones(1, bool), new]), np.int64))
        starts = searchsorted(runs, arange(1, size + 1, dtype=np.int64))   # n: no such run
        ends = searchsorted(runs, arange(2, size + 2, dtype=np.int64))
        valid = starts < n
        first = where(valid, starts, 0)
        values = take(aux, first)
        if fill_value is not None:
            values = where(valid, values, np.asarray(fill_value, type_of(a).dtype))
    out = [values]
    if flags[0]:
        out.append(take(perm, first) if n else np.zeros(size, np.int64))
    if flags[1]:
        inverse = take(runs - 1, argsort_p.bind(perm, axis=0, stable=True)) if n else \
            np.zeros(0, np.int64)
        out.append(reshape(inverse, shape))
    if flags[2]:
        out.append(where(valid, ends - starts, 0) if n else np.zeros(size, np.int64))
    return tuple(out) if any(flags) else out[0]
