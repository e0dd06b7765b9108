"""Matmul epilogues, emission: the loop group a ``plan.epilogue.Epilogue`` absorbed runs on the
kernel's accumulator vector.

:func:`emitter` makes the kernel's ``epilogue(builder, acc, row, col0, mask)`` hook: it loads
each leaf at ``(row, col0 + lane)`` through pointers passed as extra kernel arguments and emits
the group's equations on the accumulator vector.

Invariant: the epilogue's equations are emitted with the loop lowering rules, in plan order, so
its values are bit for bit those of the separate loop the planner removed.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir import Literal
from ..matmul.kernel import _vsuffix
from .ops import I32, I64, OpContext, reg_type
from .rules import emit


def emitter(epi, dtype, first_arg):
    """The kernel ``epilogue`` hook for ``epi``: leaf ``k``'s pointer (already offset to the
    view's start) is kernel argument ``first_arg + k``."""
    dt = np.dtype(dtype)
    et = reg_type(dt)

    def hook(b, acc, row, col0, mask):
        vl = acc.type.count
        cx = OpContext(b, vl)
        vty = ir.VectorType(et, vl)
        args = b.function.args
        env = {id(epi.acc_var): acc}
        for k, (a, v) in enumerate(epi.leaves):
            base = args[first_arg + k]
            sr, sc = v.strides
            idx = b.mul(row, ir.Constant(I64, sr)) if sr else ir.Constant(I64, 0)
            if sc == 1:
                ptr = b.gep(base, [b.add(idx, col0)], source_etype=et)
                if mask is None:
                    x = b.load(ptr, typ=vty, align=dt.itemsize)
                else:
                    fn = _masked_load(b.module, vty)
                    x = b.call(fn, [ptr, mask, ir.Constant(vty, None)])
            else:
                s = b.load(b.gep(base, [idx], source_etype=et), typ=et)
                x = b.insert_element(ir.Constant(vty, ir.Undefined), s, ir.Constant(I32, 0))
                x = b.shuffle_vector(x, ir.Constant(vty, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, vl), [0] * vl))
            env[id(a)] = x

        def val(a):
            if isinstance(a, Literal):
                return cx.const(et, a.value.item())
            if id(a) in epi.consts:
                return cx.const(et, epi.consts[id(a)].value.item())
            return env[id(a)]

        for e in epi.eqns:
            env[id(e.outvars[0])] = emit(cx, e, [val(a) for a in e.invars])
        return env[id(epi.result)]
    return hook


def _masked_load(module, vty):
    name = f"llvm.masked.load.{_vsuffix(vty)}.p0"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(vty, [ir.PointerType(),
                                                      ir.VectorType(ir.IntType(1), vty.count),
                                                      vty]), name)
    return fn
