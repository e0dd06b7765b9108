"""Ctrl-C stops long native loops: a SIGINT counter that compiled loops poll.

A process-wide i32 counter, ``tj_interrupt_epoch``, counts the SIGINTs seen by a tiny native
signal handler (``tj_sigint_handler``, library code compiled with llvmlite): it adds 1 and
chains to the C-level handler it replaced (CPython's own, which makes KeyboardInterrupt happen
at the next bytecode), so Python's handling is unchanged. A call records the counter when it
starts, in the second i32 of its error cell (``{i32 error, i32 start}``, shared by every slot
array of the call): ``emit_call_start`` in ``@kernel``, ``call_start()`` for a hybrid program.
Polls (``Poller.check``) compare the counter with that start and, when it moved, set
``ERR_INTERRUPT`` in the cell and leave the loop; the error travels out like the others (a
non-zero cell stops enclosing loops and segments) and ``executable._raise`` runs Python's
pending SIGINT handler (``raise_interrupt``), so the user gets one KeyboardInterrupt.

Invariants and why:
- a counter, not a flag that each call clears: a SIGINT from before the call (already handled
  by Python) is ignored, and calls in other threads never write a shared line;
- only calls from Python's main thread are interruptible (as in Python, where only the main
  thread sees KeyboardInterrupt): other threads record the start -1, which no poll matches;
- polls are cheap and rare, one relaxed load of the counter each: on the slow path of a while
  or scan loop (every ``control._poll_every()`` bodies, about 1 ms of estimated work), per block
  of about ``BLOCK_NS`` of a long fused loop (``emit_blocked``; the thread pool's workers run
  blocks too, so they stop early), per chunk of a chunked reduction, per row block of a pooled
  matmul and per column panel of a matmul kernel (``matmul/tiled.py``, given ``Poller`` as its
  ``poll``); never per element. Not polled: argmax row walks, scatters, the matrix-vector dot
  path and one-dim fused reductions on one thread (their vector accumulators span the range);
- a poll also stops at error bits another step or worker thread set (a failed malloc in one
  row block of a pooled product): the call raises anyway, so the rest of its work is waste;
- the handler is installed lazily (``install``, from ``Executable``) on the main thread, only
  when Python's SIGINT handler is a Python callable (``default_int_handler`` or the user's) and
  the C-level one is a real function; it is installed again after something (``signal.signal``)
  replaced it, and the previous handler is put back at exit, before the JIT memory goes away.
  Linux only (the ``struct sigaction`` layout); elsewhere nothing is interruptible.
"""
from __future__ import annotations

import atexit
import ctypes
import signal
import sys
import threading

from llvmlite import ir

from ... import forksafe
from ..abi import ERR_INTERRUPT
from .loops import _for

NOT_INTERRUPTIBLE = -1        # the start recorded by a call from another thread than main
BLOCK_NS = 1_000_000          # estimated work between two polls of a long fused loop
LONG_NS = 20_000_000          # fused loops estimated shorter than this are not split in blocks

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
_SA_SIGINFO = 4

_epoch = ctypes.c_int32(0)
_main_thread = ctypes.c_uint64(threading.main_thread().ident or 0)
_previous = ctypes.c_void_p(0)          # the C-level handler we chain to
_previous_siginfo = ctypes.c_int32(0)   # whether it takes (sig, info, context)
_CELLS = {"tj_interrupt_epoch": _epoch, "tj_main_thread": _main_thread,
          "tj_sigint_previous": _previous, "tj_sigint_previous_siginfo": _previous_siginfo}
_registered = False
# libc's functions looked up once, at import: a lookup (dlopen/dlsym, or LLVM resolving an
# undeclared symbol through dlsym) takes the dynamic loader's lock, which a thread of the parent
# may hold when it forks; a forked child that compiles its first kernel must not need it
_libc = ctypes.CDLL(None, use_errno=True)
_sigaction = _libc.sigaction
_sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
_PTHREAD_SELF = ctypes.cast(_libc.pthread_self, ctypes.c_void_p).value


def _i32(v):
    return ir.Constant(I32, int(v))


def _register():
    global _registered
    if not _registered:
        from ..engine import jit
        for name, cell in _CELLS.items():
            jit.add_symbol(name, ctypes.addressof(cell))
        jit.add_symbol("tj_pthread_self", _PTHREAD_SELF)
        _registered = True


def _global(module, name, ty):
    _register()
    return module.globals.get(name) or ir.GlobalVariable(module, ty, name)


def _after_fork_in_child():
    _main_thread.value = threading.get_ident()   # the forking thread is the child's main
    # a forked child does not install the handler itself (building it compiles library code,
    # which can need state a thread of the parent held at the fork: a rare child hang in
    # tests/test_reliability.py); one the parent installed is inherited and keeps working
    _state["forked"] = True


forksafe.in_child(_after_fork_in_child)


# ---------------------------------------------------------------------------------------------
# IR: recording the start, polling

def start_ptr(b, cell):
    """The start word of an error cell (``{i32 error, i32 start}``)."""
    return b.gep(cell, [_i32(1)], source_etype=I32)


def emit_call_start(b, module, cell):
    """Record the counter in ``cell``'s start word (-1 when not on Python's main thread)."""
    _register()
    self_fn = module.globals.get("tj_pthread_self") or ir.Function(
        module, ir.FunctionType(I64, []), "tj_pthread_self")
    main = b.load(_global(module, "tj_main_thread", I64), typ=I64)
    now = b.load_atomic(_global(module, "tj_interrupt_epoch", I32), "monotonic", 4, typ=I32)
    on_main = b.icmp_unsigned("==", b.call(self_fn, []), main)
    b.store(b.select(on_main, now, _i32(NOT_INTERRUPTIBLE)), start_ptr(b, cell))


class Poller:
    """Polls of one function: the call's start is read once (at the builder's position, which
    must dominate every ``check``), each ``check`` is one relaxed load and a branch."""

    def __init__(self, b, module, cell):
        self.module, self.cell = module, cell
        self.start = b.load(start_ptr(b, cell), typ=I32, name="intr.start")
        self.armed = b.icmp_signed("!=", self.start, _i32(NOT_INTERRUPTIBLE))
        self.epoch = _global(module, "tj_interrupt_epoch", I32)

    def check(self, b, stop_block):
        """If a SIGINT arrived since the call started: set ``ERR_INTERRUPT``, go to
        ``stop_block``; if another step or thread of the call already failed (error bits set:
        a MemoryError, an index out of range...), go there too, since the call raises anyway;
        else continue at a new block (the builder is left there)."""
        now = b.load_atomic(self.epoch, "monotonic", 4, typ=I32)
        hit = b.and_(self.armed, b.icmp_signed("!=", now, self.start))
        failed = b.icmp_signed("!=", b.load_atomic(self.cell, "monotonic", 4, typ=I32), _i32(0))
        fn = b.function
        stop, cont = fn.append_basic_block("intr.stop"), fn.append_basic_block("intr.go")
        b.cbranch(b.or_(hit, failed), stop, cont)
        b.position_at_end(stop)
        b.atomic_rmw("or", self.cell, b.select(hit, _i32(ERR_INTERRUPT), _i32(0)), "monotonic")
        b.branch(stop_block)
        b.position_at_end(cont)


def emit_blocked(module, name, body, block, err_slot) -> ir.Function:
    """``void @name(ptr slots, i64 start, i64 end)``: ``body`` (a fused loop's function, same
    signature) over [start, end) in blocks of ``block`` (a multiple of the loop's grain, so
    each block starts where the loop expects), polling between blocks. Only for loops whose
    outermost dim is not reduced (each index of it is computed alone) or is a scalar loop
    whose reductions update the outputs in memory at each index (a loop nest of two dims or
    more): the blocks give the same results as one call."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    fn.linkage = "internal"
    slots, lo, hi = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    cell = b.load(b.gep(slots, [ir.Constant(I64, err_slot)], source_etype=PTR), typ=PTR)
    poll = Poller(b, module, cell)
    stop = fn.append_basic_block("blk.stop")

    def one(i):
        poll.check(b, stop)
        nxt = b.add(i, ir.Constant(I64, block))
        b.call(body, [slots, i, b.select(b.icmp_signed("<", nxt, hi), nxt, hi)])
    _for(b, lo, hi, ir.Constant(I64, block), one, "blk")
    b.branch(stop)
    b.position_at_end(stop)
    b.ret_void()
    return fn


def block_rows(work_ns, rows, grain) -> int | None:
    """Rows of a fused loop's outermost dim per poll (a multiple of ``grain``), or None when
    the loop is too short to need polls (estimated ``work_ns`` over ``rows`` rows)."""
    if work_ns < LONG_NS or rows < 2:
        return None
    per_row = work_ns / rows
    block = max(1, int(BLOCK_NS / per_row))
    return -(-block // grain) * grain


# ---------------------------------------------------------------------------------------------
# Python side

def call_start() -> int:
    """The start a call made from Python records (``emit_call_start``'s rule)."""
    _register()
    if threading.get_ident() != _main_thread.value:
        return NOT_INTERRUPTIBLE
    return _epoch.value


def raise_interrupt():
    """A kernel stopped for a SIGINT: run Python's pending SIGINT handler now, so that what it
    raises (KeyboardInterrupt by default) comes from this call and not once more at a later
    bytecode; a handler that returns cannot resume the stopped kernel, so KeyboardInterrupt."""
    ctypes.pythonapi.PyErr_CheckSignals()
    raise KeyboardInterrupt


class _Sigaction(ctypes.Structure):
    """glibc's ``struct sigaction`` on Linux (x86-64, aarch64): the handler, a 1024-bit mask,
    the flags and the restorer."""
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_uint64 * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]


_state = {"handler": None, "saved": None}    # no lock: install runs on the main thread only


def _build_handler():
    """``void @tj_sigint_handler(i32 sig, ptr info, ptr context)``: count, then chain."""
    m = ir.Module("tj_sigint")
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [I32, PTR, PTR]), "tj_sigint_handler")
    sig, info, context = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.atomic_rmw("add", _global(m, "tj_interrupt_epoch", I32), _i32(1), "seq_cst")
    prev = b.load_atomic(_global(m, "tj_sigint_previous", PTR), "acquire", 8, typ=PTR)
    siginfo = b.load(_global(m, "tj_sigint_previous_siginfo", I32), typ=I32)
    with b.if_then(b.icmp_unsigned("!=", prev, ir.Constant(PTR, None))):
        with b.if_else(b.icmp_signed("!=", siginfo, _i32(0))) as (three, one):
            with three:
                b.call(b.inttoptr(b.ptrtoint(prev, I64), fn.ftype.as_pointer()),
                       [sig, info, context])
            with one:
                plain = ir.FunctionType(ir.VoidType(), [I32])
                b.call(b.inttoptr(b.ptrtoint(prev, I64), plain.as_pointer()), [sig])
    b.ret_void()
    return m


def _handler_address() -> int:
    if _state["handler"] is None:
        from ..engine import jit, objects
        _register()
        jit.compile_library("sigint", _build_handler, objects.source_key(sys.modules[__name__]))
        _state["handler"] = jit.function_address("tj_sigint_handler")
        atexit.register(_restore)
    return _state["handler"]


def install() -> bool:
    """Make SIGINT stop native loops (see the module docstring); returns whether our handler
    is in place. Cheap enough for every compile: a ``getsignal`` and one ``sigaction`` query."""
    if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
        return False
    if _state.get("forked") and _state["handler"] is None:
        return False
    if not callable(signal.getsignal(signal.SIGINT)):
        return False                  # SIG_IGN, SIG_DFL or a handler Python did not set
    ours = _handler_address()
    old = _Sigaction()
    if _sigaction(signal.SIGINT, None, ctypes.byref(old)) != 0:
        return False
    if old.handler == ours:
        return True
    if old.handler in (None, 0, 1):       # SIG_DFL / SIG_IGN under a Python handler: odd
        return False
    _previous.value = old.handler
    _previous_siginfo.value = 1 if old.flags & _SA_SIGINFO else 0
    new = _Sigaction()
    ctypes.memmove(ctypes.byref(new), ctypes.byref(old), ctypes.sizeof(old))
    new.handler, new.flags = ours, old.flags | _SA_SIGINFO    # same mask and flags
    if _sigaction(signal.SIGINT, ctypes.byref(new), None) != 0:
        return False
    _state["saved"] = old
    return True


def _restore():
    """At exit: put the replaced handler back if ours is still installed (the JIT memory that
    holds ours is freed when the interpreter finalises)."""
    saved = _state["saved"]
    if saved is None:
        return
    cur = _Sigaction()
    if _sigaction(signal.SIGINT, None, ctypes.byref(cur)) == 0 and \
            cur.handler == _state["handler"]:
        _sigaction(signal.SIGINT, ctypes.byref(saved), None)
