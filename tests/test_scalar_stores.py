"""A scalar stored into an integer array (``x[i] = v``, ``x.fill(v)``) as NumPy stores it
(numpy/intstore.py ``store_scalar``): through Python's int(), so NaN raises ValueError and an
infinity or a value outside the array's range OverflowError, for Python numbers (traced
arguments, literals) and the NumPy scalars a function computes (``x.sum()``), at run time on
both backends; a NumPy scalar stored into an unsigned array wraps as NumPy's C cast does
(fuzz 841 #1435: a traced Python float saturated instead of raising)."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj

BACKENDS = ("interpret", "llvm")
INTS = (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)
VALUES = (-1, 300, 70000, 2**40, 2**63 - 1, 2.5, -0.7, 127.9, 300.0, -129.5, 1e10, 2.0**63,
          -2.0**63, 2.0**64, float("nan"), float("inf"), -float("inf"))


def _setitem(a, v):
    a[0] = v
    return a


def _fill(a, v):
    a.fill(v)
    return a


def _computed(a, v):
    a[1] = np.asarray(v).sum()          # a NumPy scalar computed in the function
    return a


def _outcome(f, dt, v):
    a = np.zeros(2, dt)
    try:
        with np.errstate(invalid="ignore"):
            return "ok", f(a, v).tolist()
    except (ValueError, OverflowError) as e:
        return type(e).__name__


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_setitem, _fill, _computed], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.__name__)
def test_scalar_stores_follow_numpy(backend, fn, dt):
    traced = tj.jit(fn, backend=backend)
    for v in VALUES:
        if fn is _computed and dt(0).dtype.kind == "u" and isinstance(v, float) and \
                not abs(v) < 2.0**63:
            continue              # NumPy's C cast of a float beyond int64: undefined behaviour
        assert _outcome(traced, dt, v) == _outcome(fn, dt, v), (dt, v)


@pytest.mark.parametrize("backend", BACKENDS)
def test_literal_out_of_range_raises_while_tracing(backend):
    def f(a):
        a[0] = 300.0
        return a
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        tj.jit(f, backend=backend)(np.zeros(2, np.int8))


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_d_arrays_are_cast_not_checked(backend):
    """A 0-d array is stored with NumPy's C cast (no int() conversion): 300.0 into int16 is
    300, and no check is added for an in-range float array."""
    def f(a, x):
        a[0] = np.array(x * 2.0)
        return a
    np.testing.assert_array_equal(tj.jit(f, backend=backend)(np.zeros(2, np.int16), 150.5),
                                  [301, 0])
    assert "check" not in str(tj.make_ir(f)(np.zeros(2, np.int16), 1.0))
