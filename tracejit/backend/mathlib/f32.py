"""Native f32 math bodies: exp exp2 expm1 log log2 log10 log1p sin cos tanh sinh cosh.

Every ``emit_*`` takes an :class:`~.emitter.Emit` for ``float`` (scalar or ``<w x float>``)
and a value of its type, and computes in f32 throughout (no widening to f64: a ``<16 x float>``
is one zmm register, twice the lanes per instruction of the f64 bodies).

Invariants (same as ``emitter.py``): no fast-math flags, only explicit ``llvm.fma``; integers
come from the 1.5*2^23 shifter (``_round``), never ``fptosi``; signed zeros, NaN, +-inf and
subnormals come out exactly as NumPy's, either from selects or from a ``rare`` block that only
runs when some lane needs it (log family: x <= 0, subnormal, inf, NaN; exp: |x| > 86 or NaN;
sinh/cosh: |x| >= 88 or NaN). exp, sinh and cosh are table-driven like ``emitter.py``'s exp
family, with 16-entry tables (one vpermps per lookup, ``Emit.lookup``).

Polynomials are discrete-minimax fits (linear programming on 3000 points, or Lawson's algorithm
for the table-driven ones, relative error, coefficients rounded to f32 one at a time with the
rest refitted); the error of each fit is noted next to it. Max errors, measured against the f64 result rounded to f32 over the test
domains (tests/test_mathlib.py), are in ``mathlib``'s docstring.
"""
from __future__ import annotations

import decimal

import numpy as np

from .emitter import LN2, LN10, Emit
from .trig import PI, scalar_fixup

SHIFT = 12582912.0                  # 1.5 * 2^23: x + SHIFT rounds x to an integer in the low bits
SHIFT_BITS = 0x4B400000
_D = decimal.Context(prec=60)


def _f32(value) -> float:
    return float(np.float32(float(value)))


def _split(value: decimal.Decimal):
    """(hi, lo) f32 pair with hi + lo = value to about 2^-48 relative."""
    hi = _f32(value)
    return hi, _f32(value - decimal.Decimal(hi))


LN2_HI, LN2_LO = _split(LN2)
INV_LN2 = _f32(_D.divide(1, LN2))
INV_LN2_HI, INV_LN2_LO = _split(_D.divide(1, LN2))
INV_LN10_HI, INV_LN10_LO = _split(_D.divide(1, LN10))
LOG10_2_HI, LOG10_2_LO = _split(_D.divide(LN2, LN10))


def _f32_down(value: decimal.Decimal) -> float:
    """The largest f32 <= value (value > 0)."""
    v = np.float32(float(value))
    return float(v if decimal.Decimal(float(v)) <= value else np.nextafter(v, np.float32(0)))


# pi = PI_1 + PI_2 + PI_3 + O(2^-72), every piece positive: then -q*PI_i is -0 for q = +0, so
# x = -0 reduces to r = -0 (a negative piece would turn it into +0)
PI_1 = _f32_down(PI)
PI_2 = _f32_down(PI - decimal.Decimal(PI_1))
PI_3 = _f32_down(PI - decimal.Decimal(PI_1) - decimal.Decimal(PI_2))
INV_PI = _f32(_D.divide(1, PI))

# Table-driven exp (as in ``emitter.py``): x = n*ln2/16 + r, n = 16m + j,
# 2^(j/16) = hi_j*(1 + tail_j) from two 16-entry tables (one vpermps each on AVX-512).
LN2_16_HI, LN2_16_LO = _split(_D.divide(LN2, 16))
INV_LN2_16 = _f32(_D.divide(16, LN2))
# e^r = 1 + r + r^2*EXP16_G(r), |r| <= 1.002*ln2/32: relative error 2^-29.2
EXP16_G = [0.5000162720680237, 0.16667017340660095]


def _exp2_table():
    """(hi, tail) f32 tables of 2^(j/16): tail_j = 2^(j/16)/hi_j - 1, hi_j's bits with j << 19
    subtracted (adding n << 19, n = 16m + j, gives 2^m * hi_j's bits)."""
    his, tails = [], []
    for j in range(16):
        value = _D.power(2, decimal.Decimal(j) / 16)
        hi = _f32(value)
        tails.append(_f32(_D.divide(value - decimal.Decimal(hi), decimal.Decimal(hi))))
        raw = int(np.float32(hi).view(np.int32)) - (j << 19)
        his.append(float(np.int32(raw).view(np.float32)))
    return his, tails


EXP16_HI, EXP16_TAIL = _exp2_table()
# sinh, cosh reduce a = |x| down (0 <= r): expm1(r) = r + r^2*EXPM1_UP16_G(r) on
# -0.002*ln2/16 <= r <= 1.002*ln2/16: relative error 2^-31.7
EXPM1_UP16_G = [0.5000001192092896, 0.1666494458913803, 0.042360950261354446]
# 2^r = 1 + r*EXP2_Q(r), |r| <= 1/2 + 2^-10: relative error 2^-28.3
EXP2_Q = [0.6931471824645996, 0.24022647738456726, 0.05550359562039375, 0.009618505835533142,
          0.0013391023967415094, 0.0001532679598312825]
# expm1(r) = r + r^2*EXPM1_P(r), |r| <= ln2/2 + 2^-9: error 2^-26.1 relative to expm1(r)
EXPM1_P = [0.4999999701976776, 0.1666654497385025, 0.04166743904352188, 0.008366456255316734,
           0.0013870458351448178]
# log1p(f) = 2s + s*z*LOG_P(z), s = f/(2+f), z = s^2 <= 0.1726^2: error 2^-30.1 relative
LOG_P = [0.6666678190231323, 0.39976781606674194, 0.2989395558834076]
# sin(r) = r + r^3*SIN_P(r^2), |r| <= pi/2 + 2^-10: relative error 2^-27.3
SIN_P = [-0.16666659712791443, 0.008333069272339344, -0.00019809772493317723,
         2.6060747586598154e-06]
# |x| at and above which sin/cos lanes go to scalar libm: below it x - q*PI_1 is exact and
# q*(pi - PI_1 - PI_2 - PI_3) < 2^-40
TRIG_HUGE = 2.0 ** 17


def _round(e: Emit, x):
    """(t, float k) with k = round(x) and the bits of t = SHIFT + k, for |x| < 2^22."""
    t = e.add(x, e.c(SHIFT))
    return t, e.sub(t, e.c(SHIFT))


def _round_fma(e: Emit, x, mul: float):
    """Like ``_round`` for x*mul, the product rounded once (one fma)."""
    t = e.fma(x, e.c(mul), e.c(SHIFT))
    return t, e.sub(t, e.c(SHIFT))


def _pow2_of(e: Emit, t, offset: int):
    """2^(k + offset) as a float from t = SHIFT + k, for -126 <= k + offset <= 127.

    t's bits are SHIFT_BITS + k and SHIFT_BITS << 23 vanishes mod 2^32, so bits(t) << 23 is
    k << 23: two integer ops, no conversion."""
    return e.from_bits(e.b.add(e.b.shl(e.bits(t), e.ci(23)), e.ci((127 + offset) << 23)))


def _pow2(e: Emit, ki):
    """2^ki for integer lanes -126 <= ki <= 127."""
    return e.from_bits(e.b.shl(e.b.add(ki, e.ci(127)), e.ci(23)))


def _kint(e: Emit, t):
    return e.b.sub(e.bits(t), e.ci(SHIFT_BITS))


def _scale(e: Emit, p, ki):
    """p * 2^ki with one rounding, for ki in about [-250, 250] (two exponent multiplies)."""
    k1 = e.b.ashr(ki, e.ci(1))
    return e.mul(e.mul(p, _pow2(e, k1)), _pow2(e, e.b.sub(ki, k1)))


# ----------------------------------------------------------------------------- exponentials

def _exp_reduce(e: Emit, x):
    """(t, r): x = k*ln2 + r, |r| <= ln2/2 + tiny, t = SHIFT + k (see ``_pow2_of``)."""
    t, kf = _round_fma(e, x, INV_LN2)
    r = e.fma(e.neg(kf), e.c(LN2_HI), x)       # exact for |k| <= 2^7: Sterbenz
    return t, e.fma(e.neg(kf), e.c(LN2_LO), r)


def _exp16_parts(e: Emit, x):
    """(t, tmp): x = n*ln2/16 + r, t = SHIFT + n, tmp = tail_j + expm1(r), |r| <= ln2/32."""
    t, kf = _round_fma(e, x, INV_LN2_16)
    r = e.fma(e.neg(kf), e.c(LN2_16_HI), x)       # exact: |r| < 2^-5, 24 bits
    r = e.fma(e.neg(kf), e.c(LN2_16_LO), r)
    acc = e.poly(r, [1.0] + EXP16_G)
    return t, e.fma(acc, r, e.lookup(EXP16_TAIL, e.bits(t)))


def emit_exp(e: Emit, x):
    """exp x = 2^m * 2^(j/16) * e^r (``emitter.emit_exp`` with 16 entries and a cubic:
    9 FMA-unit operations became 7 plus two vpermps); |x| > 86 (or NaN) lanes redo it
    clamped, hi_j*(1 + tmp) scaled by two exponent multiplies."""
    t, tmp = _exp16_parts(e, x)
    tb = e.bits(t)
    s = e.from_bits(e.b.add(e.bits(e.lookup(EXP16_HI, tb)), e.b.shl(tb, e.ci(19))))
    fast = e.fma(s, tmp, s)

    def slow():
        t2, tmp2 = _exp16_parts(e, e.clamp(x, -104.0, 89.0))
        tb2 = e.bits(t2)
        hi = e.from_bits(e.b.add(e.bits(e.lookup(EXP16_HI, tb2)),
                                 e.b.shl(e.b.and_(tb2, e.ci(15)), e.ci(19))))
        return _scale(e, e.fma(hi, tmp2, hi), e.b.ashr(_kint(e, t2), e.ci(4)))
    return e.rare(e.b.not_(e.lt(e.abs(x), e.c(86.0))), fast, slow)


def emit_exp2(e: Emit, x):
    """2^x = 2^k * 2^r with k = round(x), r = x - k exact."""
    def body(xc):
        t, kf = _round(e, xc)
        r = e.sub(xc, kf)
        return t, e.fma(r, e.poly(r, EXP2_Q), e.c(1.0))

    t, p = body(x)
    fast = e.from_bits(e.b.add(e.bits(p), e.b.shl(e.bits(t), e.ci(23))))

    def slow():
        t2, p2 = body(e.clamp(x, -151.0, 129.0))
        return _scale(e, p2, _kint(e, t2))
    return e.rare(e.b.not_(e.lt(e.abs(x), e.c(124.0))), fast, slow)


def _expm1_core(e: Emit, x):
    """(t, q) with x = k*ln2 + r, q = expm1(r) and t = SHIFT + k, for |x| <= 2^22*ln2."""
    t, r = _exp_reduce(e, x)
    return t, e.fma(e.mul(r, r), e.poly(r, EXPM1_P), r)


def _expm1_from(e: Emit, t, q):
    """2^k*(1+q) - 1 = 2 * (h*q + (h - 1/2)) with h = 2^(k-1), for -125 <= k <= 128."""
    h = _pow2_of(e, t, -1)
    return e.mul(e.c(2.0), e.fma(h, q, e.sub(h, e.c(0.5))))


def emit_expm1(e: Emit, x):
    """expm1 x; clamping to [-17.5, 88.75] gives -1 / inf and lets NaN through."""
    t, q = _expm1_core(e, e.clamp(x, -17.5, 88.75))
    res = _expm1_from(e, t, q)
    return e.sel(e.lt(e.abs(x), e.c(2.0 ** -25)), x, res)


def emit_tanh(e: Emit, x):
    """tanh|x| = u/(u+2) with u = expm1(2|x|): no cancellation anywhere; sign by copysign."""
    ax = e.abs(x)
    t, q = _expm1_core(e, e.mul(e.c(2.0), e.sel(e.gt(ax, e.c(10.0)), e.c(10.0), ax)))
    u = _expm1_from(e, t, q)
    res = e.div(u, e.add(u, e.c(2.0)))
    res = e.sel(e.lt(ax, e.c(2.0 ** -12)), ax, res)
    return e.copysign(res, x)


def _expm1_down(e: Emit, a):
    """(tb, p): a = n*ln2/16 + r with 0 <= r <= ln2/16 for a >= 0 (reduced down, so
    expm1(a) = (S - 1) + S*p has no cancellation), tb the bits of SHIFT + n and
    p = tail_j + expm1(r): e^a = 2^m * hi_j * (1 + p), n = 16m + j."""
    t = e.add(e.fma(a, e.c(INV_LN2_16), e.c(-0.5)), e.c(SHIFT))
    kf = e.sub(t, e.c(SHIFT))
    r = e.fma(e.neg(kf), e.c(LN2_16_LO), e.fma(e.neg(kf), e.c(LN2_16_HI), a))
    tb = e.bits(t)
    return tb, e.add(r, e.fma(e.poly(r, EXPM1_UP16_G), e.mul(r, r),
                              e.lookup(EXP16_TAIL, tb)))


def _pow16(e: Emit, tb):
    """2^m * hi_j by one integer add (normal results: m <= 127)."""
    return e.from_bits(e.b.add(e.bits(e.lookup(EXP16_HI, tb)), e.b.shl(tb, e.ci(19))))


def _hyperbolic(e: Emit, x, small_fn):
    """small_fn(s, p) (s = 2^m*hi_j, e^a = s*(1 + p)) for a = |x| < 88; lanes with a >= 88 or
    NaN send the vector to a rare path where they get e^a/2 by two exponent multiplies (a
    capped at 89.5, beyond the overflow at 89.42) and the others the fast path's bits."""
    ax = e.abs(x)
    tb, p = _expm1_down(e, ax)

    def slow():
        tb2, p2 = _expm1_down(e, e.sel(e.gt(ax, e.c(89.5)), e.c(89.5), ax))
        hi = e.from_bits(e.b.add(e.bits(e.lookup(EXP16_HI, tb2)),
                                 e.b.shl(e.b.and_(tb2, e.ci(15)), e.ci(19))))
        m = e.b.sub(e.b.ashr(e.b.sub(tb2, e.ci(SHIFT_BITS)), e.ci(4)), e.ci(1))
        return e.sel(e.b.not_(e.lt(ax, e.c(88.0))), _scale(e, e.fma(hi, p2, hi), m),
                     small_fn(_pow16(e, tb2), p2))
    return e.rare(e.b.not_(e.lt(ax, e.c(88.0))), small_fn(_pow16(e, tb), p), slow)


def emit_sinh(e: Emit, x):
    """sinh|x| = (t + q)/2, t = expm1|x|, q = t/(t+1); below t = 1 as t - (t/2)*q
    (``emitter.emit_sinh``; 2.2 -> 1.7 ulp)."""
    def small(s, p):
        t = e.fma(s, p, e.sub(s, e.c(1.0)))
        q = e.div(t, e.add(t, e.c(1.0)))
        low = e.lt(t, e.c(1.0))
        half = e.mul(t, e.c(0.5))
        return e.fma(e.sel(low, e.neg(half), e.c(0.5)), q, e.sel(low, t, half))
    return e.copysign(_hyperbolic(e, x, small), x)


def emit_cosh(e: Emit, x):
    """cosh x = u/2 + (1/2)/u with u = e^|x|."""
    def small(s, p):
        u = e.fma(s, p, s)
        return e.fma(e.c(0.5), u, e.div(e.c(0.5), u))
    return _hyperbolic(e, x, small)


# ----------------------------------------------------------------------------- logarithms

def _log_parts(e: Emit, ix):
    """(kf, f, y_lo) for a positive normal x with bits ix: x = 2^k*(1+f),
    f in [sqrt(2)/2-1, sqrt(2)-1] exact, log1p(f) = f + y_lo with y_lo = -s*(f - z*P(z))."""
    u = e.b.sub(ix, e.ci(0x3F3504F3))
    k = e.b.ashr(u, e.ci(23))
    f = e.sub(e.from_bits(e.b.add(e.b.and_(u, e.ci(0x007FFFFF)), e.ci(0x3F3504F3))), e.c(1.0))
    return e.b.sitofp(k, e.vt), f, _log1p_lo(e, f)


def _log1p_lo(e: Emit, f):
    """log1p(f) - f = -s*(f - R), R = z*P(z): since f - f*s = 2s, f - s*(f - R) = 2s + s*R."""
    s = e.div(f, e.add(e.c(2.0), f))
    z = e.mul(s, s)
    big_r = e.mul(z, e.poly(z, LOG_P))
    return e.mul(e.neg(s), e.sub(f, big_r))


def _log_special_mask(e: Emit, ix):
    """Lanes that are not positive normal finite floats (0, subnormal, negative, inf, NaN)."""
    return e.b.icmp_unsigned(">=", e.b.sub(ix, e.ci(0x00800000)), e.ci(0x7F800000 - 0x00800000))


def _log_family(e: Emit, x, combine):
    """combine(kf, f, y_lo) for positive normal lanes; the rare block prescales subnormals by
    2^23 and applies the specials: +inf -> +inf, 0 -> -inf, x < 0 -> NaN, NaN -> NaN."""
    ix = e.bits(x)
    fast = combine(*_log_parts(e, ix))

    def slow():
        tiny = e.lt(x, e.c(2.0 ** -126))
        xs = e.sel(tiny, e.mul(x, e.c(2.0 ** 23)), x)
        kf, f, y_lo = _log_parts(e, e.bits(xs))
        kf = e.sub(kf, e.sel(tiny, e.c(23.0), e.c(0.0)))
        res = combine(kf, f, y_lo)
        res = e.sel(e.eq(x, e.c(float("inf"))), x, res)
        res = e.sel(e.eq(x, e.c(0.0)), e.c(float("-inf")), res)
        res = e.sel(e.lt(x, e.c(0.0)), e.c(float("nan")), res)
        return e.sel(e.isnan(x), x, res)
    return e.rare(_log_special_mask(e, ix), fast, slow)


def _combine_ln(e: Emit, kf, f, y_lo):
    """k*ln2 + f + y_lo, with ln2 in two pieces."""
    return e.fma(kf, e.c(LN2_HI), e.fma(kf, e.c(LN2_LO), e.add(f, y_lo)))


def _combine_log2(e: Emit, kf, f, y_lo):
    """k + (f + y_lo)/ln2: f*C_HI + (y_lo*C + f*C_LO) rounded once, then + k."""
    lo = e.fma(y_lo, e.c(INV_LN2_HI), e.mul(f, e.c(INV_LN2_LO)))
    return e.add(kf, e.fma(f, e.c(INV_LN2_HI), lo))


def _combine_log10(e: Emit, kf, f, y_lo):
    """k*log10(2) + (f + y_lo)/ln10, both constants in two pieces."""
    lo = e.fma(y_lo, e.c(INV_LN10_HI), e.mul(f, e.c(INV_LN10_LO)))
    val = e.fma(f, e.c(INV_LN10_HI), lo)
    return e.fma(kf, e.c(LOG10_2_HI), e.fma(kf, e.c(LOG10_2_LO), val))


def emit_log(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_ln(e, kf, f, y_lo))


def emit_log2(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_log2(e, kf, f, y_lo))


def emit_log10(e: Emit, x):
    return _log_family(e, x, lambda kf, f, y_lo: _combine_log10(e, kf, f, y_lo))


def emit_log1p(e: Emit, x):
    """log1p x = k*ln2 + log1p(f) with f = x*2^-k + (2^-k - 1) exact (no division for 1+x's
    rounding error): k from m = 1+x, x*2^-k by subtracting k from x's exponent field."""
    m = e.add(x, e.c(1.0))
    u = e.b.sub(e.bits(m), e.ci(0x3F3504F3))
    k = e.b.ashr(u, e.ci(23))
    x_scaled = e.from_bits(e.b.sub(e.bits(x), e.b.shl(k, e.ci(23))))
    k_small = e.b.select(e.b.icmp_signed(">", k, e.ci(60)), e.ci(60), k)
    f = e.add(x_scaled, e.sub(_pow2(e, e.b.neg(k_small)), e.c(1.0)))
    res = _combine_ln(e, e.b.sitofp(k, e.vt), f, _log1p_lo(e, f))
    fine = e.b.and_(e.gt(x, e.c(-1.0)), e.lt(x, e.c(float("inf"))))

    def slow():
        out = e.sel(e.eq(x, e.c(float("inf"))), x, res)
        out = e.sel(e.eq(x, e.c(-1.0)), e.c(float("-inf")), out)
        out = e.sel(e.lt(x, e.c(-1.0)), e.c(float("nan")), out)
        return e.sel(e.isnan(x), x, out)
    res = e.rare(e.b.not_(fine), res, slow)
    return e.sel(e.lt(e.abs(x), e.c(2.0 ** -24)), x, res)


# ----------------------------------------------------------------------------- sin, cos

def _sin_reduced(e: Emit, x, q):
    """sin(x - q*pi) for |q| < 2^16 (x - q*PI_1 is exact), sign of a zero result from r."""
    r = e.fma(e.neg(q), e.c(PI_1), x)
    r = e.fma(e.neg(q), e.c(PI_2), r)
    r = e.fma(e.neg(q), e.c(PI_3), r)
    z = e.mul(r, r)
    return e.copysign(e.fma(e.mul(r, z), e.poly(z, SIN_P), r), r)


def _flip(e: Emit, value, t, extra: int = 0):
    """value * (-1)^k for t = SHIFT + k: k's low bit shifted into the sign bit."""
    sign = e.b.shl(e.bits(t), e.ci(31))
    if extra:
        sign = e.b.xor(sign, e.ci(-(1 << 31)))
    return e.from_bits(e.b.xor(e.bits(value), sign))


def _huge(e: Emit, x):
    ax = e.abs(x)
    return e.b.and_(e.ge(ax, e.c(TRIG_HUGE)), e.lt(ax, e.c(float("inf"))))


def emit_sin(e: Emit, x):
    """sin x = (-1)^n sin(x - n*pi); |x| >= 2^17 lanes via scalar libm ``sinf``."""
    t, nf = _round_fma(e, x, INV_PI)
    res = _flip(e, _sin_reduced(e, x, nf), t)
    return scalar_fixup(e, x, res, _huge(e, x), "sinf")


def emit_cos(e: Emit, x):
    """cos x = (-1)^(n+1) sin(x - (n+1/2)*pi) with n = round(x/pi - 1/2)."""
    t, nf = _round(e, e.fma(x, e.c(INV_PI), e.c(-0.5)))
    res = _flip(e, _sin_reduced(e, x, e.add(nf, e.c(0.5))), t, extra=1)
    return scalar_fixup(e, x, res, _huge(e, x), "cosf")


EMITTERS = {
    "exp": emit_exp, "exp2": emit_exp2, "expm1": emit_expm1,
    "log": emit_log, "log2": emit_log2, "log10": emit_log10, "log1p": emit_log1p,
    "sin": emit_sin, "cos": emit_cos, "tanh": emit_tanh, "sinh": emit_sinh, "cosh": emit_cosh,
}
