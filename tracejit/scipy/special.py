"""``scipy.special`` on tracers: the special-function ufuncs (``tracejit.numpy.special``,
``special_gamma``, ``special_incomplete``: composites with exact derivative rules) and
SciPy's Python-level functions over them (logsumexp, softmax, log_softmax, multigammaln,
polygamma, zeta, softplus).

Invariants: NumPy semantics on ndarrays (the same code runs with NumPy there), no SciPy
import, arguments that select a formula (``d`` of multigammaln, ``n`` of polygamma, ``axis``)
are static Python values.
"""
from __future__ import annotations

import math as _math

import numpy as _np

from .. import numpy as tnp
from ..core import Tracer
from ..custom import stop_gradient
from ..errors import UnsupportedError
from ..numpy.special import (erf, erfc, erfcx, erfinv, erfcinv, ndtr, ndtri, log_ndtr,  # noqa
                             expit, logit, log_expit, xlogy, xlog1py, entr, rel_entr, kl_div)
from ..numpy.special_gamma import (gammaln, gamma, digamma, psi, betaln, i0, i0e, i1,  # noqa
                                   i1e, zeta as _hurwitz, riemann_zeta as _riemann)
from ..numpy.special_incomplete import gammainc, gammaincc, betainc  # noqa: F401
from ..numpy.special_inverse import gammaincinv, betaincinv  # noqa: F401

__all__ = ["erf", "erfc", "erfcx", "erfinv", "erfcinv", "ndtr", "ndtri", "log_ndtr", "expit",
           "logit", "log_expit", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div", "gammaln",
           "gamma", "digamma", "psi", "betaln", "i0", "i0e", "i1", "i1e", "zeta", "polygamma",
           "multigammaln", "logsumexp", "softmax", "log_softmax", "softplus", "gammainc",
           "gammaincc", "betainc", "gammaincinv", "betaincinv"]


def zeta(x, q=None):
    """The Riemann zeta function zeta(x), or the Hurwitz zeta function zeta(x, q), as
    scipy.special.zeta. zeta(x, q) needs q > 0 except at its poles (NaN otherwise)."""
    return _riemann(x) if q is None else _hurwitz(x, q)


def polygamma(n, x):
    """The n-th derivative of the digamma function, as scipy.special.polygamma, for a static
    (concrete) integer order ``n`` (scalar or array): (-1)**(n+1) n! zeta(n+1, x) for n >= 1.
    For n >= 1 it needs x > 0 (NaN below; SciPy sums the series there)."""
    if isinstance(n, Tracer):
        n = n.known(need=True)          # an array the function made with NumPy: its value
    if n is None:
        raise UnsupportedError("polygamma: the order n must be a concrete integer (it selects "
                               "the formula), not a traced value")
    n = _np.asarray(n)
    if n.ndim == 0:
        k = int(n)
        if k == 0:
            return digamma(x)
        return tnp.multiply((-1.0) ** (k + 1) * _math.factorial(k), _hurwitz(k + 1.0, x))
    sign = _np.where(n % 2 == 0, -1.0, 1.0)
    fac = _np.array([float(_math.factorial(int(k))) for k in n.ravel()]).reshape(n.shape)
    rest = tnp.multiply(sign * fac, _hurwitz(_np.asarray(n + 1.0), x))
    return tnp.where(n == 0, digamma(x), rest)


def multigammaln(a, d):
    """The log of the multivariate gamma function of dimension ``d`` (a static int), as
    scipy.special.multigammaln: d(d-1)/4 log(pi) + sum_j gammaln(a - j/2), j = 0..d-1.
    SciPy raises ValueError for a <= (d-1)/2; so does this for concrete ``a`` (a traced ``a``
    cannot be checked: the formula's value is returned)."""
    if not isinstance(d, (int, _np.integer)) or d < 1:
        raise ValueError("d should be a positive integer (dimension)")
    if not isinstance(a, Tracer) and _np.any(_np.asarray(a) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a ({a}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    out = tnp.multiply(0.25 * d * (d - 1), 1.14472988584940017414)
    for j in range(d):
        out = tnp.add(out, gammaln(tnp.subtract(a, 0.5 * j)))
    return out


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % ndim for a in axes)) if ndim else ()


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) along ``axis``, computed stably, as scipy.special.logsumexp
    (weights ``b``; ``return_sign=True`` gives (log|s|, sign(s)); without it a negative sum
    gives NaN). Elements with b == 0 are left out (an inf there does not make NaN)."""
    a = a if isinstance(a, Tracer) else tnp.asarray(a)
    if b is not None:
        a, b = tnp.broadcast_arrays(a, b)
        a = tnp.where(tnp.equal(b, 0), -_np.inf, a)
    axes = _axes(axis, tnp.ndim(a))
    m = tnp.max(a, axis=axes, keepdims=True)
    # the shift cancels in value and derivative: no gradient through the max
    m = stop_gradient(tnp.where(tnp.isfinite(m), m, 0.0))
    e = tnp.exp(tnp.subtract(a, m))
    if b is not None:
        e = tnp.multiply(b, e)
    s = tnp.sum(e, axis=axes, keepdims=True)
    if return_sign:
        sgn = tnp.sign(s)
        s = tnp.abs(s)
    out = tnp.add(tnp.log(s), m)
    if not keepdims:
        out = tnp.squeeze(out, axis=axes)
        if return_sign:
            sgn = tnp.squeeze(sgn, axis=axes)
    return (out, sgn) if return_sign else out


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) along ``axis`` (all axes by default, as scipy.special.softmax)."""
    axes = _axes(axis, tnp.ndim(x))
    m = stop_gradient(tnp.max(x, axis=axes, keepdims=True))
    e = tnp.exp(tnp.subtract(x, m))
    return tnp.true_divide(e, tnp.sum(e, axis=axes, keepdims=True))


def log_softmax(x, axis=None):
    """x - logsumexp(x) along ``axis`` (all axes by default, as scipy.special.log_softmax)."""
    return tnp.subtract(x, logsumexp(x, axis=axis, keepdims=True))


def softplus(x):
    """log(1 + exp(x)) without overflow, as scipy.special.softplus."""
    return tnp.logaddexp(0.0, x)
