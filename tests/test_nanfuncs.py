"""NaN-ignoring reductions on tracers (numpy/nanfuncs.py) against NumPy: values and dtypes on
both backends (bit for bit on the interpreter, which runs NumPy's own steps; to a few ulps on
llvm, whose sums are vectorised in another order), all-NaN slices, ddof, keepdims, integer and
complex inputs, nanargmax's run-time ValueError, derivatives."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(3)
X = rng.standard_normal((4, 6))
X[0, 1] = X[2, 2] = X[2, 5] = np.nan
X[3, :] = np.nan                                   # an all-NaN row
ARRAYS = {"f64": X, "f32": X.astype(np.float32), "i64": rng.integers(-4, 9, (3, 5)),
          "c128": X + 1j * rng.standard_normal(X.shape)}
NAMES = ["nanmax", "nanmin", "nanprod", "nanmean", "nanvar", "nanstd", "nancumsum",
         "nancumprod", "nanmedian"]
KWARGS = [{}, {"axis": 1}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": 1, "ddof": 1}]


def _cases():
    for name in NAMES:
        for dt in ARRAYS:
            if dt == "c128" and name in ("nanmax", "nanmin", "nanmedian"):
                continue
            for kw in KWARGS:
                if "ddof" in kw and name not in ("nanvar", "nanstd") or \
                        "keepdims" in kw and "cum" in name:
                    continue
                yield name, dt, kw


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, dt, kw", list(_cases()), ids=str)
def test_matches_numpy(backend, name, dt, kw):
    a = ARRAYS[dt]

    def f(a):
        return getattr(np, name)(a, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(f(a))
    got = np.asarray(tj.jit(f, backend=backend)(a))
    assert got.dtype == want.dtype and got.shape == want.shape
    if backend == "interpret":
        np.testing.assert_array_equal(got, want)
    else:
        rtol = 1e-6 if dt == "f32" else 1e-13
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanarg_raises_for_an_all_nan_slice(backend, name):
    f = tj.jit(lambda a: getattr(np, name)(a, axis=1), backend=backend)
    np.testing.assert_array_equal(f(X[:3]), getattr(np, name)(X[:3], axis=1))
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        getattr(np, name)(X, axis=1)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        f(X)


def test_derivatives_ignore_the_nans():
    x = np.where(np.isnan(X[:3]), np.nan, rng.standard_normal((3, 6)))
    for name in ("nanmean", "nanvar", "nanmax", "nanmedian"):
        check_grads(lambda a: np.sum(getattr(np, name)(np.where(np.isnan(x), np.nan, a),
                                                       axis=1) * np.arange(1.0, 4.0)),
                    (np.nan_to_num(x),), order=2, modes=("fwd", "rev"))
