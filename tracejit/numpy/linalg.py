"""``tracejit.numpy.linalg``: the ``numpy.linalg`` namespace for arrays and tracers.

NumPy code calling ``np.linalg.f`` on a tracer reaches ``f`` here (numpy/dispatch.py); on
concrete arrays every function is NumPy's own. The solves and decompositions are in factor.py;
here: norms, cond, matrix_rank, pinv, lstsq, matrix_power, multi_dot, tensorsolve, tensorinv and
numpy.linalg's own variants of the products (matrix axes last: diagonal, trace, outer, cross,
vecdot, matrix_transpose). Invariants are factor.py's (NumPy's dtypes and errors).
"""
from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

from .. import dtypes
from ..core import type_of
from ..errors import UnsupportedError
from ..ops import linalg as la
from . import math as m
from . import reductions as r
from . import shape as sh
from ._base import as_traceable, convert, implements, normalize_axis
from .logic import where
from .factor import (cho_solve, cholesky, det, eig, eigh, eigvals, eigvalsh,  # noqa: F401
                     inexact_operands, inv, matrices, qr, slogdet, solve, solve_triangular, svd,
                     svdvals)
from .products import diagonal as _diagonal, trace as _trace, cross as _cross  # noqa: F401
from .products import matmul, outer as _outer, tensordot  # noqa: F401

__all__ = ["cho_solve", "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank",
           "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve",
           "solve_triangular", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace",
           "vecdot", "vector_norm", "LinAlgError"]


# ---------------------------------------------------------------------------------------------
# norms

def _abs_sq(x):
    """|x|^2 in x's real dtype (no square root: exact for complex too)."""
    if type_of(x).dtype.kind == "c":
        return m.add(m.square(m.real(x)), m.square(m.imag(x)))
    return m.square(x)


def _vector_norm(x, ord, axis, keepdims):
    """The vector norm of ``x`` along the one axis ``axis`` (NumPy's rules per ``ord``)."""
    kw = dict(axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return m.sqrt(r.sum(_abs_sq(x), **kw))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = m.absolute(x)
    if ord == np.inf:
        return r.max(a, **kw)
    if ord == -np.inf:
        return r.min(a, **kw)
    if ord == 0:
        return r.sum(convert(m.not_equal(x, 0), type_of(a).dtype), **kw)
    if ord == 1:
        return r.sum(a, **kw)
    ord = float(ord)
    return m.power(r.sum(m.power(a, ord), **kw), 1.0 / ord)


def _matrix_norm(x, ord, row, col, keepdims):
    """The matrix norm over axes (row, col) (normalised, distinct)."""
    if ord in (2, -2, "nuc"):
        moved = sh.moveaxis(x, (row, col), (-2, -1))
        s = svdvals(moved)
        res = r.max(s, axis=-1) if ord == 2 else r.min(s, axis=-1) if ord == -2 else \
            r.sum(s, axis=-1)
    elif ord in (None, "fro", "f"):
        res = m.sqrt(r.sum(_abs_sq(x), axis=(row, col)))
    elif ord in (1, -1, np.inf, -np.inf):
        a = m.absolute(x)
        over, then = (row, col) if ord in (1, -1) else (col, row)
        sums = r.sum(a, axis=over)
        then = then - 1 if then > over else then
        res = r.max(sums, axis=then) if ord > 0 else r.min(sums, axis=then)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(type_of(x).shape)
        shape[row] = shape[col] = 1
        res = sh.reshape(res, tuple(shape))
    return res


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """Matrix or vector norm, with every ``ord``/``axis`` form of ``numpy.linalg.norm``."""
    x = as_traceable(x)
    t = type_of(x)
    if t.dtype.kind not in "fc":
        x = convert(x, dtypes.float64)
    nd = t.ndim
    if axis is None:
        if ord is None:
            res = m.sqrt(r.sum(_abs_sq(sh.ravel(x))))
            return sh.reshape(res, (1,) * nd) if keepdims else res
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (int(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    if len(axis) == 1:
        return _vector_norm(x, ord, normalize_axis(axis[0], nd, "norm"), keepdims)
    if len(axis) == 2:
        row, col = (normalize_axis(a, nd, "norm") for a in axis)
        if row == col:
            raise ValueError("Duplicate axes given.")
        return _matrix_norm(x, ord, row, col, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """The vector norm over ``axis`` (None: all elements; a tuple: those axes together)."""
    x = as_traceable(x)
    t = type_of(x)
    if t.dtype.kind not in "fc":
        x = convert(x, dtypes.float64)
    if axis is None:
        res = _vector_norm(sh.ravel(x), ord, 0, False)
        return sh.reshape(res, (1,) * t.ndim) if keepdims else res
    axes = (axis,) if not isinstance(axis, tuple) else axis
    axes = tuple(normalize_axis(a, t.ndim, "vector_norm") for a in axes)
    rest = [a for a in range(t.ndim) if a not in axes]
    moved = sh.transpose(x, tuple(rest) + axes)
    flat = sh.reshape(moved, tuple(t.shape[a] for a in rest) + (-1,))
    res = _vector_norm(flat, ord, len(rest), False)
    if keepdims:
        res = sh.reshape(res, tuple(1 if a in axes else t.shape[a] for a in range(t.ndim)))
    return res


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """The matrix norm of the last two axes."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# ---------------------------------------------------------------------------------------------
# cond, matrix_rank, pinv, lstsq

@implements(np.linalg.cond)
def cond(x, p=None):
    """The condition number; inf for a singular matrix (NaN only if ``x`` holds NaN)."""
    (x,) = matrices("cond", x, square=p not in (None, 2, -2))
    if p is None or p in (2, -2):
        s = svdvals(x)
        big, small = r.max(s, axis=-1), r.min(s, axis=-1)
        res = m.true_divide(small, big) if p == -2 else m.true_divide(big, small)
    else:
        t = type_of(x)
        eye = sh.broadcast_to(np.eye(t.shape[-1], dtype=t.dtype), t.shape)
        x_inv = la.solve(x, eye)                # NaN where singular (no error, as NumPy)
        res = m.multiply(norm(x, p, axis=(-2, -1)), norm(x_inv, p, axis=(-2, -1)))
    has_nan = r.any(m.isnan(x), axis=(-2, -1))
    return where(m.logical_and(m.isnan(res), m.logical_not(has_nan)), np.inf, res)


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """The number of singular values above ``tol`` (default ``max(M, N) * eps * max(S)``)."""
    if rtol is not None and tol is not None:
        raise ValueError("`tol` and `rtol` can't be both set.")
    A = as_traceable(A)
    if type_of(A).ndim < 2:
        return convert(m.logical_not(r.all(m.equal(A, 0))), dtypes.int64)
    s = svdvals(A)
    if tol is None:
        if rtol is None:
            rtol = max(type_of(A).shape[-2:]) * np.finfo(type_of(s).dtype).eps
        else:
            rtol = sh.expand_dims(as_traceable(rtol), -1)
        tol = m.multiply(r.max(s, axis=-1, keepdims=True), rtol)
    else:
        tol = sh.expand_dims(as_traceable(tol), -1)
    return r.sum(convert(m.greater(s, tol), dtypes.int64), axis=-1)


def _pinv_of(a, rcond):
    """V diag(1/s, 0 where s <= rcond * max(s)) U^H."""
    u, s, vh = svd(a, full_matrices=False)
    cutoff = m.multiply(sh.expand_dims(rcond, -1), r.max(s, axis=-1, keepdims=True))
    large = m.greater(s, cutoff)
    s_inv = where(large, m.true_divide(1.0, where(large, s, 1.0)), 0.0)
    return la.mm(la.scale_cols(la.mH(vh), s_inv), la.mH(u))


_NO_VALUE = np._NoValue


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
    """The Moore-Penrose pseudo-inverse from the SVD (``hermitian`` changes nothing on tracers:
    the pseudo-inverse is unique)."""
    (a,) = matrices("pinv", a, square=False)
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(type_of(a).shape[-2:]) * np.finfo(type_of(a).dtype).eps
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    rcond = as_traceable(rcond)
    return _pinv_of(a, convert(rcond, dtypes.real_dtype(type_of(a).dtype)))


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """``(x, residuals, rank, s)`` for 2-D ``a``: the minimum-norm least-squares solution from
    the SVD (as LAPACK gelsd). ``residuals`` has the shape NumPy gives a full-rank ``a``
    ((K,) or (1,) when M > N, else empty); for a rank-deficient ``a`` with M > N, where NumPy
    returns an empty array (a size known only at run time), they are NaN."""
    a, b = inexact_operands(a, b)
    ta, tb = type_of(a), type_of(b)
    vector = tb.ndim == 1
    if ta.ndim != 2 or tb.ndim not in (1, 2):
        raise LinAlgError(f"{max(ta.ndim, tb.ndim)}-dimensional array given. Array must be "
                          f"two-dimensional")
    b2 = sh.reshape(b, (tb.shape[0], 1)) if vector else b
    mm_, n = ta.shape
    if type_of(b2).shape[0] != mm_:
        raise LinAlgError("Incompatible dimensions")
    real = dtypes.real_dtype(ta.dtype)
    if rcond is None:
        rcond = np.finfo(real).eps * max(mm_, n)
    u, s, vh = svd(a, full_matrices=False)
    cutoff = m.multiply(rcond, r.max(s, axis=-1, keepdims=True)) if min(mm_, n) else 0.0
    large = m.greater(s, cutoff)
    rank = convert(r.sum(convert(large, dtypes.int64)), dtypes.int32)     # LAPACK's int, as NumPy
    s_inv = where(large, m.true_divide(1.0, where(large, s, 1.0)), 0.0)
    x = la.mm(la.scale_cols(la.mH(vh), s_inv), la.mm(la.mH(u), b2))
    if mm_ > n:
        resid = r.sum(_abs_sq(m.subtract(b2, la.mm(a, x))), axis=0)
        resid = where(m.equal(rank, n), resid, np.nan)
    else:
        resid = np.zeros((0,), real)
    return (sh.reshape(x, (n,)) if vector else x), resid, rank, s


# ---------------------------------------------------------------------------------------------
# products of several matrices

@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring (``n < 0``: of ``inv(a)``)."""
    try:
        n = int(n) if isinstance(n, (int, np.integer)) else n.__index__()
    except AttributeError:
        raise TypeError("exponent must be an integer") from None
    a = as_traceable(a)
    t = type_of(a)
    if t.ndim < 2:
        raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least "
                          f"two-dimensional")
    if t.shape[-1] != t.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")
    if n == 0:
        from .creation import zeros_like       # a traced identity of a's dtype
        return m.add(zeros_like(a), sh.broadcast_to(np.eye(t.shape[-1], dtype=t.dtype), t.shape))
    if n < 0:
        a, n = inv(a), -n
    result, power = None, a
    while True:
        if n & 1:
            result = power if result is None else matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = matmul(power, power)


def _chain_order(shapes):
    """NumPy's multi_dot order: the cheapest parenthesisation (dynamic programming)."""
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    k = len(shapes)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = np.inf
            for c in range(i, j):
                q = cost[i][c] + cost[c + 1][j] + dims[i] * dims[c + 1] * dims[j + 1]
                if q < cost[i][j]:
                    cost[i][j], split[i][j] = q, c
    return split


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    """The product of several matrices in the cheapest order (first/last may be 1-D)."""
    if out is not None:
        raise UnsupportedError("numpy.linalg.multi_dot(..., out=) is not supported on traced "
                               "arrays; assign the result instead")
    arrays = [as_traceable(x) for x in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first_1d, last_1d = type_of(arrays[0]).ndim == 1, type_of(arrays[-1]).ndim == 1
    if first_1d:
        arrays[0] = sh.reshape(arrays[0], (1, -1))
    if last_1d:
        arrays[-1] = sh.reshape(arrays[-1], (-1, 1))
    for x in arrays:
        if type_of(x).ndim != 2:
            raise LinAlgError(f"{type_of(x).ndim}-dimensional array given. Array must be "
                              f"two-dimensional")
    split = _chain_order([type_of(x).shape for x in arrays])

    def product(i, j):
        if i == j:
            return arrays[i]
        return matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

    res = product(0, len(arrays) - 1)
    if first_1d and last_1d:
        return sh.reshape(res, ())
    if first_1d or last_1d:
        return sh.reshape(res, (-1,))
    return res


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    """Solve ``tensordot(a, x, x.ndim) = b`` for ``x`` (NumPy's reshape to a square system)."""
    a, b = as_traceable(a), as_traceable(b)
    an = type_of(a).ndim
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)
            order.insert(an, k)
        a = sh.transpose(a, tuple(order))
    old = type_of(a).shape[-(an - type_of(b).ndim):]
    prod = int(np.prod(old, dtype=np.int64))
    if type_of(a).size != prod ** 2:
        raise LinAlgError("Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
                          "prod(a.shape[:b.ndim])")
    return sh.reshape(solve(sh.reshape(a, (prod, prod)), sh.ravel(b)), old)


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    """The inverse of ``a`` for ``tensordot(., ., ind)`` (NumPy's reshape to a matrix)."""
    a = as_traceable(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old = type_of(a).shape
    prod = int(np.prod(old[ind:], dtype=np.int64))
    return sh.reshape(inv(sh.reshape(a, (prod, -1))), old[ind:] + old[:ind])


# ---------------------------------------------------------------------------------------------
# numpy.linalg's variants of the products (matrix axes last)

@implements(np.linalg.diagonal)
def diagonal(x, /, *, offset=0):
    """The diagonals of the last two axes."""
    return _diagonal(x, offset, -2, -1)


@implements(np.linalg.trace)
def trace(x, /, *, offset=0, dtype=None):
    """The traces of the last two axes."""
    return _trace(x, offset, -2, -1, dtype)


@implements(np.linalg.outer)
def outer(x1, x2, /):
    """The outer product of two 1-D arrays."""
    if type_of(x1).ndim != 1 or type_of(x2).ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={type_of(x1).ndim} and x2.ndim={type_of(x2).ndim}.")
    return _outer(x1, x2)


@implements(np.linalg.cross)
def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-element vectors."""
    if type_of(x1).shape[axis] != 3 or type_of(x2).shape[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {type_of(x1).shape[axis]} and {type_of(x2).shape[axis]} "
                         f"dimensional instead.")
    return _cross(x1, x2, axis=axis)


@implements(np.linalg.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    """``sum(conj(x1) * x2, axis)`` with broadcasting."""
    x1 = as_traceable(x1)
    if type_of(x1).dtype.kind == "c":
        x1 = m.conj(x1)
    return r.sum(m.multiply(x1, x2), axis=axis)


@implements(np.linalg.matrix_transpose)
def matrix_transpose(x, /):
    """Swap the last two axes."""
    if type_of(x).ndim < 2:
        raise ValueError("Input array must be at least 2-dimensional")
    return sh.swapaxes(x, -1, -2)
