"""Python ints next to narrower arrays, integer powers, and traced sizes, against NumPy 2.

NumPy knows a Python int's value: comparisons with an int32 array are exact for any value and
arithmetic raises OverflowError when it does not fit. tracejit traces Python-int arguments, so
the signature records their range (fits int32, sign; ``numpy/intrange.py``). Every case runs on
both backends, with the int passed as an argument (traced) and closed over (a literal), and must
give NumPy's dtype and values or raise NumPy's exception type.
"""
from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp

BACKENDS = ("interpret", "llvm")
I32 = np.array([1, 2, -3, 2**31 - 1, -2**31], np.int32)
INTS = [3, -3, 0, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40, -2**40, 2**63 - 1, -2**63]
UFUNCS = ["less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "add",
          "subtract", "multiply", "maximum", "minimum", "fmax", "fmin", "floor_divide",
          "remainder", "bitwise_and", "bitwise_or", "bitwise_xor", "true_divide", "arctan2",
          "logical_and", "power"]


def _outcome(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn(*args))
        except (OverflowError, ValueError) as e:
            return type(e)


def _check(f, args, backend):
    """Same exception type, or same dtype and values (exact for ints and bools; floats within
    a few ulps: llvm's transcendentals are not correctly rounded)."""
    expected = _outcome(f, *args)
    got = _outcome(tj.jit(f, backend=backend), *args)
    if isinstance(expected, type) or isinstance(got, type):
        assert got == expected
        return
    assert got.dtype == expected.dtype
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=4 * np.finfo(got.dtype).eps)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", UFUNCS)
@pytest.mark.parametrize("swap", [False, True])
def test_python_int_with_int32_array(backend, name, swap):
    ufunc = getattr(np, name)
    for k in INTS:
        # (a traced negative array exponent is defined, not an error: see below)
        x = np.abs(I32[:-1]) if swap and name == "power" else I32
        traced = (lambda x, k: ufunc(k, x)) if swap else (lambda x, k: ufunc(x, k))
        _check(traced, (x, k), backend)
        literal = (lambda x: ufunc(k, x)) if swap else (lambda x: ufunc(x, k))
        _check(literal, (x,), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["bool", "int64", "float32", "float64"])
def test_python_int_with_other_arrays(backend, dtype):
    x = np.array([1, 0, 1], dtype)
    for k in INTS:
        for name in ("less", "equal", "add", "multiply", "maximum"):
            ufunc = getattr(np, name)
            _check(lambda x, k: ufunc(x, k), (x, k), backend)
            _check(lambda x: ufunc(x, k), (x,), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_rounds_a_python_int_through_a_double(backend):
    # NumPy converts the Python int to a double first: 2**60 + 2**36 + 1 -> 2**60 + 2**36 ->
    # (a tie) 2**60, where a direct int64 -> float32 conversion gives 2**60 + 2**37
    k = 2**60 + 2**36 + 1
    x = np.zeros(2, np.float32)
    _check(lambda x, k: x + k, (x, k), backend)
    assert tj.jit(lambda x, k: x + k, backend=backend)(x, k)[0] == np.float32(2.0**60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_computed_weak_ints_compare_exactly(backend):
    # k * 2 is computed in the trace (no recorded range): the comparison is still exact
    f = tj.jit(lambda x, k: (x < k * 2, x == k - 2**31, x >= -k * 4), backend=backend)
    for k in (2**30, 5, -2**31):
        got = f(I32, k)
        ref = (I32 < k * 2, I32 == k - 2**31, I32 >= -k * 4)
        for g, r in zip(got, ref):
            np.testing.assert_array_equal(g, r)


def test_range_crossing_retraces_and_is_logged(caplog):
    tj.config.log_retraces, saved = True, tj.config.log_retraces
    try:
        f = tj.jit(lambda x, k: x + k)
        f(I32, 3)
        f(I32, 70000)                              # same range: no retrace
        assert f.cache_info().traces == 1
        with caplog.at_level(logging.WARNING, logger="tracejit"):
            with pytest.raises(OverflowError, match=r"Python integer 1099511627776 out of "
                                                    r"bounds for int32\n  at .*test_int_sem"):
                f(I32, 2**40)
        assert "args[1] changed from a non-negative int within the int32 range to a " \
               "non-negative int outside the uint32 range" in caplog.text
        np.testing.assert_array_equal(f(I32, 4), I32 + 4)
        assert f.cache_info().traces == 2          # the failed trace is not cached
    finally:
        tj.config.log_retraces = saved


def test_only_facts_a_trace_relies_on_retrace():
    # x + k relies on k fitting int32, not on its sign; x ** k on its sign; x * 2.5 on neither
    add, pw, flt = (tj.jit(lambda x, k: x + k), tj.jit(lambda x, k: x ** k),
                    tj.jit(lambda x, k: x * 2.5 + k))
    for k in (3, -3, 0, 2**31 - 1):
        np.testing.assert_array_equal(add(I32, k), I32 + k)
    assert add.cache_info().traces == 1
    for k in (3, 0, 5):
        np.testing.assert_array_equal(pw(I32, k), I32 ** k)
    with pytest.raises(ValueError, match="negative integer powers"):
        pw(I32, -1)
    assert pw.cache_info().traces == 2
    for k in (3, -3, 2**40, -2**62):
        np.testing.assert_array_equal(flt(I32, k), I32 * 2.5 + k)
    assert flt.cache_info().traces == 1


def test_native_entry_never_skips_the_range_check():
    # x + k relies on k fitting int32: its graph gets no native entry, so a cached signature
    # cannot run it for an out-of-range k (every call takes the Python path: a hit each)
    f = tj.jit(lambda x, k: x + k)
    for k in (1, 2, 3):
        f(I32, k)
    assert f.cache_info().hits == 2
    with pytest.raises(OverflowError):
        f(I32, 2**40)
    # comparisons are exact for every int64: the native entry stays (later calls no hits)
    g = tj.jit(lambda x, k: x < k)
    for k in (1, 2, 3, 4):
        g(I32, k)
    assert g.cache_info().hits == 1
    np.testing.assert_array_equal(g(I32, 2**40), np.ones(5, bool))


@pytest.mark.parametrize("backend", BACKENDS)
def test_clip_ignores_bounds_beyond_the_dtype(backend):
    for lo, hi in [(0, 2**40), (-2**40, 1), (-2**40, 2**40), (2**40, 7), (1, -2**40), (1, 5)]:
        _check(lambda x, lo, hi: np.clip(x, lo, hi), (I32, lo, hi), backend)
        _check(lambda x: np.clip(x, lo, hi), (I32,), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_power_negative_exponents(backend, dtype):
    x = np.array([1, 0, -1, 3] if dtype != "bool" else [True, False, True, False], dtype)
    for k in (3, 0, -1, -2, -100, 100):
        _check(lambda x, k: x ** k, (x, k), backend)            # sign in the signature
        _check(lambda x: x ** k, (x,), backend)                  # literal
        _check(lambda x: np.power(x, np.array([2, k, 1, 0])), (x,), backend)   # constant
        _check(lambda k, x: k ** x, (k, np.abs(x)), backend)     # traced Python-int base


def test_traced_negative_array_exponents_raise_at_run_time():
    """A traced array exponent with a negative element raises NumPy's ValueError when the
    function runs, on both backends (a run-time check, check_p in ops/elementwise.py); without one the values
    are NumPy's."""
    x = np.array([1, -1, -1, 2, 0, 5], np.int64)
    e = np.array([-3, -3, -2, -1, -1, 2], np.int64)
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** e
    for b in BACKENDS:
        f = tj.jit(lambda x, e: x ** e, backend=b)
        with pytest.raises(ValueError, match="^Integers to negative integer powers are not "
                                             "allowed.$"):
            f(x, e)
        out = f(x, np.abs(e))
        np.testing.assert_array_equal(out, x ** np.abs(e))
        assert out.dtype == np.int64


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "full", "arange"])
def test_traced_sizes_in_tracejit_numpy(fn):
    call = {"full": lambda n: tnp.full(n, 1.0), "arange": lambda n: tnp.arange(n)}.get(
        fn, lambda n: getattr(tnp, fn)(n))
    with pytest.raises(tj.ConcretizationError, match=rf"{fn}.*static_argnums.*\n  at .*"
                                                     rf"test_int_semantics.py"):
        tj.jit(call)(np.int64(3))          # a NumPy integer is data (a Python int is not)
    assert np.asarray(tj.jit(call, static_argnums=0)(3)).shape == (3,)
    assert np.asarray(tj.jit(call)(3)).shape == (3,)      # specialised on its value


@pytest.mark.parametrize("call", [lambda n: np.zeros((n, 2)), lambda n: np.arange(n),
                                  lambda n: np.eye(n), lambda n: np.zeros([n])])
def test_traced_sizes_in_numpy_raise_concretization_errors(call):
    # np.arange converts with __array__ (a ConcretizationError without the static hint)
    with pytest.raises(tj.ConcretizationError, match=r"concrete value.*\n  at .*test_int_sem"):
        tj.jit(call)(np.int64(3))
    assert tj.jit(call)(3).shape == call(3).shape


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_traced_scalar_size_in_numpy(fn):
    # NumPy's shape converter replaces Tracer.__index__'s error by its own bare TypeError;
    # the trace recognises it (errors.numpy_shape_from_tracer) and names the user's line
    with pytest.raises(tj.ConcretizationError, match=r"static_argnums(.|\n)*at .*test_int_sem"):
        tj.jit(lambda n: getattr(np, fn)(n))(np.int64(3))
