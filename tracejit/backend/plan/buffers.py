"""Slots and the temporary arena, planned from liveness.

Every materialised value gets a *slot* (one data pointer): graph inputs, constants (the planner's
iota ranges included), graph outputs (a var stored straight into an output buffer), temporaries
(an offset into one arena per call) and arrays produced by NumPy fallbacks.

Liveness is per schedule position: a temporary is live from the first step that writes it to
the last step that reads it (reads through views count). An arena block is reused only by a value
first written strictly after the block's last read, so a loop never reads and writes the same
bytes through different index maps. Blocks are 64-byte aligned; best fit, else grow the arena.

A value written in place (``inplace.py``: it takes over the buffer of a value that dies where it
is born) shares the slot of its chain's root, whose liveness then spans the whole chain; the
root's slot is the chain's output buffer when the chain ends in a graph output, or the donated
input's (``BufferPlan.out_in_place``: output j lives in input k's buffer).

A stack's slot points at its 16-byte descriptor (``stacks.py``). A stack temporary's descriptor
gets an arena block of its own that no other value ever shares: the execution that owns the
stack zeroes it first and frees its rows last (``BufferPlan.stack_slots``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...config import config
from ...ir import Literal
from ..abi import DESC_BYTES
from .inplace import plan_in_place
from .steps import FallbackStep, LoopGroup, MatmulStep, step_reads
from .verify import verify_buffers

ALIGN = 64


@dataclass
class Slot:
    kind: str          # "in" | "out" | "const" | "temp" | "py"
    index: int         # input/output position, const number, arena offset; -1 for py
    var: object
    nbytes: int


class BufferPlan:
    def __init__(self):
        self.slots: list = []
        self.slot_index: dict = {}       # id(var) -> slot number
        self.arena_bytes = 0
        self.const_arrays: list = []     # kept alive; addresses are baked into the kernel
        self.stack_slots: list = []      # slot numbers of stack temporaries (owned, freed)
        self.in_place: dict = {}         # id(var) -> the var whose buffer it is written into
        self.out_in_place: dict = {}     # output index -> input index whose buffer holds it
        self.shared: list = []           # (var, the var owning its slot) of in-place values
        self.read_only: set = set()      # ids of in-place values never written (loop carries)

    def add(self, var, kind, index):
        self.slot_index[id(var)] = len(self.slots)
        self.slots.append(Slot(kind, index, var, value_bytes(var.ty)))

    def slot_of(self, var) -> int:
        return self.slot_index[id(var)]


def value_bytes(ty) -> int:
    """Bytes a slot's pointer reaches: the data, or a stack's descriptor."""
    return DESC_BYTES if ty.dynamic else ty.size * ty.dtype.itemsize


def _reads(plan, step):
    bases = []
    for a in step_reads(step):                   # a matmul's epilogue leaves are read too
        if isinstance(a, Literal) or (isinstance(step, LoopGroup) and id(a) in step.members):
            continue
        base = plan.view_of(a).base
        if not isinstance(base, Literal):
            bases.append(base)
    return bases


def plan_buffers(plan) -> BufferPlan:
    graph = plan.graph
    bp = BufferPlan()
    for i, v in enumerate(graph.invars):
        bp.add(v, "in", i)
    consts = list(zip(graph.constvars, graph.constvals)) + list(plan.extra_consts)
    for v, val in consts:
        arr = np.array(val, dtype=v.ty.dtype, order="C")
        bp.add(v, "const", len(bp.const_arrays))
        bp.const_arrays.append(arr)
    first_write, last_read = {}, {}
    for pos, step in enumerate(plan.steps):
        for v in step.writes:
            first_write.setdefault(id(v), (pos, v))
        for base in _reads(plan, step):
            last_read[id(base)] = pos
    bp.in_place, bp.out_in_place, bp.read_only = plan_in_place(plan)
    links = bp.in_place
    root_out = {}                        # id(chain root) -> output index of the chain's end
    for vid in links:
        root = links[vid]
        while id(root) in links:
            root = links[id(root)]
        if vid in plan.out_aliases:
            root_out[id(root)] = plan.out_aliases[vid]
        end = max(last_read.get(vid, -1), first_write[vid][0])
        last_read[id(root)] = max(last_read.get(id(root), -1), end)
    temps = []
    for vid, (pos, v) in first_write.items():
        if vid in bp.slot_index or vid in links:
            continue
        if vid in plan.out_aliases or vid in root_out:
            bp.add(v, "out", plan.out_aliases.get(vid, root_out.get(vid)))
        elif isinstance(plan.producer.get(vid), FallbackStep):
            bp.add(v, "py", -1)
        elif v.ty.dynamic:
            bp.add(v, "temp", bp.arena_bytes)
            bp.stack_slots.append(bp.slot_of(v))
            bp.arena_bytes += ALIGN
        else:
            temps.append((pos, last_read.get(vid, pos), v))
    blocks = []                          # [offset, size, last_read]
    for pos, last, v in sorted(temps, key=lambda t: t[0]):
        need = -(-max(1, v.ty.size * v.ty.dtype.itemsize) // ALIGN) * ALIGN
        best = None
        for blk in blocks:
            if blk[2] < pos and blk[1] >= need and (best is None or blk[1] < best[1]):
                best = blk
        if best is None:
            best = [bp.arena_bytes, need, last]
            bp.arena_bytes += need
            blocks.append(best)
        best[2] = max(last, pos)
        bp.add(v, "temp", best[0])
    for vid, (pos, v) in first_write.items():        # in plan order: roots come first
        if vid in links:
            bp.slot_index[vid] = bp.slot_index[id(links[vid])]
            bp.shared.append((v, bp.slots[bp.slot_index[vid]].var))
    bp.err_slot = len(bp.slots)          # pointer to the call's i32 error cell
    if config.check_ir:
        verify_buffers(plan, bp)
    return bp


def step_kind(step) -> str:
    return "numpy" if isinstance(step, FallbackStep) else (
        "matmul" if isinstance(step, MatmulStep) else "loop")
