"""odeint on a 10^4-lane Lotka-Volterra problem: the solve and its gradient (tape and adjoint),
against jax.experimental.ode.odeint when jax is importable, and one SciPy solve_ivp per lane.

    python bench/odeint_bench.py [--lanes N]

Every figure is min and median of several repeats in this one run (bench/harness.timeit).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness import peer, timeit  # noqa: E402

import tracejit as tj  # noqa: E402

T = np.linspace(0.0, 10.0, 11)


def lotka_volterra(xp):
    def f(y, t, a, b):
        return xp.stack([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])
    return f


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lanes", type=int, default=10_000)
    n = parser.parse_args().lanes
    rng = np.random.default_rng(0)
    y0s, rates = rng.uniform(0.5, 1.5, (n, 2)), rng.uniform(0.8, 1.4, n)
    rows = []

    def row(name, fn, repeat=3):
        start = time.perf_counter()
        fn()
        first = time.perf_counter() - start
        lo, med = timeit(fn, repeat=repeat, min_time=0.0, warmup=0)
        rows.append((name, first, lo, med))
        print(f"{name:40s} first call {first:7.2f} s   min {lo:8.4f} s   median {med:8.4f} s",
              flush=True)

    f = lotka_volterra(np)
    solve = tj.jit(tj.vmap(lambda y0, a: tj.odeint(f, y0, T, a, 0.4)))
    row("tracejit vmap(odeint)", lambda: solve(y0s, rates))
    for adjoint in (False, True):
        def loss(y0s, rates, adjoint=adjoint):
            ys = tj.vmap(lambda y0, a: tj.odeint(f, y0, T, a, 0.4, adjoint=adjoint))(y0s, rates)
            return np.sum(ys[:, -1] ** 2)
        g = tj.jit(tj.grad(loss, argnums=(0, 1)))
        row(f"tracejit grad, {'adjoint' if adjoint else 'tape'}", lambda g=g: g(y0s, rates))

    jax = peer("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.experimental.ode import odeint as jodeint
        jf = lotka_volterra(jnp)
        jsolve = jax.jit(jax.vmap(lambda y0, a: jodeint(jf, y0, jnp.asarray(T), a, 0.4)))
        row("jax vmap(odeint)", lambda: jsolve(y0s, rates).block_until_ready())

        def jloss(y0s, rates):
            ys = jax.vmap(lambda y0, a: jodeint(jf, y0, jnp.asarray(T), a, 0.4))(y0s, rates)
            return jnp.sum(ys[:, -1] ** 2)
        jg = jax.jit(jax.grad(jloss, argnums=(0, 1)))
        row("jax grad (adjoint)", lambda: jax.block_until_ready(jg(y0s, rates)))
    else:
        print("jax is not importable here: no jax rows")

    try:
        from scipy.integrate import solve_ivp
    except ImportError:
        return
    k = 20                                   # solve_ivp per lane: timed on a few, scaled
    start = time.perf_counter()
    for i in range(k):
        solve_ivp(lambda s, y, a=rates[i]: f(y, s, a, 0.4), (T[0], T[-1]), y0s[i], t_eval=T,
                  rtol=1.4e-8, atol=1.4e-8)
    per = (time.perf_counter() - start) / k
    print(f"{'scipy solve_ivp (RK45), one per lane':40s} {per * n:8.2f} s for {n} lanes "
          f"({per * 1e3:.2f} ms a lane)")


if __name__ == "__main__":
    main()
