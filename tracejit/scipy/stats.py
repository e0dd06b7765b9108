"""``scipy.stats`` distributions on tracers: norm, t, gamma, beta, poisson, dirichlet and
multivariate_normal, with SciPy's method names and signatures (``norm.logpdf(x, loc, scale)``).

Invariants: every method is a composite of tracejit.numpy and tracejit.scipy.special
functions, so values and derivatives (in x and in every parameter) trace, batch and compile;
invalid parameters give NaN (as SciPy), points outside the support -inf log density. The
CDFs of t, gamma, beta and poisson are the incomplete gamma/beta functions: differentiable in
x (and loc, scale, and poisson's mu), not in the shape parameters (df, a, b), where
differentiating raises ``UnsupportedError``. A method SciPy has but tracejit does not (ppf of
t, gamma, beta) raises ``UnsupportedError`` naming it.
"""
from __future__ import annotations

import numpy as _np

from .. import numpy as tnp
from ..core import Tracer
from ..custom import custom_jvp, stop_gradient
from ..errors import UnsupportedError
from ..numpy.special import not_differentiable
from ..numpy._base import result_type
from . import special as sp

__all__ = ["norm", "t", "gamma", "beta", "poisson", "dirichlet", "multivariate_normal"]

_LOG_2PI = 1.83787706640934548356


def _as_result(out, *args):
    """``out`` in the dtype NumPy's rules give ``args`` (Python numbers weak, integers to
    float64): float32 data with Python-number parameters gives float32, as in JAX (SciPy
    computes in float64; the constants here are computed in float64 and rounded once)."""
    dt, _ = result_type(*args)
    dt = dt if dt.kind == "f" else _np.dtype(_np.float64)
    if isinstance(out, Tracer):
        return out if out.dtype == dt else out.astype(dt)
    return _np.asarray(out, dtype=dt)[()] if _np.ndim(out) == 0 else _np.asarray(out, dtype=dt)


class _Continuous:
    """A location-scale family: ``method(x, *shapes, loc=0, scale=1)``, standardised by
    z = (x - loc) / scale (density divided by scale)."""

    def __init__(self, name, shapes, logpdf, valid=None, cdf=None, logcdf=None, sf=None,
                 logsf=None, ppf=None):
        self.name, self.shapes = name, shapes
        self._logpdf, self._valid = logpdf, valid
        self._cdf, self._logcdf, self._sf, self._logsf, self._ppf = cdf, logcdf, sf, logsf, ppf

    def __repr__(self):
        return f"<tracejit.scipy.stats.{self.name}>"

    def _args(self, args, kwargs):
        n = len(self.shapes)
        names = list(self.shapes) + ["loc", "scale"]
        if len(args) > n + 2:
            raise TypeError(f"{self.name}: too many arguments ({len(args)} after x)")
        vals = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in vals:
                raise TypeError(f"{self.name}: unexpected or repeated argument {k!r}")
            vals[k] = v
        missing = [s for s in self.shapes if s not in vals]
        if missing:
            raise TypeError(f"{self.name}: missing shape parameter(s) {missing}")
        return ([vals[s] for s in self.shapes], vals.get("loc", 0.0), vals.get("scale", 1.0))

    def _std(self, x, args, kwargs):
        shapes, loc, scale = self._args(args, kwargs)
        z = tnp.true_divide(tnp.subtract(x, loc), scale)
        ok = tnp.greater(scale, 0)
        if self._valid is not None:
            ok = tnp.logical_and(ok, self._valid(*shapes))
        return z, shapes, scale, ok

    def _method(self, fn, what, x, args, kwargs, log_scale=False):
        if fn is None:
            raise UnsupportedError(f"tracejit.scipy.stats.{self.name}.{what} is not supported; "
                                   f"use scipy.stats outside the traced function")
        z, shapes, scale, ok = self._std(x, args, kwargs)
        out = fn(z, *shapes)
        if log_scale:
            out = tnp.subtract(out, tnp.log(scale))
        loc = self._args(args, kwargs)[1]
        return _as_result(tnp.where(ok, out, _np.nan), x, loc, scale, *shapes)

    def logpdf(self, x, *args, **kwargs):
        """The log of the probability density at ``x``."""
        return self._method(self._logpdf, "logpdf", x, args, kwargs, log_scale=True)

    def pdf(self, x, *args, **kwargs):
        """The probability density at ``x``."""
        return tnp.exp(self.logpdf(x, *args, **kwargs))

    def cdf(self, x, *args, **kwargs):
        """The cumulative distribution function at ``x``."""
        return self._method(self._cdf, "cdf", x, args, kwargs)

    def logcdf(self, x, *args, **kwargs):
        """The log of the cumulative distribution function at ``x``."""
        return self._method(self._logcdf or _log_of(self._cdf, self._sf), "logcdf", x, args,
                            kwargs)

    def sf(self, x, *args, **kwargs):
        """The survival function 1 - cdf at ``x``."""
        return self._method(self._sf, "sf", x, args, kwargs)

    def logsf(self, x, *args, **kwargs):
        """The log of the survival function at ``x``."""
        return self._method(self._logsf or _log_of(self._sf, self._cdf), "logsf", x, args,
                            kwargs)

    def ppf(self, q, *args, **kwargs):
        """The quantile function (inverse of cdf) at ``q``."""
        if self._ppf is None:
            raise UnsupportedError(f"tracejit.scipy.stats.{self.name}.ppf is not supported")
        shapes, loc, scale = self._args(args, kwargs)
        out = tnp.where(tnp.greater(scale, 0),
                        tnp.add(loc, tnp.multiply(scale, self._ppf(q, *shapes))), _np.nan)
        return _as_result(out, q, loc, scale, *shapes)


def _log_of(p, q):
    """log(p), from the complement q = 1 - p where p > 1/2 (log1p(-q): exact near 0)."""
    if p is None or q is None:
        return None

    def log_p(*args):
        pv = p(*args)
        # q clamped: the unselected branch stays finite (its derivative too)
        qv = tnp.minimum(q(*args), 0.5)
        return tnp.where(tnp.greater(pv, 0.5), tnp.log1p(tnp.negative(qv)), tnp.log(pv))
    return log_p


def _norm_logpdf(z):
    return tnp.subtract(tnp.multiply(tnp.multiply(z, z), -0.5), 0.5 * _LOG_2PI)


norm = _Continuous("norm", (), _norm_logpdf, cdf=sp.ndtr, logcdf=sp.log_ndtr,
                   sf=lambda z: sp.ndtr(tnp.negative(z)),
                   logsf=lambda z: sp.log_ndtr(tnp.negative(z)), ppf=sp.ndtri)


def _t_logpdf(z, df):
    half = tnp.multiply(tnp.add(df, 1.0), 0.5)
    c = tnp.subtract(tnp.subtract(sp.gammaln(half), sp.gammaln(tnp.multiply(df, 0.5))),
                     tnp.multiply(tnp.log(tnp.multiply(df, _np.pi)), 0.5))
    return tnp.subtract(c, tnp.multiply(half, tnp.log1p(tnp.true_divide(tnp.multiply(z, z),
                                                                          df))))


def _t_cdf_kernel(z, df):
    """Student's t CDF through the incomplete beta function: the smaller tail is
    1/2 I_(df/(df+z^2))(df/2, 1/2), computed directly (never as 1 - something), and the CDF
    is that tail for z < 0 and 1 minus it (at least 1/2: no cancellation) above."""
    tail = tnp.multiply(sp.betainc(tnp.multiply(df, 0.5), 0.5,
                                   tnp.true_divide(df, tnp.add(df, tnp.multiply(z, z)))), 0.5)
    return tnp.where(tnp.less(z, 0), tail, tnp.subtract(1.0, tail))


def _t_cdf_jvp(primals, tangents):
    # d cdf / dz is the density (the composite's own derivative is 0 * inf at z = 0); df's
    # tangent is zero here: its guard raised otherwise
    z, df = primals
    return _t_cdf_core(z, df), tnp.multiply(tangents[0], tnp.exp(_t_logpdf(z, df)))


_t_cdf_core = custom_jvp(_t_cdf_kernel)
_t_cdf_core.defjvp(_t_cdf_jvp)
_t_cdf_core.trace_cache = {}          # pure: its graph depends on the argument types only
_df_guard = not_differentiable("tracejit.scipy.stats.t.cdf", 1,
                               "(df, the degrees of freedom: the derivative in it has no "
                               "closed form and is not implemented)")


def _t_cdf(z, df):
    return _t_cdf_core(z, _df_guard(tnp.asarray(df) if not isinstance(df, Tracer) else df))


t = _Continuous("t", ("df",), _t_logpdf, valid=lambda df: tnp.greater(df, 0),
                cdf=_t_cdf, sf=lambda z, df: _t_cdf(tnp.negative(z), df))


def _support(z, lo, hi, value):
    inside = tnp.logical_and(tnp.greater_equal(z, lo), tnp.less_equal(z, hi))
    return tnp.where(inside, value, -_np.inf)


def _gamma_logpdf(z, a):
    zc = tnp.maximum(z, 0.0)                 # outside the support: a finite stand-in
    v = tnp.subtract(tnp.subtract(sp.xlogy(tnp.subtract(a, 1.0), zc), zc), sp.gammaln(a))
    return _support(z, 0.0, _np.inf, v)


def _gamma_cdf(z, a):
    return sp.gammainc(a, tnp.maximum(z, 0.0))


def _gamma_sf(z, a):
    return sp.gammaincc(a, tnp.maximum(z, 0.0))


gamma = _Continuous("gamma", ("a",), _gamma_logpdf, valid=lambda a: tnp.greater(a, 0),
                    cdf=_gamma_cdf, sf=_gamma_sf)


def _beta_logpdf(z, a, b):
    zc = tnp.clip(z, 0.0, 1.0)
    v = tnp.subtract(tnp.add(sp.xlogy(tnp.subtract(a, 1.0), zc),
                             sp.xlog1py(tnp.subtract(b, 1.0), tnp.negative(zc))),
                     sp.betaln(a, b))
    return _support(z, 0.0, 1.0, v)


def _beta_cdf(z, a, b):
    return sp.betainc(a, b, tnp.clip(z, 0.0, 1.0))


def _beta_sf(z, a, b):
    # I_(1-z)(b, a): 1 - z is exact where the survival function is small (z near 1)
    return sp.betainc(b, a, tnp.subtract(1.0, tnp.clip(z, 0.0, 1.0)))


beta = _Continuous("beta", ("a", "b"), _beta_logpdf,
                   valid=lambda a, b: tnp.logical_and(tnp.greater(a, 0), tnp.greater(b, 0)),
                   cdf=_beta_cdf, sf=_beta_sf)


class _Poisson:
    """The Poisson distribution: ``logpmf(k, mu, loc=0)``, ``pmf``, ``cdf``, ``sf`` and
    their logs."""

    name = "poisson"

    def __repr__(self):
        return "<tracejit.scipy.stats.poisson>"

    def logpmf(self, k, mu, loc=0):
        """log P(K = k) = k log(mu) - log(k!) - mu for integers k >= loc, else -inf."""
        k = tnp.subtract(k, loc)
        kc = tnp.maximum(k, 0.0)
        v = tnp.subtract(tnp.subtract(sp.xlogy(kc, mu), sp.gammaln(tnp.add(kc, 1.0))), mu)
        ok = tnp.logical_and(tnp.greater_equal(k, 0), tnp.equal(tnp.floor(k), k))
        out = tnp.where(tnp.greater_equal(mu, 0), tnp.where(ok, v, -_np.inf), _np.nan)
        return _as_result(out, k, mu)

    def pmf(self, k, mu, loc=0):
        """P(K = k)."""
        return tnp.exp(self.logpmf(k, mu, loc))

    def _tail(self, k, mu, loc, fn, below):
        """P(K <= k) (``fn`` = gammaincc) or P(K > k) (gammainc) of floor(k - loc) + 1 and mu;
        ``below`` where k < loc. Piecewise constant in k: no derivative in it."""
        k = tnp.subtract(k, loc)
        n = stop_gradient(tnp.add(tnp.floor(tnp.maximum(k, 0.0)), 1.0))
        out = tnp.where(tnp.less(k, 0), below, fn(n, tnp.maximum(mu, 0.0)))
        return _as_result(tnp.where(tnp.greater_equal(mu, 0), out, _np.nan), k, mu)

    def cdf(self, k, mu, loc=0):
        """P(K <= k) = Q(floor(k) + 1, mu), the regularised upper incomplete gamma function."""
        return self._tail(k, mu, loc, sp.gammaincc, 0.0)

    def logcdf(self, k, mu, loc=0):
        """log P(K <= k) (from the complement where it is above 1/2)."""
        return _log_of(self.cdf, self.sf)(k, mu, loc)

    def sf(self, k, mu, loc=0):
        """P(K > k) = P(floor(k) + 1, mu), the regularised lower incomplete gamma function."""
        return self._tail(k, mu, loc, sp.gammainc, 1.0)

    def logsf(self, k, mu, loc=0):
        """log P(K > k) (from the complement where it is above 1/2)."""
        return _log_of(self.sf, self.cdf)(k, mu, loc)


poisson = _Poisson()


class _Dirichlet:
    """The Dirichlet distribution: ``logpdf(x, alpha)``, ``pdf``; as SciPy, the components
    are along the *first* axis of ``x`` (K of them, or K-1 with the last one 1 - sum)."""

    def __repr__(self):
        return "<tracejit.scipy.stats.dirichlet>"

    def logpdf(self, x, alpha):
        """-log B(alpha) + sum_i (alpha_i - 1) log x_i over the first axis of ``x``."""
        if not isinstance(alpha, Tracer):
            alpha = _np.asarray(alpha, dtype=float)
            if alpha.ndim != 1 or _np.any(alpha <= 0):
                raise ValueError("All parameters must be greater than 0 (and alpha 1-D)")
        k = tnp.shape(alpha)[0]
        if tnp.shape(x)[0] == k - 1:
            x = tnp.concatenate([x, tnp.subtract(1.0, tnp.sum(x, axis=0, keepdims=True))])
        elif tnp.shape(x)[0] != k:
            raise ValueError(f"Vector 'x' must have either the same number of entries as, or "
                             f"one entry fewer than, parameter vector 'a', but alpha.shape = "
                             f"{tnp.shape(alpha)} and x.shape = {tnp.shape(x)}.")
        a = tnp.reshape(alpha, (k,) + (1,) * (tnp.ndim(x) - 1))
        lnb = tnp.subtract(tnp.sum(sp.gammaln(alpha)), sp.gammaln(tnp.sum(alpha)))
        out = tnp.subtract(tnp.sum(sp.xlogy(tnp.subtract(a, 1.0), x), axis=0), lnb)
        return _as_result(out, x, alpha)

    def pdf(self, x, alpha):
        """The density at ``x``."""
        return tnp.exp(self.logpdf(x, alpha))


dirichlet = _Dirichlet()


class _MultivariateNormal:
    """The multivariate normal: ``logpdf(x, mean=None, cov=1)``, ``pdf``; points along the
    last axis of ``x`` (a 1-D ``x`` is one point, or for dimension 1 a list of points, as
    SciPy). ``cov`` is a scalar, a 1-D diagonal or a 2-D matrix; a traced 2-D ``cov`` uses
    numpy.linalg.cholesky/solve on tracers (available when tracejit's linalg supports them)."""

    def __repr__(self):
        return "<tracejit.scipy.stats.multivariate_normal>"

    def logpdf(self, x, mean=None, cov=1):
        """-(d log(2 pi) + log det cov + (x-mean)^T cov^-1 (x-mean)) / 2."""
        cov_nd = tnp.ndim(cov)
        d = (tnp.shape(cov)[0] if cov_nd else
             (tnp.shape(mean)[-1] if mean is not None and tnp.ndim(mean) else None))
        if d is None:
            d = tnp.shape(x)[-1] if tnp.ndim(x) else 1
        x = x if isinstance(x, Tracer) else _np.asarray(x, dtype=float)
        if tnp.ndim(x) == 0:
            x = tnp.reshape(x, (1,))
        if tnp.ndim(x) == 1 and d == 1:
            x = tnp.reshape(x, (-1, 1))
        dev = x if mean is None else tnp.subtract(x, mean)
        if cov_nd < 2:                                  # a scalar or a diagonal
            var = tnp.multiply(cov, _np.ones(d))
            maha = tnp.sum(tnp.true_divide(tnp.multiply(dev, dev), var), axis=-1)
            logdet = tnp.sum(tnp.log(var))
        elif not isinstance(cov, Tracer):             # constant: factor it with NumPy now
            chol = _np.linalg.cholesky(_np.asarray(cov, dtype=float))
            z = tnp.matmul(dev, _np.linalg.inv(chol).T)
            maha = tnp.sum(tnp.multiply(z, z), axis=-1)
            logdet = 2.0 * float(_np.sum(_np.log(_np.diagonal(chol))))
        else:
            chol = _np.linalg.cholesky(cov)          # dispatches on tracers
            flat = tnp.reshape(dev, (-1, d))
            z = _np.linalg.solve(chol, tnp.transpose(flat))
            maha = tnp.reshape(tnp.sum(tnp.multiply(z, z), axis=0), tnp.shape(dev)[:-1])
            logdet = tnp.multiply(tnp.sum(tnp.log(tnp.diagonal(chol))), 2.0)
        out = tnp.multiply(tnp.add(tnp.add(maha, logdet), d * _LOG_2PI), -0.5)
        out = tnp.squeeze(out) if tnp.ndim(out) and tnp.shape(out) == (1,) else out
        return _as_result(out, x, *[v for v in (mean, cov) if v is not None])

    def pdf(self, x, mean=None, cov=1):
        """The density at ``x``."""
        return tnp.exp(self.logpdf(x, mean, cov))


multivariate_normal = _MultivariateNormal()
