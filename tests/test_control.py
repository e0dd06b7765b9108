"""Control flow: cond/switch/while_loop/fori_loop/scan against plain Python loops, nested, with
pytrees and captured values; IR size independent of the trip count; clear errors."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracejit as tj
from tracejit.errors import ShapeError

BACKENDS = ["interpret", "llvm"]


@pytest.fixture(params=BACKENDS, autouse=True)
def backend(request):
    saved = tj.config.backend
    tj.config.backend = request.param
    yield request.param
    tj.config.backend = saved


def _fori(x, n):
    return tj.fori_loop(0, n, lambda i, c: c * 0.5 + x * i, x)


fori = tj.trace(_fori, static_argnums=1)


@given(st.integers(0, 12), st.floats(-3, 3))
def test_fori_loop_matches_python_loop(n, v):
    x = np.full(3, v)
    c = x.copy()
    for i in range(n):
        c = c * 0.5 + x * i
    assert np.allclose(fori(x, n), c)


def test_fori_loop_traced_bounds_use_while():
    f = tj.trace(lambda x, n: tj.fori_loop(0, n, lambda i, c: c + i, x))
    assert float(f(0.0, 5)) == 10.0 and float(f(1.0, 0)) == 1.0
    assert "while" in str(f.ir(0.0, 5))


newton_like = tj.trace(lambda x: tj.while_loop(lambda c: c[0] > 1e-9,
                                               lambda c: (c[0] * 0.5, c[1] + 1), (x, 0)))


@given(st.floats(1e-6, 1e6))
def test_while_loop_matches_python(v):
    c, k = v, 0
    while c > 1e-9:
        c, k = c * 0.5, k + 1
    out, count = newton_like(v)
    assert float(out) == c and int(count) == k


cond_f = tj.trace(lambda p, x: tj.cond(p > 0, lambda a: a * 2, lambda a: a - 1, x))


@given(st.floats(-5, 5))
def test_cond_picks_the_branch(p):
    x = np.arange(3.0)
    assert np.array_equal(cond_f(p, x), x * 2 if p > 0 else x - 1)


def test_switch_clamps_index():
    f = tj.trace(lambda i, x: tj.switch(i, [lambda a: a, lambda a: a + 1, lambda a: a * 10], x))
    assert [float(f(i, 2.0)) for i in (-1, 0, 1, 2, 7)] == [2.0, 2.0, 3.0, 20.0, 20.0]


scan_f = tj.trace(lambda xs, r: tj.scan(lambda c, x: (c + x, c * x), 0.0, xs, reverse=r),
                  static_argnums=1)


@given(st.lists(st.floats(-10, 10), min_size=0, max_size=8), st.booleans())
def test_scan_matches_python(values, reverse):
    xs = np.array(values, dtype=np.float64)
    c, ys = 0.0, np.zeros(len(values))
    order = range(len(values) - 1, -1, -1) if reverse else range(len(values))
    for i in order:
        c, ys[i] = c + xs[i], c * xs[i]
    carry, out = scan_f(xs, reverse)
    assert np.isclose(float(carry), c) and np.allclose(out, ys)


def test_pytree_carry_and_captured_values():
    w = np.array([1.0, 2.0])

    def f(x, scale):
        def body(i, c):
            return {"a": c["a"] + scale * w, "n": c["n"] + 1}
        return tj.fori_loop(0, 3, body, {"a": x, "n": 0})

    out = tj.trace(f)(np.zeros(2), 2.0)
    assert np.allclose(out["a"], 6 * w) and int(out["n"]) == 3


def test_nested_scan_inside_while():
    def f(x):
        def body(c):
            s, k = c
            s2, _ = tj.scan(lambda a, b: (a + b, None), s, np.arange(3.0))
            return s2, k + 1
        return tj.while_loop(lambda c: c[1] < 4, body, (x, 0))
    s, k = tj.trace(f)(1.0)
    assert float(s) == 1.0 + 4 * 3.0 and int(k) == 4


def test_ir_size_independent_of_trip_count():
    small = str(fori.ir(np.ones(3), 10))
    large = str(fori.ir(np.ones(3), 10_000_000))
    assert small.replace("length=10 ", "") == large.replace("length=10000000 ", "")


def test_errors():
    with pytest.raises(ShapeError, match=r"body returns.*f64\[3\].*carry.*f64\[2\]"):
        tj.trace(lambda x: tj.while_loop(lambda c: True, lambda c: np.ones(3), x))(np.ones(2))
    with pytest.raises(ShapeError, match="bool scalar"):
        tj.trace(lambda x: tj.cond(x, lambda a: a, lambda a: a, x))(np.ones(2))
    with pytest.raises(ShapeError, match="leading dimension"):
        tj.trace(lambda a, b: tj.scan(lambda c, x: (c, x[0] + x[1]), 0.0, (a, b)))(
            np.ones(3), np.ones(4))
    with pytest.raises(ShapeError, match="different types"):
        tj.trace(lambda p: tj.cond(p > 0, lambda: 1.0, lambda: np.ones(2)))(1.0)


def test_max_while_iterations():
    tj.config.max_while_iterations = 100
    try:
        with pytest.raises(RuntimeError, match="max_while_iterations"):
            tj.trace(lambda x: tj.while_loop(lambda c: c > 0, lambda c: c + 1, x))(1.0)
    finally:
        tj.config.max_while_iterations = None
