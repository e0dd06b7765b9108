"""tracejit.random: Threefry-2x32 known answers, JAX's published values for the same keys, the
structure of split/fold_in, distribution checks that can fail (moments and Kolmogorov-Smirnov
against exact CDFs, deterministic because the keys are fixed), interpret == llvm, vmap over keys,
derivatives through reparameterised samples, and the warning for np.random inside a trace."""
import math
import warnings
import zlib

import numpy as np
import pytest

import tracejit as tj
import tracejit.random as jr
from tracejit.test_util import check_grads, using_backend

U32 = np.uint32


def _jax_seed(name):
    """The seed JAX's tests/random_test.py uses for its RandomValuesCase of ``name``."""
    return zlib.adler32((name + "threefry2x32").encode())


def _compiled(fn, *args, backend="llvm"):
    with using_backend(backend):
        return tj.jit(fn)(*args)


# -- Threefry-2x32: Random123's known-answer vectors (the ones JAX's tests use) ----------------

KAT = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
       ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
       ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]


@pytest.mark.parametrize("key,count,expected", KAT)
def test_threefry_known_answers(key, count, expected):
    assert tuple(jr.threefry_2x32(U32(key), U32(count))) == expected


def test_threefry_known_answers_vectorised_both_backends():
    """Many lanes at once (a fused vector loop) give every lane the known answer."""
    k = U32([0x13198A2E, 0x03707344])
    count = np.concatenate([np.full(37, 0x243F6A88, U32), np.full(37, 0x85A308D3, U32)])
    expected = np.concatenate([np.full(37, 0xC4923A9C, U32), np.full(37, 0x483DF7A0, U32)])
    for backend in ("llvm", "interpret"):
        np.testing.assert_array_equal(_compiled(jr.threefry_2x32, k, count, backend=backend),
                                      expected)


# -- JAX's published values (tests/random_test.py, jax_threefry_partitionable=False) ------------

def test_bits_match_jax():
    k = jr.key(1701)
    np.testing.assert_array_equal(jr.bits(k, (3,), np.uint8), [216, 115, 43])
    np.testing.assert_array_equal(jr.bits(k, (3,), np.uint16), [41682, 1300, 55017])
    np.testing.assert_array_equal(jr.bits(k, (3,), np.uint32), [56197195, 4200222568, 961309823])
    np.testing.assert_array_equal(jr.bits(k, (3,), np.uint64),
                                  np.array([3982329540505020460, 16822122385914693683,
                                            7882654074788531506], np.uint64))
    k = jr.key(_jax_seed("bits"))
    np.testing.assert_array_equal(jr.bits(k, (5,), np.uint32),
                                  [1978747883, 4134381225, 3628107870, 689687174, 2788938207])
    np.testing.assert_array_equal(jr.bits(k, (5,), np.uint16), [6738, 38161, 50695, 57337, 61600])


def test_split_fold_in_randint_match_jax():
    k = jr.key(0)
    np.testing.assert_array_equal(jr.split(k, 4), [[2285895361, 1501764800],
                                                   [1518642379, 4090693311],
                                                   [433833334, 4221794875],
                                                   [839183663, 3740430601]])
    np.testing.assert_array_equal(jr.fold_in(k, 4), [2285895361, 433833334])
    np.testing.assert_array_equal(jr.randint(k, (3, 3), 0, 8, np.int32),
                                  [[2, 1, 3], [6, 1, 5], [6, 3, 4]])
    np.testing.assert_array_equal(jr.randint(k, (3, 3), 0, 8), [[7, 2, 6], [2, 1, 0], [6, 7, 7]])


F32 = np.float32
JAX_VALUES = [  # name, call, expected (float32 results JAX prints to 6 decimals)
    ("uniform", lambda k: jr.uniform(k, (5,), F32),
     [0.298671, 0.073213, 0.873356, 0.260549, 0.412797]),
    ("normal", lambda k: jr.normal(k, (5,), F32),
     [-1.173234, -1.511662, 0.070593, -0.099764, 1.052845]),
    ("exponential", lambda k: jr.exponential(k, (5,), F32),
     [0.526067, 0.043046, 0.039932, 0.46427, 0.123886]),
    ("gumbel", lambda k: jr.gumbel(k, (5,), F32),
     [2.06701, 0.911726, 0.145736, 0.185427, -0.00711]),
    ("laplace", lambda k: jr.laplace(k, (5,), F32),
     [0.578939, -0.204902, 0.555733, 0.911053, -0.96456]),
    ("logistic", lambda k: jr.logistic(k, (5,), F32),
     [0.19611, -1.709053, -0.274093, -0.208322, -1.675489]),
    ("truncated_normal", lambda k: jr.truncated_normal(k, 0.0, 2.0, (5,), F32),
     [0.582807, 1.709771, 0.159513, 0.861376, 0.36148]),
    ("randint", lambda k: jr.randint(k, (5,), 0, 10, np.int32), [0, 5, 7, 7, 5]),
    ("bernoulli", lambda k: jr.bernoulli(k, F32(0.5), (5,)), [False, True, True, True, False]),
    ("multivariate_normal",
     lambda k: jr.multivariate_normal(k, np.ones((1, 3), F32), np.eye(3, dtype=F32), (2,), F32),
     [[1.067826, 1.215599, 0.234166], [-0.237534, 1.32591, 1.413987]]),
    ("gamma", lambda k: jr.gamma(k, F32(0.8), (5,), F32),
     [0.824221, 1.724476, 0.502882, 5.386132, 0.685543]),
    ("loggamma", lambda k: jr.loggamma(k, F32(0.8), (5,), F32),
     [0.240559, -3.575443, -0.450946, -2.161372, -2.943277]),
    ("beta", lambda k: jr.beta(k, F32(0.8), F32(0.9), (5,), F32),
     [0.13259, 0.824893, 0.948363, 0.964155, 0.235448]),
    ("dirichlet", lambda k: jr.dirichlet(k, np.array([0.5, 0.6, 0.7], F32), (2,), F32),
     [[0.003128, 0.009694, 0.987178], [0.025938, 0.479091, 0.494971]]),
]


@pytest.mark.parametrize("name,call,expected", JAX_VALUES, ids=[c[0] for c in JAX_VALUES])
def test_distribution_values_match_jax(name, call, expected):
    got = call(jr.key(_jax_seed(name)))
    kind = np.asarray(expected).dtype.kind
    assert got.dtype == {"b": np.bool_, "i": np.int32, "f": np.float32}[kind]
    if kind in "bi":
        np.testing.assert_array_equal(got, expected)
    else:   # JAX prints 6 decimals; its own test compares with float32 tolerances
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_uniform_is_exactly_jax_bit_construction():
    """bitcast(bits >> 9 | bits(1.0)) - 1 (JAX) == (bits >> 9) * 2**-23 (here), for all words."""
    b = jr.bits(jr.key(3), (4096,), np.uint32)
    jax_way = ((b >> U32(9)) | np.array(1.0, F32).view(U32)).view(F32) - F32(1)
    np.testing.assert_array_equal(jr.uniform(jr.key(3), (4096,), F32), jax_way)
    b = jr.bits(jr.key(3), (4096,), np.uint64)
    jax_way = ((b >> np.uint64(12)) | np.array(1.0).view(np.uint64)).view(np.float64) - 1.0
    np.testing.assert_array_equal(jr.uniform(jr.key(3), (4096,)), jax_way)


# -- keys, split and fold_in -------------------------------------------------------------------

def test_key_from_seed():
    np.testing.assert_array_equal(jr.key(0), [0, 0])
    np.testing.assert_array_equal(jr.PRNGKey(7), [0, 7])
    np.testing.assert_array_equal(jr.key(-1), [2 ** 32 - 1, 2 ** 32 - 1])
    np.testing.assert_array_equal(jr.key(2 ** 32 + 5), [1, 5])
    np.testing.assert_array_equal(tj.vmap(jr.key)(np.array([0, 3, -1])),
                                  [[0, 0], [0, 3], [2 ** 32 - 1, 2 ** 32 - 1]])
    with pytest.raises(tj.InputError, match="integer"):
        jr.key(1.5)
    with pytest.raises(tj.InputError, match="uint32 array of shape"):
        jr.normal(np.zeros(2), (3,))


def test_split_and_fold_in_structure():
    k = jr.key(42)
    for num in (1, 2, 3, 8):
        keys = jr.split(k, num)
        assert keys.shape == (num, 2) and keys.dtype == U32
        np.testing.assert_array_equal(
            keys, jr.threefry_2x32(k, np.arange(2 * num, dtype=U32)).reshape(num, 2))
        assert len({tuple(r) for r in keys}) == num
    assert jr.split(k, (2, 3)).shape == (2, 3, 2)
    for d in (0, 1, 2 ** 32 - 1):
        np.testing.assert_array_equal(jr.fold_in(k, d), jr.threefry_2x32(k, U32([0, d])))
    folded = {tuple(jr.fold_in(k, d)) for d in range(50)}
    assert len(folded) == 50 and tuple(k) not in folded
    # the same key always gives the same draws; a different key different ones
    np.testing.assert_array_equal(jr.normal(k, (4,)), jr.normal(k, (4,)))
    assert not np.any(jr.normal(k, (4,)) == jr.normal(jr.split(k)[0], (4,)))


def test_interpret_and_llvm_agree_bit_for_bit():
    k = jr.key(11)

    def draws(k):
        a, b = jr.split(k)
        return (jr.bits(a, (7,), np.uint32), jr.bits(b, (2, 3), np.uint64), jr.split(k, 3),
                jr.fold_in(k, 9), jr.uniform(a, (5,), F32), jr.uniform(b, (3, 3)),
                jr.randint(a, (6,), -5, 17), jr.bernoulli(b, 0.3, (5,)), jr.permutation(a, 9))
    eager = draws(k)
    for backend in ("interpret", "llvm"):
        for got, want in zip(_compiled(draws, k, backend=backend), eager):
            np.testing.assert_array_equal(got, want)
    # transcendentals (erfinv's log1p and sqrt) may differ in the last place between backends
    normal = lambda k: (jr.normal(k, (9,)), jr.normal(k, (9,), F32))
    i64, i32 = _compiled(normal, k, backend="interpret")
    l64, l32 = _compiled(normal, k)
    np.testing.assert_allclose(l64, i64, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(l32, i32, rtol=3e-7, atol=3e-7)


def test_normal_compiles_to_one_fused_native_loop():
    f = tj.jit(lambda k: jr.normal(k, (1000,)))
    plan = f.ir(jr.key(0), stage="fused")
    assert "one native kernel" in plan
    assert sum(line.startswith("  loop [1000]") for line in plan.splitlines()) == 1


# -- distributions: moments and Kolmogorov-Smirnov against the exact CDF ------------------------

N = 20000
# the KS statistic's 1 - 1e-4 quantile for n samples (asymptotic Kolmogorov distribution:
# P(sqrt(n) D > t) ~ 2 exp(-2 t^2)): a fixed key fails this with probability 1e-4
KS_LIMIT = math.sqrt(math.log(2 / 1e-4) / 2) / math.sqrt(N)

_erf = np.vectorize(math.erf)


def _Phi(x):
    return 0.5 * (1 + _erf(np.asarray(x) / math.sqrt(2)))


def _truncnorm_moments(a, b):
    phi = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    z = float(_Phi(b) - _Phi(a))
    mean = (phi(a) - phi(b)) / z
    return mean, 1 + (a * phi(a) - b * phi(b)) / z - mean ** 2


CDFS = {
    "uniform": (lambda k: jr.uniform(k, (N,)), lambda x: np.clip(x, 0, 1), 0.5, 1 / 12),
    "normal": (lambda k: jr.normal(k, (N,)), lambda x: 0.5 * (1 + _erf(x / math.sqrt(2))),
               0.0, 1.0),
    "normal32": (lambda k: jr.normal(k, (N,), F32),
                 lambda x: 0.5 * (1 + _erf(x / math.sqrt(2))), 0.0, 1.0),
    "exponential": (lambda k: jr.exponential(k, (N,)), lambda x: 1 - np.exp(-x), 1.0, 1.0),
    "laplace": (lambda k: jr.laplace(k, (N,)),
                lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x)), 0.0, 2.0),
    "logistic": (lambda k: jr.logistic(k, (N,)), lambda x: 1 / (1 + np.exp(-x)),
                 0.0, math.pi ** 2 / 3),
    "gumbel": (lambda k: jr.gumbel(k, (N,)), lambda x: np.exp(-np.exp(-x)),
               0.5772156649015329, math.pi ** 2 / 6),
    # N(0, 1) conditioned on (-0.5, 2): Phi(x) rescaled; its mean and variance are the standard
    # (phi(a) - phi(b)) / Z and 1 + (a phi(a) - b phi(b)) / Z - mean**2
    "truncated_normal": (lambda k: jr.truncated_normal(k, -0.5, 2.0, (N,)),
                         lambda x: (_Phi(x) - _Phi(-0.5)) / (_Phi(2.0) - _Phi(-0.5)),
                         *_truncnorm_moments(-0.5, 2.0)),
}


def _ks(samples, cdf):
    x = np.sort(np.asarray(samples, np.float64))
    c = cdf(x)
    i = np.arange(1, len(x) + 1)
    return max(np.max(i / len(x) - c), np.max(c - (i - 1) / len(x)))


@pytest.mark.parametrize("name", list(CDFS))
def test_continuous_distributions(name):
    draw, cdf, mean, var = CDFS[name]
    raw = draw(jr.key(2024))
    assert raw.dtype == (F32 if name.endswith("32") else np.float64)
    x = np.asarray(raw, np.float64)
    assert x.shape == (N,) and np.all(np.isfinite(x))
    assert _ks(x, cdf) < KS_LIMIT
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    # the sample variance's standard error, from the sample's own fourth moment
    se = math.sqrt(max(np.mean((x - x.mean()) ** 4) - x.var() ** 2, 0) / N)
    assert abs(x.var() - var) < 5 * se


def test_ks_check_can_fail():
    """The KS check rejects a slightly wrong distribution at this sample size."""
    x = np.asarray(jr.normal(jr.key(2024), (N,))) * 1.05
    assert _ks(x, CDFS["normal"][1]) > KS_LIMIT


def test_uniform_bounds_and_arrays():
    lo = np.array([-2.0, 0.0, 10.0])
    x = np.asarray(jr.uniform(jr.key(1), (4000, 3), minval=lo, maxval=lo + 0.5))
    assert np.all(x >= lo) and np.all(x < lo + 0.5)
    np.testing.assert_allclose(x.mean(axis=0), lo + 0.25, atol=5 * 0.5 / math.sqrt(12 * 4000))


def test_gamma_beta_dirichlet():
    scipy_stats = pytest.importorskip("scipy.stats", reason="exact gamma/beta CDFs from SciPy")
    n = 2400         # dirichlet's 800 x 3 log-gamma draws: the same compiled sampler as beta's
    limit = math.sqrt(math.log(2 / 1e-4) / 2) / math.sqrt(n)
    for a in (0.3, 1.0, 4.5):
        x = np.asarray(jr.gamma(jr.key(5), a, (n,)))
        assert np.all(x > 0) and _ks(x, scipy_stats.gamma(a).cdf) < limit
        assert abs(x.mean() - a) < 5 * math.sqrt(a / n)
    x = np.asarray(jr.beta(jr.key(6), 2.0, 0.5, (n,)))
    assert _ks(x, scipy_stats.beta(2.0, 0.5).cdf) < limit
    alpha = np.array([0.5, 1.0, 3.0])
    d = np.asarray(jr.dirichlet(jr.key(7), alpha, (n // 3,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-12)
    assert _ks(d[:, 2], scipy_stats.beta(3.0, 1.5).cdf) < limit * math.sqrt(3)


def _chi2_ok(counts, probs):
    """Pearson's chi-square below its 1 - 1e-4 quantile (Wilson-Hilferty approximation)."""
    n = counts.sum()
    expected = n * np.asarray(probs)
    stat = np.sum((counts - expected) ** 2 / expected)
    k = len(counts) - 1
    z = 3.719                                   # the standard normal's 1 - 1e-4 quantile
    return stat < k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3


def test_discrete_distributions():
    r = np.asarray(jr.randint(jr.key(8), (N,), -3, 4))
    assert r.dtype == np.int64 and r.min() == -3 and r.max() == 3
    assert _chi2_ok(np.bincount(r + 3), [1 / 7] * 7)
    b = np.asarray(jr.bernoulli(jr.key(9), 0.3, (N,)))
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 5 * math.sqrt(0.21 / N)
    p = np.array([0.1, 0.2, 0.7])
    c = np.asarray(jr.categorical(jr.key(10), np.log(p) - 5.0, shape=(N,)))
    assert _chi2_ok(np.bincount(c, minlength=3), p)
    assert not _chi2_ok(np.bincount(c, minlength=3), [0.15, 0.2, 0.65])
    ch = np.asarray(jr.choice(jr.key(11), 4, (N,), p=np.array([0.4, 0.3, 0.2, 0.1])))
    assert _chi2_ok(np.bincount(ch, minlength=4), [0.4, 0.3, 0.2, 0.1])
    # randint's full range of a narrow type and an empty span give defined results
    full = np.asarray(jr.randint(jr.key(12), (N,), 0, 256, np.uint8))
    assert full.min() == 0 and full.max() == 255
    np.testing.assert_array_equal(jr.randint(jr.key(12), (3,), 5, 5), [5, 5, 5])


def test_permutation_and_choice():
    x = np.arange(20.0).reshape(10, 2)
    p = np.asarray(jr.permutation(jr.key(13), x))
    np.testing.assert_array_equal(np.sort(p[:, 0]), x[:, 0])
    np.testing.assert_array_equal(p[:, 1], p[:, 0] + 1)       # rows move together
    perm = np.asarray(jr.permutation(jr.key(13), 10))
    assert sorted(perm) == list(range(10)) and list(perm) != list(range(10))
    # each value lands in each position uniformly over many keys
    first = tj.vmap(lambda k: jr.permutation(k, 5)[0])(jr.split(jr.key(14), 2000))
    assert _chi2_ok(np.bincount(first, minlength=5), [0.2] * 5)
    c = np.asarray(jr.choice(jr.key(15), np.arange(30), (4, 5), replace=False))
    assert c.shape == (4, 5) and len(set(c.ravel())) == 20
    w = np.asarray(jr.choice(jr.key(15), 6, (5,), replace=False, p=np.ones(6) / 6))
    assert len(set(w)) == 5


# -- transforms: vmap over keys, grad through reparameterised samples ---------------------------

def test_vmap_over_keys_equals_a_python_loop():
    keys = jr.split(jr.key(16), 5)
    draw = lambda k: (jr.normal(k, (3,)), jr.randint(k, (2,), 0, 100), jr.split(k)[1])
    got = tj.vmap(draw)(keys)
    for i, k in enumerate(keys):
        for g, want in zip(got, draw(k)):
            np.testing.assert_array_equal(g[i], want)
    folded = tj.jit(tj.vmap(jr.fold_in, in_axes=(None, 0)))(jr.key(3), np.arange(4))
    np.testing.assert_array_equal(folded, [jr.fold_in(jr.key(3), d) for d in range(4)])


def test_keys_in_loops():
    """fold_in of a traced loop index and scan over split keys draw what eager code draws."""
    k = jr.key(19)

    def loop(key):
        return tj.fori_loop(0, 5, lambda i, acc: acc + jr.normal(jr.fold_in(key, i), (3,)),
                            np.zeros(3))
    np.testing.assert_array_equal(tj.jit(loop)(k),
                                  sum(jr.normal(jr.fold_in(k, i), (3,)) for i in range(5)))

    def scanned(key):
        return tj.scan(lambda c, kk: (c + 1, jr.randint(kk, (), 0, 1000)), 0, jr.split(key, 4))
    np.testing.assert_array_equal(tj.jit(scanned)(k)[1],
                                  [jr.randint(kk, (), 0, 1000) for kk in jr.split(k, 4)])


def test_jit_takes_keys_as_arguments():
    """A key is an argument: one compiled function, new draws per key (no retrace)."""
    f = tj.jit(lambda k, x: x + jr.normal(k, x.shape))
    x = np.zeros(4)
    a, b = f(jr.key(1), x), f(jr.key(2), x)
    np.testing.assert_array_equal(a, jr.normal(jr.key(1), (4,)))
    assert not np.any(a == b)


@pytest.fixture
def interpreted():
    """Derivatives are IR transforms: checked on the reference interpreter (no compiles)."""
    with using_backend("interpret"):
        yield


def test_grad_through_reparameterised_samples(interpreted):
    key = jr.key(17)
    z = np.asarray(jr.normal(key, (500,)))
    loss = lambda mu, sigma: np.mean(mu + sigma * jr.normal(key, (500,)))
    g_mu, g_sigma = tj.grad(loss, argnums=(0, 1))(0.3, 1.7)
    np.testing.assert_allclose(g_mu, 1.0, rtol=1e-12)
    np.testing.assert_allclose(g_sigma, z.mean(), rtol=1e-12)
    f = lambda mu, sigma: np.sum(np.sin(mu + sigma * jr.normal(key, (6,))))
    check_grads(f, (np.array(0.4), np.array(1.3)), order=2, modes=("fwd", "rev"))
    u = lambda lo, hi: np.sum(jr.uniform(key, (5,), minval=lo, maxval=hi) ** 2)
    check_grads(u, (np.array(-1.0), np.array(2.0)), order=2, modes=("fwd", "rev"))
    # a covariance made with NumPy in the function is factored by NumPy; the mean is traced
    g = tj.grad(lambda m: np.sum(jr.multivariate_normal(key, m, np.eye(2) * 2.0) ** 2))
    np.testing.assert_allclose(g(np.ones(2)),
                               2 * np.asarray(jr.multivariate_normal(key, np.ones(2),
                                                                     np.eye(2) * 2.0)))
    e = lambda rate: np.sum(np.log1p(jr.exponential(key, (5,)) / rate))
    check_grads(e, (np.array(2.0),), order=2, modes=("fwd", "rev"))
    # truncated_normal's bounds must be concrete: a traced bound is refused, never a zero grad
    with pytest.raises(tj.UnsupportedError, match="bounds must be concrete"):
        tj.grad(lambda lo: np.sum(jr.truncated_normal(key, lo, 1.0, (2,))))(0.0)


def test_gamma_implicit_reparameterisation_gradient(interpreted):
    """d sample / d a is -(dP/da) / (dP/dz) at the sample (P the Gamma CDF), checked against
    finite differences of SciPy's CDF, and unbiased: E[dz/da] = dE[z]/da = 1."""
    special = pytest.importorskip("scipy.special", reason="the Gamma CDF from SciPy")
    n = 1000
    a = np.full(n, 2.5)
    z = np.asarray(jr.gamma(jr.key(18), a))
    g = np.asarray(tj.grad(lambda a: np.sum(jr.gamma(jr.key(18), a)))(a))
    assert abs(g.mean() - 1.0) < 5 * g.std() / math.sqrt(n)
    h = 1e-6
    for zi, gi in zip(z[:20], g[:20]):
        dP_da = (special.gammainc(2.5 + h, zi) - special.gammainc(2.5 - h, zi)) / (2 * h)
        density = math.exp(1.5 * math.log(zi) - zi - math.lgamma(2.5))
        np.testing.assert_allclose(gi, -dP_da / density, rtol=1e-6)
    # through loggamma (so beta and dirichlet): d log z / da = (dz/da) / z on the same draws
    gl = np.asarray(tj.grad(lambda a: np.sum(jr.loggamma(jr.key(18), a)))(a))
    np.testing.assert_allclose(gl, g / z, rtol=1e-9)
    # the second derivative is that of the same implicit function z(a) = F^-1(u; a), u fixed
    z0 = float(jr.gamma(jr.key(18), 2.5, (1,))[0])
    u = special.gammainc(2.5, z0)
    h = 1e-4
    zs = [special.gammaincinv(2.5 + d, u) for d in (-h, 0.0, h)]
    first = lambda a: tj.grad(lambda a: np.sum(jr.gamma(jr.key(18), a, (1,))))(a)
    np.testing.assert_allclose(tj.grad(first)(2.5), (zs[2] - 2 * zs[1] + zs[0]) / h ** 2,
                               rtol=1e-4)
    # a constant shape parameter: only the (reparameterised) scale is differentiated
    gs = tj.grad(lambda s: np.sum(s * jr.gamma(jr.key(0), 2.0, (3,))))(1.5)
    np.testing.assert_allclose(gs, np.sum(jr.gamma(jr.key(0), 2.0, (3,))), rtol=1e-12)


# -- np.random inside a trace: the global state draws at run time, a new generator warns -------

def test_a_generator_made_in_a_trace_warns_once_per_call_site():
    def f(x):
        noise = np.random.normal(size=x.shape)       # the global state: drawn at run time
        rng = np.random.default_rng(0)
        return x + noise + rng.uniform(size=x.shape)                 # warns
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tj.jit(f)(np.zeros(3))
        tj.jit(f)(np.zeros(4))                                       # retrace: no new warnings
    msgs = [str(w.message) for w in seen if issubclass(w.category, tj.TracerWarning)]
    assert len(msgs) == 1, msgs
    assert "np.random.Generator.uniform" in msgs[0]
    assert all("test_random.py:" in m and "tracejit.random" in m for m in msgs)
    assert {w.filename for w in seen} == {__file__}


def test_numpy_random_outside_traces_is_untouched():
    assert np.random.normal.__self__ is np.random.mtrand._rand
    assert type(np.random.default_rng(0)) is np.random.Generator
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.random.default_rng(0).normal(size=2)
    # the generator a traced default_rng returns draws NumPy's stream (and warns)
    with pytest.warns(tj.TracerWarning):
        got = tj.jit(lambda x: x + np.random.default_rng(5).normal(size=3))(np.zeros(3))
    np.testing.assert_array_equal(got, np.random.default_rng(5).normal(size=3))
