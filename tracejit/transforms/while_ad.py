"""Differentiation of ``while`` and ``while_record`` (the taped forward pass of a while loop's
reverse mode); the design is in transforms/control_ad.py's docstring ("while")."""
from __future__ import annotations

import numpy as np

from .. import ad_util as ad
from ..ad_util import Zero, differentiable, is_zero, tangent_type
from ..core import eval_graph
from ..ir import Eqn, Graph, Type, Var
from .control_ad import (_as_value, _carry_fixed_point, _closed, _fresh_inputs, _reorder,
                         _split_stored, _while_arity, depends)
from .jvp import jvp_graph


def _while_jvp(primals, tangents, params, record):
    from ..ops.control import while_p, while_record_p
    prim = while_record_p if record else while_p
    cond, body = params["cond"], params["body"]
    ncc, nbc, nc, ny = _while_arity(params, record)
    n_out = nc + ny
    bd = [not is_zero(t) for t in tangents[ncc:ncc + nbc]]
    c_types = body.in_types[nbc:]
    cd0 = [not is_zero(t) and differentiable(ty) for t, ty in
           zip(tangents[ncc + nbc:], c_types)]

    def carry_out_nonzero(cd):
        _, zero_out = jvp_graph(body, bd + cd)
        return [not z and differentiable(ty) for z, ty in zip(zero_out[:nc], c_types)]

    cd = _carry_fixed_point(carry_out_nonzero, cd0)
    jg, zero_out = jvp_graph(body, bd + cd)
    yd = [not z and differentiable(ty) for z, ty in zip(zero_out[nc:], body.out_types[nc:])]
    if not any(cd) and not any(yd):
        outs = prim.bind(*primals, **params)
        return outs, [Zero(tangent_type(ad.ty(o))) for o in outs]
    n_in = len(body.invars)
    bt = [n_in + i for i in range(sum(bd))]
    ct_ = [n_in + sum(bd) + i for i in range(sum(cd))]
    in_order = list(range(nbc)) + bt + list(range(nbc, n_in)) + ct_
    out_order = list(range(nc)) + [n_out + i for i in range(nc) if cd[i]] + \
        list(range(nc, n_out)) + [n_out + nc + j for j in range(ny) if yd[j]]
    new_body = _reorder(jg, in_order, out_order)
    t_types = [tangent_type(t) for t, d in zip(c_types, cd) if d]
    new_cond = _fresh_inputs(cond, t_types, len(cond.invars))
    cc, bc, carry = primals[:ncc], primals[ncc:ncc + nbc], primals[ncc + nbc:]
    b_t = [t for t, d in zip(tangents[ncc:ncc + nbc], bd) if d]
    c_t = [_as_value(t, ty) for t, ty, d in zip(tangents[ncc + nbc:], c_types, cd) if d]
    new = dict(params, cond=new_cond, body=new_body, n_body_consts=nbc + len(b_t))
    if record:
        new["n_carry"] = nc + len(c_t)
    outs = prim.bind(*cc, *bc, *b_t, *carry, *c_t, **new)
    it = iter(outs[nc:nc + len(c_t)])
    t_carry = [next(it) if d else Zero(tangent_type(ty)) for d, ty in zip(cd, c_types)]
    if not record:
        return outs[:nc], t_carry
    rest = outs[nc + len(c_t):]               # live, ys, ys tangents
    live, ys, ys_t = rest[0], rest[1:1 + ny], iter(rest[1 + ny:])
    t_ys = [next(ys_t) if d else Zero(tangent_type(ad.ty(y))) for d, y in zip(yd, ys)]
    return list(outs[:nc]) + [live] + list(ys), \
        t_carry + [Zero(tangent_type(ad.ty(live)))] + t_ys


def while_jvp(primals, tangents, **params):
    return _while_jvp(primals, tangents, params, record=False)


def while_record_jvp(primals, tangents, **params):
    return _while_jvp(primals, tangents, params, record=True)


def _while_partial_eval(eqn: Eqn, known, record):
    """Known: a ``while_record`` running the primal loop (known carries and records) that also
    records, per step, the residuals the linear part needs (its tape; loop-invariant residuals
    are not recorded) and which steps ran (``live``). Unknown: a ``scan`` of run-time length
    over the tape: the linear recurrence of the tangent carries, where a step that did not run
    (a finished lane under vmap) keeps its carry."""
    from ..numpy.logic import where
    from ..ops.control import scan_p, while_record_p
    p = eqn.params
    cond, body = p["cond"], p["body"]
    ncc, nbc, nc, ny = _while_arity(p, record)
    if not all(known[:ncc]):
        return None
    unknown_in = [not k for k in known[ncc:]]
    cu = _carry_fixed_point(lambda cu: depends(body, unknown_in[:nbc] + cu)[:nc],
                            unknown_in[nbc:])
    if any(depends(cond, [False] * ncc + cu)):
        return None                                   # the trip count depends on tangents
    unknown_out = depends(body, unknown_in[:nbc] + cu)
    unknown_out[:nc] = cu
    fwd, lin, n_res, ki, ui, ko, uo = _split_stored(body, unknown_in[:nbc] + cu,
                                                    unknown_out)
    fwd_res = list(fwd.outvars[len(ko):])
    const_of = {id(body.invars[i]): i for i in ki if i < nbc}
    invariant = [id(r) in const_of for r in fwd_res]
    stacked = [Var(Type(r.ty.dtype, (None,) + r.ty.shape))
               for r, c in zip(fwd_res, invariant) if not c]
    live = eqn.outvars[nc] if record else Var(Type(np.dtype(bool), (None,)))
    outs = eqn.outvars

    def out(i):                                      # body output i -> the equation's result
        return outs[i] if i < nc else outs[i + 1]

    ins = eqn.invars
    k_consts = [i for i in ki if i < nbc]
    k_carry = [i for i in ki if i >= nbc]
    fwd_rec = fwd.replace(outvars=tuple(fwd.outvars[:len(ko)]) +
                          tuple(r for r, c in zip(fwd_res, invariant) if not c))
    k_eqn = Eqn(while_record_p,
                tuple(ins[:ncc]) + tuple(ins[ncc + i] for i in k_consts + k_carry),
                tuple(out(i) for i in ko if i < nc) + (live,) +
                tuple(out(i) for i in ko if i >= nc) + tuple(stacked),
                dict(cond=_drop_unused_inputs(cond, [True] * ncc + [not u for u in cu]),
                     body=fwd_rec, n_cond_consts=ncc, n_body_consts=len(k_consts),
                     n_carry=len(k_carry)), eqn.source)
    # the linear scan: consts (invariant residuals, unknown body consts), carry (unknown
    # carries), xs (live, recorded residuals)
    r_inv = [j for j, c in enumerate(invariant) if c]
    r_it = [j for j, c in enumerate(invariant) if not c]
    u_consts = [i for i in ui if i < nbc]
    u_carry = [i for i in ui if i >= nbc]
    u_types = [v.ty for v in lin.invars[n_res:]]
    n_uc, n_car = len(u_consts), len(u_carry)

    def step(*vals):
        r_inv_v, rest = vals[:len(r_inv)], vals[len(r_inv):]
        u_c, carry, rest = rest[:n_uc], rest[n_uc:n_uc + n_car], rest[n_uc + n_car:]
        live_i, r_it_v = rest[0], rest[1:]
        res = [None] * n_res
        for j, v in zip(r_inv, r_inv_v):
            res[j] = v
        for j, v in zip(r_it, r_it_v):
            res[j] = v
        new = eval_graph(lin, res + list(u_c) + list(carry))
        return [where(live_i, n, c) for n, c in zip(new[:n_car], carry)] + list(new[n_car:])

    g = _closed(step, [fwd_res[j].ty for j in r_inv] + u_types + [Type(np.dtype(bool), ())] +
                [fwd_res[j].ty for j in r_it])
    u_eqn = Eqn(scan_p,
                tuple(ins[ncc + const_of[id(fwd_res[j])]] for j in r_inv) +
                tuple(ins[ncc + i] for i in u_consts + u_carry) + (live,) + tuple(stacked),
                tuple(out(i) for i in uo),
                dict(body=g, length=None, reverse=False, n_consts=len(r_inv) + n_uc,
                     n_carry=n_car), eqn.source)
    return [k_eqn], [u_eqn]


def while_partial_eval(eqn: Eqn, known):
    return _while_partial_eval(eqn, known, record=False)


def while_record_partial_eval(eqn: Eqn, known):
    return _while_partial_eval(eqn, known, record=True)


def _drop_unused_inputs(graph: Graph, keep) -> Graph:
    return graph.replace(invars=tuple(v for v, k in zip(graph.invars, keep) if k))


def while_transpose(cts, *args, **params):
    raise NotImplementedError(
        "tracejit: internal error: a while loop reached transposition whole; its partial "
        "evaluation should have split it into a recording loop and a linear scan")


while_record_transpose = while_transpose
