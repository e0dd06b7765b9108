"""Partial evaluation: split a JVP graph into a forward graph and a linear graph.

The inputs of a JVP graph are primals (known when the forward pass runs) and tangents (unknown
until later). An equation is *unknown* when any operand is unknown (a control-flow primitive's
``partial_eval`` rule may instead split it into a known and an unknown part); JVP rules are written so
that unknown equations are linear in their unknown operands (mul by a residual, select with a
known predicate, structural ops, dot_general with one known operand, ...).

- forward graph: primal inputs -> (primal outputs, residuals): every known equation, i.e. the
  original computation plus the coefficients the tangent equations need.
- linear graph: (residuals, tangents) -> output tangents: the unknown equations only.
Residuals are exactly the known values the linear equations read (inputs, intermediates,
coefficients); nothing else is kept alive for the backward pass. Constants the linear graph
reads stay constants of the linear graph.
"""
from __future__ import annotations

from ..ir import Graph, Literal, Var


def partial_eval(jgraph: Graph, n_known_in: int, n_known_out: int):
    """Split ``jgraph`` (first ``n_known_in`` inputs known, first ``n_known_out`` outputs known).

    Returns (forward graph, linear graph, number of residuals). A linear-graph output that does
    not depend on the unknown inputs is a constant (a zero tangent) read as a residual.
    """
    unknown: set[int] = {id(v) for v in jgraph.invars[n_known_in:]}
    known_eqns, lin_eqns = [], []
    for eqn in jgraph.eqns:
        flags = [isinstance(a, Var) and id(a) in unknown for a in eqn.invars]
        if not any(flags):
            known_eqns.append(eqn)
            continue
        rule = eqn.prim.props.get("partial_eval")     # control flow: split the equation
        split = rule(eqn, [not f for f in flags]) if rule is not None else None
        if split is None:
            lin_eqns.append(eqn)
            unknown.update(id(v) for v in eqn.outvars)
            continue
        k_eqns, u_eqns = split
        known_eqns.extend(k_eqns)
        lin_eqns.extend(u_eqns)
        for e in u_eqns:
            unknown.update(id(v) for v in e.outvars)

    consts = {id(c): (c, val) for c, val in zip(jgraph.constvars, jgraph.constvals)}
    residuals: list[Var] = []
    lin_consts: dict[int, tuple] = {}
    seen: set[int] = set()

    def need(a):
        if isinstance(a, Literal) or id(a) in unknown or id(a) in seen:
            return
        seen.add(id(a))
        if id(a) in consts:
            lin_consts[id(a)] = consts[id(a)]
        else:
            residuals.append(a)

    for eqn in lin_eqns:
        for a in eqn.invars:
            need(a)
    for a in jgraph.outvars[n_known_out:]:
        need(a)

    used_by_known = {id(a) for e in known_eqns for a in e.invars if isinstance(a, Var)} | \
        {id(a) for a in (*jgraph.outvars[:n_known_out], *residuals) if isinstance(a, Var)}
    fwd_consts = [(c, v) for c, v in zip(jgraph.constvars, jgraph.constvals)
                  if id(c) in used_by_known]
    fwd = Graph(tuple(jgraph.invars[:n_known_in]),
                tuple(jgraph.outvars[:n_known_out]) + tuple(residuals), known_eqns,
                tuple(c for c, _ in fwd_consts), tuple(v for _, v in fwd_consts))
    lin = Graph(tuple(residuals) + tuple(jgraph.invars[n_known_in:]),
                tuple(jgraph.outvars[n_known_out:]), lin_eqns,
                tuple(c for c, _ in lin_consts.values()),
                tuple(v for _, v in lin_consts.values()))
    return fwd, lin, len(residuals)


def eval_linear(lin: Graph, n_res: int, residuals, tangents):
    """Evaluate a linear graph where some tangents are ``Zero``: an equation whose linear
    operands are all Zero is skipped (its result is Zero, by linearity)."""
    from ..ad_util import Zero, is_zero, tangent_type
    env: dict[int, object] = {}
    for v, x in zip(lin.invars, list(residuals) + list(tangents)):
        env[id(v)] = x
    for v, x in zip(lin.constvars, lin.constvals):
        env[id(v)] = x
    linear = {id(v) for v in lin.invars[n_res:]}

    def read(a):
        return a if isinstance(a, Literal) else env[id(a)]

    for eqn in lin.eqns:
        ins = [read(a) for a in eqn.invars]
        lin_ins = [x for a, x in zip(eqn.invars, ins) if isinstance(a, Var) and id(a) in linear]
        linear.update(id(v) for v in eqn.outvars)
        if lin_ins and all(is_zero(x) for x in lin_ins):
            outs = [Zero(tangent_type(v.ty)) for v in eqn.outvars]
        else:
            ins = [instantiate_zero(x) for x in ins]
            outs = eqn.prim.bind(*ins, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [read(a) for a in lin.outvars]


def instantiate_zero(x):
    from ..ad_util import instantiate
    return instantiate(x)
