"""Stacks on the llvm backend: values whose leading dimension is known only at run time.

A stack (``Type.dynamic``: the records of a ``while_record``, the xs/ys of a
``scan[length=None]``, a vjp's tape between its forward and backward graphs) is reached through
a 16-byte *descriptor* ``{ptr data, i64 length}``: a stack var's slot points at its descriptor,
whose ``data`` holds ``length`` rows of ``ty.row`` back to back (C order), or is NULL when
nothing was allocated (then ``length`` is 0).

Ownership (who frees ``data``, always with libc ``free``):
- a stack computed inside a graph (a temporary) is owned by one execution of that graph: its
  descriptor has an arena block of its own (never shared, so no other value can overwrite it),
  is zeroed when the execution starts and freed when it ends, errors included (the segment
  that owns it does both; in a hybrid program, Python does);
- a graph input stack is borrowed: the caller builds the descriptor, the graph never frees it;
- a graph output stack is handed to the caller, which owns the descriptor memory and zeroes it
  before the call: ``Executable`` turns it into a NumPy array that frees the block when the
  array goes (no copy). A sub-graph of a native control step never returns a stack (the
  partitioner falls back for that), so ownership never moves between native code paths.

Growth (``Tape``): a ``while_record`` writes its rows straight into the buffers at row
``count`` and doubles the capacity with ``realloc`` when they are full. Run-time errors set
bits in the call's error cell (``abi.py``): ``ERR_NOMEM`` (an allocation failed;
``MemoryError``) and ``ERR_STACK_LENGTH`` (a scan's stacks differ in length; ``ValueError``).

This module emits the descriptor code; ``runtime/stack_arrays.py`` builds descriptors from NumPy
arrays and adopts the rows a kernel returns.
"""
from __future__ import annotations


from llvmlite import ir

from ..abi import ERR_NOMEM

INITIAL_ROWS = 16              # first capacity of a tape, in rows...
INITIAL_BYTES = 4096           # ...but at most this many bytes for its widest row (at least 1)

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def row_bytes(ty) -> int:
    """Bytes of one row of the stack type ``ty``."""
    return ty.row.size * ty.dtype.itemsize


def initial_rows(rows) -> int:
    """First capacity of a tape whose rows take ``rows`` bytes each: 16 rows (a few Newton or
    bisection steps fit without a realloc), fewer when a row is large (a tape of 1 MB rows
    should not start by allocating 16 MB), never fewer than 1."""
    widest = max([1, *rows])
    return max(1, min(INITIAL_ROWS, INITIAL_BYTES // widest))


# ---------------------------------------------------------------------------------------------
# IR helpers

def libc(module, name):
    """The declaration of ``tj_malloc`` / ``tj_realloc`` / ``tj_free`` (registered by
    ``executable._register_libc``)."""
    fn = module.globals.get(f"tj_{name}")
    if fn is None:
        sig = {"malloc": ir.FunctionType(PTR, [I64]),
               "realloc": ir.FunctionType(PTR, [PTR, I64]),
               "free": ir.FunctionType(ir.VoidType(), [PTR])}[name]
        fn = ir.Function(module, sig, f"tj_{name}")
    return fn


def length_ptr(b, desc):
    return b.gep(desc, [_i64(8)], source_etype=I8)


def load_data(b, desc):
    return b.load(desc, typ=PTR)


def load_length(b, desc):
    return b.load(length_ptr(b, desc), typ=I64)


def store(b, desc, data=None, length=None):
    if data is not None:
        b.store(data, desc)
    if length is not None:
        b.store(length, length_ptr(b, desc))


def zero(b, desc):
    store(b, desc, ir.Constant(PTR, None), _i64(0))


def release(b, module, desc):
    """Free a descriptor's rows and zero it (free(NULL) is a no-op)."""
    b.call(libc(module, "free"), [load_data(b, desc)])
    zero(b, desc)


def set_error(b, cell, code):
    b.atomic_rmw("or", cell, ir.Constant(I32, code), "monotonic")


def emit_alloc_rows(b, module, desc, n, rows, err_cell, fail):
    """``desc = {malloc(n * rows), n}`` (at least 1 byte, so that 0 rows are not a failure);
    on failure set ERR_NOMEM and branch to ``fail``."""
    nbytes = b.mul(n, _i64(rows))
    nbytes = b.select(b.icmp_signed(">", nbytes, _i64(0)), nbytes, _i64(1))
    p = b.call(libc(module, "malloc"), [nbytes])
    with b.if_then(b.icmp_unsigned("==", p, ir.Constant(PTR, None)), likely=False):
        set_error(b, err_cell, ERR_NOMEM)
        b.branch(fail)
    store(b, desc, p, n)


class Tape:
    """The growable stacks of one ``while_record`` execution: ``descs[k]`` (caller-owned
    descriptors, rows of ``rows[k]`` bytes) share one capacity (an alloca). ``start`` empties
    them; ``reserve(n, fail)`` makes room for row ``n`` (doubling by realloc); ``row(k, n)`` is
    row ``n``'s address; ``finish(count)`` stores the lengths."""

    def __init__(self, b, module, descs, rows, err_cell):
        self.b, self.module, self.descs, self.rows = b, module, descs, rows
        self.err_cell = err_cell
        self.cap = b.alloca(I64, name="tape.cap")

    def start(self):
        self.b.store(_i64(0), self.cap)
        for d in self.descs:
            zero(self.b, d)

    def reserve(self, n, fail):
        b = self.b
        cap = b.load(self.cap, typ=I64)
        with b.if_then(b.icmp_signed(">=", n, cap), likely=False):
            new = b.select(b.icmp_signed("==", cap, _i64(0)), _i64(initial_rows(self.rows)),
                           b.mul(cap, _i64(2)))
            for d, rb in zip(self.descs, self.rows):
                p = b.call(libc(self.module, "realloc"),
                           [load_data(b, d), b.mul(new, _i64(max(1, rb)))])
                with b.if_then(b.icmp_unsigned("==", p, ir.Constant(PTR, None)),
                               likely=False):
                    set_error(b, self.err_cell, ERR_NOMEM)   # the old block stays valid
                    b.branch(fail)
                store(b, d, p)
            b.store(new, self.cap)

    def row(self, k, n):
        b = self.b
        return b.gep(load_data(b, self.descs[k]), [b.mul(n, _i64(self.rows[k]))],
                     source_etype=I8)

    def finish(self, count):
        for d in self.descs:
            store(self.b, d, length=count)


# ---------------------------------------------------------------------------------------------
# Python side: descriptors of NumPy arrays, adopting the rows a kernel returns
