"""NumPy's remaining float functions and array-API spellings on tracers (numpy/floatfns.py)
against NumPy on both backends: values (special values included) and dtypes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracejit as tj

BACKENDS = ("interpret", "llvm")
rng = np.random.default_rng(5)
X = np.array([-np.inf, -2.5, -0.0, 0.0, 1.5, np.inf, np.nan])
Y = rng.standard_normal(7)
ARRAYS = {"f64": X, "f32": X.astype(np.float32), "i64": np.arange(-3, 4)}
M = rng.standard_normal((3, 4))
V = rng.standard_normal(4)
C = M + 1j * rng.standard_normal((3, 4))

ELEMENTWISE = {
    "fabs": lambda a, b: np.fabs(a), "heaviside": lambda a, b: np.heaviside(a, b),
    "heaviside scalar": lambda a, b: np.heaviside(a, 0.5),
    "float_power": lambda a, b: np.float_power(a, 2),
    "logaddexp2": lambda a, b: np.logaddexp2(a, b), "isposinf": lambda a, b: np.isposinf(a),
    "isneginf": lambda a, b: np.isneginf(a), "nan_to_num": lambda a, b: np.nan_to_num(a),
    "nan_to_num values": lambda a, b: np.nan_to_num(a, nan=-1.0, posinf=9.0),
    "cumulative_sum": lambda a, b: np.cumulative_sum(a, include_initial=True),
    "cumulative_prod": lambda a, b: np.cumulative_prod(b),
    "astype": lambda a, b: np.astype(a, np.float32),
    "unstack": lambda a, b: np.unstack(np.outer(a, b), axis=1)[2],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("dt", list(ARRAYS))
def test_matches_numpy(backend, name, dt):
    f, a = ELEMENTWISE[name], ARRAYS[dt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.asarray(f(a, Y))
        got = np.asarray(tj.jit(f, backend=backend)(a, Y))
    assert got.dtype == want.dtype and got.shape == want.shape
    # logaddexp2 goes through log1p/exp2 (NumPy's own formula differs in the last place)
    rtol = 1e-14 if name == "logaddexp2" else 0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, f", [
    ("vecdot", lambda m, v: np.vecdot(m, v)), ("matvec", lambda m, v: np.matvec(m, v)),
    ("vecmat", lambda m, v: np.vecmat(m.T[0], m)), ("vecdot self", lambda m, v: np.vecdot(m, m)),
])
def test_array_api_products(backend, name, f):
    for a in (M, C):
        want, got = f(a, V), tj.jit(f, backend=backend)(a, V)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_complex_inputs_are_refused_as_numpy_does():
    with pytest.raises(Exception):
        np.fabs(C)
    with pytest.raises(tj.errors.DTypeError):
        tj.jit(np.fabs, backend="interpret")(C)
    with pytest.raises(TypeError):
        tj.jit(np.isposinf, backend="interpret")(C)
