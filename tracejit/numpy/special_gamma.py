"""SciPy's gamma-family, Bessel and zeta ufuncs on tracers (see ``special.py`` for the
invariants: composites in float64, exact derivative rules, clamped branches).

Cephes' scalar algorithms shift the argument with data-dependent loops; here the shifts are
unrolled a fixed number of times with selections (``x < 13`` needs at most ten factors), so
the code stays a straight line that vectorises.
"""
from __future__ import annotations

from fractions import Fraction

from . import math as m
from . import special
from .special import INF, LOGPI, NAN, clamp_to, p1evl, polevl, ufunc, where

__all__ = ["gammaln", "gamma", "digamma", "psi", "betaln", "i0", "i0e", "i1", "i1e"]

LS2PI = 0.91893853320467274178               # log(sqrt(2 pi))
PI = 3.14159265358979323846


def _bernoulli(n):
    """B_0..B_n as Fractions (the Akiyama-Tanigawa algorithm; n is small)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for i in range(n + 1):
        a[i] = Fraction(1, i + 1)
        for j in range(i, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


_B = _bernoulli(30)
# Stirling's series of log gamma: sum B_2k / (2k (2k-1) x**(2k-1)); digamma's: B_2k / (2k x**2k)
_STIRLING = [float(_B[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, 9)]
_PSI_ASYM = [float(_B[2 * k] / (2 * k)) for k in range(1, 9)]


def _series(w, coefs):
    """coefs[0] + coefs[1] w + coefs[2] w**2 + ... (Horner)."""
    return polevl(w, tuple(reversed(coefs)))


def sinpi(x):
    """sin(pi x) with the argument reduced exactly (x - 2 round(x/2)), so that sinpi(n) == 0."""
    r = m.subtract(x, m.multiply(m.rint(m.multiply(x, 0.5)), 2.0))      # in [-1, 1]
    # sin(pi r) = sin(pi (1 - r)) keeps the argument of sin in [-pi/2, pi/2]
    r = where(m.greater(r, 0.5), m.subtract(1.0, r),
              where(m.less(r, -0.5), m.subtract(-1.0, r), r))
    return m.sin(m.multiply(r, PI))


# log gamma --------------------------------------------------------------------------------
# Cephes lgam: a rational on [2, 3) in x - 2 (exact zero at 2)
_LG_B = (-1.37825152569120859100E3, -3.88016315134637840924E4, -3.31612992738871184744E5,
         -1.16237097492762307383E6, -1.72173700820839662146E6, -8.53555664245765465627E5)
_LG_C = (-3.51815701436523470549E2, -1.70642106651881159223E4, -2.20528590553854454839E5,
         -1.13933444367982507207E6, -2.53252307177582951285E6, -2.01889141433532773231E6)


def _lgam_23(t):
    """log gamma(2 + t) for 0 <= t < 1."""
    return m.true_divide(m.multiply(t, polevl(t, _LG_B)), p1evl(t, _LG_C))


def _shift_product(x, lo, n):
    """(prod, y): y = x - k in [lo, lo + 1) and prod = (x-1)(x-2)...(x-k) for
    lo <= x < lo + n (at most n factors, unrolled)."""
    prod, y = 1.0, x
    for _ in range(n):
        down = m.greater_equal(y, lo + 1.0)
        y = where(down, m.subtract(y, 1.0), y)
        prod = where(down, m.multiply(prod, y), prod)
    return prod, y


def _lgam_stirling(x):
    """log gamma(x) for x >= 13."""
    w = m.true_divide(1.0, m.multiply(x, x))
    s = m.true_divide(_series(w, _STIRLING), x)
    return m.add(m.add(m.subtract(m.multiply(m.subtract(x, 0.5), m.log(x)), x), LS2PI), s)


def _lgam_pos(x):
    """log gamma(x) for x > 0 (x clamped there by the caller); one rational for all of
    (0, 13): on [2, 13) after the shift, below 2 through lgam(x) = lgam(x + 1) - log(x) and
    lgam(x + 2) - log(x) - log(x + 1), with t = x - 2, x - 1 or x exact. The rational (fitted
    on [2, 3)) holds to 1 ulp slightly below 2 as well (t >= -0.05): on [1.95, 2) and, shifted
    by one, on [0.95, 1) it keeps the zeros at 1 and 2 accurate to full relative precision
    (the other forms cancel there, as Cephes' do)."""
    big = m.greater_equal(x, 13.0)
    r_big = _lgam_stirling(clamp_to(big, x, 13.0))
    mid = m.logical_and(m.greater_equal(x, 2.0), m.logical_not(big))
    prod, y = _shift_product(clamp_to(mid, x, 2.0), 2.0, 11)
    near2 = m.logical_and(m.greater_equal(x, 1.95), m.less(x, 2.0))
    one = m.logical_and(m.greater_equal(x, 1.0), m.less(x, 1.95))
    near1 = m.logical_and(m.greater_equal(x, 0.95), m.less(x, 1.0))
    low = m.less(x, 0.95)
    t = where(mid, m.subtract(y, 2.0),
              where(near2, m.subtract(x, 2.0),
                    where(m.logical_or(one, near1), m.subtract(x, 1.0), x)))
    logx = m.log(clamp_to(m.logical_or(near1, low), x, 1.0))
    corr = where(mid, m.log(prod),
                 where(near2, 0.0,
                       where(one, m.negative(m.log1p(t)),
                             where(near1, m.negative(logx),
                                   m.negative(m.add(logx, m.log1p(clamp_to(low, t, 0.0))))))))
    return where(big, r_big, m.add(_lgam_23(t), corr))


def _reflected(x):
    """|x| where it is a finite nonzero, else 1: the positive argument both halves of a
    reflection formula evaluate (poles and infinities are set by the caller)."""
    y = m.absolute(x)
    return clamp_to(m.logical_and(m.greater(y, 0.0), m.less(y, INF)), y, 1.0)


def gammaln_kernel(x):
    """log |gamma(x)|: +inf at 0 and the negative integers, the reflection formula below 0."""
    y = _reflected(x)
    lg = _lgam_pos(y)
    # log|gamma(x)| = log(pi / |sin(pi x)|) - log gamma(1 - x), and gamma(1 - x) = -x gamma(-x)
    # with y = -x exact (1 - x would round)
    r_neg = m.subtract(m.subtract(LOGPI, m.log(m.multiply(m.absolute(sinpi(x)), y))), lg)
    r = where(m.greater(x, 0.0), lg, r_neg)
    pole = m.logical_and(m.less_equal(x, 0.0), m.equal(m.floor(x), x))
    r = where(pole, INF, r)
    return where(m.isinf(x), where(m.greater(x, 0.0), INF, -INF), r)


# gamma ------------------------------------------------------------------------------------
# Cephes Gamma's rational on [2, 3); Stirling's series above 13
_G_P = (1.60119522476751861407E-4, 1.19135147006586384913E-3, 1.04213797561761569935E-2,
        4.76367800457137231464E-2, 2.07448227648435975150E-1, 4.94214826801497100753E-1,
        9.99999999999999996796E-1)
_G_Q = (-2.31581873324120129819E-5, 5.39605580493303397842E-4, -4.45641913851797240494E-3,
        1.18139785222060435552E-2, 3.58236398605498653373E-2, -2.34591795718243348568E-1,
        7.14304917030273074085E-2, 1.00000000000000000320E0)


def _gamma_stirling(x):
    """gamma(x) for 13 <= x <= 180: sqrt(2 pi) x**(x - 1/2) exp(-x) exp(S(x)) with Stirling's
    series S (eight terms: below 1e-17 from 13 on); x**(x - 1/2) in two halves (no
    overflow before the result's own)."""
    w = m.true_divide(1.0, m.multiply(x, x))
    corr = m.exp(m.true_divide(_series(w, _STIRLING), x))
    v = m.power(x, m.subtract(m.multiply(x, 0.5), 0.25))
    y = m.multiply(v, m.true_divide(v, m.exp(x)))
    return m.multiply(m.multiply(2.50662827463100050242, y), corr)


def _gamma_pos(x):
    """gamma(x) for x > 0 (clamped by the caller); overflows to inf above 171.62. From 2 to
    13 the product (x-1)(x-2)... of up to 11 factors shifts to [2, 3), as Cephes' loop does;
    below 2, gamma(x) = gamma(x + k) / (x (x + 1)...), k = 1 or 2: one rational for all."""
    big = m.greater_equal(x, 13.0)
    r_big = _gamma_stirling(clamp_to(big, m.minimum(x, 180.0), 13.0))
    prod, y = _shift_product(clamp_to(big, 2.0, m.maximum(x, 2.0)), 2.0, 11)
    low = m.less(x, 2.0)
    up1 = m.greater_equal(x, 1.0)
    t = where(low, where(up1, m.subtract(x, 1.0), x), m.subtract(y, 2.0))
    g23 = m.true_divide(polevl(t, _G_P), polevl(t, _G_Q))
    xl = clamp_to(low, x, 1.0)
    r_low = m.true_divide(g23, where(up1, xl, m.multiply(xl, m.add(xl, 1.0))))
    r = where(low, r_low, m.multiply(prod, g23))
    return where(big, where(m.greater(x, 171.7), INF, r_big), r)


def gamma_kernel(x):
    """The gamma function; NaN at the negative integers, +-inf at +-0 (as SciPy)."""
    y = _reflected(x)
    g = _gamma_pos(y)
    # gamma(x) = pi / (sin(pi x) gamma(1 - x)) with gamma(1 - x) = -x gamma(-x) (y = -x is
    # exact, 1 - x would round); gamma(-x) overflowing below -171.6 gives 0 of the right sign
    r_neg = m.true_divide(PI, m.multiply(m.multiply(sinpi(x), y), g))
    r = where(m.greater(x, 0.0), g, r_neg)
    r = where(m.equal(x, 0.0), m.true_divide(1.0, x), r)
    neg_int = m.logical_and(m.less(x, 0.0), m.equal(m.floor(x), x))
    return where(neg_int, NAN, where(m.equal(x, INF), INF, r))


# digamma ----------------------------------------------------------------------------------
def _psi_pos(x):
    """digamma(x) for x > 0 (clamped): shifted up to x >= 10 by psi(x) = psi(x+1) - 1/x,
    then the asymptotic series log(x) - 1/(2x) - sum B_2k / (2k x**2k)."""
    acc, y = 0.0, x
    for _ in range(10):
        up = m.less(y, 10.0)
        acc = where(up, m.add(acc, m.true_divide(1.0, y)), acc)
        y = where(up, m.add(y, 1.0), y)
    w = m.true_divide(1.0, m.multiply(y, y))
    asym = m.subtract(m.subtract(m.log(y), m.true_divide(0.5, y)),
                      m.multiply(w, _series(w, _PSI_ASYM)))
    return m.subtract(asym, acc)


# digamma's positive root, as hi + lo, and its Taylor series there: psi(x0 + d) =
# sum_n c_n d**n, c_n = (-1)**(n+1) zeta(n+1, x0) (computed with mpmath to 50 digits)
_PSI_ROOT_HI, _PSI_ROOT_LO = 1.4616321449683622, 9.549995429965697e-17
_PSI_ROOT_SERIES = (
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
    0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928, -0.0015769367714301972,
    0.0010788252019162967, -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077,
    0.00023635601564027053, -0.00016170622091974803)


def _psi_near_root(x):
    """digamma(x) for |x - x0| < 1/4 with full relative accuracy (the shifted asymptotic sum
    cancels to an absolute 3e-16 there): the Taylor series in d = x - x0, truncated below
    1e-17 of the result."""
    d = m.subtract(m.subtract(x, _PSI_ROOT_HI), _PSI_ROOT_LO)
    return m.multiply(d, _series(d, _PSI_ROOT_SERIES))


def digamma_kernel(x):
    """The digamma function psi = gamma'/gamma; -inf at +0, +inf at -0 and NaN at the negative
    integers (as SciPy)."""
    y = _reflected(x)
    p = _psi_pos(y)
    # psi(x) = psi(1 - x) - pi / tan(pi x), and psi(1 - x) = psi(-x) - 1/x (y = -x exact)
    r_neg = m.subtract(m.subtract(p, m.true_divide(1.0, x)),
                       m.true_divide(PI, m.tan(m.multiply(sinpi_reduced(x), PI))))
    near = m.less(m.absolute(m.subtract(x, _PSI_ROOT_HI)), 0.25)
    p = where(near, _psi_near_root(clamp_to(near, x, _PSI_ROOT_HI)), p)
    r = where(m.greater(x, 0.0), p, r_neg)
    r = where(m.equal(x, 0.0), m.true_divide(-1.0, x), r)
    neg_int = m.logical_and(m.less(x, 0.0), m.equal(m.floor(x), x))
    return where(neg_int, NAN, where(m.equal(x, INF), INF, where(m.equal(x, -INF), NAN, r)))


def sinpi_reduced(x):
    """x - round(x): tan(pi x) has period 1, and the reduced argument keeps its accuracy."""
    return m.subtract(x, m.rint(x))


gammaln = ufunc("gammaln", gammaln_kernel, [lambda a, ans: digamma(a[0])])
gamma = ufunc("gamma", gamma_kernel, [lambda a, ans: m.multiply(ans, digamma(a[0]))])
digamma = ufunc("psi", digamma_kernel, [lambda a, ans: _polygamma1(a[0])])
psi = digamma


def betaln_kernel(a, b):
    """log |B(a, b)| = log|gamma(a)| + log|gamma(b)| - log|gamma(a + b)|; +inf where a or b is
    a pole of gamma (0, -1, ..., -inf), -inf where one is +inf (as SciPy)."""
    r = m.subtract(m.add(gammaln_kernel(a), gammaln_kernel(b)), gammaln_kernel(m.add(a, b)))
    pole = m.logical_or(_pole(a), _pole(b))
    return where(pole, INF, where(m.logical_or(m.equal(a, INF), m.equal(b, INF)), -INF, r))


def _pole(x):
    return m.logical_and(m.less_equal(x, 0.0), m.equal(m.floor(x), x))


def _dbetaln(i):
    return lambda a, ans: m.subtract(digamma(a[i]), digamma(m.add(a[0], a[1])))


betaln = ufunc("betaln", betaln_kernel, [_dbetaln(0), _dbetaln(1)])


# Hurwitz zeta -----------------------------------------------------------------------------
# Euler-Maclaurin: sum_{k<N} (q+k)**-s + (q+N)**(1-s)/(s-1) + (q+N)**-s / 2
#   + sum_j B_2j / (2j)! s (s+1)...(s+2j-2) (q+N)**(-s-2j+1)
_EM_N = 9
_EM = [float(_B[2 * j] / _fact) for j, _fact in
       ((j, __import__("math").factorial(2 * j)) for j in range(1, 13))]


def zeta_kernel(s, q):
    """The Hurwitz zeta function sum_k (q + k)**-s for s > 1, q > 0; inf at s == 1 and at the
    poles q = 0, -1, -2, ...; NaN for s < 1 and (unlike SciPy, which sums for integer s) for
    other q < 0."""
    ok = m.logical_and(m.logical_and(m.greater(s, 1.0), m.less(s, INF)), m.greater(q, 0.0))
    r = where(ok, _em_sum(clamp_to(ok, s, 2.0), clamp_to(ok, q, 1.0)), NAN)
    # q a non-positive integer: a pole (Cephes returns inf); s == 1: the pole in s
    pole = m.logical_or(m.equal(s, 1.0),
                        m.logical_and(m.less_equal(q, 0.0), m.equal(m.floor(q), q)))
    r = where(m.equal(s, INF), where(m.greater(q, 1.0), 0.0, where(m.equal(q, 1.0), 1.0, INF)),
              r)
    return where(pole, INF, where(m.equal(q, INF), 0.0, r))


def _em_sum(ss, qq):
    """The Euler-Maclaurin sum for zeta(s, q), q > 0, s > -20 (s != 1)."""
    total = 0.0
    for k in range(_EM_N):
        total = m.add(total, m.power(m.add(qq, float(k)), m.negative(ss)))
    a = m.add(qq, float(_EM_N))
    b = m.power(a, m.negative(ss))                    # a**-s
    total = m.add(total, m.true_divide(m.multiply(b, a), m.subtract(ss, 1.0)))
    total = m.add(total, m.multiply(b, 0.5))
    fac = ss                                          # s (s+1) ... (s+2j-2)
    term = m.true_divide(b, a)                        # a**(-s-1)
    for j, c in enumerate(_EM):
        total = m.add(total, m.multiply(m.multiply(fac, term), c))
        fac = m.multiply(fac, m.multiply(m.add(ss, 2.0 * j + 1), m.add(ss, 2.0 * j + 2)))
        term = m.true_divide(term, m.multiply(a, a))
    return total


zeta = ufunc("_zeta", zeta_kernel, (None, None))           # derivatives: of the sum itself


def riemann_zeta_kernel(x):
    """The Riemann zeta function: the Euler-Maclaurin sum for x >= 0 (it continues
    analytically below 1), the reflection formula zeta(x) = 2**x pi**(x-1) sin(pi x/2)
    gamma(1-x) zeta(1-x) below 0 (exact zeros at the negative even integers); one sum for
    both, on x or 1 - x."""
    pos = m.greater_equal(x, 0.0)
    y = where(pos, x, m.subtract(1.0, x))
    z = _em_sum(clamp_to(m.logical_and(m.not_equal(y, 1.0), m.less(y, INF)), y, 2.0), 1.0)
    xn = clamp_to(pos, -1.0, x)
    nx = m.negative(xn)
    g = m.multiply(nx, gamma(nx))                     # gamma(1 - x), -x exact
    r_neg = m.multiply(m.multiply(m.power(2.0, xn), m.power(PI, m.subtract(xn, 1.0))),
                       m.multiply(sinpi(m.multiply(xn, 0.5)), m.multiply(g, z)))
    r = where(pos, z, r_neg)
    return where(m.equal(x, 1.0), INF, where(m.equal(x, INF), 1.0, r))


riemann_zeta = ufunc("_riemann_zeta", riemann_zeta_kernel, (None,))


def _polygamma1(x):
    """The trigamma function psi'(x): zeta(2, x) for x > 0, the reflection
    pi**2 / sin(pi x)**2 - psi'(1 - x) below, with psi'(1 - x) = psi'(-x) - 1/x**2 (-x exact):
    one zeta for both (NaN at the poles 0, -1, ...: inf - inf)."""
    y = _reflected(x)
    z = zeta(2.0, y)
    s = sinpi(x)
    r_neg = m.add(m.subtract(m.true_divide(PI * PI, m.multiply(s, s)), z),
                  m.true_divide(1.0, m.multiply(x, x)))
    return where(m.greater(x, 0.0), z, r_neg)


# modified Bessel functions of order 0 and 1 -----------------------------------------------
# Cephes i0.c / i1.c: Chebyshev series for exp(-x) I(x) on [0, 8] and for exp(-x) sqrt(x) I(x)
# on [8, inf) in 32/x
_I0_A = (-4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
         1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
         -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
         9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
         -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
         1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
         -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
         0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
         -0.02373741480589947, 0.04930528423967071, -0.09490109704804764, 0.17162090152220877,
         -0.3046826723431984, 0.6767952744094761)
_I0_B = (-7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
         3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
         1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
         -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
         7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
         -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
         3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
         2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
         0.8044904110141088)
_I1_A = (2.7779141127610464e-18, -2.111421214358166e-17, 1.5536319577362005e-16,
         -1.1055969477353862e-15, 7.600684294735408e-15, -5.042185504727912e-14,
         3.223793365945575e-13, -1.9839743977649436e-12, 1.1736186298890901e-11,
         -6.663489723502027e-11, 3.625590281552117e-10, -1.8872497517228294e-09,
         9.381537386495773e-09, -4.445059128796328e-08, 2.0032947535521353e-07,
         -8.568720264695455e-07, 3.4702513081376785e-06, -1.3273163656039436e-05,
         4.781565107550054e-05, -0.00016176081582589674, 0.0005122859561685758,
         -0.0015135724506312532, 0.004156422944312888, -0.010564084894626197,
         0.024726449030626516, -0.05294598120809499, 0.1026436586898471, -0.17641651835783406,
         0.25258718644363365)
_I1_B = (7.517296310842105e-18, 4.414348323071708e-18, -4.6503053684893586e-17,
         -3.209525921993424e-17, 2.96262899764595e-16, 3.3082023109209285e-16,
         -1.8803547755107825e-15, -3.8144030724370075e-15, 1.0420276984128802e-14,
         4.272440016711951e-14, -2.1015418427726643e-14, -4.0835511110921974e-13,
         -7.198551776245908e-13, 2.0356285441470896e-12, 1.4125807436613782e-11,
         3.2526035830154884e-11, -1.8974958123505413e-11, -5.589743462196584e-10,
         -3.835380385964237e-09, -2.6314688468895196e-08, -2.512236237870209e-07,
         -3.882564808877691e-06, -0.00011058893876262371, -0.009761097491361469,
         0.7785762350182801)


def chbevl(x, coefs):
    """The Chebyshev series sum c_k T_k(x/2) (Cephes' chbevl, Clenshaw's recurrence)."""
    b0, b1, b2 = coefs[0], 0.0, 0.0
    for c in coefs[1:]:
        b2, b1 = b1, b0
        b0 = m.add(m.subtract(m.multiply(x, b1), b2), c)
    return m.multiply(m.subtract(b0, b2), 0.5)


def _bessel_e(x, a, b, times_x):
    """exp(-|x|) I(|x|) from the two Chebyshev series (times |x| on [0, 8] for order 1)."""
    z = m.absolute(x)
    small = m.less_equal(z, 8.0)
    zs = clamp_to(small, z, 0.0)
    r_small = chbevl(m.subtract(m.multiply(zs, 0.5), 2.0), a)
    r_small = m.multiply(r_small, zs) if times_x else r_small
    zb = clamp_to(small, 8.0, z)
    r_big = m.true_divide(chbevl(m.subtract(m.true_divide(32.0, zb), 2.0), b), m.sqrt(zb))
    return where(small, r_small, r_big)


def i0e_kernel(x):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    return _bessel_e(x, _I0_A, _I0_B, False)


def i1e_kernel(x):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    r = _bessel_e(x, _I1_A, _I1_B, True)
    return where(m.less(x, 0.0), m.negative(r), r)


def i0_kernel(x):
    """The modified Bessel function of order 0."""
    return where(m.isinf(x), INF, m.multiply(m.exp(m.absolute(x)), i0e_kernel(x)))


def i1_kernel(x):
    """The modified Bessel function of order 1."""
    return where(m.isinf(x), x, m.multiply(m.exp(m.absolute(x)), i1e_kernel(x)))


def _over_x(v, x):
    """v / x, with its limit 1/2 at x == 0 (for v = I1(x) or exp(-|x|) I1(x))."""
    zero = m.equal(x, 0.0)
    return where(zero, 0.5, m.true_divide(v, where(zero, 1.0, x)))


# d/dx exp(-|x|) I(x) = exp(-|x|) (I'(x) - sign(x) I(x)): sign(0) = 0, as |x|' at 0
i0 = ufunc("i0", i0_kernel, [lambda a, ans: i1(a[0])])
i0e = ufunc("i0e", i0e_kernel,
            [lambda a, ans: m.subtract(i1e(a[0]), m.multiply(m.sign(a[0]), ans))])
i1 = ufunc("i1", i1_kernel, [lambda a, ans: m.subtract(i0(a[0]), _over_x(ans, a[0]))])
i1e = ufunc("i1e", i1e_kernel,
            [lambda a, ans: m.subtract(m.subtract(i0e(a[0]), _over_x(ans, a[0])),
                                       m.multiply(m.sign(a[0]), ans))])


# the ufuncs of scipy.special evaluated on tracers, by the ufunc's ``__name__`` (digamma's is
# "psi"; zeta(x) and zeta(x, q) call the private ufuncs _riemann_zeta and _zeta)
UFUNCS = {**{name: getattr(special, name) for name in special.__all__},
          "gammaln": gammaln, "gamma": gamma, "psi": digamma, "betaln": betaln,
          "i0": i0, "i0e": i0e, "i1": i1, "i1e": i1e, "_zeta": zeta,
          "_riemann_zeta": riemann_zeta}
