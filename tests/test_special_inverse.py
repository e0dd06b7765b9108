"""scipy.special gammaincinv and betaincinv on tracers (numpy/special_inverse.py): values
against SciPy on seeded random points over wide ranges (tails included) on both backends, the
special values (0, 1, inf, NaN, out-of-domain) exactly, float32 operands, vmap, derivatives in p
and y against finite differences (order 2, both modes), the error for a derivative in a shape
parameter."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import UnsupportedError
from tracejit.scipy import special as tsp
from tracejit.test_util import check_grads

sp = pytest.importorskip("scipy.special", reason="SciPy is the oracle of the value tests")

rng = np.random.default_rng(1617)
N = 60


def _gamma_points():
    a = 10 ** rng.uniform(-2, 3, N)
    p = rng.uniform(0, 1, N)
    p[:10] = 10 ** rng.uniform(-200, -1, 10)                  # the lower tail
    p[10:20] = 1 - 10 ** rng.uniform(-15, -1, 10)             # the upper tail
    return a, p


def _beta_points():
    a, b = 10 ** rng.uniform(-2, 2.5, N), 10 ** rng.uniform(-2, 2.5, N)
    y = rng.uniform(0, 1, N)
    y[:10] = 10 ** rng.uniform(-200, -1, 10)
    y[10:20] = 1 - 10 ** rng.uniform(-15, -1, 10)
    return a, b, y


def _close(got, want, rtol, forward, target):
    """Equal within ``rtol`` where SciPy's answer is a normal number (below that the true
    value underflows: SciPy returns the smallest normal, tracejit 0). Where SciPy gives NaN
    for valid operands (its iteration failed, deep in a tail) the answer must map back to the
    target through the forward function."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and not np.isnan(got).any()
    normal = want > 1e-290
    np.testing.assert_allclose(got[normal], want[normal], rtol=rtol)
    failed = np.isnan(want)
    np.testing.assert_allclose(forward(got)[failed], target[failed], rtol=1e-8)


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
def test_values_against_scipy(backend):
    a, p = _gamma_points()
    ab, bb, y = _beta_points()
    if backend == "interpret":          # NumPy runs every lane through every iteration: a few
        k = np.r_[0:4, 10:14, 20:26]    # points of each kind
        a, p, ab, bb, y = a[k], p[k], ab[k], bb[k], y[k]
    f = tj.jit(lambda a, p, ab, bb, y: (tsp.gammaincinv(a, p), tsp.betaincinv(ab, bb, y)),
               backend=backend)
    g, h = f(a, p, ab, bb, y)
    _close(g, sp.gammaincinv(a, p), 1e-11, lambda x: sp.gammainc(a, x), p)
    _close(h, sp.betaincinv(ab, bb, y), 1e-10, lambda x: sp.betainc(ab, bb, x), y)


def test_special_values_and_float32():
    a = np.array([0.0, 0.0, 0.0, 2.0, 2.0, np.inf, np.inf, -1.0, 2.0, np.nan, 2.0, 2.0, 1e-300])
    p = np.array([0.0, 0.5, 1.0, 0.0, 1.0, 0.5, 1.0, 0.5, 1.5, 0.5, np.nan, -0.1, 0.5])
    got = tj.jit(tsp.gammaincinv)(a, p)
    np.testing.assert_array_equal(got, sp.gammaincinv(a, p))
    a = np.array([0.0, 1.0, 2.0, 2.0, np.inf, 1.0, np.inf, np.inf, 1.0, 2.0, np.nan, 2.0])
    b = np.array([1.0, 0.0, 3.0, 3.0, 1.0, np.inf, np.inf, np.inf, np.inf, 3.0, 1.0, 3.0])
    y = np.array([0.5, 0.5, 0.0, 1.0, 0.5, 0.5, 0.5, 0.0, 1.0, 1.5, 0.5, np.nan])
    got = tj.jit(tsp.betaincinv)(a, b, y)
    np.testing.assert_array_equal(got, sp.betaincinv(a, b, y))
    a32, p32 = np.float32([0.5, 3.0]), np.float32([0.25, 0.75])
    out = tj.jit(tsp.gammaincinv)(a32, p32)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, sp.gammaincinv(a32, p32), rtol=1e-6)


def test_numpy_style_dispatch_and_vmap():
    a, p = np.array([0.5, 2.0, 30.0]), np.array([[0.1, 0.5, 0.9], [0.01, 0.3, 0.99]])
    f = tj.jit(tj.vmap(lambda q: sp.gammaincinv(a, q) + sp.betaincinv(a, 2.0, q)))
    np.testing.assert_allclose(f(p), sp.gammaincinv(a, p) + sp.betaincinv(a, 2.0, p),
                               rtol=1e-12)


def test_derivatives_in_p_and_y():
    p = np.array([0.05, 0.4, 0.93])
    check_grads(tj.jit(lambda q: tsp.gammaincinv(np.array([0.7, 3.0, 12.0]), q)), (p,),
                order=2, modes=("fwd", "rev"))
    check_grads(tj.jit(lambda q: tsp.betaincinv(np.array([0.7, 3.0, 12.0]), 2.5, q)), (p,),
                order=2, modes=("fwd", "rev"))
    with pytest.raises(UnsupportedError, match="shape parameter"):
        tj.grad(lambda a: tsp.gammaincinv(a, 0.3))(2.0)
    with pytest.raises(UnsupportedError, match="shape parameter"):
        tj.grad(lambda b: tsp.betaincinv(2.0, b, 0.3))(2.0)
