"""SciPy's regularised incomplete gamma and beta functions on tracers: ``gammainc`` (P),
``gammaincc`` (Q = 1 - P) and ``betainc`` (I_x(a, b)), as ufuncs (see ``special.py`` for the
invariants every special function keeps: composites in float64, exact derivative rules,
branch operands clamped to their range).

The algorithms are Cephes' (igam.c, incbet.c): P's power series, Q's continued fraction and
DLMF 8.7.3's series for Q at small x and a, chosen by SciPy's rules; for I_x the power series
and the two continued fractions of incbet, after the swap x <-> 1 - x that keeps x below the
mean. Unlike the other special functions these iterate to convergence, so each series is a
``while_loop`` over the whole array with an ``enabled`` mask (a lane stops changing once it
converged; lanes a branch does not own start converged, on harmless operands): they compile to
native loops and batch. SciPy's uniform asymptotic expansion for large a near x is not used:
the series and the continued fraction converge there too, in O(sqrt(a)) steps.

Derivatives: in ``x`` exact (the integrands, x**(a-1) exp(-x) / gamma(a) and
x**(a-1) (1-x)**(b-1) / B(a, b)), of every order. In ``a`` and ``b`` these functions have no
closed-form derivative; differentiating with respect to them raises ``UnsupportedError``
(a constant ``a`` or ``b`` is fine).
"""
from __future__ import annotations

import numpy as np

from ..control import while_loop
from . import math as m
from . import reductions
from ._base import broadcast_to
from .special import INF, NAN, clamp_to, ufunc, where, xlogy, xlog1py
from .special_gamma import UFUNCS as _GAMMA_UFUNCS, _STIRLING, _series, betaln, gamma_kernel, gammaln, gammaln_kernel
from ..core import type_of

__all__ = ["gammainc", "gammaincc", "betainc"]

EPS = 1.1102230246251565e-16                 # Cephes' MACHEP: 2**-53
BIG, BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16
_IGAM_MAXITER = 20000                        # a up to ~5e6 near x ~ a (O(sqrt(a)) steps)
_INCBET_MAXITER = 300                        # Cephes' bound for the beta continued fractions
INV_SQRT_2PI = 0.39894228040143267794
EULER = 0.57721566490153286061
# zeta(k) - 1 for k = 2..27: lgamma(1 + a) = -euler a + a - log1p(a)
#   + sum_k (-1)**k (zeta(k) - 1) / k a**k, terms below 2**-k |a|**k / k (|a| <= 1/2)
_ZETA_M1 = (0.6449340668482264, 0.2020569031595943, 0.08232323371113819, 0.03692775514336993,
            0.01734306198444914, 0.008349277381922827, 0.00407735619794434,
            0.0020083928260822143, 0.0009945751278180853, 0.0004941886041194645,
            0.0002460865533080483, 0.00012271334757848915, 6.124813505870483e-05,
            3.058823630702049e-05, 1.528225940865187e-05, 7.637197637899763e-06,
            3.81729326499984e-06, 1.908212716553939e-06, 9.539620338727962e-07,
            4.769329867878064e-07, 2.38450502727733e-07, 1.1921992596531106e-07,
            5.960818905125948e-08, 2.980350351465228e-08, 1.4901554828365043e-08,
            7.45071178983543e-09)


def _broadcast(*xs):
    shape = np.broadcast_shapes(*[type_of(x).shape for x in xs])
    return [broadcast_to(x, shape) for x in xs]


def _select(enabled, new, old):
    return [where(enabled, n, o) for n, o in zip(new, old)]


def _iterate(body, enabled, state, maxiter):
    """Run ``state = body(state)`` on the lanes of ``enabled`` until ``body`` reports them
    converged (it returns (still_running, new_state)) or ``maxiter`` steps; returns
    (lanes that did not converge, final state)."""
    def cond(s):
        return m.logical_and(m.less(s[0], float(maxiter)), reductions.any(s[1]))

    def step(s):
        n, en, st = s[0], s[1], list(s[2:])
        more, new = body(st)
        return [m.add(n, 1.0), m.logical_and(en, more)] + _select(en, new, st)

    out = while_loop(cond, step, [np.float64(0.0), enabled] + list(state))
    return out[1], out[2:]


# the power series' prefactor x**a exp(-x) / gamma(a) ----------------------------------------
def log1pmx(t):
    """log(1 + t) - t, accurate near 0: with u = t / (2 + t), log1p(t) = 2 atanh(u) and
    t - 2u = u t, so log1pmx = -u t + 2 (u**3/3 + u**5/5 + ...); |u| <= 1/3 for |t| <= 1/2
    (18 terms reach 1e-18). Elsewhere log1p(t) - t (no cancellation there)."""
    small = m.less_equal(m.absolute(t), 0.5)
    ts = clamp_to(small, t, 0.0)
    u = m.true_divide(ts, m.add(ts, 2.0))
    u2 = m.multiply(u, u)
    odd = _series(u2, [2.0 / (2 * j + 3) for j in range(18)])     # 2/3 + 2/5 u2 + ...
    r_small = m.subtract(m.multiply(m.multiply(u2, u), odd), m.multiply(u, ts))
    tb = clamp_to(small, 1.0, t)
    return where(small, r_small, m.subtract(m.log1p(tb), tb))


def _log_ratio_m1(u, v):
    """log(u/v) - (u - v)/v, i.e. log1pmx(t) for t = (u - v)/v, without rounding 1 + t
    where u << v."""
    t = m.true_divide(m.subtract(u, v), v)
    return where(m.less(t, -0.5), m.subtract(m.log(m.true_divide(u, v)), t), log1pmx(t))


def _stirling(z):
    """S(z) = log gamma(z) - (z - 1/2) log z + z - log sqrt(2 pi), for z >= 10."""
    return m.true_divide(_series(m.true_divide(1.0, m.multiply(z, z)), _STIRLING), z)


def _igam_fac(a, x):
    """x**a exp(-x) / gamma(a) for a, x > 0 (clamped by the caller). For a >= 10 Stirling's
    formula with the exponent a log1pmx((x - a)/a): sqrt(a / 2 pi) exp(a (log(x/a) - (x-a)/a)
    - S(a)) cancels gamma's growth analytically instead of subtracting lgamma(a) from
    a log(x) - x, which loses |a log x| ulps (log(x/a) itself where x << a: 1 + t rounds)."""
    big = m.greater_equal(a, 10.0)
    ab = clamp_to(big, a, 10.0)
    r_big = m.multiply(m.sqrt(m.multiply(ab, INV_SQRT_2PI * INV_SQRT_2PI)),
                       m.exp(m.subtract(m.multiply(ab, _log_ratio_m1(x, ab)), _stirling(ab))))
    asm = clamp_to(big, 1.0, a)
    r_small = m.exp(m.subtract(m.subtract(m.multiply(asm, m.log(x)), x), gammaln_kernel(asm)))
    return where(big, r_big, r_small)


def _igam_series(a, x, enabled):
    """P(a, x) from its power series x**a e**-x / gamma(a+1) sum x**n / ((a+1)...(a+n))."""
    def body(s):
        r, c, ans = s
        r = m.add(r, 1.0)
        c = m.multiply(c, m.true_divide(x, r))
        ans = m.add(ans, c)
        return m.greater(c, m.multiply(ans, EPS)), [r, c, ans]

    one = m.add(m.multiply(a, 0.0), 1.0)
    fac = _igam_fac(a, x)
    failed, (_, _, ans) = _iterate(body, m.logical_and(enabled, m.greater(fac, 0.0)),
                                   [a, one, one], _IGAM_MAXITER)
    # fac underflowed: so does P; not converged (a ~ x beyond ~5e6): NaN, not a guess
    r = where(m.greater(fac, 0.0), m.true_divide(m.multiply(ans, fac), a), 0.0)
    return where(failed, NAN, r)


def _igamc_cf(a, x, enabled):
    """Q(a, x) from its continued fraction (x > 1.1, x >= a), the recurrences rescaled when
    they grow (only their ratio matters)."""
    def body(s):
        c, y, z, ans, pkm2, pkm1, qkm2, qkm1 = s
        c, y, z = m.add(c, 1.0), m.add(y, 1.0), m.add(z, 2.0)
        yc = m.multiply(y, c)
        pk = m.subtract(m.multiply(pkm1, z), m.multiply(pkm2, yc))
        qk = m.subtract(m.multiply(qkm1, z), m.multiply(qkm2, yc))
        nz = m.not_equal(qk, 0.0)
        r = m.true_divide(pk, where(nz, qk, 1.0))
        t = where(nz, m.absolute(m.true_divide(m.subtract(ans, r), r)), 1.0)
        ans = where(nz, r, ans)
        scale = where(m.greater(m.absolute(pk), BIG), BIGINV, 1.0)
        new = [c, y, z, ans, m.multiply(pkm1, scale), m.multiply(pk, scale),
               m.multiply(qkm1, scale), m.multiply(qk, scale)]
        return m.greater(t, EPS), new

    fac = _igam_fac(a, x)
    # beyond 1e150 z * x overflows: there fac == 0 unless a ~ x, too large to converge
    live = m.greater(fac, 0.0)
    huge = m.logical_and(live, m.greater(x, 1e150))
    x = clamp_to(m.less_equal(x, 1e150), x, 1e150)
    y = m.subtract(1.0, a)
    z = m.add(m.add(x, y), 1.0)
    pkm1, qkm1 = m.add(x, 1.0), m.multiply(z, x)
    zero = m.multiply(x, 0.0)
    failed, out = _iterate(body, m.logical_and(enabled, live),
                           [zero, y, z, m.true_divide(pkm1, qkm1), m.add(zero, 1.0), pkm1, x,
                            qkm1], _IGAM_MAXITER)
    return where(m.logical_or(failed, huge), NAN, where(live, m.multiply(out[3], fac), 0.0))


def _lgam1p(a):
    """log gamma(1 + a) for -1/2 <= a <= 5/4 without rounding 1 + a where a is small."""
    small = m.less_equal(m.absolute(a), 0.5)
    s = clamp_to(small, a, 0.0)
    tail = m.multiply(m.multiply(s, s), _series(s, [(-1) ** k * z / k for k, z in
                                                   enumerate(_ZETA_M1, start=2)]))
    r_small = m.add(m.subtract(m.multiply(s, 1.0 - EULER), m.log1p(s)), tail)
    return where(small, r_small, gammaln_kernel(m.add(clamp_to(small, 1.0, a), 1.0)))


def _igamc_series(a, x):
    """Q(a, x) for x <= 1.1 and small a (DLMF 8.7.3): 1 - x**a / gamma(a + 1) - x**a /
    gamma(a) sum_n (-x)**n / (n! (a + n)), the first part as an expm1 (no cancellation); 30
    terms of the sum reach x**30 / 30! < 1e-30."""
    fac, total = 1.0, 0.0
    for n in range(1, 31):
        fac = m.multiply(fac, m.true_divide(m.negative(x), float(n)))
        total = m.add(total, m.true_divide(fac, m.add(a, float(n))))
    alx = m.multiply(a, m.log(x))
    head = m.negative(m.expm1(m.subtract(alx, _lgam1p(a))))
    return m.subtract(head, m.multiply(m.exp(m.subtract(alx, gammaln_kernel(a))), total))


def _igam_domain(a, x, p):
    """The special cases of P (``p``) or Q: NaN outside a, x >= 0, a == 0, x == 0 and the
    infinities (as SciPy); ``None`` where the series decide."""
    one, zero = (1.0, 0.0) if p else (0.0, 1.0)
    bad = m.logical_or(m.logical_or(m.less(a, 0.0), m.less(x, 0.0)),
                       m.logical_or(m.isnan(a), m.isnan(x)))
    r = where(m.equal(x, INF), where(m.equal(a, INF), NAN, one),
              where(m.equal(a, INF), zero, NAN))
    r = where(m.equal(x, 0.0), where(m.equal(a, 0.0), NAN, zero), r)
    r = where(m.logical_and(m.equal(a, 0.0), m.greater(x, 0.0)), one, r)
    special = m.logical_or(m.logical_or(bad, m.equal(x, 0.0)),
                           m.logical_or(m.equal(a, 0.0), m.logical_or(m.isinf(a), m.isinf(x))))
    return where(bad, NAN, r), m.logical_not(special)


def gammainc_kernel(a, x):
    """The regularised lower incomplete gamma function P(a, x) = gamma(a, x) / gamma(a) for
    a, x >= 0 (NaN otherwise; P(0, x) = 1 for x > 0, as SciPy)."""
    a, x = _broadcast(a, x)
    special, ok = _igam_domain(a, x, True)
    ac, xc = clamp_to(ok, a, 1.0), clamp_to(ok, x, 0.5)
    cf = m.logical_and(m.greater(xc, 1.0), m.greater(xc, ac))
    r = where(cf, m.subtract(1.0, _igamc_cf(ac, xc, m.logical_and(ok, cf))),
              _igam_series(ac, xc, m.logical_and(ok, m.logical_not(cf))))
    return where(ok, r, special)


def gammaincc_kernel(a, x):
    """The regularised upper incomplete gamma function Q(a, x) = 1 - P(a, x) for a, x >= 0,
    accurate in its own right tail (NaN otherwise; Q(0, x) = 0 for x > 0, as SciPy)."""
    a, x = _broadcast(a, x)
    special, ok = _igam_domain(a, x, False)
    ac, xc = clamp_to(ok, a, 1.0), clamp_to(ok, x, 2.0)
    big_x = m.greater(xc, 1.1)
    # SciPy's choice: 1 - P where the series for P converges fast and P is small
    small_a = where(m.less_equal(xc, 0.5),
                    m.less_equal(ac, m.true_divide(-0.4, m.log(m.minimum(xc, 0.5)))),
                    m.less_equal(ac, m.multiply(xc, 1.1)))
    use_cf = m.logical_and(big_x, m.greater_equal(xc, ac))
    use_qs = m.logical_and(m.logical_not(big_x), small_a)
    use_p = m.logical_not(m.logical_or(use_cf, use_qs))
    r_p = m.subtract(1.0, _igam_series(ac, xc, m.logical_and(ok, use_p)))
    r_cf = _igamc_cf(ac, xc, m.logical_and(ok, use_cf))
    r_qs = _igamc_series(clamp_to(use_qs, ac, 0.5), clamp_to(use_qs, xc, 0.5))
    return where(ok, where(use_cf, r_cf, where(use_qs, r_qs, r_p)), special)


# incomplete beta ---------------------------------------------------------------------------
def _incbet_pseries(a, b, x, enabled):
    """I_x(a, b) from the power series (b x <= 1, x <= 0.95)."""
    def body(s):
        n, t, total = s
        t = m.multiply(t, m.true_divide(m.multiply(m.subtract(n, b), x), n))
        v = m.true_divide(t, m.add(a, n))
        return m.greater(m.absolute(v), m.true_divide(EPS, a)), [m.add(n, 1.0), t,
                                                                  m.add(total, v)]

    u = m.multiply(m.subtract(1.0, b), x)
    t1 = m.true_divide(u, m.add(a, 1.0))
    run = m.logical_and(enabled, m.greater(m.absolute(t1), m.true_divide(EPS, a)))
    zero = m.multiply(x, 0.0)
    out = _iterate(body, run, [m.add(zero, 2.0), u, zero], 10000)
    # x**a / B(a, b) = _beta_fac / (1 - x)**b, b x <= 1: the quotient is well conditioned;
    # (1 - x)**b from log1p(-x), as 1 - x rounds where b is large and x tiny
    failed, (_, _, total) = out
    s = m.add(m.add(total, t1), m.true_divide(1.0, a))
    xc = m.subtract(1.0, x)
    r = m.true_divide(m.multiply(s, _beta_fac(a, b, x, xc)),
                      m.exp(m.multiply(b, m.log1p(m.negative(x)))))
    return where(failed, NAN, r)


def _beta_fac(a, b, x, xc):
    """x**a xc**b / B(a, b) for a, b > 0, 0 < x < 1, xc = 1 - x (both given exactly). As for
    gamma's prefactor, Stirling's formula cancels the gammas' growth analytically where a
    parameter is >= 10: with n = a + b, p = a/n, q = b/n the exponent is
    a log1pmx((x - p)/p) + b log1pmx((xc - q)/q) (the linear terms cancel), and with only a
    large, x**a xc**b / B = (n xc)**b e**(-n xc) / gamma(b) * sqrt(p)
    * exp(a log1pmx((x - p)/p) + S(n) - S(a)). Both below 10: the powers and gammas directly
    (n < 20: no overflow). lbeta's cancellation would cost |a log a| ulps instead."""
    n = m.add(a, b)
    big_a, big_b = m.greater_equal(a, 10.0), m.greater_equal(b, 10.0)
    both = m.logical_and(big_a, big_b)
    small = m.logical_not(m.logical_or(big_a, big_b))
    only_a = m.logical_and(big_a, m.logical_not(big_b))
    only_b = m.logical_and(big_b, m.logical_not(big_a))
    sa = _stirling(clamp_to(big_a, a, 10.0))
    sb = _stirling(clamp_to(big_b, b, 10.0))
    sn = _stirling(clamp_to(m.logical_not(small), n, 10.0))
    la = m.multiply(a, _log_ratio_m1(x, m.true_divide(a, n)))
    lb = m.multiply(b, _log_ratio_m1(xc, m.true_divide(b, n)))
    r_both = m.multiply(m.sqrt(m.true_divide(m.multiply(m.multiply(a, b), 0.5 / np.pi), n)),
                        m.exp(m.add(m.add(la, lb), m.subtract(sn, m.add(sa, sb)))))
    r_a = m.multiply(m.multiply(_igam_fac(clamp_to(only_a, b, 1.0), m.multiply(n, xc)),
                                m.sqrt(m.true_divide(a, n))), m.exp(m.add(la, m.subtract(sn, sa))))
    r_b = m.multiply(m.multiply(_igam_fac(clamp_to(only_b, a, 1.0), m.multiply(n, x)),
                                m.sqrt(m.true_divide(b, n))), m.exp(m.add(lb, m.subtract(sn, sb))))
    r_small = m.multiply(m.multiply(m.power(x, a), m.power(xc, b)), _inv_beta(a, b, small))
    return where(both, r_both, where(only_a, r_a, where(only_b, r_b, r_small)))


def _inv_beta(a, b, direct):
    """1 / B(a, b) for a, b < 10 (``direct``) as a/(a+b) b gamma(a+b+1) / (gamma(a+1)
    gamma(b+1)): no overflow of gamma near 0."""
    ad, bd = clamp_to(direct, a, 1.0), clamp_to(direct, b, 1.0)
    n = m.add(ad, bd)
    g = m.true_divide(gamma_kernel(m.add(n, 1.0)),
                      m.multiply(gamma_kernel(m.add(ad, 1.0)), gamma_kernel(m.add(bd, 1.0))))
    return m.multiply(m.multiply(m.true_divide(ad, n), bd), g)


def _incbet_cf(a, b, x, enabled, second):
    """Cephes' continued fraction incbcf (``second`` False) or incbd (True, in x / (1 - x))."""
    z = m.true_divide(x, m.subtract(1.0, x)) if second else x

    def body(s):
        k1, k2, k3, k5, k6, ans, pkm2, pkm1, qkm2, qkm1 = s
        k4, k7, k8 = m.add(k3, 1.0), m.add(k3, 1.0), m.add(k3, 2.0)
        xk = m.negative(m.true_divide(m.multiply(m.multiply(z, k1), k2), m.multiply(k3, k4)))
        pkm2, pkm1 = pkm1, m.add(pkm1, m.multiply(pkm2, xk))
        qkm2, qkm1 = qkm1, m.add(qkm1, m.multiply(qkm2, xk))
        xk = m.true_divide(m.multiply(m.multiply(z, k5), k6), m.multiply(k7, k8))
        pkm2, pkm1 = pkm1, m.add(pkm1, m.multiply(pkm2, xk))
        qkm2, qkm1 = qkm1, m.add(qkm1, m.multiply(qkm2, xk))
        r = m.true_divide(pkm1, where(m.equal(qkm1, 0.0), 1.0, qkm1))
        r = where(m.equal(qkm1, 0.0), ans, r)
        nz = m.not_equal(r, 0.0)
        t = where(nz, m.absolute(m.true_divide(m.subtract(ans, r), where(nz, r, 1.0))), 1.0)
        ans = where(nz, r, ans)
        size = m.add(m.absolute(qkm1), m.absolute(pkm1))
        scale = where(m.greater(size, BIG), BIGINV, 1.0)
        scale = where(m.logical_or(m.less(m.absolute(qkm1), BIGINV),
                                   m.less(m.absolute(pkm1), BIGINV)), m.multiply(scale, BIG),
                      scale)
        step2 = m.subtract(k2, 1.0) if second else m.add(k2, 1.0)
        k6n = m.add(k6, 1.0) if second else m.subtract(k6, 1.0)
        new = [m.add(k1, 1.0), step2, m.add(k3, 2.0), m.add(k5, 1.0), k6n, ans,
               m.multiply(pkm2, scale), m.multiply(pkm1, scale), m.multiply(qkm2, scale),
               m.multiply(qkm1, scale)]
        return m.greater_equal(t, 3.0 * EPS), new

    zero = m.multiply(x, 0.0)
    one = m.add(zero, 1.0)
    k2, k6 = (m.subtract(b, 1.0), m.add(a, b)) if second else (m.add(a, b), m.subtract(b, 1.0))
    # Cephes returns its last convergent after 300 steps; so does this
    _, out = _iterate(body, enabled, [a, k2, a, one, k6, one, zero, one, one, one],
                      _INCBET_MAXITER)
    return out[5]


def betainc_kernel(a, b, x, xc=None):
    """The regularised incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1 (NaN
    otherwise; a == 0 gives 1 and b == 0 gives 0 for 0 < x < 1, as SciPy). ``xc``: 1 - x when
    the caller knows it better than its rounding (betaincinv, for an x near 1)."""
    a, b, x = _broadcast(a, b, x)
    xc = m.subtract(1.0, x) if xc is None else _broadcast(xc, x)[0]
    bad = m.logical_or(m.logical_or(m.less(a, 0.0), m.less(b, 0.0)),
                       m.logical_or(m.less(x, 0.0), m.greater(x, 1.0)))
    bad = m.logical_or(bad, m.logical_or(m.isnan(x), m.logical_or(m.isnan(a), m.isnan(b))))
    inner = m.logical_and(m.greater(x, 0.0), m.less(x, 1.0))
    special = where(m.equal(x, 0.0), 0.0, where(m.equal(x, 1.0), 1.0, NAN))
    # inner points with a zero or infinite parameter: the limits (NaN where both are)
    zero_inf_a = m.logical_or(m.equal(a, 0.0), m.equal(b, INF))
    zero_inf_b = m.logical_or(m.equal(b, 0.0), m.equal(a, INF))
    special = where(inner, where(zero_inf_a, 1.0, where(zero_inf_b, 0.0, special)), special)
    bad = m.logical_or(bad, m.logical_and(zero_inf_a, zero_inf_b))     # 0/0: NaN, as SciPy
    ok = m.logical_and(m.logical_not(bad), m.logical_and(
        inner, m.logical_not(m.logical_or(zero_inf_a, zero_inf_b))))
    a, b, x = clamp_to(ok, a, 1.0), clamp_to(ok, b, 1.0), clamp_to(ok, x, 0.5)
    xc = clamp_to(ok, xc, 0.5)
    first = m.logical_and(m.less_equal(m.multiply(b, x), 1.0), m.less_equal(x, 0.95))
    flag = m.logical_and(m.logical_not(first), m.greater(x, m.true_divide(a, m.add(a, b))))
    # the swap keeps x below the mean: I_x(a, b) = 1 - I_(1-x)(b, a)
    a2, b2 = where(flag, b, a), where(flag, a, b)
    x2, xc2 = where(flag, xc, x), where(flag, x, xc)
    series = m.logical_or(first, m.logical_and(
        flag, m.logical_and(m.less_equal(m.multiply(b2, x2), 1.0), m.less_equal(x2, 0.95))))
    cf1 = m.logical_and(m.logical_not(series), m.less(
        m.subtract(m.multiply(x2, m.subtract(m.add(a2, b2), 2.0)), m.subtract(a2, 1.0)), 0.0))
    cf2 = m.logical_and(m.logical_not(series), m.logical_not(cf1))
    r_series = _incbet_pseries(a2, b2, x2, m.logical_and(ok, series))
    w = where(cf1, _incbet_cf(a2, b2, x2, m.logical_and(ok, cf1), False),
              m.true_divide(_incbet_cf(a2, b2, x2, m.logical_and(ok, cf2), True), xc2))
    r_cf = m.multiply(m.true_divide(_beta_fac(a2, b2, x2, xc2), a2), w)
    t = where(series, r_series, r_cf)
    t = where(flag, where(m.less_equal(t, EPS), 1.0 - EPS, m.subtract(1.0, t)), t)
    return where(ok, t, where(bad, NAN, special))


def _d_gammainc(args, ans):
    """d P / d x: the density x**(a-1) exp(-x) / gamma(a)."""
    a, x = args
    return m.exp(m.subtract(m.subtract(xlogy(m.subtract(a, 1.0), x), x), gammaln(a)))


def _d_betainc(args, ans):
    """d I / d x: the density x**(a-1) (1-x)**(b-1) / B(a, b)."""
    a, b, x = args
    return m.exp(m.subtract(m.add(xlogy(m.subtract(a, 1.0), x),
                                  xlog1py(m.subtract(b, 1.0), m.negative(x))), betaln(a, b)))


def _no_derivative(param):
    return (f"({param}, a shape parameter: the derivative in it has no closed form and is not "
            f"implemented)")


gammainc = ufunc("gammainc", gammainc_kernel, [_no_derivative("a"), _d_gammainc])
gammaincc = ufunc("gammaincc", gammaincc_kernel,
                  [_no_derivative("a"), lambda args, ans: m.negative(_d_gammainc(args, ans))])
betainc = ufunc("betainc", betainc_kernel,
                [_no_derivative("a"), _no_derivative("b"), _d_betainc])

# every SciPy ufunc tracejit evaluates on tracers, by the ufunc's ``__name__`` (dispatch.py)
UFUNCS = {**_GAMMA_UFUNCS, "gammainc": gammainc, "gammaincc": gammaincc, "betainc": betainc}
