"""Vector sin and cos (f64 bodies; see ``emitter.py`` for the conventions).

Reduction: x = n*pi + r (cos: x = (n + 1/2)*pi + r) with pi in four pieces; the first three have
22 significant bits so q*piece is exact for |q| < 2^31, and r is carried as a double-double
(2Sum), which keeps the relative error of a tiny r small near multiples of pi. The result is
(-1)^n * sin(r) with an odd Taylor polynomial of degree 23 on |r| <= pi/2.

Lanes with |x| >= 2^30 are not reduced accurately by this: a cheap OR over the lanes branches to
a scalar libm pass (``sin``/``cos`` from the process's libm) that only runs when such a lane exists.
"""
from __future__ import annotations

import decimal
from fractions import Fraction
from math import factorial

import llvmlite.ir as ir

from .emitter import SHIFT, SHIFT_BITS, Emit, split

PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
PI_1, _rest = split(PI, 22)
PI_2, _rest = split(PI - decimal.Decimal(PI_1), 22)
PI_3, PI_4 = split(PI - decimal.Decimal(PI_1) - decimal.Decimal(PI_2), 22)
INV_PI = float(decimal.Context(prec=60).divide(1, PI))
HUGE = 2.0 ** 30

# sin(r) = r + r*z*SIN_P(z), z = r^2: terms up to r^23/23! (truncation < 2^-60 at pi/2)
SIN_P = [float(Fraction((-1) ** i, factorial(2 * i + 1))) for i in range(1, 12)]


def _reduce(e: Emit, x, q):
    """(rh, rl) with rh + rl = x - q*pi to about 2^-100 absolute, for |q| < 2^30."""
    r1 = e.fma(e.neg(q), e.c(PI_1), x)             # exact: q*PI_1 exact, Sterbenz
    r2, e2 = e.two_sum(r1, e.neg(e.mul(q, e.c(PI_2))))
    r3, e3 = e.two_sum(r2, e.neg(e.mul(q, e.c(PI_3))))
    rl = e.fma(e.neg(q), e.c(PI_4), e.add(e2, e3))
    rh = e.add(r3, rl)                             # Fast2Sum: |r3| >= |rl|
    return rh, e.sub(rl, e.sub(rh, r3))


def _sin_poly(e: Emit, rh, rl):
    """sin(rh + rl) for |rh| <= pi/2 + tiny, rl <= ulp(rh): rl enters times cos(rh) ~ 1 - z/2."""
    z = e.mul(rh, rh)
    corr = e.mul(rl, e.fma(z, e.c(-0.5), e.c(1.0)))
    # f32 accuracy: the first dropped term (pi/2)^17/17! <= 2^-38
    return e.add(rh, e.fma(e.mul(rh, z), e.poly(z, e.terms(SIN_P, 7)), corr))


def _flip_sign(e: Emit, value, parity_int):
    """value * (-1)^parity, parity taken from the low bit of an integer lane."""
    sign = e.b.shl(e.b.and_(parity_int, e.ci(1)), e.ci(63))
    return e.from_bits(e.b.xor(e.bits(value), sign))


def scalar_fixup(e: Emit, x, res, mask, libm_name: str):
    """res with the lanes in ``mask`` replaced by the scalar libm function ``libm_name`` of x.

    Emits a branch around the scalar pass so it costs one OR-reduction when no lane needs it."""
    b = e.b
    mod = b.module
    fn = mod.globals.get(libm_name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(e.fty, [e.fty]), libm_name)
        fn.attributes.add("nounwind")
    any_lane = mask
    if e.w > 1:
        any_lane = b.icmp_unsigned("!=", b.bitcast(mask, ir.IntType(e.w)), ir.IntType(e.w)(0))
    start = b.block
    fix = b.append_basic_block("fixup")
    done = b.append_basic_block("fixed")
    b.cbranch(any_lane, fix, done)
    b.position_at_end(fix)
    if e.w == 1:
        fixed = b.call(fn, [x])
    else:
        fixed = res
        for lane in range(e.w):
            idx = ir.IntType(32)(lane)
            value = b.call(fn, [b.extract_element(x, idx)])
            value = b.select(b.extract_element(mask, idx), value, b.extract_element(res, idx))
            fixed = b.insert_element(fixed, value, idx)
    fix_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(e.vt)
    phi.add_incoming(res, start)
    phi.add_incoming(fixed, fix_end)
    return phi


def _huge_lanes(e: Emit, x):
    ax = e.abs(x)
    return e.b.and_(e.ge(ax, e.c(HUGE)), e.lt(ax, e.c(float("inf"))))


def emit_sin(e: Emit, x):
    """sin x; sin(-0) = -0, sin(+-inf) = NaN, |x| < 2^-27 returns x, huge lanes via libm."""
    kf, ki = e.round(e.mul(x, e.c(INV_PI)))
    rh, rl = _reduce(e, x, kf)
    res = _flip_sign(e, _sin_poly(e, rh, rl), ki)
    res = e.sel(e.lt(e.abs(x), e.c(2.0 ** -27)), x, res)
    return scalar_fixup(e, x, res, _huge_lanes(e, x), "sin")


def emit_cos(e: Emit, x):
    """cos x = (-1)^(n+1) sin(x - (n+1/2)pi) with n = round(x/pi - 1/2)."""
    t = e.add(e.fma(x, e.c(INV_PI), e.c(-0.5)), e.c(SHIFT))
    nf = e.sub(t, e.c(SHIFT))
    ni = e.b.sub(e.bits(t), e.ci(SHIFT_BITS))
    rh, rl = _reduce(e, x, e.add(nf, e.c(0.5)))
    res = _flip_sign(e, _sin_poly(e, rh, rl), e.b.add(ni, e.ci(1)))
    res = e.sel(e.lt(e.abs(x), e.c(2.0 ** -27)), e.c(1.0), res)
    return scalar_fixup(e, x, res, _huge_lanes(e, x), "cos")
