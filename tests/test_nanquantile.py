"""np.nanquantile / np.nanpercentile on tracers (method 'linear'): bit for bit NumPy's values,
dtypes and shapes (axes, keepdims, scalar and array quantiles, all-NaN slices, infinities),
both backends; integer arrays (NumPy's quantile); derivatives (a gather and an interpolation)
against finite differences; the cases refused with a reason."""
import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import UnsupportedError
from tracejit.test_util import check_grads

rng = np.random.default_rng(1619)


def _data(dt, shape):
    a = rng.normal(size=shape).astype(dt)
    a[rng.uniform(size=shape) < 0.3] = np.nan
    a.reshape(-1)[:shape[-1]] = np.nan                   # an all-NaN slice along the last axis
    a.reshape(-1)[-2] = np.inf
    return a


CASES = [(0.3, None, False), (0.5, 1, False), (1.0, (0, 2), True), (0, -1, False),
         (np.array([0.1, 0.999, 0.5]), 1, True), (np.array([0, 1]), -1, False), (0.0, 0, False)]


def _bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=lambda d: d.__name__)
def test_matches_numpy(backend, dt):
    a = _data(dt, (3, 5, 4))
    cases = [c for c in CASES if dt == np.float64 or not isinstance(c[0], np.ndarray)]

    def f(a):
        return [fn(a, q * s, axis=ax, keepdims=kd) for q, ax, kd in cases
                for fn, s in ((np.nanquantile, 1), (np.nanpercentile, 100))]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # NumPy's all-NaN warning
        want = f(a)
    for g, w in zip(tj.trace(f, backend=backend)(a), want):
        _bits_equal(g, w)


def test_integers_and_derivatives(interpret_backend):
    ints = rng.integers(0, 9, (3, 5))
    _bits_equal(tj.trace(lambda a: np.nanquantile(a, 0.3, axis=1))(ints),
                np.nanquantile(ints, 0.3, axis=1))
    x = rng.normal(size=(2, 6))
    x[0, 1] = np.nan
    check_grads(lambda v: np.nanpercentile(v, 37.0, axis=1), (x,), order=2,
                modes=("fwd", "rev"))


def test_refused_with_a_reason():
    a = _data(np.float32, (2, 4))
    with pytest.raises(UnsupportedError, match="float64"):
        tj.trace(lambda v: np.nanquantile(v, np.array([0.2, 0.4])))(a)
    with pytest.raises(UnsupportedError, match="linear"):
        tj.trace(lambda v: np.nanquantile(v, 0.2, method="lower"))(a.astype(np.float64))
