"""Row-wise fusion of a matrix-vector pair: ``p = Xᵀ·r(X·a)`` in one pass over ``X``.

The pattern (typical of gradients of generalised linear models, e.g. logistic regression)::

    g = dot_general(X, a)        # X: [M, K] (rows contiguous), a: [K]  -> g: [M]
    o = r(g, ...)                # a row-local elementwise loop group over [M]
    p = dot_general(o, X)        # contracts the rows of the same X     -> p: [K]

is planned as one ``RowMatvecGroup`` (a ``LoopGroup`` whose ``eqns`` are the first product,
the elementwise chain, then the second product) and emitted as one loop over blocks of ``VL``
rows. For a block: ``VL`` row dot products (vector FMAs over K, then a horizontal sum each)
give a ``VL``-lane vector of ``g``, the elementwise chain runs on it in registers, and the
block's rows, still in L1, are scaled by ``o`` and accumulated into ``ceil(K / VL)`` vector
accumulators of ``p``. X is read from memory once instead of twice; ``g`` and ``o`` are never
stored unless something else reads them. Remaining rows run the same code one row at a time.

Summation order: each ``g[i]`` sums K in lanes of ``VL`` (lane partials, then halving), and
``p`` sums rows in order within each lane; results match the two-product plan to rounding.
The loop runs on one thread (``p`` is one shared accumulator).

This module plans the group; ``emit/rowfuse.py`` emits it (with the same ``VL``, from
``Plan.vector_bytes``).
"""
from __future__ import annotations

import numpy as np

from ...ir import Literal, Var
from .steps import LoopGroup, MatmulStep

MAX_UNROLLED_FMAS = 4096        # straight-line FMAs per tile (2 x rows x K vectors), else no fusion
TILE_BYTES = 32 * 1024          # rows of X per tile: they stay in L1 between the two products


class RowMatvecGroup(LoopGroup):
    """``p = Xᵀ·r(X·a)`` as one loop over row blocks (see the module docstring)."""
    kind = "rowmv"

    def __init__(self, index, shape, x_view, a_atom, mv1, chain, mv2):
        super().__init__(index, shape)
        self.x_view, self.a_atom = x_view, a_atom
        self.mv1, self.mv2 = mv1, mv2
        self.eqns = [mv1, *chain.eqns, mv2]
        self.chain = list(chain.eqns)


def _matvec(plan, eqn):
    """(X atom, vector atom, X contracted axis) for a 2-D x 1-D dot_general, else None."""
    if eqn.prim.name != "dot_general" or eqn.params["batch"] != ((), ()):
        return None
    lhs, rhs = eqn.invars
    (lc, rc) = eqn.params["contract"]
    if len(lc) != 1:
        return None
    if lhs.ty.ndim == 2 and rhs.ty.ndim == 1:
        return lhs, rhs, lc[0]
    if lhs.ty.ndim == 1 and rhs.ty.ndim == 2:
        return rhs, lhs, rc[0]
    return None


def readers_of(plan, var):
    """Steps reading ``var`` (directly or through a view), in plan order, and whether anything
    else does (a graph output, a view). Reads ``plan.fuse_index`` (``readers.py``)."""
    return plan.fuse_index.readers(var)


def _chain_ok(plan, group, g, M):
    if group.sinks or not group.eqns:
        return False
    for e in group.eqns:
        if e.prim.name == "take" or e.outvars[0].ty.shape != (M,):
            return False
        for a in (*e.invars, *e.outvars):
            if np.dtype(a.ty.dtype).kind == "c":
                return False
        for a in e.invars:
            if isinstance(a, Literal) or id(a) in group.members or a is g:
                continue
            v = plan.view_of(a)
            if isinstance(v.base, Literal) or v.shape == ():
                continue
            if v.shape != (M,) or v.strides[0] not in (0, 1) or v.dtype.kind not in "fiu":
                return False
    for a, dst in group.stores:
        if not (isinstance(a, Var) and id(a) in group.members) or \
                dst.strides[0] != 1 or dst.dtype.kind not in "fiu":
            return False
    return True


def _second_products(plan):
    """id(vector atom) -> the matmul steps ``Xᵀ·v`` (a matvec contracting X's rows) reading it,
    in plan order: the candidates for the second product of a triple."""
    found: dict = {}
    for s in plan.steps:
        if isinstance(s, MatmulStep):
            mv = _matvec(plan, s.eqn)
            if mv is not None and mv[2] == 0:
                found.setdefault(id(mv[1]), []).append((s, mv))
    return found


def fuse_rowwise(plan):
    """Replace each (matvec, row-local loop, transposed matvec over the same X) triple of the
    plan by one ``RowMatvecGroup``. Called by ``partition._finish`` once stores are decided,
    with ``plan.fuse_index`` built; keeps it up to date."""
    index = plan.fuse_index
    gone: set = set()                            # steps merged away
    placed: dict = {}                            # first product -> its RowMatvecGroup
    seconds = None
    for s1 in [s for s in plan.steps if isinstance(s, MatmulStep)]:
        if s1 in gone:
            continue
        mv = _matvec(plan, s1.eqn)
        if mv is None or mv[2] != 1:
            continue
        X, a, _ = mv
        g = s1.eqn.outvars[0]
        dt = np.dtype(g.ty.dtype)
        if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
            continue
        M, K = X.ty.shape
        xv, av = plan.view_of(X), plan.view_of(a)
        if not isinstance(xv.base, Var) or xv.strides[1] != 1 or not isinstance(av.base, Var):
            continue
        vl = max(2, min(16, plan.vector_bytes // dt.itemsize))
        if vl * -(-K // vl) > MAX_UNROLLED_FMAS // 2:
            continue
        readers, other = readers_of(plan, g)
        if other or len(readers) != 1 or not isinstance(readers[0], LoopGroup) or \
                type(readers[0]) is not LoopGroup or readers[0].shape != (M,):
            continue
        chain = readers[0]
        if not _chain_ok(plan, chain, g, M):
            continue
        if seconds is None:
            seconds = _second_products(plan)
        s2, mv2 = None, None
        candidates = [c for vid in chain.members for c in seconds.get(vid, ())]
        for s, m in sorted(candidates, key=lambda c: c[0].index):   # the first in plan order
            if s is s1 or s in gone or plan.view_of(m[0]).key() != xv.key() or \
                    s.eqn.outvars[0].ty.dtype != dt:
                continue
            s2, mv2 = s, m
            break
        if s2 is None:
            continue
        trio = (s1, chain, s2)
        outside = [p for s in trio for p in s.preds if p not in trio]
        if any(plan.depends_on(p, s1) or plan.depends_on(p, chain) for p in outside):
            continue                             # merging would create a cycle
        o = mv2[1]
        o_readers, o_other = readers_of(plan, o)
        keep = [(v, d) for v, d in chain.stores
                if not (v is o and not o_other and all(r is s2 for r in o_readers
                                                       if r is not chain))]
        new = RowMatvecGroup(s1.index, (M,), xv, a, s1.eqn, chain, s2.eqn)
        new.members = set(chain.members) | {id(g)}
        new.stores = keep
        p = s2.eqn.outvars[0]
        new.writes = [v for v, _ in keep] + [p]
        for q in outside:
            plan.add_pred(new, q)
        for s in trio:                           # nothing of the trio is written but by `new`
            for v in s.writes:
                if plan.producer.get(id(v)) is s:
                    del plan.producer[id(v)]
        for vid in new.members:
            plan.member_of[vid] = new
        plan.producer[id(p)] = new
        for v, _ in keep:
            plan.producer[id(v)] = new
        users = dict.fromkeys(u for s in trio for u in index.users_of(s))
        for s in trio:
            index.drop_step(s)
            gone.add(s)
        placed[s1] = new
        index.add_step(new)
        for u in users:
            if u in gone:
                continue
            for s in trio:
                u.preds.discard(s)
                index.drop_pred(u, s)
            plan.add_pred(u, new)
            index.add_preds(u, [new])
    if gone:
        plan.steps = [placed.get(s, s) for s in plan.steps if s not in gone or s in placed]
