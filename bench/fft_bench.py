"""The native FFT against NumPy's pocketfft: speed and accuracy tables (markdown).

    python bench/fft_bench.py [--speed] [--accuracy] [--quick]

Speed: ``np.fft.fft`` / ``rfft`` (and ``ifft`` / ``irfft``) traced with ``tj.trace`` and run
on one thread, against NumPy on the same array, n = 2^6 ... 2^20 and a batch of 1000 rows of 256,
both precisions. Times are process CPU time (this shared machine's other load does not count),
NumPy and tracejit interleaved call by call, min and median over the repeats; the ratio is
NumPy's time over tracejit's (> 1: tracejit faster).

Accuracy: the largest error relative to the largest magnitude of an exact DFT (NumPy's
long double pocketfft), for tracejit and for NumPy, over random inputs of every length 1..64,
primes and powers of two up to 2^20.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tracejit as tj  # noqa: E402

PRIMES = [67, 97, 127, 251, 509, 1021, 2039, 4093, 8191]


def _cpu_times(fns, repeat):
    """Per-call process CPU times of each of ``fns``, called in turn ``repeat`` times (each
    timing runs enough calls for ~2 ms)."""
    calls = []
    for fn in fns:
        fn()
        t0, n = time.process_time(), 0
        while time.process_time() - t0 < 2e-3:
            fn()
            n += 1
        calls.append(max(1, n))
    times = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            t0 = time.process_time()
            for _ in range(calls[k]):
                fn()
            times[k].append((time.process_time() - t0) / calls[k])
    return [(min(t), float(np.median(t))) for t in times]


def _fmt(t):
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def speed(quick):
    rng = np.random.default_rng(0)
    shapes = [(1 << k,) for k in range(6, 21, 2 if quick else 1)] + [(1000, 256)]
    print("| transform | shape | dtype | numpy min / median | tracejit min / median | "
          "ratio (min) | ratio (median) |")
    print("|---|---|---|---|---|---:|---:|")
    saved = tj.config.num_threads
    tj.config.num_threads = 1
    try:
        for shape in shapes:
            n = shape[-1]
            for name, complex_input in (("fft", True), ("rfft", False), ("ifft", True),
                                        ("irfft", True)):
                for dt in (np.float64, np.float32):
                    x = rng.standard_normal(shape).astype(dt)
                    if complex_input:
                        x = (x + 1j * rng.standard_normal(shape)).astype(
                            np.complex128 if dt == np.float64 else np.complex64)
                    if name == "irfft":
                        x = np.ascontiguousarray(x[..., : n // 2 + 1])
                    fn = getattr(np.fft, name)
                    args = (n,) if name == "irfft" else ()
                    f = tj.trace(lambda a: fn(a, *args))
                    assert f.lower(x).executable.native
                    repeat = 5 if n >= 1 << 18 else 11
                    (nl, nm), (tl, tm) = _cpu_times([lambda: fn(x, *args), lambda: f(x)], repeat)
                    print(f"| {name} | {'x'.join(map(str, shape))} | {x.dtype.name} | "
                          f"{_fmt(nl)} / {_fmt(nm)} | {_fmt(tl)} / {_fmt(tm)} | {nl / tl:.2f} | "
                          f"{nm / tm:.2f} |", flush=True)
    finally:
        tj.config.num_threads = saved


def _error(got, exact):
    return float(np.abs(got - exact).max() / max(np.abs(exact).max(), 1e-300))


def accuracy(quick):
    rng = np.random.default_rng(1)
    top = 14 if quick else 20
    groups = [("1..64", list(range(1, 65))), ("primes 67..8191", PRIMES),
              (f"2^7..2^{top}", [1 << k for k in range(7, top + 1)])]
    print("| lengths | transform | dtype | tracejit max error | numpy max error | worst ratio |")
    print("|---|---|---|---:|---:|---:|")
    for label, ns in groups:
        for name in ("fft", "ifft", "rfft", "irfft"):
            for dt in (np.float64, np.float32):
                worst_t = worst_n = worst_ratio = 0.0
                for n in ns:
                    shape = n // 2 + 1 if name == "irfft" else n
                    x = rng.standard_normal(shape)
                    if name != "rfft":
                        x = x + 1j * rng.standard_normal(shape)
                    cdt = np.complex128 if dt == np.float64 else np.complex64
                    x = x.astype(dt if name == "rfft" else cdt)
                    fn = getattr(np.fft, name)
                    f = tj.trace(lambda a: fn(a, n))
                    wide = x.astype(np.longdouble if name == "rfft" else np.clongdouble)
                    exact = fn(wide, n)
                    et, en = _error(f(x), exact), _error(fn(x, n), exact)
                    worst_t, worst_n = max(worst_t, et), max(worst_n, en)
                    worst_ratio = max(worst_ratio, et / max(en, np.finfo(dt).eps / 4))
                print(f"| {label} | {name} | {np.dtype(dt).name} | {worst_t:.2e} | "
                      f"{worst_n:.2e} | {worst_ratio:.2f} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.speed or not a.accuracy:
        speed(a.quick)
    if a.accuracy or not a.speed:
        accuracy(a.quick)


if __name__ == "__main__":
    main()
