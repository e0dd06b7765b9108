"""A persistent native worker pool, written in LLVM IR, for ``parallel_for`` in compiled code.

    void @tj_parallel_for(ptr %fn, ptr %ctx, i64 %n, i64 %grain)

runs ``fn(ctx, start, end)`` (``void (ptr, i64, i64)``) over [0, n) split into at most
``get_num_threads()`` contiguous chunks and returns when all are done. The partition depends
only on (n, grain, thread count): with ``nblocks = ceil(n / grain)`` and
``nchunks = min(threads, nblocks)``, chunk k covers blocks ``[k*q + min(k, r), ...)`` where
``q, r = divmod(nblocks, nchunks)``; boundaries are multiples of ``grain`` (the last one is n).
The calling thread runs chunk 0; worker w runs chunk w.

Invariants and why:
- one job at a time: a ``busy`` flag is taken with a compare-exchange; a call that finds it taken
  (a nested call from inside a worker or the caller's own chunk, or another Python thread) runs
  serially on its own thread instead of waiting, so nothing can deadlock;
- each worker has its own ``go`` counter (in its own cache line) that the caller bumps to post a
  job, so a worker that is not part of a job never reads the job fields while they change;
- waiting spins on ``pause`` for a bounded time (~50 us of TSC ticks, like OpenMP's blocktime)
  and then sleeps with ``futex(FUTEX_WAIT_PRIVATE)``; the waker checks a ``sleeping`` flag so the
  hot path makes no syscall. Flag and counter use seq_cst so a wake-up cannot be missed;
- workers are created lazily (``pthread_create``) up to the thread count the first time a job
  needs them and live until ``shutdown()`` (registered with ``atexit``, so they exit before the
  JIT memory goes away); after ``fork`` the child forgets them.

The pool module is library code: compiled on first use (its object code cached on disk in
``config.library_cache_dir``, so later processes just load it) and exported under the fixed name
``tj_parallel_for`` (registered with ``jit.add_symbol``) so other JIT modules just declare it.
"""
from __future__ import annotations

import atexit
import ctypes
import platform
import threading
import time

from llvmlite import ir

from ... import forksafe
from ...config import config, on_set
from . import jit, objects

MAX_THREADS = 256
SPIN_SECONDS = 50e-6           # bounded spin before a futex sleep
YIELD_AFTER_SECONDS = 3e-6     # pure pause-spin before mixing in sched_yield
_SLOT_INTS = 16                    # one 64-byte line per worker: [go, sleeping, pad...]
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine(), 202)
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129   # *_PRIVATE

i1, i32, i64, ptr = ir.IntType(1), ir.IntType(32), ir.IntType(64), ir.PointerType()
void = ir.VoidType()
_JOB_FIELDS = ("fn", "ctx", "n", "grain", "nchunks")   # i64 slots of the job cache line
BODY_TY = ir.FunctionType(void, [ptr, i64, i64])
PARALLEL_FOR_TY = ir.FunctionType(void, [ptr, ptr, i64, i64])


def declare_parallel_for(module) -> ir.Function:
    """Declare ``tj_parallel_for`` in ``module`` (compiling the pool first if needed)."""
    parallel_for_address()
    fn = module.globals.get("tj_parallel_for")
    if fn is None:
        fn = ir.Function(module, PARALLEL_FOR_TY, "tj_parallel_for")
    return fn


def _c(ty, v):
    return ir.Constant(ty, v)


class _Emitter:
    """Builds the pool module; one method per function."""

    def __init__(self):
        m = self.m = ir.Module("tj_pool")

        def gvar(name, ty, init=0):
            g = ir.GlobalVariable(m, ty, name)
            g.initializer = ir.Constant(ty, init if not isinstance(ty, ir.ArrayType) else None)
            g.align = 64
            return g

        self.nthreads = gvar("tj_pool_nthreads", i32, 1)
        self.busy = gvar("tj_pool_busy", i32)
        self.started = gvar("tj_pool_started", i32)
        self.shutdown_flag = gvar("tj_pool_shutdown_flag", i32)
        self.done = gvar("tj_pool_done", i32)
        self.caller_sleeping = gvar("tj_pool_caller_sleeping", i32)
        self.spin_ticks = gvar("tj_pool_spin_ticks", i64, 150_000)
        self.yield_ticks = gvar("tj_pool_yield_ticks", i64, 10_000)
        self.sched_yield = ir.Function(m, ir.FunctionType(i32, []), "sched_yield")
        # The job: one cache line, so a worker picks it up with a single line transfer.
        self.job_line = gvar("tj_pool_job", ir.ArrayType(i64, 8))
        self.slots = gvar("tj_pool_slots", ir.ArrayType(i32, MAX_THREADS * _SLOT_INTS))
        self.tids = gvar("tj_pool_tids", ir.ArrayType(i64, MAX_THREADS))
        self.syscall = ir.Function(m, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
        self.cycles = ir.Function(m, ir.FunctionType(i64, []), "llvm.readcyclecounter")
        self.pause = (ir.Function(m, ir.FunctionType(void, []), "llvm.x86.sse2.pause")
                      if platform.machine() == "x86_64" else None)

    # -- small helpers -------------------------------------------------------------------------
    def job_field(self, b, k):
        idx = list(_JOB_FIELDS).index(k)
        return b.gep(self.job_line, [_c(i64, 0), _c(i64, idx)])

    def slot(self, b, w, k):
        """Pointer to int k of worker w's cache line (0: go counter, 1: sleeping flag)."""
        idx = b.add(b.mul(w, _c(i64, _SLOT_INTS)), _c(i64, k))
        return b.gep(self.slots, [_c(i64, 0), idx])

    def futex(self, b, addr, op, val):
        b.call(self.syscall, [_c(i64, _SYS_FUTEX), addr, _c(i32, op), val, ir.Constant(ptr, None)])

    def relax(self, b):
        if self.pause is not None:
            b.call(self.pause, [])

    def bounds(self, b, k, n, grain, nchunks):
        """(start, end) of chunk k: whole blocks of ``grain``, spread as evenly as possible."""
        nblocks = b.add(b.sdiv(b.sub(n, _c(i64, 1)), grain), _c(i64, 1))
        q, r = b.sdiv(nblocks, nchunks), b.srem(nblocks, nchunks)

        def block_start(kk):
            lt = b.icmp_signed("<", kk, r)
            return b.add(b.mul(kk, q), b.select(lt, kk, r))

        def clamp(blk):
            v = b.mul(blk, grain)
            return b.select(b.icmp_signed("<", v, n), v, n)

        return clamp(block_start(k)), clamp(block_start(b.add(k, _c(i64, 1))))

    def wait_until(self, fn, b, addr, pred, sleep_flag):
        """Spin (bounded by spin_ticks) until ``pred(value)``, then futex-sleep on ``addr`` with
        ``sleep_flag`` raised; returns (builder, value) once ``pred`` holds."""
        top = fn.append_basic_block("wait.top")
        spin = fn.append_basic_block("wait.spin")
        sleep = fn.append_basic_block("wait.sleep")
        out = fn.append_basic_block("wait.done")
        b.branch(top)
        b.position_at_end(top)
        t0 = b.call(self.cycles, [])
        b.branch(spin)
        b.position_at_end(spin)
        v = b.load_atomic(addr, "acquire", 4, typ=i32)
        ok = pred(b, v)
        cont = fn.append_basic_block("wait.relax")
        b.cbranch(ok, out, cont)
        b.position_at_end(cont)
        elapsed = b.sub(b.call(self.cycles, []), t0)
        # After a short pure spin, yield instead of pause: if the scheduler put the waker and
        # the wakee on one CPU (wake-affine after a futex wake-up), pausing would just burn the
        # other side's time slice until the spin budget runs out.
        early = b.icmp_unsigned("<", elapsed, b.load(self.yield_ticks, typ=i64))
        with b.if_else(early) as (then, otherwise):
            with then:
                self.relax(b)
            with otherwise:
                b.call(self.sched_yield, [])
        budget = b.load(self.spin_ticks, typ=i64)
        b.cbranch(b.icmp_unsigned("<", elapsed, budget), spin, sleep)
        b.position_at_end(sleep)
        b.store_atomic(_c(i32, 1), sleep_flag, "seq_cst", 4)
        v2 = b.load_atomic(addr, "seq_cst", 4, typ=i32)
        really = fn.append_basic_block("wait.futex")
        back = fn.append_basic_block("wait.woken")
        b.cbranch(pred(b, v2), back, really)
        b.position_at_end(really)
        self.futex(b, addr, _FUTEX_WAIT, v2)
        b.branch(back)
        b.position_at_end(back)
        b.store_atomic(_c(i32, 0), sleep_flag, "seq_cst", 4)
        b.branch(top)
        b.position_at_end(out)
        return b, v

    # -- functions -----------------------------------------------------------------------------
    def worker(self):
        """ptr tj_pool_worker(ptr arg): arg = w | (initial go value << 32)."""
        fn = ir.Function(self.m, ir.FunctionType(ptr, [ptr]), "tj_pool_worker")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        arg = b.ptrtoint(fn.args[0], i64)
        w = b.and_(arg, _c(i64, 0xFFFFFFFF))
        seen0 = b.trunc(b.lshr(arg, _c(i64, 32)), i32)
        go, sleeping = self.slot(b, w, 0), self.slot(b, w, 1)
        entry = b.block
        loop = fn.append_basic_block("loop")
        b.branch(loop)
        b.position_at_end(loop)
        seen = b.phi(i32, "seen")
        seen.add_incoming(seen0, entry)
        b, g = self.wait_until(fn, b, go, lambda bb, v: bb.icmp_unsigned("!=", v, seen), sleeping)
        stop = b.load_atomic(self.shutdown_flag, "acquire", 4, typ=i32)
        run, exit_ = fn.append_basic_block("run"), fn.append_basic_block("exit")
        b.cbranch(b.icmp_unsigned("!=", stop, _c(i32, 0)), exit_, run)
        ir.IRBuilder(exit_).ret(ir.Constant(ptr, None))
        b.position_at_end(run)
        # Fields are stored as i64; inttoptr to a typed function pointer gives llvmlite the
        # callee type (it prints as ``ptr``).
        job = {k: b.load(self.job_field(b, k), typ=i64) for k in _JOB_FIELDS}
        job["fn"] = b.inttoptr(job["fn"], BODY_TY.as_pointer())
        job["ctx"] = b.inttoptr(job["ctx"], ptr)
        start, end = self.bounds(b, w, job["n"], job["grain"], job["nchunks"])
        b.call(job["fn"], [job["ctx"], start, end])
        b.atomic_rmw("add", self.done, _c(i32, 1), "seq_cst")
        wake = b.load_atomic(self.caller_sleeping, "seq_cst", 4, typ=i32)
        with b.if_then(b.icmp_unsigned("!=", wake, _c(i32, 0))):
            self.futex(b, self.done, _FUTEX_WAKE, _c(i32, 1))
        seen.add_incoming(g, b.block)
        b.branch(loop)
        return fn

    def parallel_for(self, worker):
        typed = ir.FunctionType(void, [BODY_TY.as_pointer(), ptr, i64, i64])  # same ABI
        fn = ir.Function(self.m, typed, "tj_parallel_for")
        body, ctx, n, grain = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        ret = fn.append_basic_block("ret")
        ir.IRBuilder(ret).ret_void()
        serial = fn.append_basic_block("serial")
        sb = ir.IRBuilder(serial)
        sb.call(body, [ctx, _c(i64, 0), n])
        sb.ret_void()

        nonempty = fn.append_basic_block("nonempty")
        b.cbranch(b.icmp_signed(">", n, _c(i64, 0)), nonempty, ret)
        b.position_at_end(nonempty)
        g = b.select(b.icmp_signed("<", grain, _c(i64, 1)), _c(i64, 1), grain)
        nblocks = b.add(b.sdiv(b.sub(n, _c(i64, 1)), g), _c(i64, 1))
        threads = b.zext(b.load(self.nthreads, typ=i32), i64)
        nchunks = b.select(b.icmp_signed("<", threads, nblocks), threads, nblocks)
        take = fn.append_basic_block("take")
        b.cbranch(b.icmp_signed("<=", nchunks, _c(i64, 1)), serial, take)
        b.position_at_end(take)
        got = b.extract_value(b.cmpxchg(self.busy, _c(i32, 0), _c(i32, 1), "acquire", "monotonic"), 1)
        spawn_check = fn.append_basic_block("spawn_check")
        b.cbranch(got, spawn_check, serial)

        # Spawn missing workers 1..nchunks-1 (we hold busy, so nobody else does).
        b.position_at_end(spawn_check)
        started = b.zext(b.load(self.started, typ=i32), i64)
        spawn_loop, spawn_body, spawned = (fn.append_basic_block(x) for x in
                                           ("spawn", "spawn.body", "spawned"))
        first = b.add(started, _c(i64, 1))
        pre = b.block
        b.branch(spawn_loop)
        b.position_at_end(spawn_loop)
        w = b.phi(i64, "w")
        w.add_incoming(first, pre)
        b.cbranch(b.icmp_signed("<", w, nchunks), spawn_body, spawned)
        b.position_at_end(spawn_body)
        go0 = b.zext(b.load_atomic(self.slot(b, w, 0), "acquire", 4, typ=i32), i64)
        arg = b.inttoptr(b.or_(w, b.shl(go0, _c(i64, 32))), ptr)
        create = ir.Function(self.m, ir.FunctionType(i32, [ptr, ptr, ptr, ptr]), "pthread_create")
        tid = b.gep(self.tids, [_c(i64, 0), w])
        rc = b.call(create, [tid, ir.Constant(ptr, None), worker, arg])
        ok_block = fn.append_basic_block("spawn.ok")
        b.cbranch(b.icmp_signed("==", rc, _c(i32, 0)), ok_block, spawned)
        b.position_at_end(ok_block)
        b.store(b.trunc(w, i32), self.started)
        w.add_incoming(b.add(w, _c(i64, 1)), ok_block)
        b.branch(spawn_loop)

        # If pthread_create failed, use the workers that exist.
        b.position_at_end(spawned)
        have = b.add(b.zext(b.load(self.started, typ=i32), i64), _c(i64, 1))
        nchunks = b.select(b.icmp_signed("<", have, nchunks), have, nchunks)
        post = fn.append_basic_block("post")
        release_serial = fn.append_basic_block("release_serial")
        b.cbranch(b.icmp_signed("<=", nchunks, _c(i64, 1)), release_serial, post)
        rb = ir.IRBuilder(release_serial)
        rb.store_atomic(_c(i32, 0), self.busy, "release", 4)
        rb.branch(serial)

        b.position_at_end(post)
        for k, v in (("fn", body), ("ctx", ctx), ("n", n), ("grain", g), ("nchunks", nchunks)):
            b.store(b.ptrtoint(v, i64) if k in ("fn", "ctx") else v, self.job_field(b, k))
        b.store_atomic(_c(i32, 0), self.done, "seq_cst", 4)
        wake_loop, wake_body, woken = (fn.append_basic_block(x)
                                       for x in ("wake", "wake.body", "woken"))
        pre = b.block
        b.branch(wake_loop)
        b.position_at_end(wake_loop)
        w = b.phi(i64, "w")
        w.add_incoming(_c(i64, 1), pre)
        b.cbranch(b.icmp_signed("<", w, nchunks), wake_body, woken)
        b.position_at_end(wake_body)
        go = self.slot(b, w, 0)
        b.atomic_rmw("add", go, _c(i32, 1), "seq_cst")
        asleep = b.load_atomic(self.slot(b, w, 1), "seq_cst", 4, typ=i32)
        with b.if_then(b.icmp_unsigned("!=", asleep, _c(i32, 0))):
            self.futex(b, go, _FUTEX_WAKE, _c(i32, 1))
        w.add_incoming(b.add(w, _c(i64, 1)), b.block)
        b.branch(wake_loop)

        b.position_at_end(woken)
        start, end = self.bounds(b, _c(i64, 0), n, g, nchunks)
        b.call(body, [ctx, start, end])
        need = b.trunc(b.sub(nchunks, _c(i64, 1)), i32)
        b, _ = self.wait_until(fn, b, self.done, lambda bb, v: bb.icmp_unsigned("==", v, need),
                               self.caller_sleeping)
        b.store_atomic(_c(i32, 0), self.busy, "release", 4)
        b.ret_void()

    def shutdown(self):
        """i32 tj_pool_shutdown(): stop and join all workers; 0 if the pool was busy."""
        fn = ir.Function(self.m, ir.FunctionType(i32, []), "tj_pool_shutdown")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        got = b.extract_value(b.cmpxchg(self.busy, _c(i32, 0), _c(i32, 1), "acquire", "monotonic"), 1)
        with b.if_then(b.not_(got)):
            b.ret(_c(i32, 0))
        b.store_atomic(_c(i32, 1), self.shutdown_flag, "seq_cst", 4)
        started = b.zext(b.load(self.started, typ=i32), i64)
        join = ir.Function(self.m, ir.FunctionType(i32, [i64, ptr]), "pthread_join")
        for phase in ("wake", "join"):
            pre = b.block
            loop, body, done = (fn.append_basic_block(f"{phase}{x}") for x in ("", ".body", ".done"))
            b.branch(loop)
            b.position_at_end(loop)
            w = b.phi(i64)
            w.add_incoming(_c(i64, 1), pre)
            b.cbranch(b.icmp_signed("<=", w, started), body, done)
            b.position_at_end(body)
            if phase == "wake":
                go = self.slot(b, w, 0)
                b.atomic_rmw("add", go, _c(i32, 1), "seq_cst")
                self.futex(b, go, _FUTEX_WAKE, _c(i32, 1))
            else:
                tid = b.load(b.gep(self.tids, [_c(i64, 0), w]), typ=i64)
                b.call(join, [tid, ir.Constant(ptr, None)])
            w.add_incoming(b.add(w, _c(i64, 1)), b.block)
            b.branch(loop)
            b.position_at_end(done)
        b.store(_c(i32, 0), self.started)
        b.store_atomic(_c(i32, 0), self.shutdown_flag, "seq_cst", 4)
        b.store_atomic(_c(i32, 0), self.busy, "release", 4)
        b.ret(_c(i32, 1))

    def after_fork(self):
        """void tj_pool_after_fork(): in a forked child the workers do not exist."""
        fn = ir.Function(self.m, ir.FunctionType(void, []), "tj_pool_after_fork")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        for g in (self.started, self.busy, self.done, self.caller_sleeping, self.shutdown_flag):
            b.store(_c(i32, 0), g)
        b.ret_void()

    def build(self):
        self.parallel_for(self.worker())
        self.shutdown()
        self.after_fork()
        for name, ty, g in (("nthreads", i32, self.nthreads), ("spin_ticks", i64, self.spin_ticks),
                            ("yield_ticks", i64, self.yield_ticks)):
            fn = ir.Function(self.m, ir.FunctionType(void, [ty]), f"tj_pool_set_{name}")
            b = ir.IRBuilder(fn.append_basic_block("entry"))
            b.store(fn.args[0], g)
            b.ret_void()
        fn = ir.Function(self.m, ir.FunctionType(i64, []), "tj_pool_cycles")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(self.cycles, []))
        return self.m


# ---------------------------------------------------------------------------------------------
# Python side

_lock = threading.Lock()
jit.register_fork_lock(_lock)
_pool = None          # dict of ctypes functions once compiled
_num_threads = None


def _default_threads() -> int:
    """``config.num_threads`` (the env var TRACEJIT_NUM_THREADS is read in config.py)."""
    return config.num_threads


def _compile_pool():
    global _pool, _num_threads
    import sys
    jit.compile_library("pool", lambda: _Emitter().build(), objects.source_key(sys.modules[__name__]),
                        opt=2)
    addr = {name: jit.function_address(name) for name in (
        "tj_parallel_for", "tj_pool_shutdown", "tj_pool_after_fork", "tj_pool_set_nthreads",
        "tj_pool_set_spin_ticks", "tj_pool_set_yield_ticks", "tj_pool_cycles")}
    jit.add_symbol("tj_parallel_for", addr["tj_parallel_for"])
    # ctypes.CFUNCTYPE drops the GIL around each call, which joining workers needs.
    c = ctypes.CFUNCTYPE
    pool = {
        "parallel_for": addr["tj_parallel_for"],
        "call": c(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
            addr["tj_parallel_for"]),
        "shutdown": c(ctypes.c_int32)(addr["tj_pool_shutdown"]),
        "after_fork": c(None)(addr["tj_pool_after_fork"]),
        "set_nthreads": c(None, ctypes.c_int32)(addr["tj_pool_set_nthreads"]),
        "set_spin": c(None, ctypes.c_int64)(addr["tj_pool_set_spin_ticks"]),
        "set_yield": c(None, ctypes.c_int64)(addr["tj_pool_set_yield_ticks"]),
        "cycles": c(ctypes.c_int64)(addr["tj_pool_cycles"]),
    }
    # Calibrate the spin budget in cycle-counter ticks (TSC rate is not known a priori). Both
    # clocks count wall time, so a short window suffices (~1 us of read skew in 200 us: 0.5%,
    # plenty for a spin budget); it is on the first compile's path.
    t0, c0 = time.perf_counter(), pool["cycles"]()
    while time.perf_counter() - t0 < 2e-4:
        pass
    rate = (pool["cycles"]() - c0) / (time.perf_counter() - t0)
    pool["set_spin"](max(1000, int(rate * SPIN_SECONDS)))
    pool["set_yield"](max(100, int(rate * YIELD_AFTER_SECONDS)))
    pool["set_nthreads"](_clamp(_num_threads or _default_threads()))
    _pool = pool
    atexit.register(shutdown)
    forksafe.in_child(pool["after_fork"])


def _clamp(n) -> int:
    return max(1, min(int(n), MAX_THREADS))


def _get_pool():
    if _pool is None:
        with _lock:
            if _pool is None:
                _compile_pool()
    return _pool


def parallel_for_address() -> int:
    """Address of ``tj_parallel_for`` (compiles the pool module on first use)."""
    return _get_pool()["parallel_for"]


def parallel_for(fn_address: int, ctx: int, n: int, grain: int = 1) -> None:
    """Run ``tj_parallel_for`` from Python (GIL released); mainly for tests and benchmarks."""
    _get_pool()["call"](fn_address, ctx, n, grain)


def set_num_threads(n: int) -> None:
    """Number of threads (caller included) a parallel_for may use; clamped to [1, 256].
    Assigning ``tracejit.config.num_threads`` calls this; the pool reads the value on every
    parallel call, so already-compiled kernels follow it at once."""
    global _num_threads
    _num_threads = _clamp(n)
    if _pool is not None:
        _pool["set_nthreads"](_num_threads)


def get_num_threads() -> int:
    """Current thread count (default: ``config.num_threads``, i.e. all usable cores)."""
    return _num_threads or _clamp(_default_threads())


on_set("num_threads", set_num_threads)


def shutdown() -> bool:
    """Stop and join the workers (they restart on the next parallel call). Returns False if a
    parallel_for was running, in which case nothing is done."""
    if _pool is None:
        return True
    return bool(_pool["shutdown"]())
