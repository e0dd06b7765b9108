"""Dispatch and thread-pool overhead of tracejit's native runtime pieces.

    python bench/dispatch_bench.py

Times the cached call of ``f(x, y) = x*y + 1`` through ``FastDispatch`` + a ``pyabi`` entry
(f64[1] arrays, Python floats, f64[1000] arrays) next to NumPy's ``x*y + 1`` (and Python's
``a*b + 1.0`` for floats), then ``tj_parallel_for`` overhead (n=0, n=2 = one job round trip)
and a 1e6-element fused loop with 1 vs 2 threads. Prints min and median; on a shared machine
only the minima are meaningful. Not run by the tests.
"""
import ctypes
import os
import statistics
import sys
import time
import timeit

import numpy as np
from llvmlite import ir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tracejit.backend.engine import jit, threads  # noqa: E402
from tracejit.backend.runtime import pyabi, pyobj  # noqa: E402
from tracejit.backend.runtime import pyabi_dispatch as pd  # noqa: E402

i32, i64, f64, ptr = ir.IntType(32), ir.IntType(64), ir.DoubleType(), ir.PointerType()


def emit_fma_loop(b, fn, x, y, out, start, end, x_scalar=False, y_scalar=False):
    """out[i] = x[i]*y[i] + 1.0 for i in [start, end) (scalar inputs read at 0)."""
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    pre = b.block
    b.cbranch(b.icmp_signed("<", start, end), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(start, pre)
    zero = ir.Constant(i64, 0)
    xv = b.load(b.gep(x, [zero if x_scalar else i], source_etype=f64), typ=f64)
    yv = b.load(b.gep(y, [zero if y_scalar else i], source_etype=f64), typ=f64)
    b.store(b.fadd(b.fmul(xv, yv), ir.Constant(f64, 1.0)), b.gep(out, [i], source_etype=f64))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, end), loop, done)
    b.position_at_end(done)
    return b


def compiled(n, scalars=False):
    """A FastDispatch for x*y+1 over f64[n] arrays (or two Python floats)."""
    m = ir.Module("bench")
    kern = ir.Function(m, ir.FunctionType(i32, [ptr]), jit.unique_name("kern"))
    b = ir.IRBuilder(kern.append_basic_block("entry"))
    x, y, out = (b.load(b.gep(kern.args[0], [ir.Constant(i64, k)], source_etype=ptr), typ=ptr)
                 for k in range(3))
    b = emit_fma_loop(b, kern, x, y, out, ir.Constant(i64, 0), ir.Constant(i64, max(n, 1)),
                      scalars, scalars)
    b.ret(ir.Constant(i32, 0))
    if scalars:
        leaf = ("pyscalar", float, np.float64)
        spec = pyabi.EntrySpec(inputs=(leaf, leaf), outputs=((np.float64, ()),))
    else:
        leaf = ("array", np.float64, (n,))
        spec = pyabi.EntrySpec(inputs=(leaf, leaf), outputs=((np.float64, (n,)),))
    f = pd.FastDispatch(lambda *a, **k: None)
    f.add_specialization(pyabi.build_entry(m, kern, spec, opt=3), spec)
    return f


def report(label, times_ns):
    print(f"  {label:<44} min {min(times_ns):9.1f} ns   median {statistics.median(times_ns):9.1f} ns")


def time_stmt(stmt, env, number=100_000, repeat=15):
    return [t / number * 1e9 for t in timeit.repeat(stmt, globals=env, number=number, repeat=repeat)]


def bench_calls():
    rng = np.random.default_rng(0)
    x1, y1 = rng.random(1), rng.random(1)
    xk, yk = rng.random(1000), rng.random(1000)
    env = dict(f1=compiled(1), fs=compiled(1, scalars=True), fk=compiled(1000),
               x1=x1, y1=y1, xk=xk, yk=yk, a=1.5, b=2.5, np=np, mul=__import__("operator").mul)
    assert np.array_equal(env["f1"](x1, y1), x1 * y1 + 1.0)
    assert np.array_equal(env["fk"](xk, yk), xk * yk + 1.0)
    assert env["fs"](1.5, 2.5) == 1.5 * 2.5 + 1.0
    print("cached call of f(x, y) = x*y + 1 (timeit; min/median of 15 x 100k calls)")
    for label, stmt in [
        ("(a) f64[1]: tracejit", "f1(x1, y1)"), ("(a) f64[1]: numpy x*y+1.0", "x1*y1+1.0"),
        ("(b) floats: tracejit (-> np.float64)", "fs(a, b)"),
        ("(b) floats: python a*b+1.0", "a*b+1.0"), ("(b) floor: operator.mul(a, b)", "mul(a, b)"),
        ("(c) f64[1000]: tracejit", "fk(xk, yk)"), ("(c) f64[1000]: numpy x*y+1.0", "xk*yk+1.0"),
        ("fallback path (f32 args -> Python fallback)", "f1(x1.astype(np.float32), y1)"),
    ]:
        report(label, time_stmt(stmt, env, number=20_000 if "fallback" in stmt or "astype" in stmt
                                else 100_000))


def bench_pool():
    """Times tj_parallel_for from an IR driver loop, so no ctypes cost is included."""
    m = ir.Module("pool_bench")
    pf = threads.declare_parallel_for(m)
    body = ir.Function(m, threads.BODY_TY, jit.unique_name("fma_body"))
    ctx, s, e = body.args
    b = ir.IRBuilder(body.append_basic_block("entry"))
    x, y, out = (b.load(b.gep(ctx, [ir.Constant(i64, k)], source_etype=ptr), typ=ptr)
                 for k in range(3))
    b = emit_fma_loop(b, body, x, y, out, s, e)
    b.ret_void()
    drive = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, i64, i64, i64]),
                        jit.unique_name("drive"))
    dctx, n, grain, reps = drive.args
    b = ir.IRBuilder(drive.append_basic_block("entry"))
    loop, done = drive.append_basic_block("loop"), drive.append_basic_block("done")
    pre = b.block
    b.cbranch(b.icmp_signed(">", reps, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    r = b.phi(i64)
    r.add_incoming(ir.Constant(i64, 0), pre)
    b.call(pf, [body, dctx, n, grain])
    nxt = b.add(r, ir.Constant(i64, 1))
    r.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, reps), loop, done)
    ir.IRBuilder(done).ret_void()
    jit.compile_ir(m, opt=3)
    run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)(
        jit.function_address(drive.name))

    size = 1_000_000
    xs, ys, out = np.random.default_rng(1).random((3, size))
    ctx_arr = (ctypes.c_void_p * 3)(xs.ctypes.data, ys.ctypes.data, out.ctypes.data)
    cptr = ctypes.addressof(ctx_arr)

    def per_call(n, grain, reps, repeat=15):
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run(cptr, n, grain, reps)
            ts.append((time.perf_counter() - t0) / reps * 1e9)
        return ts

    print(f"tj_parallel_for (IR driver loop; {os.cpu_count()} cpus)")
    for nt in (1, 2):
        threads.set_num_threads(nt)
        report(f"n=0, {nt} thread(s)", per_call(0, 64, 100_000))
        report(f"n=2 grain=1 (2 chunks if 2 threads), {nt} thr", per_call(2, 1, 100_000))
        report(f"n=1e4 fma loop, {nt} thread(s)", per_call(10_000, 64, 2_000))
        ts = per_call(size, 64, 20)
        report(f"n=1e6 fma loop, {nt} thread(s)", ts)
        run(cptr, size, 64, 1)
        assert np.array_equal(out, xs * ys + 1.0)
    threads.set_num_threads(os.cpu_count())
    env = dict(xs=xs, ys=ys)
    report("numpy xs*ys+1.0 (1e6)", time_stmt("xs*ys+1.0", env, number=20, repeat=15))


if __name__ == "__main__":
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, native={pyobj.NATIVE_OK}")
    bench_calls()
    bench_pool()
