"""Linear-algebra primitives: cholesky, triangular_solve, solve, slogdet (eigh, svd, qr are in
``spectral.py``); every ``numpy.linalg`` function is a composite of these (tracejit/numpy).

Invariants shared by every primitive here and in ``spectral.py``:
- Operands are float32/64 or complex64/128 stacks of matrices ``(..., m, n)``; the leading
  (batch) dims of two operands are equal (the NumPy layer broadcasts them first). Results have
  the operand's dtype (real parts such as eigenvalues and singular values: its real dtype).
- The NumPy implementation never raises for run-time values: where LAPACK fails (a singular
  matrix in ``solve``, one not positive definite in ``cholesky``) that matrix's result is NaN
  and a bool flag output (one per matrix) is True. The NumPy layer turns the flag into NumPy's
  ``LinAlgError`` with ``check_p``, on every backend (a primitive stays total, so vmap and the
  derivative rules never meet an exception).
- A Hermitian operand (``cholesky``, ``eigh``) is read from one triangle, as LAPACK does (and the
  real part of its diagonal): the derivative is the derivative of that function, i.e. with
  respect to the triangle read. On a Hermitian tangent it equals JAX's and autograd's
  symmetrised rule; it also matches finite differences in any direction.
- Rules are written with primitives (``ad_util`` helpers and these primitives), so they
  differentiate again to any order; jvp rules of non-linear operands are built from linear
  primitives whose transposes exist, which gives reverse mode.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type
from .. import ad_util as ad


# ---------------------------------------------------------------------------------------------
# shape rules and rule helpers (also used by spectral.py)

def check_matrix(name, t: Type, square=True):
    """Refuse what no LAPACK routine takes: integer/bool dtypes, < 2 dims, non-square."""
    if t.dtype.kind not in "fc":
        raise DTypeError(f"{name}: needs a float or complex matrix, got {t.dtype} (the NumPy "
                         f"layer converts integers to float64 first)")
    if t.ndim < 2:
        raise ShapeError(f"{name}: {t.ndim}-dimensional array given; the array must be at "
                         f"least two-dimensional")
    if square and t.shape[-1] != t.shape[-2]:
        raise ShapeError(f"{name}: last 2 dimensions of the array must be square, got "
                         f"{t.shape}")


def _check_rhs(name, a: Type, b: Type):
    if b.dtype != a.dtype:
        raise DTypeError(f"{name}: operand dtypes {a.dtype} and {b.dtype} differ")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"{name}: right-hand side {b.shape} does not fit the matrices "
                         f"{a.shape} (wanted {a.shape[:-1]} + (k,))")


def mT(x):
    """Swap the last two axes."""
    nd = ad.ty(x).ndim
    return ad.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def conj(x):
    return ad.unary("conj", x) if ad.ty(x).dtype.kind == "c" else x


def mH(x):
    """Conjugate transpose of the last two axes."""
    return conj(mT(x))


def mm(a, b):
    """Batched matrix product of (..., m, k) and (..., k, n) with equal batch dims."""
    nd = ad.ty(a).ndim
    batch = tuple(range(nd - 2))
    return ad.dot_general(a, b, ((nd - 1,), (nd - 2,)), (batch, batch))


def _pattern(x, pattern):
    """A (m, n) bool constant broadcast to ``x``'s shape."""
    t = ad.ty(x)
    return ad.broadcast_in_dim(np.asarray(pattern), t.shape, (t.ndim - 2, t.ndim - 1))


def tril(x, k=0):
    """``np.tril`` of the last two axes, by a select (keeps the rest exactly 0, never NaN)."""
    m, n = ad.ty(x).shape[-2:]
    return ad.select(_pattern(x, np.tri(m, n, k, dtype=bool)), x, 0)


def triu(x, k=0):
    m, n = ad.ty(x).shape[-2:]
    return ad.select(_pattern(x, ~np.tri(m, n, k - 1, dtype=bool)), x, 0)


def diag_part(x):
    """The main diagonals of a stack of square matrices: (..., n)."""
    n = ad.ty(x).shape[-1]
    return ad.reduce_sum(ad.select(_pattern(x, np.eye(n, dtype=bool)), x, 0),
                         (ad.ty(x).ndim - 1,))


def diag_embed(v):
    """Square matrices (..., n, n) with ``v`` (..., n) on their diagonals."""
    t = ad.ty(v)
    n = t.shape[-1]
    shape = t.shape + (n,)
    wide = ad.broadcast_in_dim(v, shape, tuple(range(t.ndim - 1)) + (t.ndim,))
    return ad.select(_pattern(wide, np.eye(n, dtype=bool)), wide, 0)


def row(v):
    """(..., n) -> (..., 1, n), to scale the columns of a matrix."""
    t = ad.ty(v)
    return ad.broadcast_in_dim(v, t.shape[:-1] + (1, t.shape[-1]),
                               tuple(range(t.ndim - 1)) + (t.ndim,))


def scale_cols(x, v):
    """``x * v[..., None, :]`` (v of x's dtype or its real dtype)."""
    v = ad.convert(v, ad.ty(x).dtype)
    return ad.mul(x, ad.broadcast_in_dim(row(v), ad.ty(x).shape, tuple(range(ad.ty(x).ndim))))


def scale_rows(x, v):
    """``x * v[..., :, None]``."""
    t, vt = ad.ty(x), ad.ty(v)
    v = ad.convert(v, t.dtype)
    return ad.mul(x, ad.broadcast_in_dim(v, t.shape, tuple(range(vt.ndim))))


def hermitian_from(x, lower=True):
    """The Hermitian matrix LAPACK sees when it reads triangle ``lower`` of ``x``: that
    triangle, its conjugate mirrored, and the real part of the diagonal."""
    strict = tril(x, -1) if lower else triu(x, 1)
    d = diag_part(x)
    return ad.add(ad.add(strict, mH(strict)), diag_embed(ad.convert(ad.real_part(d),
                                                                     ad.ty(x).dtype)))


def batch_leading(prim):
    """The batching rule of a primitive that is batched over leading dims: put the batch axis
    first on every operand (broadcasting unbatched ones) and bind."""
    def rule(args, dims, B, **params):
        ops = [x if d == 0 else
               ad.broadcast_in_dim(x, (B,) + ad.ty(x).shape, tuple(range(1, ad.ty(x).ndim + 1)))
               for x, d in zip(args, dims)]
        out = prim.bind(*ops, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    prim.batch = rule


def each_matrix(fn, a, out_specs):
    """Run ``fn(matrix) -> tuple of arrays`` over the batch of ``a`` when the batched LAPACK call
    failed: a matrix whose ``fn`` raises LinAlgError gets NaN results and a True flag. Returns
    the stacked results and the flags."""
    batch = a.shape[:-2]
    outs = [np.empty(batch + shape, dt) for shape, dt in out_specs]
    bad = np.zeros(batch, bool)
    for idx in np.ndindex(*batch):
        try:
            res = fn(a[idx])
        except np.linalg.LinAlgError:
            bad[idx] = True
            res = [np.full(shape, np.nan, dt) for shape, dt in out_specs]
        for o, r in zip(outs, res):
            o[idx] = r
    return outs, bad


# ---------------------------------------------------------------------------------------------
# cholesky: (L, failed) with A = L L^H, L lower with a positive real diagonal

def _cholesky_shape(a):
    check_matrix("cholesky", a)
    return [Type(a.dtype, a.shape), Type(dtypes.bool_, a.shape[:-2])]


def _cholesky_impl(a):
    a = np.asarray(a)
    try:
        return [np.linalg.cholesky(a), np.zeros(a.shape[:-2], bool)]
    except np.linalg.LinAlgError:
        (L,), bad = each_matrix(lambda m: [np.linalg.cholesky(m)], a, [(a.shape[-2:], a.dtype)])
        return [L, bad]


cholesky_p = Primitive("cholesky", "other", _cholesky_shape, _cholesky_impl,
                       multiple_results=True)


def _cholesky_jvp(primals, tangents):
    """L_dot = L Phi(L^-1 A_dot L^-H), Phi: the lower triangle with half the diagonal."""
    (a,), (a_dot,) = primals, tangents
    L, bad = cholesky_p.bind(a)
    sym = hermitian_from(a_dot)
    x = triangular_solve(L, mH(triangular_solve(L, sym, lower=True)), lower=True)
    phi = ad.add(tril(x, -1), ad.mul(diag_embed(diag_part(x)), 0.5))
    return [L, bad], [mm(L, phi), ad.Zero(ad.ty(bad))]


cholesky_p.jvp = _cholesky_jvp
batch_leading(cholesky_p)


# ---------------------------------------------------------------------------------------------
# triangular_solve: X = op(A)^-1 B, op(A) = A, A^T, conj(A) or A^H, reading one triangle of A

def _trsv_shape(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    check_matrix("triangular_solve", a)
    _check_rhs("triangular_solve", a, b)
    return Type(b.dtype, b.shape)


def _op(a, transpose_a, conjugate_a):
    a = np.conj(a) if conjugate_a and a.dtype.kind == "c" else a
    return np.swapaxes(a, -1, -2) if transpose_a else a


def _trsv_impl(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    """Substitution, one row at a time over the whole batch (BLAS trsm semantics: a zero on the
    diagonal gives inf/NaN, nothing raises)."""
    a, b = np.asarray(a), np.asarray(b)
    n = a.shape[-1]
    keep = np.tri(n, n, -1 if unit_diagonal else 0, dtype=bool)
    a = np.where(keep if lower else keep.T, a, 0)
    if unit_diagonal:
        a = a + np.eye(n, dtype=a.dtype)
    m = _op(a, transpose_a, conjugate_a)
    forward = lower != bool(transpose_a)           # op(A) is lower triangular
    x = np.zeros(b.shape, b.dtype)
    with np.errstate(all="ignore"):
        for i in (range(n) if forward else range(n - 1, -1, -1)):
            r = b[..., i, :] - (m[..., i:i + 1, :] @ x)[..., 0, :]
            x[..., i, :] = r / m[..., i, i, None]
    return x


triangular_solve_p = Primitive("triangular_solve", "other", _trsv_shape, _trsv_impl)


def triangular_solve(a, b, *, lower, transpose_a=False, conjugate_a=False, unit_diagonal=False):
    """``op(A)^-1 B`` for (..., n, n) ``a`` and (..., n, k) ``b`` (equal batch dims)."""
    return triangular_solve_p.bind(a, b, lower=bool(lower), transpose_a=bool(transpose_a),
                                   conjugate_a=bool(conjugate_a),
                                   unit_diagonal=bool(unit_diagonal))


def _trsv_jvp(primals, tangents, **p):
    """X_dot = op(A)^-1 (B_dot - op(A_dot) X), A_dot restricted to the triangle read."""
    (a, b), (a_dot, b_dot) = primals, tangents
    x = triangular_solve_p.bind(a, b, **p)
    rhs = None if ad.is_zero(b_dot) else b_dot
    if not ad.is_zero(a_dot):
        k = -1 if p["unit_diagonal"] else 0
        da = tril(a_dot, k) if p["lower"] else triu(a_dot, -k)
        da = conj(da) if p["conjugate_a"] else da
        da = mT(da) if p["transpose_a"] else da
        prod = mm(da, x)
        rhs = ad.neg(prod) if rhs is None else ad.sub(rhs, prod)
    return x, triangular_solve_p.bind(a, rhs, **p)


def _trsv_transpose(ct, a, b, **p):
    """Linear in ``b``: the transpose of op(A)^-1 is op(A)^-T (plain transpose, as JAX)."""
    assert not ad.is_undefined(a), "triangular_solve is linear in b only"
    if ad.is_zero(ct):
        return [None, ad.Zero(b.ty)]
    return [None, triangular_solve_p.bind(a, ct, **dict(p, transpose_a=not p["transpose_a"]))]


triangular_solve_p.jvp = _trsv_jvp
triangular_solve_p.transpose = _trsv_transpose
batch_leading(triangular_solve_p)


# ---------------------------------------------------------------------------------------------
# solve: (X, singular) with op(A) X = B, op(A) = A or A^T (LAPACK gesv: LU, partial pivoting)

def _solve_shape(a, b, *, transpose_a):
    check_matrix("solve", a)
    _check_rhs("solve", a, b)
    return [Type(b.dtype, b.shape), Type(dtypes.bool_, a.shape[:-2])]


def _solve_impl(a, b, *, transpose_a):
    a, b = np.asarray(a), np.asarray(b)
    a = np.swapaxes(a, -1, -2) if transpose_a else a
    try:
        return [np.linalg.solve(a, b), np.zeros(a.shape[:-2], bool)]
    except np.linalg.LinAlgError:
        batch = a.shape[:-2]
        (x,), bad = each_matrix(lambda m: [np.linalg.solve(m[0], m[1])],
                                _Pairs(a, b), [(b.shape[-2:], b.dtype)])
        return [x.reshape(batch + b.shape[-2:]), bad]


class _Pairs:
    """(A, B) indexed together by a batch index, for ``each_matrix``."""

    def __init__(self, a, b):
        self.a, self.b, self.shape = a, b, a.shape

    def __getitem__(self, idx):
        return self.a[idx], self.b[idx]


solve_p = Primitive("solve", "other", _solve_shape, _solve_impl, multiple_results=True)


def solve(a, b, transpose_a=False):
    """``op(A)^-1 B`` (the singular flag dropped: NaN where LAPACK found a zero pivot)."""
    return solve_p.bind(a, b, transpose_a=bool(transpose_a))[0]


def _solve_jvp(primals, tangents, *, transpose_a):
    (a, b), (a_dot, b_dot) = primals, tangents
    x, bad = solve_p.bind(a, b, transpose_a=transpose_a)
    rhs = None if ad.is_zero(b_dot) else b_dot
    if not ad.is_zero(a_dot):
        prod = mm(mT(a_dot) if transpose_a else a_dot, x)
        rhs = ad.neg(prod) if rhs is None else ad.sub(rhs, prod)
    return [x, bad], [solve(a, rhs, transpose_a), ad.Zero(ad.ty(bad))]


def _solve_transpose(cts, a, b, *, transpose_a):
    assert not ad.is_undefined(a), "solve is linear in b only"
    ct = cts[0]
    if ad.is_zero(ct):
        return [None, ad.Zero(b.ty)]
    return [None, solve(a, ct, not transpose_a)]


solve_p.jvp = _solve_jvp
solve_p.transpose = _solve_transpose
batch_leading(solve_p)


# ---------------------------------------------------------------------------------------------
# slogdet: (sign, log|det A|); det is the composite sign * exp(logabsdet)

def _slogdet_shape(a):
    check_matrix("slogdet", a)
    return [Type(a.dtype, a.shape[:-2]), Type(dtypes.real_dtype(a.dtype), a.shape[:-2])]


def _slogdet_impl(a):
    sign, logdet = np.linalg.slogdet(np.asarray(a))
    return [np.asarray(sign), np.asarray(logdet)]


slogdet_p = Primitive("slogdet", "other", _slogdet_shape, _slogdet_impl, multiple_results=True)


def _slogdet_jvp(primals, tangents):
    """d log det A = tr(A^-1 A_dot): its real part moves log|det|, its imaginary part turns
    the sign of a complex determinant (a real sign is piecewise constant)."""
    (a,), (a_dot,) = primals, tangents
    sign, logdet = slogdet_p.bind(a)
    t = ad.reduce_sum(diag_part(solve(a, a_dot)), (ad.ty(a).ndim - 2,))
    if ad.ty(a).dtype.kind != "c":
        return [sign, logdet], [ad.Zero(ad.ty(sign)), t]
    dsign = ad.mul(sign, ad.mul(ad.convert(ad.unary("imag", t), ad.ty(a).dtype), 1j))
    return [sign, logdet], [dsign, ad.real_part(t)]


slogdet_p.jvp = _slogdet_jvp
batch_leading(slogdet_p)
