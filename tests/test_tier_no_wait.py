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
from tracejit import forksafe
from tracejit.backend.engine import jit
from tracejit.backend.runtime import tiers

HOLD = 5.0          # seconds the simulated compile holds LLVM


def _busy_llvm():
    """Start a thread that marks a hot compile running and holds LLVM's lock for ``HOLD``
    seconds (or until released); returns (release event, thread)."""
    held, release = threading.Event(), threading.Event()

    def compile_():
        with forksafe._llvmlite_lock():
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


def test_calls_during_a_real_slow_hot_compile(monkeypatch):
    """A real tier-up, made slow: the hot tier's ``compile_ir`` holds LLVM's lock for ``HOLD``
    seconds before compiling. Calls of the signature being tiered up (its native entry was
    built by then, and its countdown is spent) and of another compiled function return
    meanwhile, with the base tier's bits; once the compile ends the hot kernel gives the
    same bits."""
    monkeypatch.setattr(tiers, "HOT_AFTER_NS", 1.0)
    started, release = threading.Event(), threading.Event()
    compile_ir = jit.compile_ir

    def slow_compile(*args, **kwargs):
        if threading.current_thread().name == "tracejit-hot-tier":
            with forksafe._llvmlite_lock():
                started.set()
                release.wait(HOLD)
        return compile_ir(*args, **kwargs)
    monkeypatch.setattr(jit, "compile_ir", slow_compile)
    x = np.random.default_rng(5).standard_normal(2000)
    g = tj.jit(lambda x: x * 3.0 - 1.0)
    with tj.test_util.using_config(hot_tier=False):
        want_g = g(x)                   # g never tiers up
        g(x)                            # g's native entry
    f = tj.jit(lambda x: np.tanh(x) * 2.0 + np.exp(-x * x))
    want = f(x)                         # the first call spends the countdown: queued
    try:
        assert started.wait(60), "the hot compile did not start"
        t0 = time.perf_counter()
        outs = [(f(x), g(x)) for _ in range(20)]
        took = time.perf_counter() - t0
        busy = tiers.compiling()
    finally:
        release.set()
    assert busy, "the slow compile ended before the calls returned"
    assert took < HOLD / 5, f"20 calls took {took:.2f} s: they waited for the hot compile"
    for out_f, out_g in outs:
        assert out_f.tobytes() == want.tobytes()
        assert out_g.tobytes() == want_g.tobytes()
    assert tiers.wait_hot_compiles(120)
    assert f.lower(x).executable.tier == "hot"
    assert f(x).tobytes() == want.tobytes()
