"""Compile time against graph size, stage by stage (issue 14).

For each case and size, a fresh subprocess makes the first call of the derivative (tracing,
AD, simplification, backend planning, LLVM IR emission, LLVM compilation and the first run all
happen in it) with a timer around each stage's entry point. Times are *exclusive*: a stage
nested in another (AD inside the trace of ``tj.grad``'s body, make_graph inside a transform)
is subtracted from its parent, so the rows add up to the total. The table shows seconds per
stage and size, then microseconds per equation of the traced graph: a row that grows along a
line is superlinear in the graph size.

    python bench/compile_scaling.py                     # all cases, T = 25 50 100 200
    python bench/compile_scaling.py --case rnn --sizes 50 200
    python bench/compile_scaling.py --front-end --sizes 200 800 3200   # no backend
    python bench/compile_scaling.py --functions rnn 50 200  # cProfile: functions that grow
                                                            # faster than the graph
    python bench/compile_scaling.py --cpu               # CPU time of the calling thread
                                                        # (a loaded, shared machine)

Cases: ``rnn`` (the gradient of a 32-unit tanh RNN written as a Python loop, T steps),
``chain`` (the gradient of a chain of 25*T elementwise ops), ``jacrev`` (the reverse-mode
Jacobian of a 100-output function, a loop of T/4 matmul-tanh steps: one vmapped VJP), ``random``
(W12's random elementwise/matmul graph of T operations, no derivative). No cache directory is
used, so every call compiles. Prints only; nothing is written.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import threading
import time

import numpy as np

STAGES = ("trace", "ad", "vmap", "simplify", "plan", "emit", "llvm", "run", "other")
SIZES = (25, 50, 100, 200)
H = 32


# ---------------------------------------------------------------------------------------------
# the cases: (function, its derivative, arguments) for a size

def rnn_case(T):
    import tracejit as tj
    from compile_rows import rnn_args, rnn_loss      # the same RNN as bench row W12
    return tj.grad(rnn_loss(np, T), argnums=(0, 1, 2)), rnn_args(T)


def chain_case(T):
    import tracejit as tj
    x = np.random.default_rng(0).standard_normal(64)

    def f(x):
        y = x
        for k in range(5 * T):
            y = np.sin(y) * 0.5 + y * 1.0001 - 0.25 * np.cos(y)
        return np.sum(y)
    return tj.grad(f), (x,)


def jacrev_case(T):
    import tracejit as tj
    rng = np.random.default_rng(0)
    W = rng.standard_normal((100, 100)) / 10
    x = rng.standard_normal(100)

    def f(x):
        y = x
        for _ in range(T // 4):
            y = np.tanh(W @ y) + 0.5 * y
        return y
    return tj.jacrev(f), (x,)


def random_case(n):
    import tracejit as tj
    from compile_rows import random_args, random_graph    # bench row W12's random graph
    return tj.jit(random_graph(np, n)), random_args()


CASES = {"rnn": rnn_case, "chain": chain_case, "jacrev": jacrev_case, "random": random_case}


# ---------------------------------------------------------------------------------------------
# stage timers

CLOCK = time.perf_counter          # --cpu: time.thread_time


class Timers:
    """Exclusive seconds per stage on the calling thread (a hot-tier compile on the background
    thread is not counted)."""

    def __init__(self):
        self.total = dict.fromkeys(STAGES, 0.0)
        self.stack = []                    # [stage, start, seconds spent in nested stages]
        self.thread = threading.get_ident()
        self.missing = []
        self.eqns = None                   # equations of the graph given to the first simplify

    def wrap(self, owner, attr, stage, note=None):
        fn = getattr(owner, attr, None)
        if fn is None:
            self.missing.append(f"{getattr(owner, '__name__', owner)}.{attr}")
            return
        timers = self

        def timed(*args, **kwargs):
            if threading.get_ident() != timers.thread:
                return fn(*args, **kwargs)
            if note is not None:
                note(*args)
            frame = [stage, CLOCK(), 0.0]
            timers.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                timers.stack.pop()
                spent = CLOCK() - frame[1]
                timers.total[stage] += spent - frame[2]
                if timers.stack:
                    timers.stack[-1][2] += spent
        timed.__wrapped__ = fn
        setattr(owner, attr, timed)

    def install(self):
        from tracejit import ad, api, derivatives
        from tracejit.backend.engine import jit, parallel
        from tracejit.backend.plan import buffers, partition
        from tracejit.backend.runtime import executable
        from tracejit.transforms import batching
        self.wrap(api.Traced, "trace_graph", "trace")
        for name in ("jvp_graph", "partial_eval", "transpose_graph"):
            self.wrap(ad, name, "ad")
        self.wrap(derivatives, "eval_linear", "ad")
        self.wrap(batching, "batch_eval", "vmap")
        self.wrap(api, "simplify", "simplify", note=self._count)
        self.wrap(ad, "simplify", "simplify")
        self.wrap(partition, "partition", "plan")
        self.wrap(buffers, "plan_buffers", "plan")
        self.wrap(executable.Executable, "__init__", "emit")
        self.wrap(executable.Executable, "_emit", "emit")
        self.wrap(jit, "compile_ir", "llvm")
        self.wrap(parallel, "compile_module", "llvm")     # large modules: on compile workers
        self.wrap(api.Compiled, "__call__", "run")

    def _count(self, graph, *_):
        if self.eqns is None:          # the whole traced derivative, before simplification
            self.eqns = len(graph.eqns)


def measure(case, T, front_end=False):
    """{stage: seconds, 'eqns': n, 'total': seconds} of one first call, in this process
    (``front_end``: only trace and simplify, no backend)."""
    os.environ.pop("TRACEJIT_CACHE_DIR", None)
    timers = Timers()
    timers.install()
    fn, args = CASES[case](T)
    t0 = CLOCK()
    if front_end:
        from tracejit import api
        raw, _ = fn._traced_for(args, {}).trace_graph(args, {})
        api.simplify(raw)
    else:
        fn(*args)
    total = CLOCK() - t0
    timers.total["other"] = total - sum(timers.total.values())
    return dict(timers.total, total=total, eqns=timers.eqns or 0, missing=timers.missing)


def _child(case, T, front_end):
    flag = (["--front-end"] if front_end else []) + (["--cpu"] if CLOCK is time.thread_time
                                                     else [])
    out = subprocess.run([sys.executable, __file__, "--one", case, str(T), *flag],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{case} T={T} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(case, sizes, front_end=False):
    rows = {T: _child(case, T, front_end) for T in sizes}
    missing = sorted({m for r in rows.values() for m in r["missing"]})
    head = f"{'stage':<10}" + "".join(f"{'T=' + str(T):>10}" for T in sizes)
    what = ("trace and simplify only" if front_end else "first call") + \
        (", CPU time" if CLOCK is time.thread_time else "")
    print(f"\n## {case}: seconds ({what})" +
          (f"  [not timed, missing: {', '.join(missing)}]" if missing else ""))
    print(head)
    for s in (*STAGES, "total"):
        print(f"{s:<10}" + "".join(f"{rows[T][s]:>10.3f}" for T in sizes))
    print(f"{'eqns':<10}" + "".join(f"{rows[T]['eqns']:>10d}" for T in sizes))
    print(f"\n## {case}: microseconds per traced equation (a growing row is superlinear)")
    print(head)
    for s in (*STAGES, "total"):
        print(f"{s:<10}" + "".join(f"{1e6 * rows[T][s] / max(1, rows[T]['eqns']):>10.1f}"
                                   for T in sizes))
    sys.stdout.flush()
    return rows


# ---------------------------------------------------------------------------------------------
# which functions grow faster than the graph

def _profile(case, T):
    """{(file, line, function): cumulative seconds} of one first call under cProfile."""
    fn, args = CASES[case](T)
    prof = cProfile.Profile()
    prof.enable()
    fn(*args)
    prof.disable()
    stats = pstats.Stats(prof).stats
    return {f"{k[0]}:{k[2]}": v[3] for k, v in stats.items()}, len(stats)


def functions(case, small, large, top=40):
    """Print the functions (tracejit and llvmlite) whose cumulative time grows more than the
    size ratio between ``small`` and ``large``, biggest growth in seconds first."""
    runs = {}
    for T in (small, large):
        out = subprocess.run([sys.executable, __file__, "--profile-one", case, str(T)],
                             capture_output=True, text=True, check=False)
        if out.returncode:
            raise SystemExit(out.stderr[-3000:])
        runs[T] = json.loads(out.stdout.strip().splitlines()[-1])
    ratio = large / small
    rows = []
    for name, t_large in runs[large].items():
        t_small = runs[small].get(name, 0.0)
        if ("tracejit" not in name and "llvmlite" not in name) or t_large < 0.05:
            continue
        grow = t_large / max(t_small, 1e-6)
        rows.append((t_large - ratio * t_small, grow, t_small, t_large, name))
    rows.sort(reverse=True)
    print(f"\n## {case}: cumulative seconds at T={small} and T={large} (size x{ratio:g}); "
          f"excess = t({large}) - {ratio:g} * t({small})")
    print(f"{'excess':>8} {'growth':>7} {'T=' + str(small):>8} {'T=' + str(large):>8}  function")
    for excess, grow, a, b, name in rows[:top]:
        short = name.split("site-packages/")[-1].split("/work/main/")[-1]
        print(f"{excess:>8.2f} {grow:>6.1f}x {a:>8.3f} {b:>8.3f}  {short}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", action="append", choices=sorted(CASES))
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    p.add_argument("--functions", nargs=3, metavar=("CASE", "SMALL", "LARGE"))
    p.add_argument("--front-end", action="store_true",
                   help="trace and simplify only (no backend): for sizes the backend cannot "
                        "reach yet")
    p.add_argument("--cpu", action="store_true",
                   help="CPU seconds of the calling thread instead of wall time (a shared, "
                        "loaded machine)")
    p.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--profile-one", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.cpu:
        global CLOCK
        CLOCK = time.thread_time
    if a.one:
        print(json.dumps(measure(a.one[0], int(a.one[1]), a.front_end)))
    elif a.profile_one:
        print(json.dumps(_profile(a.profile_one[0], int(a.profile_one[1]))[0]))
    elif a.functions:
        functions(a.functions[0], int(a.functions[1]), int(a.functions[2]))
    else:
        for case in a.case or list(CASES):
            table(case, a.sizes, a.front_end)


if __name__ == "__main__":
    main()
