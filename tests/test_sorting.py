"""Sorting and order statistics on tracers (ops/sorting.py, numpy/sorting.py) against NumPy on
both backends: sort/argsort (axes, NaN last, ties), partition, searchsorted, median, quantile
and percentile (methods, q shapes, keepdims, axis tuples, NaN slices, dtypes to the bit),
ndarray.sort in place; derivatives through sort and order statistics; vmap; errors."""
from __future__ import annotations

import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(11)
X = rng.standard_normal((5, 7))
X[1, 3] = np.nan                                        # one slice with a NaN
XI = rng.integers(-5, 5, (6, 4))                        # ties
XF = rng.standard_normal(9).astype(np.float32)
XT = rng.integers(0, 3, 40).astype(np.float64)          # many ties, longer than 16

CASES = [
    ("sort", lambda a: np.sort(a), X), ("sort axis 0", lambda a: np.sort(a, axis=0), X),
    ("sort flat", lambda a: np.sort(a, axis=None), X), ("sort ints", lambda a: np.sort(a), XI),
    ("argsort stable", lambda a: np.argsort(a, kind="stable"), XT),
    ("argsort default", lambda a: np.argsort(a), XT),
    ("argsort axis 0", lambda a: np.argsort(a, axis=0, stable=True), XI),
    ("median", lambda a: np.median(a), X), ("median axis 1", lambda a: np.median(a, axis=1), X),
    ("median even", lambda a: np.median(a[:, :4], axis=1), X),
    ("median keepdims", lambda a: np.median(a, axis=0, keepdims=True), XI),
    ("median f32", lambda a: np.median(a), XF),
    ("median axes", lambda a: np.median(a, axis=(0, 1)), XI),
    ("percentile f32", lambda a: np.percentile(a, 30), XF),
    ("percentile list", lambda a: np.percentile(a, [10, 50, 99], axis=0), XI),
    ("quantile", lambda a: np.quantile(a, 0.25, axis=1), X),
    ("quantile array keepdims",
     lambda a: np.quantile(a, np.array([0.1, 0.9]), axis=1, keepdims=True), X),
    ("quantile int q", lambda a: np.quantile(a, 1, axis=0), XI),
    ("quantile ints", lambda a: np.quantile(a, 0.5), XI),
    ("nearest", lambda a: np.quantile(a, [0.3, 0.7], method="nearest"), XF),
    ("lower", lambda a: np.quantile(a, 0.3, method="lower", axis=1), X),
    ("higher", lambda a: np.percentile(a, 41, method="higher"), XI),
    ("midpoint", lambda a: np.quantile(a, 0.3, method="midpoint"), XI),
    ("hazen", lambda a: np.quantile(a, 0.3, method="hazen", axis=(0, 1)), X),
    ("weibull 2-d q", lambda a: np.quantile(a, np.array([[0.2], [0.4]]), method="weibull"), XF),
    ("averaged", lambda a: np.quantile(a, 0.33, method="averaged_inverted_cdf"), XI),
    ("median_unbiased", lambda a: np.quantile(a, [0.0, 1.0], method="median_unbiased"), XF),
    ("weibull int q", lambda a: np.quantile(a, 1, axis=0, method="weibull"), X),   # fuzz 2024 #384
    ("hazen int q", lambda a: np.percentile(a, [0, 100], method="hazen"), XI),
    ("searchsorted", lambda a: np.searchsorted(np.sort(a.ravel()), a), X),
    ("searchsorted right", lambda a: np.searchsorted(np.sort(a[0]), a, side="right"), XI),
    ("searchsorted sorter", lambda a: np.searchsorted(a[0], a[1], sorter=np.argsort(a[0])), XI),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, fn, a", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy_to_the_bit(backend, name, fn, a):
    want = np.asarray(fn(a.copy()))
    got = np.asarray(tj.jit(fn, backend=backend)(a.copy()))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_partition_puts_every_kth_in_place(backend):
    got = tj.jit(lambda a: np.partition(a, [1, 5]), backend=backend)(XF)
    want = np.partition(XF, [1, 5])
    assert got[1] == want[1] and got[5] == want[5] and got.dtype == want.dtype
    assert np.all(got[:1] <= got[1]) and np.all(got[6:] >= got[5])
    idx = tj.jit(lambda a: np.argpartition(a, 3), backend=backend)(XF)
    assert XF[idx][3] == np.sort(XF)[3]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sort_in_place_is_seen_by_views_and_the_caller(backend):
    def f(a):
        row = a[1]
        a.sort(axis=0)
        return row.copy(), a.argsort(kind="stable")
    a, b = X.copy(), X.copy()
    want = f(a)
    got = tj.jit(f, backend=backend)(b)
    np.testing.assert_array_equal(b, a)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_derivatives_permute_and_interpolate():
    check_grads(lambda a: np.sort(a, axis=0) * np.arange(5.0)[:, None],
                (rng.standard_normal((5, 3)),), order=2, modes=("fwd", "rev"))
    check_grads(lambda a: np.median(a, axis=1) + np.percentile(a, [20, 70], axis=1).sum(0),
                (rng.standard_normal((3, 6)),), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_vmap(backend):
    sorted_rows = np.sort(np.nan_to_num(X), axis=1)
    got = tj.jit(tj.vmap(lambda a, v: (np.sort(a), np.searchsorted(a, v, side="right"))),
                 backend=backend)(sorted_rows[:, ::-1].copy(), sorted_rows[:, :2] + 0.0)
    np.testing.assert_array_equal(got[0], sorted_rows)
    np.testing.assert_array_equal(got[1], [np.searchsorted(r, v, side="right")
                                           for r, v in zip(sorted_rows, sorted_rows[:, :2])])
    nan_rows = np.array([[0.0, 1.0, np.nan], [0.0, 2.0, 3.0]])
    got = tj.vmap(lambda a, v: np.searchsorted(a, v))(nan_rows, np.array([[np.nan, 1.0]] * 2))
    np.testing.assert_array_equal(got, [np.searchsorted(r, [np.nan, 1.0]) for r in nan_rows])


@pytest.mark.parametrize("call, error, match", [
    (lambda a: np.quantile(a, 0.5, method="inverted_cdf"), tj.errors.UnsupportedError,
     "not supported"),
    (lambda a: np.quantile(a, 0.5, method="bogus"), ValueError, "not supported"),
    (lambda a: np.quantile(a, 1.5), ValueError, "range"),
    (lambda a: np.percentile(a, -1), ValueError, "range"),
    (lambda a: np.quantile(a, a[0]), tj.errors.ConcretizationError, "traced quantiles"),
    (lambda a: np.partition(a, 20), ValueError, "out of bounds"),
    (lambda a: np.sort(a, order="x"), tj.errors.UnsupportedError, "structured"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        tj.jit(call, backend="interpret")(XF)
