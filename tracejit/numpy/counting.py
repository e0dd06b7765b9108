"""Counting on tracers: histogram (a static number of bins or given edges) and bincount with a
static length.

The counts are a scatter-add of ones (or of the weights) into the bins, so a traced histogram
runs natively and is differentiable in its weights. Bin membership follows NumPy's own
algorithm: for equal-width bins the index ``(a - first) / (last - first) * n``, truncated and
then corrected against the edges themselves (an element on an edge goes where NumPy puts it,
whatever the rounding); for given edges ``edges[i] <= a < edges[i + 1]``, the last bin closed.
Elements outside the range (and NaN) are counted nowhere: they go to a dummy bin that is dropped.

Where NumPy's result needs the data's values before any bin exists (an autodetected range of
non-finite data, a ``bins`` estimator name, bincount's length ``max(x) + 1``), the traced
versions raise at run time (``check``) or ask for a static value.
"""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import ConcretizationError, UnsupportedError
from ..ops.elementwise import check
from ._base import as_traceable, filled, implements, result_type

__all__ = ["histogram", "bincount"]


def _scatter_add(idx, values, length):
    """``zeros(length + 1)`` with ``values`` added at ``idx`` (``length``: the dummy bin), then
    the first ``length`` bins."""
    out = filled((length + 1,), 0, type_of(values).dtype)
    return out.at[idx].add(values)[:length]


def _outer_edges(a, range_):
    """NumPy's ``_get_outer_edges``: the range given, or the data's min and max (widened by
    0.5 each way when they are equal), checked finite when the function runs."""
    from .logic import where
    from .math import isfinite, logical_and, logical_not
    if range_ is not None:
        first, last = range_
        if isinstance(first, Tracer) or isinstance(last, Tracer):
            raise UnsupportedError("histogram: a traced range=(min, max); pass Python numbers")
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
        if first == last:
            first, last = first - 0.5, last + 0.5
        return first, last
    if type_of(a).size == 0:
        return 0, 1
    first, last = a.min(), a.max()
    first = check(logical_not(logical_and(isfinite(first), isfinite(last))), first,
                  error="histogram_range")
    same = first == last
    return where(same, first - 0.5, first), where(same, last + 0.5, last)


def _uniform_bins(a, n, first, last, bin_type):
    """Each element's bin among ``n`` equal bins from ``first`` to ``last`` (``n``: outside),
    and the edges, as NumPy's fast path computes them."""
    from .creation import linspace
    from .indexing import take
    from .logic import where
    from .math import logical_and
    edges = linspace(first, last, n + 1, dtype=bin_type)
    a = a.astype(bin_type)
    keep = logical_and(a >= first, a <= last)
    first, last = (e.astype(bin_type) if isinstance(e, Tracer) else bin_type.type(e)
                   for e in (first, last))
    f = (a - first) / (last - first) * n
    idx = where(keep, f, 0).astype(np.int64)          # (NaN and far values never truncated)
    idx = where(idx == n, n - 1, idx)
    idx = where(a < take(edges, idx), idx - 1, idx)
    idx = where(logical_and(a >= take(edges, idx + 1), idx != n - 1), idx + 1, idx)
    return where(keep, idx, n), edges


def _given_bins(a, edges):
    """Each element's bin for the ``edges`` given (``len(edges) - 1``: outside)."""
    from .logic import where
    from .math import logical_and
    from .reductions import sum as sum_
    n = type_of(edges).shape[0] - 1
    edges = as_traceable(edges)
    above = sum_(a[:, None] >= edges[None, :], axis=1) - 1     # edges at or below each element
    idx = where(above == n, where(a == edges[n], n - 1, n), above)
    return where(logical_and(idx >= 0, idx < n), idx, n)


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):
    """NumPy's histogram of traced data: ``bins`` an int (equal bins over ``range`` or the data's
    min..max) or a sequence of increasing edges; returns ``(hist, bin_edges)``."""
    from .tail import diff
    from .mutation import ravel
    a = ravel(as_traceable(a))
    w = None
    if weights is not None:
        w = ravel(as_traceable(weights))
        if type_of(w).shape != type_of(a).shape:
            raise ValueError("weights should have the same shape as a.")
    if isinstance(bins, str):
        raise UnsupportedError(f"histogram: bins={bins!r} (an estimator) depends on the data's "
                               f"values; pass a number of bins")
    if np.ndim(bins) == 0:
        n = operator.index(bins)
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        first, last = _outer_edges(a, range)
        bin_type = dtypes.float_dtype(result_type(a, first, last)[0])
        idx, edges = _uniform_bins(a, n, first, last, bin_type)
    else:
        edges = as_traceable(bins)
        if type_of(edges).ndim != 1:
            raise ValueError("`bins` must be 1d, when an array")
        if not isinstance(edges, Tracer) and np.any(np.diff(np.asarray(bins)) < 0):
            raise ValueError("`bins` must increase monotonically, when an array")
        n = type_of(edges).shape[0] - 1
        idx = _given_bins(a, edges)
    counts = _scatter_add(idx, np.ones(type_of(a).shape, np.int64) if w is None else w, n)
    if density:
        widths = diff(edges).astype(np.float64)
        return counts / widths / counts.sum(), edges
    return counts, edges


def bincount(x, weights=None, minlength=0, *, length=None):
    """NumPy's bincount; on traced ``x`` the result's ``length`` must be given (static), and
    values at or beyond it are dropped (as JAX's ``bincount(length=...)``)."""
    from .reductions import any as any_
    x = as_traceable(x)
    if not isinstance(x, Tracer) and not isinstance(weights, Tracer):
        out = np.bincount(np.asarray(x), weights, minlength)
        return out if length is None else np.pad(out, (0, max(0, length - out.size)))[:length]
    if length is None:
        raise ConcretizationError("bincount of traced values: the result's length is max(x) + 1, "
                                  "a value only known when the function runs; pass "
                                  "tracejit.numpy.bincount(x, length=n)")
    if type_of(x).ndim != 1 or type_of(x).dtype.kind not in "iu":
        raise TypeError("bincount: x must be a 1-D array of non-negative integers")
    from .logic import where
    from .math import logical_or
    x = check(any_(x < 0), x, error="bincount_negative")
    length = max(operator.index(length), operator.index(minlength))
    idx = where(logical_or(x < 0, x >= length), length, x)
    values = np.ones(type_of(x).shape, np.int64) if weights is None else \
        as_traceable(weights).astype(np.float64)
    return _scatter_add(idx, values, length)
