"""Differentiating control flow: check_grads at order 2, both modes, through cond, fori_loop,
scan, while_loop (fixed trip count and tolerance-driven), nesting; checkpoint and
scan(checkpoint_every=...) give equal gradients with fewer residual bytes."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads


@pytest.fixture(autouse=True)
def interpret():
    saved = tj.config.backend
    tj.config.backend = "interpret"
    yield
    tj.config.backend = saved


def test_cond_both_branches():
    def f(p, x):
        return tj.cond(p > 0, lambda a: np.sin(a) * a, lambda a: a ** 3 + np.exp(a), x)
    for p in (1.0, -1.0):
        check_grads(lambda x: f(p, x), (np.array([0.7, -0.2]),), order=2)
    assert float(tj.grad(lambda x: f(1.0, x))(0.5)) == pytest.approx(np.sin(0.5) + 0.5 * np.cos(0.5))


def test_switch_with_captured_value():
    def f(x, w):
        return tj.switch(1, [lambda a: a * w, lambda a: np.sin(a * w), lambda a: a], x)
    check_grads(f, (0.3, 1.7), order=2)


def test_fori_loop_pendulum_like():
    def f(theta, omega, damping):
        def step(i, s):
            th, om = s
            return th + 0.01 * om, om - 0.01 * (np.sin(th) + damping * om)
        th, om = tj.fori_loop(0, 50, step, (theta, omega))
        return np.sum(th)
    check_grads(f, (np.array([0.1, 1.0]), np.array([0.0, -0.5]), 0.3), order=2)


def test_scan_with_xs_and_ys_both_directions():
    def f(x, xs, reverse):
        c, ys = tj.scan(lambda c, v: (c * np.cos(v) + x, c * v), x, xs, reverse=reverse)
        return c + np.sum(ys ** 2)
    xs = np.array([0.1, 0.5, -0.3])
    for reverse in (False, True):
        check_grads(lambda x, xs: f(x, xs, reverse), (0.4, xs), order=2)


def test_while_fixed_trip_count():
    def f(x):
        return tj.while_loop(lambda c: c[1] < 4, lambda c: (np.sin(c[0]) * 1.5 + x, c[1] + 1),
                             (x, 0))[0]
    check_grads(f, (0.3,), order=2)


@pytest.mark.parametrize("n", [0, 1, 2, 17])
def test_while_trip_counts(n):
    """Zero, one and many steps: the tape is empty, one row, many rows."""
    def f(x):
        return tj.while_loop(lambda c: c[1] < n, lambda c: (np.sin(c[0]) * 0.9 + x, c[1] + 1),
                             (x, 0))[0]
    check_grads(f, (0.3,), order=2)


def test_while_vector_and_matrix_carries_with_consts_in_cond_and_body():
    def f(x, m, tol):
        def body(c):
            v, a, k = c
            return np.tanh(m @ v) + x, a * np.cos(v[:, None]) + 0.1, k + 1
        def keep_going(c):
            return (np.sum(c[0] ** 2) < tol * 40.0) & (c[2] < 5)
        v, a, _ = tj.while_loop(keep_going, body, (x, np.outer(x, x), 0))
        return np.sum(v * np.sin(a))
    rng = np.random.default_rng(0)
    check_grads(f, (rng.standard_normal(3) * 0.5, rng.standard_normal((3, 3)) * 0.5, 1.0),
                order=2)


def test_while_float32():
    def f(x):
        return tj.while_loop(lambda c: c[1] < 6, lambda c: (np.sin(c[0]) * 1.1 + x, c[1] + 1),
                             (x, 0))[0]
    x = np.linspace(-1, 1, 4).astype(np.float32)
    g = tj.grad(lambda x: np.sum(f(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, tj.grad(lambda x: np.sum(f(x)))(x.astype(np.float64)),
                               rtol=1e-5)


def test_while_inside_while_and_inside_cond():
    def inner(x, c0):
        return tj.while_loop(lambda c: c[1] < 3, lambda c: (np.sin(c[0]) + x, c[1] + 1),
                             (c0, 0))[0]

    def nested(x):
        return tj.while_loop(lambda c: c[1] < 2, lambda c: (inner(x, c[0]) * 0.5, c[1] + 1),
                             (x, 0))[0]

    def in_cond(x):
        return tj.cond(x > 0, lambda y: inner(y, y), lambda y: y * 2.0, x)
    check_grads(nested, (0.4,), order=2)
    check_grads(in_cond, (0.4,), order=2)
    check_grads(in_cond, (-0.4,), order=2)


def test_while_inside_scan():
    def f(x):
        def step(c, xi):
            y = tj.while_loop(lambda s: s[1] < 2 + (xi > 0.5), lambda s: (np.cos(s[0]) * c,
                                                                       s[1] + 1), (c, 0))[0]
            return y + xi, y
        c, ys = tj.scan(step, x, np.array([0.1, 0.7, 0.3]))
        return c + np.sum(ys)
    check_grads(f, (0.8,), order=2)


def test_while_reverse_mode_is_one_forward_loop_and_one_backward_scan():
    """No re-running of the primal loop: the gradient graph has a single loop running the
    primal body (recording its residuals) and a reverse scan of run-time length over them."""
    def f(x):
        return tj.while_loop(lambda c: np.abs(c * c - x) > 1e-12 * x,
                             lambda c: 0.5 * (c + x / c), x)
    text = str(tj.grad(f).ir(2.0))
    assert text.count("while_record[") == 1 and "= while[" not in text
    assert text.count("scan[") == 1 and "length=None" in text and "reverse=True" in text


def test_while_tape_grows_linearly_with_the_trip_count():
    def f(x, n):
        return np.sum(tj.while_loop(lambda c: c[1] < n,
                                    lambda c: (np.sin(c[0]) * 0.9 + x, c[1] + 1), (x, 0))[0])
    x = np.ones(50)
    sizes = [tj.residual_bytes(f, x, n) for n in (10, 20, 40)]
    per_step = sizes[1] - sizes[0]
    assert per_step > 0 and sizes[2] - sizes[1] == 2 * per_step
    assert per_step <= 10 * (50 * 8 + 1)           # one row of f64[50] residuals per step (+ live)


def test_while_gradients_under_vmap_with_per_lane_trip_counts():
    def sqrt_newton(a):
        return tj.while_loop(lambda c: np.abs(c * c - a) > 1e-12 * a,
                             lambda c: 0.5 * (c + a / c), a)
    a = np.array([2.0, 9.0, 1e6, 0.5, 1.0])
    expected = 0.5 / np.sqrt(a)
    expected[4] = 1.0          # a = 1 runs zero steps: the result is the initial guess a itself
    np.testing.assert_allclose(tj.vmap(tj.grad(sqrt_newton))(a), expected, rtol=1e-9)
    np.testing.assert_allclose(tj.grad(lambda a: np.sum(tj.vmap(sqrt_newton)(a)))(a),
                               expected, rtol=1e-9)
    np.testing.assert_allclose(np.diag(tj.jacrev(tj.vmap(sqrt_newton))(a)), expected,
                               rtol=1e-9)
    np.testing.assert_allclose(tj.hessian(sqrt_newton)(2.0), -0.25 * 2.0 ** -1.5, rtol=1e-9)
    np.testing.assert_allclose(tj.vmap(tj.hessian(sqrt_newton))(a[:4]), -0.25 * a[:4] ** -1.5,
                               rtol=1e-8)


def test_while_tolerance_driven_newton_sqrt():
    def sqrt_newton(a):
        return tj.while_loop(lambda c: np.abs(c * c - a) > 1e-12 * a, lambda c: 0.5 * (c + a / c),
                             a)
    for a in (2.0, 9.0):
        assert float(tj.grad(sqrt_newton)(a)) == pytest.approx(0.5 / np.sqrt(a), rel=1e-9)
    check_grads(sqrt_newton, (2.0,), order=2)


def test_scan_inside_while():
    def f(x):
        def body(c):
            s, k = c
            s2, _ = tj.scan(lambda a, b: (np.sin(a) + b * x, None), s, np.arange(3.0))
            return s2, k + 1
        return tj.while_loop(lambda c: c[1] < 3, body, (x, 0))[0]
    check_grads(f, (0.2,), order=2)


def test_control_flow_grads_compose_with_trace_and_vmap():
    def f(x):
        return tj.fori_loop(0, 3, lambda i, c: c * np.sin(c) + x, x)
    g = tj.trace(tj.grad(f))
    per_example = tj.vmap(tj.grad(f))(np.array([0.1, 0.2, 0.3]))
    assert np.allclose(per_example, [g(v) for v in (0.1, 0.2, 0.3)])


def _body(c, x):
    return np.sin(c) * 0.9 + x, c * x


def _loss(c0, xs, every, reverse=False):
    c, ys = tj.scan(_body, c0, xs, reverse=reverse, checkpoint_every=every)
    return np.sum(c) + np.sum(ys)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_checkpoint_every_same_values_and_gradients(reverse):
    c0, xs = np.linspace(0.1, 0.5, 8), np.linspace(0, 1, 23)[:, None] * np.ones(8)
    ref_v = _loss(c0, xs, None, reverse)
    ref_g = tj.grad(_loss)(c0, xs, None, reverse)
    for every in (4, 5, "sqrt", 23):
        assert float(_loss(c0, xs, every, reverse)) == pytest.approx(float(ref_v), rel=1e-14)
        np.testing.assert_allclose(tj.grad(_loss)(c0, xs, every, reverse), ref_g, rtol=1e-13)
    check_grads(lambda c: _loss(c, xs, 5, reverse), (c0,), order=2)


def test_checkpoint_residual_bytes_shrink_as_expected():
    n, width = 400, 64
    c0, xs = np.ones(width), np.zeros((n, width))
    full = tj.residual_bytes(_loss, c0, xs, None)
    sqrt = tj.residual_bytes(_loss, c0, xs, 20)
    # without checkpointing: per step the carry-dependent residuals of width floats (cos(c) and
    # the carry itself): at least n * width * 8 bytes; with segments of 20: one stored carry and
    # one x-segment per segment, i.e. about n/20 carries plus the xs themselves
    assert full >= n * width * 8
    assert sqrt < full / 1.5
    f = lambda x: np.sum(np.sin(np.sin(np.sin(x))))                          # noqa: E731
    g = lambda x: np.sum(tj.checkpoint(lambda y: np.sin(np.sin(np.sin(y))))(x))  # noqa: E731
    x = np.linspace(0, 1, 1000)
    assert tj.residual_bytes(g, x) == 1000 * 8                  # only the region's input
    assert tj.residual_bytes(f, x) == 3 * 1000 * 8              # cos of each intermediate
    np.testing.assert_allclose(tj.grad(f)(x), tj.grad(g)(x), rtol=1e-15)
    check_grads(g, (x[:5],), order=2)


def test_while_vjp_and_linearize_on_arrays_then_used_inside_a_trace():
    """vjp/linearize run the forward pass on arrays (the tape then has a concrete length);
    calling vjp_fn / f_jvp inside a trace re-traces the forward pass to get the tape back as a
    stack of run-time length."""
    def f(x):
        return tj.while_loop(lambda c: np.abs(c * c - x) > 1e-12 * x,
                             lambda c: 0.5 * (c + x / c), x)
    out, vjp_fn = tj.vjp(f, 2.0)
    _, f_jvp = tj.linearize(f, 2.0)
    expected = 0.5 / np.sqrt(2.0)
    assert float(out) == pytest.approx(np.sqrt(2.0), rel=1e-12)
    assert float(vjp_fn(1.0)[0]) == pytest.approx(expected, rel=1e-12)
    assert float(tj.trace(lambda c: vjp_fn(c)[0] * 2.0)(1.0)) == pytest.approx(2 * expected,
                                                                               rel=1e-12)
    assert float(f_jvp(1.0)) == pytest.approx(expected, rel=1e-12)
    assert float(tj.trace(lambda t: f_jvp(t) * 3.0)(1.0)) == pytest.approx(3 * expected,
                                                                          rel=1e-12)


def test_a_tape_nobody_reads_is_not_recorded():
    """A while loop inside a scan body is checkpointed: the forward scan runs the loop only
    for its result (a plain while), the backward scan re-runs it with a tape."""
    def f(x):
        def step(c, xi):
            y = tj.while_loop(lambda s: s[1] < 2 + (xi > 0.5),
                              lambda s: (np.cos(s[0]) * c, s[1] + 1), (c, 0))[0]
            return y + xi, y
        c, ys = tj.scan(step, x, np.array([0.1, 0.7, 0.3]))
        return c + np.sum(ys)
    text = str(tj.grad(f).ir(0.8))
    assert text.count("while_record[") == 1 and text.count("= while[") == 1
