"""The plan verifier: checks a finished Plan and its BufferPlan (on when ``config.check_ir`` is,
which tests/conftest.py sets for the whole suite), as ``ir.verify`` checks the IR after a pass.

The planner and the emitters must agree on which values are materialised and where; a plan
that breaks one of these invariants would otherwise fail late (a ``KeyError`` in ``slot_of``
while emitting) or, worse, read stale memory. ``verify_plan`` (end of ``partition``):

- the schedule: every step appears once and after each of its ``preds``;
- ownership: ``Plan.producer`` names, for each materialised var, one step of the plan (none
  removed by row or epilogue fusion) that writes it, and no step writes the var after it
  (copy pieces of one buffer come first, the step named last); a loop member belongs to one
  group, and a stored member's producer is that group; no step writes an input or constant;
- reads: every atom a step reads (``steps.step_reads``: operands, stores, epilogue leaves) is a
  literal, a member of the same loop group defined before it is read, or a view whose base is a
  literal, a graph input, a constant (the planner's iota ranges included) or a var produced by
  an earlier step; a gather's table is never a member of its own group (it is read from memory);
- outputs: every graph output is stored into its output buffer by one step (``out_aliases``:
  distinct indices), returned as a fallback's array (``py_outputs``) or is a stack passed on.

``verify_buffers`` (end of ``plan_buffers``): every materialised var has exactly one slot, of
the kind its producer implies (input, constant, output, NumPy result, temporary); every base a
step reads has a slot; arena blocks lie inside the arena, 64-byte aligned, and two temporaries
share bytes only when one is dead (last read and write) strictly before the other is written.

``verify_in_place`` (part of ``verify_buffers``): a value written into another's buffer
(``BufferPlan.in_place``: y takes x's buffer) shares x's slot, and only such values share a
slot; its first write is the only step writing it; no step after that write reads x (itself or
through a view) and no graph output is x; the writing step itself reads x only where it writes
(a scatter: as the operand covering x, not in its indices or updates; a loop group without
reductions: at the view of the store of y; a loop: only as the initial value of carry y); a
chain rooted at a graph input ends in the output that input is donated to (``out_in_place``)
or writes nothing (``read_only``: unchanged loop carries) and is no graph output,
and when the inputs are the caller's arguments, every step from the first write into one on is
``atomic`` and cannot stop the call (but the step making that first write may when it stops
only before writing, ``inplace.stops_before_writing``: a scatter checks its indices first, a
short static-length loop mallocs its scratch first).

Invariant: the verifier reads the plan and never changes it; it costs a few passes over the
steps.
"""
from __future__ import annotations

from ...ir import Literal, Var
from .inplace import covers, may_stop, stops_before_writing
from .steps import ControlStep, FallbackStep, LoopGroup, ScatterStep, loop_carries, step_reads


class PlanError(AssertionError):
    """A plan that breaks an invariant of the planner (a bug of tracejit, not of the program)."""


def _what(step) -> str:
    return f"step {step.index} ({step.kind})"


def verify_plan(plan) -> None:
    """Raise :class:`PlanError` unless ``plan`` keeps the invariants in the module docstring."""
    graph = plan.graph
    pos = {}
    for k, step in enumerate(plan.steps):
        if id(step) in pos:
            raise PlanError(f"{_what(step)} is scheduled twice")
        pos[id(step)] = k
    for step in plan.steps:
        for p in step.preds:
            if p is not step and pos.get(id(p), len(pos)) >= pos[id(step)]:
                raise PlanError(f"{_what(step)} runs before a step it depends on")
    fixed = {id(v) for v in (*graph.invars, *graph.constvars)}
    fixed.update(id(v) for v, _ in plan.extra_consts)
    _check_owners(plan, pos, fixed)
    for step in plan.steps:
        _check_reads(plan, step, pos, fixed)
    _check_outputs(plan)


def _check_owners(plan, pos, fixed):
    for vid, step in plan.producer.items():
        if id(step) not in pos:
            raise PlanError(f"the producer of a value, {_what(step)}, is not in the plan")
        if not any(id(v) == vid for v in step.writes):
            raise PlanError(f"{_what(step)} is a value's producer but does not write it")
    for vid, group in plan.member_of.items():
        if id(group) not in pos or vid not in group.members:
            raise PlanError(f"a loop member's group, {_what(group)}, does not compute it")
        owner = plan.producer.get(vid)
        if owner is not None and owner is not group:
            raise PlanError(f"a member of {_what(group)} is stored by {_what(owner)}")
    for step in plan.steps:
        for v in step.writes:
            if id(v) in fixed:
                raise PlanError(f"{_what(step)} writes a graph input or constant")
            owner = plan.producer.get(id(v))
            if owner is None or pos[id(owner)] < pos[id(step)]:
                raise PlanError(f"{_what(step)} writes a value after (or without) its producer")


def _check_reads(plan, step, pos, fixed):
    defined = set()
    member_reads = []
    if isinstance(step, LoopGroup):
        for eqn in (*step.eqns, *step.sinks):
            member_reads.append((eqn, set(defined)))
            defined.update(id(v) for v in eqn.outvars)
    for eqn, before in member_reads:
        for a in eqn.invars:
            if isinstance(a, Var) and id(a) in step.members and id(a) not in before:
                raise PlanError(f"{_what(step)} reads a member before computing it")
        if eqn.prim.name == "take" and id(eqn.invars[0]) in step.members:
            raise PlanError(f"{_what(step)} gathers from a value it computes in registers "
                            f"(a gather reads its table from memory)")
    for a in step_reads(step):
        if isinstance(a, Literal) or (isinstance(step, LoopGroup) and id(a) in step.members):
            continue
        base = plan.view_of(a).base
        if isinstance(base, Literal) or id(base) in fixed:
            continue
        owner = plan.producer.get(id(base))
        if owner is None or pos[id(owner)] >= pos[id(step)]:
            eqn = getattr(step, "eqn", None)     # named in a CompilerError (bugreport)
            raise PlanError(f"{_what(step)} reads a value ({base.ty}) that no earlier step "
                            f"materialises" + (f" (primitive {eqn.prim.name!r})" if eqn else ""))


def _check_outputs(plan):
    taken = {}
    for vid, j in plan.out_aliases.items():
        if j in taken or j in plan.py_outputs:
            raise PlanError(f"output {j} is written by two values")
        taken[j] = vid
    for j, a in enumerate(plan.graph.outvars):
        if j not in taken and j not in plan.py_outputs and j not in plan.out_in_place and \
                not a.ty.dynamic:
            raise PlanError(f"output {j} is never written")


def verify_buffers(plan, bp) -> None:
    """Raise :class:`PlanError` unless ``bp`` (from ``buffers.plan_buffers(plan)``) gives every
    value one slot and never lets two live temporaries share arena bytes."""
    seen = set()
    verify_in_place(plan, bp)
    for k, slot in enumerate(bp.slots):
        if id(slot.var) in seen or bp.slot_index.get(id(slot.var)) != k:
            raise PlanError(f"slot {k} ({slot.kind}) is not the one slot of its value")
        seen.add(id(slot.var))
        if slot.kind in ("out", "temp", "py"):
            owner = plan.producer.get(id(slot.var))
            if owner is None:
                raise PlanError(f"slot {k} ({slot.kind}) has no producing step")
            if (slot.kind == "py") != isinstance(owner, FallbackStep):
                raise PlanError(f"slot {k} ({slot.kind}) does not match its producer "
                                f"{_what(owner)}")
    first, last = {}, {}
    for k, step in enumerate(plan.steps):
        for v in step.writes:
            if id(v) not in bp.slot_index:
                raise PlanError(f"{_what(step)} writes a value without a slot")
            first.setdefault(id(v), k)
            last[id(v)] = k
        for a in step_reads(step):
            if isinstance(a, Literal) or (isinstance(step, LoopGroup) and id(a) in step.members):
                continue
            base = plan.view_of(a).base
            if isinstance(base, Var):
                if id(base) not in bp.slot_index:
                    raise PlanError(f"{_what(step)} reads a value without a slot")
                last[id(base)] = k
    for vid, x in bp.in_place.items():         # a chain's slot is live from root to end
        root = x
        while id(root) in bp.in_place:
            root = bp.in_place[id(root)]
        last[id(root)] = max(last.get(id(root), -1), last.get(vid, -1), first.get(vid, -1))
    _check_arena(bp, first, last)


def _reads_by_base(plan) -> dict:
    """id(base) -> [(position, step, atom)] for every read of a base or of a view of it."""
    found: dict = {}
    for k, step in enumerate(plan.steps):
        members = step.members if isinstance(step, LoopGroup) else ()
        for a in step_reads(step):
            if not isinstance(a, Literal) and id(a) not in members:
                found.setdefault(id(plan.view_of(a).base), []).append((k, step, a))
    return found


def _aligned(plan, step, x, y, atom) -> bool:
    """Whether ``step``, writing y into x's buffer, reads x through ``atom`` only where it
    writes (see the module docstring)."""
    view = plan.view_of(atom)
    if isinstance(step, ScatterStep):
        return atom is step.eqn.invars[0] and covers(view, x) and \
            not any(plan.view_of(a).base is x for a in step.eqn.invars[1:]
                    if not isinstance(a, Literal))
    if isinstance(step, ControlStep):           # the initial value of carry y, read once
        ins, carries = step.eqn.invars, loop_carries(step.eqn)
        j = next(k for k, v in enumerate(step.eqn.outvars) if v is y)
        return carries is not None and j < carries[2] and ins[carries[0] + j] is atom and \
            covers(view, x) and \
            sum(1 for a in ins if not isinstance(a, Literal) and plan.view_of(a).base is x) == 1
    if type(step) is not LoopGroup or step.sinks:
        return False
    if any(e.prim.name == "take" and e.invars[0] is atom for e in step.eqns):
        return False
    dst = [d for _, d in step.stores if d.base is y]
    return len(dst) == 1 and dst[0].shape == view.shape == step.shape and \
        view.offset == dst[0].offset and view.dtype == dst[0].dtype and \
        all(s == t for s, t, n in zip(view.strides, dst[0].strides, view.shape) if n != 1) and \
        all(a is not atom for a, _ in step.stores)


def verify_in_place(plan, bp) -> None:
    """Raise :class:`PlanError` unless every in-place write keeps the invariants in the module
    docstring (no read of a buffer's old value after it is overwritten)."""
    pos = {id(s): k for k, s in enumerate(plan.steps)}
    outs = {id(plan.view_of(a).base) for a in plan.graph.outvars if not isinstance(a, Literal)}
    outs.update(id(b) for b in plan.py_outputs.values())
    inputs = {id(v): k for k, v in enumerate(plan.graph.invars)}
    after = {id(x): vid for vid, x in bp.in_place.items()}     # x -> the value in its buffer
    reads = _reads_by_base(plan)
    writers: dict = {}
    for step in plan.steps:
        for v in step.writes:
            writers[id(v)] = writers.get(id(v), 0) + 1
    for vid, k in bp.slot_index.items():
        if bp.slots[k].var is not None and id(bp.slots[k].var) != vid and vid not in bp.in_place:
            raise PlanError(f"slot {k} ({bp.slots[k].kind}) holds two values not written in "
                            f"place")
    for vid, x in bp.in_place.items():
        owner = plan.producer.get(vid)
        y = next((v for v in owner.writes if id(v) == vid), None) if owner else None
        if y is None or bp.slot_index.get(vid) != bp.slot_index.get(id(x)):
            raise PlanError("a value written in place does not share its operand's slot")
        w = pos[id(owner)]
        if writers.get(vid) != 1:
            raise PlanError(f"a value written in place by {_what(owner)} has other writers")
        if id(x) in outs:
            raise PlanError(f"{_what(owner)} overwrites a graph output in place")
        for k, step, atom in reads.get(id(x), ()):
            if k > w or (k == w and not _aligned(plan, step, x, y, atom)):
                raise PlanError(f"{_what(step)} reads the old value of a buffer that "
                                f"{_what(owner)} overwrote in place")
        root = x
        while id(root) in bp.in_place:
            root = bp.in_place[id(root)]
        end = vid
        while end in after:
            end = after[end]
        k, j = inputs.get(id(root)), plan.out_aliases.get(end)
        unwritten = j is None and all(v in bp.read_only for v in _chain(bp, end))
        if k is not None and not unwritten and (j is None or plan.donated.get(k) != j or
                                                bp.out_in_place.get(j) != k):
            raise PlanError(f"{_what(owner)} writes into a graph input that is not "
                            f"donated to the value it computes")
        if k is not None and plan.arguments and x is root and not unwritten:   # first write
            for step in plan.steps[w:]:
                if not step.atomic or (may_stop(step) and not
                                       (step is owner and stops_before_writing(step))):
                    raise PlanError(f"{_what(step)} can stop the call after {_what(owner)} "
                                    f"wrote an argument in place")


def _chain(bp, end):
    """ids of the values written in place from the root of ``end``'s buffer up to ``end``."""
    found = []
    while end in bp.in_place:
        found.append(end)
        end = id(bp.in_place[end])
    return found


def _check_arena(bp, first, last):
    by_offset: dict = {}                       # arena offset -> [(first write, dead after, bytes)]
    for slot in bp.slots:
        if slot.kind != "temp":
            continue
        size = max(1, slot.nbytes)
        if slot.index % 64 or slot.index + size > bp.arena_bytes:
            raise PlanError(f"an arena block at {slot.index} (+{size}) is misplaced")
        w = first.get(id(slot.var), 0)
        by_offset.setdefault(slot.index, []).append((w, max(last.get(id(slot.var), w), w), size))
    end = 0
    for offset in sorted(by_offset):
        if offset < end:
            raise PlanError(f"arena blocks overlap at {offset}")
        users = sorted(by_offset[offset])
        end = offset + max(size for _, _, size in users)
        dead = -1
        for w, r, _ in users:
            if w <= dead:
                raise PlanError(f"two live temporaries share the arena block at {offset}")
            dead = max(dead, r)
