"""The llvm backend on whole programs: random NumPy programs agree with the interpreter; fusion,
vector code, buffers, threads and run-time edge cases (division by zero, NaN casts, gathers)."""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracejit as tj
from tracejit.backend.engine import threads


def jit(fun):
    """tj.jit on the llvm backend whatever ``config.backend`` says."""
    return tj.jit(fun, backend="llvm")

# ---------------------------------------------------------------------------------------------
# random programs: a stack machine over NumPy ops (x: (4, 6), y: (6,), s: scalar)

UNARY = [np.sin, np.exp, np.tanh, np.abs, lambda a: np.sqrt(np.abs(a)), np.negative,
         lambda a: np.log1p(np.abs(a)), lambda a: a * a, np.cos, lambda a: np.maximum(a, 0.0),
         lambda a: np.where(a > 0.5, a, -a), lambda a: a.astype(np.float32).astype(a.dtype),
         np.floor, lambda a: np.clip(a, -1.0, 1.0)]
BINARY = [np.add, np.subtract, np.multiply, lambda a, b: a / (1.0 + b * b), np.maximum,
          np.minimum, lambda a, b: np.where(a < b, a, b), np.arctan2]
SHAPE_OPS = [lambda a: a.T if a.ndim == 2 else a, lambda a: a[..., ::-1],
             lambda a: a[1:] if a.ndim and a.shape[0] > 1 else a,
             lambda a: np.sum(a, axis=0, keepdims=a.ndim == 2) if a.ndim else a,
             lambda a: np.max(a, axis=-1) if a.ndim else a,
             lambda a: a - np.mean(a, axis=-1, keepdims=True) if a.ndim else a,
             lambda a: a.reshape(-1), lambda a: np.concatenate([a, a], axis=-1) if a.ndim else a,
             lambda a: np.cumsum(a, axis=-1) if a.ndim else a]


def _broadcastable(a, b):
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
        return True
    except ValueError:
        return False


def build(program):
    def f(x, y, s):
        stack = [x, y, s]
        for kind, i, j in program:
            a = stack[i % len(stack)]
            if kind == 0:
                stack.append(UNARY[j % len(UNARY)](a))
            elif kind == 1:
                b = stack[j % len(stack)]
                if _broadcastable(a, b):
                    stack.append(BINARY[j % len(BINARY)](a, b))
            elif np.ndim(a):
                stack.append(SHAPE_OPS[j % len(SHAPE_OPS)](a))
        return stack[-1], stack[len(stack) // 2]
    return f


ops = st.tuples(st.integers(0, 2), st.integers(0, 50), st.integers(0, 50))


@settings(max_examples=25, deadline=None)
@given(st.lists(ops, min_size=1, max_size=30), st.sampled_from([np.float64, np.float32]))
def test_random_programs_agree(program, dt):
    rng = np.random.default_rng(len(program))
    args = (rng.standard_normal((4, 6)).astype(dt), rng.standard_normal(6).astype(dt),
            dt(0.75))
    f = build(program)
    expected = tj.jit(f, backend="interpret")(*args)
    got = tj.jit(f, backend="llvm")(*args)
    tol = 2e-4 if dt == np.float32 else 1e-10
    for e, g in zip(expected, got):
        assert np.shape(e) == np.shape(g) and np.asarray(e).dtype == np.asarray(g).dtype
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True)


# ---------------------------------------------------------------------------------------------
# fusion and code shape

def expr(x, y):
    return np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x)


_expr = jit(expr)
_X = np.linspace(-3, 3, 1003)
_Y = np.cos(_X)


def test_fused_expression_is_one_loop_and_correct():
    np.testing.assert_allclose(_expr(_X, _Y), expr(_X, _Y), rtol=1e-14, atol=1e-15)
    text = _expr.ir(_X, _Y, stage="fused")
    assert text.count("loop [") == 1 and "numpy" not in text.split("\n", 1)[1]
    exe = _expr.lower(_X, _Y).executable
    assert exe.native
    loops = re.findall(r"^i\.head:", exe.llvm_ir, re.M)
    assert len(loops) == 1                     # one vector main loop for ten operations
    assert exe.memory_analysis()["temp_bytes"] == 0


def test_fused_kernel_uses_packed_vector_registers():
    asm = _expr.inspect_asm(_X, _Y)
    assert re.search(r"\bv(mul|add|fmadd\d*|div)pd\s+.*%zmm", asm) or \
        re.search(r"\bv(mul|add|fmadd\d*|div)pd\s+.*%ymm", asm)


def test_reduction_fuses_with_producer_and_reshape_is_free():
    f = jit(lambda x: (np.sum(np.exp(x) * 2.0), np.max(x.reshape(10, 10) + 1.0, axis=0)))
    x = np.linspace(0, 1, 100)
    s, m = f(x)
    np.testing.assert_allclose(s, np.sum(np.exp(x) * 2.0), rtol=1e-13)
    np.testing.assert_array_equal(m, np.max(x.reshape(10, 10) + 1.0, axis=0))
    text = f.ir(x, stage="fused")
    assert "reduce" in text and text.count("loop [") <= 2


def test_buffers_are_reused():
    def chain(x):
        for _ in range(6):
            x = np.sum(np.sin(x) + x, axis=0, keepdims=True) * x.T
        return x
    f = jit(chain)
    x = np.linspace(0, 1, 64 * 64).reshape(64, 64)
    np.testing.assert_allclose(f(x), tj.jit(chain, backend="interpret")(x), rtol=1e-9)
    mem = f.memory_analysis(x)
    assert mem["argument_bytes"] == mem["output_bytes"] == x.nbytes
    assert mem["temp_bytes"] <= 4 * x.nbytes


def test_nan_propagation_and_reduction_edge_cases():
    f = jit(lambda x: (np.max(x), np.min(x, axis=1), np.sum(x[:0]), np.prod(x[:, :1])))
    x = np.arange(40.0).reshape(4, 10)
    x[2, 3] = np.nan
    for got, exp in zip(f(x), tj.jit(f.fun, backend="interpret")(x)):
        np.testing.assert_array_equal(got, exp)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_results_do_not_depend_on_thread_count(nthreads):
    g = jit(lambda x: (np.sin(x) * x + 1.0, np.sum(np.cos(x)), np.sum(x.reshape(400, 1000) ** 2,
                                                                        axis=1)))
    x = np.linspace(-5, 5, 400_000)
    before = threads.get_num_threads()
    try:
        threads.set_num_threads(1)
        ref = g(x)
        threads.set_num_threads(nthreads)
        got = g(x)
    finally:
        threads.set_num_threads(before)
    for r, o in zip(ref, got):
        np.testing.assert_array_equal(o, r)
    text = g.ir(x, stage="fused")
    assert "parallel" in text and "fixed chunks" in text


# ---------------------------------------------------------------------------------------------
# run-time safety

def _both(f, *args):
    return tj.jit(f, backend="llvm")(*args), tj.jit(f, backend="interpret")(*args)


def test_integer_division_by_zero_gives_numpy_values():
    a = np.array([7, -7, 0, np.iinfo(np.int64).min, 5], np.int64)
    b = np.array([0, 0, 0, -1, -2], np.int64)
    got, exp = _both(lambda a, b: (a // b, a % b), a, b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[0], a // b)
        np.testing.assert_array_equal(got[1], a % b)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g, e)
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    a32[3] = np.iinfo(np.int32).min
    got, exp = _both(lambda a, b: (a // b, a % b), a32, b32)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g, e)


def test_float_floordiv_and_mod_match_numpy():
    a = np.array([7.5, -7.5, 0.0, -0.0, np.inf, np.nan, 1e300, 3.0, -3.0, 5.0])
    b = np.array([2.0, 2.0, 0.0, 3.0, 2.0, 1.0, 1e-300, -0.0, np.inf, -np.inf])
    got, _ = _both(lambda a, b: (a // b, a % b), a, b)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[0], a // b)
        np.testing.assert_array_equal(got[1], a % b)


def test_float_to_int_casts_are_defined():
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0**63, -2.5, 2.5, 2.0**31])
    for dt in (np.int32, np.int64):
        got, exp = _both(lambda v: v.astype(dt), x)
        np.testing.assert_array_equal(got, exp)
        assert got[0] == 0 and got[1] == np.iinfo(dt).max and got[2] == np.iinfo(dt).min


def test_out_of_range_gather_raises_index_error():
    f = jit(lambda x, i: np.exp(x)[i] * 2.0)
    x = np.arange(5.0)
    np.testing.assert_allclose(f(x, np.array([0, -1, 4])), np.exp(x)[[0, -1, 4]] * 2.0)
    with pytest.raises(IndexError):
        f(x, np.array([0, 5]))
    with pytest.raises(IndexError):
        f(x, np.array([-6]))


def test_control_flow_runs_on_llvm_backend():
    def g(x, n):
        y = tj.fori_loop(0, 5, lambda i, c: c * 0.5 + np.sin(c), x)
        z = tj.cond(n > 0, lambda v: v + 1.0, lambda v: v - 1.0, y)
        c, ys = tj.scan(lambda c, v: (c + v, c * v), 0.0, z)
        return z, c, ys
    x = np.linspace(0, 1, 8)
    for n in (1, -1):
        got, exp = _both(g, x, n)
        for a, b in zip(got, exp):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_python_scalars_and_zero_size_inputs():
    f = jit(lambda x, s: (x * s + 1.0, np.sum(x) * s))
    for x in (np.zeros(0), np.ones(1), np.ones((3, 0))):
        got, exp = _both(f.fun, x, 2.5)
        for a, b in zip(got, exp):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# what runs natively

def test_complex_arithmetic_is_native_and_exact():
    f = jit(lambda a, b: (a * b - np.conj(a) / b, np.sum(a * b), a == b, (a * 2.0).imag))
    rng = np.random.default_rng(3)
    for dt in (np.complex128, np.complex64):
        a = (rng.standard_normal(53) + 1j * rng.standard_normal(53)).astype(dt)
        b = (rng.standard_normal(53) + 1j * rng.standard_normal(53)).astype(dt)
        b[:3] = [0, 1e-300 if dt == np.complex128 else 1e-30, np.inf]
        got = f(a, b)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(got[0], a * b - np.conj(a) / b)
        np.testing.assert_allclose(got[1], np.sum(a * b), rtol=1e-5)
        np.testing.assert_array_equal(got[2], a == b)
        np.testing.assert_array_equal(got[3], (a * 2.0).imag)
        assert f.lower(a, b).executable.native


def test_argmax_and_gather_are_native():
    f = jit(lambda x, i: (np.argmax(x, axis=1), np.argmin(x, axis=-1), x[:, i]))
    x = np.random.default_rng(4).standard_normal((5, 37))
    x[2, 7] = np.nan
    i = np.array([3, -1, 0])
    got = f(x, i)
    np.testing.assert_array_equal(got[0], np.argmax(x, axis=1))
    np.testing.assert_array_equal(got[1], np.argmin(x, axis=-1))
    np.testing.assert_array_equal(got[2], x[:, i])
    assert f.lower(x, i).executable.native
    with pytest.raises(IndexError):
        f(x, np.array([37, 0, 0]))


def test_matmul_with_batch_and_transpose_is_native():
    f = jit(lambda a, b, c: (np.tanh(a @ b.T), np.einsum("bij,bjk->bik", c, c)))
    rng = np.random.default_rng(5)
    a, b, c = rng.random((33, 20)), rng.random((17, 20)), rng.random((3, 6, 6))
    got = f(a, b, c)
    np.testing.assert_allclose(got[0], np.tanh(a @ b.T), rtol=1e-13)
    np.testing.assert_allclose(got[1], np.einsum("bij,bjk->bik", c, c), rtol=1e-13)
    text = f.ir(a, b, c, stage="fused")
    assert text.count("matmul") == 2 and "numpy" not in text.split("\n", 1)[1]


def test_native_entry_keeps_the_kernel_contract():
    from tracejit.backend.runtime import pyabi_dispatch
    f = jit(lambda x, i: (np.exp(x)[i] * 2.0, np.sum(x)))
    x, i = np.linspace(0, 1, 50), np.array([0, -1, 7])
    exe = f.lower(x, i).executable
    fast = pyabi_dispatch.FastDispatch(lambda *a: f(*a))
    fast.add_specialization(exe.native_entry(), exe)
    for got, exp in zip(fast(x, i), f(x, i)):
        np.testing.assert_array_equal(got, exp)
    with pytest.raises(IndexError):
        fast(x, np.array([50, 0, 0]))


def test_complex_literal_and_input_outputs():
    f = jit(lambda z: (z, (1 + 2j) * np.ones_like(z), np.conj(z)))
    z = np.array([1 + 1j, -2j, 3.0], np.complex64)
    got = f(z)
    np.testing.assert_array_equal(got[0], z)
    np.testing.assert_array_equal(got[1], np.full(3, 1 + 2j, np.complex64))
    np.testing.assert_array_equal(got[2], np.conj(z))
