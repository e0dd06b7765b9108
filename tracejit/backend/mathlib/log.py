"""Branch-free f64 logarithm bodies (log, log2, log10, log1p, and arcsinh, arccosh, arctanh
built on them), emitted with ``mathlib_emit.Emit``; the conventions (accuracy, special values,
no fast-math) are in mathlib_emit.py's docstring. log1p(f) uses fdlibm's minimax Lg1..Lg7."""
from __future__ import annotations

from .emitter import _D, LN2, LN10, Emit, split

LN2_HI, LN2_LO = split(LN2)
INV_LN2 = float(_D.divide(1, LN2))
INV_LN2_HI, INV_LN2_LO = split(_D.divide(1, LN2))
INV_LN10 = float(_D.divide(1, LN10))
INV_LN10_HI, INV_LN10_LO = split(_D.divide(1, LN10))
LOG10_2_HI, LOG10_2_LO = split(_D.divide(LN2, LN10))
# log1p(f) = 2s + s*z*LOG_LG(z), s = f/(2+f), z = s^2 <= 0.1716^2: fdlibm's minimax Lg1..Lg7
# (e_log.c; |error| < 2^-58.45). Taylor (2/(2i+1)) would need 11 terms for the same bound.
LOG_LG = [6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
          2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
          1.479819860511658591e-01]


def _log_reduce(e: Emit, ix):
    """(kf, f, y_lo) for a positive normal x with bits ix: x = 2^k*(1+f) with f in
    [sqrt(2)/2-1, sqrt(2)-1] exact, and log1p(f) = f + y_lo.

    Integer work is on bit patterns (fdlibm's high-word trick on the whole i64). With
    s = f/(2+f), f - f*s = 2s, so log1p(f) = 2*atanh(s) = 2s + s*R(s^2) = f - s*(f - R): the
    leading f is exact and every rounding error is scaled by s <= 0.172 (no 0.5*f*f term)."""
    u = e.b.add(ix, e.ci(0x3FF0000000000000 - 0x3FE6A09E00000000))
    k = e.b.sub(e.b.ashr(u, e.ci(52)), e.ci(1023))
    m = e.b.add(e.b.and_(u, e.ci(0x000FFFFFFFFFFFFF)), e.ci(0x3FE6A09E00000000))
    f = e.sub(e.from_bits(m), e.c(1.0))
    kf = e.b.sitofp(k, e.vt)                 # k is a defined integer: no poison
    return kf, f, _log1p_lo(e, f)


def _log1p_lo(e: Emit, f):
    s = e.div(f, e.add(e.c(2.0), f))
    z = e.mul(s, s)
    big_r = e.mul(z, e.poly(z, e.terms(LOG_LG, 5)))
    return e.mul(e.neg(s), e.sub(f, big_r))


def _log_parts(e: Emit, x):
    """``_log_reduce`` for any x >= 0 (subnormals prescaled by 2^54); garbage for x <= 0,
    inf, NaN: callers select those lanes away."""
    tiny = e.lt(x, e.c(2.0 ** -1022))
    xs = e.sel(tiny, e.mul(x, e.c(2.0 ** 54)), x)
    kf, f, y_lo = _log_reduce(e, e.bits(xs))
    return e.sub(kf, e.sel(tiny, e.c(54.0), e.c(0.0))), f, y_lo


def _log_specials(e: Emit, x, res):
    """log-family special values: +inf -> +inf, 0 -> -inf, x < 0 -> NaN, NaN -> NaN."""
    res = e.sel(e.eq(x, e.c(float("inf"))), x, res)
    res = e.sel(e.eq(x, e.c(0.0)), e.c(float("-inf")), res)
    res = e.sel(e.lt(x, e.c(0.0)), e.c(float("nan")), res)
    return e.sel(e.isnan(x), x, res)


def _log_family(e: Emit, x, combine):
    """combine(kf, f, y_lo) on positive normal lanes; a ``rare`` block (any lane 0, subnormal,
    negative, inf or NaN) redoes the vector with the prescale and the special-value selects."""
    ix = e.bits(x)
    fast = combine(*_log_reduce(e, ix))
    special = e.b.icmp_unsigned(">=", e.b.sub(ix, e.ci(0x0010000000000000)),
                                e.ci(0x7FF0000000000000 - 0x0010000000000000))
    return e.rare(special, fast, lambda: _log_specials(e, x, combine(*_log_parts(e, x))))


def _combine_ln(e: Emit, kf, f, y_lo):
    """k*ln2 + f + y_lo; k*LN2_HI is exact, so the last fma rounds once."""
    return e.fma(kf, e.c(LN2_HI), e.add(f, e.fma(kf, e.c(LN2_LO), y_lo)))


def _combine_log2(e: Emit, kf, f, y_lo):
    """k + (f + y_lo)/ln2 = hi + (err + lo), hi = k + f*C rounded and err its exact residual
    (k - hi is exact: Sterbenz for k != 0 as |f*C| <= 1/2)."""
    hi = e.fma(f, e.c(INV_LN2_HI), kf)
    err = e.fma(f, e.c(INV_LN2_HI), e.sub(kf, hi))
    lo = e.fma(y_lo, e.c(INV_LN2), e.mul(f, e.c(INV_LN2_LO)))
    return e.add(hi, e.add(err, lo))


def _combine_log10(e: Emit, kf, f, y_lo):
    """k*log10(2) + (f + y_lo)/ln10 the same way, with k*LOG10_2_HI exact."""
    k_hi = e.mul(kf, e.c(LOG10_2_HI))
    hi = e.fma(f, e.c(INV_LN10_HI), k_hi)
    err = e.fma(f, e.c(INV_LN10_HI), e.sub(k_hi, hi))
    lo = e.fma(y_lo, e.c(INV_LN10), e.fma(f, e.c(INV_LN10_LO), e.mul(kf, e.c(LOG10_2_LO))))
    return e.add(hi, e.add(err, lo))


def emit_log_dd(e: Emit, x, err=None, kadd=None):
    """log(x + err) + kadd*ln2 for x >= 0 (err a small correction, |err| <= ulp(x); kadd an
    integer-valued float value added to the exponent, so the ln2 multiple stays exact)."""
    kf, f, y_lo = _log_parts(e, x)
    if kadd is not None:
        kf = e.add(kf, kadd)
    if err is not None:
        y_lo = e.add(y_lo, e.div(err, x))
    return _log_specials(e, x, _combine_ln(e, kf, f, y_lo))


def emit_log(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_ln(e, kf, f, y_lo))


def emit_log2(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_log2(e, kf, f, y_lo))


def emit_log10(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_log10(e, kf, f, y_lo))


def _log1p_core(e: Emit, y):
    """log1p(y) for y >= -1 without specials: log(1+y) corrected by the exact error of 1+y."""
    u, err = e.two_sum(e.c(1.0), y)
    return emit_log_dd(e, u, err)


def emit_log1p(e: Emit, x):
    """log1p x = k*ln2 + log1p(f), k from m = 1+x and f = x*2^-k + (2^-k - 1), which is exact
    (both terms are on f's grid), so 1+x's rounding error needs no division: x*2^-k by
    subtracting k from x's exponent field, 2^-k - 1 is -1 to within 2^-1000 for large k."""
    m = e.add(x, e.c(1.0))
    u = e.b.add(e.bits(m), e.ci(0x3FF0000000000000 - 0x3FE6A09E00000000))
    k = e.b.sub(e.b.ashr(u, e.ci(52)), e.ci(1023))
    x_scaled = e.from_bits(e.b.sub(e.bits(x), e.b.shl(k, e.ci(52))))
    k_small = e.b.select(e.b.icmp_signed(">", k, e.ci(1000)), e.ci(1000), k)
    f = e.add(x_scaled, e.sub(e.pow2(e.b.neg(k_small)), e.c(1.0)))
    res = _combine_ln(e, e.b.sitofp(k, e.vt), f, _log1p_lo(e, f))
    fine = e.b.and_(e.gt(x, e.c(-1.0)), e.lt(x, e.c(float("inf"))))

    def slow():
        out = e.sel(e.eq(x, e.c(float("inf"))), x, res)
        out = e.sel(e.eq(x, e.c(-1.0)), e.c(float("-inf")), out)
        out = e.sel(e.lt(x, e.c(-1.0)), e.c(float("nan")), out)
        return e.sel(e.isnan(x), x, out)
    res = e.rare(e.b.not_(fine), res, slow)
    return e.sel(e.lt(e.abs(x), e.c(2.0 ** -54)), x, res)


def emit_arcsinh(e: Emit, x):
    """musl asinh, branch-free: one log evaluation on a selected argument."""
    ax = e.abs(x)
    one = e.c(1.0)
    x2 = e.mul(ax, ax)
    root = e.sqrt(e.add(x2, one))
    u_mid = e.add(e.mul(e.c(2.0), ax), e.div(one, e.add(root, ax)))
    u_small, err = e.two_sum(one, e.add(ax, e.div(x2, e.add(root, one))))
    huge = e.ge(ax, e.c(2.0 ** 28))
    mid = e.ge(ax, e.c(2.0))
    u = e.sel(huge, ax, e.sel(mid, u_mid, u_small))
    err = e.sel(mid, e.c(0.0), err)                  # mid is also true for huge lanes
    res = emit_log_dd(e, u, err, kadd=e.sel(huge, e.c(1.0), e.c(0.0)))
    res = e.sel(e.lt(ax, e.c(2.0 ** -28)), ax, res)
    return e.copysign(res, x)


def emit_arccosh(e: Emit, x):
    """musl acosh, branch-free: log1p form below 2, log form above, log(x)+ln2 when huge."""
    one = e.c(1.0)
    y = e.sub(x, one)                                # exact for x in [1, 2]
    u_small, err = e.two_sum(one, e.add(y, e.sqrt(e.fma(y, y, e.mul(e.c(2.0), y)))))
    u_mid = e.sub(e.mul(e.c(2.0), x), e.div(one, e.add(x, e.sqrt(e.fma(x, x, e.c(-1.0))))))
    huge = e.ge(x, e.c(2.0 ** 28))
    mid = e.ge(x, e.c(2.0))
    u = e.sel(huge, x, e.sel(mid, u_mid, u_small))
    err = e.sel(mid, e.c(0.0), err)
    res = emit_log_dd(e, u, err, kadd=e.sel(huge, one, e.c(0.0)))
    res = e.sel(e.lt(x, one), e.c(float("nan")), res)
    return e.sel(e.isnan(x), x, res)


def emit_arctanh(e: Emit, x):
    """atanh|x| = log1p(2|x|/(1-|x|))/2 (musl); 1-|x| is exact for |x| >= 1/2."""
    ax = e.abs(x)
    two_ax = e.mul(e.c(2.0), ax)
    one_m = e.sub(e.c(1.0), ax)
    y_small = e.add(two_ax, e.div(e.mul(two_ax, ax), one_m))
    y_big = e.div(two_ax, one_m)
    y = e.sel(e.lt(ax, e.c(0.5)), y_small, y_big)
    res = e.mul(e.c(0.5), _log1p_core(e, e.sel(e.lt(ax, e.c(1.0)), y, e.c(0.0))))
    res = e.sel(e.lt(ax, e.c(2.0 ** -28)), ax, res)
    res = e.sel(e.eq(ax, e.c(1.0)), e.c(float("inf")), res)
    res = e.sel(e.gt(ax, e.c(1.0)), e.c(float("nan")), res)
    return e.sel(e.isnan(x), x, e.copysign(res, x))
