"""tj.odeint against SciPy's solve_ivp on three problems, its derivatives against finite
differences, vmap against one solve per example, pytrees, and the llvm plan (all native)."""
import numpy as np
import pytest

import tracejit as tj

integrate = pytest.importorskip("scipy.integrate", reason="solve_ivp is the reference solver")
rng = np.random.default_rng(1804)


def decay(y, t, k):
    return -k * y


def oscillator(y, t, w, damping):
    return np.stack([y[1], -w * w * y[0] - damping * y[1]])


def lotka_volterra(y, t, a, b):
    return np.stack([a * y[0] - b * y[0] * y[1], -y[1] + b * y[0] * y[1]])


PROBLEMS = {
    "decay": (decay, lambda: rng.uniform(0.5, 2.0, 3), (0.7,)),
    "oscillator": (oscillator, lambda: rng.standard_normal(2), (2.0, 0.1)),
    "lotka_volterra": (lotka_volterra, lambda: rng.uniform(0.5, 1.5, 2), (1.1, 0.4)),
}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_matches_solve_ivp(backend, name):
    func, make_y0, args = PROBLEMS[name]
    y0 = make_y0()
    t = np.sort(rng.uniform(0.0, 4.0, 6))
    got = tj.odeint(func, y0, t, *args)
    ref = integrate.solve_ivp(lambda s, y: func(y, s, *args), (t[0], t[-1]), y0, t_eval=t,
                              method="DOP853", rtol=1e-12, atol=1e-12)
    assert got.shape == (len(t),) + y0.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got[0], y0)
    # JAX's default tolerances (1.4e-8) bound each step's error, not the global error
    np.testing.assert_allclose(got, ref.y.T, rtol=1e-6, atol=1e-7)


def test_loose_tolerance_and_float32_follow_the_error_control():
    func, args = lotka_volterra, (1.1, 0.4)
    y0, t = np.array([1.0, 0.5]), np.linspace(0.0, 5.0, 6)
    ref = integrate.solve_ivp(lambda s, y: func(y, s, *args), (0, 5), y0, t_eval=t,
                              method="DOP853", rtol=1e-12, atol=1e-12).y.T
    loose = tj.odeint(func, y0, t, *args, rtol=1e-4, atol=1e-4)
    err = np.max(np.abs(loose - ref))
    assert 1e-9 < err < 1e-2           # really a coarser solve, still within tolerance-ish
    f32 = tj.odeint(func, y0.astype(np.float32), t.astype(np.float32), *args, rtol=1e-5,
                    atol=1e-5)
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, ref, rtol=1e-3, atol=1e-3)


def test_pytree_state_and_pytree_args(backend):
    def func(state, t, params):
        pos, vel = state["pos"], state["vel"]
        return {"pos": vel, "vel": -params["k"] * pos}

    y0 = {"pos": np.array([[1.0, 0.5]]), "vel": np.array([0.0, 0.25])}
    t = np.linspace(0.0, 1.0, 4)
    out = tj.odeint(func, y0, t, {"k": np.array(4.0)})
    assert out["pos"].shape == (4, 1, 2) and out["vel"].shape == (4, 2)
    c, s = np.cos(2.0 * t)[:, None], np.sin(2.0 * t)[:, None]
    pos0, vel0 = y0["pos"][0], y0["vel"]
    np.testing.assert_allclose(out["pos"][:, 0], pos0 * c + vel0 / 2.0 * s, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(out["vel"], -2.0 * pos0 * s + vel0 * c, rtol=1e-6, atol=1e-8)


def test_func_returning_another_structure_is_an_error():
    with pytest.raises(ValueError, match="structure"):
        tj.odeint(lambda y, t: (y, y), np.ones(2), np.linspace(0.0, 1.0, 3))


def _lv_loss(y0, a, t):
    ys = tj.odeint(lotka_volterra, y0, t, a, 0.4)
    return np.sum(ys[1:] ** 2 * np.arange(1, len(t))[:, None])


def test_gradients_against_finite_differences():
    y0, a, t = np.array([1.0, 0.5]), np.array(1.1), np.array([0.0, 0.7, 1.5])
    tj.test_util.check_grads(_lv_loss, (y0, a, t), order=1, modes=("fwd", "rev"))
    # the derivative of y(t_j) in t_j is func(y(t_j)): the dense output is differentiated
    ys = tj.odeint(lotka_volterra, y0, t, a, 0.4)
    g_t = tj.grad(lambda tt: np.sum(tj.odeint(lotka_volterra, y0, tt, a, 0.4)[-1]))(t)
    np.testing.assert_allclose(g_t[-1], np.sum(lotka_volterra(ys[-1], t[-1], a, 0.4)),
                               rtol=1e-6)


def test_gradient_is_native_and_matches_the_interpreter():
    y0, a, t = np.array([1.0, 0.5]), np.array(1.1), np.linspace(0.0, 2.0, 3)
    g = tj.jit(tj.grad(_lv_loss, argnums=(0, 1)))
    for fn in (tj.jit(_lv_loss), g):
        plan = fn.ir(y0, a, t, stage="fused")
        assert "fallback" not in plan and "native scan" in plan, plan
    got = g(y0, a, t)
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        want = tj.grad(_lv_loss, argnums=(0, 1))(y0, a, t)
    finally:
        tj.config.backend = saved
    for x, w in zip(got, want):
        np.testing.assert_allclose(x, w, rtol=1e-12)


def test_vmap_takes_per_lane_steps():
    t = np.linspace(0.0, 3.0, 4)
    y0s = rng.uniform(0.3, 2.0, (3, 2))
    rates = np.array([0.3, 1.5, 4.0])              # different stiffness: different steps

    def solve(y0, a):
        return tj.odeint(lotka_volterra, y0, t, a, 0.4, rtol=1e-5, atol=1e-5)

    def loss(y0, a):
        return np.sum(solve(y0, a) ** 2)

    batched = tj.jit(tj.vmap(solve))(y0s, rates)
    grads = tj.jit(tj.vmap(tj.grad(loss)))(y0s, rates)
    one_solve, one_grad = tj.jit(solve), tj.jit(tj.grad(loss))
    for k in range(len(rates)):
        np.testing.assert_allclose(batched[k], one_solve(y0s[k], rates[k]), rtol=1e-12,
                                   atol=1e-14)
        np.testing.assert_allclose(grads[k], one_grad(y0s[k], rates[k]), rtol=1e-10)


def test_hmax_and_mxstep():
    t = np.linspace(0.0, 2.0, 3)
    y0 = np.array([1.0])
    exact = np.exp(-0.7 * t)[:, None]
    np.testing.assert_allclose(tj.odeint(decay, y0, t, 0.7, hmax=0.01), exact, rtol=1e-9)
    # one step per output interval from a tiny initial step: far from the solution
    short = tj.odeint(decay, y0, t, 0.7, mxstep=1)
    assert np.all(np.isfinite(short)) and np.max(np.abs(short - exact)) > 1e-3


def test_adjoint_gradients_agree_with_the_tape_and_finite_differences():
    y0, a, t = np.array([1.0, 0.5]), np.array(1.1), np.array([0.0, 0.7, 1.5])

    def loss(y0, a, t, adjoint):
        ys = tj.odeint(lotka_volterra, y0, t, a, 0.4, adjoint=adjoint)
        return np.sum(ys[1:] ** 2 * np.arange(1, len(t))[:, None])

    tape = tj.jit(tj.grad(loss, argnums=(0, 1, 2)), static_argnums=3)(y0, a, t, False)
    adjoint = tj.jit(tj.grad(loss, argnums=(0, 1, 2)), static_argnums=3)(y0, a, t, True)
    for x, w in zip(adjoint, tape):            # both within the solver's tolerance
        np.testing.assert_allclose(x, w, rtol=1e-6)
    tj.test_util.check_grads(lambda y0, a, t: loss(y0, a, t, True), (y0, a, t), order=1,
                             modes=("rev",))
    per_lane = tj.jit(tj.vmap(tj.grad(lambda y0, a: loss(y0, a, t, True))))(
        np.stack([y0, 2 * y0]), np.stack([a, a]))
    np.testing.assert_allclose(per_lane[0], adjoint[0], rtol=1e-12)
