"""W12: first-call time against graph size (issue 14 item 7), each call in a fresh process.

Cases: the gradient of a 32-unit tanh RNN written as a Python loop of T steps (T = 10, 50, 200,
1000), ``tj.jit(tj.grad(loss))``; and a random graph of 10^4 elementwise and matrix-vector
operations (``random_graph``), ``tj.jit(f)``. Columns: tracejit (unrolled loops rolled into
scans: the default), tracejit with ``TRACEJIT_ROLL_LOOPS=0`` (small sizes only: the unrolled
compile is what rolling avoids), and ``jax.jit`` of the same code when jax is importable
(skipped otherwise). The first call is timed from just before it to its return, in a new
process each repeat: tracing, simplification, compilation and the first run. Times are CPU
seconds of the whole process (every thread: XLA compiles on several), so that a loaded shared
machine does not inflate them; on one pinned idle core they equal wall time.

    python bench/compile_rows.py [--quick]      # prints the table (and the log-log plot to
                                                # bench/results.png with matplotlib)
``bench/run.py --only W12`` adds the rows to bench/results.md.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

H = 32
RNN_STEPS = (10, 50, 200, 1000)
RANDOM_EQNS = 10_000
UNROLLED_MAX = 200        # the unrolled tracejit column stops here (T=1000: about a minute)
TIMEOUT = 900             # seconds per process


def rnn_loss(xp, T):
    """The RNN's loss over ``T`` steps, written with the array module ``xp``."""
    def loss(W, U, b, xs):
        h = xp.zeros(H)
        total = 0.0
        for t in range(T):
            h = xp.tanh(W @ h + U @ xs[t] + b)
            total = total + xp.sum(h * h)
        return total
    return loss


def rnn_args(T):
    import numpy as np
    rng = np.random.default_rng(0)
    return (rng.standard_normal((H, H)) * 0.3, rng.standard_normal((H, H)) * 0.3,
            rng.standard_normal(H) * 0.1, rng.standard_normal((T, H)))


def random_graph(xp, n_ops, seed=0):
    """A function of (W, x) of ``n_ops`` operations, each on one or two of the last 8 values:
    sin, tanh, exp of a scaled value, add, sub, mul, or ``W @ v`` (a tenth of them)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    plan = [(int(rng.integers(7)), int(rng.integers(1, 9)), int(rng.integers(1, 9)))
            for _ in range(n_ops)]

    def f(W, x):
        vals = [x, xp.cos(x)]
        for op, i, j in plan:
            a, b = vals[-min(i, len(vals))], vals[-min(j, len(vals))]
            if op == 0:
                v = xp.sin(a)
            elif op == 1:
                v = xp.tanh(a + b)
            elif op == 2:
                v = xp.exp(a * 0.01)
            elif op == 3:
                v = a * 0.5 + b * 0.5
            elif op == 4:
                v = a - 0.25 * b
            elif op == 5:
                v = a * b
            else:
                v = xp.tanh(W @ a)
            vals.append(v)
        return xp.sum(vals[-1])
    return f


def random_args():
    import numpy as np
    rng = np.random.default_rng(1)
    return rng.standard_normal((H, H)) / 6, rng.standard_normal(H)


def first_call(impl, case, size):
    """CPU seconds of the first call of ``case`` at ``size`` with ``impl`` (in this
    process)."""
    import time
    clock = time.process_time
    if impl == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        xp = jnp
        if case == "rnn":
            fn, args = jax.jit(jax.grad(rnn_loss(xp, size), argnums=(0, 1, 2))), rnn_args(size)
        else:
            fn, args = jax.jit(random_graph(xp, size)), random_args()
        t0 = clock()
        jax.block_until_ready(fn(*args))
        return clock() - t0
    import numpy as np
    import tracejit as tj
    if case == "rnn":
        fn, args = tj.jit(tj.grad(rnn_loss(np, size), argnums=(0, 1, 2))), rnn_args(size)
    else:
        fn, args = tj.jit(random_graph(np, size)), random_args()
    t0 = clock()
    fn(*args)
    return clock() - t0


def graph_size(case, size) -> int:
    """Equations of the traced (unrolled, unsimplified) function: the x axis."""
    import numpy as np
    import tracejit as tj
    if case == "rnn":
        fn, args = tj.jit(rnn_loss(np, size)), rnn_args(size)
    else:
        fn, args = tj.jit(random_graph(np, size)), random_args()
    return len(fn.ir(*args, optimize=False).eqns)


def _fresh(impl, case, size, repeat):
    """(min, median) seconds over ``repeat`` new processes."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("TRACEJIT_CACHE_DIR", None)
    if impl == "tracejit unrolled":
        env["TRACEJIT_ROLL_LOOPS"] = "0"
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(__file__)!r}); "
            f"import compile_rows as c; print(c.first_call({impl.split()[0]!r}, {case!r}, "
            f"{size}))")
    vals = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=TIMEOUT)
        if out.returncode:
            raise RuntimeError(out.stderr[-600:])
        vals.append(float(out.stdout.strip().splitlines()[-1]))
    return min(vals), statistics.median(vals)


def _has_jax() -> bool:
    out = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True)
    return out.returncode == 0


def measure(quick=False, record=None, note=None):
    """Run every row; ``record(case, impl, min, median)`` and ``note(text)`` receive them.
    Returns {(case label, impl): (size in equations, min seconds)} for the plot."""
    record = record or (lambda *r: print(*r, flush=True))
    note = note or print
    repeat = 1 if quick else 2
    impls = ["tracejit", "tracejit unrolled"] + (["jax"] if _has_jax() else [])
    if "jax" not in impls:
        note("W12: jax is not importable: no jax column")
    cases = [("rnn", T) for T in (RNN_STEPS[:3] if quick else RNN_STEPS)] + \
        [("random", RANDOM_EQNS)]
    points = {}
    for case, size in cases:
        eqns = graph_size(case, size)
        label = (f"RNN grad first call T={size}" if case == "rnn"
                 else f"random graph first call ({size} ops)") + f", {eqns} eqns"
        for impl in impls:
            if impl == "tracejit unrolled" and (case != "rnn" or size > UNROLLED_MAX):
                continue
            try:
                lo, med = _fresh(impl, case, size, repeat)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                note(f"W12 {label} {impl}: failed ({str(e)[-200:]})")
                continue
            record(label, impl, lo, med)
            points[case, impl, size] = (eqns, lo)
    return points


def plot(points, path) -> bool:
    """Log-log plot of first-call seconds against traced equations (needs matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 - the plot is optional
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for impl in sorted({k[1] for k in points}):
        for case, marker in (("rnn", "o-"), ("random", "s")):
            pts = sorted(v for k, v in points.items() if k[0] == case and k[1] == impl)
            if pts:
                ax.plot(*zip(*pts), marker, label=f"{impl} ({case})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("traced equations")
    ax.set_ylabel("first call (CPU s)")
    ax.set_title("first call vs graph size (W12)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    quick = "--quick" in sys.argv
    rows = []

    def record(label, impl, lo, med):
        rows.append((label, impl, lo, med))
        print(f"{label:<48} {impl:<18} min {lo:8.3f} s  median {med:8.3f} s", flush=True)
    points = measure(quick, record)
    by_label = {}
    for label, impl, lo, _ in rows:
        by_label.setdefault(label, {})[impl] = lo
    for label, t in by_label.items():
        if "jax" in t and "tracejit" in t:
            print(f"{label}: tracejit / jax = {t['tracejit'] / t['jax']:.2f}")
    if plot(points, os.path.join(os.path.dirname(__file__), "results.png")):
        print("plot: bench/results.png")


if __name__ == "__main__":
    main()
