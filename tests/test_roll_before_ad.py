"""Differentiating a rolled primal, and dead code through a scan (issue 14 items 1 and 3).

- ``passes.rolled_primal``: a large primal (an unrolled Python loop) is rolled into a scan
  before AD, so the transforms walk one body instead of every copy. The derivatives are bit for
  bit those of the unrolled program (``config.roll_loops = False``) on both backends, their IR
  does not grow with the number of steps, and check_grads holds through them;
- ``transforms/scan_prune.py``: ``dce`` drops a scan's unused stacked results and carries
  (through the carried chain: a carry a kept result reads stays) and the inputs no longer read;
  results match a NumPy loop on both backends; what the body computes the same on every step
  (a carry returned unchanged, equations of consts) moves out of the loop.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tracejit as tj
from tracejit import passes
from tracejit.test_util import check_grads, using_backend, using_config

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.test_roll import _rnn, _scans, assert_rolled_exact  # noqa: E402

T_ROLLED = 30          # 30 steps of the RNN: 300 primal equations, past ROLL_BEFORE_AD


def test_threshold_reached():
    """The traced derivative (before any simplification) is already the scans' when rolling
    is on, and the unrolled copies' when it is off."""
    fn, args = _rnn(T_ROLLED)
    g = tj.jit(fn).ir(*args, optimize=False)
    assert len(g.eqns) < 100, len(g.eqns)
    with using_config(roll_loops=False):
        unrolled = tj.jit(fn).ir(*args, optimize=False)
    assert len(unrolled.eqns) > 2 * passes.ROLL_BEFORE_AD, len(unrolled.eqns)


@pytest.mark.parametrize("value", [False, True])
def test_rnn_gradient_rolled_before_ad_exact(value):
    fn, args = _rnn(T_ROLLED, value)

    def flat(*a):
        out = fn(*a)
        return tuple(out[1]) + (out[0],) if value else tuple(out)
    assert_rolled_exact(flat, args, min_scans=2)


def test_derivative_ir_does_not_grow_with_steps():
    sizes = []
    for T in (T_ROLLED, 4 * T_ROLLED):
        fn, args = _rnn(T)
        g = tj.jit(fn).ir(*args)
        assert [s.params["reverse"] for s in _scans(g)] == [False, True]
        sizes.append(len(g.eqns))
    assert sizes[0] == sizes[1], sizes


def test_jacrev_and_jacfwd_of_long_loop_exact():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((6, 6)) / 3

    def f(x):
        for _ in range(70):
            x = np.tanh(W @ x) + 0.5 * x
        return x
    x = rng.standard_normal(6)
    assert_rolled_exact(tj.jacrev(f), (x,))
    assert_rolled_exact(tj.jacfwd(f), (x,))


def test_check_grads_through_a_rolled_primal():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((70, 3))

    def f(w):
        h = np.zeros(3)
        for t in range(70):
            h = np.sin(w * h + xs[t]) * 0.9
        return np.sum(h * h)
    check_grads(tj.jit(f), (rng.standard_normal(3),), order=2, modes=("fwd", "rev"))


# ---------------------------------------------------------------------------------------------
# dead code through a scan

def _loop(a, xs):
    """A scan with carries (c, d, e) and stacked results (y, z); the caller reads c and y.
    d feeds y through e one step later (kept); z and the carry of the running sum are dead."""
    def body(carry, x):
        c, d, e, s = carry
        c2 = np.tanh(c * a + x)
        d2 = d * 0.5 + x
        e2 = np.cos(d)
        s2 = s + np.sum(c2)
        return (c2, d2, e2, s2), (c2 + e, np.exp(x) * d)
    init = (np.zeros(3), np.ones(3), np.zeros(3), 0.0)
    (c, _, _, _), (y, _) = tj.scan(body, init, xs)
    return c, y


def _loop_numpy(a, xs):
    c, d, e = np.zeros(3), np.ones(3), np.zeros(3)
    ys = []
    for x in xs:
        c, d, e, old_e = np.tanh(c * a + x), d * 0.5 + x, np.cos(d), e
        ys.append(c + old_e)
    return c, np.stack(ys)


def test_unused_scan_results_are_dropped():
    rng = np.random.default_rng(4)
    a, xs = rng.standard_normal(3), rng.standard_normal((9, 3))
    (scan,) = _scans(tj.jit(_loop).ir(a, xs))
    assert scan.params["n_carry"] == 3                   # c, d, e: not the running sum
    assert len(scan.outvars) == 4                        # ... and y, not z
    body = str(scan.params["body"])
    assert "exp" not in body and "reduce_sum" not in body
    want = _loop_numpy(a, xs)
    for backend in ("interpret", "llvm"):
        with using_backend(backend):
            got = tj.jit(_loop)(a, xs)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_pruning_off_matches():
    """The pruned scan gives the bits of the whole scan (every result read)."""
    rng = np.random.default_rng(5)
    a, xs = rng.standard_normal(3), rng.standard_normal((9, 3))

    def whole(a, xs):
        def body(carry, x):
            c, d, e, s = carry
            c2 = np.tanh(c * a + x)
            return (c2, d * 0.5 + x, np.cos(d), s + np.sum(c2)), (c2 + e, np.exp(x) * d)
        init = (np.zeros(3), np.ones(3), np.zeros(3), 0.0)
        return tj.scan(body, init, xs)
    with using_config(roll_loops=False):
        c, y = tj.jit(_loop)(a, xs)
        (c_all, _, _, _), (y_all, _) = tj.jit(whole)(a, xs)
    assert c.tobytes() == c_all.tobytes() and y.tobytes() == y_all.tobytes()


def test_invariants_leave_the_loop():
    """A carry returned unchanged becomes a const (its final value is the initial one) and
    the body's equations of consts only run once, before the scan; bits as a NumPy loop's."""
    rng = np.random.default_rng(6)
    a, xs = rng.standard_normal(3), rng.standard_normal((9, 3))

    def f(a, xs):
        def body(carry, x):
            c, k = carry
            w = np.exp(a) * 2.0 + k              # invariant: a const and a passthrough carry
            return (np.tanh(c * w + x), k), c * w
        (c, k), ys = tj.scan(body, (np.zeros(3), np.float64(0.5)), xs)
        return c, k, ys

    g = tj.jit(f).ir(a, xs)
    (scan,) = _scans(g)
    assert scan.params["n_carry"] == 1
    assert "exp" not in str(scan.params["body"]) and "exp" in str(g)
    c, w, ys = np.zeros(3), np.exp(a) * 2.0 + 0.5, []
    for x in xs:
        ys.append(c * w)
        c = np.tanh(c * w + x)
    for backend in ("interpret", "llvm"):
        with using_backend(backend):
            got = tj.jit(f)(a, xs)
        for g_, w_ in zip(got, (c, 0.5, np.stack(ys))):
            np.testing.assert_allclose(g_, w_, rtol=1e-14, atol=1e-15)
