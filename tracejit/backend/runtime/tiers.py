"""The hot tier: when a signature proves hot, its graph is compiled again at O1 with the math
bodies inlined, in a background thread, and its calls switch to that kernel.

The base tier compiles for a short first call: no optimisation pipeline, FastISel, and math
functions called in the shared math library (``mathlib``). Inlining the math bodies and running
O1 makes W1 (tanh, exp and arithmetic over 1e6 elements) ~22% faster, and O1 alone makes long
arithmetic bodies faster too (W6's dense Hessian, a 36-op [100,100] loop: 11.4 -> 8.9 us), but
costs ~40-60 ms more compile, so it is paid only by signatures whose calls have run
``HOT_AFTER_NS`` of estimated native time (``lowering.COST``; ~20 calls of W1 at 1e6, ~20000
at 1e3; tiny calls never).

Invariants:
- candidates: fully native executables at the base tier (no matmul: those compile at O1
  already), compiled while ``config.hot_tier`` is on;
- one ``pyabi.TierCell`` per candidate holds the countdown, the current kernel and the hook;
  native entries (``pyabi.emit_entry``) and ``Executable.__call__`` count down the same cell and
  call the kernel through it, so switching is one pointer store;
- results are bit-identical between tiers: neither uses fast-math flags, fma is explicit, and
  the loop structure (vector width, unrolling, fixed reduction chunks) is the same; the one
  exception is the sign and payload of a NaN, which LLVM does not preserve through folding
  (LangRef: "Floating-point environment"), so NaN positions agree but their bits may not;
- the compile runs on one daemon thread, one at a time (``hot_lock``); it takes the engine
  lock only to add the object (``jit.compile_ir`` into a ``jit.Code``), so first calls of other signatures
  compile meanwhile; at exit queued compiles are skipped and a running one is waited for;
- a failed hot compile is logged and leaves the base tier running;
- ``os.fork`` waits for a running compile (so no LLVM lock is held in the child) and the child
  starts without a worker (one is started by its first tier-up);
- a call never waits for a background compile: llvmlite serialises every call into LLVM, and a
  hot compile is a few long ones (the pipeline, code generation), so while one runs
  (:func:`compiling`) a call does not build its native entry (``api.Traced._specialize``
  leaves that to a later call) and takes the Python path meanwhile.

The worker needs the GIL for emitting IR; a foreground loop that releases and re-takes the
GIL more often than every 5 ms without blocking (e.g. tiny calls interleaved with print) can
delay it (CPython hands the GIL over only after a 5 ms wait without a switch).
"""
from __future__ import annotations

import atexit
import functools
import logging
import queue
import threading
import weakref

import numpy as np

from ... import forksafe
from ...ir import Graph
from ..engine import jit
from ..plan.lowering import COST
from ..plan.steps import ControlStep, LoopGroup

log = logging.getLogger("tracejit")

HOT_AFTER_NS = 30e6     # estimated native time of a signature's calls before it tiers up
hot_lock = threading.Lock()        # one hot compile at a time (background or tier_up())
_worker_lock = threading.Lock()
jit.register_fork_lock(_worker_lock)
_jobs: queue.SimpleQueue = queue.SimpleQueue()
_worker = None
_running = threading.Event()       # the worker is compiling
_stopping = False


def _estimated_ns(plan) -> float:
    """Rough single-core native time of one call, from ``lowering.COST``: fused loops, and the
    sub-graphs of control steps times their trip count (``length``; a while loop counts 10)."""
    total = 0.0
    for step in plan.steps:
        if isinstance(step, LoopGroup):
            per = sum(COST.get(e.prim.name, 0.05) for e in (*step.eqns, *step.sinks))
            total += int(np.prod(step.shape, dtype=np.int64)) * \
                (per + 0.1 * (len(step.stores) + len(step.sinks)))
        elif isinstance(step, ControlStep):
            total += _graphs_ns(step.eqn)
    return total


def _graphs_ns(eqn) -> float:
    trips = eqn.params.get("length") or 10
    total = 0.0
    for p in eqn.params.values():
        for g in p if isinstance(p, (tuple, list)) else (p,):
            if not isinstance(g, Graph):
                continue
            for e in g.eqns:
                size = sum(v.ty.size for v in e.outvars if not v.ty.dynamic)
                total += trips * (size * COST.get(e.prim.name, 0.05) + _graphs_ns(e))
    return total


def new_tier_cell(exe):
    """The tier cell of a candidate (None when ``config.hot_tier`` is off): a countdown of calls
    worth ``HOT_AFTER_NS`` of estimated native time, the base kernel, and the hook."""
    from ...config import config
    from .pyabi import TierCell
    if not config.hot_tier:
        return None
    calls = int(min(HOT_AFTER_NS / max(_estimated_ns(exe.plan), 1.0), 2 ** 62)) + 1
    exe._hook = functools.partial(on_hot, weakref.ref(exe))
    exe._hot_done = threading.Event()
    return TierCell(calls, exe.kernel_address, id(exe._hook))


def on_hot(ref):
    """A candidate's countdown reached 0 (called by native entries with the GIL held, or by
    ``Executable._count_call``): queue its hot compile. Never raises."""
    from ...config import config
    try:
        exe = ref()
        if exe is not None and config.hot_tier:
            exe.tier_up(wait=False)
    except Exception:  # noqa: BLE001 - a hook called from native code must not raise
        log.warning("tracejit: could not queue a hot-tier compile", exc_info=True)


def submit(exe):
    """Queue ``exe``'s hot compile on the one background thread (started on first use)."""
    global _worker
    with _worker_lock:               # not hot_lock: the caller must not wait for a compile
        if _worker is None:
            _worker = threading.Thread(target=_work, name="tracejit-hot-tier", daemon=True)
            _worker.start()
            atexit.register(_stop_worker)
    _jobs.put(exe)


def _work():
    while True:
        job = _jobs.get()
        if job is None or _stopping:
            return
        if isinstance(job, threading.Event):       # wait_hot_compiles' marker
            job.set()
            continue
        _running.set()
        try:
            job.tier_up(wait=True)
        finally:
            _running.clear()
        del job


def compiling() -> bool:
    """Whether a hot compile is running on the background thread (holding LLVM, which runs
    one call at a time, for most of its duration)."""
    return _running.is_set()


def wait_hot_compiles(timeout: float | None = None) -> bool:
    """Wait until every hot-tier compile queued so far has finished (tests, benchmarks);
    False on timeout."""
    if _worker is None:
        return True
    done = threading.Event()
    _jobs.put(done)
    return done.wait(timeout)


def _stop_worker():
    """At exit: skip queued compiles and let a running one finish (LLVM must not be inside a
    compile while the interpreter shuts down)."""
    global _stopping
    _stopping = True
    _jobs.put(None)
    if _worker is not None:
        _worker.join(timeout=30)


def _after_fork_in_child():
    global _worker, _jobs
    _worker, _jobs = None, queue.SimpleQueue()
    _running.clear()


forksafe.register(hot_lock, forksafe.HOT)
forksafe.in_child(_after_fork_in_child)
