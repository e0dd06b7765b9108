"""Emission of a ``plan.rowfuse.RowMatvecGroup``: ``p = Xᵀ·r(X·a)`` in one pass over ``X``.

The group, its legality and its summation order are described in ``plan/rowfuse.py``. Emitted
as ``void @name(ptr slots, i64 start, i64 end)``, one loop over blocks of ``VL`` rows (``VL``
from ``Plan.vector_bytes`` and the dtype, as the planner computed it when it bounded the
straight-line FMAs per tile); rows left over run the same code one row at a time.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir import Literal
from ..plan.rowfuse import MAX_UNROLLED_FMAS, TILE_BYTES, RowMatvecGroup
from .loops import GroupCode, _for
from .ops import I32, I64, OpContext, mem_type, reg_type
from .rules import emit

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


# emission ------------------------------------------------------------------------------------

def emit_rowmv(module, name, group: RowMatvecGroup, plan, slot_of, namer=None):
    """``void @name(ptr slots, i64 start, i64 end)`` over rows [start, end) (called once with
    the whole range). Returns the segment's ``GroupCode``."""
    M, K = group.x_view.shape
    dt = np.dtype(group.mv1.outvars[0].ty.dtype)
    et = reg_type(dt)
    vl = max(2, min(16, plan.vector_bytes // dt.itemsize))
    nk = -(-K // vl)
    ktail = K - (nk - 1) * vl                     # lanes of the last K chunk
    vt = ir.VectorType(et, vl)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    fn.args[0].name, fn.args[1].name, fn.args[2].name = "slots", "start", "end"
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots = fn.args[0]

    def base_ptr(view):
        p = b.load(b.gep(slots, [_i64(slot_of(view.base))], source_etype=PTR), typ=PTR)
        if view.offset:
            p = b.gep(p, [_i64(view.offset)], source_etype=mem_type(view.dtype))
        return p

    xv = group.x_view
    xp, row_stride = base_ptr(xv), xv.strides[0]
    av = plan.view_of(group.a_atom)
    ap, a_stride = base_ptr(av), av.strides[0]
    p_var = group.mv2.outvars[0]
    pv = plan.view_of(p_var)
    pp = base_ptr(pv)
    kmask = ir.Constant(ir.VectorType(ir.IntType(1), vl), [1] * ktail + [0] * (vl - ktail))
    cx_v = OpContext(b, vl)

    def load_k(ptr, c, stride=1):
        """Chunk c of a K-vector (masked on the last chunk)."""
        if stride != 1:
            lanes = [b.load(b.gep(ptr, [_i64((c * vl + l) * stride)], source_etype=et), typ=et)
                     if c * vl + l < K else ir.Constant(et, 0.0) for l in range(vl)]
            v = ir.Constant(vt, None)
            for l, x in enumerate(lanes):
                v = b.insert_element(v, x, _i64(l))
            return v
        q = b.gep(ptr, [_i64(c * vl)], source_etype=et)
        if c < nk - 1 or ktail == vl:
            v = b.load(q, typ=vt)
            v.align = dt.itemsize
            return v
        return cx_v.intrinsic("masked.load", vt, [q, ir.Constant(I32, dt.itemsize), kmask,
                                                  ir.Constant(vt, [0.0] * vl)], [vt, PTR])

    avec = [load_k(ap, c, a_stride) for c in range(nk)]
    zero = ir.Constant(vt, [0.0] * vl)
    with b.goto_entry_block():
        pacc = [b.alloca(vt, name=f"pacc{c}") for c in range(nk)]
    for s in pacc:
        b.store(zero, s)

    leaves, consts = {}, {}
    chain_members = {id(e.outvars[0]) for e in group.chain}
    g = group.mv1.outvars[0]
    for e in group.chain:
        for a in e.invars:
            if isinstance(a, Literal) or id(a) in chain_members or a is g or id(a) in leaves:
                continue
            v = plan.view_of(a)
            if isinstance(v.base, Literal):
                consts[id(a)] = v.base
            else:
                leaves[id(a)] = (base_ptr(v), v.strides[0] if v.shape else 0, v.dtype)
    stores = [(a, base_ptr(d), d.dtype) for a, d in group.stores]

    def hsum(cx, v):
        width = vl
        while width > 1:
            half = width // 2
            lo = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half), list(range(half))))
            hi = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, half),
                                                    list(range(half, width))))
            v = b.fadd(lo, hi)
            width = half
        return b.extract_element(v, _i64(0))

    def row_sums(vs):
        """vl row vectors -> one vector of their lane sums. Each level pairs vectors x, y
        holding rows in segments of ``width`` lanes and folds every segment in half:
        [x's segments' low halves, y's low halves] + [the high halves], so rows stay in order."""
        width = vl
        while len(vs) > 1:
            half = width // 2
            segs = range(vl // width)
            idx_a = [k * width + j for k in segs for j in range(half)]
            idx_a += [vl + a for a in idx_a]
            idx_b = [a + half for a in idx_a]
            mk = lambda idx: ir.Constant(ir.VectorType(I32, vl), idx)  # noqa: E731
            vs = [b.fadd(b.shuffle_vector(x, y, mk(idx_a)), b.shuffle_vector(x, y, mk(idx_b)))
                  for x, y in zip(vs[0::2], vs[1::2])]
            width = half
        return vs[0]

    def dots(i, rows):
        """g for rows [i, i + rows): a ``rows``-lane vector (a scalar when rows == 1)."""
        cx = OpContext(b, rows)
        zs = []
        for r in range(rows):
            rp = b.gep(xp, [b.mul(b.add(i, _i64(r)), _i64(row_stride))], source_etype=et)
            acc = [None, None]
            for c in range(nk):
                x = load_k(rp, c)
                k = c % 2
                acc[k] = b.fmul(x, avec[c]) if acc[k] is None else \
                    cx_v.intrinsic("fma", vt, [x, avec[c], acc[k]])
            zs.append(acc[0] if acc[1] is None else b.fadd(acc[0], acc[1]))
        return hsum(cx, zs[0]) if rows == 1 else row_sums(zs)

    def chain(i, rows, z):
        """The elementwise chain on rows [i, i + rows) (stores included); returns o."""
        cx = OpContext(b, rows)
        env = {id(g): z}

        def val(atom):
            if isinstance(atom, Literal):
                return cx.const(reg_type(atom.ty.dtype), atom.value.item())
            if id(atom) in consts:
                lit = consts[id(atom)]
                return cx.const(reg_type(lit.ty.dtype), lit.value.item())
            if id(atom) in env:
                return env[id(atom)]
            ptr, stride, ldt = leaves[id(atom)]
            mt = mem_type(ldt)
            if stride == 0:
                s = b.load(ptr, typ=mt)
                if rows == 1:
                    return s
                one = b.insert_element(ir.Constant(cx.ty(mt), None), s, _i64(0))
                return b.shuffle_vector(one, ir.Constant(cx.ty(mt), None),
                                        ir.Constant(ir.VectorType(I32, rows), [0] * rows))
            v = b.load(b.gep(ptr, [i], source_etype=mt), typ=cx.ty(mt))
            v.align = ldt.itemsize
            return v

        for e in group.chain:
            out = emit(cx, e, [val(a) for a in e.invars])
            if namer is not None and isinstance(out, ir.Instruction):
                out.name = namer(e.outvars[0])
            env[id(e.outvars[0])] = out
        for a, ptr, sdt in stores:
            st = b.store(val(a), b.gep(ptr, [i], source_etype=mem_type(sdt)))
            st.align = sdt.itemsize
        return val(o_atom)

    def row_terms(i, rows, o):
        """(row pointers, splats of o) for p += sum over rows of o[r] * X[r, :]."""
        if rows == 1:
            one = b.insert_element(ir.Constant(vt, None), o, _i64(0))
            splats = [b.shuffle_vector(one, ir.Constant(vt, None),
                                       ir.Constant(ir.VectorType(I32, vl), [0] * vl))]
        else:
            splats = [b.shuffle_vector(o, o, ir.Constant(ir.VectorType(I32, vl), [r] * vl))
                      for r in range(rows)]
        rps = [b.gep(xp, [b.mul(b.add(i, _i64(r)), _i64(row_stride))], source_etype=et)
               for r in range(rows)]
        return rps, splats

    def tile(i, nblk, rows):
        """``nblk`` blocks of ``rows`` rows from i: all dot products, then the chains (which
        may call math functions: no accumulator is live across those calls), then the
        accumulation into p, whose accumulators are loaded and stored once per tile."""
        starts = [b.add(i, _i64(k * rows)) for k in range(nblk)]
        zs = [dots(s, rows) for s in starts]
        os_ = [chain(s, rows, z) for s, z in zip(starts, zs)]
        work = [row_terms(s, rows, o) for s, o in zip(starts, os_)]
        accs = [b.load(pacc[c]) for c in range(nk)]
        for rps, splats in work:                 # row-major: nk independent FMA chains
            for rp, sp in zip(rps, splats):
                for c in range(nk):
                    accs[c] = cx_v.intrinsic("fma", vt, [load_k(rp, c), sp, accs[c]])
        for c in range(nk):
            b.store(accs[c], pacc[c])

    o_atom = group.mv2.invars[0] if group.mv2.invars[0].ty.ndim == 1 else group.mv2.invars[1]
    nblk = max(1, min(4, TILE_BYTES // (vl * K * dt.itemsize),
                      MAX_UNROLLED_FMAS // (2 * nk * vl)))
    step = nblk * vl
    start, end = fn.args[1], fn.args[2]
    span = b.sub(end, start)
    main_end = b.add(start, b.mul(b.sdiv(span, _i64(step)), _i64(step)))
    _for(b, start, main_end, _i64(step), lambda i: tile(i, nblk, vl), "rows")
    _for(b, main_end, end, _i64(1), lambda i: tile(i, 1, 1), "rtail")
    for c in range(nk):                          # p = the accumulators (p is written whole)
        q = b.gep(pp, [_i64(c * vl * pv.strides[0])], source_etype=et)
        v = b.load(pacc[c])
        if pv.strides[0] != 1:
            for l in range(min(vl, K - c * vl)):
                b.store(b.extract_element(v, _i64(l)),
                        b.gep(pp, [_i64((c * vl + l) * pv.strides[0])], source_etype=et))
        elif c < nk - 1 or ktail == vl:
            b.store(v, q).align = dt.itemsize
        else:
            cx_v.intrinsic("masked.store", ir.VoidType(), [v, q, ir.Constant(I32, dt.itemsize),
                                                           kmask], [vt, PTR])
    b.ret_void()
    return GroupCode(fn, M, 1, False, [], vl, 1, [M])
