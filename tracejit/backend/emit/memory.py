"""Memory access and gather/arg-reduction pieces of the loop emitter (a mixin of
``loops._Emitter``): scalar/vector/masked loads and stores, strided gather/scatter,
complex (re, im) de-interleaving, native ``take`` with bounds check, argmax/argmin accumulators.

Invariants: every vector access in a tail runs under the lane mask (masked load/store or
gather/scatter), so nothing outside the arrays is touched; a gather index is wrapped (negative
indices as NumPy), checked, and replaced by 0 when out of range (lane masked off), while the call's
error cell is set to ``ERR_INDEX`` so the caller raises IndexError after the kernel returns; a
run-time check (``check_p``) sets its error's bit the same way where a lane under the mask is bad.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir import Literal
from ..abi import CHECK_BITS, ERR_INDEX
from .ops import I1, I8, I32, I64, mem_type, reg_type

PTR = ir.PointerType()


def _real(dtype):
    dt = np.dtype(dtype)
    return np.dtype(dt.char.lower()) if dt.kind == "c" else dt


def _i64(v):
    return ir.Constant(I64, int(v))


def add_index(b, x, y):
    """``x + y`` on i64 indices, without an instruction when one is the constant 0 (most
    offsets and interleave steps of a fused body are)."""
    if isinstance(y, ir.Constant) and y.constant == 0:
        return x
    if isinstance(x, ir.Constant) and x.constant == 0:
        return y
    return b.add(x, y)


def _is_float_value(v):
    t = v.type.element if isinstance(v.type, ir.VectorType) else v.type
    return isinstance(t, (ir.FloatType, ir.DoubleType))


def identity(prim, dtype):
    """Identity of a reduction: +0.0 for float sums, as NumPy's (its sum of an empty array or
    of -0.0s is +0.0)."""
    dt = np.dtype(dtype)
    if prim == "reduce_sum":
        return 0.0 if dt.kind == "f" else 0
    if prim == "reduce_prod":
        return 1
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return int(info.min) if prim == "reduce_max" else int(info.max)
    if dt.kind == "b":
        return 0 if prim == "reduce_max" else 1
    return float("-inf") if prim == "reduce_max" else float("inf")


class MemoryOps:
    """Mixin: needs ``self.b``, ``self.cx``, ``self.vl``, ``self.fn``, ``self.err_slot``,
    ``self.gathers``, ``self.consts``, ``all_accesses()``, ``_const()``."""

    def _arg_setup(self, e):
        b, cx = self.b, self.cx
        dt = e.invars[0].ty.dtype
        worst = "reduce_max" if e.prim.name == "argmax" else "reduce_min"   # -inf for argmax
        init = (cx.const(reg_type(dt), identity(worst, dt)), cx.const(I64, 0))
        slots = []
        with b.goto_entry_block():
            for _ in range(self.unroll):
                slots.append(tuple(b.alloca(v.type) for v in init))
        for slot in slots:
            for v, p in zip(init, slot):
                b.store(v, p)
        return slots

    def _better(self, e, v, best):
        b = self.b
        is_max = e.prim.name == "argmax"
        if _is_float_value(v):
            nan_v, nan_b = b.fcmp_unordered("uno", v, v), b.fcmp_unordered("uno", best, best)
            strict = b.fcmp_ordered(">" if is_max else "<", v, best)
            return b.or_(strict, b.and_(nan_v, b.xor(nan_b, self.cx.like(nan_b, 1))))
        cmp = b.icmp_unsigned if e.invars[0].ty.dtype.kind in "bu" else b.icmp_signed
        return cmp(">" if is_max else "<", v, best)

    def _arg_step(self, e, slot, v, i, mask):
        b, vl = self.b, self.vl
        best, bidx = b.load(slot[0]), b.load(slot[1])
        take = self._better(e, v, best)
        if mask is not None:
            take = b.and_(take, mask)
        j = b.add(self._splat(i), ir.Constant(ir.VectorType(I64, vl), list(range(vl))))
        b.store(b.select(take, v, best), slot[0])
        b.store(b.select(take, j, bidx), slot[1])

    def _arg_combine(self, e, x, y):
        b = self.b
        (v1, i1), (v2, i2) = x, y
        same = b.fcmp_unordered("==", v1, v2) if _is_float_value(v1) else b.icmp_signed(
            "==", v1, v2)
        if _is_float_value(v1):         # ueq is also true for (NaN, x): require both NaN or equal
            same = b.and_(same, b.icmp_unsigned("==", b.fcmp_unordered("uno", v1, v1),
                                                 b.fcmp_unordered("uno", v2, v2)))
        take = b.or_(self._better(e, v2, v1), b.and_(same, b.icmp_signed("<", i2, i1)))
        return b.select(take, v2, v1), b.select(take, i2, i1)

    def _arg_finish(self, e, a, slots, off):
        b = self.b
        vals = [(b.load(p), b.load(q)) for p, q in slots]
        while len(vals) > 1:
            vals = [self._arg_combine(e, vals[k], vals[k + 1]) if k + 1 < len(vals) else vals[k]
                    for k in range(0, len(vals), 2)]
        v, idx = vals[0]
        width = self.vl
        while width > 1:
            half = width // 2
            parts = []
            for sel in (list(range(half)), list(range(half, width))):
                mask = ir.Constant(ir.VectorType(I32, half), sel)
                part = (b.shuffle_vector(v, v, mask), b.shuffle_vector(idx, idx, mask))
                if half == 1:
                    part = tuple(b.extract_element(x, _i64(0)) for x in part)
                parts.append(part)
            v, idx = self._arg_combine(e, parts[0], parts[1])
            width = half
        self._scalar_store(a, off, idx)

    def _ptr(self, a, off, part=0):
        if a.dtype.kind == "c":
            off = self.b.add(self.b.mul(off, _i64(2)), _i64(part))
        return self.b.gep(a.ptr, [off], source_etype=mem_type(_real(a.dtype)))

    def _scalar_load(self, a, off):
        if a.dtype.kind == "c":
            t = mem_type(_real(a.dtype))
            return tuple(self.b.load(self._ptr(a, off, k), typ=t) for k in (0, 1))
        v = self.b.load(self._ptr(a, off), typ=mem_type(a.dtype))
        return self.b.icmp_unsigned("!=", v, ir.Constant(I8, 0)) if a.dtype.kind == "b" else v

    def _scalar_store(self, a, off, v):
        if a.dtype.kind == "c":
            for k in (0, 1):
                self.b.store(v[k], self._ptr(a, off, k))
            return
        if a.dtype.kind == "b":
            v = self.b.zext(v, I8)
        self.b.store(v, self._ptr(a, off))

    def _splat(self, v):
        if isinstance(v, tuple):
            return tuple(self._splat(x) for x in v)
        if self.vl == 1:
            return v
        b = self.b
        vt = ir.VectorType(v.type, self.vl)
        one = b.insert_element(ir.Constant(vt, None), v, _i64(0))
        return b.shuffle_vector(one, ir.Constant(vt, None),
                                ir.Constant(ir.VectorType(I32, self.vl), [0] * self.vl))

    def _vec_load(self, a, off, i, mask):
        b, vl = self.b, self.vl
        s = a.strides[-1] if a.strides else 0
        if vl == 1:
            return self._scalar_load(a, b.add(off, b.mul(i, _i64(s))))
        if a.dtype.kind == "c":
            return self._complex_load(a, off, i, mask, s)
        mt = mem_type(a.dtype)
        vt = ir.VectorType(mt, vl)
        if s == 1:
            p = self._ptr(a, add_index(b, off, i))
            if mask is None:
                v = b.load(p, typ=vt)
                v.align = a.dtype.itemsize
            else:
                v = self.cx.intrinsic("masked.load", vt, [p, ir.Constant(I32, a.dtype.itemsize),
                                                          mask, ir.Constant(vt, None)],
                                      [vt, PTR])
        else:
            addrs = self._addresses(a, off, i)
            if mask is None:
                mask = ir.Constant(ir.VectorType(I1, vl), [1] * vl)
            v = self.cx.intrinsic("masked.gather", vt, [addrs, ir.Constant(I32, a.dtype.itemsize),
                                                        mask, ir.Constant(vt, None)],
                                  [vt, addrs.type])
        if a.dtype.kind == "b":
            v = b.icmp_unsigned("!=", v, ir.Constant(vt, [0] * vl))
        return v

    def _pairs_mask(self, mask):
        vl = self.vl
        return self.b.shuffle_vector(mask, mask, ir.Constant(
            ir.VectorType(I32, 2 * vl), [k // 2 for k in range(2 * vl)]))

    def _complex_load(self, a, off, i, mask, s):
        b, vl = self.b, self.vl
        rt = mem_type(_real(a.dtype))
        size = _real(a.dtype).itemsize
        if s == 1:
            wide = ir.VectorType(rt, 2 * vl)
            p = self._ptr(a, add_index(b, off, i))
            if mask is None:
                v = b.load(p, typ=wide)
                v.align = size
            else:
                v = self.cx.intrinsic("masked.load", wide, [p, ir.Constant(I32, size),
                                                            self._pairs_mask(mask),
                                                            ir.Constant(wide, None)], [wide, PTR])
            return tuple(b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, vl),
                                                            list(range(k, 2 * vl, 2))))
                         for k in (0, 1))
        addrs = self._addresses(a, off, i)
        if mask is None:
            mask = ir.Constant(ir.VectorType(I1, vl), [1] * vl)
        vt = ir.VectorType(rt, vl)
        parts = []
        for k in (0, 1):
            ak = addrs if k == 0 else b.inttoptr(
                b.add(b.ptrtoint(addrs, ir.VectorType(I64, vl)),
                      ir.Constant(ir.VectorType(I64, vl), [size] * vl)), addrs.type)
            parts.append(self.cx.intrinsic("masked.gather", vt, [ak, ir.Constant(I32, size), mask,
                                                                 ir.Constant(vt, None)],
                                           [vt, ak.type]))
        return tuple(parts)

    def _complex_store(self, a, off, i, v, mask, s):
        b, vl = self.b, self.vl
        size = _real(a.dtype).itemsize
        if s == 1:
            wide = b.shuffle_vector(v[0], v[1], ir.Constant(
                ir.VectorType(I32, 2 * vl), [k // 2 + (k % 2) * vl for k in range(2 * vl)]))
            p = self._ptr(a, add_index(b, off, i))
            if mask is None:
                st = b.store(wide, p)
                st.align = size
            else:
                self.cx.intrinsic("masked.store", ir.VoidType(),
                                  [wide, p, ir.Constant(I32, size), self._pairs_mask(mask)],
                                  [wide.type, PTR])
            return
        addrs = self._addresses(a, off, i)
        if mask is None:
            mask = ir.Constant(ir.VectorType(I1, vl), [1] * vl)
        for k in (0, 1):
            ak = addrs if k == 0 else b.inttoptr(
                b.add(b.ptrtoint(addrs, ir.VectorType(I64, vl)),
                      ir.Constant(ir.VectorType(I64, vl), [size] * vl)), addrs.type)
            self.cx.intrinsic("masked.scatter", ir.VoidType(),
                              [v[k], ak, ir.Constant(I32, size), mask], [v[k].type, ak.type])

    def _addresses(self, a, off, i):
        b, vl = self.b, self.vl
        s = a.strides[-1]
        vt = ir.VectorType(I64, vl)
        base = b.add(b.ptrtoint(a.ptr, I64), b.mul(b.add(off, b.mul(i, _i64(s))),
                                                   _i64(a.dtype.itemsize)))
        lanes = ir.Constant(vt, [l * s * a.dtype.itemsize for l in range(vl)])
        splat = b.shuffle_vector(b.insert_element(ir.Constant(vt, None), base, _i64(0)),
                                 ir.Constant(vt, None), ir.Constant(ir.VectorType(I32, vl),
                                                                    [0] * vl))
        return b.inttoptr(b.add(splat, lanes), ir.VectorType(PTR, vl))

    def _vec_store(self, a, off, i, v, mask):
        b, vl = self.b, self.vl
        s = a.strides[-1] if a.strides else 0
        if vl == 1:
            self._scalar_store(a, b.add(off, b.mul(i, _i64(s))), v)
            return
        if a.dtype.kind == "c":
            self._complex_store(a, off, i, v, mask, s)
            return
        if a.dtype.kind == "b":
            v = b.zext(v, ir.VectorType(I8, vl))
        if s == 1:
            p = self._ptr(a, add_index(b, off, i))
            if mask is None:
                st = b.store(v, p)
                st.align = a.dtype.itemsize
            else:
                self.cx.intrinsic("masked.store", ir.VoidType(),
                                  [v, p, ir.Constant(I32, a.dtype.itemsize), mask], [v.type, PTR])
            return
        addrs = self._addresses(a, off, i)
        if mask is None:
            mask = ir.Constant(ir.VectorType(I1, vl), [1] * vl)
        self.cx.intrinsic("masked.scatter", ir.VoidType(),
                          [v, addrs, ir.Constant(I32, a.dtype.itemsize), mask],
                          [v.type, addrs.type])

    def _gather(self, e, u, i, mask, offs, val, env):
        b, cx, vl = self.b, self.cx, self.vl
        acc, sa, n = self.gathers[id(e)]
        key = ("idx", id(e))
        idx = e.invars[1]
        if isinstance(idx, Literal):
            iv = self._const(idx)
        elif key in self.consts:
            iv = self._const(self.consts[key])
        else:
            iv = env[key][u] if key in env else env[id(idx)][u]
        ity = cx.ty(I64)
        if iv.type != ity:
            iv = b.sext(iv, ity)
        if vl > 1 and acc.dtype.kind != "c" and (
                isinstance(idx, Literal) or key in self.consts
                or key in getattr(self, "hoisted", ())):
            return self._uniform_gather(acc, sa, n, b.extract_element(iv, _i64(0)), u, i, mask,
                                        offs)
        w = b.select(b.icmp_signed("<", iv, cx.const(I64, 0)), b.add(iv, cx.const(I64, n)), iv)
        inb = b.and_(b.icmp_signed(">=", w, cx.const(I64, 0)),
                     b.icmp_signed("<", w, cx.const(I64, n)))
        active = inb if mask is None else b.and_(inb, mask)
        bad = b.xor(inb, cx.const(I1, 1))
        if mask is not None:
            bad = b.and_(bad, mask)
        w = b.select(inb, w, cx.const(I64, 0))
        off = offs[self.all_accesses().index(acc)]
        iu = add_index(b, i, _i64(u * vl))
        s_in = acc.strides[-1] if acc.strides else 0
        elem = b.add(off, b.mul(iu, _i64(s_in)))
        if acc.dtype.kind == "c":
            v, any_bad = self._complex_gather(acc, elem, w, sa, s_in, inb, active, bad)
        elif vl == 1:
            mt = mem_type(acc.dtype)
            any_bad = bad
            dummy = self._dummy(mt)
            p = b.gep(acc.ptr, [b.add(elem, b.mul(w, _i64(sa)))], source_etype=mt)
            v = b.load(b.select(inb, p, dummy), typ=mt)
        else:
            mt = mem_type(acc.dtype)
            vt = ir.VectorType(I64, vl)
            lanes = ir.Constant(vt, [l * s_in for l in range(vl)])
            eidx = b.add(b.add(self._splat(elem), lanes), b.mul(w, cx.const(I64, sa)))
            addr = b.add(self._splat(b.ptrtoint(acc.ptr, I64)),
                         b.mul(eidx, cx.const(I64, acc.dtype.itemsize)))
            addrs = b.inttoptr(addr, ir.VectorType(PTR, vl))
            rt = ir.VectorType(mt, vl)
            v = cx.intrinsic("masked.gather", rt, [addrs, ir.Constant(I32, acc.dtype.itemsize),
                                                   active, ir.Constant(rt, None)],
                             [rt, addrs.type])
            any_bad = b.icmp_unsigned("!=", b.bitcast(bad, ir.IntType(vl)),
                                      ir.Constant(ir.IntType(vl), 0))
        self._set_error_if(any_bad, ERR_INDEX)
        if acc.dtype.kind == "b":
            v = b.icmp_unsigned("!=", v, cx.like(v, 0))
        return v

    def _uniform_gather(self, acc, sa, n, iv, u, i, mask, offs):
        """A gather whose index is the same in every lane (a row ``x[k]`` picked by a scalar
        inside a loop body): one bounds check and the vector load of the row's elements
        (contiguous when the row is), instead of a lane-by-lane gather and check."""
        b = self.b
        w = b.select(b.icmp_signed("<", iv, _i64(0)), b.add(iv, _i64(n)), iv)
        inb = b.and_(b.icmp_signed(">=", w, _i64(0)), b.icmp_signed("<", w, _i64(n)))
        bad = b.xor(inb, ir.Constant(I1, 1))
        if mask is not None:          # a vector wholly past the end reads nothing
            lanes = ir.IntType(self.vl)
            bad = b.and_(bad, b.icmp_unsigned("!=", b.bitcast(mask, lanes), ir.Constant(lanes, 0)))
        self._set_error_if(bad, ERR_INDEX)
        row = b.add(offs[self.all_accesses().index(acc)],
                    b.mul(b.select(inb, w, _i64(0)), _i64(sa)))
        return self._vec_load(acc, row, add_index(b, i, _i64(u * self.vl)), mask)

    def _check(self, e, bad, x, mask):
        """``check_p``: ``x``, after setting the error's bit when a lane of ``bad`` under the
        lane mask is true (lanes past the end are masked off: their loads are zeros)."""
        b = self.b
        if mask is not None:
            bad = b.and_(bad, mask)
        if isinstance(bad.type, ir.VectorType):
            lanes = ir.IntType(bad.type.count)
            bad = b.icmp_unsigned("!=", b.bitcast(bad, lanes), ir.Constant(lanes, 0))
        self._set_error_if(bad, CHECK_BITS[e.params["error"]])
        return x

    def _set_error_if(self, cond, bit):
        """OR ``bit`` into the call's error cell where the i1 ``cond`` holds (rarely)."""
        b = self.b
        with b.if_then(cond, likely=False):
            cell = b.load(b.gep(self.fn.args[0], [_i64(self.err_slot)], source_etype=PTR),
                          typ=PTR)
            b.atomic_rmw("or", cell, ir.Constant(I32, bit), "monotonic")

    def _complex_gather(self, acc, elem, w, sa, s_in, inb, active, bad):
        """(re, im) gathered as two real loads per lane (masked off-range lanes read nothing)."""
        b, cx, vl = self.b, self.cx, self.vl
        rt = mem_type(_real(acc.dtype))
        size = _real(acc.dtype).itemsize
        if vl == 1:
            dummy = self._dummy(rt)
            k = b.mul(b.add(elem, b.mul(w, _i64(sa))), _i64(2))
            parts = []
            for part in (0, 1):
                p = b.gep(acc.ptr, [b.add(k, _i64(part))], source_etype=rt)
                parts.append(b.load(b.select(inb, p, dummy), typ=rt))
            return tuple(parts), bad
        vt = ir.VectorType(I64, vl)
        lanes = ir.Constant(vt, [l * s_in for l in range(vl)])
        eidx = b.add(b.add(self._splat(elem), lanes), b.mul(w, cx.const(I64, sa)))
        base = b.add(self._splat(b.ptrtoint(acc.ptr, I64)), b.mul(eidx, cx.const(I64, 2 * size)))
        rvt = ir.VectorType(rt, vl)
        parts = []
        for part in (0, 1):
            addrs = b.inttoptr(b.add(base, cx.const(I64, part * size)), ir.VectorType(PTR, vl))
            parts.append(cx.intrinsic("masked.gather", rvt, [addrs, ir.Constant(I32, size),
                                                             active, ir.Constant(rvt, None)],
                                      [rvt, addrs.type]))
        any_bad = b.icmp_unsigned("!=", b.bitcast(bad, ir.IntType(vl)),
                                  ir.Constant(ir.IntType(vl), 0))
        return tuple(parts), any_bad

    def _dummy(self, mt):
        if not hasattr(self, "_dummies"):
            self._dummies = {}
        if str(mt) not in self._dummies:
            with self.b.goto_entry_block():
                self._dummies[str(mt)] = self.b.alloca(mt)
        return self._dummies[str(mt)]

