"""Elementwise lowering table: primitive name -> emitter of its vector (or scalar) body.

Every emitter takes ``(cx, eqn, *args)`` where ``cx`` is an :class:`OpContext` (builder and lane
count) and the args are LLVM values of the operands' register types (``<VL x T>``, or scalars
when VL == 1; bool is ``i1``). Semantics follow NumPy bit for bit where NumPy is exact:
- no fast-math flags anywhere (+ - * / round like NumPy);
- LLVM integers carry no sign: a rule reads the signedness from its equation's first operand
  (``_unsigned``) and picks udiv/urem/lshr/``icmp u*``/zext/uitofp/fptoui for unsigned dtypes;
- integer ``floordiv``/``rem`` by zero give 0 (NumPy's values); INT_MIN // -1 wraps to INT_MIN;
- float floordiv/rem follow NumPy's ``npy_divmod`` (fmod, sign fix-up, floor with 0.5 check);
- max/min propagate NaN: ``(a >= b or isnan(a)) ? a : b`` as NumPy's maximum;
- float -> int ``convert``: NaN -> 0, out-of-range saturates (``llvm.fpto[su]i.sat``), as the
  interpreter's ``convert`` impl;
- transcendentals go through ``mathlib.call_math`` (vector functions, <= a few ulp).
Complex values are (re, im) pairs; their rules (``CEMIT``) are in complex.py.
"""
from __future__ import annotations

import struct

import numpy as np
from llvmlite import ir

from ..mathlib import library as mathlib
from ..plan import lowering

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
_REG = {np.dtype(np.bool_): I1, np.dtype(np.float16): F16, np.dtype(np.float32): F32,
        np.dtype(np.float64): F64}
for _dt in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
    _REG[np.dtype(_dt)] = ir.IntType(8 * np.dtype(_dt).itemsize)


def reg_type(dtype):
    return _REG[np.dtype(dtype)]


def mem_type(dtype):
    t = _REG[np.dtype(dtype)]
    return I8 if t is I1 else t


def suffix(ty) -> str:
    """LLVM intrinsic type suffix: v8f64, f32, v16i1 ..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{suffix(ty.element)}"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.HalfType):
        return "f16"
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


def slot_pointer(b: ir.IRBuilder, slots, index: int, view):
    """The address of ``view``'s first element: the pointer in slot ``index`` of the slot array
    ``slots`` (the plan's buffer of ``view.base``) plus its element offset."""
    ptr = ir.PointerType()
    p = b.load(b.gep(slots, [ir.Constant(I64, index)], source_etype=ptr), typ=ptr)
    if view.offset:
        p = b.gep(p, [ir.Constant(I64, view.offset * view.dtype.itemsize)], source_etype=I8)
    return p


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
        if isinstance(scalar_ty, (ir.HalfType, ir.FloatType, ir.DoubleType)):
            value = float(value)
            vkey = struct.pack("<d", value)        # keeps -0.0 and NaN payloads apart
        else:
            # two's complement in the signed range: uint64's 2**64 - 1 is i64 -1 (the bits)
            half = 1 << (scalar_ty.width - 1)
            value = vkey = (int(value) + half) % (2 * half) - half
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
        without the i32 alignment operand (as matmul/tiled.py declares them in a shared module)."""
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


def _unsigned(eqn) -> bool:
    """Whether the integer operands of ``eqn`` (an elementwise equation, or the reduction or
    scatter whose combining step is emitted) are unsigned: its first operand's dtype."""
    return eqn.invars[0].ty.dtype.kind == "u"


def _icmp(cx, eqn, op, x, y):
    """``icmp`` of two integer (or bool) values, unsigned for unsigned dtypes and bools."""
    if _is_bool(x) or _unsigned(eqn):
        return cx.b.icmp_unsigned(op, x, y)
    return cx.b.icmp_signed(op, x, y)


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
    if _unsigned(eqn):
        return x
    return cx.b.select(cx.b.icmp_signed("<", x, cx.like(x, 0)), cx.b.sub(cx.like(x, 0), x), x)


def _sign(cx, eqn, x):
    b = cx.b
    one, mone, zero = cx.like(x, 1), cx.like(x, -1), cx.like(x, 0)
    if _is_float(x):
        pos, negv = b.fcmp_ordered(">", x, zero), b.fcmp_ordered("<", x, zero)
        iszero = b.fcmp_ordered("==", x, zero)
        return b.select(pos, one, b.select(negv, mone, b.select(iszero, zero, x)))
    if _unsigned(eqn):
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    pos, negv = b.icmp_signed(">", x, zero), b.icmp_signed("<", x, zero)
    return b.select(pos, one, b.select(negv, mone, zero))


def _safe_divisor(cx, x, y, unsigned=False):
    """(divisor with 0 and the INT_MIN/-1 pair replaced by 1, mask of y == 0)."""
    b = cx.b
    bits = (y.type.element if isinstance(y.type, ir.VectorType) else y.type).width
    zero = b.icmp_signed("==", y, cx.like(y, 0))
    if unsigned:
        return b.select(zero, cx.like(y, 1), y), zero
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
    if _unsigned(eqn):                   # truncation is the floor; x // 0 is 0
        d, zero = _safe_divisor(cx, x, y, unsigned=True)
        return b.select(zero, cx.like(x, 0), b.udiv(x, d))
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
    if _unsigned(eqn):
        d, zero = _safe_divisor(cx, x, y, unsigned=True)
        return b.select(zero, cx.like(x, 0), b.urem(x, d))
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
        return b.select(_icmp(cx, eqn, ">=" if is_max else "<=", x, y), x, y)
    return emit


def _cmp(op):
    fop = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]

    def emit(cx, eqn, x, y):
        b = cx.b
        if _is_float(x):
            if op == "ne":
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(fop, x, y)
        return _icmp(cx, eqn, fop, x, y)
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
    """Convert a register value between dtypes (NumPy astype; float->int saturating, NaN->0;
    an integer widens by its source's signedness and narrows by truncation, i.e. wraps).
    float16 goes through float32 (exact one way; the other rounds once, see ``_to_half``)."""
    src, dst = np.dtype(src), np.dtype(dst)
    b = cx.b
    if src == dst:
        return x
    if src == _HALF:
        x, src = b.fpext(x, cx.ty(F32)), np.dtype(np.float32)
    if dst == _HALF:
        return _to_half(cx, x, src)
    tt = cx.ty(reg_type(dst))
    if dst.kind == "b":
        if src.kind == "f":
            return b.fcmp_unordered("!=", x, cx.like(x, 0.0))
        return b.icmp_signed("!=", x, cx.like(x, 0))
    if src.kind == "b":
        return b.uitofp(x, tt) if dst.kind == "f" else b.zext(x, tt)
    if src.kind == "f" and dst.kind == "f":
        return b.fpext(x, tt) if dst.itemsize > src.itemsize else b.fptrunc(x, tt)
    if src.kind == "f":
        name = "fptoui.sat" if dst.kind == "u" else "fptosi.sat"
        return cx.intrinsic(name, tt, [x], [tt, x.type])
    if dst.kind == "f":
        return b.uitofp(x, tt) if src.kind == "u" else b.sitofp(x, tt)
    if dst.itemsize > src.itemsize:
        return b.zext(x, tt) if src.kind == "u" else b.sext(x, tt)
    if dst.itemsize == src.itemsize:
        return x                         # int32 <-> uint32: the same bits
    return b.trunc(x, tt)


_HALF = np.dtype(np.float16)


def _to_half(cx, x, src):
    """float16 of ``x``, rounded once to nearest even as NumPy's casts: float32 and narrower
    values by ``fptrunc`` (integers reach float32 exactly up to 2**24, and anything beyond
    overflows float16 either way); float64 first to float32 *rounded to odd* (truncate, set
    the lowest bit if inexact), which keeps the sticky information so that the second rounding
    to float16 (11 <= 24 - 2 bits) is the correctly rounded float64 -> float16."""
    b = cx.b
    if src == np.dtype(np.float64):
        t = b.fptrunc(x, cx.ty(F32))
        back = b.fpext(t, x.type)
        inexact = b.fcmp_ordered("one", back, x)
        away = b.fcmp_ordered(">", cx.intrinsic("fabs", x.type, [back]),
                              cx.intrinsic("fabs", x.type, [x]))
        bits = b.bitcast(t, cx.ty(I32))
        toward_zero = b.select(away, b.sub(bits, cx.like(bits, 1)), bits)
        odd = b.bitcast(b.or_(toward_zero, cx.like(bits, 1)), t.type)
        x = b.select(inexact, odd, t)
    elif src != np.dtype(np.float32):
        x = convert_value(cx, x, src, np.dtype(np.float32))
    return b.fptrunc(x, cx.ty(F16))


def _convert(cx, eqn, x):
    return convert_value(cx, x, eqn.invars[0].ty.dtype, eqn.params["dtype"])


def _bitcast(cx, eqn, x):
    """The same bits as another dtype of one width (int32 <-> uint32: one LLVM type)."""
    tt = cx.ty(reg_type(eqn.params["dtype"]))
    return x if x.type == tt else cx.b.bitcast(x, tt)


def _shift(left):
    """NumPy's shifts: an amount outside [0, width) (negative ones included: as unsigned they
    are huge) gives 0 (left) or the sign fill (right: 0 for unsigned dtypes, whose right shift
    is logical); LLVM's shl/ashr/lshr would give poison."""
    def rule(cx, eqn, x, n):
        b = cx.b
        el = x.type.element if isinstance(x.type, ir.VectorType) else x.type
        top = cx.like(n, el.width - 1)
        in_range = b.icmp_unsigned("<=", n, top)
        amount = b.select(in_range, n, top)
        if left:
            return b.select(in_range, b.shl(x, amount), cx.like(x, 0))
        if _unsigned(eqn):
            return b.select(in_range, b.lshr(x, amount), cx.like(x, 0))
        return b.ashr(x, amount)
    return rule


def _not(cx, eqn, x):
    return cx.b.xor(x, cx.like(x, 1))


def _check(cx, eqn, bad, x):
    """``check`` needs the call's error cell and the lane mask, which only a loop group has: it
    emits the check itself (``memory.py``, ``_check``); no other emitter takes one."""
    raise NotImplementedError("tracejit: a run-time check (check_p) outside a fused loop group")


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
    "bitcast_convert": _bitcast,
    "stop_gradient": lambda cx, eqn, x: x, "check": _check,
}
for _name in lowering.MATH:
    EMIT[_name] = _math(_name)
assert EMIT.keys() == lowering.ELEMENTWISE, "the planner's names are this table's keys"
assert _REG.keys() == lowering.NATIVE_DTYPES | lowering.STORAGE_DTYPES, \
    "the planner's dtypes are this table's keys"

# Float primitives whose vector code FastISel selects once constants and callees are hoisted
# (``OpContext.hoist``): arithmetic and calls (LLVM intrinsics such as sqrt go to SelectionDAG one
# call at a time). Compares, selects, converts and fneg do not select, and a body holding one
# goes to SelectionDAG from there up, where constants are better left in place.
FAST_ISEL = frozenset(("add", "sub", "mul", "div", "integer_pow", "stop_gradient", "sqrt", "abs",
                       "floor", "ceil", "round", "pow", "atan2", "hypot", *lowering.MATH))
