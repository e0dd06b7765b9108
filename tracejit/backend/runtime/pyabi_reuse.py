"""Reusing dead output arrays in the native entries of ``pyabi``.

Why: a fresh multi-megabyte output costs a page fault per 4 KiB on every call once glibc has
handed the freed block back to the OS (measured: the gradient of a 1e6-element loss, two f64
outputs, 5.5 ms per call with fresh arrays, 3.1 ms when they are reused).

How: every dispatch table entry (``pyabi_dispatch``) owns a cell, passed to the entry as its
first argument, that holds NULL or a list of ``reuse_slots(spec)`` items: ``REUSE_SLOTS`` per
output of at least ``REUSE_MIN_BYTES``, each None or an array the entry returned earlier. Two
per output, so that ``w = f(w)``, which keeps the previous result alive during the call,
alternates between two arrays. A cached array is returned again, instead of a new one, only
when nothing but the list refers to it (refcount 1, no weak references) and it is still exactly
what ``PyArray_Empty`` makes (type, descr, shape, strides, and flags, OWNDATA and WRITEABLE
among them: the user may have changed any of these in place). Then no Python code can tell it
from a fresh array, because the kernel writes every element of every output: the planner stores
each graph output whole, or copies it whole when it is an input, a constant, a view or a repeat
(checked once by running the test suite with every output buffer pre-filled with 0xFF bytes; a
kernel that skipped elements would return ``np.empty`` garbage anyway). Otherwise a new array is
allocated and put first in the output's slots, pushing the last one out.

Invariants:
- the list is read and written only before the kernel runs (so before the GIL may be released),
  and nothing there can run Python code (no allocation of GC objects, no decref): a thread that
  enters while another one's kernel runs finds a consistent list, in which the arrays in flight
  have a refcount of at least 2;
- pushed-out references are released after the kernel, just before the entry returns (freeing
  an array may run weakref callbacks, and those may call the function again);
- memory is bounded: per dispatch table entry, ``REUSE_SLOTS`` arrays per large output (the
  function keeps up to its last two results of a signature alive). ``set_reuse_outputs(False)``
  (or ``tracejit.config.reuse_outputs = False``, env ``TRACEJIT_REUSE_OUTPUTS=0``) stops reuse at
  once; lists already filled keep their arrays until their entry leaves the table;
- a dropped result stays alive while it is cached: a weak reference to it still resolves until
  it is pushed out (and such an array is never reused);
- the pure-Python entries (``pyabi.python_entry``) never reuse.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir

from ..engine import jit
from .pyobj import (ARR_DESCR, ARR_DIMS, ARR_FLAGS, ARR_ND, ARR_STRIDES, ARR_WEAKLIST,
                    LIST_ITEMS, OB_REFCNT, OB_SIZE, OB_TYPE, declare, descr_symbol, external,
                    i32, i64, load_at, ptr)

REUSE_MIN_BYTES = 64 * 1024     # smaller outputs gain nothing: malloc recycles them, no faults
REUSE_SLOTS = 2                 # cached arrays per output

_reuse_flag = ctypes.c_int32(1)     # read by every entry with cached outputs, on every call
jit.add_symbol("tj_reuse_outputs", ctypes.addressof(_reuse_flag))


def set_reuse_outputs(on: bool) -> None:
    """Turn the reuse of dead output arrays on or off for every entry, effective at once."""
    _reuse_flag.value = 1 if on else 0


def _initial_reuse_outputs() -> bool:
    from ...config import config, on_set
    on_set("reuse_outputs", set_reuse_outputs)
    return bool(config.reuse_outputs)


set_reuse_outputs(_initial_reuse_outputs())


def cached_outputs(spec) -> list:
    """Indices of the outputs of ``spec`` (normalised) that an entry may reuse: arrays of at
    least REUSE_MIN_BYTES (0-d outputs never qualify) that are not written into an argument's
    own buffer (``EntrySpec.writes``: those allocate nothing)."""
    in_place = {j for _, j, p in spec.writes if p}
    return [j for j, (dt, shape) in enumerate(spec.outputs) if j not in in_place and
            int(np.prod(shape, dtype=np.int64)) * dt.itemsize >= REUSE_MIN_BYTES]


def reuse_slots(spec) -> int:
    """Length of the cache list that an entry for ``spec`` takes (0: it caches nothing)."""
    return REUSE_SLOTS * len(cached_outputs(spec.normalized()))


_cache_lengths = {}     # entry address -> reuse_slots of its spec (compiled code is never freed)


def register(entry: int, spec) -> None:
    """Record the cache length of the entry compiled at address ``entry`` for ``spec``."""
    _cache_lengths[entry] = reuse_slots(spec)


def cache_length(entry: int) -> int:
    """Items of the cache list that the entry at ``entry`` takes (0: none, or not registered)."""
    return _cache_lengths.get(entry, 0)


# ---------------------------------------------------------------------------------------------
# IR, emitted into pyabi.emit_entry

def emit_cache_items(b, module, cell, n_cached):
    """Emit: the item array of the cache list in ``*cell`` for ``n_cached`` outputs, or NULL
    when reuse is off, there is no list or it has another length. Returns (builder, items)."""
    fn, null = b.function, ir.Constant(ptr, None)
    n = REUSE_SLOTS * n_cached
    pre, fetch, join = b.block, fn.append_basic_block("cache"), fn.append_basic_block("cache.ok")
    on = b.icmp_signed("!=", b.load(external(module, "tj_reuse_outputs"), typ=i32),
                       ir.Constant(i32, 0))
    b.cbranch(b.and_(on, b.icmp_unsigned("!=", cell, null)), fetch, join)
    b = ir.IRBuilder(fetch)
    lst = b.load(cell, typ=ptr, name="cache.list")
    sized = fn.append_basic_block("cache.sized")
    b.cbranch(b.icmp_unsigned("!=", lst, null), sized, join)
    b = ir.IRBuilder(sized)
    ok = b.icmp_signed("==", load_at(b, lst, OB_SIZE, i64), ir.Constant(i64, n))
    got = b.select(ok, load_at(b, lst, LIST_ITEMS, ptr), null)
    b.branch(join)
    b = ir.IRBuilder(join)
    items = b.phi(ptr, "cache.items")
    for value, block in ((null, pre), (null, fetch), (got, sized)):
        items.add_incoming(value, block)
    return b, items


def emit_output(b, module, items, k, dt, shape, new_array):
    """Emit: a new reference to an array for the ``k``-th cached output (``dt``, ``shape``): the
    first reusable one of its slots in ``items``, else ``new_array(builder)``, which then goes
    first in the slots, pushing the last one out. Returns (builder, array, pushed-out reference
    or NULL); the caller releases the pushed-out reference when the call is over."""
    fn, null = b.function, ir.Constant(ptr, None)
    incref = declare(module, "Py_IncRef", ir.VoidType(), [ptr])
    first = REUSE_SLOTS * k

    def slot(b, s):
        return b.gep(items, [ir.Constant(i64, first + s)], source_etype=ptr)

    tries = [fn.append_basic_block(f"reuse{first + s}") for s in range(REUSE_SLOTS)]
    fresh, merge = fn.append_basic_block("fresh"), fn.append_basic_block("have_out")
    b.cbranch(b.icmp_unsigned("!=", items, null), tries[0], fresh)
    incoming = []                                   # (array, pushed out, block)
    for s, block in enumerate(tries):
        b = ir.IRBuilder(block)
        obj = b.load(slot(b, s), typ=ptr)
        b = _emit_reusable(b, module, obj, dt, shape, (tries + [fresh])[s + 1])
        b.call(incref, [obj])
        incoming.append((obj, null, b.block))
        b.branch(merge)
    b = ir.IRBuilder(fresh)
    out = new_array(b)
    incoming.append((out, null, b.block))
    keep = fn.append_basic_block("keep")
    b.cbranch(b.icmp_unsigned("!=", items, null), keep, merge)
    b = ir.IRBuilder(keep)
    old = b.load(slot(b, REUSE_SLOTS - 1), typ=ptr)
    for s in range(REUSE_SLOTS - 1, 0, -1):
        b.store(b.load(slot(b, s - 1), typ=ptr), slot(b, s))
    b.store(out, slot(b, 0))
    b.call(incref, [out])                           # the list's reference
    incoming.append((out, old, keep))
    b.branch(merge)
    b = ir.IRBuilder(merge)
    result, pushed = b.phi(ptr), b.phi(ptr)
    for o, p, block in incoming:
        result.add_incoming(o, block)
        pushed.add_incoming(p, block)
    return b, result, pushed


def _emit_reusable(b, module, obj, dt, shape, miss):
    """Emit: continue (in the returned builder) if the cached ``obj`` may be returned again,
    else branch to ``miss``."""
    fn, null = b.function, ir.Constant(ptr, None)

    def require(b, cond, what):
        ok = fn.append_basic_block(what)
        b.cbranch(cond, ok, miss)
        return ir.IRBuilder(ok)

    def all_of(b, conds):
        return functools.reduce(b.and_, conds)

    # None has no array fields to read: check the type first.
    b = require(b, b.icmp_unsigned("==", load_at(b, obj, OB_TYPE, ptr),
                                   external(module, "tj_PyArray_Type")), "reuse.array")
    # Contiguity flags depend only on which extents are 1, so a tiny array has the same flags.
    flags = np.empty(tuple(min(d, 2) for d in shape), dt).flags.num
    b = require(b, all_of(b, [
        b.icmp_signed("==", load_at(b, obj, OB_REFCNT, i64), ir.Constant(i64, 1)),
        b.icmp_unsigned("==", load_at(b, obj, ARR_DESCR, ptr), external(module, descr_symbol(dt))),
        b.icmp_signed("==", load_at(b, obj, ARR_ND, i32), ir.Constant(i32, len(shape))),
        b.icmp_signed("==", load_at(b, obj, ARR_FLAGS, i32), ir.Constant(i32, flags)),
        b.icmp_unsigned("==", load_at(b, obj, ARR_WEAKLIST, ptr), null)]), "reuse.unused")
    dims, strides = load_at(b, obj, ARR_DIMS, ptr), load_at(b, obj, ARR_STRIDES, ptr)
    conds, stride = [], dt.itemsize
    for d in reversed(range(len(shape))):          # C strides, as PyArray_Empty sets them
        for base, want in ((dims, shape[d]), (strides, stride)):
            v = b.load(b.gep(base, [ir.Constant(i64, d)], source_etype=i64), typ=i64)
            conds.append(b.icmp_signed("==", v, ir.Constant(i64, want)))
        stride *= shape[d]
    return require(b, all_of(b, conds), "reuse.ok")
