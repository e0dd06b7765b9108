"""SciPy's inverses of the regularised incomplete gamma and beta functions on tracers:
``gammaincinv(a, p)`` (the x with P(a, x) = p) and ``betaincinv(a, b, y)`` (the x with
I_x(a, b) = y), as ufuncs (``special.py``'s invariants: float64 composites, exact derivative
rules, branch operands clamped to their range).

Algorithm: Numerical Recipes' initial guesses (Wilson-Hilferty or the small-a power law for
gamma; the normal-approximation or power-law tails for beta), then safeguarded Newton steps in
a variable that makes the tails gentle: t = log x for gamma (P ~ x**a near 0), t = logit x for
beta (I ~ x**a near 0 and 1 - I ~ (1-x)**b near 1). Every step narrows a bracket [lo, hi] by
the sign of the residual; a Newton step is at most 16 in t, and one leaving the bracket is
replaced by the bracket's midpoint, so the iteration cannot diverge. The residual of gamma
uses Q = 1 - P where p > 1/2 (the x of a p near 1 is set by 1 - p). A lane stops when its step
is below 4 ulp of t or its residual is 0 (``special_incomplete._iterate``: one while_loop over
the array, the forward functions' own loops inside).

Derivatives: dx/dp = 1 / (dP/dx at x) and dx/dy = 1 / (dI/dx at x), the densities, of every
order; in a and b, as the forward functions, none (``UnsupportedError``).
"""
from __future__ import annotations

from . import math as m
from .special import INF, NAN, clamp_to, ufunc, where, xlogy
from .special_gamma import betaln, gammaln_kernel
from .special_incomplete import (UFUNCS as _INCOMPLETE, _broadcast, _d_betainc, _d_gammainc,
                                 _iterate, _no_derivative, betainc_kernel, gammainc_kernel,
                                 gammaincc_kernel)

__all__ = ["gammaincinv", "betaincinv"]

_MAXITER = 100
_TOL = 4 * 2.220446049250313e-16
_STEP = 16.0                    # the longest step in t (a factor e**16 in x or x / (1 - x))


def _normal_tail(p):
    """NR's rational approximation of the normal quantile z with P(Z > z) = min(p, 1 - p),
    negated below 1/2 (|error| < 4.5e-4: a starting point only)."""
    pp = m.minimum(p, m.subtract(1.0, p))
    t = m.sqrt(m.multiply(-2.0, m.log(pp)))
    z = m.subtract(m.true_divide(m.add(2.30753, m.multiply(t, 0.27061)),
                                 m.add(1.0, m.multiply(t, m.add(0.99229, m.multiply(t, 0.04481))))),
                   t)
    return where(m.less(p, 0.5), m.negative(z), z)


def _newton(t0, enabled, residual):
    """Safeguarded Newton on ``residual(t)`` -> (r, dr/dt), r increasing in t, from ``t0`` on
    the lanes of ``enabled`` (module docstring); returns the final t."""
    def body(st):
        t, lo, hi = st
        f, slope = residual(t)
        lo, hi = where(m.less(f, 0.0), t, lo), where(m.greater(f, 0.0), t, hi)
        # Newton's step, at most _STEP (an underflowed slope gives an infinite one) towards
        # the root; outside the bracket, its midpoint (both ends are then finite)
        raw = m.subtract(t, m.true_divide(f, slope))
        cap = where(m.less(f, 0.0), m.add(t, _STEP), m.subtract(t, _STEP))
        step = where(m.isfinite(raw), m.minimum(m.maximum(raw, m.subtract(t, _STEP)),
                                                m.add(t, _STEP)), cap)
        inside = m.logical_and(m.greater(step, lo), m.less(step, hi))
        # converged: a step below 4 ulp (the residual is then rounding noise of either sign)
        done = m.logical_or(m.equal(f, 0.0), m.less_equal(
            m.absolute(m.subtract(step, t)), m.multiply(_TOL, m.maximum(m.absolute(t), 1.0))))
        halfway = m.multiply(m.add(lo, hi), 0.5)
        nxt = where(m.logical_or(done, inside), step,
                    where(m.isfinite(halfway), halfway, step))
        more = m.logical_not(done)
        return m.logical_and(more, m.isfinite(nxt)), [nxt, lo, hi]

    zero = m.multiply(t0, 0.0)
    _, (t, _, _) = _iterate(body, enabled, [t0, m.subtract(zero, INF), m.add(zero, INF)],
                            _MAXITER)
    return t


def gammaincinv_kernel(a, p):
    """The x >= 0 with P(a, x) = p, for a >= 0 and 0 <= p <= 1: 0 at p = 0, inf at p = 1, NaN
    inside for a = 0 or inf and outside the domain (SciPy's values)."""
    a, p = _broadcast(a, p)
    bad = m.logical_or(m.logical_not(m.greater_equal(a, 0.0)),
                       m.logical_or(m.logical_not(m.greater_equal(p, 0.0)), m.greater(p, 1.0)))
    inner = m.logical_and(m.greater(p, 0.0), m.less(p, 1.0))
    bad = m.logical_or(bad, m.logical_and(inner, m.logical_or(m.equal(a, 0.0), m.isinf(a))))
    special = where(bad, NAN, where(m.equal(p, 1.0), INF, 0.0))
    ok = m.logical_and(m.logical_not(bad), inner)
    a, p = clamp_to(ok, a, 1.0), clamp_to(ok, p, 0.5)
    # the starting point: Wilson-Hilferty above a = 1, the power law x**a / gamma(a + 1) below
    big = m.greater(a, 1.0)
    ab = clamp_to(big, a, 2.0)
    wh = m.subtract(m.subtract(1.0, m.true_divide(1.0, m.multiply(9.0, ab))),
                    m.true_divide(_normal_tail(p), m.multiply(3.0, m.sqrt(ab))))
    x_big = m.maximum(1e-3, m.multiply(ab, m.multiply(wh, m.multiply(wh, wh))))
    t = m.subtract(1.0, m.multiply(a, m.add(0.253, m.multiply(a, 0.12))))
    low = m.less(p, t)
    x_small = where(low, m.power(m.true_divide(clamp_to(low, p, 0.5), t), m.true_divide(1.0, a)),
                    m.subtract(1.0, m.log1p(m.negative(m.true_divide(
                        m.subtract(clamp_to(low, 0.9, p), t), m.subtract(1.0, t))))))
    x0 = where(big, x_big, x_small)
    upper = m.greater(p, 0.5)
    q = m.subtract(1.0, p)
    log_gamma = gammaln_kernel(a)

    def residual(s):
        """log P - log p (log q - log Q above p = 1/2) and its derivative in s = log x: nearly
        linear in s in both tails (P ~ x**a / gamma(a + 1) near 0)."""
        x = m.exp(s)
        lower = gammainc_kernel(a, x)
        tail = where(upper, gammaincc_kernel(a, x), lower)
        r = where(upper, m.subtract(m.log(q), m.log(tail)), m.subtract(m.log(lower), m.log(p)))
        dens = m.exp(m.subtract(m.subtract(xlogy(a, x), x), log_gamma))     # x dP/dx
        return r, m.true_divide(dens, tail)

    # a starting point that underflowed is the answer (x**a / gamma(a + 1) = p: x < 1e-308)
    start = m.logical_and(ok, m.greater(x0, 0.0))
    x = m.exp(_newton(m.log(where(start, x0, 1.0)), start, residual))
    return where(ok, where(start, x, 0.0), special)


def betaincinv_kernel(a, b, y):
    """The x in [0, 1] with I_x(a, b) = y, for a, b > 0 and 0 <= y <= 1: 0 at y = 0, 1 at
    y = 1, inside the limits 1 for a = inf and 0 for b = inf (NaN for both), NaN outside the
    domain (SciPy's values)."""
    a, b, y = _broadcast(a, b, y)
    bad = m.logical_or(m.logical_or(m.logical_not(m.greater(a, 0.0)),
                                    m.logical_not(m.greater(b, 0.0))),
                       m.logical_or(m.logical_not(m.greater_equal(y, 0.0)), m.greater(y, 1.0)))
    inner = m.logical_and(m.greater(y, 0.0), m.less(y, 1.0))
    bad = m.logical_or(bad, m.logical_and(inner, m.logical_and(m.isinf(a), m.isinf(b))))
    limit = where(m.isinf(a), 1.0, 0.0)
    special = where(bad, NAN, where(inner, limit, where(m.equal(y, 1.0), 1.0, 0.0)))
    ok = m.logical_and(m.logical_and(m.logical_not(bad), inner),
                       m.logical_not(m.logical_or(m.isinf(a), m.isinf(b))))
    a, b, y = clamp_to(ok, a, 2.0), clamp_to(ok, b, 2.0), clamp_to(ok, y, 0.5)
    # the starting point: a normal approximation when a, b >= 1, else the two power-law tails
    both = m.logical_and(m.greater_equal(a, 1.0), m.greater_equal(b, 1.0))
    ab, bb = clamp_to(both, a, 2.0), clamp_to(both, b, 2.0)
    z = m.negative(_normal_tail(y))
    al = m.true_divide(m.subtract(m.multiply(z, z), 3.0), 6.0)
    ia, ib = m.true_divide(1.0, m.subtract(m.multiply(2.0, ab), 1.0)), \
        m.true_divide(1.0, m.subtract(m.multiply(2.0, bb), 1.0))
    h = m.true_divide(2.0, m.add(ia, ib))
    corr = m.subtract(m.add(al, 5.0 / 6.0), m.true_divide(2.0, m.multiply(3.0, h)))
    w = m.subtract(m.true_divide(m.multiply(z, m.sqrt(m.add(al, h))), h),
                   m.multiply(m.subtract(ib, ia), corr))
    x_both = m.true_divide(ab, m.add(ab, m.multiply(bb, m.exp(m.multiply(2.0, w)))))
    lna = m.log(m.true_divide(a, m.add(a, b)))
    lnb = m.log(m.true_divide(b, m.add(a, b)))
    ta = m.true_divide(m.exp(m.multiply(a, lna)), a)
    tb = m.true_divide(m.exp(m.multiply(b, lnb)), b)
    tot = m.add(ta, tb)
    left = m.less(y, m.true_divide(ta, tot))
    x_tails = where(left, m.power(m.multiply(m.multiply(a, tot), y), m.true_divide(1.0, a)),
                    m.subtract(1.0, m.power(m.multiply(m.multiply(b, tot), m.subtract(1.0, y)),
                                            m.true_divide(1.0, b))))
    x0 = m.minimum(m.maximum(where(both, x_both, x_tails), 1e-300), 1.0 - 1e-16)
    log_beta = betaln(a, b)

    def x_of(s):                        # s = logit x
        return m.true_divide(1.0, m.add(1.0, m.exp(m.negative(s))))

    upper = m.greater(y, 0.5)

    def residual(s):
        """log I - log y (log(1 - y) - log(1 - I) above y = 1/2) and its derivative in
        s = logit x; 1 - I is I_(1-x)(b, a), and both get 1 - x = x_of(-s) exactly (1 - x
        rounded would lose the digits of an x near 1)."""
        x, xc = x_of(s), x_of(m.negative(s))
        below, above = betainc_kernel(a, b, x, xc), betainc_kernel(b, a, xc, x)
        r = where(upper, m.subtract(m.log1p(m.negative(y)), m.log(above)),
                  m.subtract(m.log(below), m.log(y)))
        dens = m.exp(m.subtract(m.add(xlogy(a, x), xlogy(b, xc)), log_beta))  # x(1-x) dI/dx
        return r, m.true_divide(dens, where(upper, above, below))

    s0 = m.subtract(m.log(x0), m.log1p(m.negative(x0)))
    return where(ok, x_of(_newton(s0, ok, residual)), special)


def _d_gammaincinv(args, ans):
    """dx/dp = 1 / (dP/dx at x)."""
    return m.true_divide(1.0, _d_gammainc((args[0], ans), None))


def _d_betaincinv(args, ans):
    """dx/dy = 1 / (dI/dx at x)."""
    return m.true_divide(1.0, _d_betainc((args[0], args[1], ans), None))


gammaincinv = ufunc("gammaincinv", gammaincinv_kernel, [_no_derivative("a"), _d_gammaincinv])
betaincinv = ufunc("betaincinv", betaincinv_kernel,
                   [_no_derivative("a"), _no_derivative("b"), _d_betaincinv])

# every SciPy ufunc tracejit evaluates on tracers, by the ufunc's ``__name__`` (dispatch.py)
UFUNCS = {**_INCOMPLETE, "gammaincinv": gammaincinv, "betaincinv": betaincinv}
