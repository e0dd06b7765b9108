"""Branch-free f64 math bodies emitted with the llvmlite IR builder: exp, exp2, expm1, log, log2,
log10, log1p, tanh, sinh, cosh, arcsinh, arccosh, arctanh (sin/cos live in ``mathlib_trig``).

Every ``emit_*`` takes an :class:`Emit` (builder + element type + width) and an f64 value of the
Emit's type (scalar ``double`` or ``<w x double>``) and returns a value of the same type. Most
f32 functions have native bodies (``mathlib_f32``); the rest (arcsinh, arccosh, arctanh) extend
to f64, call the same body with ``Emit.lowp`` set (shorter polynomials, truncation <= 2^-32)
and truncate (``mathlib``), which keeps f32 results within about 0.5 ulp.

Invariants (see shared/reference/simd-threads-notes.md, "Pitfalls"):
- no fast-math flags; the only fused operations are explicit ``llvm.fma`` calls;
- never ``fptosi``: integers come from the 1.5*2^52 shifter (``Emit.round``), so NaN and
  out-of-range lanes produce garbage bits, never poison, and are fixed by selects;
- signed zeros, NaN, +-inf and subnormals are restored by explicit selects at the end, or, in
  the log family, by a ``rare`` block that only runs when some lane is 0, subnormal, negative,
  inf or NaN (the common path pays one integer compare and a branch);
- polynomials are truncated Taylor series with exactly rounded rational coefficients, long
  enough that truncation stays below 2^-60 relative on the reduced range, except exp/expm1's
  (minimax fits of (expm1(r)-r)/r^2, EXP_MM9 / EXPM1_MM10) and the log family's, which uses fdlibm's published minimax Lg1..Lg7 (7 terms instead of 11).

The log family (log log2 log10 log1p) was 1.6-1.9x slower than NumPy: not the divide in
s = f/(2+f) (replacing it by a multiply gained only 8%) but 11 Taylor terms, the 0.5*f*f term,
a second divide in log1p (err/u) and ten special-value compares and selects on every vector.
Now: Lg1..Lg7, log1p(f) = f - s*(f - R) (no f*f/2), log1p's f = x*2^-k + (2^-k - 1) exact (no
second divide), specials in a ``rare`` block; log2/log10 carry k + f*C as value plus residual.
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
INV_LN10 = float(_D.divide(1, LN10))
INV_LN10_HI, INV_LN10_LO = split(_D.divide(1, LN10))
LOG10_2_HI, LOG10_2_LO = split(_D.divide(LN2, LN10))

# exp(r) = 1 + r + r^2 * EXP_G(r), |r| <= ln2/2: terms up to r^13/13! (truncation < 2^-62)
EXP_G = [float(Fraction(1, factorial(n))) for n in range(2, 14)]
# expm1(r) = r + r^2 * EXPM1_G(r): relative to r the truncation must be smaller, up to r^14/14!
EXPM1_G = [float(Fraction(1, factorial(n))) for n in range(2, 15)]
# Minimax (Chebyshev fit with mpmath, 50 digits, on |r| <= 1.0005*ln2/2) of
# G(r) = (expm1(r) - r)/r^2, so exp(r) = 1 + r + r^2*G(r) and expm1(r) = r + r^2*G(r).
# Degree 9: |error| < 2^-52.9 on G, i.e. < 2^-56 relative on exp (r^2 <= 0.121); exp's fast path.
EXP_MM9 = [0.5000000000000001, 0.16666666666666669, 0.04166666666662399, 0.008333333333330051,
           0.0013888888917281794, 0.00019841269863105968, 2.480152119021773e-05,
           2.7557268378684192e-06, 2.7620138719733994e-07, 2.5100424157005067e-08]
# Degree 10: |error| < 2^-58.4 on G, < 2^-59.9 relative to r for expm1 (tanh, expm1, sinh, cosh).
EXPM1_MM10 = [0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333326112,
              0.001388888888888373, 0.0001984126987490126, 2.4801587325605324e-05,
              2.7557255297969643e-06, 2.755727357010214e-07, 2.5105259538448494e-08,
              2.0914717341716378e-09]
# 2^r = 1 + r*ln2 + r^2 * EXP2_G(r): coefficients ln2^n / n!
EXP2_G = [float(_D.divide(_D.power(LN2, n), factorial(n))) for n in range(2, 14)]
# log1p(f) = 2s + s*z*LOG_LG(z), s = f/(2+f), z = s^2 <= 0.1716^2: fdlibm's minimax Lg1..Lg7
# (e_log.c; |error| < 2^-58.45). Taylor (2/(2i+1)) would need 11 terms for the same bound.
LOG_LG = [6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
          2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
          1.479819860511658591e-01]


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

    def any(self, mask):
        """i1: whether any lane of the i1 (vector) ``mask`` is set (one kortest on AVX-512)."""
        if self.w == 1:
            return mask
        lanes = ir.IntType(self.w)
        return self.b.icmp_unsigned("!=", self.b.bitcast(mask, lanes), lanes(0))

    def rare(self, mask, fast, slow_fn):
        """``fast``, or ``slow_fn()`` for the whole vector when some lane of ``mask`` is set.

        ``slow_fn`` emits its code into a block that runs only then (branch weighted unlikely),
        so the common path pays one compare and branch instead of every special-value select."""
        b = self.b
        start = b.block
        slow_bb = b.append_basic_block("rare")
        done = b.append_basic_block("rare_done")
        b.cbranch(self.any(mask), slow_bb, done).set_weights([1, 1000])
        b.position_at_end(slow_bb)
        slow = slow_fn()
        slow_end = b.block
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(self.vt)
        phi.add_incoming(fast, start)
        phi.add_incoming(slow, slow_end)
        return phi

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


def _emit_exp_full(e: Emit, x, kadj: int = 0):
    """2^kadj * exp(x) for any x: clamping to [-746, 711] gives 0 / inf and lets NaN through,
    two exponent multiplies reach subnormal results with one rounding (exp's rare path)."""
    x = e.clamp(x, -746.0, 711.0)
    kf, ki = e.round(e.mul(x, e.c(INV_LN2)))
    # unlike expm1, exp does not need r's rounding error: it is <= 0.35 ulp of the result
    r = e.fma(e.neg(kf), e.c(LN2_LO), e.fma(e.neg(kf), e.c(LN2_HI), x))
    r2 = e.mul(r, r)
    p = e.add(e.c(1.0), e.fma(r2, e.poly(r, EXP_MM9), r))
    if kadj:
        ki = e.b.add(ki, e.ci(kadj))
    return e.scale(p, ki)


def emit_exp(e: Emit, x, kadj: int = 0):
    """2^kadj * exp(x). Fast path for |x| < 708 (k in [-1021, 1021], so p*2^k is normal and
    2^k is one integer add to p's exponent field): k from the shifter fused into one fma,
    two-fma Cody-Waite reduction, degree-11 minimax 1 + r + r^2*G(r) by Horner (the loop is
    FMA-throughput bound, not latency bound: Estrin's extra multiplies measured slower, and
    it lost accuracy in tanh (3 ulp)), 2^k by an integer add. Any lane with
    |x| >= 708 or NaN sends the vector to ``_emit_exp_full`` (clamps, two-step scale)."""
    if kadj:
        return _emit_exp_full(e, x, kadj)
    t = e.fma(x, e.c(INV_LN2), e.c(SHIFT))
    kf = e.sub(t, e.c(SHIFT))
    r = e.fma(e.neg(kf), e.c(LN2_LO), e.fma(e.neg(kf), e.c(LN2_HI), x))
    r2 = e.mul(r, r)
    p = e.add(e.c(1.0), e.fma(r2, e.poly(r, EXP_MM9), r))
    # bits(t) = SHIFT_BITS + k and SHIFT_BITS << 52 == 0 (mod 2^64): k << 52 in one shift
    fast = e.from_bits(e.b.add(e.bits(p), e.b.shl(e.bits(t), e.ci(52))))
    special = e.b.fcmp_unordered(">=", e.abs(x), e.c(708.0))
    return e.rare(special, fast, lambda: _emit_exp_full(e, x))


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


def _expm1_poly(e: Emit, r, c):
    """expm1(r + c) = r + (r^2*G(r) + c) for |r| <= ln2/2, c the rounding error of r."""
    r2 = e.mul(r, r)
    return e.add(r, e.fma(r2, e.poly(r, e.terms(EXPM1_MM10, 8)), c))


def emit_expm1_parts(e: Emit, x, big_kadj: int = 0):
    """(expm1(x), is_big) where for is_big lanes (k > 56) the value is 2^big_kadj * exp(x).

    sinh/cosh use big_kadj=-1 to get exp(x)/2 without overflowing early. Tiny |x| (including
    +-0 and subnormals) is not special-cased here; callers select x there."""
    x = e.clamp(x, -40.0, 711.0)
    _, ki, r, c = _exp_reduce(e, x)
    p = _expm1_poly(e, r, c)                        # expm1(r + c)
    is_big = e.b.icmp_signed(">", ki, e.ci(56))
    two_k = e.pow2(e.sel(is_big, e.ci(0), ki))
    small = e.fma(two_k, p, e.sub(two_k, e.c(1.0)))  # 2^k*expm1(r) + (2^k - 1), one rounding
    big = e.scale(e.add(e.c(1.0), p), e.b.add(ki, e.ci(big_kadj)))
    return e.sel(is_big, big, small), is_big


def emit_expm1(e: Emit, x):
    res, _ = emit_expm1_parts(e, x)
    return e.sel(e.lt(e.abs(x), e.c(2.0 ** -54)), x, res)


def emit_tanh(e: Emit, x):
    """tanh|x| = t/(t+2) with t = expm1(2|x|): no cancellation anywhere; sign by copysign.

    |x| is capped at 20 (tanh rounds to 1 from about 19.1; NaN passes the ordered compare), so
    k = round(2|x|/ln2) <= 58 and expm1 needs neither clamps nor the large-k path: one fma
    shifter, Cody-Waite with the rounding error c, degree-12 minimax expm1(r) by Horner,
    2^k*expm1(r) + (2^k - 1) with 2^k from the shifter bits, one division. Tiny and subnormal
    |x| come out exact (k = 0, t = 2|x|, t/(t+2) = |x|); +-0 and NaN by copysign."""
    ax = e.abs(x)
    a = e.sel(e.gt(ax, e.c(20.0)), e.c(20.0), ax)
    y = e.add(a, a)                                 # exact
    t = e.fma(y, e.c(INV_LN2), e.c(SHIFT))
    kf = e.sub(t, e.c(SHIFT))
    hi = e.fma(e.neg(kf), e.c(LN2_HI), y)           # exact (k*LN2_HI exact, Sterbenz)
    lo = e.mul(kf, e.c(LN2_LO))
    r = e.sub(hi, lo)
    c = e.sub(e.sub(hi, r), lo)
    p = _expm1_poly(e, r, c)
    two_k = e.from_bits(e.b.add(e.b.shl(e.bits(t), e.ci(52)), e.ci(0x3FF0000000000000)))
    em1 = e.fma(two_k, p, e.sub(two_k, e.c(1.0)))
    res = e.div(em1, e.add(em1, e.c(2.0)))
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
