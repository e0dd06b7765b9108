"""Generated matmul kernels (tracejit.backend.matmul) and the BLAS path vs numpy.

Tolerances: every kernel sums K products with fma in a fixed order and numpy/OpenBLAS sums them
in another, so each may carry up to ~K*eps relative error of sum_k |A_ik B_kj| (worst case; the
typical error is ~sqrt(K)*eps).  We compare against the float64/longdouble-free bound
``|C - ref| <= 2 * (K + 2) * eps * (|A| @ |B|) + tiny``, which holds for any summation order.
Integers must match exactly (both wrap modulo 2**bits).
"""
import ctypes
import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from llvmlite import ir

from tracejit.backend.engine import jit
from tracejit.backend.matmul import blas, tiled as mm

P = ctypes.c_void_p
FLOATS = ["float64", "float32"]


@functools.lru_cache(maxsize=None)
def _compile(kind, dtype, *shape, **kw):
    """Compile one kernel per (kind, dtype, shape, options) per session; returns a ctypes fn."""
    mod = ir.Module()
    name = jit.unique_name("test_" + kind)
    extra = []
    if kw.pop("bias_epilogue", False):
        kw["epilogue"] = _bias_epilogue
        kw["extra_args"] = (ir.PointerType(),)
        extra = [P]
    emit = {"mm": mm.emit_matmul, "rows": mm.emit_matmul_rows, "mv": mm.emit_matvec,
            "vm": mm.emit_vecmat}[kind]
    emit(mod, name, dtype, *shape, **kw)
    jit.compile_ir(mod)
    args = [P, P, P] + ([ctypes.c_int64, ctypes.c_int64] if kind == "rows" else []) + extra
    return ctypes.CFUNCTYPE(None, *args)(jit.function_address(name))


def _bias_epilogue(b, acc, row, col0, mask):
    """acc * 2 + bias[col0 : col0 + VL] (masked load for a column tail)."""
    bias = b.function.args[-1]
    vty = acc.type
    p = b.gep(bias, [col0], source_etype=vty.element)
    if mask is None:
        bv = b.load(p, typ=vty, align=1)
    else:
        fn_name = f"llvm.masked.load.v{vty.count}{'f64' if str(vty.element) == 'double' else 'f32'}.p0"
        fn = b.module.globals.get(fn_name) or ir.Function(
            b.module, ir.FunctionType(vty, [ir.PointerType(), mask.type, vty]), fn_name)
        bv = b.call(fn, [p, mask, ir.Constant(vty, None)])
    two = ir.Constant(vty, [2.0] * vty.count)
    return b.fadd(b.fmul(acc, two), bv)


def _rand(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _check(C, A, B, ref=None):
    ref = (A.astype(np.complex128 if A.dtype.kind == "c" else A.dtype) @ B) if ref is None else ref
    if C.dtype.kind == "i":
        np.testing.assert_array_equal(C, ref)
        return
    K = A.shape[-1]
    eps = np.finfo(C.dtype).eps
    bound = 2 * (K + 2) * eps * (np.abs(A).astype(np.float64) @ np.abs(B).astype(np.float64))
    err = np.abs(C.astype(np.complex128) - ref)
    assert np.all(err <= bound + 1e-30), f"max err {err.max()} vs bound {bound.max()}"


def _run_mm(dtype, M, K, N, a_t=False, b_t=False, seed=0, **kw):
    rng = np.random.default_rng(seed)
    A = _rand(dtype, (K, M) if a_t else (M, K), rng)
    B = _rand(dtype, (N, K) if b_t else (K, N), rng)
    a_strides = (1, M) if a_t else (K, 1)
    b_strides = (1, K) if b_t else (N, 1)
    f = _compile("mm", dtype, M, K, N, a_strides=a_strides, b_strides=b_strides, **kw)
    C = np.full((M, N), 3, dtype=dtype)
    f(A.ctypes.data, B.ctypes.data, C.ctypes.data)
    return C, (A.T if a_t else A), (B.T if b_t else B)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(M=st.integers(0, 70), K=st.integers(0, 70), N=st.integers(0, 70),
       dtype=st.sampled_from(FLOATS), a_t=st.booleans(), b_t=st.booleans())
def test_matmul_random_shapes(M, K, N, dtype, a_t, b_t):
    C, A, B = _run_mm(dtype, M, K, N, a_t, b_t)
    _check(C, A, B)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(0, 0, 0), (1, 1, 1), (1, 0, 5), (4, 3, 0), (12, 16, 16),
                                   (13, 17, 33), (128, 784, 512), (200, 33, 1), (1, 300, 257)])
@pytest.mark.parametrize("b_t", [False, True])
def test_matmul_fixed_shapes(dtype, shape, b_t):
    C, A, B = _run_mm(dtype, *shape, b_t=b_t)
    _check(C, A, B)


def test_matmul_large_packed_panel_uses_heap():
    """K large enough that the Bᵀ panel exceeds the stack limit (malloc path)."""
    C, A, B = _run_mm("float64", 20, 1100, 37, b_t=True)
    _check(C, A, B)


@pytest.mark.parametrize("dtype", ["int64", "int32", "complex128", "complex64"])
@pytest.mark.parametrize("shape", [(0, 2, 3), (1, 1, 1), (5, 7, 9), (13, 40, 35), (20, 9, 1)])
def test_matmul_int_complex(dtype, shape):
    for a_t, b_t in ((False, False), (True, True)):
        C, A, B = _run_mm(dtype, *shape, a_t=a_t, b_t=b_t)
        _check(C, A, B)


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
def test_matmul_accumulate_and_c_strides(dtype):
    rng = np.random.default_rng(3)
    M, K, N = 15, 21, 19
    A, B = _rand(dtype, (M, K), rng), _rand(dtype, (K, N), rng)
    C0 = _rand(dtype, (N, M), rng)  # C is written through a transposed view
    C = C0.copy()
    f = _compile("mm", dtype, M, K, N, a_strides=(K, 1), b_strides=(N, 1), c_strides=(1, M),
                 accumulate=True)
    f(A.ctypes.data, B.ctypes.data, C.ctypes.data)
    _check(C.T, A, B, ref=C0.T + A @ B)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(7, 5, 3), (13, 30, 37), (30, 64, 128), (3, 9, 1),
                                   (5, 40, 1)])
def test_epilogue_bias_scale(dtype, shape):
    M, K, N = shape
    rng = np.random.default_rng(5)
    A, B, bias = _rand(dtype, (M, K), rng), _rand(dtype, (K, N), rng), _rand(dtype, N, rng)
    f = _compile("mm", dtype, M, K, N, a_strides=(K, 1), b_strides=(N, 1), bias_epilogue=True)
    C = np.zeros((M, N), dtype)
    f(A.ctypes.data, B.ctypes.data, C.ctypes.data, bias.ctypes.data)
    ref = 2 * (A @ B) + bias
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(C, ref, atol=8 * (K + 2) * eps * (np.abs(A) @ np.abs(B)).max())


@pytest.mark.parametrize("dtype", FLOATS)
def test_row_range_variant(dtype):
    M, K, N = 37, 29, 45
    rng = np.random.default_rng(7)
    A, B = _rand(dtype, (M, K), rng), _rand(dtype, (K, N), rng)
    f = _compile("rows", dtype, M, K, N, a_strides=(K, 1), b_strides=(N, 1))
    C = np.full((M, N), np.nan, dtype)
    for lo, hi in ((0, 5), (5, 5), (5, 24), (24, 36), (36, 37)):  # uneven, incl. empty range
        f(A.ctypes.data, B.ctypes.data, C.ctypes.data, lo, hi)
    _check(C, A, B)
    C2 = np.full((M, N), np.nan, dtype)
    f(A.ctypes.data, B.ctypes.data, C2.ctypes.data, 10, 20)
    assert np.isnan(C2[:10]).all() and np.isnan(C2[20:]).all()
    np.testing.assert_array_equal(C2[10:20], C[10:20])  # same order -> bit-identical rows


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
@pytest.mark.parametrize("M,K", [(1, 1), (7, 3), (100, 37), (1000, 100), (33, 0)])
@pytest.mark.parametrize("a_t", [False, True])
def test_matvec_vecmat(dtype, M, K, a_t):
    rng = np.random.default_rng(11)
    A = _rand(dtype, (K, M) if a_t else (M, K), rng)
    x, xs = _rand(dtype, 2 * K, rng), 2  # strided x
    Av = A.T if a_t else A
    f = _compile("mv", dtype, M, K, a_strides=(1, M) if a_t else (K, 1), x_stride=xs)
    y = np.zeros(M, dtype)
    f(A.ctypes.data, x.ctypes.data, y.ctypes.data)
    _check(y[:, None], Av, x[::2, None])
    # vecmat: y2 = z @ Av.T, i.e. B = Av.T with strides from A's layout
    z = _rand(dtype, K, rng)
    g = _compile("vm", dtype, K, M, b_strides=(M, 1) if a_t else (1, K))
    y2 = np.zeros(M, dtype)
    g(z.ctypes.data, A.ctypes.data, y2.ctypes.data)
    _check(y2[None, :], z[None, :], Av.T)


def test_batched_by_offsets_and_emit_batched():
    """Batching: call the 2-D kernel per batch with offset pointers, or wrap it (B broadcast)."""
    rng = np.random.default_rng(13)
    A, B = _rand("float32", (3, 9, 10), rng), _rand("float32", (3, 10, 11), rng)
    C = np.zeros((3, 9, 11), np.float32)
    f = _compile("mm", "float32", 9, 10, 11, a_strides=(10, 1), b_strides=(11, 1))
    for i in range(3):
        f(A[i].ctypes.data, B[i].ctypes.data, C[i].ctypes.data)
    for i in range(3):
        _check(C[i], A[i], B[i])
    mod, name = ir.Module(), jit.unique_name("test_batched")
    kern = mm.emit_matmul(mod, name + "_k", "float32", 9, 10, 11, a_strides=(10, 1),
                          b_strides=(11, 1))
    mm.emit_batched(mod, name, kern, "float32", 3, 90, 0, 99)
    jit.compile_ir(mod)
    C2 = np.zeros((3, 9, 11), np.float32)
    ctypes.CFUNCTYPE(None, P, P, P)(jit.function_address(name))(
        A.ctypes.data, B.ctypes.data, C2.ctypes.data)
    for i in range(3):
        _check(C2[i], A[i], B[0])


# ---------------------------------------------------------------------------------------------
# BLAS path

blas_only = pytest.mark.skipif(not blas.available(), reason=f"BLAS path: {blas.reason()}")


@functools.lru_cache(maxsize=None)
def _compile_gemm(dtype, M, K, N, a_t, b_t):
    mod = ir.Module()
    name = jit.unique_name("test_gemm")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType()] * 3), name)
    b = ir.IRBuilder(fn.append_basic_block())
    blas.emit_gemm_call(b, dtype, M, K, N, fn.args[0], a_t, M if a_t else K, fn.args[1], b_t,
                        K if b_t else N, fn.args[2], N)
    b.ret_void()
    jit.compile_ir(mod)
    return ctypes.CFUNCTYPE(None, P, P, P)(jit.function_address(name))


@blas_only
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 7, 3), (64, 100, 33), (128, 784, 512)])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, False), (False, True)])
def test_blas_gemm(dtype, shape, a_t, b_t):
    M, K, N = shape
    rng = np.random.default_rng(17)
    A = _rand(dtype, (K, M) if a_t else (M, K), rng)
    B = _rand(dtype, (N, K) if b_t else (K, N), rng)
    C = np.zeros((M, N), dtype)
    _compile_gemm(dtype, M, K, N, a_t, b_t)(A.ctypes.data, B.ctypes.data, C.ctypes.data)
    _check(C, A.T if a_t else A, B.T if b_t else B)


@blas_only
def test_blas_threads_restored_and_dispatch():
    before = blas.get_num_threads()
    with blas.threads(1):
        assert blas.get_num_threads() == 1
    assert blas.get_num_threads() == before
    assert blas.choose_path("float64", 8, 8, 8) == "kernel"
    assert blas.choose_path("int64", 2048, 2048, 2048) == "kernel"
    assert blas.choose_path("float32", 2048, 2048, 2048) == "blas"
    assert blas.choose_path("float64", 512, 512, 512, threads=2) == "blas"
