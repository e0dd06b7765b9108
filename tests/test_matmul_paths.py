"""Which path a traced product takes (tiled kernel, pool-split rows, numpy's OpenBLAS) and that
the result does not depend on the thread count (row blocks depend on M only; each element's
k-sum has one fixed order)."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.matmul import blas


def _with_threads(n, fn, *args):
    saved = tj.config.num_threads
    tj.config.num_threads = n
    try:
        return fn(*args)
    finally:
        tj.config.num_threads = saved


@pytest.mark.parametrize("dtype, m, k, n", [(np.float64, 300, 200, 70),
                                            (np.float32, 128, 784, 512),
                                            (np.float64, 515, 130, 33)])
def test_parallel_rows_same_bits_for_any_thread_count(dtype, m, k, n):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    f = tj.trace(lambda A, B, bias: np.tanh(A @ B + bias))
    # without AVX-512 the larger shapes call BLAS (blas.choose_path), the epilogue swept over
    # each block of rows: the same thread-count independence holds there
    path = "'blas'" if blas.available() and blas.thread_control() and \
        blas.choose_path(dtype, m, k, n) == "blas" else "parallel rows"
    assert path in f.ir(A, B, bias, stage="fused")
    outs = [_with_threads(t, f, A, B, bias) for t in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    tol = 1e-12 if dtype == np.float64 else 1e-4          # K = 784 f32 sums, either order
    np.testing.assert_allclose(outs[0], np.tanh(A @ B + bias), rtol=tol, atol=tol)


blas_only = pytest.mark.skipif(not (blas.available() and blas.thread_control()),
                               reason=f"BLAS path: {blas.reason()} (or no thread control)")


@blas_only
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", ["ab", "abt", "atb"])
def test_large_product_calls_blas(dtype, form):
    rng = np.random.default_rng(6)
    M, K, N = 1100, 64, 1100
    A = rng.standard_normal((K, M) if form == "atb" else (M, K)).astype(dtype)
    B = rng.standard_normal((N, K) if form == "abt" else (K, N)).astype(dtype)
    fn = {"ab": lambda a, b: a @ b, "abt": lambda a, b: a @ b.T,
          "atb": lambda a, b: a.T @ b}[form]
    f = tj.trace(fn)
    assert "'blas'" in f.ir(A, B, stage="fused")
    before = blas.get_num_threads()
    outs = [_with_threads(t, f, A, B) for t in (1, 2)]
    assert blas.get_num_threads() == before          # BLAS count restored after each call
    np.testing.assert_array_equal(outs[0], outs[1])
    want = fn(A.astype(np.float64), B.astype(np.float64))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(outs[0], want, rtol=tol, atol=tol * np.abs(want).max())


def test_small_product_keeps_the_kernel():
    A, B = np.ones((64, 64)), np.ones((64, 64))
    f = tj.trace(lambda a, b: a @ b)
    assert "'blas'" not in f.ir(A, B, stage="fused")
    np.testing.assert_array_equal(f(A, B), A @ B)
