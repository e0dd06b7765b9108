"""Reliability of the call path (issue 11): the native-entry table is least-recently-used (a
signature pushed out of the 8-slot table gets its native entry back when called again, and the
output cache of an evicted entry is released), and Python-number edge cases raise what Python
and NumPy raise, on both backends."""
import gc
import weakref

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.runtime import pyabi_dispatch as pd


def _python_path_calls(f, *args):
    """How many of these calls of ``f`` took the Python path (``cache_info().hits`` counts
    the calls of a cached signature that the native table did not serve)."""
    before = f.cache_info().hits
    for a in args:
        f(a)
    return f.cache_info().hits - before


def test_reliability_evicted_signature_gets_its_native_entry_back():
    f = tj.jit(lambda x: x * 2.0 + 1.0)
    xs = [np.arange(float(n + 1)) for n in range(10)]        # 10 signatures, 8 slots
    for x in xs:
        f(x), f(x)                         # traced, then the native entry is built
    assert f._tj_nspec == pd.MAX_SPECIALIZATIONS
    assert _python_path_calls(f, *xs[2:]) == 0               # the 8 most recent: native
    assert _python_path_calls(f, xs[0]) == 1                 # evicted: one Python-path call...
    assert _python_path_calls(f, xs[0], xs[0]) == 0          # ...then native again
    assert _python_path_calls(f, xs[1], xs[1]) == 1
    # the entries re-added pushed out the two least recently used (xs[2], xs[3]), not xs[0]
    assert _python_path_calls(f, *xs[4:], xs[0], xs[1]) == 0
    assert _python_path_calls(f, xs[2], xs[2], xs[3], xs[3]) == 2
    # alternating the 10 signatures: every call answers right, on whichever path
    for _ in range(3):
        for x in xs:
            np.testing.assert_array_equal(f(x), x * 2.0 + 1.0)
    assert f._tj_nspec == pd.MAX_SPECIALIZATIONS
    assert len(set(f._tj_keep)) == pd.MAX_SPECIALIZATIONS    # no entry twice in the table


def test_reliability_evicted_entry_releases_its_output_cache():
    f = tj.jit(lambda x: x + 1.0)
    big = np.zeros(100_000)                         # 800 kB outputs are cached for reuse
    f(big), f(big)
    out = f(big)                                   # returned by the native entry
    ref = weakref.ref(out)
    del out
    assert ref() is not None                       # kept for reuse by its table entry
    for n in range(pd.MAX_SPECIALIZATIONS):        # eight other signatures push it out
        x = np.zeros(n + 1)
        f(x), f(x)
    gc.collect()
    assert ref() is None
    assert _python_path_calls(f, big) == 1 and _python_path_calls(f, big) == 0


# Python numbers: the traced function raises what Python raises on the same Python values
# (results stay NumPy scalars; a value Python would give another type for, like 2 ** -1 == 0.5
# from ints, raises NumPy's ValueError instead, clearly; a float to a Python-int power in
# [1, 64] is repeated multiplication: 1e200 ** 2 is inf, as 1e200 * 1e200)
_PYTHON_NUMBER_CASES = [
    (lambda a, b: a ** b, 0.0, -1.0), (lambda a, b: a ** b, -0.0, -2.5),
    (lambda a, b: a ** b, 0, -1), (lambda a, b: a ** b, 0, -3), (lambda a, b: a ** b, 0.0, -2),
    (lambda a, b: a ** b, 1e308, 2.0), (lambda a, b: a ** b, 10.0, 400),
    (lambda a, b: a // b, True, False), (lambda a, b: a % b, True, False),
    (lambda a, b: divmod(a, b), False, False),
    # and where Python does not raise, the same values
    (lambda a, b: a ** b, 0.0, 2.5), (lambda a, b: a ** b, 2.0, -1.0), (lambda a, b: a ** b, 3, 4),
    (lambda a, b: a ** b, float("inf"), 2.0), (lambda a, b: a // b, True, True),
    (lambda a, b: a % b, False, True), (lambda a, b: a ** b, 0.0, 0.0),
]


@pytest.mark.parametrize("case", range(len(_PYTHON_NUMBER_CASES)))
def test_reliability_python_number_edge_cases_as_python(backend, case):
    fn, a, b = _PYTHON_NUMBER_CASES[case]
    try:
        want = fn(a, b)
    except ArithmeticError as e:
        want = type(e)
    f = tj.jit(fn)
    for _ in range(3):                          # traced, the Python path, the native entry
        if isinstance(want, type):
            with pytest.raises(want):
                f(a, b)
        else:
            np.testing.assert_equal(f(a, b), want)
    g = tj.jit(lambda b: fn(a, b))              # one operand a constant of the trace
    if isinstance(want, type):
        with pytest.raises(want):
            g(b)
    else:
        np.testing.assert_equal(g(b), want)


def test_reliability_python_int_to_negative_power_of_a_nonzero_base_is_numpys_error(backend):
    f = tj.jit(lambda a, b: a ** b)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(2, -1)
    with pytest.raises(ZeroDivisionError):
        f(0, -1)                                 # the same signature: decided at run time
    assert f(2, 3) == 8


# captured arrays (README "Captured arrays"): baked in at trace time, and every signature
# traced after a change sees the new value (the old signatures are dropped, not kept stale)
_W = np.ones(3, np.int64)


def test_reliability_signatures_agree_after_a_captured_global_changes(backend):
    global _W
    _W = np.ones(3, np.int64)
    f = tj.jit(lambda x: x + _W)
    one, row = np.zeros(3, np.int64), np.zeros((1, 3), np.int64)
    f(one), f(one)
    _W[:] = 5                                     # changed in place
    np.testing.assert_array_equal(f(row), [[5, 5, 5]])    # a new signature traces...
    np.testing.assert_array_equal(f(one), [5, 5, 5])      # ...and the old one agrees
    _W = np.full(3, 7)                            # rebound to another array
    np.testing.assert_array_equal(f(np.zeros((2, 3), np.int64)), [[7, 7, 7]] * 2)
    np.testing.assert_array_equal(f(one), [7, 7, 7])
    np.testing.assert_array_equal(f(row), [[7, 7, 7]])
    # a call of an already traced signature does not look (no per-call cost: the llvm backend
    # answers from the baked copy); clear_cache, or any new signature, takes the new value
    _W[0] = -1
    f.clear_cache()
    np.testing.assert_array_equal(f(one), [-1, 7, 7])


def test_reliability_captured_closure_array_change_retraces_all_signatures(backend):
    table = np.arange(4.0)

    def f(x):
        return x * table

    g = tj.jit(f)
    a, b = np.ones(4), np.ones((2, 4))
    np.testing.assert_array_equal(g(a), table)
    table *= 2
    np.testing.assert_array_equal(g(b), [table, table])
    np.testing.assert_array_equal(g(a), table)


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_reliability_complex_power_integral_traced_exponent_is_numpys_bits(backend, dtype):
    """npy_cpow computes z ** n for a real integral |n| < 100 by binary exponentiation (its
    cmul without fma, 1 / z**|n| for n < 0): the llvm backend does the same per element, so
    the bits are NumPy's, also where exp(n log z) is far off (a tiny real part)."""
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(600) + 1j * rng.standard_normal(600)).astype(dtype)
    z[:100] = (1e-30 + 1j * rng.standard_normal(100)).astype(dtype)
    z[100:110] = [0, 1, -1, 1j, -1j, 2, 0.5, 1e-3j, 3 + 4j, -0.0]
    w = rng.integers(-99, 100, 600).astype(dtype)
    w[:20] = [0, 1, 2, 3, -1, -2, -3, 99, -99, 100, -100, 64, 1.5, 2 + 1e-9j, 7, 8, 0, 1, -1, 5]
    f = tj.jit(lambda z, w: z ** w)
    with np.errstate(all="ignore"):
        want = z ** w
    for _ in range(2):
        got = f(z, w)
        exact = (w.imag == 0) & (w.real == np.round(w.real)) & (np.abs(w.real) < 100)
        np.testing.assert_array_equal(got[exact], want[exact])
        np.testing.assert_allclose(got[~exact], want[~exact], rtol=64 * np.finfo(dtype).eps)
