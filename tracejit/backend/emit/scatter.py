"""Native ``scatter``: ``out = x; out[..., idx[j], ...] (mode)= upd[..., j, ...]``.

One internal function ``void @name(ptr slots)`` per scatter equation, called from its segment:

1. every index is checked first (negative indices wrap, as NumPy's ``x.at``); one out of range
   sets ``ERR_INDEX`` in the error cell and nothing else is done (the caller raises IndexError,
   as the interpreter does before touching anything);
2. ``x`` is copied into the output (``memcpy``; a broadcast literal, e.g. the zeros of a
   scatter-add transpose, is a fill), unless the output is written in place of ``x`` (the
   buffer plan gave both one slot, ``plan/inplace.py``: ``x`` is dead after this step);
3. updates are applied in index order, so repeated indices accumulate (add, mul, min, max) and
   the last one wins for ``set``, exactly like ``np.ufunc.at`` / fancy assignment.

Operands must be literals, broadcast literals or contiguous views (anything else stays a NumPy
fallback). Modes: set/add/mul/min/max for real and bool dtypes (NumPy's NaN-propagating
minimum/maximum), set/add/mul for complex.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir import Literal
from ..abi import ERR_INDEX
from .complex import CEMIT
from .loops import _for
from .memory import _real
from .ops import EMIT, I1, I8, I32, I64, OpContext, mem_type

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


class _Scatter:
    def __init__(self, module, name, eqn, plan, slot_of, err_slot):
        self.module, self.eqn, self.plan = module, eqn, plan
        self.slot_of, self.err_slot = slot_of, err_slot
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.cx = OpContext(self.b, 1)
        self.dt = np.dtype(eqn.outvars[0].ty.dtype)
        self.rt = mem_type(_real(self.dt))           # element (or component) memory type
        self.parts = 2 if self.dt.kind == "c" else 1

    # operands ------------------------------------------------------------------------------------
    def ptr(self, atom):
        """(pointer, None) for data in a slot, or (None, literal value) for a (broadcast)
        literal."""
        view = self.plan.view_of(atom) if not isinstance(atom, Literal) else None
        if view is None or isinstance(view.base, Literal):
            lit = atom if view is None else view.base
            return None, lit.value
        b = self.b
        p = b.load(b.gep(self.fn.args[0], [_i64(self.slot_of(view.base))], source_etype=PTR),
                   typ=PTR)
        if view.offset:
            p = b.gep(p, [_i64(view.offset * view.dtype.itemsize)], source_etype=I8)
        return p, None

    def const_parts(self, value):
        v = complex(value) if self.dt.kind == "c" else value
        vals = (v.real, v.imag) if self.dt.kind == "c" else (v,)
        rdt = _real(self.dt)
        if rdt.kind == "b":
            return [ir.Constant(I8, int(bool(x))) for x in vals]
        return [self.cx.const(self.rt, float(x) if rdt.kind == "f" else int(x)) for x in vals]

    def load(self, p, k):
        b = self.b
        return [b.load(b.gep(p, [b.add(b.mul(k, _i64(self.parts)), _i64(c))],
                             source_etype=self.rt), typ=self.rt) for c in range(self.parts)]

    def store(self, p, k, vals):
        b = self.b
        for c, v in enumerate(vals):
            b.store(v, b.gep(p, [b.add(b.mul(k, _i64(self.parts)), _i64(c))],
                             source_etype=self.rt))

    # combining -----------------------------------------------------------------------------------
    def combine(self, old, new):
        mode = self.eqn.params["mode"]
        if mode == "set":
            return new
        b, cx = self.b, self.cx
        if self.dt.kind == "c":
            if mode == "mul":       # np.multiply.at's scalar loop: plain products, no fma
                (ar, ai), (br, bi) = old, new
                return [b.fsub(b.fmul(ar, br), b.fmul(ai, bi)),
                        b.fadd(b.fmul(ar, bi), b.fmul(ai, br))]
            return list(CEMIT[mode](cx, self.eqn, tuple(old), tuple(new)))
        name = {"add": "add", "mul": "mul", "min": "min", "max": "max"}[mode]
        a, c = old[0], new[0]
        if self.dt.kind == "b":
            a = b.icmp_unsigned("!=", a, ir.Constant(I8, 0))
            c = b.icmp_unsigned("!=", c, ir.Constant(I8, 0))
            return [b.zext(EMIT[name](cx, self.eqn, a, c), I8)]
        return [EMIT[name](cx, self.eqn, a, c)]

    # the function --------------------------------------------------------------------------------
    def emit(self):
        b, eqn = self.b, self.eqn
        x, idx, upd = eqn.invars
        axis = eqn.params["axis"]
        shape = x.ty.shape
        n = shape[axis]
        pre = int(np.prod(shape[:axis], dtype=np.int64))
        post = int(np.prod(shape[axis + 1:], dtype=np.int64))
        m = int(idx.ty.size)
        out, _ = self.ptr(eqn.outvars[0])
        xp, xval = self.ptr(x)
        ip, ival = self.ptr(idx)
        up, uval = self.ptr(upd)
        ity = mem_type(idx.ty.dtype)

        def index(j):
            if ip is None:
                return _i64(int(ival))
            k = b.load(b.gep(ip, [j], source_etype=ity), typ=ity)
            return b.sext(k, I64) if ity != I64 else k

        # 1. bounds
        done = self.fn.append_basic_block("done")
        if m and pre and post:
            bad = b.alloca(I1, name="bad")
            b.store(ir.Constant(I1, 0), bad)

            def check(j):
                k = index(j)
                out_of_range = b.or_(b.icmp_signed(">=", k, _i64(n)),
                                     b.icmp_signed("<", k, _i64(-n)))
                b.store(b.or_(b.load(bad, typ=I1), out_of_range), bad)
            _for(b, _i64(0), _i64(m), _i64(1), check, "chk")
            ok = self.fn.append_basic_block("ok")
            fail = self.fn.append_basic_block("fail")
            b.cbranch(b.load(bad, typ=I1), fail, ok)
            b.position_at_end(fail)
            cell = b.load(b.gep(self.fn.args[0], [_i64(self.err_slot)], source_etype=PTR),
                          typ=PTR)
            b.atomic_rmw("or", cell, ir.Constant(I32, ERR_INDEX), "monotonic")
            b.branch(done)
            b.position_at_end(ok)
        # 2. out = x (nothing to do in place: one slot)
        total = int(x.ty.size)
        in_place = xp is not None and \
            self.slot_of(self.plan.view_of(x).base) == self.slot_of(self.eqn.outvars[0])
        if xp is not None and not in_place:
            nbytes = total * self.dt.itemsize
            if nbytes:
                memcpy = self.module.globals.get("llvm.memcpy.p0.p0.i64") or ir.Function(
                    self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I1]),
                    "llvm.memcpy.p0.p0.i64")
                b.call(memcpy, [out, xp, _i64(nbytes), ir.Constant(I1, 0)])
        elif xp is None and total:
            fill = self.const_parts(xval)
            _for(b, _i64(0), _i64(total), _i64(1), lambda k: self.store(out, k, fill), "fill")
        # 3. updates in order
        if m and pre and post:
            ucon = self.const_parts(uval) if up is None else None

            def over_p(p):
                def over_j(j):
                    k = index(j)
                    k = b.select(b.icmp_signed("<", k, _i64(0)), b.add(k, _i64(n)), k)
                    dst0 = b.mul(b.add(b.mul(p, _i64(n)), k), _i64(post))
                    src0 = b.mul(b.add(b.mul(p, _i64(m)), j), _i64(post))

                    def over_q(q):
                        d = b.add(dst0, q)
                        new = ucon if ucon is not None else self.load(up, b.add(src0, q))
                        self.store(out, d, self.combine(self.load(out, d), new))
                    _for(b, _i64(0), _i64(post), _i64(1), over_q, "q")
                _for(b, _i64(0), _i64(m), _i64(1), over_j, "j")
            _for(b, _i64(0), _i64(pre), _i64(1), over_p, "p")
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        return self.fn


def emit_scatter(module, name, eqn, plan, slot_of, err_slot) -> ir.Function:
    """``void @name(ptr slots)`` applying one scatter equation (see the module docstring)."""
    return _Scatter(module, name, eqn, plan, slot_of, err_slot).emit()
