"""unique with a static size (JAX's size=/fill_value=), polyfit and apply_along_axis /
apply_over_axes on tracers, against NumPy on seeded random inputs on both backends; derivatives
against finite differences; vmap; the errors for what cannot be traced."""
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.test_util import check_grads

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(16)
XU = rng.integers(0, 7, (5, 6)).astype(np.float64)
XU[0, 0] = XU[2, 3] = np.nan                    # NaNs collapse into one (equal_nan)
XI = rng.integers(-3, 4, 40).astype(np.int32)


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
        assert np.array_equal(g, w, equal_nan=True), (g, w)


def _padded_numpy(x, size, fill_value, flags):
    """NumPy's unique, then JAX's padding rule (values: fill_value or the smallest value;
    first indices: the smallest value's; counts: 0), written out from NumPy's results."""
    res = np.unique(x, *flags)
    res = list(res) if any(flags) else [res]
    k = len(res[0])
    fill = res[0][0] if fill_value is None else fill_value
    res[0] = np.concatenate([res[0][:size], np.full(max(0, size - k), fill, res[0].dtype)])
    pos = 1
    if flags[0]:
        res[1] = np.concatenate([res[1][:size], np.full(max(0, size - k), res[1][0])])
        pos = 2
    pos += flags[1]
    if flags[2]:
        res[pos] = np.concatenate([res[pos][:size], np.zeros(max(0, size - k), np.int64)])
    return tuple(res) if any(flags) else res[0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("x", [XU, XI], ids=["floats with NaN", "int32"])
def test_unique_with_size_matches_numpy_padded(backend, x):
    cases = [(3, None, (False, False, False)), (7, None, (True, True, True)),
             (12, -1, (True, False, True)), (12, None, (False, True, False))]
    f = tj.jit(lambda a: tuple(tnp.unique(a, *fl, size=s, fill_value=fv)
                               for s, fv, fl in cases), backend=backend)
    for (s, fv, fl), got in zip(cases, f(x)):
        want = _padded_numpy(x, s, fv, fl)
        _same(got, want)
        _same(tnp.unique(x, *fl, size=s, fill_value=fv), want)      # concrete: the same rule


def test_unique_of_empty_and_errors():
    e = np.zeros(0)
    _same(tj.jit(lambda a: tnp.unique(a, True, True, True, size=2))(e),
          tnp.unique(e, True, True, True, size=2))
    with pytest.raises(tj.ConcretizationError, match="size=n"):
        tj.jit(lambda a: np.unique(a))(XU)
    with pytest.raises(tj.UnsupportedError, match="axis"):
        tj.jit(lambda a: tnp.unique(a, axis=0, size=3))(XU)


def test_unique_values_derivative_and_vmap():
    x = rng.standard_normal(9)                    # distinct values: unique is the sort
    f = tj.jit(lambda a: np.sum(tnp.unique(a, size=9) ** 2 * np.arange(9.0)), backend="llvm")
    check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    v = tj.jit(tj.vmap(lambda a: tnp.unique(a, return_counts=True, size=8)), backend="llvm")
    got = v(XI.reshape(5, 8))
    for row, vals, counts in zip(XI.reshape(5, 8), *got):
        _same((vals, counts), _padded_numpy(row, 8, None, (False, False, True)))


POLY = rng.standard_normal((2, 25))
Y2 = rng.standard_normal((25, 3))
W = rng.random(25) + 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_polyfit_matches_numpy(backend):
    def fn(x, y, y2, w):
        return (np.polyfit(x, y, 3), np.polyfit(x, y2, 2, w=w),
                *np.polyfit(x, y, 4, full=True)[:2], *np.polyfit(x, y, 2, cov=True),
                *np.polyfit(x, y2, 1, cov="unscaled"))
    args = (POLY[0], POLY[1], Y2, W)
    for k, (got, want) in enumerate(zip(tj.jit(fn, backend=backend)(*args), fn(*args))):
        assert got.shape == want.shape and got.dtype == want.dtype, k
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=str(k))


def test_polyfit_derivatives():
    f = tj.jit(lambda x, y: np.sum(np.polyfit(x, y, 2) ** 2), backend="llvm")
    check_grads(f, (POLY[0][:8], POLY[1][:8]), order=2, modes=("fwd", "rev"))


X3 = rng.standard_normal((3, 4, 5))


def _stats(r):
    return np.stack([np.sum(r), np.max(r ** 2), r[0] * r[-1]])


APPLY = [
    ("scalar per row", lambda a: np.apply_along_axis(np.sum, 0, a)),
    ("vector per row", lambda a: np.apply_along_axis(_stats, 1, a)),
    ("matrix per row", lambda a: np.apply_along_axis(np.diag, -1, a)),
    ("extra args", lambda a: np.apply_along_axis(np.roll, 2, a, 2)),
    ("over axes", lambda a: np.apply_over_axes(np.sum, a, [0, 2])),
    ("over one axis", lambda a: np.apply_over_axes(np.mean, a, -1)),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_apply_along_and_over_axes_match_numpy(backend):
    f = tj.jit(lambda a: tuple(fn(a) for _, fn in APPLY), backend=backend)
    for (label, fn), got in zip(APPLY, f(X3)):
        want = fn(X3)
        assert got.shape == want.shape and got.dtype == want.dtype, label
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=label)


def test_apply_along_axis_derivatives_vmap_and_errors():
    f = tj.jit(lambda a: np.sum(np.apply_along_axis(_stats, 1, a) ** 2), backend="llvm")
    check_grads(f, (X3,), order=2, modes=("fwd", "rev"))
    v = tj.jit(tj.vmap(lambda a: np.apply_along_axis(_stats, 0, a)), backend="llvm")
    np.testing.assert_allclose(v(X3), np.stack([np.apply_along_axis(_stats, 0, a) for a in X3]),
                               rtol=1e-13)
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        tj.jit(lambda a: np.apply_along_axis(np.sum, 1, a))(np.zeros((0, 3)))
