"""tracejit.scipy.stats on tracers against scipy.stats on ndarrays (both backends, float64 and
float32), derivatives in x and in the parameters against finite differences (order 2, both
modes), the methods tracejit does not have raising clearly; and the derivative convention of
np.std/np.var at constant data (issue 16 item 6)."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import UnsupportedError
from tracejit.test_util import check_grads
import tracejit.scipy.stats as st

ss = pytest.importorskip("scipy.stats", reason="SciPy is the oracle of the value tests")

rng = np.random.default_rng(16)
X = rng.normal(size=(3, 5)) * 2
POS = np.abs(X) + 0.05
UNIT = rng.uniform(0, 1, (3, 5))
UNIT[0, :3] = [0.0, 1.0, 1.5]                    # support edges and outside
K = np.arange(15.0).reshape(3, 5) - 2            # negative counts are outside the support
K[0, 0] = 2.5                                    # not an integer
ALPHA = np.array([1.5, 2.0, 0.7])
SIMPLEX = rng.dirichlet(ALPHA, 5).T              # components along the first axis (SciPy)
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
MEAN = np.array([0.5, -1.0, 0.2])

# name -> (ours(x), SciPy's(x), x)
CASES = {
    "norm.logpdf": (lambda x: st.norm.logpdf(x, 1.0, 2.0), lambda x: ss.norm.logpdf(x, 1.0, 2.0),
                    X),
    "norm.pdf": (lambda x: st.norm.pdf(x, loc=-1.0), lambda x: ss.norm.pdf(x, loc=-1.0), X),
    "norm.cdf": (lambda x: st.norm.cdf(x, 0.5, 3.0), lambda x: ss.norm.cdf(x, 0.5, 3.0), X * 10),
    "norm.logcdf": (lambda x: st.norm.logcdf(x), lambda x: ss.norm.logcdf(x), X * 10),
    "norm.sf": (lambda x: st.norm.sf(x, scale=2.0), lambda x: ss.norm.sf(x, scale=2.0), X * 5),
    "norm.logsf": (lambda x: st.norm.logsf(x), lambda x: ss.norm.logsf(x), X * 10),
    "norm.ppf": (lambda q: st.norm.ppf(q, 1.0, 2.0), lambda q: ss.norm.ppf(q, 1.0, 2.0), UNIT),
    "norm bad scale": (lambda x: st.norm.logpdf(x, 0.0, -1.0),
                       lambda x: ss.norm.logpdf(x, 0.0, -1.0), X),
    "t.logpdf": (lambda x: st.t.logpdf(x, 3.5, 1.0, 2.0), lambda x: ss.t.logpdf(x, 3.5, 1.0, 2.0),
                 X),
    "t.pdf df": (lambda x: st.t.pdf(1.5, x), lambda x: ss.t.pdf(1.5, x), POS),
    "gamma.logpdf": (lambda x: st.gamma.logpdf(x, 2.5, scale=2.0),
                     lambda x: ss.gamma.logpdf(x, 2.5, scale=2.0), X),
    "gamma.logpdf a": (lambda a: st.gamma.logpdf(1.5, a, loc=0.5),
                       lambda a: ss.gamma.logpdf(1.5, a, loc=0.5), POS),
    "beta.logpdf": (lambda x: st.beta.logpdf(x, 2.5, 0.7), lambda x: ss.beta.logpdf(x, 2.5, 0.7),
                    UNIT),
    "beta.pdf ab": (lambda a: st.beta.pdf(0.3, a, a + 1.0, loc=-0.5, scale=2.0),
                    lambda a: ss.beta.pdf(0.3, a, a + 1.0, loc=-0.5, scale=2.0), POS),
    "poisson.logpmf": (lambda mu: st.poisson.logpmf(K, mu), lambda mu: ss.poisson.logpmf(K, mu),
                       POS * 3),
    "poisson.pmf loc": (lambda mu: st.poisson.pmf(K, mu, loc=1),
                        lambda mu: ss.poisson.pmf(K, mu, loc=1), POS * 3),
    "dirichlet.logpdf": (lambda a: st.dirichlet.logpdf(SIMPLEX, a),
                         lambda a: ss.dirichlet.logpdf(SIMPLEX, a), ALPHA),
    "dirichlet.pdf K-1": (lambda a: st.dirichlet.pdf(SIMPLEX[:2], a),
                          lambda a: ss.dirichlet.pdf(SIMPLEX[:2], a), ALPHA),
    "mvn.logpdf": (lambda x: st.multivariate_normal.logpdf(x, MEAN, COV),
                   lambda x: ss.multivariate_normal.logpdf(x, MEAN, COV), X[:, :3]),
    "mvn.logpdf one point": (lambda x: st.multivariate_normal.logpdf(x, MEAN, COV),
                             lambda x: ss.multivariate_normal.logpdf(x, MEAN, COV), X[0, :3]),
    "mvn.pdf diag": (lambda x: st.multivariate_normal.pdf(x, MEAN, np.array([1.0, 2.0, 0.5])),
                     lambda x: ss.multivariate_normal.pdf(x, MEAN, np.array([1.0, 2.0, 0.5])),
                     X[:, :3]),
    "mvn.logpdf scalar cov": (lambda x: st.multivariate_normal.logpdf(x, np.zeros(3), 2.0),
                              lambda x: ss.multivariate_normal.logpdf(x, np.zeros(3), 2.0),
                              X[:, :3]),
    "mvn.logpdf traced mean": (lambda m: st.multivariate_normal.logpdf(X[:, :3], m, COV),
                               lambda m: ss.multivariate_normal.logpdf(X[:, :3], m, COV), MEAN),
}


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_scipy(name, backend):
    ours, theirs, x = CASES[name]
    with np.errstate(all="ignore"):
        want = theirs(x)
        got = tj.trace(ours, backend=backend)(x)
        eager = ours(x)
    # the normal CDF's tails: SciPy loses z**2 ulp there (tracejit does not: see
    # test_scipy_special.py's mpmath test)
    rtol = 2e-14 + (4.6e-16 * np.asarray(x) ** 2 if "norm." in name else 0)
    for g in (got, eager):
        assert np.shape(g) == np.shape(want), name
        g, w = np.asarray(g), np.asarray(want)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= rtol * np.abs(w) + 1e-300
        assert np.all(same | close), (name, g[~(same | close)], w[~(same | close)])


@pytest.mark.parametrize("name", ["norm.logpdf", "t.logpdf", "gamma.logpdf", "beta.logpdf",
                                  "norm.logcdf"])
def test_float32_stays_float32(name):
    ours, theirs, x = CASES[name]
    got = tj.trace(ours)(x.astype(np.float32))
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, theirs(x.astype(np.float32).astype(np.float64)),
                                   rtol=2e-6, atol=1e-30)


GRAD_CASES = {
    "norm": (lambda x, m, s: st.norm.logpdf(x, m, s), (X[0], 0.5, 1.5)),
    "norm.logcdf": (lambda x, m: st.norm.logcdf(x, m, 2.0), (X[0] * 3, 0.5)),
    "t": (lambda x, df, s: st.t.logpdf(x, df, 0.2, s), (X[0], 3.5, 1.5)),
    "gamma": (lambda x, a, s: st.gamma.logpdf(x, a, scale=s), (POS[0], 2.5, 1.5)),
    "beta": (lambda x, a, b: st.beta.logpdf(x, a, b), (UNIT[1], 2.5, 0.7)),
    "poisson": (lambda mu: st.poisson.logpmf(np.array([0.0, 1.0, 4.0, 7.0]), mu), (3.3,)),
    "dirichlet": (lambda x, a: st.dirichlet.logpdf(x, a), (SIMPLEX[:, :2], ALPHA)),
    "mvn diag": (lambda x, m, v: st.multivariate_normal.logpdf(x, m, v),
                 (X[:2, :3], MEAN, np.array([1.0, 2.0, 0.5]))),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives(interpret_backend, name):
    f, args = GRAD_CASES[name]
    check_grads(lambda *a: np.sum(f(*a)), tuple(np.asarray(a) for a in args), order=2,
                modes=("fwd", "rev"))


def test_unsupported_methods_say_so():
    # (the CDFs of t, gamma, beta and poisson: tests/test_special_incomplete.py)
    for call in (lambda: st.t.ppf(0.5, 3.0), lambda: st.gamma.ppf(0.5, 2.0),
                 lambda: st.beta.ppf(0.5, 2.0, 2.0)):
        with pytest.raises(UnsupportedError, match="not supported"):
            call()


def test_traced_covariance_needs_linalg_on_tracers():
    """A traced 2-D covariance goes through numpy.linalg.cholesky/solve on tracers: it works
    exactly when tracejit's linalg supports them, and otherwise says which function is
    missing (not a wrong value)."""
    f = tj.trace(lambda c: st.multivariate_normal.logpdf(X[:, :3], MEAN, c))
    try:
        got = f(COV)
    except UnsupportedError as e:
        assert "linalg" in str(e)
    else:
        np.testing.assert_allclose(got, ss.multivariate_normal.logpdf(X[:, :3], MEAN, COV),
                                   rtol=1e-12)


# issue 16 item 6: derivatives of std/var at constant data ---------------------------------------
@pytest.mark.parametrize("backend", ["llvm", "interpret"])
def test_std_of_constant_data_has_zero_derivative(backend):
    """As autograd: d std = 0 where the variance is exactly 0 (a single element, constant
    data, a constant row), not NaN; elsewhere the usual derivative; values unchanged."""
    grad = tj.grad(lambda x: np.sum(np.std(x, axis=0)))
    x = np.array([[1.0, 2.0, 3.0], [1.0, 5.0, 3.0]])         # columns 0 and 2 constant
    g = tj.trace(grad, backend=backend)(x)
    np.testing.assert_array_equal(g[:, [0, 2]], 0.0)
    np.testing.assert_allclose(g[:, 1], [-0.5, 0.5])
    assert tj.grad(lambda x: np.std(x))(np.array([3.0])) == 0.0
    assert tj.grad(lambda x: np.std(x))(2.0) == 0.0
    np.testing.assert_array_equal(tj.hessian(lambda x: np.std(x))(np.ones(3)), 0.0)
    np.testing.assert_array_equal(tj.grad(lambda x: np.var(x))(np.ones(4)), 0.0)
    for a in (x, np.array([np.nan, 1.0]), np.ones(4, np.float32), np.array([2.0, 1.0])):
        got = tj.trace(lambda v: np.std(v, ddof=1), backend=backend)(a)
        with np.errstate(all="ignore"):
            want = np.std(a, ddof=1)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    check_grads(lambda v: np.std(v, axis=1), (rng.normal(size=(2, 3)),), order=2)


def test_std_refuses_out_and_where():
    with pytest.raises(UnsupportedError, match="where"):
        tj.trace(lambda v: np.std(v, where=v > 0))(X)
