"""The batching transform: a graph traced for one example becomes a graph for a batch (the
public ``vmap`` over it is in tracejit/vmapped.py).

Every batched value carries its batch dimension at axis 0 (``bdim`` 0) or is unbatched
(``bdim`` None); rules move axes so this holds. Most primitives need no rule of their own: the
defaults come from the primitive's kind (elementwise: broadcast operands to the batch;
reduction and scan: shift ``axes``/``axis`` by one). Structural, contraction and control-flow
primitives have rules here, keyed by primitive (a primitive's own ``batch`` slot overrides).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import eval_graph, literal_value, make_graph, type_of
from ..errors import ShapeError
from ..ir import Graph, Literal, Type
from ..ops import contraction as ct
from ..ops import control as cf
from ..ops import elementwise as ew
from ..ops import reductions as red
from ..ops import structural as st


# ---------------------------------------------------------------------------------------------
# helpers

def _shape(x):
    return type_of(x).shape


def to_batched(x, d, B):
    """``x`` with its batch dim at axis 0 (broadcasting an unbatched value to ``B``)."""
    if d == 0:
        return x
    if d is None:
        shape = _shape(x)
        if isinstance(x, Literal):
            x = np.asarray(x.value)
        return st.broadcast_in_dim_p.bind(x, shape=(B,) + shape,
                                          dims=tuple(range(1, len(shape) + 1)))
    nd = len(_shape(x))
    perm = (d,) + tuple(i for i in range(nd) if i != d)
    return st.transpose_p.bind(x, perm=perm)


def _home(x) -> int:
    """Where a batched value keeps its batch axis: 0, or 1 for a stack (``T[?,B,...]``)."""
    return 1 if type_of(x).dynamic else 0


def move_batch(x, src, dst):
    """Move axis ``src`` of ``x`` to position ``dst``."""
    if src == dst:
        return x
    nd = len(_shape(x))
    order = [i for i in range(nd) if i != src]
    order.insert(dst, src)
    return st.transpose_p.bind(x, perm=tuple(order))


# ---------------------------------------------------------------------------------------------
# default rules by kind

def _elementwise_rule(prim, args, dims, B, **params):
    per = [_shape(x)[1:] if d == 0 else _shape(x) for x, d in zip(args, dims)]
    common = next((s for s in per if s != ()), ())
    ops = []
    for x, d, s in zip(args, dims, per):
        if d is None:
            ops.append(x if s == () else to_batched(x, None, B))
        elif s != common:                         # a batched per-example scalar
            ops.append(st.broadcast_in_dim_p.bind(x, shape=(B,) + common, dims=(0,)))
        else:
            ops.append(x)
    return prim.bind(*ops, **params), 0


def _shift_rule(prim, args, dims, B, **params):
    x = args[0]
    p = dict(params)
    if "axes" in p:
        p["axes"] = tuple(a + 1 for a in p["axes"])
    if "axis" in p:
        p["axis"] = p["axis"] + 1
    return prim.bind(x, **p), 0


# ---------------------------------------------------------------------------------------------
# structural rules

def _structural(prim, args, bdims, B, **p):
    if prim is st.broadcast_in_dim_p:
        return prim.bind(args[0], shape=(B,) + tuple(p["shape"]),
                         dims=(0,) + tuple(d + 1 for d in p["dims"])), 0
    if prim is st.reshape_p:
        return prim.bind(args[0], shape=(B,) + tuple(p["shape"])), 0
    if prim is st.transpose_p:
        return prim.bind(args[0], perm=(0,) + tuple(q + 1 for q in p["perm"])), 0
    if prim is st.slice_p:
        return prim.bind(args[0], start=(0,) + p["start"], limit=(B,) + p["limit"],
                         step=(1,) + p["step"]), 0
    if prim is st.rev_p:
        return prim.bind(args[0], axes=tuple(a + 1 for a in p["axes"])), 0
    if prim is st.concatenate_p:
        ops = [to_batched(x, d, B) for x, d in zip(args, bdims)]
        return prim.bind(*ops, axis=p["axis"] + 1), 0
    if prim is st.pad_p:
        x, value = args
        if bdims[1] is not None:
            raise NotImplementedError("vmap of pad with a batched padding value")
        return prim.bind(to_batched(x, bdims[0], B), value, lo=(0,) + p["lo"],
                         hi=(0,) + p["hi"]), 0
    if prim is st.take_p:
        return _take_rule(args, bdims, B, p["axis"])
    if prim is st.scatter_p:
        return _scatter_rule(args, bdims, B, p["axis"], p["mode"])
    raise NotImplementedError(f"no batching rule for {prim.name}")


def _flat_positions(idx, n, B):
    """Batched indices (B, *I) into axis of size n -> positions in a (B*n) flattened axis."""
    from ..numpy.indexing import _normalize_index
    from ..numpy.math import add
    idx = _normalize_index(idx, n, 0)
    offs = st.iota_p.bind(dtype=dtypes.int64, shape=_shape(idx), axis=0)
    from ..numpy.math import multiply
    return add(idx, multiply(offs, n))


def _axis_first(x, axis):
    """(B, ...) -> (B * n_axis, other dims...) with the per-example ``axis`` merged into B."""
    moved = move_batch(x, axis + 1, 1)
    ms = _shape(moved)
    return st.reshape_p.bind(moved, shape=(ms[0] * ms[1],) + ms[2:])


def _take_rule(args, dims, B, axis):
    x, idx = (to_batched(a, d, B) for a, d in zip(args, dims))
    xs, ishape = _shape(x), _shape(idx)
    n = xs[axis + 1]
    flat = _axis_first(x, axis)
    pos = _flat_positions(idx, n, B)
    out = st.take_p.bind(flat, pos, axis=0)           # (B, *I, x[:axis], x[axis+1:])
    ni, na = len(ishape) - 1, axis
    # want (B, x[:axis], I, x[axis+1:])
    perm = (0,) + tuple(range(1 + ni, 1 + ni + na)) + tuple(range(1, 1 + ni)) + \
        tuple(range(1 + ni + na, len(_shape(out))))
    return st.transpose_p.bind(out, perm=perm) if perm != tuple(range(len(perm))) else out, 0


def _scatter_rule(args, dims, B, axis, mode):
    x, idx, upd = (to_batched(a, d, B) for a, d in zip(args, dims))
    xs, ishape = _shape(x), _shape(idx)
    n = xs[axis + 1]
    flat = _axis_first(x, axis)                       # (B*n, x[:axis], x[axis+1:])
    pos = _flat_positions(idx, n, B)
    ni, na = len(ishape) - 1, axis
    # upd: (B, x[:axis], I, x[axis+1:]) -> (B, I, x[:axis], x[axis+1:]) -> (B*prod(I), ...)
    perm = (0,) + tuple(range(1 + na, 1 + na + ni)) + tuple(range(1, 1 + na)) + \
        tuple(range(1 + na + ni, len(_shape(upd))))
    u = st.transpose_p.bind(upd, perm=perm) if perm != tuple(range(len(perm))) else upd
    us = _shape(u)
    count = int(np.prod(us[:1 + ni], dtype=np.int64))
    u = st.reshape_p.bind(u, shape=(count,) + us[1 + ni:])
    p = st.reshape_p.bind(pos, shape=(count,))
    out = st.scatter_p.bind(flat, p, u, axis=0, mode=mode)
    moved_shape = (B, n) + tuple(d for i, d in enumerate(xs[1:]) if i != axis)
    out = st.reshape_p.bind(out, shape=moved_shape)
    return move_batch(out, 1, axis + 1), 0


def _dot_rule(args, dims, B, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    lhs, rhs = args
    dl, dr = dims
    if dl is not None and dr is not None:
        shift = lambda axes: tuple(a + 1 for a in axes)   # noqa: E731
        out = ct.dot_general_p.bind(lhs, rhs, contract=(shift(lc), shift(rc)),
                                    batch=((0,) + shift(lb), (0,) + shift(rb)))
        return out, 0
    nb = len(lb)
    if dl is not None:
        shift = lambda axes: tuple(a + 1 for a in axes)   # noqa: E731
        out = ct.dot_general_p.bind(lhs, rhs, contract=(shift(lc), rc), batch=(shift(lb), rb))
        return move_batch(out, nb, 0), 0
    shift = lambda axes: tuple(a + 1 for a in axes)       # noqa: E731
    out = ct.dot_general_p.bind(lhs, rhs, contract=(lc, shift(rc)), batch=(lb, shift(rb)))
    n_lhs_free = len(_shape(lhs)) - len(lc) - len(lb)
    return move_batch(out, nb + n_lhs_free, 0), 0


# ---------------------------------------------------------------------------------------------
# control flow

def batch_graph(graph: Graph, in_dims, B, force_out=None):
    """Batch a closed graph: (new graph taking batched inputs at axis 0, out dims).

    ``force_out[i]`` makes output i batched even if it does not depend on the batch.
    """
    in_types = [Type(v.ty.dtype, ((B,) + v.ty.shape) if d is not None else v.ty.shape,
                     v.ty.weak) for v, d in zip(graph.invars, in_dims)]
    box = []

    def fn(*args):
        outs, odims = batch_eval(graph, list(args), list(in_dims), B)
        if force_out is not None:
            outs = [to_batched(o, d, B) if f and d is None else o
                    for o, d, f in zip(outs, odims, force_out)]
            odims = [0 if f else d for d, f in zip(odims, force_out)]
        box.append(odims)
        return outs

    new, captured = make_graph(fn, in_types)
    assert not captured, "a batched sub-graph captured an outer value"
    return new, box[0]


def _cond_rule(args, dims, B, *, branches):
    index, ops, odims = args[0], args[1:], dims[1:]
    if dims[0] is not None:
        # a batched predicate: run every branch on the whole batch, select per example
        from ..numpy.math import clip, equal
        from ..numpy.logic import where
        outs = None
        idx = clip(index, 0, len(branches) - 1)
        for k, g in enumerate(branches):
            res, rdims = batch_eval(g, list(ops), list(odims), B)
            res = [to_batched(r, d, B) for r, d in zip(res, rdims)]
            if outs is None:
                outs = res
            else:
                sel = equal(idx, k)
                outs = [where(_bcast_pred(sel, r), r, o) for r, o in zip(res, outs)]
        return outs, [0] * len(outs)
    results = [batch_graph(g, odims, B) for g in branches]
    force = [any(r[1][i] is not None for r in results) for i in range(len(results[0][1]))]
    graphs = [batch_graph(g, odims, B, force)[0] for g in branches]
    outs = cf.cond_p.bind(index, *[o for o in ops], branches=tuple(graphs))
    return outs, [0 if f else None for f in force]


def _bcast_pred(pred, like):
    """A (B,) predicate broadcast against a (B, ...) value."""
    s = _shape(like)
    if len(s) == 1:
        return pred
    return st.broadcast_in_dim_p.bind(pred, shape=s, dims=(0,))


def _fixed_point(make, carry_dims):
    """Iterate until batched-ness of the carry is stable; ``make(dims) -> (graph, out_dims)``."""
    dims = list(carry_dims)
    for _ in range(len(dims) + 2):
        graph, out = make(dims)
        new = [0 if (d is not None or o is not None) else None for d, o in zip(dims, out)]
        if new == dims:
            return graph, dims
        dims = new
    raise AssertionError("batching fixed point did not converge")


def _while_rule(args, dims, B, *, cond, body, n_cond_consts, n_body_consts):
    return _batch_while(args, dims, B, cond, body, n_cond_consts, n_body_consts, None)


def _while_record_rule(args, dims, B, *, cond, body, n_cond_consts, n_body_consts, n_carry):
    return _batch_while(args, dims, B, cond, body, n_cond_consts, n_body_consts, n_carry)


def _batch_while(args, dims, B, cond, body, ncc, nbc, n_carry):
    """Batch a ``while`` (``n_carry`` None) or a ``while_record`` (its records, stacks, come out
    batched at axis 1). With a batched predicate the loop runs while any lane is active and
    finished lanes keep their values; a ``while_record`` then records in ``live`` which lanes
    were still running at each step (the backward scan leaves the others' carries alone)."""
    record = n_carry is not None
    nc = n_carry if record else len(body.outvars)
    ny = len(body.outvars) - nc
    prim = cf.while_record_p if record else cf.while_p
    params = dict(n_carry=nc) if record else {}
    cc, bc, carry = args[:ncc], args[ncc:ncc + nbc], args[ncc + nbc:]
    ccd, bcd, cd = dims[:ncc], dims[ncc:ncc + nbc], dims[ncc + nbc:]

    def make_body(carry_dims):
        g, out = batch_graph(body, list(bcd) + list(carry_dims), B,
                             force_out=[d is not None for d in carry_dims] + [False] * ny)
        return g, out[:nc]

    _, cdims = _fixed_point(make_body, cd)
    cg, (pd,) = batch_graph(cond, list(ccd) + cdims, B)
    if pd is None:
        bg, out = batch_graph(body, list(bcd) + cdims, B,
                              force_out=[d is not None for d in cdims] + [False] * ny)
        carry = [to_batched(x, None, B) if d is not None and od is None else x
                 for x, od, d in zip(carry, cd, cdims)]
        outs = prim.bind(*cc, *bc, *carry, cond=cg, body=bg, n_cond_consts=ncc,
                         n_body_consts=nbc, **params)
        ydims = [None] + [None if d is None else 1 for d in out[nc:]] if record else []
        return outs, cdims + ydims
    all_dims = [0] * nc
    carry = [to_batched(x, d, B) for x, d in zip(carry, cd)]
    cond_b, _ = batch_graph(cond, list(ccd) + all_dims, B)
    body_b, _ = batch_graph(body, list(bcd) + all_dims, B, force_out=[True] * (nc + ny))
    from ..numpy.logic import where
    from ..numpy.reductions import any as any_

    def any_cond(*xs):
        return [any_(eval_graph(cond_b, list(xs))[0])]

    def masked_body(*xs):
        consts_c, consts_b, c = xs[:ncc], xs[ncc:ncc + nbc], xs[ncc + nbc:]
        active = eval_graph(cond_b, list(consts_c) + list(c))[0]
        new = eval_graph(body_b, list(consts_b) + list(c))
        kept = [where(_bcast_pred(active, n), n, o) for n, o in zip(new[:nc], c)]
        return kept + ([active] + list(new[nc:]) if record else [])

    cc_types = [type_of(x) for x in cc]
    bc_types = [type_of(x) for x in bc]
    c_types = [Type(type_of(x).dtype, type_of(x).shape) for x in carry]
    g_cond, cap1 = make_graph(any_cond, cc_types + c_types)
    g_body, cap2 = make_graph(masked_body, cc_types + bc_types + c_types)
    assert not cap1 and not cap2
    outs = prim.bind(*cc, *cc, *bc, *carry, cond=g_cond, body=g_body, n_cond_consts=ncc,
                     n_body_consts=ncc + nbc, **params)
    if not record:
        return outs, all_dims
    # outs: carries, live (every step ran for the batch as a whole), per-lane activity, records
    return list(outs[:nc]) + list(outs[nc + 1:]), all_dims + [1] + [1] * ny


def _scan_rule(args, dims, B, *, body, length, reverse, n_consts, n_carry):
    consts, carry, xs = args[:n_consts], args[n_consts:n_consts + n_carry], \
        args[n_consts + n_carry:]
    kd, cd, xd = dims[:n_consts], dims[n_consts:n_consts + n_carry], dims[n_consts + n_carry:]
    xs = [move_batch(x, 0, 1) if d == 0 else x for x, d in zip(xs, xd)]    # stacks: at 1
    x_body_dims = [0 if d is not None else None for d in xd]
    n_ys = len(body.outvars) - n_carry

    def make(carry_dims):
        g, out = batch_graph(body, list(kd) + list(carry_dims) + x_body_dims, B,
                             force_out=[d is not None for d in carry_dims] + [False] * n_ys)
        return g, out[:n_carry]

    _, cdims = _fixed_point(make, cd)
    g, out = batch_graph(body, list(kd) + cdims + x_body_dims, B,
                         force_out=[d is not None for d in cdims] + [False] * n_ys)
    carry = [to_batched(x, None, B) if d is not None and od is None else
             (to_batched(x, od, B) if d is not None else x)
             for x, od, d in zip(carry, cd, cdims)]
    outs = cf.scan_p.bind(*consts, *carry, *xs, body=g, length=length, reverse=reverse,
                          n_consts=n_consts, n_carry=n_carry)
    ydims = out[n_carry:]
    ys = [move_batch(y, 1, 0) if d is not None and length is not None else y
          for y, d in zip(outs[n_carry:], ydims)]
    return list(outs[:n_carry]) + ys, cdims + [None if d is None else _home(y)
                                               for y, d in zip(ys, ydims)]


def _remat_rule(args, dims, B, *, call, policy):
    from ..checkpoint import remat_p
    g, odims = batch_graph(call, dims, B)
    return remat_p.bind(*args, call=g, policy=policy), odims


def _inline_call_rule(args, dims, B, *, call, **params):
    """custom_jvp/custom_vjp calls: batched by batching the primal function (the custom rule
    still applies when differentiating inside vmap; grad of vmap differentiates the primal)."""
    return batch_eval(call, list(args), list(dims), B)


def _rules():
    from ..checkpoint import remat_p
    from ..core import REGISTRY
    rules = {ct.dot_general_p: _dot_rule, cf.cond_p: _cond_rule, cf.while_p: _while_rule,
             cf.while_record_p: _while_record_rule, cf.scan_p: _scan_rule, remat_p: _remat_rule}
    for name in ("custom_jvp_call", "custom_vjp_call"):
        if name in REGISTRY:
            rules[REGISTRY[name]] = _inline_call_rule
    return rules


_RULES = _rules()


def apply_rule(prim, args, dims, B, params):
    """Batch one equation: (outputs, out dims) with every batched value at axis 0 (a batched
    stack, whose axis 0 is its run-time length, at axis 1)."""
    args = [to_batched(x, d, B) if d not in (None, _home(x)) else x for x, d in zip(args, dims)]
    dims = [None if d is None else _home(x) for x, d in zip(args, dims)]
    if prim.batch is not None:
        return prim.batch(args, dims, B, **params)
    if prim in _RULES:
        return _RULES[prim](args, dims, B, **params)
    if prim.kind == "elementwise":
        return _elementwise_rule(prim, args, dims, B, **params)
    if prim.kind == "reduction":
        return _shift_rule(prim, args, dims, B, **params)
    if prim.kind == "structural":
        return _structural(prim, args, dims, B, **params)
    raise NotImplementedError(f"vmap: no batching rule for primitive {prim.name!r}")


def batch_eval(graph: Graph, args, dims, B):
    """Evaluate ``graph`` on batched values: (outputs, out dims)."""
    env = {}

    def read(a):
        if isinstance(a, Literal):
            return a, None
        return env[id(a)]

    for v, x, d in zip(graph.invars, args, dims):
        env[id(v)] = (x, d)
    for v, x in zip(graph.constvars, graph.constvals):
        env[id(v)] = (x, None)
    for eqn in graph.eqns:
        ins = [read(a) for a in eqn.invars]
        vals = [x for x, _ in ins]
        ds = [d for _, d in ins]
        if all(d is None for d in ds):
            outs = eqn.prim.bind(*vals, **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            odims = [None] * len(outs)
        else:
            outs, odims = apply_rule(eqn.prim, vals, ds, B, eqn.params)
            if not eqn.prim.multiple_results:
                outs, odims = [outs], [odims]
        for v, x, d in zip(eqn.outvars, outs, odims):
            env[id(v)] = (x, d)
    res = [read(a) for a in graph.outvars]
    return [x for x, _ in res], [d for _, d in res]
