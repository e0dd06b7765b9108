"""Matmul epilogues: an elementwise consumer of a product runs inside the matmul kernel.

Planning (:func:`fuse_epilogues`, called by ``partition._finish`` once stores are decided): a
``MatmulStep`` computing a 2-D product ``p`` [M, N] (or a matrix-vector product [M] read as
[M, 1], a vector-matrix one [N] as [1, N]; ``foldscalars.py`` has moved the scalar factors of its
operands into such a consumer) absorbs the loop group ``G`` that consumes it when
- ``G`` is the only step reading ``p``, reads it directly (no view of ``p`` exists) and ``p`` is
  not a graph output;
- ``G`` is a plain loop of the product's shape of elementwise equations (no reductions,
  gathers or copies) whose operands and results all have the product's real dtype;
- every other operand of ``G`` is a literal, a broadcast literal, a rank-0 value, or a view of
  the product's shape with (read as [M, N]) column stride 0 or 1 (a row-major matrix, a bias
  row ``b[None, :]``, a per-row scalar);
- ``G`` stores exactly one of its members, contiguously and whole, after :func:`_sink_cheap`:
  another stored member that is a short chain of cheap equations (``SINK_PRIMS``, at most
  ``SINK_OPS``) of the kept member and literals, read only by one later loop group of the same
  shape, is recomputed in that group instead (tanh's residual ``1 - h**2`` next to ``h``: the
  backward loop reads ``h``, which is kept anyway, so the forward pass stores one matrix).
The matmul then writes that member instead of ``p`` (which is never materialised): one pass over
[M, N] memory less. ``MatmulStep.epilogue`` holds an :class:`Epilogue`; ``G`` leaves the plan.

Emission: ``emit/epilogue.py`` (the kernel's epilogue hook for an :class:`Epilogue`).
"""
from __future__ import annotations

import numpy as np

from ...ir import Literal, Var
from .rowfuse import readers_of
from .steps import LoopGroup, MatmulStep, matmul_layout
from .views import View


class Epilogue:
    """``eqns`` run on the product ``acc_var``; ``result`` is stored; ``leaves``: (atom, View)
    read from memory in that order (extra kernel arguments); ``consts``: id(atom) -> Literal."""

    def __init__(self, acc_var, eqns, result, leaves, consts):
        self.acc_var, self.eqns, self.result = acc_var, eqns, result
        self.leaves, self.consts = leaves, consts

    def describe(self, namer) -> str:
        return "epilogue " + " ".join(f"{namer(e.outvars[0])}={e.prim.name}" for e in self.eqns)


SINK_PRIMS = ("add", "sub", "mul", "neg", "integer_pow")
SINK_OPS = 2


def _sink_plan(plan, g, keep, var):
    """(chain eqns, reader group) moving ``var``'s computation out of ``g``, or None."""
    chain, todo, inside = [], [var], set()
    by_out = {id(e.outvars[0]): e for e in g.eqns}
    while todo:
        v = todo.pop()
        e = by_out.get(id(v))
        if e is None or e.prim.name not in SINK_PRIMS or len(e.outvars) != 1:
            return None
        chain.append(e)
        inside.add(id(v))
        for a in e.invars:
            if isinstance(a, Literal) or a is keep:
                continue
            if id(a) not in g.members or id(a) in inside:
                return None
            todo.append(a)
        if len(chain) > SINK_OPS:
            return None
    chain_ids = {id(e) for e in chain}
    for e in (*g.eqns, *g.sinks):              # chain values are not read elsewhere in g
        if id(e) not in chain_ids and any(id(a) in inside for a in e.invars):
            return None
    if any(id(a) in inside and a is not var for a, _ in g.stores):
        return None
    readers, other = readers_of(plan, var)
    readers = [r for r in readers if r is not g]          # g itself lists var as a store
    if other or len(readers) != 1 or type(readers[0]) is not LoopGroup:
        return None
    g2 = readers[0]
    if g2.shape != g.shape or getattr(g2, "output_copy", None) is not None or \
            any(a is var for a, _ in g2.stores) or id(var) in plan.out_aliases:
        return None
    order = {id(e): k for k, e in enumerate(g.eqns)}
    return sorted(chain, key=lambda e: order[id(e)]), g2


def _sink_cheap(plan, g, keep):
    """Recompute every stored member of ``g`` but ``keep`` in its reader (module docstring);
    False (and nothing changed) when one of them cannot move."""
    moves = []
    for var, _ in g.stores:
        if var is keep:
            continue
        found = _sink_plan(plan, g, keep, var) if isinstance(var, Var) else None
        if found is None:
            return False
        moves.append((var, *found))
    for var, chain, g2 in moves:
        g.stores = [(a, d) for a, d in g.stores if a is not var]
        g.writes = [w for w in g.writes if w is not var]
        plan.producer.pop(id(var), None)
        for e in chain:
            g.eqns.remove(e)
            g.members.discard(id(e.outvars[0]))
            g2.members.add(id(e.outvars[0]))
            plan.member_of[id(e.outvars[0])] = g2
        g2.eqns[:0] = chain
        plan.fuse_index.reindex(g)
        plan.fuse_index.reindex(g2)
    return True


def _matrix_view(v, shape2):
    """A view of the product's shape read as the kernel's [M, N] (``shape2``), or None: a
    matrix-vector product's [M] is [M, 1], a vector-matrix product's [N] is [1, N]; a 2-D
    product the kernel computes as another [M, N] (a product with a scalar, flattened) can be
    read so only from a C-contiguous view (its row stride is not the kernel's)."""
    if tuple(v.shape) == tuple(shape2):
        return v
    if len(v.shape) == 1:
        strides = (v.strides[0], 0) if shape2[1] == 1 else (0, v.strides[0])
        return View(v.base, v.offset, strides, shape2, v.dtype)
    rows, cols = v.shape
    if (cols == 1 or v.strides[1] == 1) and (rows == 1 or v.strides[0] == cols):
        return View(v.base, v.offset, (shape2[1], 1), shape2, v.dtype)
    return None


def _plan_one(plan, step):
    p = step.out
    dt = np.dtype(p.ty.dtype)
    if dt.kind != "f" or p.ty.ndim not in (1, 2) or step.epilogue is not None:
        return None
    lay = matmul_layout(plan, step.eqn)
    if lay is None or lay[6] != 1 or lay[1] * lay[3] != p.ty.size:
        return None
    shape2 = (lay[1], lay[3])             # the kernel's [M, N] (1-D products: one of them 1)
    if p.ty.ndim == 1 and 1 not in shape2:
        return None
    readers, other = readers_of(plan, p)
    if other or len(readers) != 1 or type(readers[0]) is not LoopGroup:
        return None
    g = readers[0]
    if g.shape != p.ty.shape or g.sinks or not g.eqns or not g.stores or \
            getattr(g, "output_copy", None) is not None:
        return None
    if len(g.stores) > 1 and not any(_sink_cheap(plan, g, keep) for keep, _ in list(g.stores)
                                     if isinstance(keep, Var)):
        return None                 # (a sunk chain that then finds no epilogue still saves a store)
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
                v = View(v.base, v.offset, (0, 0), shape2, v.dtype)
            elif v.shape == p.ty.shape:
                v = _matrix_view(v, shape2)
                if v is None:
                    return None
            else:
                return None
            if v.strides[1] not in (0, 1):
                return None
            leaves.append((a, v))
    return g, Epilogue(p, _canonical(g.eqns, result), result, leaves, consts)


def _canonical(eqns, result):
    """``eqns`` in the order of a depth-first walk from ``result`` over operands in order (the
    rest after, as they were): the epilogue's code then depends on its expression only, not on
    which equations view sinking prepended, so equal products share one kernel."""
    by_out = {id(e.outvars[0]): e for e in eqns}
    order, seen, stack = [], set(), [(result, False)]
    while stack:
        v, done = stack.pop()
        e = by_out.get(id(v))
        if e is None:
            continue
        if done:
            order.append(e)
        elif id(e) not in seen:
            seen.add(id(e))
            stack.append((v, True))
            stack.extend((a, False) for a in reversed(e.invars) if isinstance(a, Var))
    return order + [e for e in eqns if id(e) not in seen]


def fuse_epilogues(plan):
    """Move each qualifying loop group into its product's matmul (see the module docstring).
    Reads and keeps up to date ``plan.fuse_index`` (``readers.py``)."""
    index = plan.fuse_index
    gone = set()
    for step in [s for s in plan.steps if isinstance(s, MatmulStep)]:
        found = _plan_one(plan, step)
        if found is None:
            continue
        g, epi = found
        step.epilogue = epi
        more = {s for s in g.preds if s is not step and s is not g}
        for q in more:
            plan.add_pred(step, q)
        index.add_preds(step, more)
        step.writes = [epi.result]
        plan.producer.pop(id(epi.acc_var), None)
        plan.producer[id(epi.result)] = step
        for vid in g.members:
            plan.member_of.pop(vid, None)
        users = index.users_of(g)
        index.drop_step(g)
        gone.add(g)
        for s in users:
            s.preds.discard(g)
            index.drop_pred(s, g)
            if s is not step:
                plan.add_pred(s, step)
                index.add_preds(s, [step])
    if gone:
        plan.steps = [s for s in plan.steps if s not in gone]
