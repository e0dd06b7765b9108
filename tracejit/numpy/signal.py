"""Signal and lookup functions on tracers: convolve, correlate, interp, unwrap, digitize, isin.

convolve/correlate gather the overlapping windows with concrete indices and contract them with
the kernel (one product, O(n m) work), in NumPy's three modes; interp and digitize look values
up with ``searchsorted`` (ops/sorting.py) as NumPy does; unwrap is NumPy's formula step for
step. All are differentiable where NumPy's function is (in the signal, the kernel, the sample
values ``fp``; not in the breakpoints' positions).
"""
from __future__ import annotations

import numpy as np

from ..core import Tracer, static_value, type_of
from ..errors import ConcretizationError
from ._base import as_traceable, implements

__all__ = ["convolve", "correlate", "interp", "unwrap", "digitize", "isin"]


def _full_correlation(a, v, conjugate):
    """NumPy's correlate(a, v, 'full') for 1-D a (length n) and v (length m): entry k is
    sum_j a[k + j - (m - 1)] * conj(v[j])."""
    from .indexing import take
    from .linalg import matmul
    from .math import conj
    from .shape import concatenate
    n, m = type_of(a).shape[0], type_of(v).shape[0]
    zeros = np.zeros(m - 1, type_of(a).dtype)
    padded = concatenate([zeros, a, zeros]) if m > 1 else a
    windows = take(padded, np.arange(n + m - 1)[:, None] + np.arange(m)[None, :])
    if conjugate and type_of(v).dtype.kind == "c":
        v = conj(v)
    return matmul(windows, v)


def _correlate(a, v, mode, name, conjugate):
    from ._base import convert, result_type
    a, v = as_traceable(a), as_traceable(v)
    if type_of(a).ndim > 1 or type_of(v).ndim > 1:
        raise ValueError("object too deep for desired array")
    from .shape import atleast_1d
    a, v = atleast_1d(a), atleast_1d(v)
    dt, _ = result_type(a, v)
    if dt.kind == "b":
        dt = np.dtype(np.int64)
    a, v = convert(a, dt), convert(v, dt)
    n, m = type_of(a).shape[0], type_of(v).shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{name}: v cannot be empty" if m == 0 else f"{name}: a cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    swapped = m > n
    if swapped:                        # NumPy correlates the longer with the shorter
        from .math import conj
        a, v, n, m = v, a, m, n
    full = _full_correlation(a, v, conjugate)
    if mode == "full":
        out = full
    elif mode == "valid":
        out = full[m - 1:n]
    else:
        start = (m - 1) - m // 2             # NumPy pads m // 2 on the left
        out = full[start:start + n]
    if swapped:
        out = out[::-1]
        if dt.kind == "c":
            out = conj(out)
    return out


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    """NumPy's 1-D cross-correlation: c[k] = sum_n a[n + k] conj(v[n])."""
    return _correlate(a, v, mode, "correlate", True)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    """NumPy's 1-D convolution (correlation with the reversed kernel)."""
    a, v = as_traceable(a), as_traceable(v)
    if type_of(v).ndim == 1 and type_of(a).ndim == 1 and \
            type_of(v).shape[0] > type_of(a).shape[0]:
        a, v = v, a
    return _correlate(a, v[::-1], mode, "convolve", False)


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points (xp, fp) at x (NumPy's formula: the slope
    of the interval times the distance from its left end, exact at the breakpoints)."""
    from ._base import convert
    from .indexing import take
    from .logic import where
    from .math import isnan
    if period is not None:
        raise ConcretizationError("np.interp(period=...) on tracers is not supported")
    x, xp, fp = as_traceable(x), as_traceable(xp), as_traceable(fp)
    if type_of(xp).ndim != 1 or type_of(fp).ndim != 1:
        raise ValueError("data must be 1 dimensional")
    n = type_of(xp).shape[0]
    if n == 0 or type_of(fp).shape[0] != n:
        raise ValueError("fp and xp are not of the same length." if n else
                         "array of sample points is empty")
    complex_ = type_of(fp).dtype.kind == "c"
    ft = np.complex128 if complex_ else np.float64
    x, xp, fp = convert(x, np.float64), convert(xp, np.float64), convert(fp, ft)
    lval = take(fp, 0) if left is None else left
    rval = take(fp, n - 1) if right is None else right
    if n == 1:
        return where(x < take(xp, 0), lval, where(x > take(xp, 0), rval, take(fp, 0)))
    j = searchsorted_right(xp, x) - 1                    # xp[j] <= x < xp[j + 1]
    jc = where(j < 0, 0, where(j > n - 2, n - 2, j))
    x0, x1, f0, f1 = take(xp, jc), take(xp, jc + 1), take(fp, jc), take(fp, jc + 1)
    slope = (f1 - f0) / (x1 - x0)
    # NumPy's arr_interp: a NaN result is computed again from the right end, and where that is
    # NaN too with equal values, it is that value; x on a breakpoint takes its value
    res = slope * (x - x0) + f0
    res = where(isnan(res), slope * (x - x1) + f1, res)
    if not complex_:
        res = where(isnan(res) & (f0 == f1), f0, res)
    res = where(x == x0, f0, res)
    res = where(j == n - 1, take(fp, n - 1), res)
    res = where(j < 0, lval, res)
    res = where(x > take(xp, n - 1), rval, res)
    return where(isnan(x), x, res)


def searchsorted_right(a, v):
    from .sorting import searchsorted
    return searchsorted(a, v, side="right")


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """NumPy's unwrap: jumps larger than ``discont`` replaced by their ``period`` complement."""
    from ._base import normalize_axis
    from .logic import where
    from .math import absolute, remainder
    from .reductions import cumsum
    from .shape import concatenate
    from .tail import diff
    p = as_traceable(p)
    nd = type_of(p).ndim
    axis = normalize_axis(axis, nd, "unwrap")
    dd = diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    high = period / 2
    low = -high
    ddmod = remainder(dd - low, period) + low
    ddmod = where((ddmod == low) & (dd > 0), high, ddmod)
    correct = where(absolute(dd) < discont, 0, ddmod - dd)
    first = [slice(None)] * nd
    first[axis] = slice(0, 1)
    rest = [slice(None)] * nd
    rest[axis] = slice(1, None)
    head = p[tuple(first)]
    tail = p[tuple(rest)] + cumsum(correct, axis=axis)
    return concatenate([head.astype(type_of(tail).dtype), tail], axis=axis)


@implements(np.digitize)
def digitize(x, bins, right=False):
    """Indices of the bins (concrete and monotonic, as NumPy requires) each x falls in."""
    from .sorting import searchsorted
    b = static_value(bins)
    if isinstance(b, Tracer):
        raise ConcretizationError("np.digitize with traced bins: NumPy first checks that they "
                                  "are monotonic; pass them as a NumPy array")
    b = np.asarray(b)
    if b.ndim != 1:
        raise ValueError("object too deep for desired array")
    d = np.diff(b)
    increasing, decreasing = bool(np.all(d >= 0)), bool(np.all(d <= 0))
    if not (increasing or decreasing):
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if increasing:
        return searchsorted(b, x, side=side)
    return len(b) - searchsorted(b[::-1], x, side=side)


@implements(np.isin)
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Whether each element is among ``test_elements`` (NaN is in nothing)."""
    from .math import equal, logical_not
    from .reductions import any as any_
    from .shape import ravel, reshape
    element = as_traceable(element)
    shape = type_of(element).shape
    tests = ravel(as_traceable(test_elements))
    hit = any_(equal(reshape(element, (-1, 1)), reshape(tests, (1, -1))), axis=1)
    hit = reshape(hit, shape)
    return logical_not(hit) if invert else hit
