"""numpy.linalg under tracejit against NumPy (and jax / autograd when installed).

    python bench/linalg_bench.py [--quick]

Rows: solve / cholesky / eigh / svd at n = 8, 64, 512 and a batch of 1000 8x8 matrices, and the
gradient of a Gaussian-process negative log-likelihood (n = 500; n = 8 shows the native small-
matrix path). Times are min / median over repeats (harness.timeit); the ratio is NumPy's min
time divided by tracejit's (> 1: tracejit faster). One run, printed as a markdown table.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import timeit  # noqa: E402

import tracejit as tj  # noqa: E402
from tracejit.numpy import linalg as tla  # noqa: E402


def _fmt(t):
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def _row(case, impl, fn, ref=None):
    lo, med = timeit(fn, repeat=5, min_time=0.05)
    ratio = "-" if ref is None else f"{ref / lo:.2f}x"
    print(f"| {case} | {impl} | {_fmt(lo)} | {_fmt(med)} | {ratio} |", flush=True)
    return lo


def functions(shapes):
    rng = np.random.default_rng(0)
    for shape in shapes:
        n = shape[-1]
        x = rng.standard_normal(shape)
        spd = x @ np.swapaxes(x, -1, -2) + n * np.eye(n)
        b = rng.standard_normal(shape[:-1] + (1,))
        for name, fn, args in (("solve", np.linalg.solve, (spd, b)),
                               ("cholesky", np.linalg.cholesky, (spd,)),
                               ("eigh", np.linalg.eigh, (spd,)),
                               ("svd", np.linalg.svd, (x,))):
            case = f"{name} {'x'.join(map(str, shape))} f64"
            ref = _row(case, "numpy", lambda: fn(*args))
            traced = tj.trace(fn)
            _row(case, "tracejit", lambda: traced(*args), ref)


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


def gp(ns):
    rng = np.random.default_rng(1)
    for n in ns:
        x, y = np.sort(rng.uniform(0, 5, n)), rng.standard_normal(n)
        case = f"GP nll gradient n={n}"
        ref = _row(case, "numpy (hand-written)", lambda: gp_grad_numpy(0.3, x, y))
        g = tj.grad(gp_nll)
        assert np.allclose(g(0.3, x, y), gp_grad_numpy(0.3, x, y)[0], rtol=1e-6)
        _row(case, "tracejit grad", lambda: g(0.3, x, y), ref)


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print("| case | implementation | min | median | NumPy min / min |")
    print("|---|---|---:|---:|---:|")
    functions([(8, 8), (64, 64), (1000, 8, 8)] + ([] if quick else [(512, 512)]))
    gp([8, 64] + ([] if quick else [500]))
