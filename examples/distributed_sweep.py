"""A parameter sweep over worker processes: compiled once here, run everywhere.

Damped pendulums integrated with ``tj.scan``: for each (damping, stiffness) pair, the mean
energy after 400 steps and its gradient with respect to both parameters. The
``value_and_grad`` object is compiled for its signature in this process, then sent to a
``concurrent.futures.ProcessPoolExecutor`` of fresh ("spawn") workers with each chunk of the
sweep. Pickling carries the function (by value: it lives in ``__main__``) and the artifact
of its compiled signature, so the workers run it without tracing or compiling: each reports
0 graph compiles (``tracejit.backend.engine.diskcache.stats``). The same object works with
``multiprocessing.Pool``, Dask (``client.map``) or Ray.

The results are checked bit for bit against the same sweep run serially here.
"""
import concurrent.futures as cf
import multiprocessing
import os

import numpy as np

import tracejit as tj

STEPS, DT = 400, 0.01


def mean_energy(params, x0):
    """Mean energy of pendulums started at angles ``x0`` after STEPS Euler steps."""
    damping, stiffness = params[0], params[1]

    def step(carry, _):
        x, v = carry
        a = -stiffness * np.sin(x) - damping * v
        return (x + DT * v, v + DT * a), None

    (x, v), _ = tj.scan(step, (x0, np.zeros_like(x0)), None, length=STEPS)
    return np.mean(0.5 * v ** 2 + stiffness * (1.0 - np.cos(x)))


def run_chunk(fun, chunk, x0):
    """Worker side: ``fun`` arrived pickled with its compiled signature."""
    from tracejit.backend.engine import diskcache
    results = [fun(p, x0) for p in chunk]
    return results, os.getpid(), fun.cache_info().traces, diskcache.stats["graph_compiled"]


def main():
    energy_and_grad = tj.value_and_grad(mean_energy)
    x0 = np.linspace(0.1, 2.5, 64)
    grid = [np.array([d, k]) for d in np.linspace(0.0, 0.6, 4) for k in (0.5, 1.0, 2.0, 4.0)]
    serial = [energy_and_grad(p, x0) for p in grid]        # compiles the signature once, here

    chunks = [grid[i::4] for i in range(4)]
    spawn = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        done = list(pool.map(run_chunk, [energy_and_grad] * len(chunks), chunks,
                             [x0] * len(chunks)))

    by_point = {}
    for chunk, (results, pid, traces, compiles) in zip(chunks, done):
        print(f"worker {pid}: {len(chunk)} points, {traces} traces, {compiles} graph compiles")
        assert traces == 0
        for p, r in zip(chunk, results):
            by_point[tuple(p)] = r
    for p, (value, grad) in zip(grid, serial):
        v, g = by_point[tuple(p)]
        assert v == value and np.array_equal(g, grad), (p, v, value)
    best = min(grid, key=lambda p: by_point[tuple(p)][0])
    print(f"{len(grid)} points: results identical to the serial sweep; lowest energy at "
          f"damping {best[0]:.2f}, stiffness {best[1]:.1f}: "
          f"dE/d(damping, stiffness) = {by_point[tuple(best)][1]}")


if __name__ == "__main__":
    main()
