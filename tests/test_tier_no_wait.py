"""The hot tier never makes a call slower (issue 14 item 5).

A hot-tier compile runs on a background thread; llvmlite lets one thread into LLVM at a time and
the compile is a few long LLVM calls (pipeline, code generation). A call that needed LLVM
meanwhile (the second call of a signature builds its native entry) waited for them. While a
background compile runs, such a call now takes the Python path and leaves the entry to a later
call. Simulated here by holding LLVM's lock on another thread, as a compile does.
"""
import threading
import time

import numpy as np

import tracejit as tj
from tracejit.backend.engine import jit
from tracejit.backend.runtime import tiers

HOLD = 5.0          # seconds the simulated compile holds LLVM


def _busy_llvm():
    """Start a thread that marks a hot compile running and holds LLVM's lock for ``HOLD``
    seconds (or until released); returns (release event, thread)."""
    held, release = threading.Event(), threading.Event()

    def compile_():
        with jit._llvm_lock():
            tiers._running.set()
            held.set()
            try:
                release.wait(HOLD)
            finally:
                tiers._running.clear()
    thread = threading.Thread(target=compile_, daemon=True)
    thread.start()
    held.wait()
    return release, thread


def test_second_call_does_not_wait_for_a_background_compile():
    f = tj.jit(lambda x: np.sin(x) * 2.0 + 1.0)
    x = np.linspace(0.0, 1.0, 7)
    first = f(x)                       # compiled; the second call would build the native entry
    release, thread = _busy_llvm()
    try:
        t0 = time.perf_counter()
        second = f(x)
        took = time.perf_counter() - t0
        busy = tiers.compiling()
    finally:
        release.set()
        thread.join()
    assert busy, "the simulated compile ended before the call returned"
    assert took < HOLD / 5, f"the call waited {took:.2f} s for the background compile"
    assert len(f.specializations()) == 0       # deferred, not built
    assert second.tobytes() == first.tobytes()
    for _ in range(2):                 # the compile is over: a later call builds the entry
        third = f(x)
    assert len(f.specializations()) == 1
    assert third.tobytes() == first.tobytes()
