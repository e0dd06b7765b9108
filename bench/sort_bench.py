"""The native sort against NumPy: a markdown table of speeds.

    python bench/sort_bench.py [--quick]

Each case is traced with ``tj.trace`` and run on one thread, against the same NumPy call on the
same array: ``argsort(kind="stable")``, ``sort`` and ``median`` at n = 10^3, 10^5, 10^6 and on
1000 rows of 1000 (float64, float32, int32), and ``searchsorted`` of 10^5 random values in a
sorted array of 10^6. The sort column also shows NumPy's default-kind ``argsort`` (introsort /
SIMD sort, not stable). Times are process CPU time (this shared machine's other load does not
count), NumPy and tracejit interleaved call by call, min and median over the repeats; the ratio
is NumPy's time over tracejit's (> 1: tracejit faster).
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tracejit as tj  # noqa: E402
from bench.fft_bench import _cpu_times, _fmt  # noqa: E402

CASES = {
    "argsort stable": (lambda a: np.argsort(a, kind="stable", axis=-1)),
    "sort": (lambda a: np.sort(a, axis=-1)),
    "median": (lambda a: np.median(a, axis=-1)),
}


def _row(name, shape, dtype, numpy_fn, traced, x, repeat):
    (nl, nm), (tl, tm) = _cpu_times([lambda: numpy_fn(*x), lambda: traced(*x)], repeat)
    print(f"| {name} | {shape} | {np.dtype(dtype).name} | {_fmt(nl)} / {_fmt(nm)} | "
          f"{_fmt(tl)} / {_fmt(tm)} | {nl / tl:.2f} | {nm / tm:.2f} |", flush=True)


def main(quick):
    rng = np.random.default_rng(0)
    shapes = [(1000,), (100000,), (1000000,), (1000, 1000)]
    if quick:
        shapes = [(1000,), (100000,)]
    print("| operation | shape | dtype | numpy min / median | tracejit min / median | "
          "ratio (min) | ratio (median) |")
    print("|---|---|---|---|---|---:|---:|")
    saved = tj.config.num_threads
    tj.config.num_threads = 1
    try:
        for shape in shapes:
            big = int(np.prod(shape)) >= 10 ** 6
            repeat = 5 if big else 11
            for dt in (np.float64, np.float32, np.int32):
                x = (rng.standard_normal(shape) * 1e6).astype(dt)
                label = "x".join(map(str, shape))
                for name, fn in CASES.items():
                    f = tj.trace(fn)
                    assert "native sort" in f.lower(x).executable.describe()
                    _row(name, label, dt, fn, f, (x,), repeat)
                _row("(numpy default argsort)", label, dt, np.argsort, tj.trace(
                    lambda a: np.argsort(a, kind="stable")), (x,), repeat)
        a = np.sort(rng.standard_normal(10 ** 6))
        v = rng.standard_normal(10 ** 5)
        f = tj.trace(lambda a, v: np.searchsorted(a, v))
        assert "native sort" in f.lower(a, v).executable.describe()
        _row("searchsorted", "10^5 in 10^6", np.float64, np.searchsorted, f, (a, v), 11)
    finally:
        tj.config.num_threads = saved


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="10^3 and 10^5 only")
    main(p.parse_args().quick)
