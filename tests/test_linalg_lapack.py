"""The linalg primitives on llvm call numpy's LAPACK from native code (backend/emit/lapack.py):
no NumPy fallback in any plan, values equal to the interpreter's (NumPy's, the oracle) on random
inputs (batched, complex, float32, singular), eigen/singular vectors compared through
gauge-invariant quantities, and NumPy's LinAlgError where LAPACK fails."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import interpret
from tracejit.backend import compile_graph
from tracejit.backend.matmul import lapack
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.ops import linalg as la
from tracejit.ops import spectral as sp
from tracejit.test_util import using_config

from test_linalg import _randn, spd as _spd

pytestmark = pytest.mark.skipif(not lapack.available(),
                                reason="numpy's BLAS exports no LAPACKE (no native LAPACK)")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
IDS = ["f32", "f64", "c64", "c128"]
TOL = {np.float32: 1e-5, np.complex64: 1e-5, np.float64: 1e-12, np.complex128: 1e-12}


def _native(fn, *args):
    """(graph, executable) of ``fn`` on ``args``: asserts one native kernel calling LAPACK."""
    graph, _ = make_graph(fn, [Type(np.dtype(a.dtype), a.shape) for a in args])
    exe = compile_graph(graph)
    text = exe.describe()
    assert exe.native and "(fallback)" not in text and "(LAPACK" in text, text
    return graph, exe


def _close(got, want, dtype, scale=1.0):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(got, want, rtol=tol,
                               atol=tol * max(1.0, np.abs(want[np.isfinite(want)]).max(initial=0)))


def _run(fn, *args):
    graph, exe = _native(fn, *args)
    with np.errstate(all="ignore"):
        return exe(list(args)), interpret.run(graph, list(args))


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_cholesky(dtype):
    rng = np.random.default_rng(1)
    a = _spd(rng, (2, 3, 40, 40), dtype)
    a[..., 0, -1] = np.nan                     # the upper triangle is never read
    a[1, 2] = -a[1, 2]                         # not positive definite: flag, NaN
    (L, bad), (L_ref, bad_ref) = _run(lambda a: la.cholesky_p.bind(a), a)
    np.testing.assert_array_equal(bad, bad_ref)
    assert bad[1, 2] and bad.sum() == 1 and np.isnan(L[1, 2]).all()
    _close(L, L_ref, dtype)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_solve(dtype, transpose_a):
    rng = np.random.default_rng(2)
    a = _randn(rng, (3, 90, 90), dtype)        # no diagonal boost: pivoting matters
    a[1] = np.outer(a[1, :, 0], np.arange(90))  # rank one: singular
    b = _randn(rng, (3, 90, 4), dtype)
    (x, bad), (x_ref, bad_ref) = _run(
        lambda a, b: la.solve_p.bind(a, b, transpose_a=transpose_a), a, b)
    np.testing.assert_array_equal(bad, bad_ref)
    assert list(bad) == [False, True, False] and np.isnan(x[1]).all()
    _close(x, x_ref, dtype, scale=1e3)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_slogdet(dtype):
    rng = np.random.default_rng(3)
    a = _randn(rng, (4, 12, 12), dtype)
    a[2, 3] = 0                                # an exactly singular matrix: sign 0, -inf
    a[3] *= 1e30 if np.dtype(dtype).itemsize >= 16 or dtype == np.float64 else 1e3
    (sign, logdet), (sign_ref, logdet_ref) = _run(lambda a: la.slogdet_p.bind(a), a)
    assert sign[2] == 0 and logdet[2] == -np.inf
    _close(sign, sign_ref, dtype)
    _close(logdet, logdet_ref, dtype)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eigh(dtype, lower):
    rng = np.random.default_rng(4)
    a = _randn(rng, (3, 25, 25), dtype)        # read from one triangle only
    (w, v), (w_ref, v_ref) = _run(lambda a: sp.eigh_p.bind(a, lower=lower), a)
    _close(w, w_ref, dtype, scale=100)
    h = np.tril(a) if lower else np.triu(a)
    d = np.real(np.diagonal(h, axis1=-2, axis2=-1))
    h = h + np.conj(np.swapaxes(h, -1, -2))
    h[..., np.arange(25), np.arange(25)] = d   # the Hermitian matrix LAPACK sees
    rebuilt = (v * w[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    _close(rebuilt, h.astype(dtype), dtype, scale=100)
    # each eigenvector is the interpreter's up to a phase
    overlap = np.abs(np.sum(np.conj(v) * v_ref, axis=-2))
    np.testing.assert_allclose(overlap, 1, atol=TOL[dtype] * 1e3)


@pytest.mark.parametrize("shape", [(2, 30, 18), (18, 30)], ids=["tall", "wide"])
@pytest.mark.parametrize("mode", ["N", "S", "A"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_svd(dtype, mode, shape):
    rng = np.random.default_rng(5)
    a = _randn(rng, shape, dtype)
    outs, refs = _run(lambda a: sp.svd_p.bind(a, full_matrices=mode == "A",
                                              compute_uv=mode != "N"), a)
    s, s_ref = (outs[1], refs[1]) if mode != "N" else (outs[0], refs[0])
    _close(s, s_ref, dtype, scale=100)
    if mode == "N":
        return
    u, _, vh = outs
    k = s.shape[-1]
    _close((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], a, dtype, scale=100)
    for x, x_ref in ((u, refs[0]), (np.conj(np.swapaxes(vh, -1, -2)),
                                    np.conj(np.swapaxes(refs[2], -1, -2)))):
        overlap = np.abs(np.sum(np.conj(x[..., :k]) * x_ref[..., :k], axis=-2))
        np.testing.assert_allclose(overlap, 1, atol=TOL[dtype] * 1e3)
        n = x.shape[-1]
        _close(np.conj(np.swapaxes(x, -1, -2)) @ x, np.broadcast_to(np.eye(n), x.shape[:-2] +
                                                                    (n, n)).astype(dtype),
               dtype, scale=100)


@pytest.mark.parametrize("shape", [(2, 30, 18), (18, 30), (20, 20)], ids=["tall", "wide", "sq"])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_qr(dtype, mode, shape):
    rng = np.random.default_rng(6)
    a = _randn(rng, shape, dtype)
    outs, refs = _run(lambda a: sp.qr_p.bind(a, mode=mode), a)
    for got, want in zip(outs, refs):          # Householder QR: the same Q and R as NumPy's
        _close(got, want, dtype, scale=100)
    if mode != "r":
        q, r = outs
        _close(q @ r, a, dtype, scale=100)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_eig(dtype):
    rng = np.random.default_rng(7)
    a = _randn(rng, (3, 16, 16), dtype)        # real ones have complex pairs
    a[1] = np.diag(np.arange(16.0)) + np.triu(a[1], 1)    # real eigenvalues, ones repeated
    a[1, 4, 4] = a[1, 3, 3]
    (w, v), (w_ref, v_ref) = _run(lambda a: sp.eig_p.bind(a), a)
    _close(w, w_ref, dtype, scale=1e3)
    av = a.astype(w.dtype) @ v
    _close(av, v * w[..., None, :], dtype, scale=1e3)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=TOL[dtype] * 10)
    simple = np.ones(w.shape, bool)
    simple[1, 3:5] = False                     # the repeated eigenvalue's vectors are not unique
    overlap = np.abs(np.sum(np.conj(v) * v_ref, axis=-2))[simple]
    np.testing.assert_allclose(overlap, 1, atol=TOL[dtype] * 1e4)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_triangular_solve(dtype):
    rng = np.random.default_rng(8)
    a = _spd(rng, (2, 30, 30), dtype)
    b = _randn(rng, (2, 30, 30), dtype)
    for lower in (True, False):
        for transpose_a, conjugate_a in ((False, False), (True, False), (True, True),
                                         (False, True)):
            for unit in (False, True):
                (x,), (x_ref,) = _run(
                    lambda a, b: [la.triangular_solve_p.bind(
                        a, b, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                        unit_diagonal=unit)], a, b)
                _close(x, x_ref, dtype, scale=1e3)


def _fused(f, *args):
    return tj.jit(f).ir(*args, stage="fused")


NUMPY_FUNCTIONS = {
    "solve": lambda a, b: np.linalg.solve(a, b),
    "inv": lambda a, b: np.linalg.inv(a),
    "det": lambda a, b: np.linalg.det(a),
    "slogdet": lambda a, b: np.linalg.slogdet(a)[1],
    "cholesky": lambda a, b: np.linalg.cholesky(a @ a.conj().T + 30 * np.eye(30)),
    "eigh": lambda a, b: np.linalg.eigh(a + a.conj().T)[0],
    "eigvalsh": lambda a, b: np.linalg.eigvalsh(a),
    "svd": lambda a, b: np.linalg.svd(a)[1],
    "qr": lambda a, b: np.linalg.qr(a)[1],
    "eig": lambda a, b: np.abs(np.linalg.eigvals(a)),
    "pinv": lambda a, b: np.linalg.pinv(a),
    "lstsq": lambda a, b: np.linalg.lstsq(a, b)[0],
    "norm2": lambda a, b: np.linalg.norm(a, 2),
    "solve_triangular": lambda a, b: tj.numpy.linalg.solve_triangular(a, b, lower=True),
}


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize("name", sorted(NUMPY_FUNCTIONS))
def test_numpy_linalg_functions_are_native(name, dtype):
    """Each numpy.linalg function, its values NumPy's, with no NumPy step in its plan."""
    rng = np.random.default_rng(9)
    a = _randn(rng, (30, 30), dtype) + 30 * np.eye(30)
    b = _randn(rng, (30, 2), dtype)
    f = NUMPY_FUNCTIONS[name]
    text = _fused(f, a, b)
    assert "one native kernel" in text and "(fallback)" not in text, text
    got, want = tj.jit(f)(a, b), f(a, b)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.abs(want).max())


def test_derivatives_stay_native():
    """Gradients of functions of each decomposition run without a NumPy step."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal((30, 30)) + 30 * np.eye(30)
    w = rng.standard_normal((30, 30))
    fns = [lambda a: np.linalg.slogdet(a)[1],
           lambda a: np.sum(np.linalg.qr(a)[1]),     # a seed of ones reaches a product
           lambda a: np.sum(w[0] * np.linalg.eigvalsh(a + a.T)),
           lambda a: np.sum(w[0] * np.linalg.svd(a, compute_uv=False)),
           lambda a: np.sum(w * np.linalg.qr(a)[1]),
           lambda a: np.sum(w[0] * np.abs(np.linalg.eigvals(a))),
           lambda a: np.sum(w * np.linalg.cholesky(a @ a.T))]
    for f in fns:
        g = tj.jit(tj.grad(f))
        text = g.ir(a, stage="fused")
        assert "one native kernel" in text and "(fallback)" not in text, text
        with using_config(backend="interpret"):
            want = tj.grad(f)(a)
        np.testing.assert_allclose(g(a), want, rtol=1e-9, atol=1e-9)


def test_inside_a_loop_and_batched_by_vmap():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((40, 40)) + 40 * np.eye(40)

    def f(a, x):
        return tj.fori_loop(0, 3, lambda i, x: np.linalg.solve(a, x), x)
    x = rng.standard_normal(40)
    text = _fused(f, a, x)
    assert "one native kernel" in text and "(fallback)" not in text, text
    np.testing.assert_allclose(tj.jit(f)(a, x),
                               np.linalg.solve(a, np.linalg.solve(a, np.linalg.solve(a, x))),
                               rtol=1e-12)
    stack = rng.standard_normal((5, 12, 12)).astype(np.complex64)
    got = tj.jit(tj.vmap(np.linalg.eigvals))(stack)
    want = np.linalg.eigvals(stack)
    np.testing.assert_allclose(np.sort_complex(got), np.sort_complex(want), rtol=1e-4, atol=1e-4)


def test_lapack_failures_raise_numpys_error():
    bad = np.full((30, 30), np.nan)
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.eig(bad)
    with pytest.raises(np.linalg.LinAlgError):
        tj.jit(np.linalg.eig)(bad)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        tj.jit(np.linalg.cholesky)(-np.eye(30))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.jit(np.linalg.inv)(np.ones((2, 30, 30), np.complex128))
    assert tj.jit(np.linalg.det)(np.ones((30, 30))) == np.linalg.det(np.ones((30, 30)))


def test_gaussian_process_gradient_is_native():
    """The gradient of a GP's negative log-likelihood (bench W14): one native kernel, the
    interpreter's value, finite differences."""
    rng = np.random.default_rng(12)
    n = 40
    x, y = np.sort(rng.uniform(0, 5, n)), rng.standard_normal(n)

    def nll(log_ell):
        k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(2 * log_ell)) + \
            0.1 * np.eye(n)
        L = np.linalg.cholesky(k)
        alpha = tj.numpy.linalg.cho_solve((L, True), y[:, None])[:, 0]
        return 0.5 * y @ alpha + np.sum(np.log(np.diagonal(L)))
    g = tj.jit(tj.grad(nll))
    text = g.ir(0.3, stage="fused")
    assert "one native kernel" in text and "(fallback)" not in text, text
    with using_config(backend="interpret"):
        want = tj.grad(nll)(0.3)
    np.testing.assert_allclose(g(0.3), want, rtol=1e-10)
    fd = (nll(0.3 + 1e-6) - nll(0.3 - 1e-6)) / 2e-6
    np.testing.assert_allclose(g(0.3), fd, rtol=1e-6)
