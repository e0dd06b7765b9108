"""convolve, correlate, interp, unwrap, digitize, isin on tracers (numpy/signal.py) against
NumPy on both backends, every mode and length order, complex kernels, interp's special cases
(repeated breakpoints, infinite values, NaN, left/right), and derivatives."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(2)


def _signal(n, dt):
    if dt == "complex":
        return rng.standard_normal(n) + 1j * rng.standard_normal(n)
    if dt == "int":
        return rng.integers(-3, 4, n)
    return rng.standard_normal(n)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [np.convolve, np.correlate], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", ["float", "complex", "int"])
def test_convolve_and_correlate(backend, fn, dt):
    for n, m in ((7, 3), (3, 7), (5, 5), (6, 1), (1, 4), (8, 4)):
        a, v = _signal(n, dt), _signal(m, dt)
        for mode in ("full", "same", "valid"):
            want = fn(a, v, mode)
            got = tj.jit(lambda a, v: fn(a, v, mode), backend=backend)(a, v)
            assert got.dtype == want.dtype and got.shape == want.shape, (n, m, mode)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_interp_special_cases(backend):
    xp = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
    x = np.array([-1, 0, 0.5, 1.0, 1.2, 2.5, 3.0, 4.0, 5.0, np.nan])
    for fp in (np.array([1.0, 2.0, 3.0, np.inf, -1.0]), np.array([1.0, 2.0, 3.0, 4.0, -1.0])):
        for kw in ({}, {"left": -9.0, "right": 9.0}):
            got = tj.jit(lambda x, xp, fp: np.interp(x, xp, fp, **kw), backend=backend)(x, xp, fp)
            np.testing.assert_array_equal(got, np.interp(x, xp, fp, **kw))


@pytest.mark.parametrize("backend", BACKENDS)
def test_unwrap_digitize_isin(backend):
    p = np.cumsum(rng.standard_normal((3, 20)) * 2, axis=1)
    for kw in ({}, {"axis": 0}, {"discont": 4.0}, {"period": 360}):
        np.testing.assert_allclose(tj.jit(lambda p: np.unwrap(p, **kw), backend=backend)(p),
                                   np.unwrap(p, **kw), rtol=1e-13)
    xs = rng.standard_normal(12)
    for bins in (np.array([-1.0, 0.0, 0.5, 2.0]), np.array([2.0, 0.5, 0.0, -1.0])):
        for right in (False, True):
            np.testing.assert_array_equal(
                tj.jit(lambda x: np.digitize(x, bins, right), backend=backend)(xs),
                np.digitize(xs, bins, right))
    xi, t = rng.integers(0, 6, (3, 4)), np.array([1, 3, 5])
    for invert in (False, True):
        np.testing.assert_array_equal(
            tj.jit(lambda x, t: np.isin(x, t, invert=invert), backend=backend)(xi, t),
            np.isin(xi, t, invert=invert))


def test_derivatives():
    check_grads(lambda a, v: np.convolve(a, v, "same"), (rng.standard_normal(6),
                                                         rng.standard_normal(3)),
                order=2, modes=("fwd", "rev"))
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    check_grads(lambda fp, x: np.interp(x, xp, fp), (rng.standard_normal(4),
                                                     np.array([0.3, 1.7, 3.2])),
                order=2, modes=("fwd", "rev"))


def test_errors():
    with pytest.raises(ValueError, match="mode"):
        tj.jit(lambda a: np.convolve(a, a, "bogus"), backend="interpret")(np.ones(3))
    with pytest.raises(ValueError, match="monotonically"):
        tj.jit(lambda x: np.digitize(x, np.array([0.0, 2.0, 1.0])), backend="interpret")(
            np.ones(3))
    with pytest.raises(tj.errors.ConcretizationError, match="traced bins"):
        tj.jit(lambda x, b: np.digitize(x, b), backend="interpret")(np.ones(3), np.arange(3.0))
