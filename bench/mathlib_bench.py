"""Time tracejit's vector math against NumPy: ms per 1e6 elements, min and median of runs.

Usage: python bench/mathlib_bench.py [name ...] [--n N] [--repeat R] [--ulp]

Both sides write into a preallocated output (NumPy via ``out=``), so page faults on temporaries
are not counted. Ours runs a compiled loop over <8 x double> / <16 x float> chunks that calls the
precompiled ``tj_math_*`` function (the default, non-inline mode); f32 runs the native bodies of
``mathlib_f32`` where there is one. Times are process CPU time (the box may be shared; CPU time
leaves out preemption). ``--ulp`` adds the max error on the same inputs against a more precise
reference (f64: NumPy on long double, where that is wider; f32: NumPy's f64 result), in
fractional ulps. Not run by the tests; the tables in ``mathlib``'s docstring come from this
script.
"""
from __future__ import annotations

import argparse
import ctypes
import math
import statistics
import time

import llvmlite.ir as ir
import numpy as np

from tracejit.backend.engine import jit
from tracejit.backend.mathlib import library as mathlib

INPUTS = {   # name -> (low, high) of a uniform draw; "log:" draws log-uniform magnitudes
    "exp": (-50, 50), "exp2": (-70, 70), "expm1": (-5, 5), "log": (1e-3, 1e3),
    "log2": (1e-3, 1e3), "log10": (1e-3, 1e3), "log1p": (-0.9, 100), "sin": (-100, 100),
    "cos": (-100, 100), "tan": (-100, 100), "tanh": (-5, 5), "sinh": (-20, 20),
    "cosh": (-20, 20), "arcsinh": (-100, 100), "arccosh": (1, 100), "arctanh": (-0.99, 0.99),
    "arcsin": (-1, 1), "arccos": (-1, 1), "arctan": (-100, 100), "cbrt": (-1e3, 1e3),
    "erf": (-4, 4), "power": (0.1, 10), "arctan2": (-10, 10), "hypot": (-10, 10),
}


def kernel(name, dtype, width):
    arity = 2 if name in mathlib.BINARY else 1
    fty = ir.DoubleType() if dtype == np.float64 else ir.FloatType()
    vt = ir.VectorType(fty, width)
    ptr, i64 = ir.PointerType(), ir.IntType(64)
    mod = ir.Module()
    sym = jit.unique_name(f"bench_{name}")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [i64]), sym)
    *ins, out, n = fn.args
    entry, loop, done = (fn.append_basic_block(s) for s in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, i64(0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), entry)
    args = [b.load(b.gep(p, [i], source_etype=fty), typ=vt, align=8) for p in ins]
    b.store(mathlib.call_math(b, name, *args), b.gep(out, [i], source_etype=fty), align=8)
    i_next = b.add(i, i64(width))
    i.add_incoming(i_next, b.block)
    b.cbranch(b.icmp_signed("<", i_next, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    jit.compile_ir(mod, opt=1)
    proto = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * (arity + 1), ctypes.c_int64)
    return proto(jit.function_address(sym))


def timed(fn, repeat):
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        runs.append((time.process_time() - t) * 1e3)
    return min(runs), statistics.median(runs)


def max_ulp(got, xs, npfn):
    """Max |got - ref| in ulps of got's dtype, ref from one precision up (None if unavailable)."""
    wide = np.float64 if got.dtype == np.float32 else np.longdouble
    if wide is np.longdouble and np.finfo(np.longdouble).nmant < 63:
        return None
    with np.errstate(all="ignore"):
        ref = npfn(*[x.astype(wide) for x in xs])
        r = ref.astype(got.dtype)
        ok = np.isfinite(r) & (r != 0)
        up = np.abs(r.astype(wide)) > np.abs(ref)       # rounded up into the next binade
        ulp = np.spacing(np.where(up, np.nextafter(np.abs(r), 0), np.abs(r))).astype(wide)
        err = np.abs(got.astype(wide) - ref) / ulp
    return float(np.max(err[ok])) if ok.any() else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--ulp", action="store_true", help="also print the max error in ulps")
    opts = ap.parse_args()
    names = opts.names or list(INPUTS)
    rng = np.random.default_rng(0)
    scale = 1e6 / opts.n
    print(f"ms per 1e6 elements, min (median) of {opts.repeat}; n = {opts.n}")
    print(f"{'function':9} {'dtype':7} {'tracejit':>16} {'numpy':>16} {'speedup':>8}"
          + (f" {'max ulp':>8}" if opts.ulp else ""))
    for name in names:
        lo, hi = INPUTS[name]
        npfn = getattr(np, name, None)
        if npfn is None:
            npfn = np.frompyfunc(math.erf, 1, 1)
        for dtype, width in ((np.float64, 8), (np.float32, 16)):
            arity = 2 if name in mathlib.BINARY else 1
            xs = [rng.uniform(lo, hi, opts.n).astype(dtype) for _ in range(arity)]
            out = np.empty(opts.n, dtype)
            k = kernel(name, dtype, width)
            ptrs = [x.ctypes.data for x in xs] + [out.ctypes.data]
            ours = timed(lambda: k(*ptrs, opts.n), opts.repeat)
            if name == "erf":
                theirs = (float("nan"),) * 2     # NumPy has no erf
            else:
                theirs = timed(lambda: npfn(*xs, out=out), opts.repeat)
            err = ""
            if opts.ulp and name != "erf":
                k(*ptrs, opts.n)
                ulp = max_ulp(out.copy(), xs, npfn)
                err = f" {ulp:8.3f}" if ulp is not None else "        -"
            print(f"{name:9} {np.dtype(dtype).name:7} "
                  f"{ours[0] * scale:7.3f} ({ours[1] * scale:6.3f}) "
                  f"{theirs[0] * scale:7.3f} ({theirs[1] * scale:6.3f}) "
                  f"{theirs[0] / ours[0]:7.2f}x{err}")


if __name__ == "__main__":
    main()
