"""Places where a trace could silently change what NumPy code means: signed zeros of empty and
all-negative-zero sums, hashing a tracer, array subclasses, ndarray methods tracejit lacks."""
import numpy as np
import pytest

import tracejit as tj


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
def test_sums_of_nothing_and_of_negative_zeros_are_positive_zero(backend):
    f = tj.jit(lambda x: (np.sum(x), np.sum(x, axis=0), np.sum(x * 1j), np.mean(x, axis=-1)),
               backend=backend)
    for x in (np.zeros(0), np.zeros((0, 3)), -np.zeros((5, 3)), np.array([-0.0])):
        for got, want in zip(f(x), f.fun(x)):
            np.testing.assert_array_equal(got, want)
            assert np.all(np.signbit(np.real(got)) == np.signbit(np.real(want))), (x, got)


def test_a_tracer_is_unhashable_like_an_ndarray():
    with pytest.raises(TypeError, match="unhashable"):
        tj.jit(lambda x: {x: 1}[x])(np.ones(2))


@pytest.mark.parametrize("make", [lambda: np.matrix([[1., 2.], [3., 4.]]),
                                  lambda: np.ma.masked_array([1., 2.], mask=[0, 1])])
def test_array_subclasses_are_refused_not_reinterpreted(make):
    x = make()
    with pytest.raises(tj.InputError, match="subclass"):
        tj.jit(lambda a: a * a)(x)
    with pytest.raises(tj.InputError, match="subclass"):
        tj.grad(lambda a: np.sum(a * a))(x)
    np.testing.assert_array_equal(tj.jit(lambda a: a * a)(np.asarray(x)),
                                  np.asarray(x) * np.asarray(x))


@pytest.mark.parametrize("method", ["partition", "resize", "byteswap"])
def test_missing_ndarray_methods_say_so(method):
    with pytest.raises(tj.UnsupportedError, match=f"ndarray.{method}"):
        tj.jit(lambda x: getattr(x, method)(0))(np.ones(3))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        tj.jit(lambda x: x.nonsense)(np.ones(3))


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64])
def test_narrow_and_unsigned_ints_are_native_not_widened(dtype):
    # int8 100 + 100 is -56 in NumPy; widening to int32 gave 200 (a silently different answer,
    # once refused; tests/test_narrow_ints.py has the whole surface)
    x = np.array([100, 127], dtype)
    got = tj.jit(lambda x: x + x)(x)
    assert got.dtype == x.dtype and np.array_equal(got, x + x)
    got = tj.jit(lambda x: x.astype(dtype))(np.ones(2))
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, [1, 1])
    np.testing.assert_array_equal(tj.jit(lambda x: x[np.array([0, 2], dtype)])(np.arange(3.)),
                                  [0., 2.])


@pytest.mark.parametrize("name", ["amax", "max", "min", "sum", "prod", "ptp", "nansum",
                                  "cumsum", "cumprod", "mean"])
def test_reductions_of_python_scalars_are_strongly_typed(name):
    # fuzz 851 #481: np.amax(2.0) is an np.float64, which promotes a float32 array to float64
    fn = getattr(np, name)
    x = np.ones(2, np.float32)
    want = x * fn(2.0)
    got = tj.trace(lambda a: x * fn(a))(2.0)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
