"""numpy.linalg's solves and decompositions on tracers: solve inv det slogdet cholesky eigh
eigvalsh eig eigvals svd svdvals qr, and SciPy's solve_triangular and cho_solve (composites of the
primitives in ops/linalg.py and ops/spectral.py; linalg.py re-exports them as the
``tracejit.numpy.linalg`` namespace).

Invariants:
- NumPy's dtype rule: bool and integer matrices compute in float64, float32/complex64 stay
  single precision, mixed operands promote.
- NumPy's errors: a bad shape raises ``LinAlgError`` (or NumPy's own error type) while tracing;
  a singular matrix in solve/inv, or one not positive definite in cholesky, raises NumPy's
  ``LinAlgError`` when the compiled function runs (a ``check`` on the primitive's flag, every
  backend), and so does a derivative taken there; derivatives that meet a singular matrix
  inside a rule (``det``'s at a singular matrix) are NaN, never a finite wrong value.
- Results are NumPy's named tuples (``EighResult``, ``SVDResult``, ``QRResult``,
  ``SlogdetResult``) where NumPy returns them.
"""
from __future__ import annotations

import numpy as np
from numpy.linalg import LinAlgError

from .. import dtypes
from ..core import type_of
from ..errors import UnsupportedError
from ..ops import elementwise as ew
from ..ops import linalg as la
from ..ops import spectral as sp
from ._base import as_traceable, convert, implements, result_type

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "eig", "eigvals",
           "svd", "svdvals", "qr", "solve_triangular", "cho_solve"]

_results = np.linalg._linalg       # NumPy's result named tuples live here


def inexact_operands(*xs):
    """The operands as traceable values of one LAPACK dtype (NumPy's ``_commonType``)."""
    xs = [as_traceable(x) for x in xs]
    dt = result_type(*[x for x in xs])[0]
    if dt.kind not in "fc":
        dt = dtypes.float64
    return [convert(x, dt) for x in xs]


def matrices(name, *xs, square=True):
    """``inexact_operands``, after NumPy's shape checks (LinAlgError, as NumPy)."""
    xs = inexact_operands(*xs)
    for x in xs[:1]:
        t = type_of(x)
        if t.ndim < 2:
            raise LinAlgError(f"{t.ndim}-dimensional array given. Array must be at least "
                              f"two-dimensional")
        if square and t.shape[-1] != t.shape[-2]:
            raise LinAlgError("Last 2 dimensions of the array must be square")
    return xs


def _bcast(x, shape):
    from .shape import broadcast_to
    return broadcast_to(x, tuple(shape))


def _checked(bad, x, error):
    """``x``, raising NumPy's LinAlgError at run time if any flag in ``bad`` is set."""
    from .reductions import any as any_
    return ew.check(any_(bad), x, error)


def _rhs(name, a, b):
    """Broadcast the batch dims of ``a`` (..., n, n) and ``b`` (..., n, k) (NumPy 2: ``b`` is
    a vector only when 1-D). Returns (a, b, squeeze)."""
    ta, tb = type_of(a), type_of(b)
    n = ta.shape[-1]
    vector = tb.ndim == 1
    if vector:
        from .shape import reshape
        b = reshape(b, (tb.shape[0], 1))
        tb = type_of(b)
    if tb.ndim < 2 or tb.shape[-2] != n:
        size = tb.shape[-2] if tb.ndim > 1 else tb.shape
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with "
                         f"gufunc signature (m,m),(m,n)->(m,n) (size {size} is different from "
                         f"{n})")
    batch = np.broadcast_shapes(ta.shape[:-2], tb.shape[:-2])
    return _bcast(a, batch + ta.shape[-2:]), _bcast(b, batch + tb.shape[-2:]), vector


@implements(np.linalg.solve)
def solve(a, b):
    """Solve ``a @ x = b`` (LU with partial pivoting, LAPACK gesv)."""
    a, b = matrices("solve", a, b)
    a, b, vector = _rhs("solve", a, b)
    x, bad = la.solve_p.bind(a, b, transpose_a=False)
    x = _checked(bad, x, "singular_matrix")
    if vector:
        from .shape import reshape
        x = reshape(x, type_of(x).shape[:-1])
    return x


@implements(np.linalg.inv)
def inv(a):
    """The inverse, as ``solve(a, identity)``."""
    (a,) = matrices("inv", a)
    t = type_of(a)
    eye = _bcast(np.eye(t.shape[-1], dtype=t.dtype), t.shape)
    x, bad = la.solve_p.bind(a, eye, transpose_a=False)
    return _checked(bad, x, "singular_matrix")


@implements(np.linalg.slogdet)
def slogdet(a):
    """(sign, log|det a|) as NumPy's ``SlogdetResult``."""
    (a,) = matrices("slogdet", a)
    sign, logdet = la.slogdet_p.bind(a)
    return _results.SlogdetResult(sign, logdet)


@implements(np.linalg.det)
def det(a):
    """``sign * exp(logabsdet)`` (0 for a singular matrix; its derivative there is NaN)."""
    from .math import exp, multiply
    (a,) = matrices("det", a)
    sign, logdet = la.slogdet_p.bind(a)
    return multiply(sign, convert(exp(logdet), type_of(a).dtype))


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """Lower factor L (``a = L L^H``, read from the lower triangle), or with ``upper`` the upper
    factor read from the upper triangle, as NumPy."""
    (a,) = matrices("cholesky", a)
    L, bad = la.cholesky_p.bind(la.mH(a) if upper else a)
    L = _checked(bad, L, "not_positive_definite")
    return la.mH(L) if upper else L


def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return UPLO == "L"


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors of the Hermitian matrix in triangle ``UPLO``."""
    (a,) = matrices("eigh", a)
    w, v = sp.eigh_p.bind(a, lower=_uplo(UPLO))
    return _results.EighResult(w, v)


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):
    """Eigenvalues (ascending) of the Hermitian matrix in triangle ``UPLO``."""
    (a,) = matrices("eigvalsh", a)
    return sp.eigh_p.bind(a, lower=_uplo(UPLO))[0]


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``SVDResult(U, S, Vh)`` (or S alone), S descending. ``hermitian=True`` gives the same
    singular values; with ``compute_uv`` it is refused on tracers (NumPy's vectors from eigh
    differ from the general SVD's by signs and order of ties)."""
    (a,) = matrices("svd", a, square=False)
    if hermitian and compute_uv:
        raise UnsupportedError("numpy.linalg.svd(..., hermitian=True) with compute_uv=True is "
                               "not supported on traced arrays; use hermitian=False (the same "
                               "singular values, singular vectors up to sign)")
    outs = sp.svd_p.bind(a, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return _results.SVDResult(*outs) if compute_uv else outs[0]


@implements(np.linalg.svdvals)
def svdvals(x, /):
    """The singular values, descending."""
    return svd(x, compute_uv=False)


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    """``QRResult(Q, R)`` for mode 'reduced' or 'complete', R alone for mode 'r'."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    if mode == "raw":
        raise UnsupportedError("numpy.linalg.qr(mode='raw') (LAPACK's Householder reflectors) "
                               "is not supported on traced arrays; use mode='reduced'")
    (a,) = matrices("qr", a, square=False)
    outs = sp.qr_p.bind(a, mode=mode)
    return outs[0] if mode == "r" else _results.QRResult(*outs)


def _trans(trans):
    codes = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
             2: (True, True), "C": (True, True)}
    if trans not in codes:
        raise ValueError(f"solve_triangular: trans must be 0/'N', 1/'T' or 2/'C', got {trans!r}")
    return codes[trans]


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False):
    """Solve ``op(a) x = b`` for triangular ``a`` (SciPy's ``scipy.linalg.solve_triangular``:
    ``trans`` 0/'N' (a), 1/'T' (a^T), 2/'C' (a^H); only the ``lower`` or upper triangle of
    ``a`` is read, and its diagonal is taken as ones with ``unit_diagonal``). Batched over
    leading dims; ``b`` is (..., n) or (..., n, k). A zero on the diagonal gives inf/NaN."""
    a, b = matrices("solve_triangular", a, b)
    a, b, vector = _rhs("solve_triangular", a, b)
    transpose_a, conjugate_a = _trans(trans)
    x = la.triangular_solve(a, b, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                            unit_diagonal=unit_diagonal)
    return _vector_result(x, vector)


def _vector_result(x, vector):
    if not vector:
        return x
    from .shape import reshape
    return reshape(x, type_of(x).shape[:-1])


def cho_solve(c_and_lower, b):
    """Solve ``a x = b`` given the Cholesky factor of ``a`` (SciPy's ``cho_solve``):
    ``c_and_lower`` is ``(c, lower)``, ``c`` from ``cholesky(a)`` (lower=True) or
    ``cholesky(a, upper=True)`` (lower=False)."""
    c, lower = c_and_lower
    c, b = matrices("cho_solve", c, b)
    c, b, vector = _rhs("cho_solve", c, b)
    if lower:            # L L^H x = b
        y = la.triangular_solve(c, b, lower=True)
        x = la.triangular_solve(c, y, lower=True, transpose_a=True, conjugate_a=True)
    else:                # U^H U x = b
        y = la.triangular_solve(c, b, lower=False, transpose_a=True, conjugate_a=True)
        x = la.triangular_solve(c, y, lower=False)
    return _vector_result(x, vector)


@implements(np.linalg.eig)
def eig(a):
    """``EigResult(eigenvalues, eigenvectors)`` of a general matrix. On tracers the results are
    always complex: NumPy returns real arrays for a real matrix whose eigenvalues all happen to
    be real, a dtype known only at run time (JAX does the same)."""
    (a,) = matrices("eig", a)
    return _results.EigResult(*sp.eig_p.bind(a))


@implements(np.linalg.eigvals)
def eigvals(a):
    """The eigenvalues of a general matrix (complex on tracers, see ``eig``)."""
    (a,) = matrices("eigvals", a)
    return sp.eig_p.bind(a)[0]
