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

Residual choice (``recompute=True``): a residual defined by a short chain of cheap known
equations (``RECOMPUTE_PRIMS``, at most ``RECOMPUTE_OPS`` of them, no transcendental) whose leaves
are literals, known inputs or other residuals is recomputed at the start of the linear graph
instead of stored, when the leaves it adds to the residuals take fewer bytes than it does (e.g.
``1 - h**2`` from ``h``, which is kept anyway). The recomputed equations are the same equations
on the same values, so derivatives are bit-identical; the linear graph then also holds these
non-linear equations (no unknown operand), which transposition evaluates forward.
"""
from __future__ import annotations

from ..ir import Graph, Literal, Var


RECOMPUTE_PRIMS = ("add", "sub", "mul", "neg", "integer_pow")
RECOMPUTE_OPS = 2


def partial_eval(jgraph: Graph, n_known_in: int, n_known_out: int, recompute: bool = False):
    """Split ``jgraph`` (first ``n_known_in`` inputs known, first ``n_known_out`` outputs known).

    Returns (forward graph, linear graph, number of residuals). A linear-graph output that does
    not depend on the unknown inputs is a constant (a zero tangent) read as a residual. With
    ``recompute``, cheap residuals are recomputed in the linear graph (module docstring).
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

    if recompute:
        residuals, moved = _choose_residuals(jgraph, known_eqns, residuals, n_known_in, consts)
        lin_eqns = moved + lin_eqns

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


def _cheap_chain(r, producer, inputs, keep, order):
    """(eqns in graph order, leaf vars) recomputing ``r``, or None if it is not cheap. Leaves
    are literals, ``inputs`` and the residuals in ``keep`` other than ``r``; ``order`` maps an
    equation's id to its position."""
    eqns, leaves, todo = [], [], [r]
    while todo:
        v = todo.pop()
        e = producer.get(id(v))
        if e is None or e.prim.name not in RECOMPUTE_PRIMS or len(e.outvars) != 1 or \
                (e.prim.name == "integer_pow" and e.params.get("n") != 2):
            return None
        if e not in eqns:
            eqns.append(e)
        if len(eqns) > RECOMPUTE_OPS:
            return None
        for a in e.invars:
            if isinstance(a, Literal):
                continue
            if (id(a) in keep and a is not r) or id(a) in inputs:
                if all(x is not a for x in leaves):
                    leaves.append(a)
            elif id(a) in producer:
                todo.append(a)
            else:
                return None                      # a constant: keep the stored residual
    return sorted(eqns, key=lambda e: order[id(e)]), leaves


def _choose_residuals(jgraph, known_eqns, residuals, n_known_in, consts):
    """Residuals after recomputing the cheap ones, and the equations moved to the linear graph
    (graph order)."""
    producer = {id(e.outvars[0]): e for e in known_eqns if len(e.outvars) == 1}
    inputs = {id(v) for v in jgraph.invars[:n_known_in]}
    keep = {id(r): r for r in residuals}
    moved: dict[int, object] = {}
    nbytes = (lambda v: v.ty.size * v.ty.dtype.itemsize)
    order = {id(e): k for k, e in enumerate(known_eqns)}
    for r in residuals:
        if id(r) in inputs or id(r) in consts:
            continue
        chain = _cheap_chain(r, producer, inputs, keep, order)
        if chain is None:
            continue
        eqns, leaves = chain
        added = sum(nbytes(a) for a in leaves if id(a) not in keep)
        if added >= nbytes(r):
            continue
        del keep[id(r)]
        for a in leaves:
            keep.setdefault(id(a), a)
        for e in eqns:
            moved[id(e)] = e
    old_ids = {id(r) for r in residuals}
    new_res = [r for r in residuals if id(r) in keep] + \
        [a for k, a in keep.items() if k not in old_ids]
    return new_res, sorted(moved.values(), key=lambda e: order[id(e)])


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
            ins = [instantiate_zero(x, ins) for x in ins]
            outs = eqn.prim.bind(*ins, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [read(a) for a in lin.outvars]


def instantiate_zero(x, operands=()):
    """A Zero as an actual zero value. A zero *stack* (a while loop's tape tangent, run-time
    length) takes its length from another stack among the equation's ``operands`` (the stacks
    a scan reads all have one length)."""
    from ..ad_util import instantiate, is_zero, ty, zeros_like_stack
    if is_zero(x) and x.ty.dynamic:
        like = next((o for o in operands if not is_zero(o) and not isinstance(o, Literal)
                     and ty(o).dynamic), None)
        if like is not None:
            return zeros_like_stack(like, x.ty)
    return instantiate(x)
