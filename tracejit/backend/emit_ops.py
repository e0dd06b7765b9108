"""Elementwise lowering table: primitive name -> emitter of its vector (or scalar) body.

Every emitter takes ``(cx, eqn, *args)`` where ``cx`` is an :class:`OpContext` (builder and lane
count) and the args are LLVM values of the operands' register types (``<VL x T>``, or scalars
when VL == 1; bool is ``i1``). Semantics follow NumPy bit for bit where NumPy is exact:
- no fast-math flags anywhere (+ - * / round like NumPy);
- integer ``floordiv``/``rem`` by zero give 0 (NumPy's values); INT_MIN // -1 wraps to INT_MIN;
- float floordiv/rem follow NumPy's ``npy_divmod`` (fmod, sign fix-up, floor with 0.5 check);
- max/min propagate NaN: ``(a >= b or isnan(a)) ? a : b`` as NumPy's maximum;
- float -> int ``convert``: NaN -> 0, out-of-range saturates (``llvm.fptosi.sat``), as the
  interpreter's ``convert`` impl;
- transcendentals go through ``mathlib.call_math`` (vector functions, <= a few ulp).
Complex dtypes have no entry here: such equations run through the NumPy fallback.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from . import mathlib

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()
_REG = {np.dtype(np.bool_): I1, np.dtype(np.int32): I32, np.dtype(np.int64): I64,
        np.dtype(np.float32): F32, np.dtype(np.float64): F64}


def reg_type(dtype):
    return _REG[np.dtype(dtype)]


def mem_type(dtype):
    t = _REG[np.dtype(dtype)]
    return I8 if t is I1 else t


def dtype_ok(dtype) -> bool:
    return np.dtype(dtype) in _REG


def suffix(ty) -> str:
    """LLVM intrinsic type suffix: v8f64, f32, v16i1 ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{suffix(ty.element)}"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.PointerType):
        return "p0"
    return f"i{ty.width}"


class OpContext:
    """Builder + lane count; constants and intrinsic calls of the right shape."""

    def __init__(self, builder: ir.IRBuilder, vl: int):
        self.b = builder
        self.vl = vl

    def ty(self, scalar_ty):
        return scalar_ty if self.vl == 1 else ir.VectorType(scalar_ty, self.vl)

    def const(self, scalar_ty, value):
        if isinstance(scalar_ty, (ir.FloatType, ir.DoubleType)):
            value = float(value)
        else:
            value = int(value)
        c = ir.Constant(scalar_ty, value)
        return c if self.vl == 1 else ir.Constant(self.ty(scalar_ty), [c] * self.vl)

    def like(self, v, value):
        """A constant of ``v``'s type (scalar or vector of any width) holding ``value``."""
        if isinstance(v.type, ir.VectorType):
            c = OpContext(self.b, 1).const(v.type.element, value)
            return ir.Constant(v.type, [c] * v.type.count)
        return OpContext(self.b, 1).const(v.type, value)

    def intrinsic(self, name, ret, args, types=None):
        """Call ``llvm.<name>.<suffixes>``. Masked memory intrinsics use the LLVM 22 form
        without the i32 alignment operand (as matmul.py declares them in a shared module)."""
        if name.startswith("masked."):
            args = [a for a in args if not (isinstance(a, ir.Constant) and a.type == I32)]
        module = self.b.module
        full = f"llvm.{name}." + ".".join(suffix(t) for t in (types or [ret]))
        fn = module.globals.get(full)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), full)
        return self.b.call(fn, args)


def _is_float(v):
    t = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    return isinstance(t, (ir.FloatType, ir.DoubleType))


def _is_bool(v):
    t = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    return t == I1


def _math(name):
    return lambda cx, eqn, x: mathlib.call_math(cx.b, name, x)


def _arith(fop, iop, bop=None):
    def emit(cx, eqn, x, y):
        if _is_float(x):
            return getattr(cx.b, fop)(x, y)
        if _is_bool(x) and bop:
            return getattr(cx.b, bop)(x, y)
        return getattr(cx.b, iop)(x, y)
    return emit


def _neg(cx, eqn, x):
    return cx.b.fneg(x) if _is_float(x) else cx.b.sub(cx.like(x, 0), x)


def _abs(cx, eqn, x):
    if _is_float(x):
        return mathlib.call_math(cx.b, "fabs", x)
    return cx.b.select(cx.b.icmp_signed("<", x, cx.like(x, 0)), cx.b.sub(cx.like(x, 0), x), x)


def _sign(cx, eqn, x):
    b = cx.b
    one, mone, zero = cx.like(x, 1), cx.like(x, -1), cx.like(x, 0)
    if _is_float(x):
        pos, negv = b.fcmp_ordered(">", x, zero), b.fcmp_ordered("<", x, zero)
        iszero = b.fcmp_ordered("==", x, zero)
        return b.select(pos, one, b.select(negv, mone, b.select(iszero, zero, x)))
    pos, negv = b.icmp_signed(">", x, zero), b.icmp_signed("<", x, zero)
    return b.select(pos, one, b.select(negv, mone, zero))


def _safe_divisor(cx, x, y):
    """(divisor with 0 and the INT_MIN/-1 pair replaced by 1, mask of y == 0)."""
    b = cx.b
    bits = (y.type.element if isinstance(y.type, ir.VectorType) else y.type).width
    zero = b.icmp_signed("==", y, cx.like(y, 0))
    overflow = b.and_(b.icmp_signed("==", x, cx.like(x, -(1 << (bits - 1)))),
                      b.icmp_signed("==", y, cx.like(y, -1)))
    return b.select(b.or_(zero, overflow), cx.like(y, 1), y), zero


def _fmod_parts(cx, x, y):
    """NumPy's npy_divmod for floats: (floordiv, mod)."""
    b = cx.b
    zero = cx.like(x, 0.0)
    mod = b.frem(x, y)
    ydiv0 = b.fcmp_ordered("==", y, zero)
    div = b.fdiv(b.fsub(x, mod), y)
    modnz = b.fcmp_unordered("!=", mod, zero)
    fix = b.and_(modnz, b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)))
    mod2 = b.select(fix, b.fadd(mod, y), mod)
    mod2 = b.select(modnz, mod2, cx.intrinsic("copysign", x.type, [zero, y]))
    div = b.select(fix, b.fsub(div, cx.like(x, 1.0)), div)
    fl = mathlib.call_math(b, "floor", div)
    fl = b.select(b.fcmp_ordered(">", b.fsub(div, fl), cx.like(x, 0.5)),
                  b.fadd(fl, cx.like(x, 1.0)), fl)
    divnz = b.fcmp_unordered("!=", div, zero)
    q = b.select(divnz, fl, cx.intrinsic("copysign", x.type, [zero, b.fdiv(x, y)]))
    q = b.select(ydiv0, b.fdiv(x, y), q)
    mod2 = b.select(ydiv0, mod, mod2)
    return q, mod2


def _floordiv(cx, eqn, x, y):
    b = cx.b
    if _is_float(x):
        return _fmod_parts(cx, x, y)[0]
    d, zero = _safe_divisor(cx, x, y)
    q, r = b.sdiv(x, d), b.srem(x, d)
    adjust = b.and_(b.icmp_signed("!=", r, cx.like(r, 0)),
                    b.xor(b.icmp_signed("<", r, cx.like(r, 0)),
                          b.icmp_signed("<", d, cx.like(d, 0))))
    q = b.select(adjust, b.sub(q, cx.like(q, 1)), q)
    return b.select(zero, cx.like(q, 0), q)


def _rem(cx, eqn, x, y):
    b = cx.b
    if _is_float(x):
        return _fmod_parts(cx, x, y)[1]
    d, zero = _safe_divisor(cx, x, y)
    r = b.srem(x, d)
    adjust = b.and_(b.icmp_signed("!=", r, cx.like(r, 0)),
                    b.xor(b.icmp_signed("<", r, cx.like(r, 0)),
                          b.icmp_signed("<", d, cx.like(d, 0))))
    r = b.select(adjust, b.add(r, d), r)
    return b.select(zero, cx.like(r, 0), r)


def _minmax(is_max):
    def emit(cx, eqn, x, y):
        b = cx.b
        if _is_float(x):
            keep = b.or_(b.fcmp_ordered(">=" if is_max else "<=", x, y),
                         b.fcmp_unordered("uno", x, x))
            return b.select(keep, x, y)
        if _is_bool(x):
            return b.or_(x, y) if is_max else b.and_(x, y)
        return b.select(b.icmp_signed(">=" if is_max else "<=", x, y), x, y)
    return emit


def _cmp(op):
    fop = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]

    def emit(cx, eqn, x, y):
        b = cx.b
        if _is_float(x):
            if op == "ne":
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(fop, x, y)
        if _is_bool(x):
            return b.icmp_unsigned(fop, x, y)
        return b.icmp_signed(fop, x, y)
    return emit


def _isnan(cx, eqn, x):
    return cx.b.fcmp_unordered("uno", x, x)


def _isinf(cx, eqn, x):
    return cx.b.fcmp_ordered("==", mathlib.call_math(cx.b, "fabs", x), cx.like(x, float("inf")))


def _isfinite(cx, eqn, x):
    return cx.b.fcmp_ordered("<", mathlib.call_math(cx.b, "fabs", x), cx.like(x, float("inf")))


def _integer_pow(cx, eqn, x):
    n = eqn.params["n"]
    b = cx.b
    mul = b.fmul if _is_float(x) else b.mul
    result, base, k = None, x, abs(n)
    while k:
        if k & 1:
            result = base if result is None else mul(result, base)
        k >>= 1
        if k:
            base = mul(base, base)
    if result is None:
        result = cx.like(x, 1)
    if n < 0:
        result = b.fdiv(cx.like(x, 1.0), result)
    return result


def _select(cx, eqn, p, t, f):
    return cx.b.select(p, t, f)


def convert_value(cx, x, src, dst):
    """Convert a register value between dtypes (NumPy astype; float->int saturating, NaN->0)."""
    src, dst = np.dtype(src), np.dtype(dst)
    b = cx.b
    tt = cx.ty(reg_type(dst))
    if src == dst:
        return x
    if dst.kind == "b":
        if src.kind == "f":
            return b.fcmp_unordered("!=", x, cx.like(x, 0.0))
        return b.icmp_signed("!=", x, cx.like(x, 0))
    if src.kind == "b":
        return b.uitofp(x, tt) if dst.kind == "f" else b.zext(x, tt)
    if src.kind == "f" and dst.kind == "f":
        return b.fpext(x, tt) if dst.itemsize > src.itemsize else b.fptrunc(x, tt)
    if src.kind == "f":
        return cx.intrinsic("fptosi.sat", tt, [x], [tt, x.type])
    if dst.kind == "f":
        return b.sitofp(x, tt)
    if dst.itemsize > src.itemsize:
        return b.sext(x, tt)
    return b.trunc(x, tt)


def _convert(cx, eqn, x):
    return convert_value(cx, x, eqn.invars[0].ty.dtype, eqn.params["dtype"])


def _not(cx, eqn, x):
    return cx.b.xor(x, cx.like(x, 1))


EMIT = {
    "neg": _neg, "sign": _sign, "abs": _abs,
    "floor": _math("floor"), "ceil": _math("ceil"), "round": _math("rint"),
    "sqrt": _math("sqrt"), "isnan": _isnan, "isinf": _isinf, "isfinite": _isfinite,
    "not": _not,
    "add": _arith("fadd", "add", "or_"), "sub": _arith("fsub", "sub"),
    "mul": _arith("fmul", "mul", "and_"), "div": _arith("fdiv", "sdiv"),
    "floordiv": _floordiv, "rem": _rem,
    "pow": lambda cx, eqn, x, y: mathlib.call_math(cx.b, "power", x, y),
    "atan2": lambda cx, eqn, x, y: mathlib.call_math(cx.b, "arctan2", x, y),
    "hypot": lambda cx, eqn, x, y: mathlib.call_math(cx.b, "hypot", x, y),
    "max": _minmax(True), "min": _minmax(False),
    "eq": _cmp("eq"), "ne": _cmp("ne"), "lt": _cmp("lt"), "le": _cmp("le"), "gt": _cmp("gt"),
    "ge": _cmp("ge"),
    "and": lambda cx, eqn, x, y: cx.b.and_(x, y), "or": lambda cx, eqn, x, y: cx.b.or_(x, y),
    "xor": lambda cx, eqn, x, y: cx.b.xor(x, y),
    "integer_pow": _integer_pow, "select": _select, "convert": _convert,
}
for _name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos",
              "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
              "arctanh"):
    EMIT[_name] = _math(_name)

# rough single-core cost in ns per element (f64), used to decide on multi-threading
COST = {name: 0.05 for name in EMIT}
COST.update({n: 0.5 for n in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
                              "cos", "tanh", "sinh", "cosh", "arcsinh", "arccosh", "arctanh")})
COST.update({n: 2.0 for n in ("tan", "arcsin", "arccos", "arctan", "cbrt", "pow", "atan2",
                              "hypot", "floordiv", "rem")})
COST.update({"div": 0.15, "sqrt": 0.15})


# ---------------------------------------------------------------------------------------------
# complex: a value is a (re, im) pair of real registers. Rounding replicates NumPy 2.4 on this
# host (checked in tests): multiply is re = fma(ar, br, -(ai*bi)), im = fma(ar, bi, ai*br) (its
# AVX-512 loop); divide is Smith's algorithm as in NumPy's loops. Functions without an entry here
# (exp, log, sqrt, pow, abs, sign, integer_pow, prod...) run through the NumPy fallback.

def _fma(cx, a, b, c):
    return cx.intrinsic("fma", a.type, [a, b, c])


def _cmul(cx, x, y):
    (ar, ai), (br, bi) = x, y
    b = cx.b
    return (_fma(cx, ar, br, b.fneg(b.fmul(ai, bi))), _fma(cx, ar, bi, b.fmul(ai, br)))


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
}


def emit(cx, eqn, args):
    """Emit ``eqn`` on register values (complex operands are (re, im) pairs)."""
    if any(np.dtype(a.ty.dtype).kind == "c" for a in (*eqn.invars, *eqn.outvars)):
        return CEMIT[eqn.prim.name](cx, eqn, *args)
    return EMIT[eqn.prim.name](cx, eqn, *args)


def lowerable(eqn) -> bool:
    """Whether an elementwise equation has a native rule for its dtypes."""
    name = eqn.prim.name
    dts = [np.dtype(a.ty.dtype) for a in (*eqn.invars, *eqn.outvars)]
    if any(d.kind == "c" for d in dts):
        return name in CEMIT and all(d in _REG or d.kind == "c" for d in dts)
    return name in EMIT and all(d in _REG for d in dts)
