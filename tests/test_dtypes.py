"""dtype promotion, NumPy 2 (NEP 50) rules: arrays promote with np.promote_types; Python scalars
are weak (they only raise the kind). Checked for every (dtype, dtype) pair of arrays and every
(dtype, Python scalar) pair, with the scalar as a traced argument and as a closure constant."""
import operator

import numpy as np
import pytest

import tracejit
from np_support import ALL, assert_same, check

PYSCALARS = [True, 3, -2, 2.5, -0.5, 1.5 + 2j]

pytestmark = pytest.mark.usefixtures("interpret_backend")
OPS = [operator.add, operator.mul, operator.truediv, operator.eq, operator.lt, np.maximum]


def _arr(dtype):
    x = np.array([1, 2, 3, 0], dtype=dtype)
    return x if dtype == "bool" else x


def _np_or_none(fn, *args):
    try:
        with np.errstate(all="ignore"):
            return fn(*args)
    except Exception:  # noqa: BLE001
        return None


@pytest.mark.parametrize("op", OPS, ids=lambda f: getattr(f, "__name__", str(f)))
@pytest.mark.parametrize("d1", ALL)
@pytest.mark.parametrize("d2", ALL)
def test_array_array_promotion(op, d1, d2):
    x, y = _arr(d1), _arr(d2)
    if _np_or_none(op, x, y) is None:
        return        # NumPy raises (e.g. complex ordering is fine, but bool - bool is not)
    check(("aa", op, d1, d2), op, x, y, others=[(x[::-1].copy(), y)])


@pytest.mark.parametrize("op", OPS, ids=lambda f: getattr(f, "__name__", str(f)))
@pytest.mark.parametrize("d1", ALL)
@pytest.mark.parametrize("s", PYSCALARS, ids=repr)
def test_array_python_scalar_weak(op, d1, s):
    x = _arr(d1)
    if _np_or_none(op, x, s) is None:
        return
    # the scalar as a traced (weak) argument: no retrace for another value of the same type
    other = type(s)(not s) if isinstance(s, bool) else type(s)(s * 2)
    check(("as_arg", op, d1, type(s)), op, x, s, others=[(x, other)])
    check(("as_arg_left", op, d1, type(s)), lambda a, b: op(b, a), x, s, others=[(x, other)])
    # the scalar as a closure constant (a weak literal in the IR)
    check(("const", op, d1, s), lambda a: op(a, s), x)


CORNERS = [
    ("i32 + int stays i32", lambda a: a + 3, np.array([1, 2], np.int32), np.int32),
    ("i32 * 2.0 -> f64", lambda a: a * 2.0, np.array([1, 2], np.int32), np.float64),
    ("f32 * 2.0 stays f32", lambda a: a * 2.0, np.array([1, 2], np.float32), np.float32),
    ("bool + 1 -> i64", lambda a: a + 1, np.array([True, False]), np.int64),
    ("bool + True -> bool", lambda a: a + True, np.array([True, False]), np.bool_),
    ("f32 + 1j -> c64", lambda a: a + 1j, np.array([1, 2], np.float32), np.complex64),
    ("i32 + 1j -> c128", lambda a: a + 1j, np.array([1, 2], np.int32), np.complex128),
    ("c64 * 2.0 stays c64", lambda a: a * 2.0, np.array([1j], np.complex64), np.complex64),
    ("f32 + f64 0-d array -> f64", lambda a: a + np.array(1.0), np.array([1], np.float32),
     np.float64),
    ("f32 + np.float64 -> f64", lambda a: a + np.float64(1), np.array([1], np.float32),
     np.float64),
    ("i32 / i32 -> f64", lambda a: a / a, np.array([1, 2], np.int32), np.float64),
    ("i32 // 0 -> 0", lambda a: a // 0, np.array([1, -2], np.int32), np.int32),
    ("i64 % 0 -> 0", lambda a: a % 0, np.array([5, -7]), np.int64),
    ("True + True", lambda a: a + a, np.array(True), np.bool_),
    ("bool * bool", lambda a: a * a, np.array([True, False]), np.bool_),
    ("abs c64 -> f32", abs, np.array([3 + 4j], np.complex64), np.float32),
    ("abs c128 -> f64", np.abs, np.array([3 + 4j]), np.float64),
    ("mean i32 -> f64", np.mean, np.array([1, 2], np.int32), np.float64),
    ("sum bool -> i64", np.sum, np.array([True, True]), np.int64),
    ("sum i32 -> i64", np.sum, np.array([1, 2], np.int32), np.int64),
    ("cumsum bool -> i64", np.cumsum, np.array([True, True]), np.int64),
    ("prod i32 -> i64", np.prod, np.array([3, 2], np.int32), np.int64),
    ("sqrt i32 -> f64", np.sqrt, np.array([4], np.int32), np.float64),
    ("real c64 -> f32", np.real, np.array([1 + 2j], np.complex64), np.float32),
    ("angle c64 -> f32", np.angle, np.array([1 + 2j], np.complex64), np.float32),
    ("var c64 -> f32", np.var, np.array([1 + 2j, 3j], np.complex64), np.float32),
    ("i32 ** 2 stays i32", lambda a: a ** 2, np.array([3], np.int32), np.int32),
    ("f32 ** 0.5 stays f32", lambda a: a ** 0.5, np.array([4], np.float32), np.float32),
    ("2 ** f32 stays f32", lambda a: 2 ** a, np.array([3], np.float32), np.float32),
    ("arctan2(f32, 0)", lambda a: np.arctan2(a, 0), np.array([1], np.float32), np.float32),
    ("where(c, f32, 0.5)", lambda a: np.where(a > 0, a, 0.5), np.array([1, -1], np.float32),
     np.float32),
    ("where(c, i32, 0.5)", lambda a: np.where(a > 0, a, 0.5), np.array([1, -1], np.int32),
     np.float64),
    ("clip i32", lambda a: np.clip(a, 0, 1), np.array([5, -5], np.int32), np.int32),
]


@pytest.mark.parametrize("name,fn,x,dtype", CORNERS, ids=[c[0] for c in CORNERS])
def test_promotion_corner_cases(name, fn, x, dtype):
    got = check(("corner", name), fn, x)
    assert np.asarray(got).dtype == np.dtype(dtype)


def test_weak_scalar_argument_is_traced_not_baked_in():
    f = tracejit.trace(lambda a, s: a * s + s)
    x = np.ones(3, np.float32)
    assert_same(f(x, 2.0), np.full(3, 4.0, np.float32))
    assert_same(f(x, -1.5), np.full(3, -3.0, np.float32))
    assert f.cache_info().traces == 1
    assert_same(f(x, 2), np.full(3, 4.0, np.float32))       # an int is another signature
    assert f.cache_info().traces == 2


def test_python_int_out_of_range_raises_like_numpy():
    x = np.array([1], np.int32)
    with pytest.raises(OverflowError):
        x + 2**40
    with pytest.raises(OverflowError):
        tracejit.trace(lambda a: a + 2**40)(x)
