"""NumPy-scalar arguments (``np.int64(3)``, ``np.float32(2.5)``, ``np.bool_(True)``) behave as
NumPy scalars, not as the 0-d arrays of their type (issue 11): stored into integer arrays through
int() (NaN: ValueError; out of a signed array's range: OverflowError; an unsigned array wraps),
immutable (``s += 1`` rebinds; ``s.fill(v)`` writes a temporary), ``s ** 0.5`` is C's pow
(``np.power(x, 0.5)`` is NumPy's sqrt fast path), ``np.True_ ** 2`` is int64, and results stay
NumPy scalars. The signature tells a NumPy scalar from a 0-d array of the same type."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit as tj

BACKENDS = ("interpret", "llvm")
SCALARS = (np.int64(3), np.int64(300), np.int32(-1), np.uint64(300), np.uint8(200),
           np.float32(2.5), np.float64(300.0), np.float64(np.nan), np.float64(-0.0),
           np.float64(-np.inf), np.bool_(True))


def _outcome(f, *args):
    """(kind, value repr, type name, args after the call) or (error class, message start)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = f(*args)
        return "ok", repr(r), type(r).__name__, [repr(a) for a in args]
    except (ValueError, OverflowError, TypeError) as e:
        # the error class NumPy raises (tracejit's errors subclass it)
        base = next(c for c in (OverflowError, ValueError, TypeError) if isinstance(e, c))
        return "error", base.__name__


def _store(a, s):
    a[0] = s
    return a


def _fill(a, s):
    a.fill(s)
    return a


def _listed(a, s):
    np.place(a, np.array([True, False, True]), [s])
    return a


def _rebind(s):
    s += 1
    return s


def _rebind_float(s):
    s *= 1.5
    return s


FUNCTIONS = {
    "pow2": lambda s: s ** 2, "pow_half": lambda s: s ** 0.5,
    "np_power_half": lambda s: np.power(s, 0.5), "neg_abs": lambda s: abs(s) - s,
    "returned": lambda s: s, "copy": lambda s: s.copy(), "T": lambda s: s.T,
    "ellipsis": lambda s: s[...], "empty_index": lambda s: s[()],
    "scalar_fill": lambda s: (s.fill(1), s)[1], "rebind": _rebind, "rebind_float": _rebind_float,
    "astype": lambda s: s.astype(np.float32), "tuple": lambda s: (s, s * 2, np.asarray(s)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_operations_on_numpy_scalar_arguments(backend, name):
    fn = FUNCTIONS[name]
    traced = tj.jit(fn, backend=backend)
    for s in SCALARS:
        if name == "rebind" and s.dtype == np.bool_:
            continue                     # (True + 1 is int64 in both; covered by pow2)
        assert _outcome(traced, s) == _outcome(fn, s), (name, s)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_store, _fill, _listed], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", (np.int8, np.uint8, np.int64, np.float32),
                         ids=lambda d: d.__name__)
def test_numpy_scalar_argument_stores(backend, fn, dt):
    traced = tj.jit(fn, backend=backend)
    for s in SCALARS:
        if dt(0).dtype.kind == "u" and s.dtype.kind == "f" and not abs(s) < 2.0 ** 63:
            continue              # NumPy's C cast of NaN/inf to an unsigned int: undefined
        assert _outcome(traced, np.zeros(3, dt), s) == _outcome(fn, np.zeros(3, dt), s), (dt, s)


@pytest.mark.parametrize("backend", BACKENDS)
def test_signature_tells_numpy_scalar_from_0d_array(backend):
    f = tj.jit(_store, backend=backend)
    a = np.zeros(2, np.int8)
    with pytest.raises(OverflowError):
        f(a.copy(), np.int64(300))                     # a NumPy scalar: int(), out of range
    assert f(a.copy(), np.array(300)).tolist() == [44, 0]     # a 0-d array: cast, as NumPy
    with pytest.raises(OverflowError):
        f(a.copy(), np.int64(300))
    assert f.cache_info().misses == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_power_half_of_arrays_is_numpy_sqrt_path(backend):
    x = np.array([-0.0, -np.inf, 2.0, 0.25])
    cases = [(lambda x: np.power(x, 0.5), x), (lambda x: x ** 0.5, x),
             (lambda x: np.power(x, 0.5), x.astype(np.float32)),
             (lambda x: np.power(x, np.array([0.5] * 4)), x),        # no stride-0 exponent
             (lambda x, y: np.power(x, y), (x, np.array([0.5] * 4)))]
    for fn, args in cases:
        args = args if isinstance(args, tuple) else (args,)
        with np.errstate(invalid="ignore"):
            want = fn(*args)
        got = tj.jit(fn, backend=backend)(*args)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        assert (np.signbit(got) == np.signbit(want)).all()


@pytest.mark.parametrize("backend", BACKENDS)
def test_unsigned_to_negative_python_int_power_is_overflow(backend):
    for fn in (lambda x: x ** -1, lambda x: np.power(x, -1)):
        for x in (np.array([200], np.uint8), np.uint8(3)):
            with pytest.raises(OverflowError, match="out of bounds for uint8"):
                fn(x)
            with pytest.raises(OverflowError, match="out of bounds for uint8"):
                tj.jit(fn, backend=backend)(x)
