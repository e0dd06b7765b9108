"""Python int/bool arguments the trace needs concretely are specialised on automatically (their
value joins the cache key); ints used only in arithmetic or as indices stay traced."""
import logging

import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import ConcretizationError


def stencil(A, B, TSTEPS):
    # a public-suite kernel, unmodified: a Python-int time-step count and an in-place update
    for t in range(TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
def test_range_bound_without_static_argnums(backend):
    f = tj.trace(stencil, backend=backend)
    rng = np.random.default_rng(0)
    for steps in (3, 5, 3, 5, 5):
        A, B = rng.random(50), rng.random(50)
        A2, B2 = A.copy(), B.copy()
        f(A, B, steps)
        stencil(A2, B2, steps)
        np.testing.assert_allclose(A, A2, rtol=1e-14)
        np.testing.assert_allclose(B, B2, rtol=1e-14)
    assert f.cache_info().traces == 2          # one per value of TSTEPS


def test_shapes_and_slice_bounds_from_ints():
    def f(x, n, m):
        z = np.zeros(n) + np.linspace(0, 1, n) + np.arange(n)
        return x[:n] * 2 + z, np.ones((n, m)).sum(0), x.reshape(m, -1)

    g = tj.trace(f)
    x = np.arange(12.0)
    for n, m in [(3, 2), (3, 2), (4, 3), (3, 2), (5, 4), (4, 3)]:
        for got, want in zip(g(x, n, m), f(x, n, m)):
            np.testing.assert_allclose(got, want)
    assert g.cache_info().traces == 3


def test_bool_flag_branch_and_union_of_needed_values():
    # the trace with flag=False needs only flag; with flag=True it needs n too
    def f(x, flag, n):
        if flag:
            for _ in range(n):
                x = x * 2
        return x - n

    g = tj.trace(f)
    x = np.ones(3)
    calls = [(False, 1), (True, 2), (False, 7), (True, 3), (True, 2), (False, 1)]
    for flag, n in calls:
        np.testing.assert_array_equal(g(x, flag, n), f(x, flag, n))


def test_arithmetic_and_index_ints_stay_traced():
    g = tj.trace(lambda x, k, i: x * k + x[i])
    x = np.arange(5.0)
    for k in range(6):
        np.testing.assert_array_equal(g(x, k, k % 5), x * k + x[k % 5])
    assert g.cache_info().traces == 1


def test_value_specialised_signature_has_no_native_shortcut():
    # the native fast path checks types only: it must not serve another value's trace
    g = tj.trace(lambda x, n: x[:n].sum())
    x = np.arange(10.0)
    for _ in range(3):
        for n in (2, 7, 4):
            assert g(x, n) == x[:n].sum()


def test_derived_values_and_python_floats():
    # a value computed from an int argument is specialised on; a float argument stays traced
    g = tj.trace(lambda x, n: np.zeros((n + 1) * 2) + x)
    assert g(1.0, 2).shape == (6,) and g(1.0, 3).shape == (8,)
    f = tj.trace(lambda x, t: np.zeros(3)[:int(t)] + x)        # a float is not specialised on
    with pytest.raises(ConcretizationError):
        f(1.0, 2.0)
    with pytest.raises(ConcretizationError):           # a NumPy integer is data, like an array
        tj.trace(lambda x, n: np.zeros(n))(1.0, np.int64(3))


def test_retrace_log_names_the_value(caplog):
    g = tj.trace(lambda x, n: x[:n])
    with _log_on():
        with caplog.at_level(logging.WARNING, logger="tracejit"):
            g(np.ones(4), 2)
            g(np.ones(4), 3)
    assert any("args[1] changed value from 2 to 3" in r.getMessage() for r in caplog.records)


class _log_on:
    def __enter__(self):
        self.old = tj.config.log_retraces
        tj.config.log_retraces = True

    def __exit__(self, *exc):
        tj.config.log_retraces = self.old


def test_lower_and_ir_follow_the_value():
    g = tj.trace(lambda x, n: x[:n] + 1)
    x = np.arange(5.0)
    assert g.lower(x, 2) is g.lower(x, 2)
    assert g.lower(x, 2) is not g.lower(x, 3)
    assert "f64[3]" in str(g.ir(x, 3)) and "f64[2]" in str(g.ir(x, 2))


def test_code_that_needs_a_real_int_gets_it():
    # a comparison with a string fails on a traced int: the trace is retried with the ints
    # passed as Python values (one trace per value). (isinstance(n, int) is False for a traced
    # int without raising, as in JAX: that cannot be detected.)
    def f(x, every):
        if every != "sqrt":
            return x * every
        return x

    g = tj.trace(f)
    for k in (2, 3, 2):
        np.testing.assert_array_equal(g(np.ones(2), k), f(np.ones(2), k))
    assert g.cache_info().traces == 3        # traced (failed), then pinned per value
    with pytest.raises(tj.errors.ShapeError, match=r"\(2,\).*\(3, 7\)"):   # a real error stays
        tj.trace(lambda x, n: x.reshape(n, 7))(np.ones(2), 3)


# derivatives: ints traced as in trace, and the same object for the same function ----------

def test_grad_in_a_loop_compiles_once():
    data = np.arange(5.0)

    def loss(w, k):
        return np.sum((w - data) ** 2) * k

    w = np.ones(5)
    for step in range(6):
        w = w - 0.05 * tj.grad(loss)(w, 2.0 + step)       # a new grad object each time
        tj.grad(lambda v: loss(v, 3.0))(w)                # and a new lambda
    assert tj.grad(loss) is tj.grad(loss)
    assert tj.grad(loss).cache_info().traces == 1
    assert tj.grad(loss, argnums=0) is not tj.value_and_grad(loss)
    np.testing.assert_allclose(tj.grad(loss)(w, 2.0), 4 * (w - data))


def test_derivative_cache_follows_closure_contents():
    def make(scale):
        return lambda v: np.sum(v * scale)

    w = np.ones(3)
    np.testing.assert_array_equal(tj.grad(make(2.0))(w), 2.0)
    np.testing.assert_array_equal(tj.grad(make(3.0))(w), 3.0)
    a, b = np.full(3, 4.0), np.full(3, 5.0)
    np.testing.assert_array_equal(tj.grad(make(a))(w), a)
    np.testing.assert_array_equal(tj.grad(make(b))(w), b)


def test_grad_int_argument_traced_unless_needed():
    def loss(w, i, n):
        return np.sum(w[:n] * w[i])

    g = tj.grad(loss)
    x = np.arange(6.0)
    for i in range(4):
        want = np.zeros(6)
        want[:3] += x[i]
        want[i] += np.sum(x[:3])
        np.testing.assert_allclose(g(x, i, 3), want)
    assert g.cache_info().traces == 1         # i is an index (traced), n a bound (its value)
    np.testing.assert_allclose(g(x, 0, 4)[:4], [np.sum(x[:4])] + [0.0] * 3)


WEAK_FLOAT_PROGRAMS = [
    lambda x, n: x * (n / 4),               # a Python int divided: a Python float
    lambda x, n: x + n * 0.5,
    lambda x, n: (n / 4) * np.sqrt(x) - 2 ** (n / 3),
    lambda x, n: x * (n / 0.5 + 1),
    lambda x, n: x + np.asarray(n / 2).astype(np.float64),   # astype is strong: float64
]


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("k", range(len(WEAK_FLOAT_PROGRAMS)))
def test_python_int_arguments_made_floats_stay_weak(backend, k):
    """NumPy keeps float32 data float32 next to a Python float computed from a Python int
    (``n / 4``): the traced int converts to a weak float (it used to turn float64)."""
    f = WEAK_FLOAT_PROGRAMS[k]
    x = np.linspace(0.5, 2.0, 5, dtype=np.float32)
    got, want = tj.trace(f, backend=backend)(x, 3), f(x, 3)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# grids: a Python-int bound specialises; one computed from traced data is a clear error -------

@pytest.mark.parametrize("backend", ["llvm", "interpret"])
def test_mgrid_ogrid_with_int_bounds(backend):
    def f(x, r):
        i, j = np.mgrid[0:r, 0:r]
        a, b = np.ogrid[0:r, 1:r + 1]
        return x[:r] * i + j + a * b
    g = tj.trace(f, backend=backend)
    x = np.arange(6.0)
    for r in (3, 4, 3):
        np.testing.assert_allclose(g(x, r), f(x, r))
    assert g.cache_info().traces == 2


@pytest.mark.parametrize("grid", ["mgrid", "ogrid"])
def test_grid_with_traced_bound_says_so(grid):
    def f(x):
        n = (x > 0).sum()
        return getattr(np, grid)[0:n, 0:2][0] * 1.0
    with pytest.raises(ConcretizationError, match=rf"np\.{grid}\[start:stop:step\] with a "
                                                  r"traced bound[\s\S]*test_python_ints\.py"):
        tj.trace(f)(np.arange(-2.0, 3.0))


def test_zeros_of_a_traced_count_says_so():
    with pytest.raises(ConcretizationError, match=r"traced value as an index or a shape"):
        tj.trace(lambda x: np.zeros((x > 0).sum()))(np.arange(-2.0, 3.0))
