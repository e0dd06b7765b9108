"""Dead-code elimination through a ``scan``: the results no one reads leave the loop.

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
