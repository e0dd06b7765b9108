"""W14: numpy.linalg under tracejit against NumPy, jax and autograd (issue 15 item 5).

    python bench/linalg_bench.py [--quick]      # prints a markdown table
    python bench/run.py --only W14              # the same rows in bench/results.md

Rows: ``solve`` (one right-hand side), ``cholesky``, ``eigh``, ``svd`` of f64 matrices at n = 8,
64, 512 and a batch of 1000 8x8 matrices, each as ``tj.trace(np.linalg.<name>)``; and the
gradient of a Gaussian-process negative log-likelihood (RBF kernel, Cholesky; n = 500, plus 64
to show the small-matrix path) with respect to its length scale: a hand-written NumPy gradient
(the reference), ``tj.grad``, ``jax.grad`` (jit) and ``autograd.grad``. jax and autograd columns
appear only when importable (jax is timed pinned to one core, ``harness.one_core``); every
implementation is checked against NumPy's values first. Times are min / median over repeats in
one run; the ratio is NumPy's min time divided by the implementation's (> 1: faster). BLAS and
LAPACK run one thread (``OPENBLAS_NUM_THREADS=1``, set before NumPy loads, as bench/run.py).
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import one_core, peer, timeit  # noqa: E402

import tracejit as tj  # noqa: E402
from tracejit.numpy import linalg as tla  # noqa: E402

SHAPES = [(8, 8), (64, 64), (512, 512), (1000, 8, 8)]
GP_SIZES = [64, 500]


def _jax():
    jax = peer("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)      # else jax computes f64 in f32
    return jax


def _agree(got, want, rtol=1e-8):
    """Values that do not depend on the eigen/singular vectors' signs."""
    got, want = [np.asarray(g) for g in _leaves(got)], [np.asarray(w) for w in _leaves(want)]
    return len(got) == len(want) and all(
        np.allclose(np.abs(g), np.abs(w), rtol=rtol, atol=rtol * np.abs(w).max())
        for g, w in zip(got, want))


def _leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def functions(shapes, record, note):
    jax = _jax()
    rng = np.random.default_rng(0)
    for shape in shapes:
        n = shape[-1]
        x = rng.standard_normal(shape)
        spd = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
        b = rng.standard_normal(shape[:-1] + (1,))
        cases = (("solve", np.linalg.solve, (spd, b), "solve"),
                 ("cholesky", np.linalg.cholesky, (spd,), "cholesky"),
                 ("eigh", lambda a: np.linalg.eigh(a)[0], (spd,), "eigh"),
                 ("svd", lambda a: np.linalg.svd(a)[1], (x,), "svd"))
        for name, fn, args, jname in cases:
            case = f"{name} {'x'.join(map(str, shape))} f64"
            want = fn(*args)
            record(case, "numpy", *timeit(lambda: fn(*args), repeat=5, min_time=0.05))
            traced = tj.trace(fn)
            if not _agree(traced(*args), want):
                note(f"W14 {case}: tracejit differs from NumPy")
            record(case, "tracejit 1 thread", *timeit(lambda: traced(*args), repeat=5,
                                                      min_time=0.05))
            if jax is not None:
                jf = _jax_fn(jax, jname)
                jargs = [jax.device_put(a) for a in args]
                if not _agree(jf(*jargs), want):
                    note(f"W14 {case}: jax differs from NumPy")
                with one_core():
                    lo, med = timeit(lambda: jax.block_until_ready(jf(*jargs)), repeat=5,
                                     min_time=0.05)
                record(case, "jax.jit (1 core)", lo, med)


def _jax_fn(jax, name):
    jnp = jax.numpy
    fn = {"solve": jnp.linalg.solve, "cholesky": jnp.linalg.cholesky,
          "eigh": lambda a: jnp.linalg.eigh(a)[0],
          "svd": lambda a: jnp.linalg.svd(a, compute_uv=True)[1]}[name]
    return jax.jit(fn)


def gp_nll(log_ell, x, y):
    """Negative log-likelihood of a GP with an RBF kernel (Cholesky; NumPy code)."""
    n = x.shape[0]
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(2 * log_ell)) + 0.1 * np.eye(n)
    L = np.linalg.cholesky(k)
    alpha = tla.cho_solve((L, True), y[:, None])[:, 0]
    return 0.5 * y @ alpha + np.sum(np.log(np.diagonal(L)))


def gp_grad_numpy(log_ell, x, y):
    """The same gradient by hand in NumPy: d nll = 0.5 tr((K^-1 - a a^T) dK)."""
    n = x.shape[0]
    d2 = (x[:, None] - x[None, :]) ** 2
    ell2 = np.exp(2 * log_ell)
    e = np.exp(-0.5 * d2 / ell2)
    k = e + 0.1 * np.eye(n)
    L = np.linalg.cholesky(k)
    k_inv = np.linalg.inv(k)
    a = k_inv @ y
    dk = e * d2 / ell2
    return 0.5 * np.sum((k_inv - np.outer(a, a)) * dk), L


def _gp_jax(jax):
    jnp = jax.numpy
    from jax.scipy.linalg import cho_solve

    def nll(log_ell, x, y):
        n = x.shape[0]
        k = jnp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / jnp.exp(2 * log_ell)) + \
            0.1 * jnp.eye(n)
        L = jnp.linalg.cholesky(k)
        return 0.5 * y @ cho_solve((L, True), y) + jnp.sum(jnp.log(jnp.diagonal(L)))
    return jax.jit(jax.grad(nll))


def _gp_autograd(autograd):
    anp = autograd.numpy
    from autograd.scipy.linalg import solve_triangular

    def nll(log_ell, x, y):
        n = x.shape[0]
        k = anp.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / anp.exp(2 * log_ell)) + \
            0.1 * anp.eye(n)
        L = anp.linalg.cholesky(k)
        alpha = solve_triangular(L.T, solve_triangular(L, y, lower=True), lower=False)
        return 0.5 * anp.dot(y, alpha) + anp.sum(anp.log(anp.diag(L)))
    return autograd.grad(nll)


def gp(sizes, record, note):
    jax, autograd = _jax(), peer("autograd")
    if autograd is None:
        note("W14: autograd is not importable: no autograd column")
    rng = np.random.default_rng(1)
    for n in sizes:
        x, y = np.sort(rng.uniform(0, 5, n)), rng.standard_normal(n)
        case = f"GP nll gradient n={n} f64"
        want = gp_grad_numpy(0.3, x, y)[0]
        record(case, "numpy (hand-written)", *timeit(lambda: gp_grad_numpy(0.3, x, y),
                                                     repeat=5, min_time=0.05))
        g = tj.grad(gp_nll)
        if not np.isclose(g(0.3, x, y), want, rtol=1e-6):
            note(f"W14 {case}: tracejit differs from NumPy")
        record(case, "tracejit grad, 1 thread", *timeit(lambda: g(0.3, x, y), repeat=5,
                                                        min_time=0.05))
        if jax is not None:
            jg = _gp_jax(jax)
            jx, jy = jax.device_put(x), jax.device_put(y)
            if not np.isclose(float(jg(0.3, jx, jy)), want, rtol=1e-6):
                note(f"W14 {case}: jax differs from NumPy")
            with one_core():
                lo, med = timeit(lambda: jax.block_until_ready(jg(0.3, jx, jy)), repeat=5,
                                 min_time=0.05)
            record(case, "jax.grad, jit (1 core)", lo, med)
        if autograd is not None:
            ag = _gp_autograd(autograd)
            if not np.isclose(ag(0.3, x, y), want, rtol=1e-6):
                note(f"W14 {case}: autograd differs from NumPy")
            record(case, "autograd.grad", *timeit(lambda: ag(0.3, x, y), repeat=5,
                                                  min_time=0.05))


def measure(quick=False, record=None, note=None):
    """Run every row; ``record(case, impl, min, median)`` and ``note(text)`` receive them."""
    record = record or (lambda *r: print(*r, flush=True))
    note = note or print
    functions([s for s in SHAPES if not quick or s[-1] < 512], record, note)
    gp(GP_SIZES[:1] if quick else GP_SIZES, record, note)


def _fmt(t):
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


if __name__ == "__main__":
    rows, notes = [], []
    measure("--quick" in sys.argv, lambda *r: (rows.append(r), print(*r, file=sys.stderr)),
            notes.append)
    ref = {}
    print("| case | implementation | min | median | NumPy min / min |")
    print("|---|---|---:|---:|---:|")
    for case, impl, lo, med in rows:
        if impl.startswith("numpy"):
            ref[case] = lo
        print(f"| {case} | {impl} | {_fmt(lo)} | {_fmt(med)} | {ref[case] / lo:.2f}x |")
    for n in notes:
        print(f"- {n}")
