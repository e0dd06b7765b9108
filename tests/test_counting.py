"""np.histogram and tracejit.numpy.bincount on tracers (tracejit/numpy/counting.py) against
NumPy on both backends: equal-width and given bins, range, weights, density, values on the
edges, NaN; derivatives in the weights; vmap; the errors NumPy raises."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.test_util import check_grads

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(7)
DATA = {
    "normal": rng.standard_normal(300),
    "on edges": rng.integers(0, 21, 400) / 7.0,     # many values on bin edges
    "float32": rng.standard_normal(200).astype(np.float32),
    "ints": rng.integers(-5, 9, (10, 6)),
    "constant": np.full(7, 2.5),
    "one": np.array([3.0]),
}
BINS = [dict(), dict(bins=7), dict(bins=3, range=(-1, 1)), dict(bins=6, range=(0, 2)),
        dict(bins=[-2, -0.5, 0, 0.1, 1.0, 3]), dict(bins=5, density=True),
        dict(bins=[0.0, 1.0, 2.0], density=True)]


def _agree(got, want, rtol=1e-12):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(DATA))
def test_histogram_matches_numpy(backend, name):
    a = DATA[name]
    w = rng.standard_normal(a.shape)
    for kw in BINS:
        _agree(tj.jit(lambda a: np.histogram(a, **kw), backend=backend)(a), np.histogram(a, **kw))
        _agree(tj.jit(lambda a, w: np.histogram(a, weights=w, **kw), backend=backend)(a, w),
               np.histogram(a, weights=w, **kw))


@pytest.mark.parametrize("backend", BACKENDS)
def test_histogram_drops_nan_and_outside_values_given_a_range(backend):
    a = np.array([np.nan, -3.0, 0.5, 1.0, 2.0, np.inf, 0.0])
    for kw in (dict(bins=4, range=(0, 1)), dict(bins=[0.0, 0.5, 1.0])):
        _agree(tj.jit(lambda a: np.histogram(a, **kw), backend=backend)(a), np.histogram(a, **kw))


@pytest.mark.parametrize("backend", BACKENDS)
def test_histogram_of_non_finite_data_without_a_range_raises(backend):
    f = tj.jit(lambda a: np.histogram(a, 4), backend=backend)
    _agree(f(np.arange(5.0)), np.histogram(np.arange(5.0), 4))
    for bad in (np.array([0.0, np.nan, 1.0]), np.array([0.0, np.inf])):
        with pytest.raises(ValueError, match="range"):
            np.histogram(bad, 4)
        with pytest.raises(ValueError, match="not finite"):
            f(bad)


def test_histogram_is_differentiable_in_its_weights():
    a = DATA["on edges"][:50]
    check_grads(lambda w: np.histogram(a, 5, weights=w)[0] * np.arange(5.0), (rng.random(50),),
                order=2, modes=("fwd", "rev"))
    check_grads(lambda w: np.histogram(a, [0.0, 1.0, 1.5, 3.0], weights=w)[0],
                (rng.random(50),), order=1, modes=("fwd", "rev"))


def test_histogram_under_vmap():
    a = rng.standard_normal((4, 30))
    got = tj.vmap(lambda x: np.histogram(x, 5)[0])(a)
    np.testing.assert_array_equal(got, [np.histogram(x, 5)[0] for x in a])


@pytest.mark.parametrize("kw, error, match", [
    (dict(bins=0), ValueError, "must be positive"),
    (dict(bins="auto"), tj.errors.UnsupportedError, "estimator"),
    (dict(bins=[0.0, 2.0, 1.0]), ValueError, "monotonically"),
    (dict(bins=3, range=(1, 0)), ValueError, "max must be larger"),
    (dict(bins=3, weights=np.ones(4)), ValueError, "same shape"),
])
def test_histogram_errors(kw, error, match):
    with pytest.raises(error, match=match):
        tj.jit(lambda a: np.histogram(a, **kw), backend="interpret")(np.arange(5.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_bincount_with_a_static_length(backend):
    x = rng.integers(0, 6, 40)
    w = rng.standard_normal(40)
    f = tj.jit(lambda x: tnp.bincount(x, length=8), backend=backend)
    np.testing.assert_array_equal(f(x), np.bincount(x, minlength=8))
    g = tj.jit(lambda x, w: tnp.bincount(x, w, length=4), backend=backend)
    np.testing.assert_allclose(g(x, w), np.bincount(x, w)[:4], rtol=1e-12)   # beyond: dropped
    with pytest.raises(ValueError, match="negative"):
        f(np.array([1, -1]))
    with pytest.raises(tj.errors.ConcretizationError, match="length="):
        tj.jit(tnp.bincount, backend=backend)(x)
    np.testing.assert_array_equal(tnp.bincount(x), np.bincount(x))             # concrete: NumPy
