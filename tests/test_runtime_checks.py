"""Run-time checks (``ops/elementwise.py``, ``check_p``): integer powers with a traced negative
exponent raise NumPy's ValueError when the function runs, on both backends, also inside loop
bodies and under vmap; non-negative and unsigned exponents give NumPy's values. The primitive's
rules: jvp and transpose pass the value through, vmap checks every example, DCE keeps it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit as tj
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.ops.elementwise import check, check_p
from tracejit.passes import simplify

BACKENDS = ("interpret", "llvm")
MESSAGE = "^Integers to negative integer powers are not allowed.$"


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_array_exponent_raises(backend):
    f = tj.jit(lambda x, e: x ** e, backend=backend)
    with pytest.raises(ValueError, match=MESSAGE):
        f(np.array([2, 3]), np.array([1, -1]))
    # the bad element in the vector tail, at the start, alone in a 0-d array, broadcast
    x = np.arange(-20, 23, dtype=np.int64)
    for k in (0, 20, len(x) - 1):
        e = np.arange(len(x)) % 5
        e[k] = -2
        with pytest.raises(ValueError, match=MESSAGE):
            f(x, e)
    with pytest.raises(ValueError, match=MESSAGE):
        f(np.int64(3), np.int64(-1))
    with pytest.raises(ValueError, match=MESSAGE):
        f(np.arange(6).reshape(2, 3), np.array([1, -1, 2]))
    with pytest.raises(ValueError, match=MESSAGE):
        tj.jit(lambda x, e: (x ** e).sum(), backend=backend)(x, -np.ones_like(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64"])
def test_non_negative_exponents_give_numpy_values(backend, dt):
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, 37).astype(dt)
    e = rng.integers(0, 70, 37).astype(dt)
    f = tj.jit(lambda x, e: x ** e, backend=backend)
    out = f(x, e)
    np.testing.assert_array_equal(out, x ** e)
    assert out.dtype == (x ** e).dtype
    np.testing.assert_array_equal(f(x, np.zeros_like(e)), np.ones_like(x))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", ["uint8", "uint16", "uint32", "uint64"])
def test_unsigned_exponents_never_raise(backend, dt):
    x = np.arange(7).astype(dt)
    e = np.array([0, 1, 2, 255, 3, 128, 7]).astype(dt)
    out = tj.jit(lambda x, e: x ** e, backend=backend)(x, e)
    np.testing.assert_array_equal(out, x ** e)
    graph, _ = make_graph(lambda x, e: [x ** e], [Type(np.dtype(dt), (7,))] * 2)
    assert not any(q.prim is check_p for q in graph.eqns)      # no check to run at all


@pytest.mark.parametrize("backend", BACKENDS)
def test_raises_inside_loop_bodies(backend):
    def fori(x, e):
        return tj.fori_loop(0, 3, lambda i, c: c + x ** (e - i), np.zeros_like(x))

    def while_(x, e):
        def body(c):
            k, acc = c
            return k + 1, acc + x ** (e - k)
        return tj.while_loop(lambda c: c[0] < 3, body, (0, np.zeros_like(x)))[1]

    x = np.array([2, 3, 4], np.int64)
    good = np.array([2, 5, 3])
    for fn in (fori, while_):
        f = tj.jit(fn, backend=backend)
        np.testing.assert_array_equal(f(x, good), sum(x ** (good - i) for i in range(3)))
        with pytest.raises(ValueError, match=MESSAGE):
            f(x, np.array([2, 1, 3]))        # the third iteration's exponent is -1


@pytest.mark.parametrize("backend", BACKENDS)
def test_raises_under_vmap(backend):
    f = tj.jit(tj.vmap(lambda x, e: x ** e), backend=backend)
    x = np.arange(12).reshape(4, 3)
    e = np.ones((4, 3), np.int64)
    np.testing.assert_array_equal(f(x, e), x)
    e[3, 1] = -1                             # one bad element of one example
    with pytest.raises(ValueError, match=MESSAGE):
        f(x, e)
    g = tj.jit(tj.vmap(lambda e: np.int64(2) ** e), backend=backend)   # batched scalars
    np.testing.assert_array_equal(g(np.arange(4)), 2 ** np.arange(4))
    with pytest.raises(ValueError, match=MESSAGE):
        g(np.array([1, 2, -3, 4]))


def test_check_survives_simplification_when_used():
    def fn(x, e):
        return [x ** e]
    graph, _ = make_graph(fn, [Type(np.dtype("int64"), (5,))] * 2)
    assert any(q.prim is check_p for q in simplify(graph).eqns)


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_rules_pass_the_value_through(backend):
    def fn(x):
        return check(x < -10.0, x * 3.0, "negative_power") * x
    x = np.array([1.0, -2.0, 4.0])
    y, t = tj.jvp(fn, (x,), (np.ones(3),))
    np.testing.assert_allclose(y, 3 * x * x)
    np.testing.assert_allclose(t, 6 * x)
    np.testing.assert_allclose(tj.jit(tj.grad(lambda x: fn(x).sum()), backend=backend)(x), 6 * x)
    with pytest.raises(ValueError, match=MESSAGE):
        tj.jit(fn, backend=backend)(np.array([1.0, -20.0, 0.0]))
    vf = tj.jit(tj.vmap(fn), backend=backend)
    np.testing.assert_allclose(vf(np.ones((2, 3))), 3 * np.ones((2, 3)))
    with pytest.raises(ValueError, match=MESSAGE):
        vf(np.array([[1.0, 2.0, 3.0], [0.0, -11.0, 0.0]]))


@settings(max_examples=60, deadline=None)
@given(dt=st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]),
       n=st.integers(1, 40), seed=st.integers(0, 2**31 - 1),
       p_neg=st.sampled_from([0.0, 0.05, 0.5]),
       backend=st.sampled_from(BACKENDS))
def test_integer_power_matches_numpy(dt, n, seed, p_neg, backend):
    """Values or the exception type, as NumPy."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-20, 20, n).astype(dt)
    e = rng.integers(0, 40, n)
    e = np.where(rng.random(n) < p_neg, -e - 1, e).astype(dt)
    try:
        want = x ** e
    except ValueError:
        want = ValueError
    f = tj.jit(lambda x, e: x ** e, backend=backend)
    if want is ValueError:
        with pytest.raises(ValueError, match=MESSAGE):
            f(x, e)
    else:
        got = f(x, e)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


# Dead code keeps its run-time errors (fuzz 841 #738, 851 #114, 861 #2525): NumPy raises for
# a[i] = v with i out of range even when a is overwritten or never read afterwards, so DCE keeps
# an unused gather, scatter or check (passes.dce, backend/plan/sinkviews.py) unless a kept
# equation checks the same index against the same length.

def _dead_write(a0, a2):
    a0[a2] += -0.75
    np.subtract(1.0, 2.0, out=a0)
    return a0.sum()


def _dead_read(x, i):
    y = x[i]
    return x * 2


def _dead_local_write(x, i):
    a = np.zeros(3)
    a[i] = x[0]
    return np.sum(x * 2)


def _dead_power(x, e):
    y = x ** e
    return x + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, good, bad, error", [
    (_dead_write, (np.zeros(3), 1), (np.zeros(3), 5), IndexError),
    (_dead_read, (np.ones(3), -3), (np.ones(3), 3), IndexError),
    (_dead_local_write, (np.ones(3), 2), (np.ones(3), -4), IndexError),
    (_dead_power, (np.arange(3), np.arange(3)), (np.arange(3), np.array([1, -1, 2])), ValueError),
])
def test_dead_code_keeps_its_errors(backend, fn, good, bad, error):
    g = tj.jit(fn, backend=backend)
    want = fn(*[np.copy(a) for a in good])
    np.testing.assert_array_equal(g(*[np.copy(a) for a in good]), want)
    with pytest.raises(error):
        fn(*[np.copy(a) for a in bad])                      # NumPy raises too
    with pytest.raises(error):
        g(*[np.copy(a) for a in bad])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_code_keeps_its_errors_under_transforms(backend):
    x = np.ones((2, 3))
    batched = tj.jit(tj.vmap(_dead_local_write, in_axes=(0, None)), backend=backend)
    np.testing.assert_array_equal(batched(x, 1), [6.0, 6.0])
    with pytest.raises(IndexError):
        batched(x, 7)
    grad = tj.jit(tj.grad(lambda x, i: np.sum(_dead_read(x, i))), backend=backend)
    np.testing.assert_array_equal(grad(x[0], 0), [2.0, 2.0, 2.0])
    with pytest.raises(IndexError):
        grad(x[0], 3)


def test_a_checked_index_needs_no_dead_gather():
    """The gradient of x[i] scatters into i, which checks i: the primal gather goes."""
    ir = str(tj.make_ir(tj.grad(lambda x, i: x[i] * 2.0))(np.ones(3), 1))
    assert "scatter" in ir and "take" not in ir
