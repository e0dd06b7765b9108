"""Derivatives and vmap through selections (``x[mask]`` with a traced mask, ``x[a:b]`` with
traced bounds, ``x[cols]`` with a selection of indices) and through writes into arguments:
check_grads (order 2, forward and reverse) and vmap against a NumPy loop, on both backends.
Transforms are functional (README): the caller's arrays are never changed by them.
"""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ("llvm", "interpret")


def sel_read(x, m):
    s = x[m > 0]
    return (s ** 2).sum() + np.sin(s).mean() + s.max()


def sel_map(x, m):
    y = x.copy()
    y[m > 0] = np.sin(y[m > 0]) * y[m > 0]
    return y


def sel_add(x, m, v):
    y = x * 1.0
    y[m > 0] += v[m > 0] * y[m > 0]
    y[m < -0.5] *= 3.0
    return y


def sel_slice(x, lo, hi):
    y = x * 2.0
    y[lo[0]:hi[0]] = y[lo[0]:hi[0]] ** 2
    return (x[lo[1]:hi[1]] * x[lo[1]:hi[1]]).sum() + (y * y).sum()


def arg_write(x, v):
    x[1:] += v[:-1] * x[:-1]
    x[0] = np.exp(v[0])
    x *= x
    return x.sum()


def arg_write_sel(x, v):
    x[x > 0.5] *= v[x > 0.5]
    x[x < 0.2] = x[x < 0.2] ** 3
    return x.sum() * 2


def csr_rows(indptr, indices, data, x):
    y = np.empty(indptr.size - 1, data.dtype)
    for i in range(indptr.size - 1):
        y[i] = data[indptr[i]:indptr[i + 1]] @ x[indices[indptr[i]:indptr[i + 1]]]
    return y


def _csr():
    import scipy.sparse as sp
    a = sp.random(6, 6, density=0.4, format="csr", random_state=3)
    return a.indptr.astype(np.int64), a.indices.astype(np.int64), a.data


def _normal(rng, n=7):
    return rng.standard_normal(n)


# (function, makes the arguments from an rng, positions of the differentiable arguments)
CASES = {
    "x[mask] read": (sel_read, lambda r: (_normal(r), _normal(r)), (0,)),
    "x[m] = f(x[m])": (sel_map, lambda r: (_normal(r), _normal(r)), (0,)),
    "x[m] op= v": (sel_add, lambda r: (_normal(r), _normal(r), _normal(r)), (0, 2)),
    "traced slice bounds": (sel_slice, lambda r: (_normal(r, 9), r.integers(-9, 9, 2),
                                                  r.integers(-9, 9, 2)), (0,)),
    "argument writes": (arg_write, lambda r: (_normal(r, 6), _normal(r, 6)), (0, 1)),
    "argument writes through masks": (arg_write_sel, lambda r: (r.random(6), _normal(r, 6)),
                                      (0, 1)),
    "x[cols] gather": (lambda d, x: csr_rows(*_csr()[:2], d, x),
                       lambda r: (_csr()[2] + r.random(), r.random(6)), (0, 1)),
}


def _copies(args):
    return [a.copy() for a in args]


# every case on the interpreter; on llvm the ones that cover the other compiled paths (each
# check_grads compiles a dozen graphs: the rest would take most of this file's time)
_LLVM = ("x[m] op= v", "traced slice bounds", "argument writes through masks")


@pytest.mark.parametrize("name, backend", [(n, "interpret") for n in CASES] +
                         [(n, "llvm") for n in _LLVM])
def test_derivatives(name, backend, monkeypatch):
    fn, make, diff = CASES[name]
    args = make(np.random.default_rng(11))
    # keep the masks away from their thresholds: finite differences must not flip them
    if name.startswith("argument writes through"):
        args = (np.where(np.abs(args[0] - 0.5) < 0.05, 0.7, args[0]), args[1])

    def g(*d):
        full = _copies(args)
        for i, v in zip(diff, d):
            full[i] = v
        return fn(*full)
    monkeypatch.setattr(tj.config, "backend", backend)
    primals = tuple(args[i].copy() for i in diff)
    check_grads(g, primals, order=2, modes=("fwd", "rev"))
    grads = tj.grad(g, argnums=tuple(range(len(diff))))(*primals) \
        if np.ndim(fn(*_copies(args))) == 0 else None
    for p, i in zip(primals, diff):         # functional: the caller's arrays stay
        np.testing.assert_array_equal(p, args[i])
    assert grads is None or len(grads) == len(diff)


@pytest.mark.parametrize("name", list(CASES))
def test_vmap(name):
    fn, make, _ = CASES[name]
    rng = np.random.default_rng(5)
    # each example its own masks and bounds
    batch = [np.stack(xs) for xs in zip(*(make(rng) for _ in range(4)))]
    want = np.stack([fn(*_copies(ex)) for ex in zip(*batch)])
    for backend in BACKENDS:
        got_args = _copies(batch)
        got = tj.trace(tj.vmap(fn), backend=backend)(*got_args)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=backend)
        for g, a in zip(got_args, batch):
            np.testing.assert_array_equal(g, a)
