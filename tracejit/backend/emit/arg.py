"""Native argmax / argmin over any axis (the fused loop groups handle only an innermost axis).

``void @name(ptr slots)``: with the operand read as ``[pre, n, post]`` (C order, the reduced
axis in the middle), for each ``p`` the row ``x[p, 0, :]`` seeds ``best`` (a malloc'd row) and
index 0, then rows ``k = 1..n-1`` update the lanes where the value is better (explicit 512-bit
vectors of lanes, selects instead of branches, a scalar remainder). The walk is row by row, so
memory is read in order whatever the axis. NumPy's rules: the first occurrence wins a
tie, and the first NaN wins over everything (a NaN is "better" than any non-NaN, and nothing is
better than a NaN). The operand must be a contiguous view (else the NumPy fallback stays).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..abi import ERR_NOMEM
from . import stacks
from .loops import _for
from .ops import I1, I64, mem_type, slot_pointer

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def emit_arg(module, name, eqn, plan, slot_of, err_slot) -> ir.Function:
    """``void @name(ptr slots)`` computing one argmax/argmin equation (module docstring); when
    the row buffer cannot be allocated it sets ``ERR_NOMEM`` in the call's error cell (slot
    ``err_slot``) and writes nothing."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x = eqn.invars[0]
    axis, is_max = eqn.params["axis"], eqn.prim.name == "argmax"
    shape, dt = x.ty.shape, np.dtype(x.ty.dtype)
    pre = int(np.prod(shape[:axis], dtype=np.int64))
    n = shape[axis]
    post = int(np.prod(shape[axis + 1:], dtype=np.int64))
    mt = mem_type(dt)
    vl = max(1, min(16, 64 // dt.itemsize))    # one 512-bit vector of values per step

    def slot_ptr(view):
        return slot_pointer(b, fn.args[0], slot_of(view.base), view)

    src = slot_ptr(plan.view_of(x))
    out = slot_ptr(plan.view_of(eqn.outvars[0]))
    if pre == 0 or post == 0:
        b.ret_void()
        return fn
    malloc, free = stacks.libc(module, "malloc"), stacks.libc(module, "free")
    best = b.call(malloc, [_i64(post * dt.itemsize)], name="best")
    with b.if_then(b.icmp_unsigned("==", best, ir.Constant(PTR, None)), likely=False):
        cell = b.load(b.gep(fn.args[0], [_i64(err_slot)], source_etype=PTR), typ=PTR)
        stacks.set_error(b, cell, ERR_NOMEM)         # the caller raises MemoryError
        b.ret_void()

    def better(v, cur):
        if dt.kind == "f":
            nan_v, nan_c = b.fcmp_unordered("uno", v, v), b.fcmp_unordered("uno", cur, cur)
            strict = b.fcmp_ordered(">" if is_max else "<", v, cur)
            ones = ir.Constant(I1, 1) if nan_c.type == I1 else \
                ir.Constant(nan_c.type, [ir.Constant(I1, 1)] * nan_c.type.count)
            return b.or_(strict, b.and_(nan_v, b.xor(nan_c, ones)))
        cmp = b.icmp_unsigned if dt.kind in "bu" else b.icmp_signed
        return cmp(">" if is_max else "<", v, cur)

    def row(p):
        base = b.mul(p, _i64(n * post))
        orow = b.mul(p, _i64(post))

        def seed(q):
            v = b.load(b.gep(src, [b.add(base, q)], source_etype=mt), typ=mt)
            b.store(v, b.gep(best, [q], source_etype=mt))
            b.store(_i64(0), b.gep(out, [b.add(orow, q)], source_etype=I64))
        _for(b, _i64(0), _i64(post), _i64(1), seed, "seed")

        def step(k):
            rbase = b.add(base, b.mul(k, _i64(post)))

            def lanes(q, width):
                vt = mt if width == 1 else ir.VectorType(mt, width)
                it = I64 if width == 1 else ir.VectorType(I64, width)
                vp = b.gep(src, [b.add(rbase, q)], source_etype=mt)
                bp = b.gep(best, [q], source_etype=mt)
                op = b.gep(out, [b.add(orow, q)], source_etype=I64)
                v, cur = b.load(vp, typ=vt, align=1), b.load(bp, typ=vt, align=1)
                take = better(v, cur)
                kk = k if width == 1 else ir.Constant(it, None)
                if width > 1:
                    for j in range(width):
                        kk = b.insert_element(kk, k, ir.Constant(ir.IntType(32), j))
                b.store(b.select(take, v, cur), bp, align=1)
                b.store(b.select(take, kk, b.load(op, typ=it, align=1)), op, align=1)
            main = post - post % vl
            if main:
                _for(b, _i64(0), _i64(main), _i64(vl), lambda q: lanes(q, vl), "qv")
            if main < post:
                _for(b, _i64(main), _i64(post), _i64(1), lambda q: lanes(q, 1), "q")
        _for(b, _i64(1), _i64(n), _i64(1), step, "k")
    _for(b, _i64(0), _i64(pre), _i64(1), row, "p")
    b.call(free, [best])
    b.ret_void()
    return fn
