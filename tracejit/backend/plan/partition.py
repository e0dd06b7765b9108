"""Partition a graph into steps: fused loop nests, matmuls, copies and NumPy fallbacks.

The plan is a list of steps in execution order. Values live in *slots* (one data pointer each):
graph inputs, constants, outputs, arena temporaries, and arrays produced by NumPy fallbacks.

Invariants:
- A var is either *computed in a loop* (a member of one ``LoopGroup``; it lives in registers and
  is stored only when something outside the group reads it), a *view* (a ``View``: base slot var,
  element offset and element strides; broadcast_in_dim, transpose, slice, rev, reshape of
  contiguous data and iota are views and cost nothing), or *materialised* (owns a slot).
- Every operand of a loop group that is not a member is read through a ``View`` (a "leaf").
- Joining an equation to a group never creates a cycle between steps: the join is refused when
  an operand depends (through any step) on the group itself. Steps run in a topological order
  that keeps creation order where it can.
- A stack (run-time leading dimension, ``emit/stacks.py``) is never a view, a loop member or a
  copy: an equation reading or defining one is a ``ControlStep`` (``while_record``, a scan of
  run-time length, or a stack passed as a constant) or a ``FallbackStep``.
- Planning is pure: it reads the graph, the legality tests of ``steps.py`` (which read the
  names and dtypes of ``lowering.py``) and one fact about the target, its vector width; it
  never imports llvmlite or an emitter. The steps are carried out by ``emit/`` and
  ``runtime/``; ``verify.py`` checks a finished plan (under pytest, after every partition).

Step kinds: a ``LoopGroup`` holds elementwise equations (any real or complex dtype with a rule
named in ``lowering.py``), ``take`` (gather, bounds-checked), reductions as *sinks*
(sum/max/min/prod over any axes; argmax/argmin over an innermost axis), and stores; concatenate
and pad become copy groups into one buffer (pad fills first). ``MatmulStep`` is a dot_general
with one contracted axis, at most one free axis per side and mergeable batch axes (a literal
operand is stored first). A linalg primitive is a ``LinalgStep`` (small real matrices: native
loops) or a ``LapackStep`` (a call into numpy's LAPACK, when it can be called). Everything
else is a ``FallbackStep``: the primitive's NumPy impl (control flow: compiled sub-graphs, see
``runtime/control_fallback.py``).
Before partitioning, ``sinkviews.py`` sinks views into producers, ``half.py`` rewrites float16
arithmetic to float32 and ``foldscalars.py`` moves scalar
factors of product operands onto the products. After partitioning, ``rowfuse.py`` and
``epilogue.py`` merge steps (row-wise matvec pairs,
matmul epilogues) before the execution order is fixed.
"""
from __future__ import annotations

import heapq

import numpy as np

from ...config import config
from ...ir import Eqn, Literal, Type, Var
from ...passes import has_effect
from .epilogue import fuse_epilogues
from .rowfuse import fuse_rowwise
from .readers import FuseIndex
from .foldscalars import fold_scalars
from .half import widen_half
from .sinkviews import sink_views
from .steps import (ARG_PRIMS, FFT_PRIMS, LAPACK_PRIMS, LINALG_PRIMS, REDUCE_PRIMS, SORT_PRIMS,
                    ArgStep, ControlStep, EqnStep, FallbackStep, FftStep, LapackStep, LinalgStep,
                    LoopGroup, MatmulStep, Plan, ScanStep, ScatterStep, SortStep, can_lower,
                    can_lower_arg, can_lower_arg_any, can_lower_fft, can_lower_lapack,
                    can_lower_linalg, can_lower_scan, can_lower_scatter, can_lower_sort,
                    can_lower_take, loop_carries,
                    matmul_layout, step_reads, touches_stack)
from .verify import verify_plan
from .views import VIEW_PRIMS, View, unit_reshape



def _can_join(plan: Plan, group: LoopGroup, eqn, operands) -> bool:
    gathered = eqn.invars[0] if eqn.prim.name == "take" else None
    for a in operands:
        # a member is read at the loop's own index; take reads its operand at other indices,
        # so that operand must be stored by an earlier step, never computed in this loop
        if isinstance(a, Literal) or (plan.member_of.get(id(a)) is group and a is not gathered):
            continue
        p = plan.step_of(a)
        if p is None:
            continue
        if p is group or plan.depends_on(p, group):
            return False

    return True


def _place_in_loop(plan: Plan, eqn, shape, operands, last_by_shape) -> LoopGroup:
    candidates = [plan.member_of[id(a)] for a in operands
                  if isinstance(a, Var) and id(a) in plan.member_of
                  and plan.member_of[id(a)].shape == shape]
    if shape in last_by_shape:
        candidates.append(last_by_shape[shape])
    for g in candidates:
        if _can_join(plan, g, eqn, operands):
            return g
    g = plan.new(LoopGroup, shape)
    last_by_shape[shape] = g
    return g


def partition(graph, vector_bytes: int, donated=None, arguments=False, lapack=None) -> Plan:
    """Assign every equation of ``graph`` to a step (see the module docstring); the target's
    vector register width (``vector_bytes``) and whether it can call numpy's LAPACK (``lapack``:
    a function asked only when a linalg equation needs the answer; None: no) are the facts
    about the machine planning reads.
    ``donated`` (input index -> output index): inputs whose buffer the caller lets that output
    reuse; ``arguments``: they are the caller's arrays (``Plan.donated``, ``inplace.py``)."""
    # views of values sunk, scalar factors moved from product operands to their epilogues,
    # float16 arithmetic written as float32 operations rounded to float16 one by one
    graph = widen_half(sink_views(graph))
    if config.fold_product_scalars:
        graph = fold_scalars(graph)
    plan = Plan(graph, vector_bytes, donated, arguments, lapack)
    graph = plan.graph
    last_by_shape: dict = {}
    for eqn in graph.eqns:
        name = eqn.prim.name
        ins, outs = eqn.invars, eqn.outvars
        if touches_stack(eqn) and eqn.prim.kind != "control":
            _fallback(plan, eqn)                 # loops, views and copies need static shapes
            continue
        if name in VIEW_PRIMS and isinstance(ins[0], (Var, Literal)) and \
                plan.member_of.get(id(ins[0])) is None:
            plan.views[id(outs[0])] = plan.view_of(ins[0]).compose(name, eqn.params, outs[0].ty)
            continue
        if name in VIEW_PRIMS and id(ins[0]) in plan.member_of:
            # a view of a loop member: the member gets stored (finish) and this is a view of it
            plan.views[id(outs[0])] = View.whole(ins[0]).compose(name, eqn.params, outs[0].ty)
            continue
        if name == "reshape" and isinstance(ins[0], Var) and id(ins[0]) not in plan.member_of \
                and (plan.view_of(ins[0]).contiguous() or
                     unit_reshape(ins[0].ty.shape, outs[0].ty.shape)):
            plan.views[id(outs[0])] = plan.view_of(ins[0]).compose("reshape", eqn.params,
                                                                    outs[0].ty)
            continue
        if name == "reshape" and id(ins[0]) in plan.member_of:
            plan.views[id(outs[0])] = View.whole(ins[0]).compose("reshape", eqn.params,
                                                                 outs[0].ty)
            continue
        if name == "iota":
            p = eqn.params
            n = p["shape"][p["axis"]]
            cvar = Var(Type(outs[0].ty.dtype, (n,)))
            plan.extra_consts.append((cvar, np.arange(n, dtype=outs[0].ty.dtype)))
            strides = [0] * len(p["shape"])
            strides[p["axis"]] = 1
            plan.views[id(outs[0])] = View(cvar, 0, strides, p["shape"], outs[0].ty.dtype)
            continue
        if eqn.prim.kind == "elementwise" and can_lower(eqn):
            g = _place_in_loop(plan, eqn, outs[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.eqns.append(eqn)
            g.members.add(id(outs[0]))
            plan.member_of[id(outs[0])] = g
            continue
        if name == "take" and can_lower_take(eqn) and \
                not isinstance(plan.view_of(ins[0]).base, Literal):   # gathers read a slot
            g = _place_in_loop(plan, eqn, outs[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.eqns.append(eqn)
            g.members.add(id(outs[0]))
            plan.member_of[id(outs[0])] = g
            continue
        if (name in REDUCE_PRIMS and can_lower(eqn)) or \
                (name in ARG_PRIMS and can_lower_arg(eqn)):
            g = _place_in_loop(plan, eqn, ins[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.sinks.append(eqn)
            g.writes.append(outs[0])
            plan.producer[id(outs[0])] = g
            continue
        if name == "dot_general" and matmul_layout(plan, eqn) is None:
            eqn = stored_literals(plan, eqn)     # a cotangent of ones, say: a slot first
            ins = eqn.invars
        if name == "dot_general" and matmul_layout(plan, eqn) is not None:
            step = plan.new(MatmulStep, eqn, plan.view_of(ins[0]), plan.view_of(ins[1]), outs[0])
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name in ("cumsum", "cumprod") and isinstance(ins[0], Var) and \
                isinstance(plan.view_of(ins[0]).base, Var) and can_lower_scan(eqn):   # reads a slot
            step = plan.new(ScanStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name in ("concatenate", "pad") and _copies_ok(eqn):
            _plan_copies(plan, eqn, last_by_shape)
            continue
        if name in ARG_PRIMS and can_lower_arg_any(plan, eqn):
            step = plan.new(ArgStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name == "scatter" and can_lower_scatter(plan, eqn):
            step = plan.new(ScatterStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        linalg = name in LINALG_PRIMS and can_lower_linalg(plan, eqn)
        lapack = not linalg and name in LAPACK_PRIMS and can_lower_lapack(plan, eqn)
        fft = name in FFT_PRIMS and can_lower_fft(plan, eqn)
        if linalg or lapack or fft:
            eqn = contiguous_operands(plan, eqn)        # a transposed operand is copied first
            step = plan.new(LinalgStep if linalg else LapackStep if lapack else FftStep, eqn)
            plan.add_preds(step, eqn.invars)
            for v in outs:
                step.writes.append(v)
                plan.producer[id(v)] = step
            continue
        if name in SORT_PRIMS and can_lower_sort(plan, eqn):
            # the library reads slots, in C order: literals stored, strided views copied
            eqn = contiguous_operands(plan, stored_literals(plan, eqn))
            step = plan.new(SortStep, eqn)
            plan.add_preds(step, eqn.invars)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if eqn.prim.kind == "control":
            subs = plan_subgraphs(plan, eqn)
            if subs is not None:
                eqn = contiguous_operands(plan, eqn)
                step = plan.new(ControlStep, eqn, subs)
                plan.add_preds(step, eqn.invars)
                for v in outs:
                    step.writes.append(v)
                    plan.producer[id(v)] = step
                continue
        _fallback(plan, eqn)
    _finish(plan)
    if config.check_ir:
        verify_plan(plan)
    return plan


def contiguous_operands(plan, eqn):
    """``eqn`` reading a contiguous copy (a copy loop into a new temporary) of each operand that
    is a strided view: a control step lends its operands to sub-graphs as plain pointers.
    Literals and broadcasts of literals stay as they are (the driver materialises them)."""
    def strided(a):
        view = plan.view_of(a)
        return not (isinstance(view.base, Literal) or view.contiguous())
    return _with_copies(plan, eqn, strided)


def stored_literals(plan, eqn):
    """``eqn`` reading a stored copy of each operand that is a literal or a broadcast of one
    (the matmul kernels read slots; a gradient's seed of ones is such an operand)."""
    return _with_copies(plan, eqn, lambda a: isinstance(plan.view_of(a).base, Literal))


def _with_copies(plan, eqn, copied):
    """``eqn`` reading, in place of each operand ``a`` with ``copied(a)``, a new temporary that
    a copy loop fills."""
    ins = []
    for a in eqn.invars:
        if not copied(a):
            ins.append(a)
            continue
        copy = Var(a.ty.strong())
        g = plan.new(LoopGroup, a.ty.shape)
        plan.add_preds(g, [a])
        g.stores.append((a, View.whole(copy)))
        g.writes.append(copy)
        plan.producer[id(copy)] = g
        ins.append(copy)
    if all(x is y for x, y in zip(ins, eqn.invars)):
        return eqn
    return Eqn(eqn.prim, tuple(ins), eqn.outvars, eqn.params, eqn.source)


def _fallback(plan, eqn):
    step = plan.new(FallbackStep, eqn)
    plan.add_preds(step, eqn.invars)
    if has_effect(eqn):                      # effects (prints) run in program order
        if plan.last_effect is not None:
            plan.add_pred(step, plan.last_effect)
        plan.last_effect = step
    for v in eqn.outvars:
        step.writes.append(v)
        plan.producer[id(v)] = step


def _subgraphs(eqn):
    p = eqn.params
    name = eqn.prim.name
    if name == "cond":
        return list(p["branches"])
    if name in ("while", "while_record"):
        return [p["cond"], p["body"]]
    if name == "scan":
        return [p["body"]]
    return None


def plan_subgraphs(plan, eqn):
    """ControlStep legality: the partitioned sub-graphs of a control equation that can run
    natively, else None. (Operands that are strided views are copied first, see
    :func:`contiguous_operands`.)"""
    graphs = _subgraphs(eqn)
    if graphs is None:
        return None
    if eqn.prim.name == "scan" and eqn.params["length"] is not None and \
            eqn.params["length"] > 0 and any(v.ty.shape[0] != eqn.params["length"] for v in
                                             eqn.invars[eqn.params["n_consts"] +
                                                        eqn.params["n_carry"]:]):
        return None
    subs = []
    for g, donated in zip(graphs, _carry_donations(eqn)):
        if any(t.dynamic for t in g.out_types):
            return None          # a stack carried or returned by a branch: ownership moves
        sub = partition(g, plan.vector_bytes, donated, lapack=plan.lapack)
        if any(isinstance(s, FallbackStep) for s in sub.steps):
            return None
        subs.append(sub)
    return subs


def _carry_donations(eqn):
    """Per sub-graph of a control equation: body input -> body output of each loop carry (the
    driver may keep a carry in one buffer, ``emit/control.py``); nothing for cond branches and
    a while's cond."""
    carries = loop_carries(eqn)
    if carries is None:
        return [None] * len(_subgraphs(eqn))
    _, first, n = carries
    body = {first + j: j for j in range(n)}
    return [body] if eqn.prim.name == "scan" else [None, body]


def _copies_ok(eqn) -> bool:
    """Copies move bytes: any dtype, except a complex pad value given as a literal."""
    return not (eqn.prim.name == "pad" and isinstance(eqn.invars[1], Literal)
                and eqn.invars[1].ty.dtype.kind == "c")


def _plan_copies(plan: Plan, eqn, last_by_shape):
    """concatenate / pad as native copies into one output buffer (fill first for pad)."""
    out = eqn.outvars[0]
    whole = View.whole(out)
    if eqn.prim.name == "pad":
        x, value = eqn.invars
        fill = plan.new(LoopGroup, out.ty.shape)
        plan.add_preds(fill, [value])
        fill.stores.append((value, whole))
        fill.writes.append(out)
        plan.producer[id(out)] = fill
        parts = [(x, tuple(eqn.params["lo"]))]
        prev = fill
    else:
        axis, pos, parts, prev = eqn.params["axis"], 0, [], None
        for x in eqn.invars:
            start = [0] * out.ty.ndim
            start[axis] = pos
            parts.append((x, tuple(start)))
            pos += x.ty.shape[axis]
    for x, start in parts:
        dst = View(out, sum(s * t for s, t in zip(start, whole.strides)), whole.strides,
                   x.ty.shape, out.ty.dtype)
        g = plan.new(LoopGroup, x.ty.shape)
        plan.add_preds(g, [x])
        if prev is not None:
            plan.add_pred(g, prev)
        g.stores.append((x, dst))
        g.writes.append(out)
        if id(out) not in plan.producer:
            plan.producer[id(out)] = g
        prev = g
    # every later reader must wait for the last piece
    plan.producer[id(out)] = prev if prev is not None else plan.producer.get(id(out))
    if prev is None:   # concatenate of nothing but empty pieces never happens (shape rule)
        raise AssertionError("concatenate without operands")


def _finish(plan: Plan):
    """Decide stores, graph-output aliases and the execution order."""
    graph = plan.graph
    used_outside: dict = {}
    for step in plan.steps:
        if isinstance(step, LoopGroup):
            for e in (*step.eqns, *step.sinks):
                for a in e.invars:
                    g = plan.member_of.get(id(a))
                    if g is not None and g is not step:
                        used_outside[id(a)] = a
        elif isinstance(step, (MatmulStep, EqnStep)):
            for a in step.eqn.invars:
                if id(a) in plan.member_of:
                    used_outside[id(a)] = a
    for step in plan.steps:                  # copies (concatenate/pad pieces)
        if isinstance(step, LoopGroup):
            for a, _ in step.stores:
                if isinstance(a, Var) and id(a) in plan.member_of:
                    used_outside[id(a)] = a
    for v in plan.views.values():            # views of members read the stored member
        if isinstance(v.base, Var) and id(v.base) in plan.member_of:
            used_outside[id(v.base)] = v.base
    for a in graph.outvars:
        if isinstance(a, Var) and id(a) in plan.member_of:
            used_outside[id(a)] = a
    for vid, var in used_outside.items():
        g = plan.member_of[vid]
        g.stores.append((var, View.whole(var)))
        g.writes.append(var)
        plan.producer[vid] = g
    plan.fuse_index = FuseIndex(plan)        # readers of values, users of steps
    fuse_rowwise(plan)                       # X.T @ r(X @ a): one pass over X
    fuse_epilogues(plan)                     # f(A @ B, ...) elementwise inside the matmul
    if config.check_ir:
        plan.fuse_index.check(plan)
    plan.fuse_index = None
    # graph outputs: store directly into the output buffer when the var is produced natively,
    # is all of its base in order (the base or a reshape of it), and is not an input, constant
    # or another output
    final_copies = []
    for j, a in enumerate(graph.outvars):
        p = plan.step_of(a) if isinstance(a, Var) else None
        view = plan.view_of(a)
        base = view.base
        native_base = isinstance(base, Var) and p is not None and \
            not isinstance(p, FallbackStep) and view.covers_base() and id(base) not in \
            plan.out_aliases
        if native_base:
            plan.out_aliases[id(base)] = j
        elif isinstance(p, FallbackStep) and view.is_whole():
            plan.py_outputs[j] = base         # returned as the NumPy array it is
            continue
        elif a.ty.dynamic:
            continue                          # a stack input or a repeat: Executable copies
        elif _unchanged_carry(plan, a, j):
            continue                          # stays in the donated input's buffer
        else:
            final_copies.append((j, a))
    for j, a in final_copies:
        shape = a.ty.shape
        g = plan.new(LoopGroup, shape)
        plan.add_preds(g, [a])
        dst_var = Var(Type(a.ty.dtype, shape))
        plan.out_aliases[id(dst_var)] = j
        g.stores.append((a, View.whole(dst_var)))
        g.writes.append(dst_var)
        plan.producer[id(dst_var)] = g
        g.output_copy = j
    _wire_view_preds(plan)
    plan.steps = _toposort(plan.steps)


def _unchanged_carry(plan: Plan, a, j) -> bool:
    """Whether output j is an input donated to it (a loop carry the body returns as it got it):
    then it needs no step, and ``plan.out_in_place`` says where it is."""
    k = next((k for k, v in enumerate(plan.graph.invars) if v is a), None)
    if k is None or plan.donated.get(k) != j or k in plan.out_in_place.values():
        return False
    plan.out_in_place[j] = k
    return True


def _wire_view_preds(plan: Plan):
    for step in plan.steps:
        plan.add_preds(step, step_reads(step))


def _toposort(steps):
    """``steps`` in an order where every step follows its preds: at each point the earliest
    (in ``steps``) of the steps whose preds have all run (Kahn's algorithm on a heap of
    positions; a pred outside ``steps`` never runs)."""
    waiting = [0] * len(steps)              # preds not run yet, per position
    users: dict = {}
    for k, s in enumerate(steps):
        for p in s.preds:
            if p is not s:
                waiting[k] += 1
                users.setdefault(p, []).append(k)
    ready = [k for k in range(len(steps)) if waiting[k] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(steps[k])
        for u in users.get(steps[k], ()):
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(steps):
        raise AssertionError("tracejit backend: cycle between fused steps")
    return order
