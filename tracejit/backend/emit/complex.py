"""Complex elementwise lowering (``CEMIT``): a value is a (re, im) pair of real registers.

Arithmetic, comparisons, converts, and exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh, exp2,
expm1, log2, log10, log1p built from the real math functions, integer_pow by repeated squaring,
pow (exp(w log z); see ``_cpow`` for special values), abs (NumPy's own loop, bit for bit) and
sign (z / libm hypot, bit for bit); the arc functions run through the NumPy fallback. The real
rules are in ``ops.py``; ``rules.py`` picks the real or the complex rule of an equation.
Invariant: ``CEMIT``'s keys are ``plan.lowering.COMPLEX`` (checked at import).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..mathlib import library as mathlib
from ..plan import lowering
from .ops import I32, _check, _isfinite, _isinf, _isnan, convert_value

# complex: a value is a (re, im) pair of real registers. Rounding replicates NumPy 2.4 on this
# host (checked in tests): multiply is re = fma(ar, br, -(ai*bi)), im = fma(ar, bi, ai*br) (its
# AVX-512 loop); divide is Smith's algorithm as in NumPy's loops. Functions without an entry here
# (pow, abs, sign, prod...) run through the NumPy fallback.

def _fma(cx, a, b, c):
    return cx.intrinsic("fma", a.type, [a, b, c])


def _cmul(cx, x, y):
    (ar, ai), (br, bi) = x, y
    b = cx.b
    return (_fma(cx, ar, br, b.fneg(b.fmul(ai, bi))), _fma(cx, ar, bi, b.fmul(ai, br)))


def _cmul_plain(cx, x, y):
    """x * y without fma: npy_cpow's own cmul (NumPy's multiply loop contracts to fma)."""
    (ar, ai), (br, bi) = x, y
    b = cx.b
    return (b.fsub(b.fmul(ar, br), b.fmul(ai, bi)), b.fadd(b.fmul(ar, bi), b.fmul(ai, br)))


def _cdiv(cx, x, y):
    (ar, ai), (br, bi) = x, y
    b = cx.b
    fabs = lambda v: mathlib.call_math(b, "fabs", v)  # noqa: E731
    abr, abi = fabs(br), fabs(bi)
    first = b.fcmp_ordered(">=", abr, abi)
    zero = b.and_(b.fcmp_ordered("==", abr, cx.like(abr, 0.0)),
                  b.fcmp_ordered("==", abi, cx.like(abi, 0.0)))
    one = cx.like(br, 1.0)
    rat1 = b.fdiv(bi, br)
    scl1 = b.fdiv(one, b.fadd(br, b.fmul(bi, rat1)))
    r1 = b.fmul(b.fadd(ar, b.fmul(ai, rat1)), scl1)
    i1 = b.fmul(b.fsub(ai, b.fmul(ar, rat1)), scl1)
    r0, i0 = b.fdiv(ar, abr), b.fdiv(ai, abr)
    rat2 = b.fdiv(br, bi)
    scl2 = b.fdiv(one, b.fadd(bi, b.fmul(br, rat2)))
    r2 = b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2)
    i2 = b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2)
    re = b.select(first, b.select(zero, r0, r1), r2)
    im = b.select(first, b.select(zero, i0, i1), i2)
    return re, im


def _cconvert(cx, eqn, x):
    src, dst = np.dtype(eqn.invars[0].ty.dtype), np.dtype(eqn.params["dtype"])
    real_dst = np.dtype(dst.char.lower())
    if src.kind == "c":
        real_src = np.dtype(src.char.lower())
        return tuple(convert_value(cx, v, real_src, real_dst) for v in x)
    re = convert_value(cx, x, src, real_dst)
    return re, cx.like(re, 0.0)


# complex transcendentals from real mathlib functions (C99 Annex G values for the special
# inputs NumPy's tests and ours use: an infinite or NaN real part with a zero imaginary part keeps
# the zero; accuracy a few ulp, like NumPy's npy_c* which wrap the same formulas in libm).

def _m(cx, name, *v):
    return cx.math(name, *v)


def _zero_im(cx, y, im, mult=None):
    """An exactly zero imaginary input gives a zero imaginary result, ``mult * y`` (the sign is
    the product's, as C99/NumPy: sin(2 + 0j) has imaginary part cos(2) * +0 = -0), computed as
    copysign(1, mult) * y so that an infinite ``mult`` gives 0, not NaN. ``mult`` None: a
    positive factor (exp, sinh), the zero keeps y's sign."""
    b = cx.b
    zero = y
    if mult is not None:         # a NaN factor (x = NaN or inf) keeps y's sign, as NumPy
        signed = b.fmul(cx.intrinsic("copysign", y.type, [cx.like(y, 1.0), mult]), y)
        zero = b.select(b.fcmp_unordered("uno", mult, mult), y, signed)
    return b.select(b.fcmp_ordered("==", y, cx.like(y, 0.0)), zero, im)


def _cexp(cx, eqn, z):
    x, y = z
    b = cx.b
    e = _m(cx, "exp", x)
    re, im = b.fmul(e, _m(cx, "cos", y)), _zero_im(cx, y, b.fmul(e, _m(cx, "sin", y)))
    ninf = b.fcmp_ordered("==", x, cx.like(x, float("-inf")))     # exp(-inf + i any) = 0
    zero = cx.like(x, 0.0)
    return b.select(ninf, zero, re), b.select(ninf, cx.intrinsic("copysign", x.type,
                                                                  [zero, y]), im)


def _clog(cx, eqn, z):
    """log|z| + i arg z; near |z| = 1, 0.5*log1p((x-1)(x+1) + y*y) keeps the small real part
    accurate (as npy_clog does)."""
    x, y = z
    b = cx.b
    r = _m(cx, "hypot", x, y)
    near = b.and_(b.fcmp_ordered(">", r, cx.like(r, 0.5)), b.fcmp_ordered("<", r, cx.like(r, 2.0)))
    ax, ay = _m(cx, "fabs", x), _m(cx, "fabs", y)
    big = b.select(b.fcmp_ordered(">=", ax, ay), ax, ay)
    small = b.select(b.fcmp_ordered(">=", ax, ay), ay, ax)
    t = _fma(cx, b.fsub(big, cx.like(big, 1.0)), b.fadd(big, cx.like(big, 1.0)),
             b.fmul(small, small))
    re = b.select(near, b.fmul(cx.like(t, 0.5), _m(cx, "log1p", t)), _m(cx, "log", r))
    return re, _m(cx, "arctan2", y, x)


def _csqrt(cx, eqn, z):
    x, y = z
    b = cx.b
    ax = _m(cx, "fabs", x)
    t = cx.intrinsic("sqrt", x.type, [b.fmul(cx.like(x, 0.5), b.fadd(ax, _m(cx, "hypot", x, y)))])
    two_t = b.fadd(t, t)
    pos = b.fcmp_ordered(">=", x, cx.like(x, 0.0))
    q = b.fdiv(y, two_t)
    re = b.select(pos, t, b.fdiv(_m(cx, "fabs", y), two_t))
    im = b.select(pos, q, cx.intrinsic("copysign", t.type, [t, y]))
    zero = b.fcmp_ordered("==", t, cx.like(t, 0.0))          # z == 0: sqrt is (0, y)
    re, im = b.select(zero, cx.like(t, 0.0), re), b.select(zero, y, im)
    inf_y = _isinf(cx, eqn, y)                               # sqrt(any + i inf) = inf + i inf
    return b.select(inf_y, cx.like(t, float("inf")), re), b.select(inf_y, y, im)


def _csin(cx, eqn, z):
    x, y = z
    b = cx.b
    re = b.fmul(_m(cx, "sin", x), _m(cx, "cosh", y))
    re = b.select(b.fcmp_ordered("==", x, cx.like(x, 0.0)), x, re)   # sin(0 + i inf) = i inf
    cos_x = _m(cx, "cos", x)
    return re, _zero_im(cx, y, b.fmul(cos_x, _m(cx, "sinh", y)), cos_x)


def _ccos(cx, eqn, z):
    x, y = z
    b = cx.b
    neg_sin_x = b.fneg(_m(cx, "sin", x))
    im = _zero_im(cx, y, b.fmul(neg_sin_x, _m(cx, "sinh", y)), neg_sin_x)
    zero_x = b.fcmp_ordered("==", x, cx.like(x, 0.0))                  # cos(0 + i inf) = inf
    return (b.fmul(_m(cx, "cos", x), _m(cx, "cosh", y)),
            b.select(zero_x, b.fneg(b.fmul(x, cx.intrinsic("copysign", x.type,
                                                              [cx.like(x, 1.0), y]))), im))


def _ctanh(cx, eqn, z):
    """Kahan's formula (as glibc/FreeBSD ctanh): t = tan y, beta = 1 + t^2, s = sinh x,
    rho = sqrt(1 + s^2); tanh z = (beta rho s + i t) / (1 + beta s^2); for |x| > 22 the result
    is sign(x) + i 4 sin y cos y e^(-2|x|)."""
    x, y = z
    b = cx.b
    one = cx.like(x, 1.0)
    t = _m(cx, "tan", y)
    beta = _fma(cx, t, t, one)
    s = _m(cx, "sinh", x)
    rho = cx.intrinsic("sqrt", x.type, [_fma(cx, s, s, one)])
    den = _fma(cx, b.fmul(beta, s), s, one)
    re = b.fdiv(b.fmul(b.fmul(beta, rho), s), den)
    im = b.fdiv(t, den)
    ax = _m(cx, "fabs", x)
    large = b.fcmp_ordered(">", ax, cx.like(x, 22.0))
    ex = _m(cx, "exp", b.fmul(cx.like(x, -2.0), ax))
    im_large = b.fmul(b.fmul(cx.like(x, 4.0), b.fmul(_m(cx, "sin", y), _m(cx, "cos", y))), ex)
    im_large = b.select(_isfinite(cx, eqn, y), im_large,          # tanh(inf + i inf) = 1 + i0
                        cx.intrinsic("copysign", x.type, [cx.like(x, 0.0), y]))
    re = b.select(large, cx.intrinsic("copysign", x.type, [one, x]), re)
    im = b.select(large, im_large, im)
    return re, _zero_im(cx, y, im)


def _cinteger_pow(cx, eqn, z):
    """z**n by repeated squaring (NumPy's cpow for small integral exponents); 1/z**|n| for n<0."""
    n = eqn.params["n"]
    result, base, k = None, z, abs(n)
    while k:
        if k & 1:
            result = base if result is None else _cmul(cx, result, base)
        k >>= 1
        if k:
            base = _cmul(cx, base, base)
    one = (cx.like(z[0], 1.0), cx.like(z[0], 0.0))
    if result is None:
        return one
    return _cdiv(cx, one, result) if n < 0 else result


def _cabs(cx, eqn, z):
    """|z| as NumPy 2.4's AVX-512 loop computes it (bit for bit): with hi = max(|x|, |y|),
    lo = min(|x|, |y|), |z| = hi * sqrt(fma(lo/hi, lo/hi, 1)); 0 when hi == 0, inf when either
    part is infinite (even with a NaN), else NaN when either is NaN."""
    x, y = z
    b = cx.b
    ax, ay = _m(cx, "fabs", x), _m(cx, "fabs", y)
    hi = b.select(b.fcmp_ordered(">=", ax, ay), ax, ay)
    lo = b.select(b.fcmp_ordered(">=", ax, ay), ay, ax)
    r = b.fdiv(lo, hi)
    res = b.fmul(hi, cx.intrinsic("sqrt", r.type, [_fma(cx, r, r, cx.like(r, 1.0))]))
    zero = b.fcmp_ordered("==", hi, cx.like(hi, 0.0))
    res = b.select(zero, cx.like(hi, 0.0), res)
    nan = b.or_(_isnan(cx, eqn, x), _isnan(cx, eqn, y))
    res = b.select(nan, cx.like(hi, float("nan")), res)
    inf = b.or_(_isinf(cx, eqn, x), _isinf(cx, eqn, y))
    return b.select(inf, cx.like(hi, float("inf")), res)


def _libm_hypot(cx, x, y):
    """libm's scalar hypot / hypotf, one call per lane (what NumPy's complex sign divides by)."""
    b = cx.b
    et = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    name = "hypotf" if isinstance(et, ir.FloatType) else "hypot"
    fn = b.module.globals.get(name) or ir.Function(b.module, ir.FunctionType(et, [et, et]), name)
    if not isinstance(x.type, ir.VectorType):
        return b.call(fn, [x, y])
    out = ir.Constant(x.type, None)
    for k in range(x.type.count):
        lane = ir.Constant(I32, k)
        out = b.insert_element(out, b.call(fn, [b.extract_element(x, lane),
                                                b.extract_element(y, lane)]), lane)
    return out


def _csign(cx, eqn, z):
    """z / |z| as NumPy 2 (|z| from libm's hypot); 0 -> 0; one infinite part -> the unit
    vector along it (even if the other is NaN); both infinite -> NaN."""
    x, y = z
    b = cx.b
    h = _libm_hypot(cx, x, y)
    re, im = b.fdiv(x, h), b.fdiv(y, h)
    zero, one = cx.like(x, 0.0), cx.like(x, 1.0)
    is0 = b.fcmp_ordered("==", h, zero)
    re, im = b.select(is0, zero, re), b.select(is0, zero, im)
    xi, yi = _isinf(cx, eqn, x), _isinf(cx, eqn, y)
    only_x = b.and_(xi, b.xor(yi, cx.like(yi, 1)))
    only_y = b.and_(yi, b.xor(xi, cx.like(xi, 1)))
    sx = cx.intrinsic("copysign", x.type, [one, x])
    sy = cx.intrinsic("copysign", x.type, [one, y])
    re = b.select(only_x, sx, b.select(only_y, zero, re))
    im = b.select(only_x, zero, b.select(only_y, sy, im))
    both = b.and_(xi, yi)
    nan = cx.like(x, float("nan"))
    return b.select(both, nan, re), b.select(both, nan, im)


def _cpow(cx, eqn, z, w):
    """z**w as NumPy's npy_cpow: w == 0 -> 1; z == 0 -> 0 when Re w > 0, else NaN; an
    integral real w with |w| < 100 by binary exponentiation (``_cpow_integral``, bit for bit
    NumPy's); otherwise exp(w log z) (glibc's cpow formula; ~10 ulp for finite values). Known
    difference: with an infinite or NaN operand NumPy (C99 Annex G multiply inside glibc's
    cpow) sometimes returns a number where this gives NaN, e.g. 1j ** (inf + inf j) is 0."""
    (x, y), (u, v) = z, w
    b = cx.b
    zero, one = cx.like(x, 0.0), cx.like(x, 1.0)
    nan = cx.like(x, float("nan"))
    lz = _clog(cx, eqn, z)
    re, im = _cexp(cx, eqn, _cmul(cx, w, lz))
    integral, (ire, iim) = _cpow_integral(cx, z, u, v)
    re, im = b.select(integral, ire, re), b.select(integral, iim, im)
    z0 = b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))
    w_pos = b.fcmp_ordered(">", u, zero)
    re = b.select(z0, b.select(w_pos, zero, nan), re)
    im = b.select(z0, b.select(w_pos, zero, nan), im)
    w0 = b.and_(b.fcmp_ordered("==", u, zero), b.fcmp_ordered("==", v, zero))
    return b.select(w0, one, re), b.select(w0, zero, im)


def _cpow_integral(cx, z, u, v):
    """(whether w = u + iv is real, integral and |u| < 100; z**u then) as npy_cpow's loop:
    aa = 1, p = z; for each bit of |n| from the lowest: aa = aa * p where the bit is set, p =
    p * p; 1 / aa for n < 0. The exponent is per lane here, so all 7 bits are unrolled and the
    products selected (a product by 1 of a finite z is exact, as in NumPy's loop); its cmul
    has no fma (``_cmul_plain``)."""
    b = cx.b
    zero, one = cx.like(u, 0.0), cx.like(u, 1.0)
    au = mathlib.call_math(b, "fabs", u)
    small = b.and_(b.fcmp_ordered("==", v, zero), b.fcmp_ordered("<", au, cx.like(u, 100.0)))
    it = ir.VectorType(ir.IntType(32), u.type.count) if isinstance(u.type, ir.VectorType) \
        else ir.IntType(32)
    n = b.fptosi(b.select(small, au, zero), it)          # (only lanes with |u| < 100 count)
    integral = b.and_(small, b.fcmp_ordered("==", b.sitofp(n, u.type), au))
    aa, p = (one, zero), z
    for k in range(7):                                    # |n| < 100 < 2**7
        bit = b.icmp_unsigned("!=", b.and_(n, _int_splat(it, 1 << k)), _int_splat(it, 0))
        prod = _cmul_plain(cx, aa, p)
        aa = (b.select(bit, prod[0], aa[0]), b.select(bit, prod[1], aa[1]))
        if k < 6:
            p = _cmul_plain(cx, p, p)
    inv = _cdiv(cx, (one, zero), aa)
    neg = b.fcmp_ordered("<", u, zero)
    return integral, (b.select(neg, inv[0], aa[0]), b.select(neg, inv[1], aa[1]))


def _int_splat(ty, value):
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def _csinh(cx, eqn, z):
    x, y = z
    b = cx.b
    re = b.fmul(_m(cx, "sinh", x), _m(cx, "cos", y))
    re = b.select(b.fcmp_ordered("==", y, cx.like(y, 0.0)), _m(cx, "sinh", x), re)
    return re, _zero_im(cx, y, b.fmul(_m(cx, "cosh", x), _m(cx, "sin", y)))


def _ccosh(cx, eqn, z):
    x, y = z
    b = cx.b
    sinh_x = _m(cx, "sinh", x)
    return (b.fmul(_m(cx, "cosh", x), _m(cx, "cos", y)),
            _zero_im(cx, y, b.fmul(sinh_x, _m(cx, "sin", y)), sinh_x))


def _ctan(cx, eqn, z):
    """tan z = -i tanh(i z)."""
    x, y = z
    re, im = _ctanh(cx, eqn, (cx.b.fneg(y), x))
    return im, cx.b.fneg(re)


def _cscaled_log(scale):
    def emit(cx, eqn, z):
        re, im = _clog(cx, eqn, z)
        k = cx.like(re, scale)
        return cx.b.fmul(re, k), cx.b.fmul(im, k)
    return emit


def _cexp2(cx, eqn, z):
    k = cx.like(z[0], float(np.log(2.0)))
    return _cexp(cx, eqn, (cx.b.fmul(z[0], k), cx.b.fmul(z[1], k)))


def _cexpm1(cx, eqn, z):
    """(expm1(x) cos y - 2 sin^2(y/2), e^x sin y), as NumPy's nc_expm1."""
    x, y = z
    b = cx.b
    s = _m(cx, "sin", b.fmul(y, cx.like(y, 0.5)))
    re = b.fsub(b.fmul(_m(cx, "expm1", x), _m(cx, "cos", y)),
                b.fmul(cx.like(s, 2.0), b.fmul(s, s)))
    return re, b.fmul(_m(cx, "exp", x), _m(cx, "sin", y))     # NumPy: inf*0 = nan here too


def _clog1p(cx, eqn, z):
    """log(1 + z) = (log |1 + z|, atan2(y, x + 1)); while |1 + z|^2 = 1 + t with |t| < 1/2,
    the real part is 0.5 * log1p(t), t = x (x + 2) + y^2, which stays accurate as z -> 0
    (NumPy's nc_log1p loses up to ~500 ulp there)."""
    x, y = z
    b = cx.b
    x1 = b.fadd(x, cx.like(x, 1.0))
    t = _fma(cx, x, b.fadd(x, cx.like(x, 2.0)), b.fmul(y, y))
    small = b.fcmp_ordered("<", _m(cx, "fabs", t), cx.like(t, 0.5))
    re = b.select(small, b.fmul(cx.like(t, 0.5), _m(cx, "log1p", t)),
                  _m(cx, "log", _m(cx, "hypot", x1, y)))
    return re, _m(cx, "arctan2", y, x1)


def _csplit(fn):
    return lambda cx, eqn, x, y: tuple(fn(cx.b, a, b) for a, b in zip(x, y))


CEMIT = {
    "add": _csplit(lambda b, p, q: b.fadd(p, q)), "sub": _csplit(lambda b, p, q: b.fsub(p, q)),
    "mul": lambda cx, eqn, x, y: _cmul(cx, x, y), "div": lambda cx, eqn, x, y: _cdiv(cx, x, y),
    "neg": lambda cx, eqn, x: (cx.b.fneg(x[0]), cx.b.fneg(x[1])),
    "conj": lambda cx, eqn, x: (x[0], cx.b.fneg(x[1])),
    "real": lambda cx, eqn, x: x[0], "imag": lambda cx, eqn, x: x[1],
    "eq": lambda cx, eqn, x, y: cx.b.and_(cx.b.fcmp_ordered("==", x[0], y[0]),
                                          cx.b.fcmp_ordered("==", x[1], y[1])),
    "ne": lambda cx, eqn, x, y: cx.b.or_(cx.b.fcmp_unordered("!=", x[0], y[0]),
                                         cx.b.fcmp_unordered("!=", x[1], y[1])),
    "isnan": lambda cx, eqn, x: cx.b.or_(_isnan(cx, eqn, x[0]), _isnan(cx, eqn, x[1])),
    "isinf": lambda cx, eqn, x: cx.b.or_(_isinf(cx, eqn, x[0]), _isinf(cx, eqn, x[1])),
    "isfinite": lambda cx, eqn, x: cx.b.and_(_isfinite(cx, eqn, x[0]),
                                             _isfinite(cx, eqn, x[1])),
    "select": lambda cx, eqn, p, t, f: (cx.b.select(p, t[0], f[0]), cx.b.select(p, t[1], f[1])),
    "convert": _cconvert,
    "exp": _cexp, "log": _clog, "sqrt": _csqrt, "sin": _csin, "cos": _ccos, "tanh": _ctanh,
    "integer_pow": _cinteger_pow, "sinh": _csinh, "cosh": _ccosh, "tan": _ctan,
    "log2": _cscaled_log(1.0 / np.log(2.0)), "log10": _cscaled_log(1.0 / np.log(10.0)),
    "exp2": _cexp2, "expm1": _cexpm1, "log1p": _clog1p,
    "stop_gradient": lambda cx, eqn, x: x, "abs": _cabs, "sign": _csign, "pow": _cpow,
    "complex": lambda cx, eqn, re, im: (re, im),     # real operands: the pair itself
    "check": _check,            # emitted by the loop group itself, as for real values
}
assert CEMIT.keys() == lowering.COMPLEX, "the planner's names are this table's keys"
