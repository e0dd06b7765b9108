"""Native control flow on the llvm backend (cond / while / scan / fori_loop as branches and loops
inside the kernel) and the run-time settings it reads: ``config.max_while_iterations`` and
``config.num_threads``."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.engine import threads


def jit(fun):
    return tj.jit(fun, backend="llvm")


def interpret(fun, *args):
    return tj.jit(fun, backend="interpret")(*args)


def executable(f, *args):
    return f.lower(*args).executable


def pendulum(steps):
    def final(theta0, omega0, damping):
        def step(i, state):
            theta, omega = state
            return theta + 0.01 * omega, omega - 0.01 * (9.81 * np.sin(theta) + damping * omega)
        theta, _ = tj.fori_loop(0, steps, step, (theta0, omega0))
        return np.sum(theta)
    return final


def test_fori_loop_is_one_native_kernel():
    x, w = np.linspace(-1, 1.5, 100), np.linspace(0.5, 0.2, 100)
    f = jit(pendulum(1000))
    exe = executable(f, x, w, 0.3)
    assert exe.native, exe.describe()
    assert "native scan length=1000" in exe.describe()
    np.testing.assert_allclose(f(x, w, 0.3), interpret(pendulum(1000), x, w, 0.3), rtol=1e-10)


def test_llvm_ir_size_independent_of_trip_count():
    x = np.linspace(-1, 1, 16)
    texts = [jit(pendulum(n)).inspect_llvm(x, x, 0.3) for n in (10, 10 ** 6)]
    assert len(texts[0].splitlines()) == len(texts[1].splitlines())
    # one copy of the body: the sine is called from one loop whatever the trip count
    assert texts[0].count("sin") == texts[1].count("sin")


def test_gradient_through_scan_is_native():
    x, w = np.linspace(-1, 1, 50), np.linspace(0.5, -0.5, 50)
    g = jit(tj.grad(pendulum(200), argnums=(0, 1, 2)))
    assert executable(g, x, w, 0.3).native
    got = g(x, w, 0.3)
    want = interpret(tj.grad(pendulum(200), argnums=(0, 1, 2)), x, w, 0.3)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_xs_ys_consts(reverse):
    xs = np.arange(24.0).reshape(6, 4)
    w = np.array([1.0, -2.0, 0.5, 3.0])

    def f(xs, c0):
        def body(c, x):
            c = c * 0.5 + x * w
            return c, (np.sum(c), c * c)
        return tj.scan(body, c0, xs, reverse=reverse)

    c0 = np.ones(4)
    got, want = jit(f)(xs, c0), interpret(f, xs, c0)
    assert executable(jit(f), xs, c0).native
    for a, b in zip(tj.tree.flatten(got)[0], tj.tree.flatten(want)[0]):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_scan_odd_and_zero_length_and_passthrough_carry():
    def f(x, n):
        def body(c, _):
            a, b = c
            return (b, a + b), a       # swaps carries: a pass-through output
        return tj.scan(body, (x, x + 1), None, length=n)
    x = np.array([1.0, 2.0])
    for n in (0, 1, 5, 8):
        got = jit(lambda x: f(x, n))(x)
        want = interpret(lambda x: f(x, n), x)
        for a, b in zip(tj.tree.flatten(got)[0], tj.tree.flatten(want)[0]):
            np.testing.assert_array_equal(a, b)


def test_while_loop_native():
    def f(x, limit):
        def cond(c):
            return c[0] < limit

        def body(c):
            i, v = c
            return i + 1, v * 1.5 + 1.0
        return tj.while_loop(cond, body, (np.int64(0), x))

    x = np.arange(5.0)
    for limit in (0, 1, 7):
        got = jit(f)(x, limit)
        want = interpret(f, x, limit)
        assert int(got[0]) == int(want[0]) == limit
        np.testing.assert_allclose(got[1], want[1])
    assert executable(jit(f), x, 3).native


def test_max_while_iterations_in_native_code():
    def f(x):
        return tj.while_loop(lambda v: v[0] < 1e9, lambda v: v + 1.0, x)

    g = jit(f)
    x = np.zeros(3)
    saved = tj.config.max_while_iterations
    try:
        tj.config.max_while_iterations = 50
        assert executable(g, x).native
        with pytest.raises(RuntimeError, match="max_while_iterations"):
            g(x)
        # a run-time change reaches the already-compiled kernel
        tj.config.max_while_iterations = None
        h = jit(lambda x: tj.while_loop(lambda v: v[0] < 100, lambda v: v + 1.0, x))
        np.testing.assert_array_equal(h(x), np.full(3, 100.0))
        tj.config.max_while_iterations = 10
        with pytest.raises(RuntimeError, match="max_while_iterations = 10"):
            h(x)
    finally:
        tj.config.max_while_iterations = saved


def test_cond_and_switch_native():
    def f(p, x):
        return tj.cond(p > 0, lambda a: np.sin(a) * 2, lambda a: a - 1.0, x)

    x = np.linspace(0, 1, 9)
    g = jit(f)
    assert executable(g, 1.0, x).native
    for p in (1.0, -1.0):
        np.testing.assert_allclose(g(p, x), interpret(f, p, x))

    def s(i, x):
        return tj.numpy.asarray(0.0) + tj.control.switch(
            i, [lambda a: a, lambda a: a * 2, lambda a: a * 3], x)
    for i in (-5, 0, 1, 2, 9):
        np.testing.assert_allclose(jit(s)(i, x), interpret(s, i, x))


def test_nested_control_flow_native():
    def f(x):
        def outer(c, _):
            c = tj.while_loop(lambda v: np.sum(v) < 100.0, lambda v: v * 2.0 + 1.0, c)
            c = tj.cond(np.sum(c) > 150.0, lambda v: v * 0.25, lambda v: v - 1.0, c)
            return c, np.max(c)
        return tj.scan(outer, x, None, length=6)

    x = np.array([0.5, 1.0, 1.5])
    g = jit(f)
    assert executable(g, x).native
    got, want = g(x), interpret(f, x)
    np.testing.assert_allclose(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1])


def test_gather_error_inside_loop_raises():
    def f(x, idx):
        def body(c, _):
            return c + x[idx], None
        return tj.scan(body, np.zeros(2), None, length=4)[0]
    x = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(jit(f)(x, 1), 4 * x[1])
    with pytest.raises(IndexError):
        jit(f)(x, 7)


def test_num_threads_config_drives_the_pool():
    saved = tj.config.num_threads
    x = np.random.default_rng(0).standard_normal(400_000)
    f = jit(lambda x: np.tanh(x) * np.exp(-0.5 * x * x) + x / (1 + x * x))
    r = jit(lambda x: np.sum(np.exp(-x * x)))
    try:
        results = []
        for n in (1, 2, 1):
            tj.config.num_threads = n
            assert threads.get_num_threads() == n
            results.append((f(x), r(x)))
        for a, b in results[1:]:          # independent of the thread count, bit for bit
            np.testing.assert_array_equal(a, results[0][0])
            assert b == results[0][1]
    finally:
        tj.config.num_threads = saved
    assert threads.get_num_threads() == threads._clamp(saved)
