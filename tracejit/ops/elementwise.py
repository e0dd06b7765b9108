"""Elementwise primitives: unary math, binary arithmetic, comparisons, select, convert.

Operand rule (checked by the shape rule): all operands have one dtype (select's predicate is bool)
and each shape is either () or the common shape; a rank-0 operand broadcasts implicitly. The
NumPy layer inserts converts and broadcast_in_dim so this always holds. The result is weakly typed
only when every operand is.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type


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


def _weak(types):
    return all(t.weak for t in types)


def _check_kinds(name, dt, kinds):
    if dt.kind not in kinds:
        names = {"b": "bool", "i": "integer", "f": "float", "c": "complex"}
        allowed = ", ".join(names[k] for k in kinds)
        raise DTypeError(f"{name} is not defined for dtype {dt} (allowed: {allowed})")


def _make(name, np_fn, nargs, *, kinds="ifc", out=None, **props):
    """Define an elementwise primitive. ``out``: None (same dtype), 'bool', 'real' or a dtype."""

    def shape_rule(*types):
        if len(types) != nargs:
            raise TypeError(f"{name} takes {nargs} operands, got {len(types)}")
        shape = _common_shape(name, types)
        dt = _same_dtype(name, types)
        _check_kinds(name, dt, kinds)
        odt = _out_dtype(dt)
        return Type(odt, shape, _weak(types) and odt.kind == dt.kind)

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
sign_p = _make("sign", np.sign, 1, kinds="ifc")
floor_p = _make("floor", np.floor, 1, kinds="f")
ceil_p = _make("ceil", np.ceil, 1, kinds="f")
round_p = _make("round", np.rint, 1, kinds="f")            # half to even, as np.round
abs_p = _make("abs", np.abs, 1, kinds="ifc", out="real")
exp_p = _make("exp", np.exp, 1, kinds="fc")
exp2_p = _make("exp2", np.exp2, 1, kinds="fc")
expm1_p = _make("expm1", np.expm1, 1, kinds="fc")
log_p = _make("log", np.log, 1, kinds="fc")
log2_p = _make("log2", np.log2, 1, kinds="fc")
log10_p = _make("log10", np.log10, 1, kinds="fc")
log1p_p = _make("log1p", np.log1p, 1, kinds="fc")
sqrt_p = _make("sqrt", np.sqrt, 1, kinds="fc")
cbrt_p = _make("cbrt", np.cbrt, 1, kinds="f")
sin_p = _make("sin", np.sin, 1, kinds="fc")
cos_p = _make("cos", np.cos, 1, kinds="fc")
tan_p = _make("tan", np.tan, 1, kinds="fc")
sinh_p = _make("sinh", np.sinh, 1, kinds="fc")
cosh_p = _make("cosh", np.cosh, 1, kinds="fc")
tanh_p = _make("tanh", np.tanh, 1, kinds="fc")
arcsin_p = _make("arcsin", np.arcsin, 1, kinds="fc")
arccos_p = _make("arccos", np.arccos, 1, kinds="fc")
arctan_p = _make("arctan", np.arctan, 1, kinds="fc")
arcsinh_p = _make("arcsinh", np.arcsinh, 1, kinds="fc")
arccosh_p = _make("arccosh", np.arccosh, 1, kinds="fc")
arctanh_p = _make("arctanh", np.arctanh, 1, kinds="fc")
real_p = _make("real", np.real, 1, kinds="c", out="real", linear=True)
imag_p = _make("imag", np.imag, 1, kinds="c", out="real", linear=True)
conj_p = _make("conj", np.conj, 1, kinds="c", linear=True)
isnan_p = _make("isnan", np.isnan, 1, kinds="fc", out="bool")
isinf_p = _make("isinf", np.isinf, 1, kinds="fc", out="bool")
isfinite_p = _make("isfinite", np.isfinite, 1, kinds="fc", out="bool")
not_p = _make("not", np.logical_not, 1, kinds="b")

# binary ------------------------------------------------------------------------------------
add_p = _make("add", np.add, 2, kinds="ifc", commutative=True, identity=0, linear=True)
sub_p = _make("sub", np.subtract, 2, kinds="ifc", linear=True)
mul_p = _make("mul", np.multiply, 2, kinds="ifc", commutative=True, identity=1, bilinear=True)
div_p = _make("div", np.true_divide, 2, kinds="fc")
floordiv_p = _make("floordiv", np.floor_divide, 2, kinds="if")   # NumPy: x // 0 == 0 for ints
rem_p = _make("rem", np.remainder, 2, kinds="if")               # sign of the divisor, as NumPy
pow_p = _make("pow", np.power, 2, kinds="fc")
max_p = _make("max", np.maximum, 2, kinds="bif", commutative=True)   # NaN-propagating
min_p = _make("min", np.minimum, 2, kinds="bif", commutative=True)
atan2_p = _make("atan2", np.arctan2, 2, kinds="f")
hypot_p = _make("hypot", np.hypot, 2, kinds="f")
eq_p = _make("eq", np.equal, 2, kinds="bifc", out="bool", commutative=True)
ne_p = _make("ne", np.not_equal, 2, kinds="bifc", out="bool", commutative=True)
lt_p = _make("lt", np.less, 2, kinds="bif", out="bool")
le_p = _make("le", np.less_equal, 2, kinds="bif", out="bool")
gt_p = _make("gt", np.greater, 2, kinds="bif", out="bool")
ge_p = _make("ge", np.greater_equal, 2, kinds="bif", out="bool")
and_p = _make("and", np.logical_and, 2, kinds="b", commutative=True)
or_p = _make("or", np.logical_or, 2, kinds="b", commutative=True)
xor_p = _make("xor", np.logical_xor, 2, kinds="b", commutative=True)


def _integer_pow_impl(x, *, n):
    with np.errstate(all="ignore"):
        x = np.asarray(x)
        if n < 0 and x.dtype.kind in "bi":
            raise ValueError("integer_pow with a negative exponent on integers")
        return np.asarray(np.power(x, x.dtype.type(n)) if x.dtype.kind != "b" else x,
                          dtype=x.dtype)


def _integer_pow_shape(x, *, n):
    _check_kinds("integer_pow", x.dtype, "ifc")
    return x


integer_pow_p = Primitive("integer_pow", "elementwise", _integer_pow_shape, _integer_pow_impl,
                          nargs=1)


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


def _convert_shape(x, *, dtype):
    dt = dtypes.canonical(dtype)
    if x.dtype.kind == "c" and dt.kind != "c":
        raise DTypeError(f"convert from {x.dtype} to {dt} would drop the imaginary part; "
                         f"take .real (or abs) first")
    return Type(dt, x.shape)


def _convert_impl(x, *, dtype):
    """Float → int: NaN gives 0 and out-of-range values saturate (defined, documented)."""
    x = np.asarray(x)
    dt = np.dtype(dtype)
    if x.dtype.kind == "f" and dt.kind == "i":
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
