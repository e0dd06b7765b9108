"""Simplification passes over the IR (Graph -> Graph), on by default.

- ``simplify_identities``: IEEE-exact identities only: x*1, x-0, x+(-0.0) (x+0.0 is NOT x for
  x = -0.0, so it stays for floats), neg(neg x), convert to the same dtype, reshape of reshape,
  transpose of transpose, a reshape/transpose/broadcast that changes nothing.
- ``fold_constants``: equations whose operands are all literals become a literal.
- ``sink_negations``: float negations carried into the products and sums that use them
  ((-a)*b = -(a*b), a + (-b) = a - b, ...), exact but for the sign of a NaN (see there).
- ``contract_broadcasts``: a dot_general with a broadcast literal operand becomes a sum.
- ``cse``: equal equations (same primitive, params and operands; either order for add and mul)
  are computed once (never two with an effect).
- ``dce``: equations whose results are unused are dropped (not those that can raise or have
  an effect, ``has_effect``: a print).
- ``roll`` (last, after the fixed point; ``config.roll_loops``): chains of repeated copies of
  one body become a ``scan`` (``transforms/roll.py``); not run by AD's ``inline=False`` calls.
- ``inline_calls`` (first): custom_jvp/custom_vjp calls become their primal equations and
  stop_gradient disappears; their rules matter only to AD, which runs on the raw trace.
Each pass preserves the graph's interface; ``simplify`` runs them to a fixed point and verifies
the IR after every pass when ``config.check_ir`` is on.
"""
from __future__ import annotations

import sys

import numpy as np

from .bugreport import compiler_stage
from .config import config
from .core import full_collections_deferred
from .ir import Eqn, Graph, Literal, Type, Var, print_graph, verify
from .ops import elementwise as ew
from .ops import reductions as red
from .ops.contraction import dot_general_p
from .ops.control import while_p
from .ops import structural as st
from .transforms.roll import roll
from .transforms.scan_prune import hoist_invariants, prune_scan


class _Subst:
    """Var replacement map applied to operands (keys are ids of vars, which the graph being
    rewritten keeps alive, so no literal shares one)."""

    def __init__(self):
        self.map: dict[int, object] = {}

    def __call__(self, a):
        get = self.map.get
        b = get(id(a))
        while b is not None:
            a = b
            b = get(id(a))
        return a

    def set(self, var, atom):
        self.map[id(var)] = atom


def _rebuild(graph, eqns, subst) -> Graph:
    """The graph with ``eqns``, whose operands every pass substitutes as it walks (a var is
    replaced while its definition is visited, before any use), and substituted outputs."""
    if not subst.map:
        return graph.replace(eqns=eqns)
    return graph.replace(eqns=eqns, outvars=tuple(subst(a) for a in graph.outvars))


def _with_ins(eqn, ins: tuple) -> Eqn:
    """``eqn`` with operands ``ins`` (the same object when nothing changed; atoms compare by
    identity)."""
    if ins == eqn.invars:
        return eqn
    return Eqn(eqn.prim, ins, eqn.outvars, eqn.params, eqn.source)


def dce(graph: Graph) -> Graph:
    """Drop equations none of whose outputs are used (and the unused records of a
    ``while_record``: a loop whose tape nobody reads becomes a plain ``while``).

    An unused equation that can raise at run time stays (``_may_raise``): NumPy raises
    IndexError for ``a[i] = v`` with ``i`` out of range even when ``a`` is overwritten later, so
    dropping the write would drop the error. It goes only when a kept equation checks the same
    index against the same length (the gradient of ``x[i]`` keeps the scatter of the same ``i``
    and needs no primal gather)."""
    kept, live, checked = _live(graph, ())
    dead = [e for e in graph.eqns if _may_raise(e) and id(e) not in kept
            and not (e.prim.name in ("take", "scatter") and _index_check(e) in checked)]
    if dead:
        kept, live, _ = _live(graph, {id(e) for e in dead})
    eqns = [_prune_records(e, live) if e.prim.name == "while_record" else kept[id(e)]
            for e in graph.eqns if id(e) in kept]
    used_consts = [(c, v) for c, v in zip(graph.constvars, graph.constvals) if id(c) in live]
    return graph.replace(eqns=eqns, constvars=tuple(c for c, _ in used_consts),
                         constvals=tuple(v for _, v in used_consts))


def _live(graph: Graph, roots: set) -> tuple[dict, set, set]:
    """The kept equations (those the outputs use, and the equations ``roots``) by id, each
    mapped to what replaces it (a scan without its unused parts: ``prune_scan``), the ids of
    the vars they use, and the index checks (``_index_check``) the kept equations make."""
    live = {id(a) for a in graph.outvars if isinstance(a, Var)}
    kept, checked = {}, set()
    for eqn in reversed(graph.eqns):
        if id(eqn) in roots or any(id(v) in live for v in eqn.outvars):
            new = prune_scan(eqn, live, dce, has_effect) if eqn.prim.name == "scan" else eqn
            kept[id(eqn)] = new
            live.update(id(a) for a in new.invars if isinstance(a, Var))
            if eqn.prim.name in ("take", "scatter"):
                checked.add(_index_check(eqn))
    return kept, live, checked


def _may_raise(eqn: Eqn) -> bool:
    """A run-time check, a gather/scatter whose index is computed (literal indices were
    checked while tracing), or an equation with an effect (``has_effect``)."""
    return eqn.prim.name == "check" or \
        eqn.prim.name in ("take", "scatter") and isinstance(eqn.invars[1], Var) or \
        has_effect(eqn)


def has_effect(eqn: Eqn) -> bool:
    """Whether ``eqn`` does something besides computing its results (``props["effect"]``,
    e.g. ``debug_print``), itself or in a sub-graph: such an equation is never dropped nor
    merged with an equal one, and the backend keeps effects in program order."""
    if eqn.prim.props.get("effect"):
        return True
    if eqn.prim.kind != "control" and not eqn.prim.props.get("inline"):
        return False
    for value in eqn.params.values():
        graphs = value if isinstance(value, tuple) else (value,)
        if any(isinstance(g, Graph) and any(has_effect(e) for e in g.eqns) for g in graphs):
            return True
    return False


def _index_check(eqn: Eqn) -> tuple:
    """What a gather or scatter checks: its index var against the length of its axis."""
    return id(eqn.invars[1]), eqn.invars[0].ty.shape[eqn.params["axis"]]


def _prune_records(eqn: Eqn, live) -> Eqn:
    """``eqn`` (a while_record) without the records no one reads (grad of a loop nested in a
    loop's body runs the inner forward loop twice, and only the second one's tape is used)."""
    p = eqn.params
    nc, body = p["n_carry"], p["body"]
    used = [id(v) in live for v in eqn.outvars[nc + 1:]]
    if all(used):
        return eqn
    body = dce(body.replace(outvars=body.outvars[:nc] +
                            tuple(v for v, u in zip(body.outvars[nc:], used) if u)))
    if not any(used) and id(eqn.outvars[nc]) not in live:
        params = {k: v for k, v in p.items() if k != "n_carry"}
        return Eqn(while_p, eqn.invars, eqn.outvars[:nc], dict(params, body=body), eqn.source)
    outs = eqn.outvars[:nc + 1] + tuple(v for v, u in zip(eqn.outvars[nc + 1:], used) if u)
    return Eqn(eqn.prim, eqn.invars, outs, dict(p, body=body), eqn.source)


def _param_key(value):
    if isinstance(value, (tuple, list)):
        return tuple(_param_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _param_key(v)) for k, v in value.items()))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def _atom_key(a):
    if isinstance(a, Literal):
        return ("lit", a.ty.dtype.str, a.ty.weak, a.value.tobytes())
    return id(a)


def _operand_order(key):
    return (1, key) if isinstance(key, tuple) else (0, key)


def cse(graph: Graph) -> Graph:
    """Reuse the first of several identical equations; add and mul match with their operands
    in either order (both are exactly commutative; max/min are not, for signed zeros)."""
    subst = _Subst()
    seen: dict = {}
    kept = []
    for eqn in graph.eqns:
        ins = tuple(subst(a) for a in eqn.invars)
        keys = tuple(_atom_key(a) for a in ins)
        if (eqn.prim is ew.add_p or eqn.prim is ew.mul_p) and \
                _operand_order(keys[1]) < _operand_order(keys[0]):
            keys = (keys[1], keys[0])
        key = (eqn.prim.name, _param_key(eqn.params) if eqn.params else (), keys)
        prev = seen.get(key)
        if prev is not None and not has_effect(eqn):
            for old, new in zip(eqn.outvars, prev.outvars):
                subst.set(old, new)
            continue
        new_eqn = _with_ins(eqn, ins)
        seen[key] = new_eqn
        kept.append(new_eqn)
    return _rebuild(graph, kept, subst)


def _foldable(eqn, ins) -> bool:
    return bool(ins) and all(isinstance(a, Literal) for a in ins) and \
        not eqn.prim.multiple_results and eqn.outvars[0].ty.shape == () and \
        eqn.prim.kind == "elementwise"


def fold_constants(graph: Graph) -> Graph:
    """Evaluate scalar equations whose operands are all literals."""
    subst = _Subst()
    kept = []
    for eqn in graph.eqns:
        ins = tuple(subst(a) for a in eqn.invars)
        if _foldable(eqn, ins):
            try:
                with np.errstate(all="ignore"):
                    value = eqn.prim.impl(*[a.value for a in ins], **eqn.params)
            except (ArithmeticError, ValueError):
                value = None                 # e.g. 2 ** -1 on ints: raised when the code runs
            if value is not None:
                subst.set(eqn.outvars[0], Literal(value, eqn.outvars[0].ty))
                continue
        kept.append(_with_ins(eqn, ins))
    return _rebuild(graph, kept, subst)


def _is_literal(a, value, *, negzero=None):
    if not isinstance(a, Literal):
        return False
    v = a.value
    if v != value:
        return False
    if negzero is not None and a.ty.dtype.kind in "fc":
        return bool(np.signbit(np.real(v))) == negzero
    return True


def simplify_identities(graph: Graph) -> Graph:
    """Rewrite IEEE-exact identities (see the module docstring)."""
    subst = _Subst()
    producer: dict[int, Eqn] = {}
    kept = []
    # constant arrays of ones and broadcasts of a literal 1 (the broadcast seed cotangent of a
    # gradient): x * ones = x
    ones = {id(c) for c, v in zip(graph.constvars, graph.constvals)
            if np.size(v) and np.asarray(v).dtype.kind == "f" and np.all(np.asarray(v) == 1)}
    for eqn in graph.eqns:
        ins = tuple(subst(a) for a in eqn.invars)
        eqn = _with_ins(eqn, ins)
        out = eqn.outvars[0] if eqn.outvars else None
        replacement = _identity(eqn, ins, out, producer)
        if replacement is None and eqn.prim is ew.mul_p:
            replacement = next((a for a, b in (ins, ins[::-1]) if isinstance(b, Var) and
                                id(b) in ones and _same_type(a, out)), None)
        if isinstance(replacement, Eqn):
            eqn = replacement
        elif replacement is not None:
            subst.set(out, replacement)
            continue
        for v in eqn.outvars:
            producer[id(v)] = eqn
        if eqn.prim is st.broadcast_in_dim_p and _is_literal(ins[0], 1) and \
                out.ty.dtype.kind == "f":
            ones.add(id(out))                # a broadcast seed of ones (e.g. sum's cotangent)
        kept.append(eqn)
    return _rebuild(graph, kept, subst)


def _same_type(a, out):
    return a.ty.shape == out.ty.shape and a.ty.dtype == out.ty.dtype


def _identity(eqn, ins, out, producer):
    p = eqn.prim
    if p is ew.mul_p:
        for a, b in (ins, ins[::-1]):
            # not complex: (nan+1j) * (1+0j) is nan+nanj by the product formula, not x
            if _is_literal(b, 1) and _same_type(a, out) and a.ty.dtype.kind in "iuf":
                return a
    elif p is ew.sub_p:
        if _is_literal(ins[1], 0) and _same_type(ins[0], out):
            return ins[0]
    elif p is ew.add_p:
        for a, b in (ins, ins[::-1]):
            # not complex: -0.0 + 0j adds +0.0 to the imaginary part (-0.0 -> +0.0)
            if _same_type(a, out) and ((_is_literal(b, 0, negzero=True) and
                                        a.ty.dtype.kind == "f") or
                                       (_is_literal(b, 0) and a.ty.dtype.kind in "biu")):
                return a
    elif p is ew.neg_p:
        src = producer.get(id(ins[0]))
        if src is not None and src.prim is ew.neg_p:
            return src.invars[0]
    elif p is ew.convert_p:
        if ins[0].ty.dtype == out.ty.dtype:
            return ins[0]
    elif p is st.reshape_p:
        if ins[0].ty.shape == out.ty.shape:
            return ins[0]
        src = producer.get(id(ins[0]))
        if src is not None and src.prim is st.reshape_p:
            return Eqn(p, (src.invars[0],), eqn.outvars, eqn.params, eqn.source)
    elif p is st.transpose_p:
        perm = eqn.params["perm"]
        if list(perm) == list(range(len(perm))):
            return ins[0]
        src = producer.get(id(ins[0]))
        if src is not None and src.prim is st.transpose_p:
            inner = src.params["perm"]
            composed = tuple(inner[i] for i in perm)
            if composed == tuple(range(len(perm))):
                return src.invars[0]
            return Eqn(p, (src.invars[0],), eqn.outvars, {"perm": composed}, eqn.source)
    elif p is st.broadcast_in_dim_p:
        if isinstance(ins[0], Var) and ins[0].ty.shape == out.ty.shape:
            return ins[0]
    return None


def sink_negations(graph: Graph) -> Graph:
    """Remove float negations by carrying the sign into the operations that use them:
    (-a)*b = -(a*b), (-a)/b = -(a/b), a + (-b) = a - b, (-a) + b = b - a, a - (-b) = a + b,
    (-a) - (-b) = b - a, -(-a) = a. Each is exact for every value, signed zeros included (IEEE
    defines a - b as a + (-b); products take the xor of the signs), except for the sign of a
    NaN result, which IEEE leaves unspecified for arithmetic. (-a) + (-b) is not -(a + b)
    (+0 against -0 when a = -b), so there one operand is negated as is.

    A value may be held negated when every use absorbs the sign (add, sub) or carries it on (a
    mul, div or neg whose result may be held negated); any other use (sin, an output, ...) gets
    one materialised neg. Reverse-mode graphs are full of negations (the transpose of sub, the
    derivative of cos), which mostly vanish; the graph is returned unchanged unless it gets
    shorter."""
    eqns = graph.eqns
    if not any(e.prim is ew.neg_p for e in eqns):
        return graph
    signed = (ew.neg_p, ew.mul_p, ew.div_p)

    def real(v):
        return v.ty.dtype.kind == "f"

    uses: dict = {}
    for e in eqns:
        for a in e.invars:
            uses.setdefault(id(a), []).append(e)
    outputs = {id(a) for a in graph.outvars}
    carry: dict = {}                 # id(var) -> its value may be held negated
    for e in reversed(eqns):
        if e.prim in signed:
            v = e.outvars[0]
            carry[id(v)] = real(v) and id(v) not in outputs and all(
                c.prim in (ew.add_p, ew.sub_p) or
                c.prim in signed and carry.get(id(c.outvars[0]), False)
                for c in uses.get(id(v), ()))

    subst = _Subst()
    negated: dict = {}               # id(var) -> (u, var, source): var's value is -u
    done: set = set()                # vars of ``negated`` defined after all
    kept = []

    def rep(a):
        a = subst(a)
        entry = negated.get(id(a))
        return (entry[0], True) if entry else (a, False)

    def value(a):
        a = subst(a)
        entry = negated.get(id(a))
        if entry is not None and id(a) not in done:
            u, var, source = entry
            kept.append(Eqn(ew.neg_p, (u,), (var,), {}, source))
            done.add(id(a))
        return a

    for e in eqns:
        p = e.prim
        out = e.outvars[0] if e.outvars else None
        if p is ew.neg_p and real(out):
            u, neg = rep(e.invars[0])
            if neg:
                subst.set(out, u)
            elif carry[id(out)]:
                negated[id(out)] = (u, out, e.source)
            else:
                kept.append(_with_ins(e, (u,)))
            continue
        if p in (ew.mul_p, ew.div_p) and real(out):
            (u1, n1), (u2, n2) = rep(e.invars[0]), rep(e.invars[1])
            if n1 == n2:
                kept.append(_with_ins(e, (u1, u2)))
            elif carry[id(out)]:
                t = Var(out.ty)
                kept.append(Eqn(p, (u1, u2), (t,), e.params, e.source))
                negated[id(out)] = (t, out, e.source)
            else:                        # needed as is: negate the operand instead
                ins = (value(e.invars[0]), u2) if n1 else (u1, value(e.invars[1]))
                kept.append(_with_ins(e, ins))
            continue
        if p in (ew.add_p, ew.sub_p) and real(out):
            (u1, n1), (u2, n2) = rep(e.invars[0]), rep(e.invars[1])
            add = p is ew.add_p
            if not n1 and not n2:
                prim, ins = p, (u1, u2)
            elif not n1:                 # a + (-b) = a - b; a - (-b) = a + b
                prim, ins = (ew.sub_p if add else ew.add_p), (u1, u2)
            elif not n2 and add:         # (-a) + b = b - a
                prim, ins = ew.sub_p, (u2, u1)
            elif n2 and not add:         # (-a) - (-b) = b - a
                prim, ins = ew.sub_p, (u2, u1)
            else:                        # (-a) + (-b), (-a) - b: -a as is
                prim, ins = ew.sub_p, (value(e.invars[0]), u2)
            kept.append(Eqn(prim, ins, e.outvars, e.params, e.source))
            continue
        kept.append(_with_ins(e, tuple(value(a) for a in e.invars)))
    outvars = tuple(value(a) for a in graph.outvars)
    if len(kept) >= len(eqns):
        return graph
    return graph.replace(eqns=kept, outvars=outvars)


def contract_broadcasts(graph: Graph) -> Graph:
    """A dot_general one of whose operands is a nonzero finite real literal ``c`` broadcast
    everywhere is ``c`` times a sum of the other operand, broadcast: O(size) work instead of a
    product with a temporary that may not fit anywhere. The gradient of ``sum(x @ x.T)`` has
    one: its seed cotangent (ones of shape (n, n)) contracted with x, which for n = 300000 ran
    for hours where NumPy raises MemoryError; now it is two sums. Exact but for the order of the
    additions (``c * sum(y)`` rounds once, where the product rounds each ``c * y``; c = 1 in
    gradients), which no matmul fixes either."""
    producer: dict[int, Eqn] = {}
    kept = []
    for e in graph.eqns:
        rewritten = _dot_of_broadcast(e, producer) if e.prim is dot_general_p else None
        kept.extend(rewritten or (e,))
        for ne in rewritten or (e,):
            for v in ne.outvars:
                producer[id(v)] = ne
    return graph.replace(eqns=kept) if len(kept) != len(graph.eqns) else graph


def _broadcast_literal(a, producer):
    """The nonzero finite real literal value ``a`` is a broadcast of, or None."""
    src = producer.get(id(a))
    if src is None or src.prim is not st.broadcast_in_dim_p or src.params["dims"] != () or \
            not isinstance(src.invars[0], Literal) or a.ty.dtype.kind not in "iuf":
        return None
    c = src.invars[0].value
    return c if np.isfinite(c) and c != 0 else None


def _dot_of_broadcast(e, producer):
    """The equations computing ``e`` (a dot_general) as ``c * sum(other operand)``, or None."""
    (lc, rc), (lb, rb) = e.params["contract"], e.params["batch"]
    lhs, rhs = e.invars
    out = e.outvars[0]
    for const, y, yc, yb, y_first in ((lhs, rhs, rc, rb, False), (rhs, lhs, lc, lb, True)):
        c = _broadcast_literal(const, producer)
        if c is not None and None not in y.ty.shape + out.ty.shape:    # (no stacks)
            break
    else:
        return None
    eqns = []

    def emit(prim, x, shape, **params):
        v = Var(Type(out.ty.dtype, tuple(shape), out.ty.weak))
        eqns.append(Eqn(prim, (x,), (v,), params, e.source))
        return v

    shape = y.ty.shape
    kept = [a for a in range(len(shape)) if a not in yc]       # y's axes left by the sum
    free = [a for a in kept if a not in yb]
    s = emit(red.reduce_sum_p, y, [shape[a] for a in kept], axes=tuple(sorted(yc))) if yc else y
    perm = tuple(kept.index(a) for a in (*yb, *free))          # batch axes first, as the result
    if perm != tuple(range(len(perm))):
        s = emit(st.transpose_p, s, [s.ty.shape[i] for i in perm], perm=perm)
    if c != 1:
        v = Var(s.ty)
        eqns.append(Eqn(ew.mul_p, (s, Literal(c, Type(s.ty.dtype, (), True))), (v,), {},
                        e.source))
        s = v
    nb, n_out = len(yb), len(out.ty.shape)
    at = nb if y_first else n_out - len(free)                  # where y's free axes land
    dims = (*range(nb), *range(at, at + len(free)))
    eqns.append(Eqn(st.broadcast_in_dim_p, (s,), (out,),
                    {"dims": dims, "shape": out.ty.shape}, e.source))
    return eqns


def inline_calls(graph: Graph) -> Graph:
    """Expand call primitives (``props['inline']``: custom_jvp/custom_vjp calls, whose rules
    matter only to AD) into the equations of their sub-graph, and drop AD-only identities
    (``props['erase']``: stop_gradient). Sub-graph variables are renamed per call site."""
    if not any(e.prim.props.get("inline") or e.prim.props.get("erase") for e in graph.eqns):
        return graph
    subst = _Subst()
    eqns = []
    consts = list(zip(graph.constvars, graph.constvals))

    def expand(eqn, ins):
        if eqn.prim.props.get("erase"):
            subst.set(eqn.outvars[0], ins[0])
            return
        if not eqn.prim.props.get("inline"):
            eqns.append(Eqn(eqn.prim, ins, eqn.outvars, eqn.params, eqn.source))
            return
        sub = eqn.params["call"]
        env = {id(v): a for v, a in zip(sub.invars, ins)}
        for c, val in zip(sub.constvars, sub.constvals):
            fresh = Var(c.ty)
            consts.append((fresh, val))
            env[id(c)] = fresh
        for e in sub.eqns:
            new_ins = tuple(a if isinstance(a, Literal) else env[id(a)] for a in e.invars)
            new_outs = tuple(Var(v.ty) for v in e.outvars)
            for v, n in zip(e.outvars, new_outs):
                env[id(v)] = n
            expand(Eqn(e.prim, new_ins, new_outs, e.params, e.source or eqn.source),
                   tuple(subst(a) for a in new_ins))
        for v, a in zip(eqn.outvars, sub.outvars):
            subst.set(v, a if isinstance(a, Literal) else env[id(a)])

    for eqn in graph.eqns:
        expand(eqn, tuple(subst(a) for a in eqn.invars))
    out = _rebuild(graph, eqns, subst)
    return out.replace(constvars=tuple(c for c, _ in consts),
                       constvals=tuple(v for _, v in consts))


def hoist_scans(graph: Graph) -> Graph:
    """Move what a scan's body computes the same on every step out of the loop
    (``scan_prune.hoist_invariants``: carries returned unchanged, equations of invariant
    operands)."""
    if not any(e.prim.name == "scan" for e in graph.eqns):
        return graph
    subst = _Subst()
    eqns = []
    for eqn in graph.eqns:
        eqn = _with_ins(eqn, tuple(subst(a) for a in eqn.invars))
        moved = hoist_invariants(eqn, _movable) if eqn.prim.name == "scan" else None
        if moved is None:
            eqns.append(eqn)
            continue
        before, scan, same = moved
        eqns.extend(before)
        eqns.append(scan)
        for i, atom in same.items():
            out = eqn.outvars[i]
            subst.set(out, atom if atom.ty == out.ty else Literal(atom.value, out.ty))
    return _rebuild(graph, eqns, subst)


def _movable(eqn: Eqn) -> bool:
    """Whether a scan body's equation may run once before the loop instead: no sub-graphs,
    effects or run-time errors, and float results or data movement only (integer division
    and the like keep their guards' order)."""
    if eqn.prim.kind == "control" or eqn.prim.props.get("inline") or _may_raise(eqn) or \
            any(isinstance(v, Graph) for v in eqn.params.values()):
        return False
    return eqn.prim.kind == "structural" or \
        all(v.ty.dtype.kind in "fc" for v in eqn.outvars)


PIPELINE = (("inline", inline_calls), ("fold", fold_constants), ("negs", sink_negations),
            ("identities", simplify_identities), ("contract", contract_broadcasts),
            ("hoist", hoist_scans), ("cse", cse),
            ("dce", dce))
# When another round is needed: every pass is a forward walk with substitution, complete in one
# pass, and each pass's results are seen by the passes after it in the round. So the only work
# a round can leave behind is for a pass that ran before the change: inline (first) expands
# nested calls recursively; fold is left work only when a later pass turned an operand into a
# literal (identities: x * 1 with x a literal; negs, cse and dce never do). Hence one more round
# exactly while some equation is foldable (a scan, not a round: a round is ~6 ms on a gradient).
# (negs may miss a negation that cse exposes later in the round; that costs an equation, never
# correctness.)


def run_pass(name, fn, graph: Graph) -> Graph:
    """Apply one pass; verify and optionally print the result (TRACEJIT_PRINT_AFTER)."""
    with compiler_stage(f"the '{name}' simplification pass", graph):
        out = fn(graph)
        if config.check_ir:
            verify(out, name)
    if name in config.print_after or "all" in config.print_after:
        print(f"--- IR after {name} ---\n{print_graph(out)}", file=sys.stderr)
    return out


def _simplify_subgraphs(graph: Graph, inline: bool = True) -> Graph:
    """Simplify the sub-graphs of control-flow equations (their interfaces are unchanged)."""
    def sub(value):
        if isinstance(value, Graph):
            return simplify(value, inline)
        if isinstance(value, tuple) and value and all(isinstance(v, Graph) for v in value):
            return tuple(simplify(v, inline) for v in value)
        return value

    if not any(e.prim.kind == "control" for e in graph.eqns):
        return graph
    eqns = [Eqn(e.prim, e.invars, e.outvars, {k: sub(v) for k, v in e.params.items()}, e.source)
            if e.prim.kind == "control" else e for e in graph.eqns]
    return graph.replace(eqns=eqns)


def simplify(graph: Graph, inline: bool = True) -> Graph:
    """Run the simplification pipeline to a fixed point (at most 4 rounds); a round is repeated
    only while constant folding has work left (see ``PIPELINE``).

    ``inline=False`` keeps call primitives (checkpoint regions, custom rules) as they are: AD
    simplifies a JVP graph that way before partial evaluation, which needs the regions.
    Full garbage collections wait until it is done (see core.full_collections_deferred)."""
    with full_collections_deferred():
        graph = _simplify_subgraphs(graph, inline)
        for _ in range(4):
            for name, fn in PIPELINE:
                if name == "inline" and not inline:
                    continue
                graph = run_pass(name, fn, graph)
            if not any(_foldable(e, e.invars) for e in graph.eqns):
                break
        if inline and config.roll_loops and not config.debug_nans:  # (it names equations)
            graph = _roll_rounds(graph)
    return graph


ROLL_BEFORE_AD = 256     # primal graphs of at least this many equations are rolled before AD


def rolled_primal(graph: Graph) -> Graph:
    """The graph a derivative is taken of: ``graph`` with its chains of repeated copies rolled
    into scans, when it is large enough to have some; else ``graph`` itself. Differentiating one
    scan body costs what one copy costs, where the transforms would otherwise walk every copy
    (and the rolling after AD would then walk the derivative's copies twice over). Not
    simplified first: the derivative is simplified anyway, and a traced loop's copies are
    alike as traced (measured: rolling the simplified RNN primal took longer, 154 vs 94 ms at
    T=1000, on top of 126 ms of simplification)."""
    if len(graph.eqns) < ROLL_BEFORE_AD or not config.roll_loops or config.debug_nans:
        return graph
    return _roll_rounds(graph)


def _roll_rounds(graph: Graph) -> Graph:
    """Roll repeated copies into scans (``transforms/roll.py``), round after round while a
    round rolls something (the second round rolls a gradient's backward chain, which reads the
    rows of the first round's forward scan), dropping the rows no one reads any more."""
    for _ in range(4):
        rolled = run_pass("roll", roll, graph)
        if rolled is graph:
            break
        graph = run_pass("dce", dce, rolled)
    return graph
