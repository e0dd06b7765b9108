"""Reductions and scans: sum prod max min mean var std argmax argmin all any cumsum cumprod."""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..ops import reductions as red
from ..ops import structural as st
from ._base import as_traceable, convert, implements, normalize_axes, normalize_axis

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax",
           "argmin", "all", "any", "cumsum", "cumprod", "average", "ptp", "nansum"]


def _keepdims(out, in_shape, axes, keepdims):
    if not keepdims:
        return out
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return st.reshape_p.bind(out, shape=shape)


def _strong(a):
    """A Python scalar as NumPy reduces it: a NumPy scalar, strongly typed (np.max(2.0) is an
    np.float64, which then promotes as float64, not as a weak Python float)."""
    a = as_traceable(a)
    t = type_of(a)
    if t.weak:
        from ..ops import elementwise as ew
        a = ew.convert_p.bind(a, dtype=t.dtype)
    return a


def _reduce(prim, a, axis, dtype, keepdims, initial, opname, combine=None, where=None,
            identity=None):
    """``prim`` over ``axis`` of ``a`` (converted to ``dtype`` first), with NumPy's ``initial``
    (cast to the result dtype as NumPy stores a scalar: ``_initial``) and ``where=`` (the
    masked-out elements replaced by ``identity``, or by ``initial`` when the reduction has
    none, as NumPy requires)."""
    a = _strong(a)
    t = type_of(a)
    axes = normalize_axes(axis, t.ndim, opname)
    if dtype is not None:
        a = convert(a, dtypes.canonical(dtype))
    if initial is not None:
        initial = _initial(initial, type_of(a).dtype)
    if not _unmasked(where):
        if identity is None and initial is None:
            raise ValueError(f"reduction operation '{prim.name.replace('reduce_', '')}' does "
                             f"not have an identity, so to use a where mask one has to "
                             f"specify 'initial'")
        a = _masked(a, where, identity if identity is not None else initial)
    out = prim.bind(a, axes=axes)
    if initial is not None:
        out = combine(out, initial)
    return _keepdims(out, t.shape, axes, keepdims)


def _unmasked(where) -> bool:
    """Whether a reduction's ``where=`` masks nothing (NumPy's default True; None here too)."""
    return where is None or isinstance(where, (bool, np.bool_)) and bool(where)


def _initial(initial, dtype):
    """NumPy's ``initial`` in the reduction's ``dtype``: a scalar stored as ``x[()] = v``
    stores it (int(): np.sum(int8, initial=2.5) adds 2; 300 into int8 is an OverflowError), an
    array cast (wrapping)."""
    if isinstance(initial, Tracer):
        return convert(initial, dtype)
    if isinstance(initial, np.ndarray):
        return initial.astype(dtype)
    box = np.zeros((), dtype)
    box[()] = initial                       # NumPy's own conversion and errors
    return box


def _masked(a, where, fill):
    """``a`` with the elements where the bool ``where`` (broadcast to ``a``'s shape, as
    NumPy's reductions require) is false replaced by ``fill`` (``a``'s dtype)."""
    from .math import where as select
    from .shape import broadcast_to
    mask = as_traceable(where)
    if type_of(mask).dtype != dtypes.bool_:
        raise TypeError(f"Cannot cast array data from dtype('{type_of(mask).dtype}') to "
                        f"dtype('bool') according to the rule 'safe' (the where= mask)")
    t = type_of(a)
    return select(broadcast_to(mask, t.shape), a, np.asarray(fill, t.dtype)
                  if not isinstance(fill, Tracer) else fill)


@implements(np.sum)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Sum over axes (pairwise order in the interpreter; see the backend for compiled order)."""
    _no_out(out, "sum")
    from .math import add
    dt = dtypes.sum_dtype(type_of(a).dtype) if dtype is None else dtype
    return _reduce(red.reduce_sum_p, a, axis, dt, keepdims, initial, "sum", add, where, 0)


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """Product over axes."""
    _no_out(out, "prod")
    from .math import multiply
    dt = dtypes.sum_dtype(type_of(a).dtype) if dtype is None else dtype
    return _reduce(red.reduce_prod_p, a, axis, dt, keepdims, initial, "prod", multiply, where,
                   1)


@implements(np.max)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Maximum over axes (``where=`` needs ``initial``, as NumPy)."""
    _no_out(out, "max")
    from .math import maximum
    return _reduce(red.reduce_max_p, a, axis, None, keepdims, initial, "max", maximum, where)


@implements(np.min)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):  # noqa: A001
    """Minimum over axes (``where=`` needs ``initial``, as NumPy)."""
    _no_out(out, "min")
    from .math import minimum
    return _reduce(red.reduce_min_p, a, axis, None, keepdims, initial, "min", minimum, where)


amax, amin = max, min


def _no_out(out, opname, where=True):
    if out is not None:
        from ..errors import UnsupportedError
        raise UnsupportedError(f"{opname}(out=...) would mutate an array; tracejit is functional. "
                               f"Use the return value instead.")
    if not _unmasked(where):
        from ..errors import UnsupportedError
        raise UnsupportedError(f"{opname}(where=...) is not supported; mask with "
                               f"numpy.where(mask, x, identity) before reducing")


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Mean (ints average in float64, float16 in float32 rounded to float16, as NumPy)."""
    _no_out(out, "mean")
    a = as_traceable(a)
    t = type_of(a)
    half = dtype is None and t.dtype == dtypes.float16
    if dtype is None:
        dtype = dtypes.float32 if half else t.dtype if t.dtype.kind in "fc" else dtypes.float64
    axes = normalize_axes(axis, t.ndim, "mean")
    s = sum(a, axis=axes, dtype=dtype, keepdims=keepdims, where=where)
    if _unmasked(where):
        n = _count(t.shape, axes)
    else:
        from .shape import broadcast_to       # NumPy: the count of selected elements, as intp
        n = sum(broadcast_to(as_traceable(where), t.shape), axis=axes, dtype=dtypes.int64,
                keepdims=keepdims)
    if half and type_of(s).ndim == 0:
        # NumPy's scalar path: float16 of the double quotient (its array path rounds to a
        # float32 out= array first: _divide_count, then float16)
        from .math import true_divide
        count = np.int64(n) if isinstance(n, int) else n
        return convert(true_divide(convert(s, dtypes.float64), count), dtypes.float16)
    out = _divide_count(s, n)
    return convert(out, dtypes.float16) if half else out


def _divide_count(s, n):
    """``s / n`` as NumPy's mean/var compute it: true_divide by an intp count, which promotes
    float32/complex64 to double precision, then casts back (so results match to the bit)."""
    from .math import true_divide
    dt = type_of(s).dtype
    wide = np.promote_types(dt, np.int64)
    out = true_divide(convert(s, wide), n if isinstance(n, Tracer) else np.int64(n))
    return convert(out, dt)


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None,
        correction=None):
    """Variance: mean(|x - mean(x)|²) with ``ddof`` (two-pass, as NumPy)."""
    _no_out(out, "var", where)
    from .math import add, imag, multiply, real, subtract
    if correction is not None:
        ddof = correction
    a = as_traceable(a)
    t = type_of(a)
    axes = normalize_axes(axis, t.ndim, "var")
    m = globals()["mean"](a, axis=axes, dtype=dtype, keepdims=True)
    d = subtract(a, m)
    if t.dtype.kind == "c":               # NumPy: re*re + im*im in real arithmetic
        re, im = real(d), imag(d)
        sq = add(multiply(re, re), multiply(im, im))
    else:
        sq = multiply(d, d)
    n = _count(t.shape, axes) - ddof
    # NumPy sums the squares in ``dtype`` too (var(int_array, dtype=float32) is float32)
    s = sum(sq, axis=axes, dtype=dtype, keepdims=keepdims)
    return _divide_count(s, builtins.max(n, 0))


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None,
        correction=None):
    """Standard deviation sqrt(var). Derivative convention (as autograd): where the variance
    is exactly 0 (one element, or constant data) every derivative is 0, not NaN (sqrt's
    derivative there is inf, times var's zero derivative); the values are sqrt(var)'s."""
    from .math import where as select
    from .math import equal, sqrt
    v = var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            correction=correction)
    if not isinstance(v, Tracer):
        return sqrt(v)
    zero = equal(v, 0)
    # the square root of a stand-in 1 where v == 0 keeps sqrt's inf slope off the derivative
    return select(zero, 0, sqrt(select(zero, 1, v)))


def _arg(prim, opname):
    def fn(a, axis=None, out=None, *, keepdims=False):
        _no_out(out, opname)
        a = as_traceable(a)
        t = type_of(a)
        if axis is None:
            a = st.reshape_p.bind(a, shape=(t.size,)) if isinstance(a, Tracer) else a.reshape(-1)
            out_ = prim.bind(a, axis=0)
            return st.reshape_p.bind(out_, shape=(1,) * t.ndim) if keepdims else out_
        ax = normalize_axis(axis, t.ndim, opname)
        out_ = prim.bind(a, axis=ax)
        return _keepdims(out_, t.shape, (ax,), keepdims)
    fn.__name__ = opname
    return fn


argmax = implements(np.argmax)(_arg(red.argmax_p, "argmax"))
argmin = implements(np.argmin)(_arg(red.argmin_p, "argmin"))


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    _no_out(out, "all")
    from .math import not_equal
    a = as_traceable(a)
    b = a if type_of(a).dtype == dtypes.bool_ else not_equal(a, 0)
    if not _unmasked(where):
        b = _masked(b, where, True)
    return _reduce(red.reduce_min_p, b, axis, None, keepdims, None, "all") \
        if _nonempty(b, axis) else _empty_truth(b, axis, keepdims, True)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, where=None):  # noqa: A001
    _no_out(out, "any")
    from .math import not_equal
    a = as_traceable(a)
    b = a if type_of(a).dtype == dtypes.bool_ else not_equal(a, 0)
    if not _unmasked(where):
        b = _masked(b, where, False)
    return _reduce(red.reduce_max_p, b, axis, None, keepdims, None, "any") \
        if _nonempty(b, axis) else _empty_truth(b, axis, keepdims, False)


def _nonempty(a, axis):
    t = type_of(a)
    return builtins.all(t.shape[ax] > 0 for ax in normalize_axes(axis, t.ndim))


def _empty_truth(a, axis, keepdims, value):
    """all/any over an empty axis: a traced constant (so .at and writes work on it)."""
    from ._base import filled
    t = type_of(a)
    axes = normalize_axes(axis, t.ndim)
    shape = tuple((1 if keepdims else None) if i in axes else d for i, d in enumerate(t.shape))
    return filled(tuple(d for d in shape if d is not None), value, dtypes.bool_)


def _cumulative(prim, opname):
    def fn(a, axis=None, dtype=None, out=None):
        _no_out(out, opname)
        a = _strong(a)
        t = type_of(a)
        if axis is None:
            a = st.reshape_p.bind(a, shape=(t.size,)) if isinstance(a, Tracer) else a.reshape(-1)
            axis = 0
        dt = dtypes.sum_dtype(t.dtype) if dtype is None else dtypes.canonical(dtype)
        a = convert(a, dt)
        return prim.bind(a, axis=normalize_axis(axis, type_of(a).ndim, opname), reverse=False)
    fn.__name__ = opname
    return fn


cumsum = implements(np.cumsum)(_cumulative(red.cumsum_p, "cumsum"))
cumprod = implements(np.cumprod)(_cumulative(red.cumprod_p, "cumprod"))


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted mean, as numpy.average: 1-d weights along a single ``axis`` (or weights of
    ``a``'s shape); ints and bools average in float64. Weights that sum to zero give inf/nan
    (NumPy raises ZeroDivisionError, which needs their values)."""
    from .math import multiply, true_divide
    a = as_traceable(a)
    t = type_of(a)
    axes = None if axis is None else normalize_axes(axis, t.ndim, "average")
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        scl = t.size // builtins.max(int(np.prod(type_of(avg).shape, dtype=np.int64)), 1)
        scl = np.asarray(scl, dtype=type_of(avg).dtype)
    else:
        w = as_traceable(weights)
        wt = type_of(w)
        dt = np.result_type(t.dtype, wt.dtype, *(["f8"] if t.dtype.kind in "biu" else []))
        dt = dtypes.canonical(dt)
        if wt.shape != t.shape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if wt.shape != tuple(t.shape[ax] for ax in axis_order(axis, t.ndim)):
                raise ValueError("Shape of weights must be consistent with shape of a along "
                                 "specified axis.")
            from .shape import reshape, transpose
            w = transpose(w, tuple(np.argsort(axis_order(axis, t.ndim))))
            w = reshape(w, tuple(d if i in axes else 1 for i, d in enumerate(t.shape)))
        w = convert(w, dt)
        scl = sum(w, axis=axes, keepdims=keepdims)
        avg = true_divide(sum(multiply(convert(a, dt), w), axis=axes, keepdims=keepdims), scl)
    if returned:
        from ._base import broadcast_to
        return avg, broadcast_to(scl, type_of(avg).shape)
    return avg


def axis_order(axis, ndim):
    """``axis`` (an int or a tuple) as the tuple of normalised axes in the order given."""
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(normalize_axis(int(ax), ndim, "average") for ax in axis)


@implements(np.ptp)
def ptp(a, axis=None, keepdims=False):
    from .math import subtract
    return subtract(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, keepdims=False):
    from .math import where
    from .math import isnan
    return sum(where(isnan(a), 0, a), axis=axis, dtype=dtype, keepdims=keepdims)
