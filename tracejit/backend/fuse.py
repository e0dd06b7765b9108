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
- A stack (run-time leading dimension, ``stacks.py``) is never a view, a loop member or a copy:
  an equation reading or defining one is a ``ControlStep`` (``while_record``, a scan of
  run-time length, or a stack passed as a constant) or a ``FallbackStep``.
- Loops are emitted by ``emit_loops``; which primitives have a native lowering is decided by
  ``emit_loops.can_lower*`` (the lowering tables live in the backend, keyed by primitive name).

Step kinds: a ``LoopGroup`` holds elementwise equations (any real or complex dtype with a rule in
``emit_ops``), ``take`` (gather, bounds-checked), reductions as *sinks* (sum/max/min/prod over any
axes; argmax/argmin over an innermost axis), and stores; concatenate and pad become copy groups
into one buffer (pad fills first). ``MatmulStep`` is a dot_general with one contracted axis, at
most one free axis per side and mergeable batch axes. Everything else is a ``FallbackStep``: the
primitive's NumPy impl (control flow: compiled sub-graphs, see ``control.py``).
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Literal, Type, Var
from . import emit_loops

VIEW_PRIMS = ("broadcast_in_dim", "transpose", "slice", "rev")
REDUCE_PRIMS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")


def unit_reshape(src, dst) -> bool:
    """Whether a reshape only inserts or removes size-1 axes."""
    return tuple(d for d in src if d != 1) == tuple(d for d in dst if d != 1)


def row_major(shape):
    """Element strides of a C-order array; a stack's run-time leading dimension (None) gets
    the row size (it is the outermost, so nothing multiplies it)."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d if d is not None else 0
    return tuple(reversed(strides))


def touches_stack(eqn) -> bool:
    """Whether an equation reads or defines a stack (a value of run-time leading dimension)."""
    return any(a.ty.dynamic for a in (*eqn.invars, *eqn.outvars))


class View:
    """Elements ``base[offset + sum(i_d * strides[d])]`` for an index ``i`` over ``shape``.

    ``base`` is a materialised Var (owning a slot) or a Literal (all strides 0)."""
    __slots__ = ("base", "offset", "strides", "shape", "dtype")

    def __init__(self, base, offset, strides, shape, dtype):
        self.base, self.offset = base, int(offset)
        self.strides, self.shape = tuple(int(s) for s in strides), tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def whole(cls, var):
        return cls(var, 0, row_major(var.ty.shape) if isinstance(var, Var) else (),
                   var.ty.shape, var.ty.dtype)

    def contiguous(self):
        return all(s == r for s, r, d in zip(self.strides, row_major(self.shape), self.shape)
                   if d != 1)

    def is_whole(self):
        return isinstance(self.base, Var) and self.offset == 0 and self.contiguous() and \
            self.shape == self.base.ty.shape

    def key(self):
        return (id(self.base), self.offset, self.strides, self.shape)

    def compose(self, prim, params, out_ty):
        """The view after a view primitive (``VIEW_PRIMS`` or contiguous reshape)."""
        st, sh, off = list(self.strides), self.shape, self.offset
        name = prim
        if name == "broadcast_in_dim":
            shape, dims = params["shape"], params["dims"]
            new = [0] * len(shape)
            for i, d in enumerate(dims):
                new[d] = st[i] if sh[i] == shape[d] else 0
            return View(self.base, off, new, shape, self.dtype)
        if name == "transpose":
            perm = params["perm"]
            return View(self.base, off, [st[p] for p in perm], out_ty.shape, self.dtype)
        if name == "slice":
            start, step = params["start"], params["step"]
            if any(d == 0 for d in out_ty.shape):
                return View(self.base, off, [0] * len(sh), out_ty.shape, self.dtype)
            off += sum(s * t for s, t in zip(start, st))
            return View(self.base, off, [t * p for t, p in zip(st, step)], out_ty.shape,
                        self.dtype)
        if name == "rev":
            for a in params["axes"]:
                if sh[a] > 0:
                    off += (sh[a] - 1) * st[a]
                st[a] = -st[a]
            return View(self.base, off, st, sh, self.dtype)
        if name == "reshape":
            if unit_reshape(sh, out_ty.shape):       # size-1 axes in or out: any strides
                real = iter(s for s, d in zip(st, sh) if d != 1)
                return View(self.base, off, [0 if d == 1 else next(real) for d in out_ty.shape],
                            out_ty.shape, self.dtype)
            assert self.contiguous()
            return View(self.base, off, row_major(out_ty.shape), out_ty.shape, self.dtype)
        raise ValueError(name)

    def __repr__(self):
        return f"View(off={self.offset}, strides={self.strides}, shape={self.shape})"


class Step:
    """One unit of the schedule. ``preds``: steps that must run first."""
    kind = "step"

    def __init__(self, index):
        self.index = index
        self.preds: set = set()
        self.writes: list = []          # materialised vars this step defines (fully or partly)


class LoopGroup(Step):
    """One loop nest over ``shape``: members computed per element, stores, reduction sinks.

    ``stores``: list of (atom, destination View) filled by ``finish``; ``sinks``: reduction eqns
    whose input is a member or a leaf and whose output var is materialised by this group."""
    kind = "loop"

    def __init__(self, index, shape):
        super().__init__(index)
        self.shape = tuple(shape)
        self.eqns: list = []
        self.members: set = set()
        self.sinks: list = []
        self.stores: list = []          # (var or literal, View)
        self.parallel = False


class MatmulStep(Step):
    kind = "matmul"

    def __init__(self, index, eqn, lhs, rhs, out):
        super().__init__(index)
        self.eqn, self.lhs, self.rhs, self.out = eqn, lhs, rhs, out
        self.epilogue = None            # epilogue.Epilogue: a consumer loop run in the kernel


class EqnStep(Step):
    """A step that runs one equation by itself (the kind says which emitter)."""

    def __init__(self, index, eqn):
        super().__init__(index)
        self.eqn = eqn


class ScanStep(EqnStep):
    """cumsum / cumprod (emit_scan)."""
    kind = "scan"


class ControlStep(EqnStep):
    """cond / while / scan / while_record as native branches and loops (``control.py``);
    ``subs``: the partitioned sub-graphs (branches, or cond and body, or the scan body)."""
    kind = "control"

    def __init__(self, index, eqn, subs):
        super().__init__(index, eqn)
        self.subs = subs


class ArgStep(EqnStep):
    """argmax / argmin over a non-innermost axis (``emit_arg``)."""
    kind = "arg"


class ScatterStep(EqnStep):
    """scatter as native loops (``emit_scatter``)."""
    kind = "scatter"


class FallbackStep(EqnStep):
    """An equation without a native lowering, run by NumPy between native segments."""
    kind = "numpy"


class Plan:
    """The result of :func:`partition`: steps in order, views, and slot owners."""

    def __init__(self, graph):
        self.graph = graph
        self.steps: list = []
        self.views: dict = {}           # id(var) -> View for vars that are views
        self.member_of: dict = {}       # id(var) -> LoopGroup computing it
        self.producer: dict = {}        # id(materialised var) -> Step
        self.extra_consts: list = []    # (Var, ndarray) made by the planner (iota)
        self.out_aliases: dict = {}     # id(var) -> output index stored directly into
        self.py_outputs: dict = {}      # output index -> base var: returned as the NumPy array a
                                        # fallback made (the output is a whole view of it)

    # helpers ------------------------------------------------------------------------------------
    def new(self, cls, *args):
        step = cls(len(self.steps), *args)
        self.steps.append(step)
        return step

    def view_of(self, atom) -> View:
        if isinstance(atom, Literal):
            return View(atom, 0, (), (), atom.ty.dtype)
        v = self.views.get(id(atom))
        return v if v is not None else View.whole(atom)

    def step_of(self, atom):
        """The step an operand's value comes from (None for inputs, constants, literals)."""
        if isinstance(atom, Literal):
            return None
        g = self.member_of.get(id(atom))
        if g is not None:
            return g
        view = self.views.get(id(atom))
        if view is None:                          # not a view: its own producer
            return self.producer.get(id(atom))
        base = view.base
        if isinstance(base, Literal):
            return None
        g = self.member_of.get(id(base))          # a view of a loop member reads its store
        return g if g is not None else self.producer.get(id(base))

    def depends_on(self, step, target) -> bool:
        seen, todo = set(), [step]
        while todo:
            s = todo.pop()
            if s is target:
                return True
            if id(s) in seen:
                continue
            seen.add(id(s))
            todo.extend(s.preds)
        return False

    def add_preds(self, step, atoms):
        for a in atoms:
            p = self.step_of(a)
            if p is not None and p is not step:
                step.preds.add(p)


# ---------------------------------------------------------------------------------------------

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


def partition(graph) -> Plan:
    """Assign every equation of ``graph`` to a step (see the module docstring)."""
    from .sinkviews import sink_views
    plan = Plan(sink_views(graph))           # slices/pads/transposes of computed values sunk
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
        if eqn.prim.kind == "elementwise" and emit_loops.can_lower(eqn):
            g = _place_in_loop(plan, eqn, outs[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.eqns.append(eqn)
            g.members.add(id(outs[0]))
            plan.member_of[id(outs[0])] = g
            continue
        if name == "take" and emit_loops.can_lower_take(eqn) and \
                not isinstance(plan.view_of(ins[0]).base, Literal):   # gathers read a slot
            g = _place_in_loop(plan, eqn, outs[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.eqns.append(eqn)
            g.members.add(id(outs[0]))
            plan.member_of[id(outs[0])] = g
            continue
        if (name in REDUCE_PRIMS and emit_loops.can_lower(eqn)) or \
                (name in emit_loops.ARG and emit_loops.can_lower_arg(eqn)):
            g = _place_in_loop(plan, eqn, ins[0].ty.shape, ins, last_by_shape)
            plan.add_preds(g, ins)
            g.sinks.append(eqn)
            g.writes.append(outs[0])
            plan.producer[id(outs[0])] = g
            continue
        if name == "dot_general" and _matmul_ok(plan, eqn):
            step = plan.new(MatmulStep, eqn, plan.view_of(ins[0]), plan.view_of(ins[1]), outs[0])
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name in ("cumsum", "cumprod") and isinstance(ins[0], Var) and \
                isinstance(plan.view_of(ins[0]).base, Var) and _scan_ok(eqn):   # reads a slot
            step = plan.new(ScanStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name in ("concatenate", "pad") and _copies_ok(eqn):
            _plan_copies(plan, eqn, last_by_shape)
            continue
        if name in emit_loops.ARG and _arg_ok(plan, eqn):
            step = plan.new(ArgStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if name == "scatter" and _scatter_ok(plan, eqn):
            step = plan.new(ScatterStep, eqn)
            plan.add_preds(step, ins)
            step.writes.append(outs[0])
            plan.producer[id(outs[0])] = step
            continue
        if eqn.prim.kind == "control":
            subs = _control_subs(plan, eqn)
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
    return plan


def contiguous_operands(plan, eqn):
    """``eqn`` reading a contiguous copy (a copy loop into a new temporary) of each operand that
    is a strided view: a control step lends its operands to sub-graphs as plain pointers.
    Literals and broadcasts of literals stay as they are (the driver materialises them)."""
    ins = []
    for a in eqn.invars:
        view = plan.view_of(a)
        if isinstance(view.base, Literal) or view.contiguous():
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
    for v in eqn.outvars:
        step.writes.append(v)
        plan.producer[id(v)] = step


def _arg_ok(plan, eqn) -> bool:
    from . import emit_arg
    return emit_arg.can_lower_arg_any(plan, eqn)


def _scatter_ok(plan, eqn) -> bool:
    from . import emit_scatter
    return emit_scatter.can_lower_scatter(plan, eqn)


def _control_subs(plan, eqn):
    from . import control
    return control.plan_subgraphs(plan, eqn)


def _scan_ok(eqn) -> bool:
    from . import emit_scan
    return emit_scan.can_lower_scan(eqn)


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
            g.preds.add(prev)
        g.stores.append((x, dst))
        g.writes.append(out)
        if id(out) not in plan.producer:
            plan.producer[id(out)] = g
        prev = g
    # every later reader must wait for the last piece
    plan.producer[id(out)] = prev if prev is not None else plan.producer.get(id(out))
    if prev is None:   # concatenate of nothing but empty pieces never happens (shape rule)
        raise AssertionError("concatenate without operands")


def _matmul_ok(plan: Plan, eqn) -> bool:
    from . import emit_steps
    return emit_steps.matmul_layout(plan, eqn) is not None


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
    from .rowfuse import fuse_rowwise
    fuse_rowwise(plan)                       # X.T @ r(X @ a): one pass over X
    from .epilogue import fuse_epilogues
    fuse_epilogues(plan)                     # f(A @ B, ...) elementwise inside the matmul
    # graph outputs: store directly into the output buffer when the var is produced natively,
    # is contiguous and whole, and is not an input, constant or another output
    final_copies = []
    for j, a in enumerate(graph.outvars):
        p = plan.step_of(a) if isinstance(a, Var) else None
        view = plan.view_of(a)
        base = view.base
        native_base = isinstance(base, Var) and p is not None and \
            not isinstance(p, FallbackStep) and view.is_whole() and id(base) not in \
            plan.out_aliases
        if native_base:
            plan.out_aliases[id(base)] = j
        elif isinstance(p, FallbackStep) and view.is_whole():
            plan.py_outputs[j] = base         # returned as the NumPy array it is
            continue
        elif a.ty.dynamic:
            continue                          # a stack input or a repeat: Executable copies
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


def _wire_view_preds(plan: Plan):
    for step in plan.steps:
        atoms = []
        if isinstance(step, LoopGroup):
            for e in (*step.eqns, *step.sinks):
                atoms.extend(e.invars)
            atoms.extend(a for a, _ in step.stores)
        elif isinstance(step, MatmulStep):
            from .epilogue import read_atoms
            atoms.extend(read_atoms(step))
        else:
            atoms.extend(step.eqn.invars)
        plan.add_preds(step, atoms)


def _toposort(steps):
    order, done = [], set()
    remaining = list(steps)
    while remaining:
        for i, s in enumerate(remaining):
            if all(id(p) in done for p in s.preds if p is not s):
                order.append(s)
                done.add(id(s))
                del remaining[i]
                break
        else:
            raise AssertionError("tracejit backend: cycle between fused steps")
    return order
