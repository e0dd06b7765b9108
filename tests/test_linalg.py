"""numpy.linalg on tracers: values against NumPy (both backends, f32/f64/c64/c128, batched),
derivatives against finite differences (check_grads order 2, fwd and rev), vmap against a
Python loop, and NumPy's errors (at trace time and at run time)."""
import zlib

import numpy as np
import pytest

import tracejit as tj
from tracejit import interpret
from tracejit.backend import compile_graph
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.numpy import linalg as tla
from tracejit.ops import linalg as la
from tracejit.test_util import check_grads

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
TOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-10, np.complex128: 1e-10}


def _randn(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def general(rng, shape, dtype):
    """Well-conditioned square matrices: random plus n on the diagonal."""
    n = shape[-1]
    return (_randn(rng, shape, dtype) + n * np.eye(n)).astype(dtype)


def spd(rng, shape, dtype):
    """Hermitian positive definite: X X^H + n I."""
    x = _randn(rng, shape, dtype)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def rect(rng, shape, dtype):
    return _randn(rng, shape, dtype)


def tall(rng, shape, dtype):
    return _randn(rng, shape[:-1] + (shape[-1] - 1,), dtype)


def wide(rng, shape, dtype):
    return _randn(rng, shape[:-2] + (shape[-2] - 1, shape[-1]), dtype)


def vec(rng, shape, dtype):
    return _randn(rng, shape[:-1], dtype)


def rhs(rng, shape, dtype):
    return _randn(rng, shape[:-1] + (2,), dtype)


def lower_tri(rng, shape, dtype):
    return np.tril(general(rng, shape, dtype))


# name -> (function of NumPy arrays, argument generators, batched over leading dims)
VALUE_CASES = {
    "solve": (np.linalg.solve, [general, rhs], True),
    "solve_vector": (np.linalg.solve, [general, lambda r, s, d: vec(r, s[-2:], d)], True),
    "inv": (np.linalg.inv, [general], True),
    "det": (np.linalg.det, [general], True),
    "slogdet": (lambda a: tuple(np.linalg.slogdet(a)), [general], True),
    "cholesky": (np.linalg.cholesky, [spd], True),
    "cholesky_upper": (lambda a: np.linalg.cholesky(a, upper=True), [spd], True),
    "eigh": (lambda a: tuple(np.linalg.eigh(a)), [spd], True),
    "eigh_U": (lambda a: tuple(np.linalg.eigh(a, UPLO="U")), [spd], True),
    "eigvalsh": (np.linalg.eigvalsh, [general], True),
    "svd": (lambda a: tuple(np.linalg.svd(a)), [tall], True),
    "svd_reduced": (lambda a: tuple(np.linalg.svd(a, full_matrices=False)), [wide], True),
    "svdvals": (np.linalg.svdvals, [tall], True),
    "svd_hermitian_values": (lambda a: np.linalg.svd(a, compute_uv=False, hermitian=True),
                             [spd], True),
    "qr": (lambda a: tuple(np.linalg.qr(a)), [tall], True),
    "qr_complete": (lambda a: tuple(np.linalg.qr(a, mode="complete")), [tall], True),
    "qr_wide": (lambda a: tuple(np.linalg.qr(a)), [wide], True),
    "qr_r": (lambda a: np.linalg.qr(a, mode="r"), [tall], True),
    "pinv": (np.linalg.pinv, [tall], True),
    "matrix_rank": (np.linalg.matrix_rank, [tall], True),
    "cond": (np.linalg.cond, [general], True),
    "cond_fro": (lambda a: np.linalg.cond(a, "fro"), [general], True),
    "cond_inf": (lambda a: np.linalg.cond(a, -np.inf), [general], True),
    "matrix_power": (lambda a: np.linalg.matrix_power(a, 5), [general], True),
    "matrix_power_neg": (lambda a: np.linalg.matrix_power(a, -2), [general], True),
    "matrix_power_0": (lambda a: np.linalg.matrix_power(a, 0), [general], True),
    "matrix_norm": (lambda a: np.linalg.matrix_norm(a, ord="nuc"), [tall], True),
    "vector_norm": (lambda a: np.linalg.vector_norm(a, axis=(-2, -1), ord=3), [tall], True),
    "multi_dot": (lambda a, b, c: np.linalg.multi_dot([a, b, c]),
                  [lambda r, s, d: vec(r, s[-2:], d), lambda r, s, d: rect(r, s[-2:], d),
                   lambda r, s, d: rect(r, (s[-1], 7), d)], False),
    "tensorinv": (lambda a: np.linalg.tensorinv(a.reshape(a.shape[:-2] + (2, 2, 4)), ind=2),
                  [lambda r, s, d: general(r, s[-2:], d)], False),
    "tensorsolve": (lambda a, b: np.linalg.tensorsolve(a.reshape(2, 2, 4), b.reshape(2, 2)),
                    [lambda r, s, d: general(r, s[-2:], d),
                     lambda r, s, d: vec(r, s[-2:], d)], False),
    "lstsq": (lambda a, b: np.linalg.lstsq(a, b),
              [lambda r, s, d: rect(r, (6, 3), d), lambda r, s, d: rect(r, (6, 2), d)], False),
    "lstsq_wide": (lambda a, b: np.linalg.lstsq(a, b),
                   [lambda r, s, d: rect(r, (3, 5), d), lambda r, s, d: vec(r, (3, 5), d)],
                   False),
    "linalg_products": (lambda a, b: (np.linalg.trace(a), np.linalg.diagonal(a, offset=1),
                                      np.linalg.matrix_transpose(a), np.linalg.vecdot(a, b),
                                      np.linalg.outer(a[..., 0, :].ravel(), b.ravel())),
                        [general, general], True),
}
NORM_FORMS = [dict(), dict(ord="fro"), dict(ord="nuc"), dict(ord=2), dict(ord=-2),
              dict(ord=1), dict(ord=-1), dict(ord=np.inf), dict(ord=-np.inf),
              dict(axis=1), dict(ord=0, axis=0), dict(ord=3, axis=1), dict(ord=-np.inf, axis=0),
              dict(ord=1, axis=(1, 0)), dict(ord=np.inf, axis=(1, 0), keepdims=True),
              dict(axis=(0, 1), keepdims=True), dict(ord=0.5, axis=-1), dict(keepdims=True)]
for i, kw in enumerate(NORM_FORMS):
    VALUE_CASES[f"norm{i}"] = ((lambda kw: lambda a: np.linalg.norm(a, **kw))(kw), [tall], False)


def _compare(got, want, dtype):
    g, w = tj.tree.flatten(got)[0], tj.tree.flatten(want)[0]
    assert len(g) == len(w)
    for x, y in zip(g, w):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        tol = TOL[dtype] if x.dtype.kind in "fc" else 0
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol * max(1.0, np.abs(y).max(initial=0)))


@pytest.fixture(scope="module", params=["interpret", "llvm"])
def backend(request):
    saved = tj.config.backend
    tj.config.backend = request.param
    yield request.param
    tj.config.backend = saved


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_numpy(backend, name, dtype):
    fn, gens, batched = VALUE_CASES[name]
    rng = np.random.default_rng(zlib.crc32(f"{name} {np.dtype(dtype).name}".encode()))
    # single precision unbatched, double precision batched over two leading dims
    double = dtype in (np.float64, np.complex128)
    shape = ((2, 3) if batched and double else ()) + (4, 4)
    args = [g(rng, shape, dtype) for g in gens]
    _compare(tj.trace(fn)(*args), fn(*args), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_eig_values_are_complex(backend, dtype):
    """eig/eigvals match NumPy's values; on tracers they are always complex (NumPy gives a real
    result for a real matrix whose eigenvalues are all real: a dtype known only at run time)."""
    rng = np.random.default_rng(4)
    shape = (3, 4, 4) if dtype in (np.float64, np.complex128) else (4, 4)
    for a in (general(rng, shape, dtype), spd(rng, shape, dtype)):
        w, v = tj.trace(np.linalg.eig)(a)
        w_np, v_np = np.linalg.eig(a)
        complex_dt = np.result_type(dtype, np.complex64)
        _compare((w, v, tj.trace(np.linalg.eigvals)(a)),
                 (w_np.astype(complex_dt), v_np.astype(complex_dt),
                  np.linalg.eigvals(a).astype(complex_dt)), dtype)


def test_ints_compute_in_float64_and_float32_stays_single(backend):
    a = np.array([[4, 1], [1, 3]])
    for fn in (np.linalg.inv, np.linalg.cholesky, np.linalg.det, np.linalg.eigvalsh,
               np.linalg.norm):
        got, want = tj.trace(fn)(a), fn(a)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-12)
    got = tj.trace(np.linalg.solve)(a.astype(np.float32), np.ones(2, np.float32))
    assert got.dtype == np.float32


def test_scipy_style_triangular_and_cholesky_solves(backend):
    rng = np.random.default_rng(1)
    for dtype in (np.float64, np.complex128, np.float32):
        a = general(rng, (3, 4, 4), dtype)
        b = rhs(rng, (3, 4, 4), dtype)
        for trans, op in ((0, lambda m: m), ("T", lambda m: np.swapaxes(m, -1, -2)),
                          (2, lambda m: np.conj(np.swapaxes(m, -1, -2)))):
            for lower in (True, False):
                for unit in (False, True):
                    tri = np.tril(a) if lower else np.triu(a)
                    if unit:
                        tri = tri - np.diagonal(tri, 0, -2, -1)[..., None] * np.eye(4) + np.eye(4)
                    got = tj.trace(lambda a, b: tla.solve_triangular(
                        a, b, trans=trans, lower=lower, unit_diagonal=unit))(a, b)
                    _compare(got, np.linalg.solve(op(tri), b).astype(dtype), dtype)
        s = spd(rng, (3, 4, 4), dtype)
        for lower in (True, False):
            got = tj.trace(lambda s, b: tla.cho_solve((tla.cholesky(s, upper=not lower), lower),
                                                      b))(s, b[0, :, 0])
            _compare(got, np.linalg.solve(s, b[0, :, 0]), dtype)


# ---------------------------------------------------------------------------------------------
# derivatives: check_grads order 2, forward and reverse, real and complex

def _gauge_free_eigh(a):
    """Functions of eigh that do not depend on the eigenvectors' phases (complex)."""
    w, v = np.linalg.eigh(a)
    return w, (v * np.sin(w)[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))


def _gauge_free_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return s, u @ vh, (u * s[..., None, :] ** 2) @ np.conj(np.swapaxes(u, -1, -2))


GRAD_CASES = {
    "solve": (np.linalg.solve, [general, rhs]),
    "inv": (np.linalg.inv, [general]),
    "det": (np.linalg.det, [general]),
    "slogdet": (lambda a: tuple(np.linalg.slogdet(a)), [general]),
    "cholesky": (np.linalg.cholesky, [spd]),
    "cholesky_upper": (lambda a: np.linalg.cholesky(a, upper=True), [spd]),
    "eigh": (_gauge_free_eigh, [spd]),
    "eigh_U": (lambda a: np.linalg.eigh(a, UPLO="U")[0], [general]),
    "eigvalsh": (np.linalg.eigvalsh, [general]),
    "svd_tall": (_gauge_free_svd, [tall]),
    "svd_wide": (_gauge_free_svd, [wide]),
    "svdvals": (np.linalg.svdvals, [wide]),
    "qr": (lambda a: tuple(np.linalg.qr(a)), [tall]),
    "qr_r": (lambda a: np.linalg.qr(a, mode="r"), [general]),
    "pinv": (np.linalg.pinv, [tall]),
    "lstsq": (lambda a, b: np.linalg.lstsq(a, b)[0], [tall, rhs]),
    "cond": (np.linalg.cond, [general]),
    "cond_1": (lambda a: np.linalg.cond(a, 1), [general]),
    "matrix_power": (lambda a: np.linalg.matrix_power(a, -3), [general]),
    "multi_dot": (lambda a, b: np.linalg.multi_dot([a, b, a]), [general, general]),
    "tensorsolve": (lambda a, b: np.linalg.tensorsolve(a.reshape(2, 2, 4), b.reshape(2, 2)),
                    [general, lambda r, s, d: vec(r, s, d)]),
    "tensorinv": (lambda a: np.linalg.tensorinv(a.reshape(2, 2, 4)), [general]),
    "norms": (lambda a: (np.linalg.norm(a), np.linalg.norm(a, 2), np.linalg.norm(a, "nuc"),
                         np.linalg.norm(a, 1), np.linalg.norm(a, -np.inf),
                         np.linalg.norm(a, 3, axis=0), np.linalg.vector_norm(a, ord=1)), [tall]),
    "solve_triangular": (lambda a, b: (tla.solve_triangular(a, b, lower=True),
                                       tla.solve_triangular(a, b, trans=1, unit_diagonal=True),
                                       tla.solve_triangular(a, b, trans="C")), [general, rhs]),
    "cho_solve": (lambda s, b: tla.cho_solve((np.linalg.cholesky(s), True), b), [spd, rhs]),
    "eigvals": (np.linalg.eigvals, [general]),
    "eig": (lambda a: (lambda w, v: ((v * np.exp(w)[None, :]) @ np.linalg.inv(v), np.abs(v)))(
        *np.linalg.eig(a)), [general]),
    "linalg_products": (VALUE_CASES["linalg_products"][0], [general, general]),
    "matrix_norm": (lambda a: (np.linalg.matrix_norm(a), np.linalg.matrix_norm(a, ord=-1)),
                    [general]),
}
REAL_ONLY_EIGVECS = {   # the eigen/singular vectors themselves (real: sign fixed by LAPACK)
    "eigh_vectors": (lambda a: tuple(np.linalg.eigh(a)), [spd]),
    "svd_vectors": (lambda a: tuple(np.linalg.svd(a, full_matrices=False)), [tall]),
    "svd_square_full": (lambda a: tuple(np.linalg.svd(a)), [general]),
}


@pytest.fixture(scope="module")
def interpreted():
    saved = tj.config.backend
    tj.config.backend = "interpret"
    yield
    tj.config.backend = saved


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES) + sorted(REAL_ONLY_EIGVECS))
def test_grads(interpreted, name, dtype):
    if name in REAL_ONLY_EIGVECS and dtype is np.complex128:
        pytest.skip("complex eigenvectors have a free phase: the gauge-free functions of "
                    "GRAD_CASES ('eigh', 'svd_*') test them")
    fn, gens = {**GRAD_CASES, **REAL_ONLY_EIGVECS}[name]
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # (hash() of a str varies per process)
    args = [g(rng, (4, 4), dtype) for g in gens]
    check_grads(fn, args, order=2, modes=("fwd", "rev"))


def test_grads_batched_and_on_llvm():
    """A batched Gaussian-process log-likelihood, grad compiled on the llvm backend."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))

    def nll(log_ell, x, y):
        k = np.exp(-0.5 * (x[..., :, None] - x[..., None, :]) ** 2 / np.exp(2 * log_ell))
        L = np.linalg.cholesky(k + 0.1 * np.eye(5))
        alpha = tla.cho_solve((L, True), y[..., None])[..., 0]
        return np.sum(0.5 * np.sum(y * alpha, -1) + np.sum(np.log(np.diagonal(L, 0, -2, -1)), -1))

    check_grads(nll, (0.3, x, y), order=2, modes=("fwd", "rev"))
    g = tj.grad(nll)
    with_llvm = g(0.3, x, y)
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        np.testing.assert_allclose(with_llvm, tj.grad(nll)(0.3, x, y), rtol=1e-12)
    finally:
        tj.config.backend = saved


def test_degenerate_eigenvalues_give_finite_derivatives(interpreted):
    """eigh of a matrix with repeated eigenvalues: the eigenvalue and the gauge-free
    derivatives are finite (and right when the tangent does not split the eigenvalues)."""
    a = np.diag([1.0, 1.0, 2.0])
    f = lambda a: np.sum(np.linalg.eigvalsh(a) ** 2)            # noqa: E731
    np.testing.assert_allclose(tj.grad(f)(a), 2 * np.diag([1.0, 1.0, 2.0]), atol=1e-12)
    g = lambda a: _gauge_free_eigh(a)[1]                        # noqa: E731
    _, t = tj.jvp(g, (a,), (np.eye(3),))           # I does not split the pair: d = cos(w) I
    np.testing.assert_allclose(t, np.diag(np.cos([1.0, 1.0, 2.0])), atol=1e-12)
    assert np.all(np.isfinite(tj.grad(lambda a: np.sum(g(a) ** 2))(a)))


# ---------------------------------------------------------------------------------------------
# vmap

VMAP_CASES = {
    "solve": (np.linalg.solve, [general, rhs], (0, None)),
    "solve_b": (np.linalg.solve, [general, rhs], (None, 0)),
    "cholesky": (np.linalg.cholesky, [spd], (0,)),
    "slogdet": (lambda a: tuple(np.linalg.slogdet(a)), [general], (0,)),
    "eigh": (lambda a: tuple(np.linalg.eigh(a)), [spd], (0,)),
    "svd": (lambda a: tuple(np.linalg.svd(a)), [tall], (0,)),
    "qr": (lambda a: tuple(np.linalg.qr(a)), [tall], (0,)),
    "solve_triangular": (lambda a, b: tla.solve_triangular(a, b, lower=True, trans=2),
                         [general, rhs], (None, 0)),
    "grad_logdet": (tj.grad(lambda a: np.linalg.slogdet(a)[1]), [general], (0,)),
    "eig": (lambda a: tuple(np.linalg.eig(a)), [general], (0,)),
}


def _vmap_against_loop(fn, args, in_axes, rtol=1e-10):
    got = tj.vmap(fn, in_axes=in_axes)(*args)
    size = next(a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None)
    rows = [tj.tree.flatten(fn(*[np.take(a, i, ax) if ax is not None else a
                                 for a, ax in zip(args, in_axes)]))[0] for i in range(size)]
    got = tj.tree.flatten(got)[0]
    assert len(got) == len(rows[0])
    for k, x in enumerate(got):
        y = np.stack([r[k] for r in rows])
        assert np.asarray(x).dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=rtol,
                                   atol=rtol * max(1.0, np.abs(y).max(initial=0)))


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_loop(interpreted, name):
    fn, gens, in_axes = VMAP_CASES[name]
    rng = np.random.default_rng(3)
    dtype = np.complex128 if name == "solve_triangular" else np.float64
    args = [g(rng, (3, 4, 4) if ax == 0 else (4, 4), dtype) for g, ax in zip(gens, in_axes)]
    _vmap_against_loop(fn, args, in_axes)


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_vmap_of_every_function(interpreted, name):
    """Every function of VALUE_CASES (complex inputs), vmapped over a batch of two."""
    fn, gens, _ = VALUE_CASES[name]
    rng = np.random.default_rng(5)
    examples = [[g(rng, (4, 4), np.complex128) for g in gens] for _ in range(2)]
    args = [np.stack([ex[i] for ex in examples]) for i in range(len(gens))]
    _vmap_against_loop(fn, args, (0,) * len(gens))


# ---------------------------------------------------------------------------------------------
# errors

def test_shape_errors_at_trace_time():
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        tj.trace(np.linalg.inv)(np.ones((2, 3)))
    with pytest.raises(np.linalg.LinAlgError, match="at least two-dimensional"):
        tj.trace(np.linalg.det)(np.ones(3))
    with pytest.raises(ValueError, match="Invalid norm order"):
        tj.trace(lambda a: np.linalg.norm(a, "fro", axis=0))(np.ones((2, 3)))
    with pytest.raises(ValueError, match="Improper number of dimensions"):
        tj.trace(lambda a: np.linalg.norm(a, 2))(np.ones((2, 3, 4)))
    with pytest.raises(tj.UnsupportedError, match="full_matrices=False"):
        tj.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(np.ones((3, 2)))


def test_singular_and_indefinite_matrices_raise_at_run_time(backend):
    singular, indefinite = np.array([[1.0, 2.0], [2.0, 4.0]]), -np.eye(2)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.trace(np.linalg.solve)(singular, np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.trace(np.linalg.inv)(np.stack([np.eye(2), singular]))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        tj.trace(np.linalg.cholesky)(indefinite)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.vmap(np.linalg.inv)(np.stack([np.eye(2), singular]))
    # values NumPy gives without an error stay NumPy's: det 0, cond inf
    assert tj.trace(np.linalg.det)(singular) == 0.0
    assert tj.trace(lambda a: np.linalg.cond(a, 1))(singular) == np.inf
    assert np.isnan(tj.trace(lambda a: np.linalg.cond(a, 1))(np.full((2, 2), np.nan)))
    # the derivative of a singular solve raises too (the run-time check stays in the
    # derivative's graph); det's derivative at a singular matrix is NaN, never a finite value
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        tj.grad(lambda a: np.sum(np.linalg.solve(a, np.ones(2))))(singular)
    assert np.all(np.isnan(tj.grad(np.linalg.det)(singular)))


def test_lstsq_of_a_rank_deficient_matrix(backend):
    """x, rank and s are NumPy's; the residuals, an empty array in NumPy (a size known only at
    run time), are NaN."""
    a = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    x, resid, rank, s = tj.trace(np.linalg.lstsq)(a, b)
    want = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x, want[0], rtol=1e-12)
    np.testing.assert_allclose(s, want[3], rtol=1e-12)
    assert int(rank) == want[2] == 1 and want[1].shape == (0,)
    assert resid.shape == (1,) and np.isnan(resid).all()


# ---------------------------------------------------------------------------------------------
# the native loops of small real cholesky / triangular_solve (backend/emit/linalg.py)

@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_native_cholesky_matches_the_interpreter(dtype):
    rng = np.random.default_rng(6)
    for shape in [(1, 1), (5, 5), (3, 2, 7, 7), (17, 17)]:
        a = spd(rng, shape, dtype)
        if shape[-1] > 1:
            a[..., 0, -1] = np.nan             # the upper triangle is never read
        if len(shape) > 2:
            a[1, 0] = -a[1, 0]                 # one matrix of the batch is not positive definite
        graph, _ = make_graph(lambda a: la.cholesky_p.bind(a), [Type(np.dtype(dtype), shape)])
        exe = compile_graph(graph)
        assert exe.native and "cholesky (native loops)" in exe.describe(), exe.describe()
        got, want = exe([a]), interpret.run(graph, [a])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_allclose(got[0], want[0], rtol=TOL[dtype], atol=TOL[dtype])
        if len(shape) > 2:
            assert got[1][1, 0] and np.isnan(got[0][1, 0]).all() and not got[1][0, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_native_triangular_solve_matches_the_interpreter(dtype):
    rng = np.random.default_rng(7)
    for shape, k in [((4, 4), 1), ((2, 3, 6, 6), 3)]:
        a = general(rng, shape, dtype)
        a[..., 2, 2] = 0 if len(shape) > 2 else a[..., 2, 2]     # a zero pivot: inf/NaN
        b = rhs(rng, shape[:-1] + (k + 1,), dtype)[..., :k]
        for lower in (True, False):
            for transpose_a in (False, True):
                for unit in (False, True):
                    graph, _ = make_graph(
                        lambda a, b: la.triangular_solve_p.bind(
                            a, b, lower=lower, transpose_a=transpose_a, conjugate_a=False,
                            unit_diagonal=unit),
                        [Type(np.dtype(dtype), shape), Type(np.dtype(dtype), b.shape)])
                    exe = compile_graph(graph)
                    assert exe.native and "native loops" in exe.describe(), exe.describe()
                    with np.errstate(all="ignore"):
                        want = interpret.run(graph, [a, b])[0]
                    np.testing.assert_allclose(exe([a, b])[0], want, rtol=TOL[dtype] * 10,
                                               atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_native_solve_matches_the_interpreter(dtype):
    rng = np.random.default_rng(8)
    for shape, k in [((1, 1), 1), ((5, 5), 2), ((2, 3, 6, 6), 3)]:
        a = _randn(rng, shape, dtype)          # no diagonal boost: pivoting matters
        if len(shape) > 2:
            a[0, 1] = np.outer(a[0, 1, 0], np.arange(6))      # rank one: singular
        b = rhs(rng, shape[:-1] + (k + 1,), dtype)[..., :k].copy()
        for transpose_a in (False, True):
            graph, _ = make_graph(lambda a, b: la.solve_p.bind(a, b, transpose_a=transpose_a),
                                  [Type(np.dtype(dtype), shape), Type(np.dtype(dtype), b.shape)])
            exe = compile_graph(graph)
            assert exe.native and "solve (native loops)" in exe.describe(), exe.describe()
            got, want = exe([a, b]), interpret.run(graph, [a, b])
            np.testing.assert_array_equal(got[1], want[1])
            scale = np.abs(want[0][np.isfinite(want[0])]).max(initial=1)
            np.testing.assert_allclose(got[0], want[0], rtol=TOL[dtype] * 100,
                                       atol=TOL[dtype] * 100 * scale)
    assert got[1][0, 1] and np.isnan(got[0][0, 1]).all()


def test_native_linalg_reads_a_transposed_operand_through_a_copy():
    rng = np.random.default_rng(9)
    a, b = general(rng, (5, 5), np.float64), rect(rng, (5, 5), np.float64)
    ty = Type(np.dtype(np.float64), (5, 5))
    graph, _ = make_graph(lambda a, b: [la.solve_p.bind(a.T, b.T @ b, transpose_a=True)[0]],
                          [ty, ty])
    exe = compile_graph(graph)
    assert exe.native and "solve (native loops)" in exe.describe(), exe.describe()
    np.testing.assert_allclose(exe([a, b])[0], np.linalg.solve(a, b.T @ b), rtol=1e-12)


def test_large_and_complex_matrices_call_lapack():
    """Above the loops' crossover (steps.can_lower_linalg), or complex, LAPACK is called from
    native code (tests/test_linalg_lapack.py); without it, the NumPy fallback runs."""
    from tracejit.backend.matmul import lapack
    for ty in (Type(np.dtype(np.float64), (80, 80)), Type(np.dtype(np.complex128), (4, 4))):
        graph, _ = make_graph(lambda a: la.cholesky_p.bind(a), [ty])
        exe = compile_graph(graph)
        assert "native loops" not in exe.describe()
        assert exe.native == lapack.available(), exe.describe()
