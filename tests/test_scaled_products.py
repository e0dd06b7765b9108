"""Products absorb scalars and added terms (issue 19 item 2): ``alpha * A @ B + beta * C`` in any
placement of the scalars (traced or literal), transposes, negation, division and an added matrix,
bias row or column, or scalar runs as one matmul step with the rest in its epilogue
(``backend/plan/foldscalars.py`` + ``epilogue.py``), on the tiled kernel, the matrix-vector dot
path and the BLAS path. Values on both backends against NumPy with the tolerance products
already have (k-sums in another order: ``8 * (K + 2) * eps`` times the magnitude of the terms);
derivatives are those of the function as written."""
import zlib

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.matmul import blas
from tracejit.test_util import check_grads, using_backend

M, K, N = 37, 29, 21

# name -> (function of (A, B, C, a, b), operand shapes: see _operands)
FORMS = {
    "(a*A)@B": (lambda A, B, C, a, b: (a * A) @ B, "mat"),
    "A@(B*a)": (lambda A, B, C, a, b: A @ (B * a), "mat"),
    "a*(A@B)": (lambda A, B, C, a, b: a * (A @ B), "mat"),
    "-A@B": (lambda A, B, C, a, b: -A @ B, "mat"),
    "(A/a)@B": (lambda A, B, C, a, b: (A / a) @ B, "mat"),
    "A@B/a": (lambda A, B, C, a, b: A @ B / a, "mat"),
    "(a*A).T@B*b": (lambda A, B, C, a, b: (a * A).T @ B * b, "matT"),
    "a*A@B+b*C": (lambda A, B, C, a, b: a * A @ B + b * C, "mat"),
    "-(a*A)@(B/b)+C": (lambda A, B, C, a, b: -(a * A) @ (B / b) + C, "mat"),
    "a*A@B-b*C": (lambda A, B, C, a, b: a * A @ B - b * C, "mat"),
    "a*A@B+row": (lambda A, B, C, a, b: a * A @ B + C[0], "mat"),
    "a*A@B+col": (lambda A, B, C, a, b: a * A @ B + C[:, :1], "mat"),
    "a*A@B+2": (lambda A, B, C, a, b: a * A @ B + 2.0, "mat"),
    "b*(a*A)@(-B)": (lambda A, B, C, a, b: b * (a * A) @ (-B), "mat"),
    "a*A@x+b*y": (lambda A, x, y, a, b: a * A @ x + b * y, "vec"),
    "-A@(x/a)": (lambda A, x, y, a, b: -A @ (x / a), "vec"),
    "(a*x)@A+y": (lambda A, x, y, a, b: (a * x) @ A + y, "vecT"),
    "a*A.T@x+b*y": (lambda A, x, y, a, b: a * A.T @ x + b * y, "vecAT"),
    "A.T@x/a+y[::-1]": (lambda A, x, y, a, b: (A.T @ x) / a + y[::-1], "vecAT"),
}


def _operands(kind, dtype, rng):
    """(A, B, C) for a form of ``kind`` and the largest entry of |A| @ |B| (its product)."""
    def draw(*shape):
        return rng.standard_normal(shape).astype(dtype)
    A = draw(K, M) if kind in ("matT", "vecAT") else draw(M, K)
    B, C = {"mat": (draw(K, N), draw(M, N)), "matT": (draw(K, N), draw(M, N)),
            "vec": (draw(K), draw(M)), "vecT": (draw(M), draw(K)),
            "vecAT": (draw(K), draw(M))}[kind]
    a, b = np.abs(A).astype(np.float64), np.abs(B).astype(np.float64)
    prod = {"mat": lambda: a @ b, "matT": lambda: a.T @ b, "vec": lambda: a @ b,
            "vecT": lambda: b @ a, "vecAT": lambda: a.T @ b}[kind]()
    return (A, B, C), prod.max()


def _tolerance(dtype, ops, prod, scalars):
    """``8 * (K + 2) * eps`` times the largest term a form here sums (every scalar may
    multiply or divide the product twice, the added term once)."""
    s = max(max(abs(float(v)), 1 / abs(float(v))) for v in scalars) ** 2
    mag = s * prod + s * np.abs(ops[2]).max() + 2.0
    return 8 * (K + 2) * np.finfo(dtype).eps * mag


def _reference(fn, ops, scalars):
    return fn(*(x.astype(np.float64) for x in ops), *(float(v) for v in scalars))


@pytest.fixture(scope="module")
def traced():
    """One trace per form: the scalars are arguments (traced), so every dtype and scalar kind
    below reuses it per signature."""
    return {name: tj.trace(fn) for name, (fn, _) in FORMS.items()}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(FORMS))
def test_traced_scalars_both_backends(traced, name, dtype):
    fn, kind = FORMS[name]
    ops, prod = _operands(kind, dtype, np.random.default_rng(zlib.crc32(name.encode())))
    scalars = (1.7, -0.6)                          # Python floats: weak, traced
    want = _reference(fn, ops, scalars)
    tol = _tolerance(dtype, ops, prod, scalars)
    got = traced[name](*ops, *scalars)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    with using_backend("interpret"):
        ref = tj.trace(fn)(*ops, *scalars)
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


@pytest.mark.parametrize("name", ["a*A@B+b*C", "(A/a)@B", "a*A@x+b*y", "(a*x)@A+y"])
def test_array_scalars(traced, name):
    """Rank-0 arrays and NumPy scalars as the scalars (strongly typed, f64 product)."""
    fn, kind = FORMS[name]
    ops, prod = _operands(kind, np.float64, np.random.default_rng(3))
    scalars = (np.array(0.3), np.float64(2.5))
    got = traced[name](*ops, *scalars)
    np.testing.assert_allclose(got, _reference(fn, ops, scalars), rtol=0,
                               atol=_tolerance(np.float64, ops, prod, scalars))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_literal_scalars(dtype):
    (A, B, C), prod = _operands("mat", dtype, np.random.default_rng(4))
    f = tj.trace(lambda A, B, C: 1.5 * A @ (B / 3.0) - 1.2 * C)
    want = 1.5 * A.astype(np.float64) @ (B / 3.0) - 1.2 * C
    tol = _tolerance(dtype, (A, B, C), prod, (1.5, 3.0))
    np.testing.assert_allclose(f(A, B, C), want, rtol=0, atol=tol)
    plan = f.ir(A, B, C, stage="fused")
    assert _steps(plan) == ["matmul"] and "epilogue" in plan, plan


def test_fold_can_be_turned_off(monkeypatch):
    """config.fold_product_scalars = False keeps NumPy's order: the scaled operand is a loop of
    its own before the product, and the result is the product of the materialised operand."""
    (A, B, _), _ = _operands("mat", np.float64, np.random.default_rng(6))
    monkeypatch.setattr(tj.config, "fold_product_scalars", False)
    f = tj.trace(lambda A, B: (1.7 * A) @ B)
    assert _steps(f.ir(A, B, stage="fused"))[0] != "matmul"
    g = tj.trace(lambda A2, B: A2 @ B)          # the same product of the scaled operand
    np.testing.assert_array_equal(f(A, B), g(1.7 * A, B))


def _steps(plan):
    """The fused plan's step kinds, leaving out rank-0 loops (a Python float converted to an
    f32 scalar once per call)."""
    return [line.split()[0] for line in plan.splitlines()[1:]
            if line.strip() and not line.strip().startswith("loop [] ")]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(FORMS))
def test_one_product_step(traced, name, dtype):
    """The fused plan is one matmul step: no loop scaling an operand, none applying the
    scalars or the added term after the product."""
    fn, kind = FORMS[name]
    ops, _ = _operands(kind, dtype, np.random.default_rng(5))
    plan = traced[name].ir(*ops, 1.7, -0.6, stage="fused")
    assert _steps(plan) == ["matmul"], plan
    assert "epilogue" in plan, plan


@pytest.mark.skipif(not (blas.available() and blas.thread_control()),
                    reason=f"BLAS path: {blas.reason()} (or no thread control)")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_blas_path_runs_the_epilogue(dtype):
    """K > 1024 calls BLAS; the epilogue runs over each block of rows it wrote."""
    rng = np.random.default_rng(6)
    m, k, n = 40, 1100, 27
    A, B, C = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (k, n), (m, n)))
    fn = FORMS["-(a*A)@(B/b)+C"][0]
    f = tj.trace(fn)
    plan = f.ir(A, B, C, 0.7, 1.3, stage="fused")
    assert "'blas'" in plan and "epilogue" in plan and _steps(plan) == ["matmul"], plan
    want = _reference(fn, (A, B, C), (0.7, 1.3))
    tol = 8 * (k + 2) * np.finfo(dtype).eps * (2 * (np.abs(A) @ np.abs(B)).max() + 4)
    np.testing.assert_allclose(f(A, B, C, 0.7, 1.3), want, rtol=0, atol=tol)


@pytest.mark.parametrize("m, k, n", [(M, K, N), (20, 1100, 30)])   # the second: BLAS if found
def test_written_into_an_argument(m, k, n):
    """npbench's gemm, ``C[:] = alpha * A @ B + beta * C``: one product reading the old C in
    its epilogue (the result never shares C's buffer, so BLAS writing rows first is safe)."""
    def gemm(alpha, beta, C, A, B):
        C[:] = alpha * A @ B + beta * C
    rng = np.random.default_rng(9)
    A, B, C = (rng.standard_normal(s) for s in ((m, k), (k, n), (m, n)))
    f = tj.trace(gemm)
    assert _steps(f.ir(1.5, 1.2, C, A, B, stage="fused")) == ["matmul"]
    got = C.copy()
    f(1.5, 1.2, got, A, B)
    tol = 8 * (k + 2) * np.finfo(np.float64).eps * (2 * (np.abs(A) @ np.abs(B)).max() + 4)
    np.testing.assert_allclose(got, 1.5 * A @ B + 1.2 * C, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_products(dtype):
    """Complex products keep their scaled operands (no epilogue there) and stay right."""
    rng = np.random.default_rng(7)
    A, B, C = ((rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(dtype)
               for s in ((M, K), (K, N), (M, N)))
    fn = FORMS["a*A@B+b*C"][0]
    f = tj.trace(fn)
    want = fn(*(x.astype(np.complex128) for x in (A, B, C)), 1.5 - 0.5j, 0.25)
    tol = 8 * (K + 2) * np.finfo(dtype).eps * (4 * (np.abs(A) @ np.abs(B)).max() + 4)
    np.testing.assert_allclose(f(A, B, C, 1.5 - 0.5j, 0.25), want, rtol=0, atol=tol)


def test_nonfinite_literal_stays_on_the_operand():
    """``inf * A`` and ``A / 0`` are not moved: NaN where NumPy has NaN, inf where it has inf."""
    A = np.array([[1.0, 0.0], [2.0, -1.0]])
    B = np.array([[1.0, 2.0], [1.0, -3.0]])
    with np.errstate(all="ignore"):
        for fn in (lambda A, B: (np.inf * A) @ B, lambda A, B: (A / 0.0) @ B):
            np.testing.assert_array_equal(tj.trace(fn)(A, B), fn(A, B))


@pytest.mark.parametrize("name", ["a*A@B+b*C", "(A/a)@B", "a*A@x+b*y"])
def test_derivatives_unchanged(name):
    fn, kind = FORMS[name]
    rng = np.random.default_rng(8)
    A = rng.standard_normal((4, 3))
    other = {"mat": ((3, 5), (4, 5)), "vec": ((3,), (4,))}[kind]
    B, C = (rng.standard_normal(s) for s in other)
    check_grads(tj.trace(fn), (A, B, C, 1.3, -0.7), order=2, modes=("fwd", "rev"))
    g = tj.trace(tj.grad(lambda A, B, C, a, b: np.sum(fn(A, B, C, a, b) ** 2),
                         argnums=(0, 3)))
    with using_backend("interpret"):
        want = tj.trace(tj.grad(lambda A, B, C, a, b: np.sum(fn(A, B, C, a, b) ** 2),
                                argnums=(0, 3)))(A, B, C, 1.3, -0.7)
    for got, ref in zip(g(A, B, C, 1.3, -0.7), want):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
