"""Decomposition primitives: eigh, svd, qr, eig (the invariants are those of ``linalg.py``).

Derivative conventions (the standard ones, as JAX's ``lax/linalg.py``):
- eigh: ``w_dot = Re diag(V^H A_dot V)``, ``V_dot = V (F * (V^H A_dot V))`` with
  ``F_ij = 1 / (w_j - w_i)`` off the diagonal and 0 on it, so ``V^H V_dot`` has a zero diagonal
  (for complex V the gauge-invariant choice: functions that do not depend on the eigenvectors'
  phases get the right derivative). Where two eigenvalues are exactly equal ``F_ij`` is taken
  as 0: results stay finite (no NaN), and are exact when the tangent does not split them
  (``(V^H A_dot V)_ij = 0`` for that pair); otherwise the eigenvectors are not differentiable
  there.
- svd: the reduced-SVD rule with the same zero-for-equal-values convention for ``1/(s_j^2 -
  s_i^2)`` and ``1/s_i``; ``full_matrices=True`` of a non-square matrix has no unique
  derivative of the extra columns and is refused (``compute_uv=False`` is always fine).
- qr: Q and R of a matrix with m >= n (reduced mode, or complete/r when square or R only).
- eig: eigenvalues and eigenvectors (complex), see ``_eig_jvp``; equal eigenvalues as eigh.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive
from ..errors import UnsupportedError
from ..ir import Type
from .. import ad_util as ad
from .linalg import (batch_leading, check_matrix, conj, diag_embed, diag_part, hermitian_from,
                     mH, mm, mT, row, scale_cols, solve, tril, triangular_solve)


def _rows(v, n):
    """(..., k) -> (..., n, k): v_j at [..., i, j]."""
    t = ad.ty(v)
    return ad.broadcast_in_dim(row(v), t.shape[:-1] + (n, t.shape[-1]), tuple(range(t.ndim + 1)))


def _safe_inverse(x):
    """1 / x, and 0 where x == 0 (no inf is ever formed, so no NaN reaches any derivative)."""
    zero = ad.eq(x, 0)
    return ad.select(zero, 0, ad.div(1, ad.select(zero, 1, x)))


# ---------------------------------------------------------------------------------------------
# eigh: (w ascending, V) of the Hermitian matrix read from one triangle

def _eigh_shape(a, *, lower):
    check_matrix("eigh", a)
    return [Type(dtypes.real_dtype(a.dtype), a.shape[:-1]), Type(a.dtype, a.shape)]


def _eigh_impl(a, *, lower):
    w, v = np.linalg.eigh(np.asarray(a), UPLO="L" if lower else "U")
    return [w, v]


eigh_p = Primitive("eigh", "other", _eigh_shape, _eigh_impl, multiple_results=True)


def _eigh_jvp(primals, tangents, *, lower):
    (a,), (a_dot,) = primals, tangents
    w, v = eigh_p.bind(a, lower=lower)
    n = ad.ty(a).shape[-1]
    vav = mm(mH(v), mm(hermitian_from(a_dot, lower), v))
    w_dot = ad.real_part(diag_part(vav))
    w_j = _rows(w, n)
    f = _safe_inverse(ad.sub(w_j, mT(w_j)))                  # 1 / (w_j - w_i)
    v_dot = mm(v, ad.mul(vav, ad.convert(f, ad.ty(a).dtype)))
    return [w, v], [w_dot, v_dot]


eigh_p.jvp = _eigh_jvp
batch_leading(eigh_p)


# ---------------------------------------------------------------------------------------------
# svd: [U, s, Vh] (compute_uv) or [s], s descending

def _svd_shape(a, *, full_matrices, compute_uv):
    check_matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    s = Type(dtypes.real_dtype(a.dtype), batch + (k,))
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices else (k, k)
    return [Type(a.dtype, batch + (m, um)), s, Type(a.dtype, batch + (vn, n))]


def _svd_impl(a, *, full_matrices, compute_uv):
    out = np.linalg.svd(np.asarray(a), full_matrices=full_matrices, compute_uv=compute_uv)
    return list(out) if compute_uv else [out]


svd_p = Primitive("svd", "other", _svd_shape, _svd_impl, multiple_results=True)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    (a,), (a_dot,) = primals, tangents
    m, n = ad.ty(a).shape[-2:]
    outs = svd_p.bind(a, full_matrices=full_matrices, compute_uv=compute_uv)
    if compute_uv and full_matrices and m != n:
        raise UnsupportedError(
            f"the derivative of svd(full_matrices=True) of a non-square {m}x{n} matrix is not "
            f"unique (the extra singular vectors can rotate freely); use full_matrices=False")
    u, s, vh = svd_p.bind(a, full_matrices=False, compute_uv=True)
    dt = ad.ty(a).dtype
    ut, v = mH(u), mH(vh)
    ds_mat = mm(ut, mm(a_dot, v))
    ds = ad.real_part(diag_part(ds_mat))
    if not compute_uv:
        return outs, [ds]
    k = min(m, n)
    s_j = _rows(s, k)
    s_i = mT(s_j)
    f = ad.convert(_safe_inverse(ad.mul(ad.add(s_j, s_i), ad.sub(s_j, s_i))), dt)
    dss = scale_cols(ds_mat, s)                               # dS_ij s_j
    sds = ad.mul(ds_mat, ad.convert(s_i, dt))                 # s_i dS_ij
    s_inv = _safe_inverse(s)
    gauge = ad.mul(diag_embed(ad.convert(s_inv, dt)), ad.mul(ad.sub(ds_mat, mH(ds_mat)), 0.5))
    du = mm(u, ad.add(ad.mul(f, ad.add(dss, mH(dss))), gauge))
    dv = mm(v, ad.mul(f, ad.add(sds, mH(sds))))
    if m > n:
        dav = mm(a_dot, v)
        du = ad.add(du, scale_cols(ad.sub(dav, mm(u, mm(ut, dav))), s_inv))
    if n > m:
        dahu = mm(mH(a_dot), u)
        dv = ad.add(dv, scale_cols(ad.sub(dahu, mm(v, mm(vh, dahu))), s_inv))
    return [u, s, vh], [du, ds, mH(dv)]


svd_p.jvp = _svd_jvp
batch_leading(svd_p)


# ---------------------------------------------------------------------------------------------
# qr: [Q, R] (mode 'reduced' or 'complete') or [R] (mode 'r'), Householder (LAPACK geqrf)

def _qr_shape(a, *, mode):
    check_matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k, batch = min(m, n), a.shape[:-2]
    qc = m if mode == "complete" else k
    r = Type(a.dtype, batch + (qc, n))
    return [r] if mode == "r" else [Type(a.dtype, batch + (m, qc)), r]


def _qr_impl(a, *, mode):
    a = np.asarray(a)
    if mode == "r":
        return [np.linalg.qr(a, mode="reduced")[1]]      # mode='r' of a stack is the same R
    return list(np.linalg.qr(a, mode=mode))


qr_p = Primitive("qr", "other", _qr_shape, _qr_impl, multiple_results=True)


def _qr_jvp(primals, tangents, *, mode):
    """dQ = Q (dO - C) + dA R^-1, dR = (C - dO) R with C = Q^H dA R^-1 and dO the skew-Hermitian
    matrix from C's strict lower triangle (plus i Im diag(C) for complex inputs)."""
    (a,), (a_dot,) = primals, tangents
    m, n = ad.ty(a).shape[-2:]
    if m < n or (mode == "complete" and m != n):
        raise UnsupportedError(
            f"the derivative of qr of a {m}x{n} matrix (mode={mode!r}) is only defined here for "
            f"m >= n in reduced mode (or a square matrix); Q is not a smooth function of the "
            f"input otherwise")
    q, r = qr_p.bind(a, mode="reduced")
    dt = ad.ty(a).dtype
    da_rinv = mT(triangular_solve(r, mT(a_dot), lower=False, transpose_a=True))
    c = mm(mH(q), da_rinv)
    low = tril(c, -1)
    d_o = ad.sub(low, mH(low))
    if dt.kind == "c":
        im = ad.convert(ad.unary("imag", diag_part(c)), dt)
        d_o = ad.add(d_o, diag_embed(ad.mul(im, 1j)))
    dq = ad.add(mm(q, ad.sub(d_o, c)), da_rinv)
    dr = mm(ad.sub(c, d_o), r)
    return ([r] if mode == "r" else [q, r]), ([dr] if mode == "r" else [dq, dr])


qr_p.jvp = _qr_jvp
batch_leading(qr_p)


# ---------------------------------------------------------------------------------------------
# eig: (w, V) complex, A V = V diag(w), columns of unit 2-norm (LAPACK geev)

def _eig_shape(a):
    check_matrix("eig", a)
    dt = dtypes.complex_dtype(a.dtype)
    return [Type(dt, a.shape[:-1]), Type(dt, a.shape)]


def _eig_impl(a):
    a = np.asarray(a)
    w, v = np.linalg.eig(a)
    dt = dtypes.complex_dtype(a.dtype)
    return [np.asarray(w, dt), np.asarray(v, dt)]


eig_p = Primitive("eig", "other", _eig_shape, _eig_impl, multiple_results=True)


def _eig_jvp(primals, tangents):
    """With C = V^-1 A_dot V: w_dot = diag(C), V_dot = V (F * C) with F_ij = 1/(w_j - w_i)
    (0 on the diagonal and for equal eigenvalues), minus the part that would change each
    column's norm (``Re(v_j^H v_j_dot) = 0``). The phase of each column is a free gauge (LAPACK
    makes its largest component real); functions that do not depend on it (``V diag(f(w))
    V^-1``, ``abs(V)``) get the right derivative."""
    (a,), (a_dot,) = primals, tangents
    w, v = eig_p.bind(a)
    dt = ad.ty(w).dtype
    n = ad.ty(a).shape[-1]
    c = solve(v, mm(ad.convert(a_dot, dt), v))
    w_j = _rows(w, n)
    raw = mm(v, ad.mul(c, _safe_inverse(ad.sub(w_j, mT(w_j)))))
    along = ad.real_part(ad.reduce_sum(ad.mul(conj(v), raw), (ad.ty(v).ndim - 2,)))
    return [w, v], [diag_part(c), ad.sub(raw, scale_cols(v, along))]


eig_p.jvp = _eig_jvp
batch_leading(eig_p)
