"""Stacks on the llvm backend: ``while_record`` (a while loop's reverse-mode tape, grown with
realloc) and ``scan[length=None]`` (a scan of run-time length) as native loops, stacks as graph
inputs and outputs (a vjp's forward and backward graphs), and the fallbacks. The interpreter is
the oracle."""
import ctypes

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend import compile_graph
from tracejit.backend.engine import jit as tjit
from tracejit.backend.plan import partition
from tracejit.backend.runtime import executable as executable_mod
from tracejit.core import make_graph
from tracejit.interpret import run as interpret_graph
from tracejit.ir import Type
from tracejit.ops import elementwise as ew
from tracejit.ops.control import scan_p

F64 = np.dtype(np.float64)


def on(backend, fun, *args):
    """``fun(*args)`` traced and run on ``backend``."""
    return tj.jit(fun, backend=backend)(*args)


def check(fun, *args, rtol=1e-12, atol=1e-14):
    """llvm and interpret agree on ``fun(*args)`` (every output leaf)."""
    got = tj.tree.flatten(on("llvm", fun, *args))[0]
    want = tj.tree.flatten(on("interpret", fun, *args))[0]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    return got


def fused(fun, *args):
    return tj.jit(fun, backend="llvm").ir(*args, stage="fused")


def newton_sqrt(x):
    return tj.while_loop(lambda c: np.abs(c * c - x) > 1e-12 * x, lambda c: 0.5 * (c + x / c), x)


# ---------------------------------------------------------------------------------------------
# gradients of while loops

def test_grad_newton_sqrt_is_one_native_kernel():
    g = tj.grad(newton_sqrt)
    for x in (2.0, 9.0, 1e-3, 12345.0):
        got = check(g, x)[0]
        np.testing.assert_allclose(got, 0.5 / np.sqrt(x), rtol=1e-9)
    text = fused(g, 2.0)
    assert "one native kernel" in text, text
    assert "native while_record" in text and "native scan length=None" in text, text
    # the derivative object itself: the second call installs the pyabi entry and uses it
    d = tj.grad(newton_sqrt)
    assert d.ir(2.0, stage="fused").splitlines()[0].count("one native kernel") == 1
    first, second = d(2.0), d(2.0)
    assert first == second == pytest.approx(0.5 / np.sqrt(2.0))
    assert len(d.specializations()) == 1
    assert d(9.0) == pytest.approx(1 / 6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_fixed_count_while_with_vector_carries(dtype):
    rtol = 2e-5 if dtype == np.float32 else 1e-12

    def f(x, A, s):
        def body(c):
            v, M, t, i = c
            v = np.sin(v) * s + A @ v * dtype(0.1)
            M = M * dtype(0.9) + np.outer(v, x)[:, :2] * t
            return v, M, t * dtype(0.5) + np.sum(v), i + 1
        v, M, t, n = tj.while_loop(lambda c: c[3] < 7,
                                   body, (x, np.ones((3, 2), dtype), s, 0))
        return np.sum(v * v) + np.sum(M) * t + n.astype(dtype)

    x = np.array([0.3, -0.2, 0.5], dtype)
    A = (np.arange(9.0).reshape(3, 3) / 9).astype(dtype)
    s = dtype(0.7)
    check(tj.grad(f, argnums=(0, 1, 2)), x, A, s, rtol=rtol, atol=1e-6 if rtol > 1e-9 else 1e-14)
    assert "one native kernel" in fused(tj.grad(f, argnums=(0, 1, 2)), x, A, s)


def test_long_loop_grows_the_tape_many_times():
    def f(x, w):
        def body(c):
            v, i = c
            return v * 0.99999 + 0.001 * np.sin(v * w), i + 1
        return np.sum(tj.while_loop(lambda c: c[1] < 100_000, body, (x, 0))[0])

    x, w = np.array([1.0, -0.5]), np.array([0.3, 2.0])
    check(tj.grad(f, argnums=(0, 1)), x, w, rtol=1e-9)
    exe = tj.jit(tj.grad(f), backend="llvm").lower(x, w).executable
    assert exe.native
    # per step: live (1 byte) + what the backward pass needs of each 2-vector step
    assert exe.memory_analysis()["stack_bytes_per_step"] >= 1 + 16


def test_zero_trip_loops_make_empty_stacks():
    def f(x):
        return tj.while_loop(lambda c: np.sum(c) < 0.0, lambda c: c * np.sin(c), x)

    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(check(tj.jacrev(f), x)[0], np.eye(2))
    # converged at the start: no step runs, the loop is the identity
    np.testing.assert_allclose(check(tj.grad(newton_sqrt), 1.0)[0], 1.0)
    _, back = tj.vjp(f, x)
    np.testing.assert_array_equal(back(np.array([3.0, 4.0]))[0], [3.0, 4.0])


def test_vjp_forward_outputs_stacks_backward_takes_them():
    def f(x, a):
        def body(c):
            v, i = c
            return np.cos(v) * a + v * 0.5, i + 1
        return tj.while_loop(lambda c: c[1] < 5 + (np.sum(c[0]) > 0), body, (x, 0))[0]

    x, a = np.array([0.2, 0.4, -0.1]), 1.3
    saved = tj.config.backend
    results = {}
    try:
        for backend in ("interpret", "llvm"):
            tj.config.backend = backend
            y, back = tj.vjp(f, x, a)
            results[backend] = [y, *back(np.ones(3)), *back(np.array([1.0, -2.0, 0.5]))]
    finally:
        tj.config.backend = saved
    for got, want in zip(results["llvm"], results["interpret"]):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_while_inside_scan_and_scan_inside_while():
    def while_in_scan(x):
        def body(c, xi):
            s = tj.while_loop(lambda s: np.abs(s * s - xi * c) > 1e-10,
                              lambda s: 0.5 * (s + xi * c / s), c)
            return s, s * xi
        c, ys = tj.scan(body, x, np.array([1.5, 2.0, 3.0]))
        return c + np.sum(ys)

    def scan_in_while(x):
        def body(c):
            v, k = c
            v2, ys = tj.scan(lambda a, w: (np.sin(a) * w + 0.1, a * a), v, np.array([0.5, 0.7]))
            return v2 + 0.01 * np.sum(ys), k + 1
        return tj.while_loop(lambda c: c[1] < 4, body, (x, 0))[0]

    for f, x in ((while_in_scan, 2.0), (scan_in_while, 0.3)):
        check(tj.grad(f), x, rtol=1e-10)
        assert "one native kernel" in fused(tj.grad(f), x)


def test_second_order_through_a_while_loop():
    def f(v):
        return np.sum(tj.while_loop(lambda c: c[1] < 3,
                                    lambda c: (np.sin(c[0]) * v, c[1] + 1), (v, 0))[0])

    x = np.array([0.3, 0.5])
    check(tj.hessian(f), x, rtol=1e-10)
    assert "one native kernel" in fused(tj.hessian(f), x)
    check(tj.grad(tj.grad(newton_sqrt)), 2.0, rtol=1e-9)
    check(tj.grad(tj.grad(newton_sqrt)), 50.0, rtol=1e-9)


def test_vmap_of_grad_lanes_with_different_trip_counts():
    xs = np.array([2.0, 9.0, 1e4, 1.0])        # 1.0: no step runs (the identity)
    got = check(tj.vmap(tj.grad(newton_sqrt)), xs, rtol=1e-9)[0]
    np.testing.assert_allclose(got, [*(0.5 / np.sqrt(xs[:3])), 1.0], rtol=1e-9)
    assert "one native kernel" in fused(tj.vmap(tj.grad(newton_sqrt)), xs)


def test_max_while_iterations_stops_the_recording_loop():
    def f(x):
        return tj.while_loop(lambda c: c[1] < 1000, lambda c: (c[0] * 1.001, c[1] + 1),
                             (x, 0))[0]

    g = tj.jit(tj.grad(f), backend="llvm")
    saved = tj.config.max_while_iterations
    try:
        tj.config.max_while_iterations = 100
        with pytest.raises(RuntimeError, match="max_while_iterations = 100"):
            g(1.0)
        with pytest.raises(RuntimeError, match="max_while_iterations"):
            tj.vjp(f, 1.0)
        tj.config.max_while_iterations = 1000     # exactly enough
        assert g(1.0) == pytest.approx(1.001 ** 1000)
    finally:
        tj.config.max_while_iterations = saved
    assert g(1.0) == pytest.approx(1.001 ** 1000)


def test_results_do_not_depend_on_the_thread_count():
    x = np.random.default_rng(1).standard_normal(300_000)

    def f(x):
        v = tj.while_loop(lambda c: c[1] < 3, lambda c: (np.tanh(c[0]) * 1.5 + x, c[1] + 1),
                          (x, 0))[0]
        return np.sum(v * v)

    g = tj.jit(tj.grad(f), backend="llvm")
    saved = tj.config.num_threads
    try:
        results = []
        for n in (1, 4):
            tj.config.num_threads = n
            results.append(g(x))
    finally:
        tj.config.num_threads = saved
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], on("interpret", tj.grad(f), x), rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# fallbacks: the same graphs with control flow driven from Python

def test_python_driven_while_record_and_scan(monkeypatch):
    monkeypatch.setattr(partition, "plan_subgraphs", lambda plan, eqn: None)

    def f(x):
        return newton_sqrt(x) * tj.while_loop(lambda c: c[1] < 4,
                                              lambda c: (np.sin(c[0]) + x, c[1] + 1), (x, 0))[0]
    g = tj.grad(f)
    assert "numpy" in fused(g, 2.0) and "while_record" in fused(g, 2.0)
    check(g, 2.0, rtol=1e-10)
    y, back = tj.vjp(f, 3.0)
    want = on("interpret", tj.grad(f), 3.0)
    np.testing.assert_allclose(back(1.0)[0], want, rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# stacks at the boundary of a compiled graph (hand-built graphs)

S3 = Type(F64, (None, 3))
ROW = Type(F64, (3,))


def _scan_graph(extra=lambda ys: []):
    def fn(xs, ws, c):
        body, _ = make_graph(lambda c, x, w: [c + x * w, np.sin(x) * c], [ROW, ROW, ROW])
        cf, ys = scan_p.bind(c, xs, ws, body=body, length=None, reverse=True, n_consts=0,
                             n_carry=1)
        return [cf, ys, xs, ys, *extra(ys)]
    return make_graph(fn, [S3, S3, ROW])[0]


@pytest.mark.parametrize("hybrid", [False, True])
def test_stack_inputs_and_outputs(hybrid):
    g = _scan_graph((lambda ys: [ew.neg_p.bind(ys)]) if hybrid else (lambda ys: []))
    exe = compile_graph(g)
    assert exe.native != hybrid, exe.describe()
    rng = np.random.default_rng(0)
    xs, ws, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), np.ones(3)
    for n in (5, 1, 0):
        got, want = exe([xs[:n], ws[:n], c]), interpret_graph(g, [xs[:n], ws[:n], c])
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.shape == np.shape(b)
            np.testing.assert_allclose(a, b, rtol=1e-14)
    got = exe([xs, ws, c])
    assert not np.shares_memory(got[2], xs)           # an input returned: a copy
    assert got[1] is not got[3] and not np.shares_memory(got[1], got[3])
    got[1][...] = 0.0                                 # outputs are writable, owned arrays
    with pytest.raises(ValueError, match="different lengths"):
        exe([xs, ws[:4], c])
    with pytest.raises(ValueError, match="rows of shape"):
        exe([xs[:, :2], ws, c])
    with pytest.raises(ValueError, match="native entry|no single native kernel"):
        exe.native_entry()
    mem = exe.memory_analysis()
    assert mem["stack_bytes_per_step"] == 0 and mem["argument_bytes"] == 24


def test_allocation_failure_raises_memory_error():
    executable_mod._register_libc()
    fail = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(lambda p, n: None)
    real = ctypes.cast(ctypes.CDLL(None).realloc, ctypes.c_void_p).value

    def f(x):            # an odd constant: a module of its own, compiled under the failing realloc
        return tj.while_loop(lambda c: c[1] < 3,
                             lambda c: (np.sin(c[0]) * 1.2345678910111, c[1] + 1), (x, 0))[0]
    tjit.add_symbol("tj_realloc", ctypes.cast(fail, ctypes.c_void_p).value)
    try:
        with pytest.raises(MemoryError):
            tj.jit(tj.grad(f), backend="llvm")(0.5)
    finally:
        tjit.add_symbol("tj_realloc", real)
    check(tj.grad(lambda x: f(x) * 2.0), 0.5)


def test_adding_two_stacks_row_by_row():
    """ad_util.add on stacks (a stack's cotangent with two contributions) is a scan of run-time
    length adding rows; native and interpreted agree, any length."""
    from tracejit import ad_util
    g = make_graph(lambda a, b: [ad_util.add(a, b)], [S3, S3])[0]
    assert "length=None" in str(g)
    exe = compile_graph(g)
    assert exe.native
    rng = np.random.default_rng(1)
    for n in (0, 1, 7):
        a, b = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
        np.testing.assert_array_equal(exe([a, b])[0], a + b)
        np.testing.assert_array_equal(interpret_graph(g, [a, b])[0], a + b)
