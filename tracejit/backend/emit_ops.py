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
Complex values are (re, im) pairs (``CEMIT``): arithmetic, comparisons, converts, and exp, log,
sqrt, sin, cos, tan, sinh, cosh, tanh, exp2, expm1, log2, log10, log1p built from the real math
functions, integer_pow by repeated squaring, pow (exp(w log z); see ``_cpow`` for special
values), abs (NumPy's own loop, bit for bit) and sign (z / libm hypot, bit for bit); the arc
functions run through the NumPy fallback.
"""
from __future__ import annotations

import struct

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


_VECTOR_TYPES: dict = {}


def vector_type(scalar_ty, lanes: int) -> ir.VectorType:
    """The one ``<lanes x T>`` object per type: llvmlite caches a type's text per object, and a
    fused body names the same vector type on every instruction."""
    key = (str(scalar_ty), lanes)
    vt = _VECTOR_TYPES.get(key)
    if vt is None:
        vt = _VECTOR_TYPES[key] = ir.VectorType(scalar_ty, lanes)
    return vt


class Splat(ir.Constant):
    """A vector constant with every lane equal, printed as LLVM's ``splat (T v)``: long fused
    bodies use the same few literals hundreds of times, and the short form is less text to
    print and to parse."""

    def __init__(self, vty: ir.VectorType, scalar: ir.Constant):
        super().__init__(vty, [scalar] * vty.count)

    def _get_reference(self):
        return f"splat ({self.constant[0]})"


_TRUE = ir.Constant(ir.IntType(1), 1)


def is_hot(module: ir.Module) -> bool:
    """Whether ``module`` is being emitted for the hot tier (see ``OpContext``)."""
    return getattr(module, "hot_tier", False)


class OpContext:
    """Builder + lane count; constants, math and intrinsic calls of the right shape. Constants
    are made once per (type, value, lanes) and reused, so their text is formatted once.

    ``hoist`` (fused loop bodies): vector constants and the addresses of math functions become
    SSA values computed once in the function's entry block (``select i1 true, c, c``, which
    nothing folds at opt 0), and math calls are indirect through them. The opt-0 tier selects
    instructions with FastISel, which walks a block bottom-up and hands everything above the
    first instruction it cannot select to SelectionDAG (~5 us per instruction instead of ~1):
    in the JIT's large code model it selects neither a vector constant operand nor a direct
    call (a direct call is a register call there anyway; an indirect one it does select).

    The hot tier (``executable.py``) marks its module ``hot_tier = True``: math bodies are then
    inlined into the caller (``call_math(..., inline=True)``) and nothing is hoisted, because the
    module goes through the O1 pipeline, which would have to fold the hoisted callee back into
    a direct call before it could inline it."""

    def __init__(self, builder: ir.IRBuilder, vl: int, hoist: bool = False):
        self.b = builder
        self.vl = vl
        self.hoist = hoist
        self._consts: dict = {}

    def ty(self, scalar_ty):
        return scalar_ty if self.vl == 1 else vector_type(scalar_ty, self.vl)

    def const(self, scalar_ty, value):
        return self._const(scalar_ty, value, self.vl)

    def like(self, v, value):
        """A constant of ``v``'s type (scalar or vector of any width) holding ``value``."""
        if isinstance(v.type, ir.VectorType):
            return self._const(v.type.element, value, v.type.count)
        return self._const(v.type, value, 1)

    def _const(self, scalar_ty, value, lanes):
        if isinstance(scalar_ty, (ir.FloatType, ir.DoubleType)):
            value = float(value)
            vkey = struct.pack("<d", value)        # keeps -0.0 and NaN payloads apart
        else:
            value = vkey = int(value)
        key = (str(scalar_ty), vkey, lanes)
        c = self._consts.get(key)
        if c is None:
            c = ir.Constant(scalar_ty, value)
            if lanes > 1:
                c = Splat(vector_type(scalar_ty, lanes), c)
                if self.hoist:
                    c = self._in_entry(c)
            self._consts[key] = c
        return c

    def _in_entry(self, value):
        with self.b.goto_entry_block():
            return self.b.select(_TRUE, value, value)

    def math(self, name, *args):
        """``mathlib.call_math`` (see ``hoist`` for the indirect call)."""
        v = mathlib.call_math(self.b, name, *args, inline=is_hot(self.b.module))
        if self.hoist and isinstance(v, ir.CallInstr) and isinstance(v.callee, ir.Function) \
                and not v.callee.name.startswith("llvm."):
            key = ("fn", v.callee.name)
            fp = self._consts.get(key)
            if fp is None:
                fp = self._consts[key] = self._in_entry(v.callee)
            v.callee = fp
        return v

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
    return lambda cx, eqn, x: cx.math(name, x)


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
        return cx.math("fabs", x)
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
    fl = cx.math("floor", div)
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
    return cx.b.fcmp_ordered("==", cx.math("fabs", x), cx.like(x, float("inf")))


def _isfinite(cx, eqn, x):
    return cx.b.fcmp_ordered("<", cx.math("fabs", x), cx.like(x, float("inf")))


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


def _shift(left):
    """NumPy's shifts: an amount outside [0, width) (negative ones included: as unsigned they
    are huge) gives 0 (left) or the sign fill (right); LLVM's shl/ashr would give poison."""
    def rule(cx, eqn, x, n):
        b = cx.b
        el = x.type.element if isinstance(x.type, ir.VectorType) else x.type
        top = cx.like(n, el.width - 1)
        in_range = b.icmp_unsigned("<=", n, top)
        amount = b.select(in_range, n, top)
        if left:
            return b.select(in_range, b.shl(x, amount), cx.like(x, 0))
        return b.ashr(x, amount)
    return rule


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
    "pow": lambda cx, eqn, x, y: cx.math("power", x, y),
    "atan2": lambda cx, eqn, x, y: cx.math("arctan2", x, y),
    "hypot": lambda cx, eqn, x, y: cx.math("hypot", x, y),
    "max": _minmax(True), "min": _minmax(False),
    "eq": _cmp("eq"), "ne": _cmp("ne"), "lt": _cmp("lt"), "le": _cmp("le"), "gt": _cmp("gt"),
    "ge": _cmp("ge"),
    "and": lambda cx, eqn, x, y: cx.b.and_(x, y), "or": lambda cx, eqn, x, y: cx.b.or_(x, y),
    "xor": lambda cx, eqn, x, y: cx.b.xor(x, y),
    "shl": _shift(True), "shr": _shift(False),
    "integer_pow": _integer_pow, "select": _select, "convert": _convert,
    "stop_gradient": lambda cx, eqn, x: x,
}
MATH = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos", "tan",
        "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")
for _name in MATH:
    EMIT[_name] = _math(_name)

# Float primitives whose vector code FastISel selects once constants and callees are hoisted
# (``OpContext.hoist``): arithmetic and calls (LLVM intrinsics such as sqrt go to SelectionDAG one
# call at a time). Compares, selects, converts and fneg do not select, and a body holding one
# goes to SelectionDAG from there up, where constants are better left in place.
FAST_ISEL = frozenset(("add", "sub", "mul", "div", "integer_pow", "stop_gradient", "sqrt", "abs",
                       "floor", "ceil", "round", "pow", "atan2", "hypot", *MATH))

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
# (pow, abs, sign, prod...) run through the NumPy fallback.

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


# complex transcendentals from real mathlib functions (C99 Annex G values for the special
# inputs NumPy's tests and ours use: an infinite or NaN real part with a zero imaginary part keeps
# the zero; accuracy a few ulp, like NumPy's npy_c* which wrap the same formulas in libm).

def _m(cx, name, *v):
    return cx.math(name, *v)


def _zero_im(cx, y, im):
    """An exactly zero imaginary input gives a zero imaginary result (exp, sin, tanh...)."""
    return cx.b.select(cx.b.fcmp_ordered("==", y, cx.like(y, 0.0)), y, im)


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
    return re, _zero_im(cx, y, b.fmul(_m(cx, "cos", x), _m(cx, "sinh", y)))


def _ccos(cx, eqn, z):
    x, y = z
    b = cx.b
    im = _zero_im(cx, y, b.fneg(b.fmul(_m(cx, "sin", x), _m(cx, "sinh", y))))
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
    """z**w as NumPy's npy_cpow: w == 0 -> 1; z == 0 -> 0 when Re w > 0, else NaN; otherwise
    exp(w log z) (glibc's cpow formula; ~10 ulp for finite values). Known difference: with an
    infinite or NaN operand NumPy (C99 Annex G multiply inside glibc's cpow) sometimes returns
    a number where this gives NaN, e.g. 1j ** (inf + inf j) is 0 in NumPy."""
    (x, y), (u, v) = z, w
    b = cx.b
    zero, one = cx.like(x, 0.0), cx.like(x, 1.0)
    nan = cx.like(x, float("nan"))
    lz = _clog(cx, eqn, z)
    re, im = _cexp(cx, eqn, _cmul(cx, w, lz))
    z0 = b.and_(b.fcmp_ordered("==", x, zero), b.fcmp_ordered("==", y, zero))
    w_pos = b.fcmp_ordered(">", u, zero)
    re = b.select(z0, b.select(w_pos, zero, nan), re)
    im = b.select(z0, b.select(w_pos, zero, nan), im)
    w0 = b.and_(b.fcmp_ordered("==", u, zero), b.fcmp_ordered("==", v, zero))
    return b.select(w0, one, re), b.select(w0, zero, im)


def _csinh(cx, eqn, z):
    x, y = z
    b = cx.b
    re = b.fmul(_m(cx, "sinh", x), _m(cx, "cos", y))
    re = b.select(b.fcmp_ordered("==", y, cx.like(y, 0.0)), _m(cx, "sinh", x), re)
    return re, _zero_im(cx, y, b.fmul(_m(cx, "cosh", x), _m(cx, "sin", y)))


def _ccosh(cx, eqn, z):
    x, y = z
    b = cx.b
    return (b.fmul(_m(cx, "cosh", x), _m(cx, "cos", y)),
            _zero_im(cx, y, b.fmul(_m(cx, "sinh", x), _m(cx, "sin", y))))


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
}


def rule(eqn):
    """The emitter ``(cx, eqn, *args) -> value`` of ``eqn`` (complex operands are (re, im)
    pairs)."""
    if any(np.dtype(a.ty.dtype).kind == "c" for a in (*eqn.invars, *eqn.outvars)):
        return CEMIT[eqn.prim.name]
    return EMIT[eqn.prim.name]


def emit(cx, eqn, args):
    """Emit ``eqn`` on register values (complex operands are (re, im) pairs)."""
    return rule(eqn)(cx, eqn, *args)


_LOWERABLE: dict = {}     # (primitive name, dtypes) -> bool; asked once per equation per plan


def lowerable(eqn) -> bool:
    """Whether an elementwise equation has a native rule for its dtypes."""
    name = eqn.prim.name
    dts = tuple(a.ty.dtype for a in (*eqn.invars, *eqn.outvars))
    key = (name, dts)
    ok = _LOWERABLE.get(key)
    if ok is None:
        dts = [np.dtype(d) for d in dts]
        if any(d.kind == "c" for d in dts):
            ok = name in CEMIT and all(d in _REG or d.kind == "c" for d in dts)
        else:
            ok = name in EMIT and all(d in _REG for d in dts)
        ok = _LOWERABLE[key] = bool(ok)
    return ok
