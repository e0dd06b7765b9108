"""Timing helpers shared by the benchmarks: min and median over repeats, optional peers."""
from __future__ import annotations

import importlib
import os
import platform
import statistics
import subprocess
import sys
import time


def timeit(fn, *, repeat=7, min_time=0.02, warmup=1):
    """(min, median) seconds per call of ``fn()``; each repeat runs enough calls for min_time."""
    for _ in range(warmup):
        fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 20:
            break
        n *= 2 if dt == 0 else max(2, int(min_time / max(dt, 1e-9)))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n)
    return min(times), statistics.median(times)


class one_core:
    """Context manager: every thread of this process (and any it starts) runs on one CPU.

    XLA starts its own worker threads whatever XLA_FLAGS say (measured: jax's "one thread" W1
    row used both cores, CPU time twice the wall time), so peers' single-core figures are taken
    pinned. Linux only; elsewhere a no-op."""

    def __enter__(self):
        self.saved = {}
        if not hasattr(os, "sched_setaffinity"):
            return self
        cpu = min(os.sched_getaffinity(0))
        for tid in os.listdir("/proc/self/task"):
            try:
                self.saved[int(tid)] = os.sched_getaffinity(int(tid))
                os.sched_setaffinity(int(tid), {cpu})
            except OSError:          # a thread that just ended
                pass
        return self

    def __exit__(self, *exc):
        for tid in os.listdir("/proc/self/task") if self.saved else ():
            try:
                os.sched_setaffinity(int(tid), self.saved.get(int(tid), set(range(os.cpu_count()))))
            except OSError:
                pass
        return False


def peer(name):
    """Import an optional comparison library, or None."""
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any failure means the column is absent
        return None


def fresh_process(code: str, repeat=3):
    """(min, median) seconds reported by ``code`` (which prints one float) in new processes."""
    vals = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-2000:])
        vals.append(float(out.stdout.strip().splitlines()[-1]))
    return min(vals), statistics.median(vals)


def machine() -> str:
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    import llvmlite
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}, llvmlite {llvmlite.__version__}")
