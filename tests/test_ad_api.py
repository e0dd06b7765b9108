"""AD API tests: the seed examples (exact), composition, pytrees, errors, numerics conventions,
strong-zero where, debug_nans, complex convention, custom rules and the printed derivative IR."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

pytestmark = pytest.mark.usefixtures("interpret_backend")


# --- seeds (exact) ------------------------------------------------------------------------------

def test_seed_chain_rule():
    def y(a, b, c):
        u = a * b
        v = u + c
        return v ** 2
    assert tj.grad(y, argnums=(0, 1, 2))(2.0, 3.0, 1.0) == (42.0, 28.0, 14.0)


def test_seed_vjp_and_jacobian():
    f = lambda x: np.stack([x[0] ** 2 + x[1], x[0] - x[1] ** 2])
    out, vjp_fn = tj.vjp(f, np.array([2.0, 3.0]))
    np.testing.assert_array_equal(out, [7.0, -7.0])
    np.testing.assert_array_equal(vjp_fn(np.array([1.0, 0.0]))[0], [4.0, 1.0])
    np.testing.assert_array_equal(vjp_fn(np.array([0.0, 1.0]))[0], [1.0, -6.0])   # reusable
    expected = [[4.0, 1.0], [1.0, -6.0]]
    np.testing.assert_array_equal(tj.jacrev(f)(np.array([2.0, 3.0])), expected)
    np.testing.assert_array_equal(tj.jacfwd(f)(np.array([2.0, 3.0])), expected)


def test_seed_hessian():
    h = tj.hessian(lambda x: x[0] ** 2 + x[1] ** 2 + x[0] * x[1])(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(h, [[2.0, 1.0], [1.0, 2.0]])


def test_seed_higher_order():
    g = tj.grad(lambda x: np.sum((2 * x) ** 2))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [8.0, 16.0, 24.0])
    assert tj.grad(tj.grad(tj.grad(lambda x: x ** 3)))(2.0) == 6.0
    assert tj.grad(lambda x: (x + 2) * 3)(1.0) == 3.0
    assert tj.grad(lambda x1, x2, x3: (x1 + x2) * x3, argnums=(0, 1, 2))(2.0, 3.0, 4.0) == \
        (4.0, 4.0, 5.0)


# --- API ----------------------------------------------------------------------------------------

def test_jvp_linearize_value_and_grad():
    f = lambda x: np.sin(x) * x
    x = np.array([0.5, 1.0])
    out, t = tj.jvp(f, (x,), (np.ones(2),))
    np.testing.assert_allclose(t, np.cos(x) * x + np.sin(x))
    out2, f_jvp = tj.linearize(f, x)
    np.testing.assert_allclose(f_jvp(np.ones(2)), t)
    np.testing.assert_allclose(f_jvp(2 * np.ones(2)), 2 * t)
    v, g = tj.value_and_grad(lambda x: np.sum(f(x)))(x)
    assert v == pytest.approx(np.sum(f(x)))
    np.testing.assert_allclose(g, t)


def test_pytrees_and_aux():
    def loss(params, x):
        return np.sum((x @ params["w"] + params["b"]) ** 2), {"n": x.shape[0]}
    p = {"w": np.ones((3, 2)), "b": np.zeros(2)}
    x = np.arange(6.0).reshape(2, 3)
    g, aux = tj.grad(loss, has_aux=True)(p, x)
    assert set(g) == {"w", "b"} and g["w"].shape == (3, 2) and aux == {"n": 2}
    r = x @ p["w"] + p["b"]
    np.testing.assert_allclose(g["b"], 2 * r.sum(0))
    np.testing.assert_allclose(g["w"], 2 * x.T @ r)
    out, t = tj.jvp(lambda d: d["a"] * d["b"], ({"a": 2.0, "b": 3.0},), ({"a": 1.0, "b": 0.0},))
    assert (out, t) == (6.0, 3.0)


def test_grad_is_cached_and_composes_with_trace():
    f = lambda x: np.sum(np.tanh(x) ** 2)
    g = tj.grad(f)
    x = np.linspace(-1, 1, 5)
    a = g(x)
    g(x + 1)
    assert g.cache_info().traces == 1 and g.cache_info().hits == 1
    np.testing.assert_allclose(tj.trace(g)(x), a)
    np.testing.assert_allclose(tj.grad(tj.trace(f))(x), a)
    np.testing.assert_allclose(tj.trace(tj.grad(tj.trace(f)))(x), a)


def test_compositions():
    f = lambda x: np.sum(np.sin(x) * x ** 2)
    x = np.array([0.3, -0.7, 1.1])
    H = tj.hessian(f)(x)
    np.testing.assert_allclose(H, tj.jacfwd(tj.jacrev(f))(x))
    np.testing.assert_allclose(H, tj.jacrev(tj.jacfwd(f))(x), rtol=1e-12)
    np.testing.assert_allclose(H, tj.jacfwd(tj.grad(f))(x), rtol=1e-12)
    v = np.array([1.0, 2.0, -1.0])
    _, hvp = tj.jvp(tj.grad(f), (x,), (v,))           # forward-over-reverse HVP
    np.testing.assert_allclose(hvp, H @ v)
    d4 = tj.grad(tj.grad(tj.grad(tj.grad(np.sin))))(0.4)
    assert d4 == pytest.approx(np.sin(0.4))
    check_grads(tj.grad(f), (x,), order=2)


def test_closure_over_outer_tracer():
    def outer(y):
        return tj.grad(lambda x: x * y ** 2)(1.0)    # inner grad closes over y
    assert tj.grad(outer)(3.0) == 6.0


def test_jacobian_argnums_and_shapes():
    f = lambda x, y: np.outer(x, y)
    x, y = np.arange(1.0, 3.0), np.arange(1.0, 4.0)
    jx, jy = tj.jacrev(f, argnums=(0, 1))(x, y)
    assert jx.shape == (2, 3, 2) and jy.shape == (2, 3, 3)
    fx, fy = tj.jacfwd(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(jx, fx)
    np.testing.assert_allclose(jy, fy)


# --- errors -------------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(tj.InputError, match="only float"):
        tj.grad(lambda n: n * 2.0)(3)
    with pytest.raises(tj.InputError, match="scalar output.*vjp.*jacrev"):
        tj.grad(lambda x: x * 2)(np.ones(3))
    with pytest.raises(tj.InputError, match="holomorphic=True"):
        tj.grad(lambda z: z * z)(1 + 1j)
    with pytest.raises(tj.InputError, match="holomorphic=True"):
        tj.jacfwd(lambda z: z * z)(np.ones(2, complex))
    with pytest.raises(tj.InputError, match="argnums"):
        tj.grad(lambda x: x, argnums=3)(1.0)
    with pytest.raises(tj.InputError, match="same shape"):
        tj.jvp(np.sin, (np.ones(2),), (np.ones(3),))
    # integer arguments not in argnums are fine, and static
    assert tj.grad(lambda x, n: x ** n)(2.0, 3) == 12.0


# --- numerics conventions ------------------------------------------------------------------------

def test_kinks_and_ties():
    assert tj.grad(np.abs)(0.0) == 0.0
    assert tj.grad(lambda x: np.maximum(x, 0.0))(0.0) == 0.0          # relu'(0) = 0
    assert tj.grad(lambda x: np.clip(x, 0.0, 1.0))(1.0) == 0.0
    assert tj.grad(np.sqrt)(0.0) == np.inf
    g = tj.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])           # split among tied maxima
    g = tj.grad(lambda x: np.min(x, axis=1).sum())(np.array([[1.0, 1.0], [2.0, 0.0]]))
    np.testing.assert_array_equal(g, [[0.5, 0.5], [0.0, 1.0]])
    assert tj.grad(lambda x: np.floor(x) + np.sign(x))(1.5) == 0.0


def test_argmax_and_int_paths_have_no_gradient():
    f = lambda x: x[np.argmax(x)] * 2.0
    np.testing.assert_array_equal(tj.grad(f)(np.array([1.0, 5.0, 2.0])), [0.0, 2.0, 0.0])
    g = tj.grad(lambda x: np.sum(x.astype(np.int64)) * 1.0 + x[0])(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(g, [1.0, 0.0])


def test_take_repeated_indices_accumulate():
    idx = np.array([0, 2, 2, 2])
    g = tj.grad(lambda x: np.sum(x[idx]))(np.arange(3.0))
    np.testing.assert_array_equal(g, [1.0, 0.0, 3.0])


def test_scatter_set_last_write_wins():
    def f(x, u):
        return np.sum(x.at[np.array([1, 1])].set(u) * np.array([1.0, 10.0, 100.0]))
    gx, gu = tj.grad(f, argnums=(0, 1))(np.ones(3), np.array([5.0, 7.0]))
    np.testing.assert_array_equal(gx, [1.0, 0.0, 100.0])
    np.testing.assert_array_equal(gu, [0.0, 10.0])


def _where_sqrt(x):
    return np.where(x > 0, np.sqrt(x), 0.0)


def test_strong_zero_where():
    g = tj.grad(_where_sqrt)
    assert g(0.0) == 0.0 and g(-1.0) == 0.0 and g(4.0) == 0.25
    gv = tj.grad(lambda x: np.sum(_where_sqrt(x)))(np.array([-1.0, 0.0, 4.0]))
    np.testing.assert_array_equal(gv, [0.0, 0.0, 0.25])
    assert tj.grad(lambda x: np.sum(np.where(x > 0, np.log(x), x)))(0.0) == 1.0
    # clip / maximum masks too
    assert tj.grad(lambda x: np.sqrt(np.maximum(x, 0.0)) * 0 + np.maximum(x, 0.0))(0.0) == 0.0
    # genuine NaN in the picked branch still surfaces
    assert np.isnan(tj.grad(lambda x: np.where(x < 1, np.sqrt(x), 0.0))(-1.0))
    # higher order through the strong-zero select
    assert tj.grad(tj.grad(_where_sqrt))(0.0) == 0.0
    try:
        tj.config.strong_zero_where = False
        assert np.isnan(tj.grad(_where_sqrt)(0.0))                 # IEEE: 0 * inf
        assert np.isnan(tj.grad(_where_sqrt)(-1.0))
    finally:
        tj.config.strong_zero_where = True
    assert tj.grad(_where_sqrt)(0.0) == 0.0


def test_debug_nans_names_derivative_equation():
    def f(x):
        return np.sqrt(x) * x          # derivative at 0: inf * 0 in the backward pass
    assert np.isnan(tj.grad(f)(0.0))
    try:
        tj.config.debug_nans = True
        with pytest.raises(tj.NaNError, match=r"'mul'.*test_ad_api.py:\d+.*sqrt"):
            tj.grad(f)(0.0)
    finally:
        tj.config.debug_nans = False


# --- complex ------------------------------------------------------------------------------------

def test_complex_convention():
    z = 3 + 4j
    assert tj.grad(lambda z: np.abs(z) ** 2)(z) == pytest.approx(6 - 8j)    # 2 conj(z)
    assert tj.grad(lambda z: z ** 2, holomorphic=True)(z) == pytest.approx(6 + 8j)
    assert tj.grad(lambda z: np.real(z * z))(z) == pytest.approx(6 + 8j)   # 2x + 2iy
    J = tj.jacfwd(lambda z: z ** 3, holomorphic=True)(np.array([1 + 1j]))
    np.testing.assert_allclose(J, [[3 * (1 + 1j) ** 2]])
    J2 = tj.jacrev(lambda z: np.sin(z), holomorphic=True)(np.array([0.5 + 0.2j, 1j]))
    np.testing.assert_allclose(J2, np.diag(np.cos([0.5 + 0.2j, 1j])))
    check_grads(lambda z, w: np.abs(z * w) + np.real(np.conj(z) * w),
                (np.array([1 + 2j, 0.5 - 1j]), np.array([0.3 + 0.1j, 2 - 1j])), order=2)


# --- custom rules and stop_gradient -------------------------------------------------------------

@tj.custom_jvp
def softplus(x):
    return np.log1p(np.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + np.exp(-x))


@tj.custom_vjp
def clip_grad(x):
    return x


clip_grad.defvjp(lambda x: (x, None), lambda res, ct: (np.clip(ct, -1.0, 1.0),))


def test_custom_rules():
    x = np.array([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(tj.grad(lambda x: np.sum(softplus(x)))(x), 1 / (1 + np.exp(-x)))
    np.testing.assert_allclose(tj.jvp(softplus, (x,), (np.ones(3),))[1], 1 / (1 + np.exp(-x)))
    check_grads(lambda x: softplus(x) * x, (x,), order=2)
    np.testing.assert_array_equal(tj.grad(lambda x: np.sum(clip_grad(x) * 5.0))(x),
                                  [1.0, 1.0, 1.0])
    assert tj.grad(lambda x: tj.stop_gradient(x ** 2) * x)(3.0) == 9.0
    assert "custom" not in str(tj.trace(softplus).ir(x))       # inlined for compilation
    assert "stop_gradient" not in str(tj.make_ir(lambda x: tj.stop_gradient(x) + 1)(x))
    with pytest.raises(tj.UnsupportedError, match="custom_vjp"):
        tj.jvp(clip_grad, (x,), (x,))


# --- printed derivative IR ---------------------------------------------------------------------

def test_derivative_ir_is_lean():
    ir = str(tj.make_ir(tj.grad(lambda a, b, c: (a * b + c) ** 2, argnums=(0, 1, 2)))(
        2.0, 3.0, 1.0))
    lines = ir.splitlines()
    assert lines[0] == "{ a:f64[] b:f64[] c:f64[] ->" and lines[-1] == "  return h g f }", ir
    assert lines[1:3] == ["    d:f64[] = mul a b", "    e:f64[] = add d c"], ir
    assert len(lines) == 7 and "1.0" not in ir, ir      # forward 2 eqns + dy/dv, then 2 muls
    x = np.ones((3, 4))
    ir = str(tj.grad(lambda w: np.sum(np.tanh(x @ w))).ir(np.ones((4, 2))))
    assert "= mul" not in ir and "select" not in ir, ir        # no mul by ones, no masks
    assert ir.count("dot_general") == 2 and "transpose" in ir
    ir = str(tj.grad(_where_sqrt).ir(1.0))
    assert "eq" in ir and ir.count("select") == 2            # strong-zero multiply emitted
    try:
        tj.config.strong_zero_where = False
        assert str(tj.grad(_where_sqrt).ir(1.0)).count("select") == 1
    finally:
        tj.config.strong_zero_where = True
