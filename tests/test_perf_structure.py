"""Structural checks of derivative graphs and their fused plans (issue 6 item 3). Never timed:
each test pins down *what* runs (how many passes over a matrix, which constants exist, which
residuals are kept), and that the values agree with the interpreter."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.plan import steps
from tracejit.backend.plan.rowfuse import RowMatvecGroup
from tracejit.backend.runtime.executable import compile_graph
from tracejit.ir import Var


def _plan_of(fn, *args):
    """The executable of ``fn``'s simplified trace for these arguments."""
    from tracejit.core import make_graph
    from tracejit.api import leaf_type
    from tracejit.passes import simplify
    def flat(*xs):
        out = fn(*xs)
        return list(out) if isinstance(out, tuple) else [out]
    graph, _ = make_graph(flat, [leaf_type(a, "arg") for a in args])
    return compile_graph(simplify(graph))


def _reads(plan, step, var):
    atoms = []
    if isinstance(step, steps.LoopGroup):
        for e in (*step.eqns, *step.sinks):
            atoms.extend(e.invars)
    else:
        atoms.extend(step.eqn.invars)
    return any(isinstance(a, Var) and plan.view_of(a).base is var for a in atoms)


def _logistic(w, X, y):
    return np.mean(np.log1p(np.exp(-y * (X @ w)))) + 1e-3 * np.sum(w * w)


@pytest.mark.parametrize("dtype, m, k", [(np.float64, 203, 37), (np.float32, 64, 16),
                                         (np.float64, 5, 8)])
def test_logistic_gradient_reads_x_once(dtype, m, k):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, k)).astype(dtype)
    y = np.sign(rng.standard_normal(m)).astype(dtype)
    w = (rng.standard_normal(k) * 0.1).astype(dtype)
    g = tj.grad(_logistic)
    exe = _plan_of(g, w, X, y)
    x_var = exe.graph.invars[1]
    readers = [s for s in exe.plan.steps if _reads(exe.plan, s, x_var)]
    assert len(readers) == 1 and isinstance(readers[0], RowMatvecGroup)
    assert exe.native
    assert "dot_general" in exe.describe()
    got = exe([w, X, y])[0]
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        want = tj.trace(tj.grad(_logistic))(w, X, y)
    finally:
        tj.config.backend = saved
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * np.abs(want).max())


def test_row_fusion_keeps_values_read_elsewhere():
    """An intermediate of the row-local chain that is also an output is still stored."""
    rng = np.random.default_rng(1)
    X, a = rng.standard_normal((50, 12)), rng.standard_normal(12)

    def f(a, X):
        r = np.tanh(X @ a)
        return r, r @ X

    exe = _plan_of(lambda a, X: f(a, X), a, X)
    assert any(isinstance(s, RowMatvecGroup) for s in exe.plan.steps)
    r, p = exe([a, X])
    np.testing.assert_allclose(r, np.tanh(X @ a), rtol=1e-13)
    np.testing.assert_allclose(p, np.tanh(X @ a) @ X, rtol=1e-12)


def test_no_fusion_when_the_second_product_uses_another_matrix():
    rng = np.random.default_rng(2)
    X, Y, a = rng.standard_normal((40, 9)), rng.standard_normal((40, 9)), rng.standard_normal(9)
    exe = _plan_of(lambda a, X, Y: np.exp(X @ a) @ Y, a, X, Y)
    assert not any(isinstance(s, RowMatvecGroup) for s in exe.plan.steps)
    np.testing.assert_allclose(exe([a, X, Y])[0], np.exp(X @ a) @ Y, rtol=1e-12)


def _w7(x, y):
    return np.sum(np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x))


def test_gradient_seed_is_a_broadcast_not_a_constant():
    """sum's cotangent (a broadcast of the seed 1.0) stays a free broadcast view: the gradient
    graph captures no constant array, and multiplications by it disappear."""
    x = np.linspace(-1, 1, 1000)
    y = np.linspace(2, -1, 1000)
    text = str(tj.grad(_w7, argnums=(0, 1)).ir(x, y))
    assert "consts" not in text
    exe = _plan_of(tj.grad(_w7, argnums=(0, 1)), x, y)
    assert exe.memory_analysis()["constant_bytes"] == 0
    assert len(exe.plan.steps) == 1


def test_logistic_gradient_has_no_captured_arrays():
    rng = np.random.default_rng(0)
    X, y, w = rng.standard_normal((30, 4)), np.ones(30), np.zeros(4)
    assert "consts" not in str(tj.grad(_logistic).ir(w, X, y))


def _chain(x):
    return np.sum(np.sin(np.sin(np.sin(x))))


def test_residuals_of_a_chain_and_checkpoint_policy():
    """sum(sin(sin(sin(x)))) keeps one cosine per sin (3 arrays); checkpointing keeps only x.
    The gradient is the same with both policies, and agrees with the interpreter."""
    n = 257
    x = np.linspace(-2, 2, n)
    assert tj.residual_bytes(_chain, x) == 3 * n * 8
    remat = tj.checkpoint(_chain)
    assert tj.residual_bytes(remat, x) == n * 8
    g = tj.grad(_chain)(x)
    g_remat = tj.grad(remat)(x)
    np.testing.assert_array_equal(g, g_remat)
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        want = tj.trace(tj.grad(_chain))(x)
    finally:
        tj.config.backend = saved
    np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15)


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _interpret(fn, *args):
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        return tj.trace(fn)(*args)
    finally:
        tj.config.backend = saved


def test_dense_hessian_is_one_pass_over_the_output():
    """hessian(rosen): the basis stays iota == iota (no n x n constants), and the slices, pads,
    reshape and final transpose of computed values sink into one n x n loop that writes the
    output once (no copy steps); the values are bit-identical to the interpreter's."""
    n = 37
    x = np.random.default_rng(0).random(n)
    h = tj.trace(tj.hessian(_rosen))
    assert "consts" not in str(h.ir(x))
    exe = h.lower(x).executable
    big = [s for s in exe.plan.steps if isinstance(s, steps.LoopGroup)
           and int(np.prod(s.shape)) >= n * (n - 1)]
    assert len(big) == 1 and big[0].eqns, exe.describe()
    assert not any(isinstance(s, steps.FallbackStep) for s in exe.plan.steps)
    assert exe.memory_analysis()["constant_bytes"] < n * n
    np.testing.assert_array_equal(h(x), _interpret(tj.hessian(_rosen), x))


def test_sunk_views_keep_values_and_shared_work():
    """A pad, slice and transpose of elementwise results become index maps in the consumer
    (one loop), while an expensive value with another user is still computed once and read
    through a view."""
    from tracejit.backend.plan.sinkviews import sink_views

    def f(a, b):
        c = np.broadcast_to(b[0], (5, 6)) * 2.0 - b[0]
        p = np.pad(c, ((1, 0), (0, 2)))
        return p[:, 1:].T - a, np.sum(np.sin(a))

    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((7, 6)), rng.standard_normal((5, 6))
    exe = _plan_of(f, a, b)
    assert not any(isinstance(s, steps.FallbackStep) for s in exe.plan.steps)
    got = exe([a, b])
    want = _interpret(f, a, b)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    graph = exe.graph
    sunk = sink_views(graph)
    assert not any(e.prim.name in ("pad", "transpose") and e.outvars[0].ty.ndim > 1
                   for e in sunk.eqns)         # only the small row vector is padded
    loops = [s for s in exe.plan.steps if isinstance(s, steps.LoopGroup) and s.shape == (7, 6)]
    assert len(loops) == 1 and loops[0].eqns
    assert [a is b for a, b in zip(sunk.outvars, graph.outvars)] == [True, True]

    def g(a):
        s = np.sin(a)                       # expensive and used twice: not recomputed
        return s.T * 2.0, np.sum(s)
    gr = _plan_of(g, a).graph
    assert sum(e.prim.name == "sin" for e in sink_views(gr).eqns) == 1


def test_transposed_product_is_the_swapped_product():
    """(A @ B).T used once is computed as B.T @ A.T (operands swapped, read through strides):
    the consumer reads the product contiguously instead of through a transposed view."""
    from tracejit.backend.plan.sinkviews import sink_views

    def f(a, b, c):
        return c - 0.1 * (a.T @ b).T             # the SGD update of an X.T @ dZ gradient

    rng = np.random.default_rng(2)
    a, b, c = rng.standard_normal((9, 7)), rng.standard_normal((9, 5)), rng.standard_normal((5, 7))
    exe = _plan_of(f, a, b, c)
    sunk = sink_views(exe.graph)
    assert not any(e.prim.name == "transpose" and e.invars[0].ty.shape == (7, 5)
                   for e in sunk.eqns)
    mm = [s for s in exe.plan.steps if isinstance(s, steps.MatmulStep)]
    assert len(mm) == 1 and mm[0].out.ty.shape == (5, 7)
    np.testing.assert_allclose(exe([a, b, c])[0], _interpret(f, a, b, c), rtol=1e-13)


def _mlp_step(W1, b1, W2, b2, x, t):
    def loss(W1, b1, W2, b2):
        h = np.tanh(x @ W1 + b1)
        z = h @ W2 + b2
        z = z - np.max(z, axis=1, keepdims=True)
        logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
        return -np.mean(np.sum(t * logp, axis=1))
    value, g = tj.value_and_grad(loss, argnums=(0, 1, 2, 3))(W1, b1, W2, b2)
    lr = np.float32(0.1)
    return (value, W1 - lr * g[0], b1 - lr * g[1], W2 - lr * g[2], b2 - lr * g[3])


def test_mlp_step_updates_weights_in_the_matmul_epilogue():
    rng = np.random.default_rng(0)
    f32 = np.float32
    W1 = (rng.standard_normal((40, 24)) * 0.1).astype(f32)
    b1 = np.zeros(24, f32)
    W2 = (rng.standard_normal((24, 5)) * 0.1).astype(f32)
    b2 = np.zeros(5, f32)
    x = rng.standard_normal((16, 40)).astype(f32)
    t = np.eye(5, dtype=f32)[rng.integers(0, 5, 16)]
    args = (W1, b1, W2, b2, x, t)
    exe = _plan_of(_mlp_step, *args)
    loops = [s for s in exe.plan.steps if isinstance(s, steps.LoopGroup)]
    assert not [s for s in loops if s.shape in ((40, 24), (24, 5))]   # no separate update pass
    epis = [s for s in exe.plan.steps if isinstance(s, steps.MatmulStep) and s.epilogue]
    assert {s.epilogue.result.ty.shape for s in epis} >= {(40, 24), (24, 5)}
    assert "epilogue" in exe.describe()
    got = exe(list(args))
    saved = tj.config.backend
    tj.config.backend = "interpret"
    try:
        want = tj.trace(_mlp_step)(*args)
    finally:
        tj.config.backend = saved
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_mlp_forward_bias_and_tanh_in_the_matmul_epilogue():
    """W3's forward ``tanh(x @ W1 + b1)`` runs in the product's epilogue: tanh's residual
    ``1 - h**2`` is recomputed by the backward loop (which reads h), so no separate [B, H] pass
    follows the forward product and h is its only store."""
    rng = np.random.default_rng(4)
    f32 = np.float32
    W1 = (rng.standard_normal((40, 24)) * 0.1).astype(f32)
    b1 = (rng.standard_normal(24) * 0.1).astype(f32)
    W2 = (rng.standard_normal((24, 5)) * 0.1).astype(f32)
    b2 = np.zeros(5, f32)
    x = rng.standard_normal((16, 40)).astype(f32)
    t = np.eye(5, dtype=f32)[rng.integers(0, 5, 16)]
    args = (W1, b1, W2, b2, x, t)
    exe = _plan_of(_mlp_step, *args)
    x_var = exe.graph.invars[4]
    fwd = [s for s in exe.plan.steps if isinstance(s, steps.MatmulStep)
           and s.out.ty.shape == (16, 24) and exe.plan.view_of(s.eqn.invars[0]).base is x_var]
    assert len(fwd) == 1 and fwd[0].epilogue is not None
    assert [e.prim.name for e in fwd[0].epilogue.eqns] == ["add", "tanh"]
    loops = [s for s in exe.plan.steps if isinstance(s, steps.LoopGroup) and s.shape == (16, 24)]
    assert len(loops) == 1                                  # the backward loop only
    assert "integer_pow" in [e.prim.name for e in loops[0].eqns]   # 1 - h**2 recomputed there
    got = exe(list(args))
    want = _interpret(_mlp_step, *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype, m, k, n", [(np.float64, 7, 5, 19), (np.float32, 37, 9, 33),
                                            (np.float64, 300, 200, 70), (np.float32, 13, 8, 1)])
def test_matmul_epilogue_operands(dtype, m, k, n):
    """Bias row, per-row column, full matrix and scalar operands; column tails, the
    parallel-rows kernel (300x200x70) and the matrix-vector path (n = 1)."""
    rng = np.random.default_rng(1)
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((k, n)).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    col = rng.standard_normal((m, 1)).astype(dtype)
    C = rng.standard_normal((m, n)).astype(dtype)
    s = np.asarray(0.5, dtype)

    def f(A, B, bias, col, C, s):
        return np.tanh(A @ B + bias) * col - s * C

    args = (A, B, bias, col, C, s)
    exe = _plan_of(f, *args)
    assert [type(s) for s in exe.plan.steps] == [steps.MatmulStep]
    got = exe(list(args))[0]
    want = np.tanh(A @ B + bias) * col - s * C
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_no_epilogue_when_the_product_is_read_twice():
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((6, 4)), rng.standard_normal((4, 5))

    def f(A, B):
        p = A @ B
        return p + 1.0, np.sum(p)

    exe = _plan_of(f, A, B)
    assert not [s for s in exe.plan.steps if isinstance(s, steps.MatmulStep) and s.epilogue]
    got = exe([A, B])
    np.testing.assert_allclose(got[0], A @ B + 1.0)
    np.testing.assert_allclose(got[1], np.sum(A @ B))


def _tanh_layer(x):
    def loss(W):
        h = np.tanh(x @ W)
        return np.sum(h * h)
    return loss


def test_cheap_residuals_are_recomputed(monkeypatch):
    """``1 - h**2`` (tanh's derivative) is recomputed from h, which the backward pass keeps
    anyway: one [8, 12] residual instead of two; gradients bit-identical to storing it."""
    import tracejit.ad as ad_mod
    from tracejit.transforms import partial_eval as pe
    rng = np.random.default_rng(3)
    W = rng.standard_normal((20, 12)).astype(np.float32)
    x = rng.standard_normal((8, 20)).astype(np.float32)
    assert tj.residual_bytes(_tanh_layer(x), W) == 8 * 12 * 4
    got = tj.grad(_tanh_layer(x))(W)
    got_i = _interpret(tj.grad(_tanh_layer(x)), W)
    monkeypatch.setattr(ad_mod, "partial_eval",
                        lambda *a, recompute=True: pe.partial_eval(*a, recompute=False))
    assert tj.residual_bytes(_tanh_layer(x), W) == 2 * 8 * 12 * 4
    want = tj.grad(_tanh_layer(x))(W)
    want_i = _interpret(tj.grad(_tanh_layer(x)), W)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_i, want_i)
