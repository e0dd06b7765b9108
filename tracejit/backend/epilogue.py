"""Matmul epilogues: an elementwise consumer of a product runs inside the matmul kernel.

Planning (:func:`fuse_epilogues`, called by ``fuse._finish`` once stores are decided): a
``MatmulStep`` computing a 2-D product ``p`` [M, N] absorbs the loop group ``G`` that consumes it
when
- ``G`` is the only step reading ``p``, reads it directly (no view of ``p`` exists) and ``p`` is
  not a graph output;
- ``G`` is a plain [M, N] loop of elementwise equations (no reductions, gathers or copies) whose
  operands and results all have the product's real dtype;
- every other operand of ``G`` is a literal, a broadcast literal, a rank-0 value, or a view of
  shape [M, N] with column stride 0 or 1 (a row-major matrix, a bias row ``b[None, :]``, a
  per-row scalar);
- ``G`` stores exactly one of its members, contiguously and whole.
The matmul then writes that member instead of ``p`` (which is never materialised): one pass over
[M, N] memory less. ``MatmulStep.epilogue`` holds an :class:`Epilogue`; ``G`` leaves the plan.

Emission (:func:`emitter`): the kernel's ``epilogue(builder, acc, row, col0, mask)`` hook loads
each leaf at ``(row, col0 + lane)`` through pointers passed as extra kernel arguments and emits
``G``'s equations on the accumulator vector with the loop lowering rules (``emit_ops``), so the
values are the ones the separate loop would compute.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..ir import Literal, Var
from . import emit_ops as ops
from .emit_ops import I32, I64, OpContext, reg_type
from .fuse import LoopGroup, MatmulStep, View


class Epilogue:
    """``eqns`` run on the product ``acc_var``; ``result`` is stored; ``leaves``: (atom, View)
    read from memory in that order (extra kernel arguments); ``consts``: id(atom) -> Literal."""

    def __init__(self, acc_var, eqns, result, leaves, consts):
        self.acc_var, self.eqns, self.result = acc_var, eqns, result
        self.leaves, self.consts = leaves, consts

    def describe(self, namer) -> str:
        return "epilogue " + " ".join(f"{namer(e.outvars[0])}={e.prim.name}" for e in self.eqns)


def _plan_one(plan, step):
    from .emit_steps import matmul_layout
    from .rowfuse import _readers
    p = step.out
    dt = np.dtype(p.ty.dtype)
    if dt.kind != "f" or p.ty.ndim != 2 or step.epilogue is not None:
        return None
    lay = matmul_layout(plan, step.eqn)
    if lay is None or lay[6] != 1 or (lay[1], lay[3]) != p.ty.shape:
        return None
    readers, other = _readers(plan, p)
    if other or len(readers) != 1 or type(readers[0]) is not LoopGroup:
        return None
    g = readers[0]
    if g.shape != p.ty.shape or g.sinks or not g.eqns or len(g.stores) != 1 or \
            getattr(g, "output_copy", None) is not None:
        return None
    result, dst = g.stores[0]
    if not isinstance(result, Var) or id(result) not in g.members or not dst.is_whole() or \
            dst.base is not result:
        return None
    leaves, consts, seen = [], {}, set()
    for e in g.eqns:
        if e.prim.name == "take" or e.prim.kind != "elementwise":
            return None
        for a in (*e.invars, *e.outvars):
            if np.dtype(a.ty.dtype) != dt:
                return None
        for a in e.invars:
            if isinstance(a, Literal) or a is p or id(a) in g.members or id(a) in seen:
                continue
            seen.add(id(a))
            v = plan.view_of(a)
            if isinstance(v.base, Literal):
                consts[id(a)] = v.base
                continue
            if v.shape == ():
                v = View(v.base, v.offset, (0, 0), p.ty.shape, v.dtype)
            if v.shape != p.ty.shape or v.strides[1] not in (0, 1):
                return None
            leaves.append((a, v))
    return g, Epilogue(p, list(g.eqns), result, leaves, consts)


def fuse_epilogues(plan):
    """Move each qualifying loop group into its product's matmul (see the module docstring)."""
    for step in [s for s in plan.steps if isinstance(s, MatmulStep)]:
        found = _plan_one(plan, step)
        if found is None:
            continue
        g, epi = found
        step.epilogue = epi
        step.preds |= {s for s in g.preds if s is not step and s is not g}
        step.writes = [epi.result]
        plan.producer.pop(id(epi.acc_var), None)
        plan.producer[id(epi.result)] = step
        for vid in g.members:
            plan.member_of.pop(vid, None)
        plan.steps.remove(g)
        for s in plan.steps:
            if g in s.preds:
                s.preds.discard(g)
                if s is not step:
                    s.preds.add(step)


def read_atoms(step):
    """Atoms a matmul step reads (operands and epilogue leaves), for liveness."""
    atoms = list(step.eqn.invars)
    if getattr(step, "epilogue", None) is not None:
        atoms.extend(a for a, _ in step.epilogue.leaves)
    return atoms


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
            env[id(e.outvars[0])] = ops.emit(cx, e, [val(a) for a in e.invars])
        return env[id(epi.result)]
    return hook


def _masked_load(module, vty):
    from .matmul import _vsuffix
    name = f"llvm.masked.load.{_vsuffix(vty)}.p0"
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(vty, [ir.PointerType(),
                                                      ir.VectorType(ir.IntType(1), vty.count),
                                                      vty]), name)
    return fn
