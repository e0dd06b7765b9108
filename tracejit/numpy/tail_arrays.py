"""More of NumPy's long tail on tracers, as composites: delete, insert, block, dstack,
rollaxis, piecewise, array_equiv, sort_complex, the polynomial arithmetic polyadd, polysub,
polymul, polyder, polyint, np.i0, and the functions of a tracer's shape or dtype only
(diag/tril/triu_indices_from, can_cast, common_type: NumPy's own results) or of its
values laid out as an open grid (ix_).

Invariants: each follows NumPy's function of the same name in dtypes, shapes and values;
positions (``delete``/``insert``'s ``obj``), polynomial degrees and ``piecewise``'s number of
pieces are static (concrete), the values may be traced. ``piecewise`` evaluates every piece on
the whole array and selects (NumPy evaluates a piece only where its condition holds), so a
piece must be elementwise; a piece that is not finite where it is not selected is harmless
for values but, as for ``where``, poisons derivatives there (documented in the README).
Everything is differentiable where NumPy's function is (gathers, concatenations, products).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, static_value, type_of
from ..errors import ShapeError, UnsupportedError
from . import math as m
from ._base import as_traceable, implements, normalize_axis
from .logic import where
from .shape import concatenate, moveaxis, reshape

__all__ = ["delete", "insert", "block", "dstack", "rollaxis", "piecewise", "array_equiv",
           "sort_complex", "polyadd", "polysub", "polymul", "polyder", "polyint", "i0",
           "diag_indices_from", "tril_indices_from", "triu_indices_from", "ix_", "can_cast",
           "common_type"]


def _static_positions(obj, name):
    obj = static_value(obj, need=True)
    if isinstance(obj, Tracer):
        raise UnsupportedError(f"numpy.{name} with traced positions (or order) gives a "
                               f"data-dependent shape; pass a concrete value")
    return obj


@implements(np.delete)
def delete(arr, obj, axis=None):
    """``arr`` without the entries at ``obj`` (int, slice, int array or boolean mask; concrete)
    along ``axis`` (flattened when None), as NumPy's."""
    from .indexing import take
    arr = as_traceable(arr)
    if axis is None:
        arr, axis = reshape(arr, (-1,)), 0
    axis = normalize_axis(axis, type_of(arr).ndim, "delete")
    keep = np.delete(np.arange(type_of(arr).shape[axis]), _static_positions(obj, "delete"))
    return take(arr, keep, axis=axis)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """``values`` inserted before the positions ``obj`` (concrete) along ``axis`` (flattened
    when None), as NumPy's: NumPy's own insert runs on element labels (old elements 0, 1, ...,
    new ones -1, -2, ...), so every broadcasting rule is its own, and the result gathers the
    traced values by label."""
    from .indexing import take
    arr, values = as_traceable(arr), as_traceable(values)
    obj = _static_positions(obj, "insert")
    ta, tv = type_of(arr), type_of(values)
    labels = np.insert(np.arange(ta.size).reshape(ta.shape), obj,
                       -1 - np.arange(tv.size).reshape(tv.shape), axis=axis)
    pool = concatenate([reshape(arr, (-1,)), reshape(values, (-1,)).astype(ta.dtype)])
    flat = np.where(labels >= 0, labels, ta.size - 1 - labels).reshape(-1)
    return reshape(take(pool, flat), labels.shape)


@implements(np.block)
def block(arrays):
    """Assemble an array from nested lists of blocks, as NumPy's (the innermost lists join
    along the last axis, the next ones along the one before, ...)."""
    def depth(x):
        return 1 + depth(x[0]) if isinstance(x, list) and x else (1 if isinstance(x, list)
                                                                  else 0)
    d = depth(arrays)
    leaves = []

    def collect(x):
        if isinstance(x, list):
            for y in x:
                collect(y)
        else:
            leaves.append(type_of(as_traceable(x)).ndim)
    collect(arrays)
    ndim = max([d, *leaves])

    def build(x, level):
        if not isinstance(x, list):
            x = as_traceable(x)
            return reshape(x, (1,) * (ndim - type_of(x).ndim) + type_of(x).shape)
        if isinstance(x, list) and not x:
            raise ValueError("numpy.block: lists cannot be empty")
        return concatenate([build(y, level + 1) for y in x], axis=ndim - d + level)
    return build(arrays, 0)


@implements(np.dstack)
def dstack(tup):
    """Stack along the third axis (1-D arrays become (1, n, 1), 2-D ones (m, n, 1))."""
    from .shape import atleast_3d
    return concatenate([atleast_3d(as_traceable(x)) for x in tup], axis=2)


@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    """``axis`` moved to position ``start`` (NumPy's older moveaxis)."""
    a = as_traceable(a)
    n = type_of(a).ndim
    axis = normalize_axis(axis, n, "rollaxis")
    start = start + n if start < 0 else start
    if not 0 <= start <= n:
        raise np.exceptions.AxisError(f"rollaxis: start {start} out of range for {n} dims")
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """``funclist[i](x)`` where ``condlist[i]`` holds (the last one wins), ``funclist[-1]``
    where none does if it has one more entry; scalars are constants. Every piece is
    evaluated on the whole array (module docstring)."""
    x = as_traceable(x)
    # NumPy's rule: a scalar, or a list whose first entry is no list/array (an array's 0-d
    # element is a scalar), is one condition
    first = None if np.isscalar(condlist) else condlist[0]
    if first is None or (not isinstance(first, (list, np.ndarray)) and not (
            isinstance(first, Tracer) and first.ndim) and type_of(x).ndim != 0):
        condlist = [condlist]
    conds = [as_traceable(condlist[i]).astype(bool) for i in range(len(condlist))]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"numpy.piecewise: with {n} condition(s), funclist must have {n} or "
                         f"{n + 1} entries, got {len(funclist)}")

    def value(f):
        return f(x, *args, **kw) if callable(f) else f
    out = m.multiply(x, 0) if len(funclist) == n else value(funclist[n])
    out = m.add(m.multiply(x, 0), out)
    otherwise = None
    for c in conds:
        otherwise = m.logical_not(c) if otherwise is None else \
            m.logical_and(otherwise, m.logical_not(c))
    if len(funclist) == n + 1:
        out = where(otherwise, out, m.multiply(x, 0))
    for c, f in zip(conds, funclist[:n]):
        out = where(c, value(f), out)
    return out.astype(type_of(x).dtype)


@implements(np.array_equiv)
def array_equiv(a1, a2):
    """True when the shapes broadcast and every element is equal (a 0-d bool)."""
    a1, a2 = as_traceable(a1), as_traceable(a2)
    try:
        np.broadcast_shapes(type_of(a1).shape, type_of(a2).shape)
    except ValueError:
        return np.bool_(False)
    from .reductions import all as all_
    return all_(m.equal(a1, a2))


@implements(np.sort_complex)
def sort_complex(a):
    """Sorted by real part, then imaginary part, as a complex array (NumPy's rule: complex64
    for 8- and 16-bit ints, complex128 for every other real dtype, float32 included)."""
    from .sorting import sort
    a = as_traceable(a)
    dt = type_of(a).dtype
    target = dt if dt.kind == "c" else (dtypes.complex64 if dt.char in "bhBH" else
                                        dtypes.complex128)
    return sort(a).astype(target)


def _poly(p):
    p = as_traceable(p)
    if type_of(p).ndim != 1:
        raise ShapeError(f"numpy polynomial functions take 1-D coefficients, got shape "
                         f"{type_of(p).shape}")
    return p


def _pad_front(p, n):
    k = n - type_of(p).shape[0]
    if k == 0:
        return p
    from .creation import zeros
    return concatenate([zeros((k,), type_of(p).dtype), p])


@implements(np.polyadd)
def polyadd(a1, a2):
    """Sum of two polynomials (highest degree first)."""
    a1, a2 = _poly(a1), _poly(a2)
    n = max(type_of(a1).shape[0], type_of(a2).shape[0])
    return m.add(_pad_front(a1, n), _pad_front(a2, n))


@implements(np.polysub)
def polysub(a1, a2):
    """Difference of two polynomials (highest degree first)."""
    a1, a2 = _poly(a1), _poly(a2)
    n = max(type_of(a1).shape[0], type_of(a2).shape[0])
    return m.subtract(_pad_front(a1, n), _pad_front(a2, n))


@implements(np.polymul)
def polymul(a1, a2):
    """Product of two polynomials: the full convolution of their coefficients."""
    from .signal import convolve
    return convolve(_poly(a1), _poly(a2))


@implements(np.polyder)
def polyder(p, m_=1):
    """The ``m_``-th derivative (concrete order), as NumPy's (ints stay ints)."""
    p = _poly(p)
    order = int(_static_positions(m_, "polyder"))
    if order < 0:
        raise ValueError("numpy.polyder: order of derivative must be positive (see polyint)")
    for _ in range(order):
        n = type_of(p).shape[0] - 1
        p = m.multiply(p[:-1], np.arange(n, 0, -1)) if n > 0 else m.multiply(p[:0], 1)
    return p


@implements(np.polyint)
def polyint(p, m_=1, k=None):
    """The ``m_``-th antiderivative (concrete order) with integration constants ``k`` (a
    scalar or ``m_`` values, the first for the first integration), as NumPy's (float64)."""
    p = _poly(p)
    order = int(_static_positions(m_, "polyint"))
    if order < 0:
        raise ValueError("numpy.polyint: order of integral must be positive (see polyder)")
    ks = [0] * order if k is None else (list(k) if np.ndim(k) else [k] * order)
    if len(ks) != order:
        raise ValueError("numpy.polyint: k must be a scalar or a rank-1 array of length m")
    p = p.astype(np.result_type(type_of(p).dtype, np.float64))
    for c in ks:
        n = type_of(p).shape[0]
        scaled = m.true_divide(p, np.arange(n, 0, -1).astype(np.float64))
        p = concatenate([scaled, reshape(m.add(m.multiply(scaled[:1], 0), c)[:1], (1,))])
    return p


@implements(np.i0)
def i0(x):
    """The modified Bessel function of the first kind, order 0 (Cephes' Chebyshev series, as
    NumPy's); ints go to float64, complex raises, as NumPy."""
    from .special_gamma import i0 as i0_
    x = as_traceable(x)
    dt = type_of(x).dtype
    if dt.kind == "c":
        raise TypeError("i0 not supported for complex values")
    return i0_(x if dt.kind == "f" else x.astype(np.float64))


def _shape_only(np_fn):
    """NumPy's function of an array's shape (or dtype) alone, given a stand-in of the tracer's
    shape and dtype (its results are concrete, as NumPy's)."""
    def fn(arr, *args, **kwargs):
        t = type_of(as_traceable(arr))
        return np_fn(np.empty(t.shape, t.dtype), *args, **kwargs)
    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"numpy.{np_fn.__name__} of the argument's shape (a concrete result)."
    return implements(np_fn)(fn)


diag_indices_from = _shape_only(np.diag_indices_from)
tril_indices_from = _shape_only(np.tril_indices_from)
triu_indices_from = _shape_only(np.triu_indices_from)


@implements(np.can_cast)
def can_cast(from_, to, casting="safe"):
    """NumPy's answer for the dtype of ``from_`` (an array or tracer: never value-based)."""
    src = from_ if isinstance(from_, (np.dtype, type, str)) else type_of(as_traceable(
        from_)).dtype
    return np.can_cast(src, to, casting=casting)


@implements(np.common_type)
def common_type(*arrays):
    """The scalar type NumPy's common_type gives for the arrays' dtypes."""
    return np.common_type(*[np.empty(0, type_of(as_traceable(a)).dtype) for a in arrays])


@implements(np.ix_)
def ix_(*args):
    """Open-grid index arrays: the k-th 1-D argument reshaped to lie along axis k (a boolean
    argument stands for its True positions, so it must be concrete)."""
    out = []
    n = len(args)
    for k, a in enumerate(args):
        a = as_traceable(static_value(a, need=True) if type_of(a).dtype == dtypes.bool_
                         else a)
        t = type_of(a)
        if t.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if t.dtype == dtypes.bool_:
            if isinstance(a, Tracer):
                raise UnsupportedError("numpy.ix_ of a traced boolean mask gives a "
                                       "data-dependent shape; pass integer positions")
            a = np.nonzero(a)[0]
        out.append(reshape(a, (1,) * k + (-1,) + (1,) * (n - k - 1)))
    return tuple(out)
