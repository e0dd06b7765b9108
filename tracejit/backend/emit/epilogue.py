"""Matmul epilogues, emission: the loop group a ``plan.epilogue.Epilogue`` absorbed runs on the
kernel's accumulator vector.

:func:`emitter` makes the kernel's ``epilogue(builder, acc, row, col0, mask)`` hook: it loads
each leaf at ``(row, col0 + lane)`` (or ``(row + lane, col0)`` when called with
``lanes="rows"``, the transposed matrix-vector path) through pointers passed as extra kernel
arguments and emits the group's equations on the accumulator vector.

Invariant: the epilogue's equations are emitted with the loop lowering rules, in plan order, so
its values are bit for bit those of the separate loop the planner removed.

:func:`structure_key` is everything the hook reads, with vars replaced by their positions, so two
epilogues with one key emit the same code (a module keeps one kernel per key; under
``config.check_ir`` every reuse is emitted again and compared).
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

    def hook(b, acc, row, col0, mask, lanes="cols"):
        vl = acc.type.count
        cx = OpContext(b, vl)
        vty = ir.VectorType(et, vl)
        args = b.function.args
        env = {id(epi.acc_var): acc}
        for k, (a, v) in enumerate(epi.leaves):
            sr, sc = v.strides
            # lane l reads (row, col0 + l), or (row + l, col0) when lanes run along rows
            (fixed, fs), (first, step) = ((col0, sc), (row, sr)) if lanes == "rows" else \
                ((row, sr), (col0, sc))
            base = args[first_arg + k]
            idx = b.mul(fixed, ir.Constant(I64, fs)) if fs else ir.Constant(I64, 0)
            if step == 1:
                ptr = b.gep(base, [b.add(idx, first)], source_etype=et)
                if mask is None:
                    x = b.load(ptr, typ=vty, align=dt.itemsize)
                else:
                    fn = _masked_load(b.module, vty)
                    x = b.call(fn, [ptr, mask, ir.Constant(vty, None)])
            elif step == 0:
                s = b.load(b.gep(base, [idx], source_etype=et), typ=et)
                x = b.insert_element(ir.Constant(vty, ir.Undefined), s, ir.Constant(I32, 0))
                x = b.shuffle_vector(x, ir.Constant(vty, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, vl), [0] * vl))
            else:                       # a strided leaf along the lanes: one load per lane
                x = ir.Constant(vty, None)
                on = vl if mask is None else sum(int(c.constant) for c in mask.constant)
                for ln in range(on):
                    at = b.add(idx, b.mul(b.add(first, ir.Constant(I64, ln)),
                                          ir.Constant(I64, step)))
                    x = b.insert_element(x, b.load(b.gep(base, [at], source_etype=et), typ=et),
                                         ir.Constant(I32, ln))
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
    hook.lanes_along_rows = True
    return hook


_PLAIN = (bool, int, float, str, np.dtype, np.generic, type(None))


def structure_key(epi):
    """A hashable key of what :func:`emitter`'s hook reads from ``epi`` (equations, their
    types and params, literal and constant values, the leaves' strides), vars named by where
    they come from; None when a param is not plain data (no sharing then)."""
    where = {id(epi.acc_var): "acc"}
    for k, (a, _) in enumerate(epi.leaves):
        where[id(a)] = ("leaf", k)

    def atom(a):
        if isinstance(a, Literal) or id(a) in epi.consts:
            lit = a if isinstance(a, Literal) else epi.consts[id(a)]
            return "lit", lit.ty, lit.value.dtype.str, lit.value.tobytes()
        return where[id(a)], a.ty

    def plain(v):
        if isinstance(v, tuple):
            items = tuple(plain(x) for x in v)
            return None if None in items else ("tuple", items)
        return (type(v).__name__, repr(v)) if isinstance(v, _PLAIN) else None

    eqns = []
    for j, e in enumerate(epi.eqns):
        params = tuple((k, plain(v)) for k, v in sorted(e.params.items()))
        if any(p is None for _, p in params):
            return None
        eqns.append((e.prim.name, params, tuple(atom(a) for a in e.invars),
                     tuple(v.ty for v in e.outvars)))
        for i, v in enumerate(e.outvars):
            where[id(v)] = ("eqn", j, i)
    return (tuple(v.strides for _, v in epi.leaves), tuple(eqns), atom(epi.result))


def _masked_load(module, vty):
    name = f"llvm.masked.load.{_vsuffix(vty)}.p0"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(vty, [ir.PointerType(),
                                                      ir.VectorType(ir.IntType(1), vty.count),
                                                      vty]), name)
    return fn
