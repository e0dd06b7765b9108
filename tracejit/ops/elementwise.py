"""Elementwise primitives: unary math, binary arithmetic, comparisons, select, convert, and
the run-time check ``check`` (an identity that raises NumPy's error for bad values; see there).

Operand rule (checked by the shape rule): all operands have one dtype (select's predicate is bool)
and each shape is either () or the common shape; a rank-0 operand broadcasts implicitly. The
NumPy layer inserts converts and broadcast_in_dim so this always holds. The result is weakly typed
only when every operand is.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive, Tracer
from ..errors import DTypeError, ShapeError
from ..ir import Type
from .. import ad_util as ad


def _common_shape(name, types):
    shapes = {t.shape for t in types if t.shape != ()}
    if len(shapes) > 1:
        raise ShapeError(f"{name}: operand shapes {[t.shape for t in types]} differ "
                         f"(only rank-0 operands broadcast implicitly at this level)")
    return shapes.pop() if shapes else ()


def _same_dtype(name, types):
    dts = {t.dtype for t in types}
    if len(dts) > 1:
        raise DTypeError(f"{name}: operand dtypes {[str(t.dtype) for t in types]} differ")
    return dts.pop()


def _check_kinds(name, dt, kinds):
    """``kinds``: the NumPy kinds the primitive takes; "i" stands for all integers, signed and
    unsigned (every integer primitive takes both)."""
    if dt.kind not in kinds and not (dt.kind == "u" and "i" in kinds):
        names = {"b": "bool", "i": "integer", "f": "float", "c": "complex"}
        allowed = ", ".join(names[k] for k in kinds)
        raise DTypeError(f"{name} is not defined for dtype {dt} (allowed: {allowed})")


def _make(name, np_fn, nargs, *, kinds="ifc", out=None, **props):
    """Define an elementwise primitive. ``out``: None (same dtype), 'bool', 'real' or a dtype."""

    out_dtypes: dict = {}        # operand dtype -> result dtype, for the dtypes seen so far

    def shape_rule(*types):
        if len(types) != nargs:
            raise TypeError(f"{name} takes {nargs} operands, got {len(types)}")
        # one pass over the operands (this runs for every traced equation); the helpers below
        # only build the error messages
        t0 = types[0]
        dt, shape, weak = t0.dtype, t0.shape, t0.weak
        for t in types[1:]:
            if t.dtype != dt:
                _same_dtype(name, types)
            if t.shape != shape:
                if shape == ():
                    shape = t.shape
                elif t.shape != ():
                    _common_shape(name, types)
            weak = weak and t.weak
        odt = out_dtypes.get(dt)
        if odt is None:
            _check_kinds(name, dt, kinds)
            odt = out_dtypes[dt] = _out_dtype(dt)
        return Type(odt, shape, weak and odt.kind == dt.kind)

    def _out_dtype(dt):
        if out is None:
            return dt
        if out == "bool":
            return dtypes.bool_
        if out == "real":
            return dtypes.real_dtype(dt)
        return np.dtype(out)

    def impl(*xs):
        xs = [np.asarray(x) for x in xs]
        with np.errstate(all="ignore"):
            r = np_fn(*xs)
        return np.asarray(r, dtype=_out_dtype(xs[0].dtype))

    return Primitive(name, "elementwise", shape_rule, impl, nargs=nargs, **props)


# unary -------------------------------------------------------------------------------------
neg_p = _make("neg", np.negative, 1, kinds="ifc", linear=True)
ad.deflinear(neg_p, lambda ct, x: [ad.neg(ct)])
sign_p = _make("sign", np.sign, 1, kinds="ifc")
ad.defjvp_zero(sign_p, "piecewise constant (derivative 0, also at 0)")
floor_p = _make("floor", np.floor, 1, kinds="f")
ad.defjvp_zero(floor_p, "piecewise constant")
ceil_p = _make("ceil", np.ceil, 1, kinds="f")
ad.defjvp_zero(ceil_p, "piecewise constant")
round_p = _make("round", np.rint, 1, kinds="f")            # half to even, as np.round
ad.defjvp_zero(round_p, "piecewise constant")
abs_p = _make("abs", np.abs, 1, kinds="ifc", out="real")


def _abs_jvp(g, ans, x):
    """|x|' = sign(x), so 0 at 0; complex: Re(conj(z) dz) / |z|, 0 at z = 0."""
    if ad.ty(x).dtype.kind != "c":
        return ad.mul(g, ad.unary("sign", x))
    safe = ad.convert(ad.select(ad.eq(ans, 0), 1, ans), ad.ty(x).dtype)
    return ad.real_part(ad.mul(g, ad.div(ad.unary("conj", x), safe)))


ad.defjvp(abs_p, _abs_jvp)
exp_p = _make("exp", np.exp, 1, kinds="fc")
ad.defjvp(exp_p, lambda g, ans, x: ad.mul(g, ans))
exp2_p = _make("exp2", np.exp2, 1, kinds="fc")
ad.defjvp(exp2_p, lambda g, ans, x: ad.mul(g, ad.mul(ans, float(np.log(2)))))
expm1_p = _make("expm1", np.expm1, 1, kinds="fc")
ad.defjvp(expm1_p, lambda g, ans, x: ad.mul(g, ad.add(ans, 1)))
log_p = _make("log", np.log, 1, kinds="fc")
ad.defjvp(log_p, lambda g, ans, x: ad.div(g, x))
log2_p = _make("log2", np.log2, 1, kinds="fc")
ad.defjvp(log2_p, lambda g, ans, x: ad.div(g, ad.mul(x, float(np.log(2)))))
log10_p = _make("log10", np.log10, 1, kinds="fc")
ad.defjvp(log10_p, lambda g, ans, x: ad.div(g, ad.mul(x, float(np.log(10)))))
log1p_p = _make("log1p", np.log1p, 1, kinds="fc")
ad.defjvp(log1p_p, lambda g, ans, x: ad.div(g, ad.add(x, 1)))
sqrt_p = _make("sqrt", np.sqrt, 1, kinds="fc")
ad.defjvp(sqrt_p, lambda g, ans, x: ad.mul(g, ad.div(0.5, ans)))   # inf at 0
cbrt_p = _make("cbrt", np.cbrt, 1, kinds="f")
ad.defjvp(cbrt_p, lambda g, ans, x: ad.mul(g, ad.div(1 / 3, ad.square(ans))))
sin_p = _make("sin", np.sin, 1, kinds="fc")
ad.defjvp(sin_p, lambda g, ans, x: ad.mul(g, ad.unary("cos", x)))
cos_p = _make("cos", np.cos, 1, kinds="fc")
ad.defjvp(cos_p, lambda g, ans, x: ad.mul(g, ad.neg(ad.unary("sin", x))))
tan_p = _make("tan", np.tan, 1, kinds="fc")
ad.defjvp(tan_p, lambda g, ans, x: ad.mul(g, ad.add(ad.square(ans), 1)))
sinh_p = _make("sinh", np.sinh, 1, kinds="fc")
ad.defjvp(sinh_p, lambda g, ans, x: ad.mul(g, ad.unary("cosh", x)))
cosh_p = _make("cosh", np.cosh, 1, kinds="fc")
ad.defjvp(cosh_p, lambda g, ans, x: ad.mul(g, ad.unary("sinh", x)))
tanh_p = _make("tanh", np.tanh, 1, kinds="fc")
ad.defjvp(tanh_p, lambda g, ans, x: ad.mul(g, ad.sub(1, ad.square(ans))))
arcsin_p = _make("arcsin", np.arcsin, 1, kinds="fc")
ad.defjvp(arcsin_p, lambda g, ans, x: ad.div(g, ad.unary("sqrt", ad.sub(1, ad.square(x)))))
arccos_p = _make("arccos", np.arccos, 1, kinds="fc")
ad.defjvp(arccos_p, lambda g, ans, x: ad.div(g, ad.neg(ad.unary("sqrt",
                                                                ad.sub(1, ad.square(x))))))
arctan_p = _make("arctan", np.arctan, 1, kinds="fc")
ad.defjvp(arctan_p, lambda g, ans, x: ad.div(g, ad.add(ad.square(x), 1)))
arcsinh_p = _make("arcsinh", np.arcsinh, 1, kinds="fc")
ad.defjvp(arcsinh_p, lambda g, ans, x: ad.div(g, ad.unary("sqrt", ad.add(ad.square(x), 1))))
arccosh_p = _make("arccosh", np.arccosh, 1, kinds="fc")
ad.defjvp(arccosh_p, lambda g, ans, x: ad.div(g, ad.mul(ad.unary("sqrt", ad.sub(x, 1)),
                                                       ad.unary("sqrt", ad.add(x, 1)))))
arctanh_p = _make("arctanh", np.arctanh, 1, kinds="fc")
ad.defjvp(arctanh_p, lambda g, ans, x: ad.div(g, ad.sub(1, ad.square(x))))
real_p = _make("real", np.real, 1, kinds="c", out="real", linear=True)
ad.deflinear(real_p, lambda ct, x: [ad.to_complex(ct, x.ty.dtype)])   # ct + 0j
imag_p = _make("imag", np.imag, 1, kinds="c", out="real", linear=True)
ad.deflinear(imag_p, lambda ct, x: [ad.mul(ad.to_complex(ct, x.ty.dtype), -1j)])   # -1j * ct
conj_p = _make("conj", np.conj, 1, kinds="c", linear=True)
ad.deflinear(conj_p, lambda ct, x: [ad.unary("conj", ct)])
isnan_p = _make("isnan", np.isnan, 1, kinds="fc", out="bool")
ad.defnondiff(isnan_p, "bool result")
isinf_p = _make("isinf", np.isinf, 1, kinds="fc", out="bool")
ad.defnondiff(isinf_p, "bool result")
isfinite_p = _make("isfinite", np.isfinite, 1, kinds="fc", out="bool")
ad.defnondiff(isfinite_p, "bool result")
not_p = _make("not", np.logical_not, 1, kinds="b")
ad.defnondiff(not_p, "bool result")

# binary ------------------------------------------------------------------------------------
add_p = _make("add", np.add, 2, kinds="ifc", commutative=True, identity=0, linear=True)
ad.defjvp(add_p, lambda g, *_: g, lambda g, *_: g)
add_p.transpose = lambda ct, x, y: [ad.unbroadcast(ct, x.ty) if ad.is_undefined(x) else None,
                                    ad.unbroadcast(ct, y.ty) if ad.is_undefined(y) else None]
sub_p = _make("sub", np.subtract, 2, kinds="ifc", linear=True)
ad.defjvp(sub_p, lambda g, *_: g, lambda g, *_: ad.neg(g))
sub_p.transpose = lambda ct, x, y: [
    ad.unbroadcast(ct, x.ty) if ad.is_undefined(x) else None,
    ad.unbroadcast(ad.neg(ct), y.ty) if ad.is_undefined(y) else None]
mul_p = _make("mul", np.multiply, 2, kinds="ifc", commutative=True, identity=1, bilinear=True)
ad.defjvp(mul_p, lambda g, ans, x, y: ad.mul(g, y), lambda g, ans, x, y: ad.mul(x, g))


def _mul_transpose(ct, x, y):
    """Linear in one operand; ``mul_ct`` keeps masked zero cotangents zero (strong zeros)."""
    if ad.is_undefined(x) and ad.is_undefined(y):
        raise ValueError("mul of two tangents is not linear (a JVP rule emitted a bilinear term)")
    if ad.is_undefined(x):
        return [ad.unbroadcast(ad.mul_ct(ct, y), x.ty), None]
    return [None, ad.unbroadcast(ad.mul_ct(ct, x), y.ty)]


mul_p.transpose = _mul_transpose
div_p = _make("div", np.true_divide, 2, kinds="fc")


def _div_by(g, y):
    """``g / y`` inside div's JVP, as ``g * (1/y)`` when ``y`` is traced: both tangent rules
    (and so their transposes) then share one reciprocal after CSE, and the gradient of ``x / y``
    costs one division more than ``x / y`` instead of three (W7). Within ~1 ulp of ``g / y``."""
    return ad.mul(g, ad.div(1, y)) if isinstance(y, Tracer) else ad.div(g, y)


ad.defjvp(div_p, lambda g, ans, x, y: _div_by(g, y),
          lambda g, ans, x, y: ad.mul(g, ad.neg(_div_by(ans, y))))


def _div_transpose(ct, x, y):
    if ad.is_undefined(y):
        raise ValueError("div is linear in its numerator only")
    return [ad.unbroadcast(ad.div_ct(ct, y), x.ty), None]


div_p.transpose = _div_transpose
floordiv_p = _make("floordiv", np.floor_divide, 2, kinds="if")   # NumPy: x // 0 == 0 for ints
ad.defjvp_zero(floordiv_p, "piecewise constant")
rem_p = _make("rem", np.remainder, 2, kinds="if")               # sign of the divisor, as NumPy
ad.defjvp(rem_p, lambda g, ans, x, y: g,        # x - floor(x / y) * y
          lambda g, ans, x, y: ad.mul(g, ad.neg(ad.unary("floor", ad.div(x, y)))))


def _c_pow(x, y):
    """C's pow for every element, as the llvm backend computes it: NumPy's power loop takes a
    fast path for an exponent of stride 0 (sqrt for 0.5, where sqrt(-0.0) is -0.0 and
    sqrt(-inf) NaN but pow gives 0.0 and inf), which a contiguous exponent of the full shape,
    at least 1-d, never has. (numpy.power's fast path is the front end's: numpy/math.py.)"""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    return np.power(x, np.array(np.broadcast_to(y, shape), ndmin=1)).reshape(shape)


pow_p = _make("pow", _c_pow, 2, kinds="fc")


def _pow_dx(g, ans, x, y):
    """y * x**(y - 1), taken as 0 where y == 0 (x**0 is constant)."""
    return ad.mul(g, ad.select(ad.eq(y, 0), 0, ad.mul(y, pow_p.bind(x, ad.sub(y, 1)))))


def _pow_dy(g, ans, x, y):
    """log(x) * x**y, taken as 0 where x == 0 (its limit for y > 0)."""
    zero = ad.eq(x, 0)
    return ad.mul(g, ad.select(zero, 0, ad.mul(ans, ad.unary("log", ad.select(zero, 1, x)))))


ad.defjvp(pow_p, _pow_dx, _pow_dy)
max_p = _make("max", np.maximum, 2, kinds="bif", commutative=True)   # NaN-propagating


def _minmax_jvp(prim, cmp):
    """maximum(x, y) takes x's tangent where x > y strictly, else y's: at a tie the derivative
    follows the second operand, so relu = maximum(x, 0) has derivative 0 at 0 and
    clip(x, lo, hi) has derivative 0 at its bounds (as JAX's clamp)."""
    def rule(primals, tangents):
        x, y = primals
        ans = prim.bind(x, y)
        tx, ty = tangents
        if ad.is_zero(tx) and ad.is_zero(ty):
            return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
        pick = cmp(x, y)
        t = ad.select(pick, 0 if ad.is_zero(tx) else tx, 0 if ad.is_zero(ty) else ty)
        return ans, ad.broadcast_to(t, ad.ty(ans).shape)
    prim.jvp = rule


_minmax_jvp(max_p, ad.gt)
min_p = _make("min", np.minimum, 2, kinds="bif", commutative=True)
_minmax_jvp(min_p, ad.lt)
atan2_p = _make("atan2", np.arctan2, 2, kinds="f")
ad.defjvp(atan2_p,      # atan2(x, y): d/dx = y / (x² + y²), d/dy = -x / (x² + y²)
          lambda g, ans, x, y: ad.mul(g, ad.div(y, ad.add(ad.square(x), ad.square(y)))),
          lambda g, ans, x, y: ad.mul(g, ad.div(ad.neg(x), ad.add(ad.square(x), ad.square(y)))))
hypot_p = _make("hypot", np.hypot, 2, kinds="f")
ad.defjvp(hypot_p,      # x / hypot(x, y), taken as 0 at the origin (like |x|' at 0)
          lambda g, ans, x, y: ad.mul(g, ad.div(x, ad.select(ad.eq(ans, 0), 1, ans))),
          lambda g, ans, x, y: ad.mul(g, ad.div(y, ad.select(ad.eq(ans, 0), 1, ans))))
eq_p = _make("eq", np.equal, 2, kinds="bifc", out="bool", commutative=True)
ad.defnondiff(eq_p, "bool result")
ne_p = _make("ne", np.not_equal, 2, kinds="bifc", out="bool", commutative=True)
ad.defnondiff(ne_p, "bool result")
lt_p = _make("lt", np.less, 2, kinds="bif", out="bool")
ad.defnondiff(lt_p, "bool result")
le_p = _make("le", np.less_equal, 2, kinds="bif", out="bool")
ad.defnondiff(le_p, "bool result")
gt_p = _make("gt", np.greater, 2, kinds="bif", out="bool")
ad.defnondiff(gt_p, "bool result")
ge_p = _make("ge", np.greater_equal, 2, kinds="bif", out="bool")
ad.defnondiff(ge_p, "bool result")
# bitwise on integers, logical on bools (the same bits)
and_p = _make("and", np.bitwise_and, 2, kinds="bi", commutative=True)
ad.defnondiff(and_p, "integer or bool result")
or_p = _make("or", np.bitwise_or, 2, kinds="bi", commutative=True)
ad.defnondiff(or_p, "integer or bool result")
xor_p = _make("xor", np.bitwise_xor, 2, kinds="bi", commutative=True)
ad.defnondiff(xor_p, "integer or bool result")
# shifts as NumPy defines them: a shift by >= the bit width or by a negative amount gives 0
# (left) or the sign (right: arithmetic for signed, logical for unsigned integers), never
# undefined behaviour
shl_p = _make("shl", np.left_shift, 2, kinds="i")
ad.defnondiff(shl_p, "integer result")
shr_p = _make("shr", np.right_shift, 2, kinds="i")
ad.defnondiff(shr_p, "integer result")


def _integer_pow_impl(x, *, n):
    with np.errstate(all="ignore"):
        x = np.asarray(x)
        if n < 0 and x.dtype.kind in "biu":
            raise ValueError("integer_pow with a negative exponent on integers")
        return np.asarray(np.power(x, x.dtype.type(n)) if x.dtype.kind != "b" else x,
                          dtype=x.dtype)


def _integer_pow_shape(x, *, n):
    _check_kinds("integer_pow", x.dtype, "ifc")
    return x


integer_pow_p = Primitive("integer_pow", "elementwise", _integer_pow_shape, _integer_pow_impl,
                          nargs=1)


def _integer_pow_jvp(g, ans, x, *, n):
    if n == 0:
        return ad.Zero(ad.tangent_type(ad.ty(ans)))
    if n == 1:
        return g
    return ad.mul(g, ad.mul(x, float(n)) if n == 2 else ad.mul(ad.integer_pow(x, n - 1), float(n)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


def _select_shape(pred, on_true, on_false):
    if pred.dtype != dtypes.bool_:
        raise DTypeError(f"select: the predicate must be bool, got {pred.dtype}")
    shape = _common_shape("select", [pred, on_true, on_false])
    dt = _same_dtype("select", [on_true, on_false])
    return Type(dt, shape, on_true.weak and on_false.weak)


def _select_impl(pred, on_true, on_false):
    t = np.asarray(on_true)
    return np.asarray(np.where(pred, on_true, on_false), dtype=t.dtype)


# select(pred, on_true, on_false) = on_true where pred else on_false
select_p = Primitive("select", "elementwise", _select_shape, _select_impl, nargs=3)


def _select_jvp(primals, tangents):
    pred, a, b = primals
    ans = select_p.bind(pred, a, b)
    _, ta, tb = tangents
    if ad.is_zero(ta) and ad.is_zero(tb):
        return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
    t = ad.select(pred, 0 if ad.is_zero(ta) else ta, 0 if ad.is_zero(tb) else tb)
    return ans, ad.broadcast_to(t, ad.ty(ans).shape)


def _select_transpose(ct, pred, a, b):
    """Each branch gets the cotangent where it was picked and a *masked* zero elsewhere."""
    assert not ad.is_undefined(pred)
    return [None,
            ad.unbroadcast(ad.select(pred, ct, 0), a.ty) if ad.is_undefined(a) else None,
            ad.unbroadcast(ad.select(pred, 0, ct), b.ty) if ad.is_undefined(b) else None]


select_p.jvp = _select_jvp
select_p.transpose = _select_transpose
select_p.props["masks_cotangent"] = True


def _convert_shape(x, *, dtype, weak=False):
    """``weak``: the result stays weakly typed when ``x`` is (a Python int used as a Python
    float, ``n / 4``); a conversion to a NumPy dtype (``astype``) is strong."""
    dt = dtypes.canonical(dtype)
    if x.dtype.kind == "c" and dt.kind != "c":
        raise DTypeError(f"convert from {x.dtype} to {dt} would drop the imaginary part; "
                         f"take .real (or abs) first")
    return Type(dt, x.shape, weak and x.weak)


def _convert_impl(x, *, dtype, weak=False):
    """Float → int: NaN gives 0 and out-of-range values saturate (defined, documented)."""
    x = np.asarray(x)
    dt = np.dtype(dtype)
    if x.dtype.kind == "f" and dt.kind in "iu":
        info = np.iinfo(dt)
        with np.errstate(all="ignore"):
            y = np.where(np.isnan(x), 0, x)
            y = np.clip(np.trunc(y), info.min, info.max)
            out = y.astype(dt)
            # float(info.max) rounds up to 2**63: clip leaves it, astype overflows; fix exactly
            out = np.where(y >= float(info.max), info.max, out)
            return np.asarray(out, dtype=dt)
    if dt == dtypes.bool_:
        return np.asarray(x != 0)
    return x.astype(dt)


convert_p = Primitive("convert", "elementwise", _convert_shape, _convert_impl, nargs=1)


def _convert_jvp(primals, tangents, *, dtype, weak=False):
    """float <-> float/complex carries the tangent; to int/bool (or from them) there is none."""
    (x,), (t,) = primals, tangents
    ans = convert_p.bind(x, dtype=dtype, **({"weak": True} if weak else {}))
    if ad.is_zero(t) or not ad.differentiable(ad.ty(ans)):
        return ans, ad.Zero(ad.tangent_type(ad.ty(ans)))
    return ans, ad.convert(t, dtype)


def _convert_transpose(ct, x, *, dtype, weak=False):
    if x.ty.dtype.kind == "f" and ad.ty(ct).dtype.kind == "c":
        ct = ad.real_part(ct)          # the pairing Re(ct * t) of a real t
    return [ad.convert(ct, x.ty.dtype)]


convert_p.jvp = _convert_jvp
convert_p.transpose = _convert_transpose

# bitcast_convert: the same bits read as another dtype of the same width (ndarray.view(dtype),
# JAX's lax.bitcast_convert_type), for the sign bit of a NaN, copysign, nextafter, frexp
def _bitcast_shape(x, *, dtype):
    dt = dtypes.canonical(dtype)
    if (x.dtype.kind not in "iuf" or dt.kind not in "iuf"
            or x.dtype.itemsize != dt.itemsize):
        raise DTypeError(f"bitcast_convert from {x.dtype} to {dt}: both must be integer or "
                         f"float dtypes of one width (use convert for a value conversion)")
    return Type(dt, x.shape)


def _bitcast_impl(x, *, dtype):
    return np.asarray(x).view(np.dtype(dtype))          # same width: any layout, 0-d too


bitcast_convert_p = Primitive("bitcast_convert", "elementwise", _bitcast_shape, _bitcast_impl,
                              nargs=1)
ad.defnondiff(bitcast_convert_p, "a bit pattern: piecewise constant or discontinuous in x")


# complex(re, im): the complex number with these parts, exactly (re + 1j * im is not: 1j * inf
# has a NaN real part, and -0.0 + 0.0 loses a sign), for writes through x.real / x.imag.
def _complex_shape(re, im):
    if re.dtype != im.dtype or re.dtype.kind != "f":
        raise DTypeError(f"complex: parts must be one float dtype, got {re.dtype} and {im.dtype}")
    if re.shape != im.shape and () not in (re.shape, im.shape):
        raise ShapeError(f"complex: part shapes {re.shape} and {im.shape} differ")
    return Type(np.result_type(re.dtype, np.complex64), re.shape or im.shape,
                re.weak and im.weak)


def _complex_impl(re, im):
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.result_type(re.dtype, np.complex64))
    out.real, out.imag = re, im
    return out


complex_p = Primitive("complex", "elementwise", _complex_shape, _complex_impl, nargs=2,
                      linear=True)
# linear in both parts; with the pairing Re(ct * t): Re(ct (a + ib)) = Re(ct) a - Im(ct) b
ad.deflinear(complex_p, lambda ct, re, im: [
    ad.unbroadcast(ad.real_part(ct), re.ty) if ad.is_undefined(re) else None,
    ad.unbroadcast(ad.neg(ad.unary("imag", ct)), im.ty) if ad.is_undefined(im) else None])



# run-time checks ---------------------------------------------------------------------------
# ``check(bad, x, error=name) -> x``, an identity with a side condition: ``x`` passes through
# unchanged, and ``ERRORS[error]`` is raised when any element of the bool ``bad`` is true. It is
# how a NumPy error that depends on run-time values (today: an integer power with a negative
# exponent, numpy/math.py ``_int_power``) is raised by every backend:
# - the interpreter's impl raises the exception itself;
# - the native backend ORs the error's bit (``backend/abi.py``, ``CHECK_BITS``) into the call's
#   error cell from the loop group that computes ``bad`` (``emit/memory.py``, ``_check``), and
#   ``runtime/executable.py`` (``_raise``) raises the same exception after the call.
# The result is ``x`` (same type); ``bad`` is bool of ``x``'s shape or rank 0, so the primitive
# is elementwise and fuses, batches (the check then covers every example of the batch: any bad
# element raises) and folds like the others. DCE keeps it exactly as long as its result is used:
# the guarded value goes through it, so data dependence is what makes it run (a check whose
# result is dead is dropped with the value it guards). Not differentiable in ``bad`` (bool); the
# identity in ``x``: the tangent passes through (not checked again), the transpose hands the
# cotangent back.

# error name -> (exception type, message): the error exactly as NumPy raises it
ERRORS = {
    "negative_power": (ValueError, "Integers to negative integer powers are not allowed."),
    "histogram_range": (ValueError, "autodetected range of the histogram's data is not finite "
                                    "(it holds NaN or inf): pass range=(min, max)"),
    "bincount_negative": (ValueError, "'list' argument must have no negative elements"),
    "nan_to_int": (ValueError, "cannot convert float NaN to integer"),
    "inf_to_int": (OverflowError, "cannot convert float infinity to integer"),
    "all_nan_slice": (ValueError, "All-NaN slice encountered"),
    "scalar_out_of_bounds": (OverflowError, "Python integer out of bounds for the integer array "
                                            "it is stored into (NumPy stores a scalar through "
                                            "int(); store an array to get a C cast)"),
    # Python ints computed in a trace (int64 there, exact in Python: numpy/intrange.py)
    "python_int_out_of_bounds": (OverflowError, "Python integer out of bounds for the dtype of "
                                                "the array it meets (NumPy converts a Python "
                                                "int to the array's dtype)"),
    "python_int_overflow": (OverflowError, "a Python int computed in the traced function does "
                                           "not fit int64 (Python's ints are unbounded, traced "
                                           "ones are int64): compute it with smaller values or "
                                           "as an array of an explicit dtype"),
    "python_int_zero_division": (ZeroDivisionError, "integer division or modulo by zero"),
    "python_int_negative_shift": (ValueError, "negative shift count"),
    # Python floats computed in a trace (numpy/_base.py, ``elementwise``): Python's errors
    "python_float_division": (ZeroDivisionError, "float division by zero"),
    "python_float_floor_division": (ZeroDivisionError, "float floor division or modulo by zero"),
    "python_zero_power": (ZeroDivisionError, "0.0 cannot be raised to a negative power"),
    "python_float_overflow": (OverflowError, "(34, 'Numerical result out of range')"),
    # numpy.linalg (numpy/factor.py), from the flag output of a linalg primitive
    "singular_matrix": (np.linalg.LinAlgError, "Singular matrix"),
    "not_positive_definite": (np.linalg.LinAlgError, "Matrix is not positive definite"),
    # numpy.linalg's eigh / svd / eig on llvm (backend/emit/lapack.py): LAPACK's info > 0, or
    # eig of a matrix holding inf/NaN (NumPy's own messages name the function; one bit here)
    "no_convergence": (np.linalg.LinAlgError, "Eigenvalues or singular values did not "
                                              "converge (LAPACK syevd/heevd/gesdd/geev failed; "
                                              "eig also refuses infs and NaNs)"),
    # x[mask] = values with a traced mask (numpy/indexing.py, _masked_values); NumPy's text
    # names both counts, of which the mask's is known only at run time
    "mask_values": (ValueError, "NumPy boolean array indexing assignment cannot assign the "
                                "input values to the output values where the mask is true: "
                                "the values' first axis must have one entry per True element "
                                "of the mask (or one in all)"),
    # x[mask].max() / .min() with a traced mask (numpy/selection.py) that selects nothing
    "empty_selection": (ValueError, "zero-size array to reduction operation maximum or minimum "
                                    "which has no identity (x[mask].max() or .min() of a traced "
                                    "mask with no True element)"),
}


def _check_shape(bad, x, *, error):
    if error not in ERRORS:
        raise ValueError(f"check: unknown error {error!r} (known: {sorted(ERRORS)})")
    if bad.dtype != dtypes.bool_:
        raise DTypeError(f"check: the condition must be bool, got {bad.dtype}")
    if bad.shape not in ((), x.shape):
        raise ShapeError(f"check: condition shape {bad.shape} is neither () nor the checked "
                         f"value's shape {x.shape}")
    return x


def _check_impl(bad, x, *, error):
    if np.any(bad):
        exc, message = ERRORS[error]
        raise exc(message)
    return np.asarray(x)


check_p = Primitive("check", "elementwise", _check_shape, _check_impl, nargs=2, linear=True)


def _check_jvp(primals, tangents, *, error):
    """The value passes through checked; its tangent passes through as it is."""
    bad, x = primals
    ans = check_p.bind(bad, x, error=error)
    t = tangents[1]
    return ans, (ad.Zero(ad.tangent_type(ad.ty(ans))) if ad.is_zero(t) else t)


def _check_transpose(ct, bad, x, *, error):
    assert not ad.is_undefined(bad), "check: the condition is never a tangent"
    return [None, ct]


check_p.jvp = _check_jvp
check_p.transpose = _check_transpose


def check(bad, x, error: str):
    """``x``, after raising ``ERRORS[error]`` wherever ``bad`` is true (at run time when either
    is traced). ``bad`` is bool, of ``x``'s shape or rank 0."""
    return check_p.bind(bad, x, error=error)
