"""In-place updates: a value born where another one dies takes over that value's buffer.

A step that writes a whole value ``y`` may write it into the buffer of a value ``x`` it reads
when the old contents of ``x`` are never needed again (liveness in plan order: a read of ``x``
itself or of any view of it by a later step, or a graph output that is ``x`` or a view of it,
keeps ``x`` alive). Two step kinds write in place:

- a ``ScatterStep`` (``x.at[idx].set/add/...``, the index writes of the mutation layer) whose
  operand covers ``x`` whole: the copy of ``x`` is skipped and only the updates are applied;
  its indices and updates must not read ``x`` (they are read while the buffer is written);
- a plain ``LoopGroup`` without reductions storing ``y`` whole (the ``select(mask, new, x)``
  of a functionalised slice write, ``A = A * 2``): every read of ``x`` in the group is at the
  element being written (the same view as the store, never a gather's table), so an element is
  loaded before it is overwritten and never read again;
- a loop (``ControlStep`` of ``while``/``scan``) whose carry starts from an operand covering
  ``x`` that the loop reads nowhere else: the carry lives in ``x``'s buffer from the start (no
  copy of the initial value; inside the loop the driver keeps or double-buffers it as usual).
  A carry the body returns unchanged is never written: it may stay in any input's buffer.

Such links chain: ``x -> y1 -> y2`` share one buffer (one *class*). The class's buffer is the
root's: an arena temporary, or, if the chain's last value is a graph output, that output's
buffer (the root is computed straight into it). A graph input is a root only when the plan was
told it may reuse it (``Plan.donated``: input k's buffer may hold output j, as a loop carry's
old and new value, or an argument the function writes) and the chain ends in that output, or
when the chain writes nothing (unchanged loop carries only) and is no graph output; otherwise
the chain's first link is dropped (that step copies, as before). Constants, NumPy results,
values a NumPy fallback reads (its result may be a view of them) and stacks are never taken
over.

When the donated inputs are the caller's arguments (``Plan.arguments``: a function that writes
into its arguments, ``api.WriteBack``), an error or Ctrl-C after an argument was written in
place would leave it half-written where NumPy raised before writing. So a chain rooted at an
argument is kept only if no step from its first write on can stop the call (``may_stop``; the
first write may be a scatter, which checks every index before writing), and those steps are
marked ``Step.atomic`` (their loops do not poll for Ctrl-C: a Ctrl-C is raised when the call
returns, with every write done, as NumPy raises it between statements). The first write may be
made by a step that can stop only before it writes (``stops_before_writing``: a scatter, a short
static-length scan whose body cannot stop; its sub-graphs' steps are marked atomic when it is
emitted, ``emit/control.py``). It is all or none: if
one written argument must be copied back after the call (``WriteBack.write_back``), all are,
so that a Ctrl-C arriving as the call returns never finds some arguments written by the kernel
and others not yet.

``BufferPlan.out_in_place`` (output j -> input k) lists the outputs that live in a donated
input's buffer: the chains above, and (``Plan.out_in_place``) an output that *is* the donated
input (a loop carry the body returns unchanged: no step at all, see ``partition._finish``).

Invariant: this module decides (reading the plan, changing only ``Step.atomic``: buffers are
planned again for each tier); ``buffers.plan_buffers`` gives a class one slot and
``verify.verify_in_place`` checks that no step reads a class member after the next member's
first write (other than the aligned reads of the writing step itself).
"""
from __future__ import annotations

from ...ir import Literal, Var
from .steps import (ControlStep, FallbackStep, LoopGroup, ScanStep, ScatterStep, loop_carries,
                    step_reads)


def covers(view, base) -> bool:
    """Whether ``view`` reads all of ``base`` in its own memory order (``View.covers_base``)."""
    return view.base is base and view.covers_base()


def _bases(plan, atoms):
    for a in atoms:
        if not isinstance(a, Literal):
            base = plan.view_of(a).base
            if isinstance(base, Var):
                yield a, base


def _scatter_candidate(plan, step):
    """[(x, [y])] for a scatter whose operand covers its base x and whose other operands do not
    read x; else []."""
    x, idx, upd = step.eqn.invars
    y = step.eqn.outvars[0]
    if isinstance(x, Literal):
        return []
    view = plan.view_of(x)
    bx = view.base
    if not covers(view, bx) or bx.ty.dtype != y.ty.dtype:
        return []
    if any(b is bx for _, b in _bases(plan, (idx, upd))):
        return []
    return [(bx, [y])]


def _group_candidates(plan, step, writers):
    """[(x, [y...])] for a plain loop group: each y stored whole here (and only here), x read
    only at the element being stored."""
    if type(step) is not LoopGroup or step.sinks:
        return []
    aligned, other = {}, set()                 # id(base) -> base read at the loop index
    for eqn in step.eqns:
        table = eqn.invars[0] if eqn.prim.name == "take" else None
        for a in eqn.invars:
            if isinstance(a, Literal) or id(a) in step.members:
                continue
            view = plan.view_of(a)
            if not isinstance(view.base, Var):
                continue
            if a is table or not covers(view, view.base) or view.shape != step.shape:
                other.add(id(view.base))
            else:
                aligned[id(view.base)] = view.base
    for a, dst in step.stores:                 # a store of a non-member reads it too
        if not isinstance(a, Literal) and id(a) not in step.members:
            other.update(id(b) for _, b in _bases(plan, (a,)))
    ys = [dst.base for a, dst in step.stores
          if isinstance(dst.base, Var) and covers(dst, dst.base) and dst.shape == step.shape
          and writers.get(id(dst.base)) == 1]
    return [(bx, [y for y in ys if y is not bx and y.ty.dtype == bx.ty.dtype and
                  y.ty.size == bx.ty.size])
            for vid, bx in aligned.items() if vid not in other]


def _control_candidates(plan, step, writers, read_only):
    """[(x, [y])] for a loop (``while``, ``while_record``, ``scan``) whose carry j starts from
    an operand covering x that the step reads nowhere else: the carry's buffer can be x's, and
    the loop starts without copying it (``emit/control.py``). Adds to ``read_only`` the carries
    the body returns unchanged (the loop never writes them)."""
    eqn = step.eqn
    carries = loop_carries(eqn)
    if carries is None:
        return []
    first, body_first, n = carries
    body = step.subs[-1]
    found = []
    for j in range(n):
        a, y = eqn.invars[first + j], eqn.outvars[j]
        if isinstance(a, Literal) or y.ty.dynamic or writers.get(id(y)) != 1:
            continue
        view = plan.view_of(a)
        x = view.base
        if covers(view, x) and x.ty.dtype == y.ty.dtype and x.ty.size == y.ty.size and \
                sum(1 for _, b in _bases(plan, eqn.invars) if b is x) == 1:
            found.append((x, [y]))
            if body.out_in_place.get(j) == body_first + j:
                read_only.add(id(y))
    return found


def plan_in_place(plan) -> tuple:
    """(id(y) -> x for every value ``y`` written into the buffer of ``x``, output j -> input k
    for every output in a donated input's buffer: ``plan.out_in_place`` and the chains that
    end there, the ids of the y that are loop carries never written); see the module
    docstring. Marks ``Step.atomic``; the same answer every time."""
    graph = plan.graph
    out_in_place = dict(plan.out_in_place)
    for step in plan.steps:
        step.atomic = False
    end = len(plan.steps)
    last_read, writers, lent = {}, {}, set()
    for pos, step in enumerate(plan.steps):
        for v in step.writes:
            writers[id(v)] = writers.get(id(v), 0) + 1
        members = step.members if isinstance(step, LoopGroup) else ()
        for _, base in _bases(plan, [a for a in step_reads(step) if id(a) not in members]):
            last_read[id(base)] = pos
            if isinstance(step, FallbackStep):
                lent.add(id(base))     # a NumPy result may be a view of its operand's memory
    for _, base in _bases(plan, graph.outvars):
        last_read[id(base)] = end
    for base in plan.py_outputs.values():
        last_read[id(base)] = end
    inputs = {id(v): k for k, v in enumerate(graph.invars)}
    fixed = {id(v) for v in graph.constvars} | {id(v) for v, _ in plan.extra_consts}
    links, consumed, read_only = {}, set(), set()
    donated = {id(graph.invars[k]) for k in plan.donated}
    for pos, step in enumerate(plan.steps):
        if isinstance(step, ScatterStep):
            pairs = _scatter_candidate(plan, step)
        elif isinstance(step, ControlStep):
            pairs = _control_candidates(plan, step, writers, read_only)
        else:
            pairs = _group_candidates(plan, step, writers)
        pairs.sort(key=lambda pair: _root(links, pair[0]) not in donated)  # extend those first
        for x, ys in pairs:
            if last_read.get(id(x), -1) != pos or id(x) in fixed or id(x) in lent or \
                    x.ty.dynamic or isinstance(plan.producer.get(id(x)), FallbackStep):
                continue
            ys = [y for y in ys if id(y) not in links]
            if id(x) in inputs:                # first the output it is donated to, if here
                j = plan.donated.get(inputs[id(x)])
                ys.sort(key=lambda y: plan.out_aliases.get(id(y), -1) != j)
            if ys:
                links[id(ys[0])] = x
                consumed.add(id(x))
    # a chain rooted at an input must end in the output that input is donated to; a caller's
    # argument is written only if nothing after the first write can stop the call
    pos_of = {id(s): k for k, s in enumerate(plan.steps)}
    stops = [k for k, s in enumerate(plan.steps) if may_stop(s)] if plan.arguments else []
    first, accepted = end, []
    for yid in list(links):
        if yid in consumed:                    # not the last value of its chain
            continue
        chain = [yid]
        while id(links[chain[-1]]) in links:
            chain.append(id(links[chain[-1]]))
        root = links[chain[-1]]
        if id(root) not in inputs:
            continue
        if all(y in read_only for y in chain) and yid not in plan.out_aliases:
            continue                           # nothing writes it: it stays the input's
        k, j = inputs[id(root)], plan.out_aliases.get(yid)
        w = pos_of[id(plan.producer[chain[-1]])]
        safe = all(p < w or p == w and stops_before_writing(plan.steps[w]) for p in stops)
        if j is not None and plan.donated.get(k) == j and j not in out_in_place and safe:
            out_in_place[j] = k
            accepted.append((chain[-1], j))
            first = min(first, w)
        else:
            del links[chain[-1]]               # the first write copies the input, as before
    if plan.arguments and accepted:
        if set(plan.donated.values()) - set(out_in_place):   # all or none (see above)
            for yid, j in accepted:
                del links[yid]
                del out_in_place[j]
        else:
            for step in plan.steps[first:]:
                step.atomic = True
    return links, out_in_place, {y for y in read_only if y in links}


def _root(links, x) -> int:
    """id of the value whose buffer ``x`` is in (``x``'s own id if it has its own)."""
    while id(x) in links:
        x = links[id(x)]
    return id(x)


# A loop that writes an argument in place runs with its Ctrl-C polls off (``Step.atomic``): only
# loops of at most this many element-steps (trip count x elements of the body's loops, some
# tens of ms) qualify; a longer one keeps its polls and its argument is copied back after it.
ATOMIC_LOOP_ELEMENTS = 50_000_000


def stops_before_writing(step) -> bool:
    """Whether every way ``step`` can stop the call comes before it writes anything, so it may
    make the first write into an argument: a scatter checks every index first; a ``scan`` of
    static length whose sub-graphs' steps cannot stop, short enough to run without Ctrl-C polls
    (``ATOMIC_LOOP_ELEMENTS``), fails only at the malloc of its scratch, before the carry is
    set up in the argument's buffer (``emit/control.py``, ``_Driver.build``)."""
    if isinstance(step, ScatterStep):
        return True
    if not isinstance(step, ControlStep) or step.eqn.prim.name != "scan" or \
            step.eqn.params["length"] is None:
        return False
    body = step.subs[0]
    if any(may_stop(s) for s in body.steps):      # (first: a while's stacks have no size)
        return False
    work = step.eqn.params["length"] * sum(int(s.eqn.outvars[0].ty.size) if isinstance(
        s, ScanStep) else _elements(s) for s in body.steps)
    return work <= ATOMIC_LOOP_ELEMENTS


def _elements(step) -> int:
    """Elements a step of a loop body computes (a loop group's iteration space; else its
    outputs' sizes)."""
    if isinstance(step, LoopGroup):
        n = 1
        for d in step.shape:
            n *= int(d)
        return n
    return sum(int(v.ty.size) for v in step.writes)


def may_stop(step) -> bool:
    """Whether a step can end a call halfway: an error it detects (an index out of range, a
    failed check, no memory), a NumPy fallback, a loop's Ctrl-C poll or iteration cap. A plain
    loop group without gathers, checks or reductions cannot (its Ctrl-C poll is off when
    ``Step.atomic``), nor can a cumulative sum or product; a scatter checks every index before
    it writes anything."""
    if type(step) is LoopGroup:
        return bool(step.sinks) or any(e.prim.name in ("take", "check") for e in step.eqns)
    return not isinstance(step, ScanStep)
