"""Tests of the native worker pool (threads.tj_parallel_for)."""
import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from llvmlite import ir

from tracejit.backend.engine import jit, threads

i64, ptr = ir.IntType(64), ir.PointerType()


def _loop(b, fn, start, end, body):
    """Emit ``for i in [start, end): body(b, i)``; returns the builder after the loop."""
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    pre = b.block
    b.cbranch(b.icmp_signed("<", start, end), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(start, pre)
    body(b, i)
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, end), loop, done)
    b.position_at_end(done)
    return b


def _compile_bodies():
    """``count(ctx, s, e)``: ctx = int64[1 + 2n] = [n, counts..., marks...]; counts[i] += 1 for
    i in [s, e) and marks[s] = e. ``nested(ctx, s, e)``: for each i, a parallel_for of
    ``count`` over an inner range of ctx2 (pointer stored at ctx[0]) of length 64."""
    m = ir.Module("bodies")
    pf = threads.declare_parallel_for(m)
    count = ir.Function(m, threads.BODY_TY, jit.unique_name("count"))
    ctx, s, e = count.args
    b = ir.IRBuilder(count.append_basic_block("entry"))
    n = b.load(ctx, typ=i64)

    def bump(b, i):
        slot = b.gep(ctx, [b.add(i, ir.Constant(i64, 1))], source_etype=i64)
        b.atomic_rmw("add", slot, ir.Constant(i64, 1), "monotonic")

    b = _loop(b, count, s, e, bump)
    mark = b.gep(ctx, [b.add(b.add(n, s), ir.Constant(i64, 1))], source_etype=i64)
    b.store(e, mark)
    b.ret_void()

    nested = ir.Function(m, threads.BODY_TY, jit.unique_name("nested"))
    ctx, s, e = nested.args
    b = ir.IRBuilder(nested.append_basic_block("entry"))
    inner = b.inttoptr(b.load(ctx, typ=i64), ptr)

    def call_inner(b, i):
        b.call(pf, [count, inner, ir.Constant(i64, 64), ir.Constant(i64, 1)])

    b = _loop(b, nested, s, e, call_inner)
    b.ret_void()
    jit.compile_ir(m)
    return jit.function_address(count.name), jit.function_address(nested.name)


COUNT, NESTED = _compile_bodies()


@pytest.fixture(autouse=True)
def restore_threads():
    saved = threads.get_num_threads()
    yield
    threads.set_num_threads(saved)


def expected_chunks(n, grain, nthreads):
    """The documented partition: list of (start, end)."""
    if n <= 0:
        return []
    grain = max(grain, 1)
    nblocks = -(-n // grain)
    k = min(nthreads, nblocks)
    q, r = divmod(nblocks, k)
    starts = [min(n, (c * q + min(c, r)) * grain) for c in range(k + 1)]
    return list(zip(starts[:-1], starts[1:]))


def run_count(n, grain):
    ctx = np.zeros(1 + 2 * max(n, 1), np.int64)
    ctx[0] = n
    ctx[1 + n:] = -1
    threads.parallel_for(COUNT, ctx.ctypes.data, n, grain)
    counts, marks = ctx[1:1 + n], ctx[1 + n:1 + 2 * n]
    chunks = [(s, int(marks[s])) for s in range(n) if marks[s] >= 0]
    return counts, chunks


@pytest.mark.parametrize("nthreads", [1, 2, 3, 4, 8])
def test_every_index_exactly_once(nthreads):
    threads.set_num_threads(nthreads)
    assert threads.get_num_threads() == nthreads
    for n in [0, 1, 2, 3, 7, 63, 64, 65, 100, 1000, 4097, 100_000]:
        for grain in [-3, 0, 1, 2, 7, 64, 1000, 10 ** 6]:
            counts, chunks = run_count(n, grain)
            assert (counts == 1).all(), (n, grain, nthreads)
            assert chunks == expected_chunks(n, grain, nthreads), (n, grain, nthreads)
            assert all(s % max(grain, 1) == 0 for s, _ in chunks)


def test_repeated_calls_are_stable():
    threads.set_num_threads(2)
    ctx = np.zeros(1 + 2 * 1000, np.int64)
    ctx[0] = 1000
    for _ in range(20_000):
        threads.parallel_for(COUNT, ctx.ctypes.data, 1000, 16)
    assert (ctx[1:1001] == 20_000).all()


def test_nested_parallel_for_runs_serially():
    threads.set_num_threads(2)
    inner = np.zeros(1 + 2 * 64, np.int64)
    inner[0] = 64
    outer = np.zeros(1, np.int64)
    outer[0] = inner.ctypes.data
    threads.parallel_for(NESTED, outer.ctypes.data, 10, 1)
    assert (inner[1:65] == 10).all()


def test_concurrent_python_threads():
    threads.set_num_threads(2)
    n, reps = 5000, 200
    ctxs = [np.zeros(1 + 2 * n, np.int64) for _ in range(4)]
    for c in ctxs:
        c[0] = n
    addrs = [c.ctypes.data for c in ctxs]

    def work(addr):
        for _ in range(reps):
            threads.parallel_for(COUNT, addr, n, 8)   # ctypes releases the GIL

    ts = [threading.Thread(target=work, args=(a,)) for a in addrs]
    [t.start() for t in ts]
    [t.join() for t in ts]
    for c in ctxs:
        assert (c[1:1 + n] == reps).all()


def test_shutdown_and_restart():
    threads.set_num_threads(2)
    assert run_count(100, 1)[0].sum() == 100
    assert threads.shutdown()
    assert run_count(100, 1)[0].sum() == 100


def test_declare_in_other_module():
    m = ir.Module("user")
    fn = threads.declare_parallel_for(m)
    assert fn.name == "tj_parallel_for" and threads.declare_parallel_for(m) is fn
    assert jit.address_of_symbol("tj_parallel_for") == threads.parallel_for_address()


_CHILD = """
import os, sys, numpy as np
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
from tracejit.backend.engine import threads
print(threads.get_num_threads())
import test_threads as t
counts, _ = t.run_count(1000, 4)
assert (counts == 1).all()
pid = os.fork()
if pid == 0:
    counts, _ = t.run_count(1000, 4)       # workers do not exist in the child: respawned
    os._exit(0 if (counts == 1).all() else 1)
assert os.waitpid(pid, 0)[1] == 0
print("ok")
"""


def test_env_var_fork_and_clean_exit():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = _CHILD.format(root=root, tests=os.path.join(root, "tests"))
    env = dict(os.environ, TRACEJIT_NUM_THREADS="3")
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["3", "ok"]
