"""Branch-free f64 math bodies emitted with the llvmlite IR builder: exp, exp2, expm1, log, log2,
log10, log1p, tanh, sinh, cosh, arcsinh, arccosh, arctanh (sin/cos live in ``mathlib_trig``).

Every ``emit_*`` takes an :class:`Emit` (builder + element type + width) and an f64 value of the
Emit's type (scalar ``double`` or ``<w x double>``) and returns a value of the same type. f32
callers extend to f64, call the same body with ``Emit.lowp`` set (shorter polynomials, truncation
<= 2^-32) and truncate (``mathlib``), which keeps f32 results within about 0.5 ulp.

Invariants (see shared/reference/simd-threads-notes.md, "Pitfalls"):
- no fast-math flags; the only fused operations are explicit ``llvm.fma`` calls;
- never ``fptosi``: integers come from the 1.5*2^52 shifter (``Emit.round``), so NaN and
  out-of-range lanes produce garbage bits, never poison, and are fixed by selects;
- signed zeros, NaN, +-inf and subnormals are restored by explicit selects at the end;
- polynomials are truncated Taylor series with exactly rounded rational coefficients (no fitted
  tables to maintain), long enough that truncation stays below 2^-60 relative on the reduced range.
"""
from __future__ import annotations

import decimal
import struct
from fractions import Fraction
from math import factorial

import llvmlite.ir as ir

F64 = ir.DoubleType()
I64 = ir.IntType(64)
SHIFT = 6755399441055744.0          # 1.5 * 2^52: x + SHIFT rounds x to an integer in the low bits
SHIFT_BITS = 0x4338000000000000

_D = decimal.Context(prec=60)
LN2 = _D.ln(decimal.Decimal(2))
LN10 = _D.ln(decimal.Decimal(10))


def split(value: decimal.Decimal, bits: int = 32):
    """(hi, lo) with hi = value truncated to ``bits`` significant bits, lo = rest rounded.

    Products k*hi are exact while |k| < 2^(53-bits), which the reductions rely on."""
    hi = float(value)
    raw = struct.unpack("<Q", struct.pack("<d", hi))[0]
    raw &= ~((1 << (52 - bits + 1)) - 1)
    hi = struct.unpack("<d", struct.pack("<Q", raw))[0]
    return hi, float(_D.subtract(value, decimal.Decimal(hi)))


LN2_HI, LN2_LO = split(LN2)
INV_LN2 = float(_D.divide(1, LN2))
INV_LN2_HI, INV_LN2_LO = split(_D.divide(1, LN2))
INV_LN10_HI, INV_LN10_LO = split(_D.divide(1, LN10))
LOG10_2_HI, LOG10_2_LO = split(_D.divide(LN2, LN10))

# exp(r) = 1 + r + r^2 * EXP_G(r), |r| <= ln2/2: terms up to r^13/13! (truncation < 2^-62)
EXP_G = [float(Fraction(1, factorial(n))) for n in range(2, 14)]
# expm1(r) = r + r^2 * EXPM1_G(r): relative to r the truncation must be smaller, up to r^14/14!
EXPM1_G = [float(Fraction(1, factorial(n))) for n in range(2, 15)]
# 2^r = 1 + r*ln2 + r^2 * EXP2_G(r): coefficients ln2^n / n!
EXP2_G = [float(_D.divide(_D.power(LN2, n), factorial(n))) for n in range(2, 14)]
# log(1+f) = f - f^2/2 + s*(f^2/2 + R(s^2)), s = f/(2+f): R(z) = z * sum 2/(2i+1) z^(i-1)
LOG_R = [float(Fraction(2, 2 * i + 1)) for i in range(1, 12)]


class Emit:
    """Typed IR-building helpers for one element type and width (width 1 = scalar)."""

    def __init__(self, builder: ir.IRBuilder, fty: ir.Type = F64, width: int = 1):
        self.b = builder
        self.fty = fty
        self.w = width
        self.ity = ir.IntType(64 if isinstance(fty, ir.DoubleType) else 32)
        self.vt = fty if width == 1 else ir.VectorType(fty, width)
        self.vi = self.ity if width == 1 else ir.VectorType(self.ity, width)
        self.lowp = False     # True: the caller rounds to f32, so ~2^-32 relative is enough

    def terms(self, coeffs, lowp_count: int):
        """The polynomial coefficients to use: all of them, or the first ``lowp_count`` when only
        f32 accuracy is needed (each count's truncation error is noted where it is used)."""
        return coeffs[:lowp_count] if self.lowp else coeffs

    # constants and bit casts
    def c(self, value: float):
        return ir.Constant(self.vt, value if self.w == 1 else [value] * self.w)

    def ci(self, value: int):
        return ir.Constant(self.vi, value if self.w == 1 else [value] * self.w)

    def bits(self, x):
        return self.b.bitcast(x, self.vi)

    def from_bits(self, i):
        return self.b.bitcast(i, self.vt)

    # arithmetic (strict IEEE: no fast-math flags)
    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def fma(self, a, b, c):
        return self.intrinsic("fma", a, b, c)      # builder.fma rejects vector operands

    def intrinsic(self, name: str, *args):
        suffix = (f"v{self.w}" if self.w > 1 else "") + ("f64" if self.ity.width == 64 else "f32")
        fname = f"llvm.{name}.{suffix}"
        mod = self.b.module
        fn = mod.globals.get(fname)
        if fn is None:
            fn = ir.Function(mod, ir.FunctionType(self.vt, [self.vt] * len(args)), fname)
        return self.b.call(fn, args)

    def abs(self, a):
        return self.intrinsic("fabs", a)

    def copysign(self, mag, sign):
        return self.intrinsic("copysign", mag, sign)

    def sqrt(self, a):
        return self.intrinsic("sqrt", a)

    # comparisons (ordered: false on NaN) and selects
    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def le(self, a, b):
        return self.b.fcmp_ordered("<=", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def ge(self, a, b):
        return self.b.fcmp_ordered(">=", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def sel(self, cond, a, b):
        return self.b.select(cond, a, b)

    def clamp(self, x, lo: float, hi: float):
        """min(max(x, lo), hi) that passes NaN through unchanged."""
        x = self.sel(self.lt(x, self.c(lo)), self.c(lo), x)
        return self.sel(self.gt(x, self.c(hi)), self.c(hi), x)

    def poly(self, x, coeffs):
        """Horner with fma: coeffs[0] + x*coeffs[1] + ... ."""
        acc = self.c(coeffs[-1])
        for coef in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.c(coef))
        return acc

    def round(self, x):
        """(float, int) round-to-nearest of x for |x| < 2^51, without fptosi (NaN-safe)."""
        t = self.add(x, self.c(SHIFT))
        kf = self.sub(t, self.c(SHIFT))
        ki = self.b.sub(self.bits(t), self.ci(SHIFT_BITS))
        return kf, ki

    def pow2(self, ki):
        """2^ki as a float, for integer lanes -1022 <= ki <= 1023."""
        return self.from_bits(self.b.shl(self.b.add(ki, self.ci(1023)), self.ci(52)))

    def scale(self, p, ki):
        """p * 2^ki with one rounding, for ki in about [-2100, 2040] (two exponent multiplies)."""
        k1 = self.b.ashr(ki, self.ci(1))
        k2 = self.b.sub(ki, k1)
        return self.mul(self.mul(p, self.pow2(k1)), self.pow2(k2))

    def two_sum(self, a, b):
        """(s, e) with s = fl(a+b) and s + e = a + b exactly."""
        s = self.add(a, b)
        bb = self.sub(s, a)
        e = self.add(self.sub(a, self.sub(s, bb)), self.sub(b, bb))
        return s, e


# ----------------------------------------------------------------------------- exponentials

def _exp_reduce(e: Emit, x):
    """x = k*ln2 + r + c with |r| <= ln2/2 and c the rounding error of r (Cody-Waite)."""
    kf, ki = e.round(e.mul(x, e.c(INV_LN2)))
    hi = e.fma(e.neg(kf), e.c(LN2_HI), x)      # exact: k*LN2_HI is exact, Sterbenz
    lo = e.mul(kf, e.c(LN2_LO))
    r = e.sub(hi, lo)
    c = e.sub(e.sub(hi, r), lo)
    return kf, ki, r, c


def emit_exp(e: Emit, x, kadj: int = 0):
    """2^kadj * exp(x); clamping to [-746, 711] gives 0 / inf and lets NaN through."""
    x = e.clamp(x, -746.0, 711.0)
    kf, ki = e.round(e.mul(x, e.c(INV_LN2)))
    # unlike expm1, exp does not need r's rounding error: it is <= 0.35 ulp of the result
    r = e.fma(e.neg(kf), e.c(LN2_LO), e.fma(e.neg(kf), e.c(LN2_HI), x))
    r2 = e.mul(r, r)
    p = e.add(e.c(1.0), e.fma(r2, e.poly(r, e.terms(EXP_G, 7)), r))
    if kadj:
        ki = e.b.add(ki, e.ci(kadj))
    return e.scale(p, ki)


def emit_exp2(e: Emit, x):
    """2^x: k = round(x) exactly, 2^r by the Taylor series of exp(r*ln2)."""
    x = e.clamp(x, -1080.0, 1030.0)
    kf, ki = e.round(x)
    r = e.sub(x, kf)                           # exact
    r2 = e.mul(r, r)
    ln2_hi = float(LN2)
    ln2_lo = float(LN2 - decimal.Decimal(ln2_hi))
    q = e.fma(r2, e.poly(r, e.terms(EXP2_G, 7)), e.mul(r, e.c(ln2_lo)))
    p = e.add(e.c(1.0), e.fma(r, e.c(ln2_hi), q))
    return e.scale(p, ki)


def emit_expm1_parts(e: Emit, x, big_kadj: int = 0):
    """(expm1(x), is_big) where for is_big lanes (k > 56) the value is 2^big_kadj * exp(x).

    sinh/cosh use big_kadj=-1 to get exp(x)/2 without overflowing early. Tiny |x| (including
    +-0 and subnormals) is not special-cased here; callers select x there."""
    x = e.clamp(x, -40.0, 711.0)
    _, ki, r, c = _exp_reduce(e, x)
    r2 = e.mul(r, r)
    p = e.add(r, e.fma(r2, e.poly(r, e.terms(EXPM1_G, 8)), c))    # expm1(r + c)
    is_big = e.b.icmp_signed(">", ki, e.ci(56))
    two_k = e.pow2(e.sel(is_big, e.ci(0), ki))
    small = e.fma(two_k, p, e.sub(two_k, e.c(1.0)))  # 2^k*expm1(r) + (2^k - 1), one rounding
    big = e.scale(e.add(e.c(1.0), p), e.b.add(ki, e.ci(big_kadj)))
    return e.sel(is_big, big, small), is_big


def emit_expm1(e: Emit, x):
    res, _ = emit_expm1_parts(e, x)
    return e.sel(e.lt(e.abs(x), e.c(2.0 ** -54)), x, res)


def emit_tanh(e: Emit, x):
    """tanh|x| = t/(t+2) with t = expm1(2|x|): no cancellation anywhere; sign by copysign."""
    ax = e.abs(x)
    t, _ = emit_expm1_parts(e, e.mul(e.c(2.0), e.sel(e.gt(ax, e.c(20.0)), e.c(20.0), ax)))
    res = e.div(t, e.add(t, e.c(2.0)))
    res = e.sel(e.lt(ax, e.c(2.0 ** -55)), ax, res)
    return e.copysign(res, x)


def emit_sinh(e: Emit, x):
    """sinh|x| = (t + t/(t+1))/2 with t = expm1|x|; exp(|x|)/2 directly once k > 56."""
    ax = e.abs(x)
    t, is_big = emit_expm1_parts(e, ax, big_kadj=-1)
    small = e.mul(e.c(0.5), e.add(t, e.div(t, e.add(t, e.c(1.0)))))
    res = e.sel(is_big, t, small)
    res = e.sel(e.lt(ax, e.c(2.0 ** -54)), ax, res)
    return e.copysign(res, x)


def emit_cosh(e: Emit, x):
    """cosh x = u/2 + 1/(2u) with u = 1 + expm1|x|; exp(|x|)/2 directly once k > 56."""
    ax = e.abs(x)
    t, is_big = emit_expm1_parts(e, ax, big_kadj=-1)
    u = e.add(t, e.c(1.0))
    small = e.add(e.mul(e.c(0.5), u), e.div(e.c(0.5), u))
    return e.sel(is_big, t, small)


# ----------------------------------------------------------------------------- logarithms

def _log_parts(e: Emit, x):
    """x = 2^k * (1+f), f in [sqrt(2)/2-1, sqrt(2)-1]; returns (kf, f, hfsq, s*(hfsq+R)).

    Integer work is on bit patterns (fdlibm's high-word trick on the whole i64); subnormal x is
    prescaled by 2^54. Garbage for x <= 0, inf, NaN: callers select those lanes away."""
    tiny = e.lt(x, e.c(2.0 ** -1022))
    xs = e.sel(tiny, e.mul(x, e.c(2.0 ** 54)), x)
    u = e.b.add(e.bits(xs), e.ci(0x3FF0000000000000 - 0x3FE6A09E00000000))
    k = e.b.sub(e.b.ashr(u, e.ci(52)), e.ci(1023))
    k = e.b.sub(k, e.b.select(tiny, e.ci(54), e.ci(0)))
    m = e.b.add(e.b.and_(u, e.ci(0x000FFFFFFFFFFFFF)), e.ci(0x3FE6A09E00000000))
    f = e.sub(e.from_bits(m), e.c(1.0))
    kf = e.b.sitofp(k, e.vt)                 # k is a defined integer: no poison
    hfsq = e.mul(e.c(0.5), e.mul(f, f))
    s = e.div(f, e.add(e.c(2.0), f))
    z = e.mul(s, s)
    big_r = e.mul(z, e.poly(z, e.terms(LOG_R, 5)))
    return kf, f, hfsq, e.mul(s, e.add(hfsq, big_r))


def _log_specials(e: Emit, x, res):
    """log-family special values: +inf -> +inf, 0 -> -inf, x < 0 -> NaN, NaN -> NaN."""
    res = e.sel(e.eq(x, e.c(float("inf"))), x, res)
    res = e.sel(e.eq(x, e.c(0.0)), e.c(float("-inf")), res)
    res = e.sel(e.lt(x, e.c(0.0)), e.c(float("nan")), res)
    return e.sel(e.isnan(x), x, res)


def emit_log_dd(e: Emit, x, err=None, kadd=None):
    """log(x + err) + kadd*ln2 for x >= 0 (err a small correction, |err| <= ulp(x); kadd an
    integer-valued float value added to the exponent, so the ln2 multiple stays exact)."""
    kf, f, hfsq, tail = _log_parts(e, x)
    if kadd is not None:
        kf = e.add(kf, kadd)
    lo = e.mul(kf, e.c(LN2_LO))
    if err is not None:
        lo = e.add(lo, e.div(err, x))
    res = e.fma(kf, e.c(LN2_HI), e.neg(e.sub(e.sub(hfsq, e.add(tail, lo)), f)))
    return _log_specials(e, x, res)


def emit_log(e: Emit, x):
    return emit_log_dd(e, x)


def _log_hi_lo(e: Emit, f, hfsq, tail):
    """log1p(f) as hi + lo with hi holding the top 21 bits (so hi*C_HI is exact)."""
    hi = e.sub(f, hfsq)
    hi = e.from_bits(e.b.and_(e.bits(hi), e.ci(-(1 << 32))))
    lo = e.add(e.sub(e.sub(f, hi), hfsq), tail)
    return hi, lo


def emit_log2(e: Emit, x):
    """k + log1p(f)/ln2 with 1/ln2 and log1p(f) both split in two (fdlibm/musl log2)."""
    kf, f, hfsq, tail = _log_parts(e, x)
    hi, lo = _log_hi_lo(e, f, hfsq, tail)
    val_hi = e.mul(hi, e.c(INV_LN2_HI))
    val_lo = e.fma(e.add(lo, hi), e.c(INV_LN2_LO), e.mul(lo, e.c(INV_LN2_HI)))
    w = e.add(kf, val_hi)
    val_lo = e.add(val_lo, e.add(e.sub(kf, w), val_hi))
    return _log_specials(e, x, e.add(val_lo, w))


def emit_log10(e: Emit, x):
    """k*log10(2) + log1p(f)/ln10, all in hi/lo pieces (fdlibm/musl log10)."""
    kf, f, hfsq, tail = _log_parts(e, x)
    hi, lo = _log_hi_lo(e, f, hfsq, tail)
    val_hi = e.mul(hi, e.c(INV_LN10_HI))
    y2 = e.mul(kf, e.c(LOG10_2_HI))
    val_lo = e.fma(kf, e.c(LOG10_2_LO),
                   e.fma(e.add(lo, hi), e.c(INV_LN10_LO), e.mul(lo, e.c(INV_LN10_HI))))
    w = e.add(y2, val_hi)
    val_lo = e.add(val_lo, e.add(e.sub(y2, w), val_hi))
    return _log_specials(e, x, e.add(val_lo, w))


def _log1p_core(e: Emit, y):
    """log1p(y) for y >= -1 without specials: log(1+y) corrected by the exact error of 1+y."""
    u, err = e.two_sum(e.c(1.0), y)
    return emit_log_dd(e, u, err)


def emit_log1p(e: Emit, x):
    res = _log1p_core(e, x)
    res = e.sel(e.lt(e.abs(x), e.c(2.0 ** -54)), x, res)
    res = e.sel(e.eq(x, e.c(float("inf"))), x, res)
    res = e.sel(e.eq(x, e.c(-1.0)), e.c(float("-inf")), res)
    res = e.sel(e.lt(x, e.c(-1.0)), e.c(float("nan")), res)
    return e.sel(e.isnan(x), x, res)


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
