"""SciPy's special-function ufuncs on tracers (erf family, logistic family, xlogy, entropies).

``scipy.special.erf(tracer)`` is a ufunc call, so it reaches ``Tracer.__array_ufunc__``; the
dispatcher (``dispatch.py``) finds the function by the ufunc's name in ``special_gamma.UFUNCS``
(``special_gamma.py`` has the gamma, Bessel and zeta families). ``tracejit.scipy.special`` is
the public namespace that re-exports them.

Invariants:
- Every function is a *composite* of tracejit primitives (polynomial and rational
  approximations from Cephes, which SciPy uses too), so it fuses into native loops, batches and
  folds like any NumPy code, and needs neither SciPy nor a new primitive: on ndarrays the same
  code runs with NumPy (``tracejit.scipy`` works without SciPy installed).
- Derivatives come from ``custom_jvp`` rules written with the exact derivative (``erf'(x) =
  2/sqrt(pi) exp(-x**2)``), never from differentiating an approximation; the rules call these
  functions again, so every order is exact.
- Arithmetic is float64: float32 operands are computed in float64 and rounded once at the end
  (as SciPy's float32 loops do), integers and bools promote to float64, complex is refused.
- Branches are ``where`` selections between approximations that are each evaluated on an
  operand clamped to their own range, so an unselected branch never produces inf or NaN.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..custom import custom_jvp
from ..errors import DTypeError, UnsupportedError
from . import logic, math as m
from ._base import as_traceable, broadcast_to, result_type

__all__ = ["erf", "erfc", "erfcx", "erfinv", "erfcinv", "ndtr", "ndtri", "log_ndtr", "expit",
           "logit", "log_expit", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div"]

SQRT1_2 = 0.70710678118654752440
SQRT2 = 1.41421356237309504880
TWO_SQRTPI = 1.12837916709551257390          # 2 / sqrt(pi)
SQRT2PI = 2.50662827463100050242
LOGPI = 1.14472988584940017414
MAXLOG = 7.09782712893383996843e2            # log(DBL_MAX)
INF, NAN = float("inf"), float("nan")


def polevl(x, coefs):
    """``coefs[0] * x**n + ... + coefs[n]`` by Horner's rule (Cephes' order)."""
    r = coefs[0]
    for c in coefs[1:]:
        r = m.add(m.multiply(r, x), c)
    return r


def p1evl(x, coefs):
    """Like ``polevl`` with an implicit leading coefficient 1."""
    return polevl(x, (1.0,) + tuple(coefs))


def where(c, a, b):
    return logic.where(c, a, b)


def clamp_to(cond, x, fill):
    """``x`` where ``cond``, else ``fill``: the operand of a branch, kept inside its range."""
    return logic.where(cond, x, fill)


def _f64(x):
    if isinstance(x, Tracer):
        return x if x.dtype == dtypes.float64 else x.astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def ufunc(name, kernel, derivs):
    """Define the SciPy ufunc ``name`` from ``kernel`` (float64 operands -> float64 result) and
    ``derivs``: one ``(args, ans) -> d ans / d arg_i`` per operand, or ``(None,) * nin``
    when the derivatives of the composite itself are exact enough (series and sums, whose
    derivative is the same series differentiated). A string instead of a rule says why the
    function is not differentiable in that operand: differentiating it there raises."""
    nin = len(derivs)
    guards = [not_differentiable(f"scipy.special.{name}", i, d) if isinstance(d, str)
              else None for i, d in enumerate(derivs)]

    if derivs[0] is None:
        core = kernel
    else:
        core = custom_jvp(kernel)
        core.trace_cache = {}              # a kernel is pure: its graph depends on types only
        core.defjvp(lambda primals, tangents: _rule(primals, tangents))

    def _rule(primals, tangents):
        ans = core(*primals)
        t = None
        for d, g in zip(derivs, tangents):
            if isinstance(d, str):             # its guard raised if g could be nonzero
                continue
            term = m.multiply(g, d(primals, ans))
            t = term if t is None else m.add(t, term)
        # a scalar operand's tangent term may have a smaller shape than the result
        return ans, broadcast_to(t, type_of(ans).shape)

    def fn(*args):
        if len(args) != nin:
            raise TypeError(f"{name} takes {nin} argument(s), got {len(args)}")
        args = [as_traceable(a) if isinstance(a, (list, tuple)) else a for a in args]
        dt, _ = result_type(*args)
        if dt.kind == "c":
            raise DTypeError(f"scipy.special.{name} of complex operands is not supported by "
                             f"tracejit; pass real (float32/float64) arrays")
        out_dt = dt if dt.kind == "f" else dtypes.float64
        out = core(*[_f64(a) if g is None else g(_f64(a)) for a, g in zip(args, guards)])
        if not isinstance(out, Tracer) and not any(isinstance(a, Tracer) for a in args):
            out = np.asarray(out, dtype=out_dt)
            return out[()] if out.ndim == 0 else out
        return out if out_dt == dtypes.float64 else out.astype(out_dt)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = kernel.__doc__
    return fn


def not_differentiable(name, i, reason):
    """The identity on operand ``i`` of ``name``, whose derivative raises: the JVP transform
    calls a rule only for a nonzero tangent, so a constant operand passes."""
    def identity(x):
        return m.multiply(x, 1.0)

    guard = custom_jvp(identity)
    guard.trace_cache = {}

    def rule(primals, tangents):
        raise UnsupportedError(f"{name} is not differentiable in operand {i} "
                               f"{reason} in tracejit; wrap that operand in "
                               f"tracejit.stop_gradient if it is meant as a constant")
    guard.defjvp(rule)
    return guard


def _with_sign_of(r, x):
    """``r`` (>= 0) with the sign of ``x`` (x nonzero)."""
    return where(m.less(x, 0.0), m.negative(r), r)


def _zero_or(x, v):
    """``v`` where ``x != 0``, else 0 (a term multiplied by a zero ``x``)."""
    return where(m.equal(x, 0), 0.0, v)


# error function ----------------------------------------------------------------------------
# Cephes ndtr.c: erf on |x| <= 1, erfc on [1, 8) and [8, inf) as exp(-x**2) * P(x) / Q(x)
_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
      7.00332514112805075473E3, 5.55923013010394962768E4)
_U = (3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
      2.26290000613890934246E4, 4.92673942608635921086E4)
_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
      4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
      9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
      9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
      1.65666309194161350182E3, 5.57535340817727675546E2)
_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
      6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
      1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)


def _erf_small(x):
    """erf(x) for |x| <= 1 (``x`` clamped there by the caller)."""
    z = m.multiply(x, x)
    return m.true_divide(m.multiply(x, polevl(z, _T)), p1evl(z, _U))


def _erfcx_large(a):
    """exp(a**2) erfc(a) for a >= 1: Cephes' rationals, and the asymptotic series
    1/(a sqrt(pi)) (1 - 1/(2a^2) + 3/(2a^2)^2 - ...) beyond 26, where they were not fitted."""
    lo = clamp_to(m.less(a, 8.0), a, 8.0)
    mid = clamp_to(m.less(a, 26.0), a, 26.0)
    r_lo = m.true_divide(polevl(lo, _P), p1evl(lo, _Q))
    r_mid = m.true_divide(polevl(mid, _R), p1evl(mid, _S))
    big = clamp_to(m.greater_equal(a, 26.0), a, 26.0)
    w = m.true_divide(-0.5, m.multiply(big, big))
    series, term = 1.0, 1.0
    for k in range(1, 9):                      # terms below 1e-18 of the sum for a >= 26
        term = m.multiply(term, m.multiply(w, 2 * k - 1))
        series = m.add(series, term)
    r_big = m.true_divide(series, m.multiply(big, 1.77245385090551602730))
    return where(m.less(a, 8.0), r_lo, where(m.less(a, 26.0), r_mid, r_big))


def exp_neg_square(a, scale=1.0):
    """exp(-scale * a**2) (``scale`` 1 or 1/2) without the rounding error of a*a (Cephes'
    expx2): a = h + l with h a multiple of 1/128, so scale*h*h is exact and the rest small."""
    a = m.minimum(m.absolute(a), 60.0)         # exp(-1800) is 0 already; no inf - inf
    h = m.multiply(m.floor(m.add(m.multiply(a, 128.0), 0.5)), 1.0 / 128.0)
    lo = m.subtract(a, h)
    return m.multiply(m.exp(m.multiply(m.multiply(h, h), -scale)),
                      m.exp(m.multiply(m.multiply(m.add(m.multiply(h, 2.0), lo), lo), -scale)))


def _erfc_pos(a):
    """erfc(a) for a >= 1 (clamped by the caller)."""
    return m.multiply(exp_neg_square(a), _erfcx_large(a))


def erf_kernel(x):
    """The error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x."""
    ax = m.absolute(x)
    small = m.less_equal(ax, 1.0)
    r_small = _erf_small(clamp_to(small, x, 0.0))
    big = clamp_to(small, 1.0, ax)
    r_big = m.subtract(1.0, _erfc_pos(big))
    r = where(small, r_small, _with_sign_of(r_big, x))
    return where(m.isnan(x), NAN, r)


def erfc_kernel(x):
    """The complementary error function 1 - erf(x), accurate in the right tail."""
    ax = m.absolute(x)
    small = m.less(ax, 1.0)
    r_small = m.subtract(1.0, _erf_small(clamp_to(small, x, 0.0)))
    tail = _erfc_pos(clamp_to(small, 1.0, ax))
    r = where(small, r_small, where(m.less(x, 0.0), m.subtract(2.0, tail), tail))
    return where(m.isnan(x), NAN, r)


def erfcx_kernel(x):
    """The scaled complementary error function exp(x**2) * erfc(x)."""
    big = m.greater_equal(x, 1.0)
    r_big = _erfcx_large(clamp_to(big, x, 1.0))
    xs = clamp_to(big, 0.0, x)
    # below 1: exp(x**2) erfc(x); exp(x**2) overflows (to inf, the right answer) below -26.6
    r_small = m.multiply(m.true_divide(1.0, exp_neg_square(xs)), erfc_kernel(xs))
    return where(big, r_big, r_small)


def _gauss(x):
    return m.multiply(TWO_SQRTPI, exp_neg_square(x))


erf = ufunc("erf", erf_kernel, [lambda a, ans: _gauss(a[0])])
erfc = ufunc("erfc", erfc_kernel, [lambda a, ans: m.negative(_gauss(a[0]))])
erfcx = ufunc("erfcx", erfcx_kernel,
              [lambda a, ans: m.subtract(m.multiply(m.multiply(a[0], 2.0), ans), TWO_SQRTPI)])


def ndtr_kernel(a):
    """The standard normal CDF: the area under the Gaussian from -inf to x. For |x|/sqrt(2)
    < 1, (1 + erf(x/sqrt(2)))/2; beyond, the tail 0.5 exp(-a**2/2) erfcx(|a|/sqrt(2)) with
    exp(-a**2/2) from ``a`` itself: the rounding of a/sqrt(2) would cost a**2 ulp there
    (SciPy's 1e-13 at -23), in erfcx it costs one."""
    x = m.multiply(a, SQRT1_2)
    z = m.absolute(x)
    tail = m.greater_equal(z, 1.0)
    r_centre = m.add(0.5, m.multiply(0.5, _erf_small(clamp_to(tail, 0.0, x))))
    y = m.multiply(m.multiply(exp_neg_square(a, 0.5), 0.5),
                   _erfcx_large(clamp_to(tail, z, 1.0)))
    r_tail = where(m.greater(x, 0.0), m.subtract(1.0, y), y)
    return where(m.isnan(a), NAN, where(tail, r_tail, r_centre))


def log_ndtr_kernel(a):
    """The log of the standard normal CDF, accurate in both tails: log(erfcx(u)/2) - u**2
    with u = -x/sqrt(2) below -1 (as SciPy), log1p(-ndtr(-x)) above; one erfcx rational and
    one erf rational serve both."""
    t = m.multiply(a, SQRT1_2)
    low = m.less(a, -1.0)
    u = where(low, m.negative(t), t)                   # >= 1/sqrt(2) where low
    big = m.greater_equal(u, 1.0)
    cx = _erfcx_large(clamp_to(big, u, 1.0))           # erfcx(u), u >= 1
    e = _erf_small(clamp_to(big, 0.0, u))              # erf(u), |u| < 1
    # below -1: erfcx(u) = exp(u**2) (1 - erf(u)) for u < 1 (no overflow: u < 1 there)
    ul = clamp_to(m.logical_and(low, m.logical_not(big)), u, 0.0)
    erfcx_u = where(big, cx, m.multiply(m.exp(m.multiply(ul, ul)), m.subtract(1.0, e)))
    r_low = m.subtract(m.log(m.multiply(erfcx_u, 0.5)), m.multiply(u, u))
    # above -1: ndtr(-a) = erfc(u)/2, from exp(-a**2/2) of a itself in the tail
    q = where(big, m.multiply(m.multiply(exp_neg_square(a, 0.5), 0.5), cx),
              m.multiply(m.subtract(1.0, e), 0.5))
    r_high = m.log1p(m.negative(q))
    return where(low, r_low, r_high)


ndtr = ufunc("ndtr", ndtr_kernel,
             [lambda a, ans: m.true_divide(exp_neg_square(a[0], 0.5), SQRT2PI)])
# d/dx log ndtr(x) = pdf(x) / ndtr(x) = sqrt(2/pi) / erfcx(-x/sqrt(2)), finite in both tails
log_ndtr = ufunc("log_ndtr", log_ndtr_kernel,
                 [lambda a, ans: m.true_divide(0.79788456080286535588,
                                               erfcx(m.multiply(a[0], -SQRT1_2)))])


# inverse normal CDF --------------------------------------------------------------------------
# Cephes ndtri.c: a rational in (p - 1/2)**2 in the centre, rationals in 1/sqrt(-2 log p) in
# the tails (for p > exp(-32) and below)
_P0 = (-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
       1.39312609387279679503E1, -1.23916583867381258016E0)
_Q0 = (1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
       -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
       1.59056225126211695515E1, -1.18331621121330003142E0)
_P1 = (4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
       4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
       -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4)
_Q1 = (1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
       1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
       -3.80806407691578277194E-2, -9.33259480895457427372E-4)
_P2 = (3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
       1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
       3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9)
_Q2 = (6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
       2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
       2.89247864745380683936E-6, 6.79019408009981274425E-9)
_EXPM2 = 0.13533528323661269189               # exp(-2)
_CENTRE = 0.5 - _EXPM2


def _ndtri_centre(d):
    """ndtri(1/2 + d) for |d| <= 1/2 - exp(-2), from ``d`` itself (no rounding of 1/2 + d)."""
    d2 = m.multiply(d, d)
    r = m.true_divide(m.multiply(d2, polevl(d2, _P0)), p1evl(d2, _Q0))
    return m.multiply(m.add(d, m.multiply(d, r)), SQRT2PI)


def _ndtri_tail(y):
    """-ndtri(y) for 0 < y <= exp(-2) (clamped by the caller)."""
    x = m.sqrt(m.multiply(m.log(y), -2.0))
    x0 = m.subtract(x, m.true_divide(m.log(x), x))
    z = m.true_divide(1.0, x)
    near = m.less(x, 8.0)
    r1 = m.true_divide(m.multiply(z, polevl(z, _P1)), p1evl(z, _Q1))
    r2 = m.true_divide(m.multiply(z, polevl(z, _P2)), p1evl(z, _Q2))
    return m.subtract(x0, where(near, r1, r2))


def _ndtri_lower(y):
    """ndtri(y) for 0 <= y <= 1/2 (-inf at 0); the tail rationals reach the smallest
    subnormal (sqrt(-2 log y) < 64)."""
    centre = m.greater(y, _EXPM2)
    rc = _ndtri_centre(m.subtract(clamp_to(centre, y, 0.5), 0.5))
    tail = m.logical_and(m.logical_not(centre), m.greater(y, 0.0))
    rt = m.negative(_ndtri_tail(clamp_to(tail, y, _EXPM2)))
    return where(centre, rc, where(m.equal(y, 0.0), -INF, rt))


def ndtri_kernel(p):
    """The inverse of the standard normal CDF (the quantile function)."""
    upper = m.greater(p, 0.5)
    q = where(upper, m.subtract(1.0, p), p)
    # 1 - p is exact for p >= 1/2, but the centre needs p - 1/2, not (1 - p) - 1/2
    centre = m.less_equal(m.absolute(m.subtract(p, 0.5)), _CENTRE)
    rc = _ndtri_centre(clamp_to(centre, m.subtract(p, 0.5), 0.0))
    rl = _ndtri_lower(clamp_to(centre, _EXPM2, q))
    r = where(centre, rc, where(upper, m.negative(rl), rl))
    bad = m.logical_or(m.less(p, 0.0), m.greater(p, 1.0))
    return where(m.logical_or(bad, m.isnan(p)), NAN, r)


def erfcinv_kernel(z):
    """The inverse of erfc on [0, 2]: erfcinv(z) = -ndtri(z/2)/sqrt(2)."""
    return m.multiply(ndtri_kernel(m.multiply(z, 0.5)), -SQRT1_2)


def erfinv_kernel(y):
    """The inverse of erf on [-1, 1]; near 0 from ndtri's central rational in y/2 itself, so
    tiny arguments keep full relative accuracy."""
    ay = m.absolute(y)
    centre = m.less_equal(ay, 2 * _CENTRE)
    rc = m.multiply(_ndtri_centre(m.multiply(clamp_to(centre, y, 0.0), 0.5)), SQRT1_2)
    rt = erfcinv_kernel(m.subtract(1.0, clamp_to(centre, 0.9, ay)))
    r = where(centre, rc, _with_sign_of(rt, y))
    return where(m.logical_or(m.greater(ay, 1.0), m.isnan(y)), NAN, r)


def _exp_sq(x, c):
    return m.exp(m.multiply(m.multiply(x, x), c))


ndtri = ufunc("ndtri", ndtri_kernel, [lambda a, ans: m.multiply(SQRT2PI, _exp_sq(ans, 0.5))])
erfinv = ufunc("erfinv", erfinv_kernel,
               [lambda a, ans: m.multiply(0.88622692545275801365, _exp_sq(ans, 1.0))])
erfcinv = ufunc("erfcinv", erfcinv_kernel,
                [lambda a, ans: m.multiply(-0.88622692545275801365, _exp_sq(ans, 1.0))])


# logistic family -----------------------------------------------------------------------------
def expit_kernel(x):
    """The logistic sigmoid 1 / (1 + exp(-x)), without overflow for large |x|."""
    e = m.exp(m.negative(m.absolute(x)))
    return where(m.greater_equal(x, 0.0), m.true_divide(1.0, m.add(1.0, e)),
                 m.true_divide(e, m.add(1.0, e)))


def logit_kernel(p):
    """log(p / (1 - p)); near 1/2 as log1p(2(p - 1/2)) - log1p(-2(p - 1/2)), as SciPy."""
    s = m.multiply(m.subtract(p, 0.5), 2.0)
    mid = m.logical_and(m.greater_equal(p, 0.3), m.less_equal(p, 0.65))
    r_mid = m.subtract(m.log1p(s), m.log1p(m.negative(s)))
    r = m.log(m.true_divide(p, m.subtract(1.0, p)))
    return where(mid, r_mid, r)


def log_expit_kernel(x):
    """log(expit(x)) = -log1p(exp(-x)), without overflow or cancellation."""
    e = m.exp(m.negative(m.absolute(x)))
    return m.subtract(m.minimum(x, 0.0), m.log1p(e))


expit = ufunc("expit", expit_kernel,
              [lambda a, ans: m.multiply(ans, expit(m.negative(a[0])))])
logit = ufunc("logit", logit_kernel,
              [lambda a, ans: m.true_divide(1.0, m.multiply(a[0], m.subtract(1.0, a[0])))])
log_expit = ufunc("log_expit", log_expit_kernel, [lambda a, ans: expit(m.negative(a[0]))])


# x log y and entropies ---------------------------------------------------------------------
def xlogy_kernel(x, y):
    """x * log(y), taken as 0 where x == 0 (unless y is NaN)."""
    zero = m.logical_and(m.equal(x, 0.0), m.logical_not(m.isnan(y)))
    return where(zero, 0.0, m.multiply(x, m.log(y)))


def xlog1py_kernel(x, y):
    """x * log1p(y), taken as 0 where x == 0 (unless y is NaN)."""
    zero = m.logical_and(m.equal(x, 0.0), m.logical_not(m.isnan(y)))
    return where(zero, 0.0, m.multiply(x, m.log1p(y)))


def entr_kernel(x):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0."""
    pos = m.greater(x, 0.0)
    r = m.negative(m.multiply(x, m.log(clamp_to(pos, x, 1.0))))
    return where(pos, r, where(m.equal(x, 0.0), 0.0, where(m.isnan(x), NAN, -INF)))


def _rel_entr_where(x, y, value, zero_value):
    pos = m.logical_and(m.greater(x, 0.0), m.greater(y, 0.0))
    zero = m.logical_and(m.equal(x, 0.0), m.greater_equal(y, 0.0))
    nan = m.logical_or(m.isnan(x), m.isnan(y))
    return where(pos, value(clamp_to(pos, x, 1.0), clamp_to(pos, y, 1.0)),
                 where(zero, zero_value(y), where(nan, NAN, INF)))


def _x_log_x_over_y(x, y):
    return m.multiply(x, m.log(m.true_divide(x, y)))


def rel_entr_kernel(x, y):
    """x log(x / y) for x, y > 0; 0 where x == 0 <= y; inf elsewhere."""
    return _rel_entr_where(x, y, _x_log_x_over_y, lambda y: m.multiply(y, 0.0))


def kl_div_kernel(x, y):
    """x log(x / y) - x + y for x, y > 0; y where x == 0 <= y; inf elsewhere."""
    return _rel_entr_where(
        x, y, lambda x, y: m.add(m.subtract(_x_log_x_over_y(x, y), x), y), lambda y: y)


def _pos_part(c, v):
    """``v`` where ``c``, else 0 (a derivative that is 0 off the region ``c``)."""
    return where(c, v, 0.0)


xlogy = ufunc("xlogy", xlogy_kernel,
              [lambda a, ans: m.log(a[1]),
               lambda a, ans: _zero_or(a[0], m.true_divide(a[0], a[1]))])
xlog1py = ufunc("xlog1py", xlog1py_kernel,
                [lambda a, ans: m.log1p(a[1]),
                 lambda a, ans: _zero_or(a[0], m.true_divide(a[0], m.add(a[1], 1.0)))])
# the one-sided derivative at 0 is +inf (-(1 + log 0)); constant -inf below 0
entr = ufunc("entr", entr_kernel,
             [lambda a, ans: _pos_part(m.greater_equal(a[0], 0.0),
                                       m.negative(m.add(m.log(a[0]), 1.0)))])
def _pos2(a):
    """Both operands positive: where x log(x/y) is differentiable."""
    return m.logical_and(m.greater(a[0], 0.0), m.greater(a[1], 0.0))


rel_entr = ufunc("rel_entr", rel_entr_kernel,
                 [lambda a, ans: _pos_part(_pos2(a), m.add(m.log(m.true_divide(a[0], a[1])), 1.0)),
                  lambda a, ans: _pos_part(_pos2(a), m.negative(m.true_divide(a[0], a[1])))])
kl_div = ufunc("kl_div", kl_div_kernel,
               [lambda a, ans: _pos_part(_pos2(a), m.log(m.true_divide(a[0], a[1]))),
                lambda a, ans: where(m.logical_and(m.equal(a[0], 0.0), m.greater_equal(a[1], 0.0)),
                                     1.0, _pos_part(_pos2(a),
                                                    m.subtract(1.0, m.true_divide(a[0], a[1]))))])
