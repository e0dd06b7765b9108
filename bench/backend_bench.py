"""Benchmark of the llvm backend (issue 4).

1. The fused expression ``tanh(x)*exp(-0.5*y*y) + x*y/(1+x*x)``, n = 1e6, f64 and f32, against
   NumPy: min and median wall time over ``--repeat`` calls, plus min process CPU time per call
   (the notes' method on a shared machine), for 1 thread and for all threads.
2. First-call time (trace + compile) of 50 unrolled steps ``x = x - 0.1*sin(x)*cos(x) + 0.01*x*x``
   followed by ``sum(x)``, n = 1000, and the steady-state call time.

Run: ``python bench/backend_bench.py [--repeat 50]``.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import tracejit as tj
from tracejit.backend.engine import threads


def expr(x, y):
    return np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x)


def timings(fn, repeat):
    wall, cpu = [], []
    fn()
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall) * 1e3, float(np.median(wall)) * 1e3, min(cpu) * 1e3


def fused(repeat):
    print("fused expression, n = 1e6: wall min / median ms, min CPU ms per call")
    rng = np.random.default_rng(0)
    for dt in (np.float64, np.float32):
        x = rng.standard_normal(1_000_000).astype(dt)
        y = rng.standard_normal(1_000_000).astype(dt)
        f = tj.jit(expr, backend="llvm")
        err = np.max(np.abs(f(x, y) - expr(x, y)))
        n_min, n_med, n_cpu = timings(lambda: expr(x, y), repeat)
        print(f"  {np.dtype(dt).name}: numpy        {n_min:7.3f} / {n_med:7.3f}  cpu {n_cpu:7.3f}")
        before = threads.get_num_threads()
        for nt in sorted({1, before}):
            threads.set_num_threads(nt)
            t_min, t_med, t_cpu = timings(lambda: f(x, y), repeat)
            print(f"  {np.dtype(dt).name}: tracejit {nt} th {t_min:7.3f} / {t_med:7.3f}  cpu "
                  f"{t_cpu:7.3f}   speedup (min) {n_min / t_min:4.1f}x   max abs err {err:.2e}")
        threads.set_num_threads(before)


def steps(x):
    for _ in range(50):
        x = x - 0.1 * np.sin(x) * np.cos(x) + 0.01 * x * x
    return np.sum(x)


def first_call(repeat):
    x = np.linspace(-1, 1, 1000)
    tj.jit(lambda v: np.sin(v) * np.cos(v), backend="llvm")(x)   # math module: once per process
    f = tj.jit(steps, backend="llvm")
    t0 = time.perf_counter()
    out = f(x)
    first = time.perf_counter() - t0
    exe = f.lower(x).executable
    t_min, t_med, _ = timings(lambda: f(x), repeat)
    n_min, n_med, _ = timings(lambda: steps(x), repeat)
    print(f"50 unrolled steps + sum, n = 1000: first call {first * 1e3:.1f} ms "
          f"(emit {exe.compile_seconds['emit'] * 1e3:.1f} ms, LLVM {exe.compile_seconds['llvm'] * 1e3:.1f} ms), "
          f"then {t_min * 1e3:.1f} / {t_med * 1e3:.1f} us per call; NumPy {n_min * 1e3:.1f} / "
          f"{n_med * 1e3:.1f} us; |diff| {abs(out - steps(x)):.1e}")
    print(f.ir(x, stage="fused").splitlines()[0])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    fused(args.repeat)
    first_call(args.repeat)
