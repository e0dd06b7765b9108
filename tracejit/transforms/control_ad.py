"""Differentiation of the control-flow primitives: cond, while, scan (and checkpoint).

Forward mode maps each sub-graph to its JVP graph (``jvp_graph``); a loop carry gets a tangent
when its initial value has one or the body gives it one (found by iterating to a fixed point).

Reverse mode needs more than a JVP rule, because a differentiated loop mixes primal values (known
in the forward pass) and tangents (linear, unknown). A *partial-evaluation rule* per primitive
splits one JVP'd equation into a known equation (run in the forward pass) and an unknown one
(the linear part, later transposed):

- ``scan``: the known scan computes the primal carry and ys plus every per-step residual,
  stacked along the scan axis; the linear scan consumes the stacked residuals. Its transpose is
  a scan in the opposite direction over the transposed body, accumulating the cotangents of
  loop-invariant inputs in the carry. Residual memory is O(steps); ``scan(...,
  checkpoint_every=k)`` and ``checkpoint`` trade it for recomputation.
- ``cond``: the known cond outputs the primal results and the residuals of whichever branch ran
  (each branch fills its own residual slots, zeros elsewhere); the linear cond picks the same
  branch's linear part; its transpose is a cond over the transposed branches.
- ``while``: the trip count is data-dependent, so the residuals go on a *tape* that grows as
  the loop runs. The known equation is a ``while_record``: the primal loop that also returns,
  per step, the residuals the linear part needs (stacks ``T[?,...]``, one row per step;
  loop-invariant residuals are not recorded) and ``live`` (which steps ran: all of them, except
  for lanes that finished early under vmap). The linear part is a ``scan`` of run-time length
  over the tape (``length=None``), a step that did not run keeping its carry; transposing it is
  the scan rule above: a reverse scan over the tape. Memory: one row of residuals per step
  (``tj.residual_bytes`` measures it); time: one primal and one backward body per step. Higher
  orders differentiate ``while_record`` like ``while`` (its records get tangents too).
- ``remat_call`` (``checkpoint``): the known equation computes outputs only; the linear part
  keeps the JVP'd call and its transpose recomputes the residuals from the saved inputs.
"""
from __future__ import annotations

from .. import ad_util as ad
from ..ad_util import UndefinedPrimal, Zero, differentiable, instantiate, is_undefined, is_zero, \
    tangent_type
from ..core import eval_graph, make_graph
from ..ir import Eqn, Graph, Type, Var
from .jvp import jvp_graph
from .partial_eval import partial_eval
from .transpose import transpose_graph


# ---------------------------------------------------------------------------------------------
# graph helpers

def _closed(fn, in_types) -> Graph:
    g, captured = make_graph(fn, list(in_types))
    assert not captured, "a control-flow rule graph captured an outer value"
    return g


def _reorder(graph: Graph, in_order, out_order=None) -> Graph:
    """``graph`` with inputs (and outputs) permuted: ``in_order[i]`` is the old index."""
    g = graph.replace(invars=tuple(graph.invars[i] for i in in_order))
    if out_order is not None:
        g = g.replace(outvars=tuple(graph.outvars[i] for i in out_order))
    return g


def _fresh_inputs(graph: Graph, types, at) -> Graph:
    """``graph`` with unused inputs of ``types`` inserted at position ``at``."""
    extra = tuple(Var(t) for t in types)
    return graph.replace(invars=graph.invars[:at] + extra + graph.invars[at:])


def depends(graph: Graph, unknown_in) -> list[bool]:
    """Which outputs depend on the inputs flagged in ``unknown_in``. Control-flow equations are
    looked into (a JVP'd loop's primal results do not depend on its tangents); any other
    equation's results depend on all its operands."""
    unknown = {id(v) for v, u in zip(graph.invars, unknown_in) if u}
    for eqn in graph.eqns:
        flags = [isinstance(a, Var) and id(a) in unknown for a in eqn.invars]
        if not any(flags):
            continue
        outs = _eqn_depends(eqn, flags)
        unknown.update(id(v) for v, f in zip(eqn.outvars, outs) if f)
    return [isinstance(a, Var) and id(a) in unknown for a in graph.outvars]


def _eqn_depends(eqn: Eqn, flags) -> list[bool]:
    name, p, n_out = eqn.prim.name, eqn.params, len(eqn.outvars)
    if name == "remat":
        return depends(p["call"], flags)
    if name == "cond" and not flags[0]:
        per_branch = [depends(g, flags[1:]) for g in p["branches"]]
        return [any(f) for f in zip(*per_branch)]
    if name == "scan":
        nk, nc = p["n_consts"], p["n_carry"]
        cu = _carry_fixed_point(lambda cu: depends(p["body"], flags[:nk] + cu + flags[nk + nc:])
                                [:nc], flags[nk:nk + nc])
        return cu + depends(p["body"], flags[:nk] + cu + flags[nk + nc:])[nc:]
    if name in ("while", "while_record"):
        ncc, nbc, nc, _ = _while_arity(p, name == "while_record")
        bflags = flags[ncc:ncc + nbc]
        cu = _carry_fixed_point(lambda cu: depends(p["body"], bflags + cu)[:nc],
                                flags[ncc + nbc:])
        if any(flags[:ncc]) or any(depends(p["cond"], flags[:ncc] + cu)):
            return [True] * n_out                 # the trip count itself depends on them
        if name == "while":
            return cu
        return cu + [False] + depends(p["body"], bflags + cu)[nc:]
    return [True] * n_out


def _split(graph: Graph, unknown_in, unknown_out):
    """partial_eval of ``graph`` with the given known/unknown inputs and outputs.

    Returns (fwd, lin, n_res, in_known_idx, in_unknown_idx, out_known_idx, out_unknown_idx):
    fwd: known inputs -> (known outputs, residuals); lin: (residuals, unknown inputs) -> unknown
    outputs."""
    ki = [i for i, u in enumerate(unknown_in) if not u]
    ui = [i for i, u in enumerate(unknown_in) if u]
    ko = [i for i, u in enumerate(unknown_out) if not u]
    uo = [i for i, u in enumerate(unknown_out) if u]
    g = _reorder(graph, ki + ui, ko + uo)
    fwd, lin, n_res = partial_eval(g, len(ki), len(ko))
    return fwd, lin, n_res, ki, ui, ko, uo


def _split_stored(graph: Graph, unknown_in, unknown_out):
    """``_split`` for a loop body or branch whose residuals are stored per step (per branch).

    A residual that is itself a stack (the tape of a while loop inside the body) cannot be
    stored per step again (its rows would have different lengths), so then the body is
    checkpointed: its known inputs are the residuals and the backward pass re-runs it,
    rebuilding the inner tape (``remat``, see checkpoint.py)."""
    split = _split(graph, unknown_in, unknown_out)
    fwd, n_res = split[0], split[2]
    if not any(v.ty.dynamic for v in fwd.outvars[len(fwd.outvars) - n_res:]):
        return split
    from ..checkpoint import remat_p
    wrapped = _closed(lambda *xs: remat_p.bind(*xs, call=graph, policy=None), graph.in_types)
    return _split(wrapped, unknown_in, unknown_out)


def _as_value(x, t: Type):
    """A Zero/UndefinedPrimal-free operand: zeros instantiated."""
    return instantiate(x, tangent_type(t)) if is_zero(x) else x


def _while_arity(params, record):
    """(n_cond_consts, n_body_consts, n_carry, n_records) of a while or a while_record."""
    n_out = len(params["body"].outvars)
    nc = params["n_carry"] if record else n_out
    return params["n_cond_consts"], params["n_body_consts"], nc, n_out - nc


# ---------------------------------------------------------------------------------------------
# cond

def cond_jvp(primals, tangents, *, branches):
    from ..ops.control import cond_p
    index, ops, tops = primals[0], primals[1:], tangents[1:]
    diff = [not is_zero(t) for t in tops]
    jgs = [jvp_graph(g, diff)[0] for g in branches]
    n_out = len(branches[0].outvars)
    outs = cond_p.bind(index, *ops, *[t for t, d in zip(tops, diff) if d], branches=tuple(jgs))
    return outs[:n_out], outs[n_out:]


def cond_partial_eval(eqn: Eqn, known):
    """Split a cond with unknown operands into a known cond (primal results + residuals of the
    branch that ran) and an unknown cond (the linear parts)."""
    from ..ops.control import cond_p
    if not known[0]:
        return None
    branches = eqn.params["branches"]
    unknown_in = [not k for k in known[1:]]
    unknown_out = [any(flags) for flags in zip(*[depends(g, unknown_in) for g in branches])]
    splits = [_split_stored(g, unknown_in, unknown_out) for g in branches]
    ki, ui, ko, uo = splits[0][3:]
    res_types = [[v.ty for v in s[1].invars[:s[2]]] for s in splits]
    all_res = [t for ts in res_types for t in ts]
    ops = eqn.invars[1:]
    known_ops = [ops[i] for i in ki]
    known_graphs, lin_graphs = [], []
    offset = 0
    for (fwd, lin, n_res, *_), ts in zip(splits, res_types):
        def fwd_fn(*xs, fwd=fwd, offset=offset, n_res=n_res):
            outs = eval_graph(fwd, list(xs))
            prim_outs, res = outs[:len(ko)], outs[len(ko):]
            slots = [ad.zeros(t) for t in all_res]
            slots[offset:offset + n_res] = res
            return list(prim_outs) + slots

        def lin_fn(*xs, lin=lin, offset=offset, n_res=n_res):
            res, tans = xs[:len(all_res)], xs[len(all_res):]
            return eval_graph(lin, list(res[offset:offset + n_res]) + list(tans))

        known_graphs.append(_closed(fwd_fn, [a.ty for a in known_ops]))
        lin_graphs.append(_closed(lin_fn, all_res + [ops[i].ty for i in ui]))
        offset += n_res
    res_vars = [Var(t) for t in all_res]
    k_eqn = Eqn(cond_p, (eqn.invars[0], *known_ops),
                tuple(eqn.outvars[i] for i in ko) + tuple(res_vars),
                {"branches": tuple(known_graphs)}, eqn.source)
    u_eqn = Eqn(cond_p, (eqn.invars[0], *res_vars, *[ops[i] for i in ui]),
                tuple(eqn.outvars[i] for i in uo), {"branches": tuple(lin_graphs)}, eqn.source)
    return [k_eqn], [u_eqn]


def cond_transpose(cts, index, *ops, branches):
    from ..ops.control import cond_p
    lin_idx = [i for i, x in enumerate(ops) if is_undefined(x)]
    res_idx = [i for i, x in enumerate(ops) if not is_undefined(x)]
    out_types = [tangent_type(t) for t in branches[0].out_types]
    bwds = []
    for g in branches:
        lin = _reorder(g, res_idx + lin_idx)
        bwds.append(transpose_graph(lin, len(res_idx), out_types))
    cts = [_as_value(c, t) for c, t in zip(cts, out_types)]
    outs = cond_p.bind(index, *[ops[i] for i in res_idx], *cts, branches=tuple(bwds))
    result = [None] * (1 + len(ops))
    for i, c in zip(lin_idx, outs):
        result[1 + i] = c
    return result


# ---------------------------------------------------------------------------------------------
# scan

def _carry_fixed_point(body_diff_fn, carry_diff):
    """Iterate ``carry_diff`` (which carries have tangents) to a fixed point."""
    diff = list(carry_diff)
    for _ in range(len(diff) + 1):
        new = [d or o for d, o in zip(diff, body_diff_fn(diff))]
        if new == diff:
            return diff
        diff = new
    return diff


def scan_jvp(primals, tangents, *, body, length, reverse, n_consts, n_carry):
    from ..ops.control import scan_p
    nk, nc = n_consts, n_carry
    nx = len(primals) - nk - nc
    kd = [not is_zero(t) for t in tangents[:nk]]
    xd = [not is_zero(t) for t in tangents[nk + nc:]]
    c_types = body.in_types[nk:nk + nc]
    cd0 = [not is_zero(t) and differentiable(ty) for t, ty in
           zip(tangents[nk:nk + nc], c_types)]

    def carry_out_nonzero(cd):
        _, zero_out = jvp_graph(body, kd + cd + xd)
        return [not z and differentiable(ty) for z, ty in zip(zero_out[:nc], c_types)]

    cd = _carry_fixed_point(carry_out_nonzero, cd0)
    jg, _ = jvp_graph(body, kd + cd + xd)
    n_in, n_out = len(body.invars), len(body.outvars)
    # jg inputs: consts carry xs | consts_t carry_t xs_t ; outputs: carry ys | carry_t ys_t
    t_pos = n_in
    kt = [t_pos + i for i in range(sum(kd))]
    ct_ = [t_pos + sum(kd) + i for i in range(sum(cd))]
    xt = [t_pos + sum(kd) + sum(cd) + i for i in range(sum(xd))]
    in_order = list(range(nk)) + kt + list(range(nk, nk + nc)) + ct_ + \
        list(range(nk + nc, n_in)) + xt
    c_t_out = [n_out + i for i in range(nc) if cd[i]]
    out_order = list(range(nc)) + c_t_out + list(range(nc, n_out)) + \
        list(range(n_out + nc, 2 * n_out))
    new_body = _reorder(jg, in_order, out_order)
    consts, carry, xs = primals[:nk], primals[nk:nk + nc], primals[nk + nc:]
    k_t = [t for t, d in zip(tangents[:nk], kd) if d]
    c_t = [_as_value(t, ty) for t, ty, d in zip(tangents[nk:nk + nc], c_types, cd) if d]
    x_t = [t for t, d in zip(tangents[nk + nc:], xd) if d]
    outs = scan_p.bind(*consts, *k_t, *carry, *c_t, *xs, *x_t, body=new_body, length=length,
                       reverse=reverse, n_consts=nk + len(k_t), n_carry=nc + len(c_t))
    n_ct = len(c_t)
    carry_out, carry_t = outs[:nc], outs[nc:nc + n_ct]
    ys, ys_t = outs[nc + n_ct:nc + n_ct + (n_out - nc)], outs[nc + n_ct + (n_out - nc):]
    it = iter(carry_t)
    t_carry = [next(it) if d else Zero(tangent_type(ty)) for d, ty in zip(cd, c_types)]
    del nx
    return list(carry_out) + list(ys), t_carry + list(ys_t)


def scan_partial_eval(eqn: Eqn, known):
    """Known scan: primal carry/ys plus stacked per-step residuals; unknown scan: the linear
    part reading them (loop-invariant residuals are passed as consts, not stacked)."""
    from ..ops.control import scan_p
    p = eqn.params
    body, nk, nc, length = p["body"], p["n_consts"], p["n_carry"], p["length"]
    n_in, n_out = len(body.invars), len(body.outvars)
    unknown_in = [not k for k in known]

    def carry_unknown(cu):
        flags = depends(body, unknown_in[:nk] + cu + unknown_in[nk + nc:])
        return flags[:nc]

    cu = _carry_fixed_point(carry_unknown, unknown_in[nk:nk + nc])
    unknown_in = unknown_in[:nk] + cu + unknown_in[nk + nc:]
    unknown_out = depends(body, unknown_in)
    unknown_out[:nc] = cu
    fwd, lin, n_res, ki, ui, ko, uo = _split_stored(body, unknown_in, unknown_out)
    res_vars = list(lin.invars[:n_res])
    fwd_res = list(fwd.outvars[len(ko):])
    # residuals that are the body's known consts are loop-invariant: pass them, don't stack
    const_in = {id(body.invars[i]): j for j, i in enumerate(ki) if i < nk}
    res_const = [id(r) in const_in for r in fwd_res]
    k_consts = [i for i in ki if i < nk]
    k_carry = [i for i in ki if nk <= i < nk + nc]
    k_xs = [i for i in ki if i >= nk + nc]
    k_ys = [i for i in ko if i >= nc]
    # known scan: body outputs (known carry, known ys, stacked residuals)
    fwd_known = fwd.replace(outvars=tuple(fwd.outvars[:len(ko)]) +
                            tuple(r for r, c in zip(fwd_res, res_const) if not c))
    stacked = [Var(Type(r.ty.dtype, (length,) + r.ty.shape))
               for r, c in zip(fwd_res, res_const) if not c]
    ins = eqn.invars
    k_eqn = Eqn(scan_p, tuple(ins[i] for i in ki),
                tuple(eqn.outvars[i] for i in ko) + tuple(stacked),
                dict(p, body=fwd_known, n_consts=len(k_consts), n_carry=len(k_carry)),
                eqn.source)
    # unknown scan: consts (invariant residuals, unknown consts), carry (unknown carry),
    # xs (stacked residuals, unknown xs)
    const_res_outer = [ins[ki[const_in[id(r)]]] for r, c in zip(fwd_res, res_const) if c]
    u_consts = [i for i in ui if i < nk]
    u_carry = [i for i in ui if nk <= i < nk + nc]
    u_xs = [i for i in ui if i >= nk + nc]
    r_const_idx = [j for j, c in enumerate(res_const) if c]
    r_iter_idx = [j for j, c in enumerate(res_const) if not c]
    nu_c, nu_carry = len(u_consts), len(u_carry)
    lin_order = r_const_idx + [n_res + j for j in range(nu_c)] + \
        [n_res + nu_c + j for j in range(nu_carry)] + r_iter_idx + \
        [n_res + nu_c + nu_carry + j for j in range(len(u_xs))]
    lin_body = _reorder(lin, lin_order)
    extra_xs = ()
    if length is None and not stacked and not u_xs:
        # a scan of run-time length takes its trip count from a stack: pass a known one along
        extra_xs = (ins[k_xs[0]],)
        lin_body = _fresh_inputs(lin_body, [body.invars[k_xs[0]].ty], len(lin_body.invars))
    u_eqn = Eqn(scan_p, tuple(const_res_outer) + tuple(ins[i] for i in u_consts + u_carry) +
                tuple(stacked) + tuple(ins[i] for i in u_xs) + extra_xs,
                tuple(eqn.outvars[i] for i in uo),
                dict(p, body=lin_body, n_consts=len(const_res_outer) + nu_c, n_carry=nu_carry),
                eqn.source)
    del k_xs, k_ys, res_vars, n_in, n_out
    return [k_eqn], [u_eqn]


def scan_transpose(cts, *args, body, length, reverse, n_consts, n_carry):
    """Transpose of a scan linear in its undefined consts, all carries and undefined xs."""
    from ..ops.control import scan_p
    nk, nc = n_consts, n_carry
    consts, carry, xs = args[:nk], args[nk:nk + nc], args[nk + nc:]
    lc = [i for i, x in enumerate(consts) if is_undefined(x)]
    rc = [i for i, x in enumerate(consts) if not is_undefined(x)]
    lx = [i for i, x in enumerate(xs) if is_undefined(x)]
    rx = [i for i, x in enumerate(xs) if not is_undefined(x)]
    n_in = len(body.invars)
    order = rc + [nk + nc + i for i in rx] + lc + list(range(nk, nk + nc)) + \
        [nk + nc + i for i in lx]
    lin = _reorder(body, order)
    n_res = len(rc) + len(rx)
    out_types = [tangent_type(t) for t in body.out_types]
    bwd = transpose_graph(lin, n_res, out_types)
    # bwd: (res consts, res x_i, ct carry_out, ct y_i) -> (ct lin consts, ct carry, ct lin x_i)
    lc_types = [tangent_type(body.invars[i].ty) for i in lc]
    c_types = [tangent_type(body.invars[nk + i].ty) for i in range(nc)]
    rx_types = [body.invars[nk + nc + i].ty for i in rx]
    y_types = out_types[nc:]

    def step(*vals):
        r_c = vals[:len(rc)]
        acc = vals[len(rc):len(rc) + len(lc)]
        ct_c = vals[len(rc) + len(lc):len(rc) + len(lc) + nc]
        rest = vals[len(rc) + len(lc) + nc:]
        r_x, ct_y = rest[:len(rx)], rest[len(rx):]
        outs = eval_graph(bwd, list(r_c) + list(r_x) + list(ct_c) + list(ct_y))
        d_lc, d_c, d_lx = outs[:len(lc)], outs[len(lc):len(lc) + nc], outs[len(lc) + nc:]
        return [ad.add(a, d) for a, d in zip(acc, d_lc)] + list(d_c) + list(d_lx)

    # a zero cotangent of a ys stack is not materialised: each step makes its zero row
    y_live = [not is_zero(c) for c in cts[nc:]]

    def step_rows(*vals):
        head, rows = vals[:len(vals) - sum(y_live)], iter(vals[len(vals) - sum(y_live):])
        ct_y = [next(rows) if lv else ad.zeros(t) for lv, t in zip(y_live, y_types)]
        return step(*head, *ct_y)

    t_body = _closed(step_rows, [body.invars[i].ty for i in rc] + lc_types + c_types +
                     rx_types + [t for t, lv in zip(y_types, y_live) if lv])
    ct_carry = [_as_value(c, t) for c, t in zip(cts[:nc], c_types)]
    ct_ys = [c for c, lv in zip(cts[nc:], y_live) if lv]
    if length is None and not rx and not ct_ys:
        raise NotImplementedError("tracejit: internal error: transposing a scan of run-time "
                                  "length with no stack left to count its steps")
    acc0 = [ad.zeros(t) for t in lc_types]
    outs = scan_p.bind(*[consts[i] for i in rc], *acc0, *ct_carry, *[xs[i] for i in rx],
                       *ct_ys, body=t_body, length=length, reverse=not reverse,
                       n_consts=len(rc), n_carry=len(lc) + nc)
    ct_lc, ct_c, ct_lx = outs[:len(lc)], outs[len(lc):len(lc) + nc], outs[len(lc) + nc:]
    result = [None] * len(args)
    for i, c in zip(lc, ct_lc):
        result[i] = c
    for i, c in enumerate(ct_c):
        if is_undefined(carry[i]):
            result[nk + i] = c
    for i, c in zip(lx, ct_lx):
        result[nk + nc + i] = c
    del n_in
    return result


__all__ = ["cond_jvp", "cond_partial_eval", "cond_transpose", "scan_jvp", "scan_partial_eval",
           "scan_transpose", "depends", "UndefinedPrimal"]      # while: transforms/while_ad.py


# ---------------------------------------------------------------------------------------------
# remat (checkpoint)

def remat_jvp(primals, tangents, *, call, policy):
    from ..checkpoint import remat_p
    diff = [not is_zero(t) for t in tangents]
    jg, _ = jvp_graph(call, diff)
    n = len(call.outvars)
    outs = remat_p.bind(*primals, *[t for t, d in zip(tangents, diff) if d], call=jg,
                        policy=policy)
    return outs[:n], outs[n:]


def remat_partial_eval(eqn: Eqn, known):
    """Known: the region's outputs only (no residuals are kept). Unknown: the JVP'd region,
    whose transpose recomputes the residuals from the region's inputs."""
    call = eqn.params["call"]
    unknown_out = depends(call, [not k for k in known])
    if all(unknown_out):
        return None
    fwd, _, _, ki, _, ko, _ = _split(call, [not k for k in known], unknown_out)
    fwd = fwd.replace(outvars=fwd.outvars[:len(ko)])
    k_eqn = Eqn(eqn.prim, tuple(eqn.invars[i] for i in ki), tuple(eqn.outvars[i] for i in ko),
                dict(eqn.params, call=fwd), eqn.source)
    dead = tuple(v if u else Var(v.ty) for v, u in zip(eqn.outvars, unknown_out))
    return [k_eqn], [Eqn(eqn.prim, eqn.invars, dead, dict(eqn.params), eqn.source)]


def remat_transpose(cts, *args, call, policy):
    undefined = [is_undefined(x) for x in args]
    unknown_out = depends(call, undefined)
    fwd, lin, n_res, ki, ui, ko, uo = _split(call, undefined, unknown_out)
    res = eval_graph(fwd, [args[i] for i in ki])[len(ko):]          # recomputed here
    bwd = transpose_graph(lin, n_res, [tangent_type(call.outvars[i].ty) for i in uo])
    ct_u = [_as_value(cts[i], tangent_type(call.outvars[i].ty)) for i in uo]
    outs = eval_graph(bwd, list(res) + ct_u)
    result = [None] * len(args)
    for i, c in zip(ui, outs):
        result[i] = c
    return result
