"""Dead-code elimination through a ``scan`` (the results no one reads leave the loop) and
loop-invariant code motion out of it (``hoist_invariants``).

A scan rolled out of a traced program or made by differentiating one often returns more than
is read: the primal loss accumulated in a carry that a gradient does not return, stacked rows
that only the forward pass needed. Each costs work on every step. ``prune_scan`` drops

- stacked results (ys) whose outer result is unused;
- carries whose final value is unused and that no kept result depends on, through any number
  of steps (a fixed point over the body: a carry is kept once its value inside the body is
  read by something kept);
- consts and xs that the kept body no longer reads (a scan of run-time length keeps one xs:
  its rows give the trip count).

Invariants: the kept results are computed by the same equations in the same order (only
equations whose results are never read are dropped, by the ``dce`` passed in, which keeps what
may raise); a scan whose body has an effect is left whole. Imports only ``ir``, so the
simplifier (``passes.py``) can import it.
"""
from __future__ import annotations

from ..ir import Eqn, Graph, Var


def prune_scan(eqn: Eqn, live: set, dce, has_effect) -> Eqn:
    """``eqn`` (a scan) without what no var in ``live`` (ids of the outer vars read after it)
    needs; the same object when everything is needed. ``dce`` simplifies the body;
    ``has_effect(eqn)``: whether ``eqn`` must be kept whole."""
    p = eqn.params
    nk, nc, body = p["n_consts"], p["n_carry"], p["body"]
    need = [id(v) in live for v in eqn.outvars[:nc]]
    used_y = [id(v) in live for v in eqn.outvars[nc:]]
    if all(need) and all(used_y) or has_effect(eqn):
        return eqn
    while True:
        inner = dce(body.replace(outvars=_pick(body.outvars[:nc], need) +
                                 _pick(body.outvars[nc:], used_y)))
        read = _read(inner)
        more = [n or id(body.invars[nk + i]) in read for i, n in enumerate(need)]
        if more == need:
            break
        need = more
    keep = [id(v) in read for v in body.invars]
    keep[nk:nk + nc] = need
    xs = range(nk + nc, len(keep))
    if p["length"] is None and xs and not any(keep[i] for i in xs):
        keep[xs[0]] = True                  # the trip count of a run-time length
    if all(keep) and all(used_y):
        return eqn
    inner = inner.replace(invars=_pick(body.invars, keep))
    params = dict(p, body=inner, n_consts=sum(keep[:nk]), n_carry=sum(need))
    return Eqn(eqn.prim, _pick(eqn.invars, keep),
               _pick(eqn.outvars[:nc], need) + _pick(eqn.outvars[nc:], used_y), params,
               eqn.source)


def _pick(items, flags) -> tuple:
    return tuple(x for x, f in zip(items, flags) if f)


def _read(graph: Graph) -> set:
    """Ids of the vars the equations and outputs of ``graph`` read."""
    read = {id(a) for a in graph.outvars if isinstance(a, Var)}
    for e in graph.eqns:
        read.update(id(a) for a in e.invars if isinstance(a, Var))
    return read


def hoist_invariants(eqn: Eqn, movable):
    """Loop-invariant code motion for a scan: ``(equations to put before it, the scan, {index
    of a result: the outer atom it equals})``, or None when there is nothing to move.

    - a carry the body returns unchanged is the initial carry on every step: it becomes a
      const, and its final value is the initial one (the returned map);
    - a body equation all of whose operands are consts, literals or results of moved
      equations computes the same value on every step: it runs once, before the scan, and its
      results become consts. ``movable(eqn)`` says whether an equation may move (not one that
      may raise or has an effect: those keep their place and their errors).
    The values are those the body computed (the same equations on the same operands), so
    results are bit-identical."""
    p = eqn.params
    nk, nc, body = p["n_consts"], p["n_carry"], p["body"]
    ins, b_in = eqn.invars, body.invars
    same = [i for i in range(nc) if body.outvars[i] is b_in[nk + i]]
    outer = {id(v): a for v, a in zip(b_in[:nk], ins[:nk])}
    outer.update((id(b_in[nk + i]), ins[nk + i]) for i in same)
    before, kept, moved = [], [], []
    for e in body.eqns:
        if all(not isinstance(a, Var) or id(a) in outer for a in e.invars) and movable(e):
            outs = tuple(Var(v.ty) for v in e.outvars)
            before.append(Eqn(e.prim, tuple(outer.get(id(a), a) for a in e.invars), outs,
                              e.params, e.source))
            outer.update((id(v), o) for v, o in zip(e.outvars, outs))
            moved.extend(e.outvars)
        else:
            kept.append(e)
    if not same and not before:
        return None
    loop = [i for i in range(nc) if i not in same]
    inner = body.replace(eqns=kept,
                         outvars=tuple(body.outvars[i] for i in loop) + body.outvars[nc:])
    read = _read(inner)
    new_consts = [v for v in (*moved, *(b_in[nk + i] for i in same)) if id(v) in read]
    b_carry = tuple(b_in[nk + i] for i in loop)
    inner = inner.replace(invars=b_in[:nk] + tuple(new_consts) + b_carry + b_in[nk + nc:])
    params = dict(p, body=inner, n_consts=nk + len(new_consts), n_carry=len(loop))
    scan = Eqn(eqn.prim, ins[:nk] + tuple(outer[id(v)] for v in new_consts) +
               tuple(ins[nk + i] for i in loop) + ins[nk + nc:],
               tuple(eqn.outvars[i] for i in loop) + eqn.outvars[nc:], params, eqn.source)
    return before, scan, {i: ins[nk + i] for i in same}
