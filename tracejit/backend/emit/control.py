"""Control flow on the llvm backend: cond / while / scan / while_record as native branches and
loops.

When every sub-graph of a ``cond``, ``while``, ``scan`` or ``while_record`` equation is natively
lowerable (its own partition has no NumPy fallback; nested control flow counts when it is native
itself), the partitioner makes a ``ControlStep`` (``plan/partition.py``, ``plan_subgraphs``;
operands that are strided views are first copied, ``contiguous_operands``) and ``emit_control``
emits it into the enclosing segment: each sub-graph becomes one more ``i32 @seg(ptr slots)`` of
the same module (its own buffer plan and slot array, emitted by the enclosing segment's emitter,
``SegmentEmitter.sub_emitter``), and a driver function runs the branch switch or the loop around
calls of those segments. The LLVM IR is one copy of each sub-graph whatever the trip count, and
a graph whose control flow is all native is one ``@kernel`` (so the pyabi fast path applies).

Invariants:
- a carry the body updates in place or returns unchanged (the body's plan keeps it in its input
  buffer: ``plan/inplace.py``, ``Plan.out_in_place``; the carries are donated by
  ``partition._carry_donations``) lives in one buffer, the equation's output (A), for the whole
  loop: no copy and no second buffer; a carry whose initial value dies here starts in that
  value's buffer (no copy at the start either). The other carries are double-buffered: A and a
  scratch copy (B); step s reads the buffer set of parity s and writes the other one (pointer
  swap, no copy); after the loop, if the final carry sits in B it is copied to A once;
- scan ys are written by the body straight into the stacked output at the step index; xs are
  read in place at the step index (reverse scans count down);
- stacks (``stacks.py``): a ``while_record`` writes each step's records straight into growable
  buffers at row ``count`` (``stacks.Tape``); a scan of run-time length takes its trip count
  from its first xs stack (all must have that length, else ``ERR_STACK_LENGTH``) and mallocs
  each ys stack once (n rows) before the loop. A stack passed as a constant is lent to the
  sub-graphs (its descriptor); sub-graphs never return stacks (else: fallback), and a
  sub-graph's own stacks are freed at the end of each of its executions;
- the scratch (B buffers, sub-graph arenas, the cond flag) is one malloc per execution of the
  step, not per iteration;
- errors: a sub-graph segment returns the shared error cell; a non-zero cell stops the loop. A
  while loop that runs more than ``config.max_while_iterations`` bodies (read at run time from
  the native cell ``tj_max_while_iterations``, 0 = no limit) sets ``ERR_WHILE_LIMIT``; a SIGINT
  (Ctrl-C) since the call started sets ``ERR_INTERRUPT`` (``interrupt.py``). Both are
  looked at on a loop's slow path, taken every ``_poll_every()`` bodies (about 1 ms of estimated
  work; and when the cap or the trip count is reached): the fast path of an iteration is one
  compare with the count of the next slow path.

Otherwise the equation stays a NumPy fallback step whose sub-graphs are compiled lazily and driven
from Python, one native call per iteration (``control_fallback.compiled_impl``).
"""
from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir

from ...config import config, on_set
from ...ir import Literal, Var
from ..abi import ERR_NOMEM, ERR_STACK_LENGTH, ERR_WHILE_LIMIT
from ..plan import buffers
from ..plan.rowfuse import RowMatvecGroup
from ..plan.steps import LoopGroup
from . import interrupt, stacks
from .loops import GroupCode

POLL_NS = 1_000_000   # estimated work of the loop bodies between two slow paths (Ctrl-C)...
POLL_MAX = 256        # ...but at most this many bodies: see _poll_every
CONTROL_PRIMS = ("cond", "while", "scan", "while_record")
_ALIGN = 64

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


# ---------------------------------------------------------------------------------------------
# the run-time while cap, shared by every module (an external global resolved by name)

_limit_cell = ctypes.c_int64(0)
_limit_registered = False


def _set_limit(value) -> None:
    _limit_cell.value = int(value or 0)


def _limit_symbol() -> str:
    global _limit_registered
    if not _limit_registered:
        from ..engine import jit
        _set_limit(config.max_while_iterations)
        jit.add_symbol("tj_max_while_iterations", ctypes.addressof(_limit_cell))
        _limit_registered = True
    return "tj_max_while_iterations"


on_set("max_while_iterations", _set_limit)


# ---------------------------------------------------------------------------------------------
# emission

class _Sub:
    """One sub-graph as ``i32 @seg(ptr slots)`` in the enclosing module, plus how to fill its
    slot array: ``ins[i]`` / ``outs[j]`` are the slot numbers of input i / output j."""

    def __init__(self, parent, plan, prefix):
        self.bp = bp = buffers.plan_buffers(plan)
        if parent.step.atomic:        # it writes a caller's argument in place: no Ctrl-C polls
            for step in plan.steps:   # (after plan_buffers, which resets the sub-plan's marks)
                step.atomic = True
        em = parent.em.sub_emitter(plan, bp, prefix)     # the enclosing segment's emitter kind
        em.keepalive = parent.keepalive
        self.emitter = em
        self.seg = em.segment(plan.steps, bp.stack_slots)
        parent.keepalive.extend(bp.const_arrays)
        self.nslots = len(bp.slots) + 1
        self.arena = bp.arena_bytes
        self.ins, self.outs = {}, {}
        for k, s in enumerate(bp.slots):
            if s.kind == "in":
                self.ins[s.index] = k
            elif s.kind == "out":
                self.outs[s.index] = k
        self.in_place = bp.out_in_place       # output j -> input k whose buffer holds it
        assert len(self.outs) + len(self.in_place) == len(plan.graph.outvars), \
            "every sub-graph output owns a slot or lives in a donated input's"


def _round(n):
    return -(-max(1, int(n)) // _ALIGN) * _ALIGN


class _Driver:
    """Builds ``i32 @name(ptr slots)`` for one control step (see the module docstring)."""

    def __init__(self, emitter, step, name):
        self.em, self.step, self.eqn = emitter, step, step.eqn
        self.module = emitter.module
        self.keepalive = emitter.keepalive
        self.subs = [_Sub(self, plan, f"{name}_g{k}") for k, plan in enumerate(step.subs)]
        emitter.has_matmul |= any(s.emitter.has_matmul for s in self.subs)
        self.fn = ir.Function(self.module, ir.FunctionType(I32, [PTR]), name)
        self.fn.linkage = "internal"
        self.fn.args[0].name = "slots"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.scratch_bytes = 0
        self.scratch_uses = []            # (offset, callback(ptr)) resolved after malloc

    # helpers -------------------------------------------------------------------------------------
    def reserve(self, nbytes) -> int:
        off = self.scratch_bytes
        self.scratch_bytes += _round(nbytes)
        return off

    def operand(self, atom):
        """Pointer to an operand's data (literals live in a kept-alive constant array)."""
        b = self.b
        view = self.em.plan.view_of(atom)
        if isinstance(view.base, Literal):        # a literal, or a broadcast of one
            arr = np.full(atom.ty.shape, view.base.value, dtype=atom.ty.dtype)
            self.keepalive.append(arr)
            return self.em.consts.ptr(b, arr)
        return self.em._slot_ptr(b, self.fn.args[0], view)

    def memcpy(self, dst, src, nbytes):
        if nbytes <= 0:
            return
        name = "llvm.memcpy.p0.p0.i64"
        fn = self.module.globals.get(name) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I1]), name)
        self.b.call(fn, [dst, src, _i64(nbytes), ir.Constant(I1, 0)])

    def memset(self, dst, byte, nbytes):
        if nbytes == 1:
            self.b.store(ir.Constant(I8, byte), dst)
            return
        name = "llvm.memset.p0.i64"
        fn = self.module.globals.get(name) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, I8, I64, I1]), name)
        self.b.call(fn, [dst, ir.Constant(I8, byte), _i64(nbytes), ir.Constant(I1, 0)])

    def slot_array(self, sub, scratch, arena_off):
        """The sub-graph's slot array (alloca) with constants, temporaries and the error cell
        filled in; inputs and outputs are set by the caller."""
        b = self.b
        arr = b.alloca(PTR, size=_i64(sub.nslots))
        for k, s in enumerate(sub.bp.slots):
            if s.kind == "const":
                self.set(arr, k, self.em.consts.ptr(b, sub.bp.const_arrays[s.index]))
            elif s.kind == "temp":
                self.set(arr, k, b.gep(scratch, [_i64(arena_off + s.index)], source_etype=I8))
        self.set(arr, sub.bp.err_slot, self.err_cell)
        return arr

    def set(self, arr, k, p):
        self.b.store(p, self.b.gep(arr, [_i64(k)], source_etype=PTR))

    def call(self, sub, arr):
        return self.b.call(sub.seg, [arr])

    @staticmethod
    def nbytes(ty):
        return int(ty.size) * np.dtype(ty.dtype).itemsize

    # the driver ----------------------------------------------------------------------------------
    def build(self) -> ir.Function:
        b = self.b
        self.err_cell = b.load(b.gep(self.fn.args[0], [_i64(self.em.err_slot)],
                                     source_etype=PTR), typ=PTR)
        self.poll = interrupt.Poller(b, self.module, self.err_cell)
        self.ins = [self.operand(a) for a in self.eqn.invars]
        self.outs = [self.operand(v) for v in self.eqn.outvars]
        arena_offs = [self.reserve(s.arena) if s.arena else 0 for s in self.subs]
        # Each prim method runs twice: with ``None`` it only reserves its scratch (carry B
        # buffers, flags) and returns the layout; after the single malloc it emits the code.
        prim_fn = {"cond": self._cond, "while": self._while, "scan": self._scan,
                   "while_record": self._while}[self.eqn.prim.name]
        layout = prim_fn(None)
        scratch = ir.Constant(PTR, None)
        free = None
        if self.scratch_bytes:
            malloc = self.module.globals.get("tj_malloc") or ir.Function(
                self.module, ir.FunctionType(PTR, [I64]), "tj_malloc")
            raw = b.call(malloc, [_i64(self.scratch_bytes + _ALIGN)], name="scratch.raw")
            with b.if_then(b.icmp_unsigned("==", raw, ir.Constant(PTR, None)), likely=False):
                stacks.set_error(b, self.err_cell, ERR_NOMEM)    # MemoryError
                b.ret(b.load(self.err_cell, typ=I32))
            addr = b.and_(b.add(b.ptrtoint(raw, I64), _i64(_ALIGN - 1)), _i64(-_ALIGN))
            scratch = b.gep(raw, [b.sub(addr, b.ptrtoint(raw, I64))], source_etype=I8,
                            name="scratch")     # 64-byte aligned, like the arena blocks
            free = self.module.globals.get("tj_free") or ir.Function(
                self.module, ir.FunctionType(ir.VoidType(), [PTR]), "tj_free")
        arrays = [self.slot_array(s, scratch, off) for s, off in zip(self.subs, arena_offs)]
        prim_fn((scratch, arrays, layout))
        if free is not None:
            self.b.call(free, [raw])
        self.b.ret(self.b.load(self.err_cell, typ=I32))
        return self.fn

    def _ok(self, rc):
        return self.b.icmp_signed("==", rc, ir.Constant(I32, 0))

    # cond ----------------------------------------------------------------------------------------
    def _cond(self, state):
        if state is None:
            return None
        scratch, arrays, _ = state
        b = self.b
        nb = len(self.subs)
        idx = b.load(self.ins[0], typ=I32)
        idx = b.select(b.icmp_signed("<", idx, ir.Constant(I32, 0)), ir.Constant(I32, 0), idx)
        idx = b.select(b.icmp_signed(">", idx, ir.Constant(I32, nb - 1)),
                       ir.Constant(I32, nb - 1), idx)
        done = self.fn.append_basic_block("cond.done")
        blocks = [self.fn.append_basic_block(f"cond.branch{k}") for k in range(nb)]
        sw = b.switch(idx, blocks[0])
        for k, blk in enumerate(blocks):
            sw.add_case(ir.Constant(I32, k), blk)
            b.position_at_end(blk)
            sub, arr = self.subs[k], arrays[k]
            for i, slot in sub.ins.items():
                self.set(arr, slot, self.ins[1 + i])
            for j, slot in sub.outs.items():
                self.set(arr, slot, self.outs[j])
            self.call(sub, arr)
            b.branch(done)
        b.position_at_end(done)

    # loops ---------------------------------------------------------------------------------------
    def _carry_offsets(self, carry_vars, body, first):
        """Scratch offsets of the B buffers, None for a carry kept in place (body input
        ``first + j`` holds body output j)."""
        return [None if body.in_place.get(j) == first + j else self.reserve(self.nbytes(v.ty))
                for j, v in enumerate(carry_vars)]

    def _carry_buffers(self, carry_vars, scratch, offs):
        """(A pointers = the equation's outputs, B pointers in scratch) for the carries; a carry
        kept in place has B = A."""
        b = self.b
        a = self.outs[:len(carry_vars)]
        bb = [pa if o is None else b.gep(scratch, [_i64(o)], source_etype=I8)
              for pa, o in zip(a, offs)]
        return a, bb

    def _start_carries(self, carry_vars, a, init, first):
        """Copy each carry's initial value (operand ``first + j``) into its A buffer, unless
        the buffer plan put the carry in that operand's own buffer (``plan/inplace.py``)."""
        slot_of, plan = self.em.slot_of, self.em.plan
        for j, (v, dst, src) in enumerate(zip(carry_vars, a, init)):
            base = plan.view_of(self.eqn.invars[first + j]).base
            if not (isinstance(base, Var) and slot_of(base) == slot_of(v)):
                self.memcpy(dst, src, self.nbytes(v.ty))

    def _loop_state(self):
        """(parity, count, next_slow): allocas; ``next_slow`` is the count at which the loop
        next takes its slow path (0: at once), see ``_slow_after``."""
        b = self.b
        parity = b.alloca(I1, name="parity")
        b.store(ir.Constant(I1, 0), parity)
        count = b.alloca(I64, name="count")
        b.store(_i64(0), count)
        next_slow = b.alloca(I64, name="next.slow")
        b.store(_i64(0), next_slow)
        return parity, count, next_slow

    def _poll_every(self) -> int:
        """Bodies between two slow paths: about POLL_NS of the sub-graphs' estimated work, at
        most POLL_MAX (a tight loop: a branch taken once in 16 iterations was mispredicted
        enough to cost 8% of a 6 ns iteration; once in 256, nothing measurable), and 1 when a
        sub-graph has a step without an estimate (a matmul, a nested loop, ...)."""
        ns = 0
        for sub in self.subs:
            for step in sub.emitter.plan.steps:
                code = sub.emitter.codes.get(id(step))
                if not isinstance(step, LoopGroup) or isinstance(step, RowMatvecGroup) or \
                        not isinstance(code, GroupCode):
                    return 1
                ns += code.work
        return max(1, min(POLL_MAX, int(POLL_NS // max(ns, 1))))

    def _slow_after(self, next_slow, n, bound):
        """Take the slow path again ``_poll_every()`` bodies after count ``n``, or at ``bound``
        (an i64 the slow path must see: the trip count, the while cap) if that comes first."""
        b = self.b
        nxt = b.add(n, _i64(self._poll_every()))
        b.store(b.select(b.icmp_signed("<", bound, nxt), bound, nxt), next_slow)

    def _swap_back(self, parity, a, bb, carry_vars):
        """After the loop: if the final carry is in the B buffers, copy it to A once."""
        b = self.b
        if all(pa is pb for pa, pb in zip(a, bb)):
            return
        with b.if_then(b.load(parity, typ=I1)):
            for v, pa, pb in zip(carry_vars, a, bb):
                if pa is not pb:
                    self.memcpy(pa, pb, self.nbytes(v.ty))

    def _while(self, state):
        """while, and while_record (the same loop, also recording each step's rows)."""
        eqn = self.eqn
        p = eqn.params
        ncc, nbc = p["n_cond_consts"], p["n_body_consts"]
        record = eqn.prim.name == "while_record"
        nc = p["n_carry"] if record else len(eqn.outvars)
        carry_vars = list(eqn.outvars[:nc])
        if state is None:
            offs = self._carry_offsets(carry_vars, self.subs[1], nbc)
            flag = self.reserve(1)
            return offs, flag
        scratch, (c_arr, b_arr), (offs, flag_off) = state
        cond, body = self.subs
        b = self.b
        init = self.ins[ncc + nbc:]
        a, bb = self._carry_buffers(carry_vars, scratch, offs)
        self._start_carries(carry_vars, a, init, ncc + nbc)
        tape = None
        if record:                      # stacks: live (one byte per element), then the ys
            tape = stacks.Tape(b, self.module, self.outs[nc:],
                               [stacks.row_bytes(v.ty) for v in eqn.outvars[nc:]],
                               self.err_cell)
            tape.start()
        flag = b.gep(scratch, [_i64(flag_off)], source_etype=I8)
        for i, slot in cond.ins.items():
            if i < ncc:
                self.set(c_arr, slot, self.ins[i])
        self.set(c_arr, cond.outs[0], flag)
        for i, slot in body.ins.items():
            if i < nbc:
                self.set(b_arr, slot, self.ins[ncc + i])
        limit_g = self.module.globals.get(_limit_symbol()) or ir.GlobalVariable(
            self.module, I64, _limit_symbol())
        parity, count, next_slow = self._loop_state()
        top = self.fn.append_basic_block("while.top")
        run = self.fn.append_basic_block("while.body")
        over = self.fn.append_basic_block("while.limit")
        exit_ = self.fn.append_basic_block("while.exit")
        b.branch(top)
        b.position_at_end(top)
        par = b.load(parity, typ=I1)
        cur = [pa if pa is pb else b.select(par, pb, pa) for pa, pb in zip(a, bb)]
        nxt = [pa if pa is pb else b.select(par, pa, pb) for pa, pb in zip(a, bb)]
        for i, slot in cond.ins.items():
            if i >= ncc:
                self.set(c_arr, slot, cur[i - ncc])
        rc = self.call(cond, c_arr)
        go = b.and_(self._ok(rc), b.icmp_unsigned("!=", b.load(flag, typ=I8),
                                                  ir.Constant(I8, 0)))
        check = self.fn.append_basic_block("while.check")
        b.cbranch(go, check, exit_)
        b.position_at_end(check)
        n = b.load(count, typ=I64)                 # bodies run so far
        slow = self.fn.append_basic_block("while.slow")
        b.cbranch(b.icmp_signed(">=", n, b.load(next_slow, typ=I64)), slow, run)
        b.position_at_end(slow)                   # every _poll_every() bodies: cap, Ctrl-C
        limit = b.load(limit_g, typ=I64)
        capped = b.icmp_signed(">", limit, _i64(0))
        polled = self.fn.append_basic_block("while.poll")
        b.cbranch(b.and_(capped, b.icmp_signed(">=", n, limit)), over, polled)
        b.position_at_end(polled)
        self.poll.check(b, exit_)
        self._slow_after(next_slow, n, b.select(capped, limit, _i64(2**63 - 1)))
        b.branch(run)
        b.position_at_end(over)
        b.atomic_rmw("or", self.err_cell, ir.Constant(I32, ERR_WHILE_LIMIT), "monotonic")
        b.branch(exit_)
        b.position_at_end(run)
        for i, slot in body.ins.items():
            if i >= nbc:
                self.set(b_arr, slot, cur[i - nbc])
        if tape is not None:
            tape.reserve(n, exit_)
            live = tape.row(0, n)
            self.memset(live, 1, tape.rows[0])
        for j, slot in body.outs.items():
            self.set(b_arr, slot, nxt[j] if j < nc else tape.row(j - nc + 1, n))
        rc = self.call(body, b_arr)
        b.store(b.not_(par), parity)
        ok = self._ok(rc)
        b.store(b.select(ok, b.add(n, _i64(1)), n), count)   # rows complete
        b.cbranch(ok, top, exit_)
        b.position_at_end(exit_)
        if tape is not None:
            tape.finish(b.load(count, typ=I64))
        self._swap_back(parity, a, bb, carry_vars)

    def _scan(self, state):
        eqn = self.eqn
        p = eqn.params
        length, reverse, nc, ncarry = p["length"], p["reverse"], p["n_consts"], p["n_carry"]
        carry_vars = list(eqn.outvars[:ncarry])
        if state is None:
            return self._carry_offsets(carry_vars, self.subs[0], nc)
        scratch, (arr,), offs = state
        body = self.subs[0]
        b = self.b
        init = self.ins[nc:nc + ncarry]
        xs, xvars = self.ins[nc + ncarry:], eqn.invars[nc + ncarry:]
        ys, yvars = self.outs[ncarry:], eqn.outvars[ncarry:]
        exit_ = self.fn.append_basic_block("scan.exit")
        if length is None:              # stacks: the trip count is their run-time length
            for y in ys:
                stacks.zero(b, y)
            n = stacks.load_length(b, xs[0])
            for x in xs[1:]:
                with b.if_then(b.icmp_signed("!=", stacks.load_length(b, x), n),
                               likely=False):
                    stacks.set_error(b, self.err_cell, ERR_STACK_LENGTH)
                    b.branch(exit_)
            for y, v in zip(ys, yvars):
                stacks.emit_alloc_rows(b, self.module, y, n, stacks.row_bytes(v.ty),
                                       self.err_cell, exit_)
            xs = [stacks.load_data(b, x) for x in xs]
            ys = [stacks.load_data(b, y) for y in ys]
        else:
            n = _i64(length)
        a, bb = self._carry_buffers(carry_vars, scratch, offs)
        self._start_carries(carry_vars, a, init, nc)
        for i, slot in body.ins.items():
            if i < nc:
                self.set(arr, slot, self.ins[i])
        parity, count, next_slow = self._loop_state()
        top = self.fn.append_basic_block("scan.top")
        run = self.fn.append_basic_block("scan.body")
        done = self.fn.append_basic_block("scan.done")
        b.branch(top)
        b.position_at_end(top)
        step = b.load(count, typ=I64)
        slow = self.fn.append_basic_block("scan.slow")
        b.cbranch(b.icmp_signed(">=", step, b.load(next_slow, typ=I64)), slow, run)
        b.position_at_end(slow)                 # every _poll_every() steps, and at the end
        polled = self.fn.append_basic_block("scan.poll")
        b.cbranch(b.icmp_signed("<", step, n), polled, done)
        b.position_at_end(polled)
        if not self.step.atomic:               # (see plan/inplace.py, stops_before_writing)
            self.poll.check(b, done)
        self._slow_after(next_slow, step, n)
        b.branch(run)
        b.position_at_end(run)
        i = b.sub(b.sub(n, _i64(1)), step) if reverse else step
        par = b.load(parity, typ=I1)
        for k, (pa, pb) in enumerate(zip(a, bb)):
            if nc + k in body.ins:
                self.set(arr, body.ins[nc + k], pa if pa is pb else b.select(par, pb, pa))
            if k in body.outs:
                self.set(arr, body.outs[k], b.select(par, pa, pb))
        for k, (x, v) in enumerate(zip(xs, xvars)):
            self.set(arr, body.ins[nc + ncarry + k],
                     b.gep(x, [b.mul(i, _i64(stacks.row_bytes(v.ty)))], source_etype=I8))
        for k, (y, v) in enumerate(zip(ys, yvars)):
            self.set(arr, body.outs[ncarry + k],
                     b.gep(y, [b.mul(i, _i64(stacks.row_bytes(v.ty)))], source_etype=I8))
        rc = self.call(body, arr)
        b.store(b.not_(par), parity)
        b.store(b.add(step, _i64(1)), count)
        b.cbranch(self._ok(rc), top, done)
        b.position_at_end(done)
        self._swap_back(parity, a, bb, carry_vars)
        b.branch(exit_)
        b.position_at_end(exit_)


def emit_control(emitter, b, slots, step, name):
    """Emit ``step`` (a ``ControlStep``) as a driver function and call it from the segment
    being built with ``b`` (``slots``: the segment's slot array). Returns the driver."""
    driver = _Driver(emitter, step, name)
    b.call(driver.build(), [slots])
    return driver


def scratch_bytes(emitter) -> int:
    """Bytes the control steps of a segment emitter malloc while they run (nested loops
    included; an upper bound: nested scratch is counted as if live at once)."""
    total = 0
    for code in emitter.codes.values():
        if isinstance(code, _Driver):
            total += code.scratch_bytes + sum(scratch_bytes(s.emitter) for s in code.subs)
    return total


def in_place_counts(emitter, bp) -> tuple:
    """(values written in place, loop carries kept in one buffer) of a plan (``bp``: its buffer
    plan) and of the control steps ``emitter`` emitted for it, nested loops included."""
    updates, carries = len(bp.in_place), 0
    for code in emitter.codes.values():
        if isinstance(code, _Driver):
            carries += _carried_in_place(code)
            for sub in code.subs:
                u, c = in_place_counts(sub.emitter, sub.bp)
                updates, carries = updates + u, carries + c
    return updates, carries


def _carried_in_place(driver) -> int:
    p, name = driver.eqn.params, driver.eqn.prim.name
    if name == "cond":
        return 0
    body = driver.subs[-1]
    first = p["n_consts"] if name == "scan" else p["n_body_consts"]
    return sum(1 for j, k in body.in_place.items() if k == first + j)


def describe(step, driver=None) -> str:
    """One line for ``Executable.describe`` (``driver``: the step's emitted ``_Driver``, to
    name the carries kept in one buffer)."""
    e = step.eqn
    inner = sum(len(s.steps) for s in step.subs)
    extra = f" length={e.params['length']}" if e.prim.name == "scan" else ""
    if e.prim.name == "while_record":
        rows = sum(stacks.row_bytes(v.ty) for v in e.outvars[e.params["n_carry"]:])
        extra = f" (tape {rows} bytes/step)"
    kept = _carried_in_place(driver) if isinstance(driver, _Driver) else 0
    if kept:
        extra += f" ({kept} carried in place)"
    return f"native {e.prim.name}{extra}: {len(step.subs)} sub-graph(s), {inner} steps"
