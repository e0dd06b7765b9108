"""cumsum / cumprod as a native loop nest: ``void @scan(ptr slots, i64 start, i64 end)``.

Loops run over every dim except the scanned axis (outer, row-major), then along the axis with
a scalar carry: ``out[k] = carry = carry op x[k]`` (from the end when ``reverse``). The order is
NumPy's (``add.accumulate`` is sequential), so float results match bit for bit; complex values
are (re, im) pairs with the same rules as elementwise complex ops. The operand is read through
its view (any strides); the output is contiguous. Scalar code: a scan is memory-bound and its
dependency chain runs along the axis. Split across threads: not done (documented).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..plan.views import View
from .complex import CEMIT
from .loops import _for
from .memory import _real
from .ops import EMIT, I64, OpContext, mem_type, reg_type

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def emit_scan(module, name, eqn, plan, slot_of) -> ir.Function:
    x, out = eqn.invars[0], eqn.outvars[0]
    axis, reverse = eqn.params["axis"], eqn.params["reverse"]
    dt = np.dtype(x.ty.dtype)
    shape = x.ty.shape
    xv, ov = plan.view_of(x), View.whole(out)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    cx = OpContext(b, 1)
    rdt = _real(dt)
    mt = mem_type(rdt)
    parts = 2 if dt.kind == "c" else 1

    def base(view):
        p = b.load(b.gep(fn.args[0], [_i64(slot_of(view.base))], source_etype=PTR), typ=PTR)
        return b.gep(p, [_i64(view.offset * parts)], source_etype=mt) if view.offset else p

    xp, op_ = base(xv), base(ov)
    combine = {"cumsum": "add", "cumprod": "mul"}[eqn.prim.name]

    def load(p, off):
        vals = [b.load(b.gep(p, [b.add(b.mul(off, _i64(parts)), _i64(k))], source_etype=mt),
                       typ=mt) for k in range(parts)]
        if dt.kind == "b":
            vals = [b.icmp_unsigned("!=", vals[0], ir.Constant(mt, 0))]
        return tuple(vals) if parts == 2 else vals[0]

    def store(p, off, v):
        for k, part in enumerate(v if parts == 2 else (v,)):
            b.store(part, b.gep(p, [b.add(b.mul(off, _i64(parts)), _i64(k))], source_etype=mt))

    def op(a, c):
        if parts == 2 and combine == "mul":      # NumPy's scalar accumulate: no fma
            (ar, ai), (br, bi) = a, c
            return (b.fsub(b.fmul(ar, br), b.fmul(ai, bi)), b.fadd(b.fmul(ar, bi), b.fmul(ai, br)))
        table = CEMIT if parts == 2 else EMIT
        return table[combine](cx, eqn, a, c)

    others = [d for d in range(len(shape)) if d != axis]

    def nest(level, xoff, ooff):
        if level < len(others):
            d = others[level]
            _for(b, _i64(0), _i64(shape[d]), _i64(1),
                 lambda i: nest(level + 1, b.add(xoff, b.mul(i, _i64(xv.strides[d]))),
                                b.add(ooff, b.mul(i, _i64(ov.strides[d])))), f"s{level}")
            return
        n = shape[axis]
        if n == 0:
            return
        first = n - 1 if reverse else 0
        carry_ty = ir.LiteralStructType([reg_type(rdt)] * parts) if parts == 2 else None
        slot = b.alloca(carry_ty or reg_type(dt))

        def at(k):
            return b.add(xoff, b.mul(k, _i64(xv.strides[axis]))), \
                b.add(ooff, b.mul(k, _i64(ov.strides[axis])))

        def put(v):
            if parts == 2:
                agg = ir.Constant(carry_ty, None)
                for k, part in enumerate(v):
                    agg = b.insert_value(agg, part, k)
                b.store(agg, slot)
            else:
                b.store(v, slot)

        def get():
            v = b.load(slot)
            return tuple(b.extract_value(v, k) for k in range(parts)) if parts == 2 else v

        xo, oo = at(_i64(first))
        v0 = load(xp, xo)
        store(op_, oo, v0)
        put(v0)

        def body(j):
            k = b.sub(_i64(n - 1), j) if reverse else j
            xo, oo = at(k)
            v = op(get(), load(xp, xo))
            store(op_, oo, v)
            put(v)
        _for(b, _i64(1), _i64(n), _i64(1), body, "k")

    nest(0, _i64(0), _i64(0))
    b.ret_void()
    return fn
