"""Single-thread GFLOP/s of the generated matmul kernels vs numpy.matmul (and JIT->OpenBLAS).

Run: ``python bench/matmul_bench.py [--rounds 15]``.  Not part of the test suite.
Pins the process to CPU 0 and sets the BLAS thread env vars *before* numpy is imported.
Timings use interleaved rounds (each implementation timed once per round, `reps` calls per
sample, pointers precomputed so ctypes overhead is ~0.3 µs per call); min and median over rounds.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.pop("OPENBLAS_CORETYPE", None)  # a forced Haswell core halves OpenBLAS on AVX-512
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {0})

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from tracejit.backend.engine import jit  # noqa: E402
from tracejit.backend.matmul import blas, tiled as mm  # noqa: E402

P = ctypes.c_void_p
FN3 = ctypes.CFUNCTYPE(None, P, P, P)


def compile_fn(emit):
    """Emit with ``emit(module, name)``, compile, return (ctypes fn, compile seconds)."""
    mod, name = ir.Module(), jit.unique_name("bench")
    t0 = time.perf_counter()
    emit(mod, name)
    jit.compile_ir(mod)
    return FN3(jit.function_address(name)), time.perf_counter() - t0


def gemm_via_blas(dtype, M, K, N, b_trans):
    def emit(mod, name):
        fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType()] * 3), name)
        b = ir.IRBuilder(fn.append_basic_block())
        blas.emit_gemm_call(b, dtype, M, K, N, fn.args[0], False, K, fn.args[1], b_trans,
                            K if b_trans else N, fn.args[2], N)
        b.ret_void()
    return compile_fn(emit)[0]


def bench_case(label, flops, impls, rounds):
    """impls: {name: zero-arg callable doing one product}; prints min/median GFLOP/s."""
    reps = max(1, int(2e7 / flops))
    samples = {k: [] for k in impls}
    for _ in range(rounds):
        for name, call in impls.items():
            t0 = time.perf_counter()
            for _ in range(reps):
                call()
            samples[name].append((time.perf_counter() - t0) / reps)
    cells = []
    for name, ts in samples.items():
        cells.append(f"{name} {flops / min(ts) / 1e9:6.1f}/{flops / statistics.median(ts) / 1e9:6.1f}")
    print(f"{label:<30} " + "  ".join(cells), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    rounds = ap.parse_args().rounds
    have_blas = blas.available()
    print(f"host {jit.host_cpu()[0]}, BLAS path: {blas.reason()}; GFLOP/s as max/median")
    rng = np.random.default_rng(0)
    for dtype in ("float64", "float32"):
        for M, K, N, b_t in ((64, 64, 64, False), (128, 784, 512, False), (512, 512, 512, False),
                             (128, 512, 784, True), (1024, 1024, 1024, False)):
            A = rng.standard_normal((M, K)).astype(dtype)
            B = rng.standard_normal((N, K) if b_t else (K, N)).astype(dtype)
            Bv = B.T if b_t else B
            C, C2 = np.empty((M, N), dtype), np.empty((M, N), dtype)
            f, ct = compile_fn(lambda mod, name: mm.emit_matmul(
                mod, name, dtype, M, K, N, a_strides=(K, 1), b_strides=(1, K) if b_t else (N, 1)))
            pa, pb, pc = A.ctypes.data, B.ctypes.data, C.ctypes.data
            f(pa, pb, pc)
            np.testing.assert_allclose(C, A @ Bv, rtol=1e-3, atol=1e-3 * np.sqrt(K))
            impls = {"ours": lambda: f(pa, pb, pc),
                     "numpy": lambda: np.matmul(A, Bv, out=C2)}
            if have_blas:
                g = gemm_via_blas(dtype, M, K, N, b_t)
                impls["jit->blas"] = lambda: g(pa, pb, pc)
            label = f"{dtype} {M}x{K}x{N}{' B^T' if b_t else ''} (compile {ct * 1e3:.0f} ms)"
            bench_case(label, 2 * M * K * N, impls, rounds)
        M, K = 10000, 100
        A = rng.standard_normal((M, K)).astype(dtype)
        x, y, y2 = rng.standard_normal(K).astype(dtype), np.empty(M, dtype), np.empty(M, dtype)
        f, ct = compile_fn(lambda mod, name: mm.emit_matvec(mod, name, dtype, M, K,
                                                             a_strides=(K, 1)))
        pa, px, py = A.ctypes.data, x.ctypes.data, y.ctypes.data
        f(pa, px, py)
        np.testing.assert_allclose(y, A @ x, rtol=1e-3, atol=1e-3 * np.sqrt(K))
        bench_case(f"{dtype} matvec {M}x{K} (compile {ct * 1e3:.0f} ms)", 2 * M * K,
                   {"ours": lambda: f(pa, px, py), "numpy": lambda: np.matmul(A, x, out=y2)},
                   rounds)


if __name__ == "__main__":
    main()
