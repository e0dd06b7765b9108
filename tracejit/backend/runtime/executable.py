"""Build, compile and run a graph: ``compile_graph(graph) -> Executable``.

One LLVM module per graph holds every fused loop, matmul kernel and segment. When no equation
falls back to NumPy, the module also has ``i32 @kernel(ptr bufs)`` (the pyabi contract: inputs
then outputs; it mallocs the arena and builds the slot array itself) and a call is one ctypes
call. Otherwise (hybrid) Python walks the program: native segments (``i32 @seg(ptr slots)``) and
NumPy fallback equations, sharing one slot array; fallback results are fresh NumPy arrays.
Error codes: the slot array's last entry points to an i32 error cell; a native gather with an
index out of range sets it to ``ERR_INDEX`` (reading nothing out of bounds) and the segment
returns it, and ``_raise`` turns it into IndexError after the call (``ERR_NOMEM``: MemoryError,
``ERR_INTERRUPT``: Ctrl-C, what Python's SIGINT handler raises; ``CHECK_BITS``: the exception
of a failed run-time check (``ops/elementwise.py``, ``check_p``); the bits: ``abi.py``).

Stacks (``emit/stacks.py``, ``stack_arrays.py``): a graph whose inputs or outputs include stacks
(a vjp's forward and backward graphs) is called through ``_call_with_stacks``: input stacks are
lent as descriptors of the NumPy arrays, output stacks come back as arrays owning the rows the
kernel allocated; it has no pyabi entry (``entry_ok`` is False). Stacks inside the graph never
reach Python.

Disk-cacheable: symbol names are derived from the content (a hash of the IR emitted with a
placeholder prefix and of the constant values), and constant arrays (graph constants, iota
ranges, literals broadcast into loop operands) are reached through a per-module pointer table
(``emit/segment.py``, ``ConstTable``) that is filled after loading, so no address is baked into
the code; the module is compiled by ``parallel.compile_module`` (in-process, or in parts on compile
workers when large; disk-cached when ``config.cache_dir`` is set) into a ``jit.Code`` of its
own. A module already loaded in this process is reused, not recompiled; its machine code and
constant table are freed when the last executable using it is collected (``engine/loaded.py``).

Tiers: modules without matmul kernels compile at opt 0 (no pipeline, FastISel): fused loops are
explicit vector IR, and run as fast (W1, W7 within noise; 3-5x shorter compiles); a gradient
loop with reductions measured ~10% slower. Modules with matmul kernels use O1 and full codegen.
FastISel only selects a loop body whose constants and math callees are hoisted into the entry
block (``emit/ops.py``, ``OpContext.hoist``, for bodies of float arithmetic and calls); any
other body is selected by SelectionDAG, about twice as slow to compile. Every fully native
base-tier module is a hot-tier candidate (``tiers.py``): once hot, ``tier_up`` emits the graph
again (``_emit(hot=True)``: math inlined, nothing hoisted), compiles it at O1 and switches the
kernel that ``__call__`` and the native entries call; both modules stay loaded.

Threads: ``config.num_threads`` is read by the native pool on every parallel call. Results do
not depend on it: elementwise loops split the index range into disjoint chunks (each element is
computed by the same code whatever the split), and reductions over the outermost dimension are
always computed as the same fixed chunks combined in the same order (``emit/loops.py``,
``CHUNKS``), so 1 and N threads give bit-identical results (tests/test_backend_control.py).
"""
from __future__ import annotations

import ctypes
import dataclasses
import logging
import time
import weakref
from typing import NamedTuple

import numpy as np
from llvmlite import ir

from ...bugreport import compiler_stage
from ...passes import full_collections_deferred     # (core.py; the backend sees passes)
from ...ir import Literal
from ...ops import elementwise
from ..abi import (CHECK_BITS, DESC_BYTES, ERR_INDEX, ERR_INTERRUPT, ERR_NOMEM, ERR_STACK_LENGTH,
                   ERR_WHILE_LIMIT)
from ..emit import control, interrupt, segment
from ..emit.lapack import routine as lapack_routine
from ..emit.segment import graph_namer
from ..engine import jit, loaded, parallel
from ..matmul import lapack
from ..matmul.kernel import vector_bytes
from ..plan import buffers, partition
from ..plan.steps import (ArgStep, ControlStep, FallbackStep, FftStep, LapackStep, LinalgStep,
                          LoopGroup, MatmulStep, ScanStep, ScatterStep, SortStep)
from . import control_fallback, stack_arrays, tiers

log = logging.getLogger("tracejit")

_KERNEL_T = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
_libc_registered = False


def _register_libc():
    global _libc_registered
    if not _libc_registered:
        libc = ctypes.CDLL(None)
        for name in ("malloc", "realloc", "free"):
            jit.add_symbol(f"tj_{name}", ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
        _libc_registered = True


def _as_view_array(arrays, view):
    if isinstance(view.base, Literal):
        return np.broadcast_to(np.asarray(view.base.value, dtype=view.dtype), view.shape)
    base = arrays[view.base]
    if int(np.prod(view.shape, dtype=np.int64)) == 0:
        return np.empty(view.shape, view.dtype)
    flat = base.reshape(-1)
    item = view.dtype.itemsize
    return np.lib.stride_tricks.as_strided(flat[view.offset:], view.shape,
                                           [s * item for s in view.strides], writeable=False)


def _data_ptr_checked(a):
    return ctypes.c_void_p.from_address(id(a) + _ARR_DATA).value


def _init_data_ptr():
    """``PyArrayObject->data`` read directly (80 ns instead of 1 us for ``.ctypes.data``) when
    pyabi's struct-offset self-check passed; else the public ``.ctypes.data``."""
    try:
        from . import pyobj
        if pyobj.NATIVE_OK:
            probe = np.arange(3.0)
            if _data_ptr_checked(probe) == probe.ctypes.data:
                return _data_ptr_checked
    except Exception:  # noqa: BLE001 - any problem: use the public, slower path
        pass
    return lambda a: a.ctypes.data


_ARR_DATA = 16


def _raise(code):
    if code & ERR_INTERRUPT:      # first: the user asked to stop, whatever else failed
        interrupt.raise_interrupt()
    if code & ERR_WHILE_LIMIT:
        from ...config import config
        raise RuntimeError(f"while_loop exceeded config.max_while_iterations = "
                           f"{config.max_while_iterations}")
    if code & ERR_NOMEM:
        raise MemoryError("tracejit: out of memory allocating a compiled function's temporary "
                          "buffers, the record of a while loop (its reverse-mode tape), the "
                          "outputs of a scan or the scratch of a matmul, argmax or LAPACK call")
    if code & ERR_STACK_LENGTH:
        raise ValueError("tracejit: scan of run-time length over stacks of different lengths")
    for name, bit in CHECK_BITS.items():     # a failed check_p: the error NumPy raises
        if code & bit:
            exc, message = elementwise.ERRORS[name]
            raise exc(message)
    if code == ERR_INDEX:
        raise IndexError("tracejit: an index is out of bounds in a gather or scatter (take / "
                         "indexing / .at[]); valid indices for an axis of length n are -n..n-1")
    raise RuntimeError(f"tracejit: compiled kernel failed with error code {code}")


_data_ptr = _init_data_ptr()
_PLACEHOLDER = "tjgraph"      # symbol prefix while emitting; replaced by the content hash


class _Code(NamedTuple):
    """One emitted module of a graph (``Executable._emit``); names are content-derived."""
    llvm_ir: str
    name: str
    program: list
    kernel_name: str | None
    emitter: object
    consts_global: str | None


class Executable:
    """A compiled graph. Call with a list of arrays (the graph's input dtypes/shapes).

    A graph that writes into its arguments (``Graph.writes``) may update those arrays in place:
    then the returned output j *is* the array given as input k (``BufferPlan.out_in_place``),
    changed by the call."""

    def __init__(self, graph):
        t0 = time.perf_counter()
        _register_libc()
        interrupt.install()            # Ctrl-C stops long loops (main thread, Linux)
        self.graph = graph
        parallel.expect(len(graph.eqns))
        # a function writing into its arguments: each may hold its new value (plan/inplace.py)
        donated = None if any(v.ty.dynamic for v in (*graph.invars, *graph.outvars)) else \
            dict(graph.writes)
        with compiler_stage("fusion planning (backend/plan/partition.py)", graph):
            self.plan = partition.partition(graph, vector_bytes(), donated, arguments=True,
                                            lapack=lapack.available)
        with compiler_stage("buffer planning (backend/plan/buffers.py)", self.plan.graph):
            self.buffers = buffers.plan_buffers(self.plan)
        self.namer = graph_namer(graph)
        bp = self.buffers
        self.native = not any(isinstance(s, FallbackStep) for s in self.plan.steps)
        with compiler_stage("LLVM IR emission", self.plan.graph):
            code = self._emit(hot=False)
        self.emitter = emitter = code.emitter
        self.keepalive = emitter.keepalive
        self.program, self.kernel_name, self.llvm_ir = code.program, code.kernel_name, code.llvm_ir
        t1 = time.perf_counter()
        # Tiers: fused loops are explicit vector IR that runs as fast without the pipeline and
        # with FastISel (measured: W1/W7 within noise, 3-5x faster compiles); matmul kernels
        # need O1 + full codegen (5x slower code otherwise).
        self.opt = 1 if emitter.has_matmul else 0

        def build(module):
            with compiler_stage("LLVM compilation", graph):
                parallel.compile_module(module.code, self.llvm_ir, self.opt, cacheable=True)
            module.fill_table(code.consts_global, emitter.consts.arrays)

        # the machine code is freed when the last executable of this content goes
        self._module = loaded.acquire(code.name, build)
        self._names = [code.name]
        weakref.finalize(self, loaded.release, self._names)
        t2 = time.perf_counter()
        self.compile_seconds = {"emit": t1 - t0, "llvm": t2 - t1}
        machine = self._module.code
        self._segs = {name: _KERNEL_T(jit.function_address(name, machine))
                      for kind, name, *_ in self.program if kind == "seg"}
        self.tier = "base"                  # "hot" once tier_up() switched the kernel
        self._tier_cell = None              # pyabi.TierCell of a tier-up candidate
        if self.native:
            self.kernel_address = jit.function_address(self.kernel_name, machine)
            self._kernel = _KERNEL_T(self.kernel_address)
            if self.opt == 0:
                self._tier_cell = tiers.new_tier_cell(self)
        self._impls = {}
        self._stack_io = any(v.ty.dynamic for v in (*graph.invars, *graph.outvars))
        self._stack_outs = [s.index for s in bp.slots if s.kind == "out" and s.var.ty.dynamic]
        self.entry_ok = self.native and not self._stack_io     # pyabi entries: static shapes
        # outputs that are a NumPy fallback's own array (plan.py_outputs) get no buffer:
        # allocating one would take the freed memory the fallback's result is about to need
        # and leave that result fresh pages to fault in on every call; nor do the outputs the
        # kernel writes into an argument in place (out_in_place: output j -> argument k)
        self._in_place_outs = tuple(bp.out_in_place.items())
        in_place = {j for j, _ in self._in_place_outs}
        self._out_specs = [None if j in self.plan.py_outputs or j in in_place else
                           (v.ty.dtype, v.ty.shape) for j, v in enumerate(graph.outvars)]
        # (only hybrid plans have fallbacks: the native call never passes a missing buffer)
        assert not (self.native and self.plan.py_outputs), "py_outputs in a native plan"
        self._nbufs = len(graph.invars) + len(graph.outvars)
        self._buf_t = ctypes.c_void_p * max(1, self._nbufs)
        self._slots_t = ctypes.c_void_p * (len(bp.slots) + 1)

    def _emit(self, hot: bool) -> _Code:
        """Emit the graph's module: the base tier (math functions called in the shared math
        library, loop bodies laid out for FastISel), or the hot tier (math inlined, for O1)."""
        bp = self.buffers
        graph = self.graph
        module = ir.Module(name="tracejit_graph")
        module.triple = jit.triple()
        module.hot_tier = hot                # read by emit/ops.is_hot
        prefix = _PLACEHOLDER
        emitter = segment.SegmentEmitter(module, self.plan, lambda v: bp.slot_of(v), prefix,
                                            self.namer, bp.err_slot)
        program = []                    # ("seg", name, steps) | ("numpy", step)
        # the one segment of a native program owns the stack temporaries; in a hybrid program
        # they outlive segments and _run_hybrid zeroes and frees them
        owned = bp.stack_slots if self.native else ()
        run = []
        for step in self.plan.steps:
            if isinstance(step, FallbackStep):
                if run:
                    program.append(("seg", emitter.segment(run).name, run))
                    run = []
                program.append(("numpy", step))
            else:
                run.append(step)
        if run:
            program.append(("seg", emitter.segment(run, owned).name, run))
        kernel_name = None
        if self.native:
            sources = []
            nin = len(graph.invars)
            for s in bp.slots:
                if s.kind == "in":
                    sources.append(("buf", s.index))
                elif s.kind == "out":
                    sources.append(("buf", nin + s.index))
                elif s.kind == "const":
                    sources.append(("const", bp.const_arrays[s.index]))
                else:
                    sources.append(("temp", s.index))
            seg = module.globals[program[0][1]] if program else None
            if seg is None:
                seg = emitter.segment([])
            kernel_name = prefix + "_kernel"
            segment.emit_kernel(module, kernel_name, seg, len(bp.slots), sources,
                                   bp.arena_bytes, emitter.consts)
        text = str(module)
        # Content-derived names: the hash of the IR (emitted with a placeholder prefix) and of
        # the constants' values. The same graph in another process gets the same text, so its
        # object code can come from the disk cache (config.cache_dir); the same graph twice in
        # one process is compiled once.
        table = emitter.consts.arrays
        h = jit.new_hash(text.encode())
        for arr in table:
            h.update(f"{arr.dtype.str}{arr.shape}".encode())
            h.update(np.ascontiguousarray(arr).tobytes())
        name = "tj_" + h.hexdigest()[:20]
        rename = lambda s: s.replace(_PLACEHOLDER, name)  # noqa: E731
        program = [(p[0], rename(p[1]), p[2]) if p[0] == "seg" else p for p in program]
        return _Code(rename(text), name, program,
                     rename(kernel_name) if kernel_name is not None else None, emitter,
                     rename(emitter.consts.name) if table else None)

    # tiers -------------------------------------------------------------------------------------
    def tier_up(self, wait: bool = True) -> bool:
        """Compile the hot tier (math inlined, O1) and switch every later call to it: the
        interpreter path and native entries (through their ``TierCell``). ``wait=False`` queues
        the compile on the background thread. Returns whether this executable runs the hot
        tier now; a graph that is not a candidate (matmul modules already at O1, hybrid) stays
        as it is."""
        if self._tier_cell is None or self.tier == "hot":
            return self.tier == "hot"
        if not wait:
            tiers.submit(self)
            return False
        with tiers.hot_lock:
            if self.tier != "hot":
                self._compile_hot()
        return self.tier == "hot"

    def wait_hot(self, timeout: float | None = None) -> bool:
        """Wait for a queued tier-up to finish; whether the hot tier is running."""
        if self._tier_cell is not None:
            self._hot_done.wait(timeout)
        return self.tier == "hot"

    def _compile_hot(self):
        """Emit and compile the hot module (or reuse it: loaded already, or from the disk
        cache), fill its constant table, then switch; under ``tiers.hot_lock``."""
        try:
            t0 = time.perf_counter()
            code = self._emit(hot=True)
            module = loaded.lookup(code.name)
            if module is None:    # compiled without loaded's lock: first calls go on meanwhile
                module = loaded.Module(jit.Code())
                try:
                    jit.compile_ir(code.llvm_ir, opt=1, cacheable=True, code=module.code)
                    module.fill_table(code.consts_global, code.emitter.consts.arrays)
                except BaseException:
                    module.code.close()
                    raise
                module = loaded.add(code.name, module)
            module.gil_free = module.gil_free or self._module.gil_free
            self._names.append(code.name)
            address = jit.function_address(code.kernel_name, module.code)
            self._hot_code, self._hot_module = code, module
            self.compile_seconds["hot"] = time.perf_counter() - t0
            self._kernel = _KERNEL_T(address)
            self._tier_cell.kernel = address     # native entries switch at their next call
            self.tier = "hot"
        except Exception:  # noqa: BLE001 - the base tier keeps running; say why it stayed
            log.warning("tracejit: hot-tier compile failed; staying at the base tier",
                        exc_info=True)
        finally:
            self._hot_done.set()

    def _count_call(self):
        """The interpreter path's half of the countdown the native entries keep (one cell)."""
        cell = self._tier_cell
        cell.countdown -= 1
        if cell.countdown == 0:
            tiers.on_hot(weakref.ref(self))

    # running -------------------------------------------------------------------------------------
    def __call__(self, args):
        if self._stack_io:
            return self._call_with_stacks(args)
        args = [a if a.flags.c_contiguous else np.ascontiguousarray(a) for a in args]
        outs = [None if spec is None else np.empty(spec[1], spec[0]) for spec in self._out_specs]
        for j, k in self._in_place_outs:        # the kernel writes argument k as output j
            outs[j] = args[k]
        if self.native:
            data = _data_ptr
            bufs = self._buf_t(*[data(a) for a in args], *[data(o) for o in outs])
            if self._tier_cell is not None:
                self._count_call()
            rc = self._kernel(bufs)
            if rc:
                _raise(rc)
            return outs
        return self._run_hybrid(args, outs)

    def _call_with_stacks(self, args):
        """A call whose inputs or outputs include stacks (``stack_arrays.py``): input stacks are
        lent to the kernel as descriptors of the arrays; output stacks come back as arrays
        that own the rows the kernel allocated."""
        g = self.graph
        args = [stack_arrays.check_input(a, v.ty, f"input {i}") if v.ty.dynamic else
                np.ascontiguousarray(a)
                for i, (a, v) in enumerate(zip(args, g.invars))]
        outs = [stack_arrays.new_descriptor() if v.ty.dynamic else np.empty(v.ty.shape, v.ty.dtype)
                for v in g.outvars]
        written = self._stack_outs
        rc = 0
        try:
            if self.native:
                ins = [stack_arrays.descriptor(a) if v.ty.dynamic else a
                       for a, v in zip(args, g.invars)]
                bufs = self._buf_t(*[_data_ptr(a) for a in ins], *[_data_ptr(o) for o in outs])
                if self._tier_cell is not None:
                    self._count_call()
                rc = self._kernel(bufs)
                result = list(outs)
            else:
                result = self._run_hybrid(args, outs)
        finally:                  # adopt what the kernel allocated, even when it failed
            taken = {j: stack_arrays.adopt(outs[j], g.outvars[j].ty) for j in written}
        if rc:
            _raise(rc)
        for j, a in enumerate(g.outvars):
            if j in taken:
                result[j] = taken[j]
            elif a.ty.dynamic and result[j] is outs[j]:     # an input or a repeated output
                earlier = [k for k in range(j) if g.outvars[k] is a]
                src = result[earlier[0]] if earlier else args[g.invars.index(a)]
                result[j] = src.copy()
        return result

    def _run_hybrid(self, args, outs):
        bp = self.buffers
        arena = np.empty(max(1, bp.arena_bytes), np.uint8)
        arrays, slots = {}, self._slots_t()
        descs = {}                  # stack var -> its descriptor (a uint64[2] array)
        err = np.array([0, interrupt.call_start()], np.int32)   # the error cell
        slots[bp.err_slot] = err.ctypes.data
        for k, s in enumerate(bp.slots):
            if s.var.ty.dynamic:
                if s.kind == "in":
                    arrays[s.var] = args[s.index]
                    desc = stack_arrays.descriptor(args[s.index])
                elif s.kind == "out":
                    desc = outs[s.index]
                elif s.kind == "temp":
                    desc = arena[s.index:s.index + DESC_BYTES].view(np.uint64)
                    desc[:] = 0
                else:
                    continue
                descs[s.var] = desc
                slots[k] = desc.ctypes.data
                continue
            if s.kind == "in":
                arr = args[s.index]
            elif s.kind == "out":
                arr = outs[s.index]
            elif s.kind == "const":
                arr = bp.const_arrays[s.index]
            elif s.kind == "temp":
                arr = np.ndarray(s.var.ty.shape, s.var.ty.dtype, arena, s.index)
            else:
                continue
            arrays[s.var] = arr
            slots[k] = arr.ctypes.data
        for v, owner in bp.shared:                     # written in place: the owner's buffer
            if owner in arrays:
                arrays[v] = arrays[owner]

        def operand(a):
            if isinstance(a, Literal):
                return a.value
            if a.ty.dynamic:          # from Python as is, or a copy of rows in native memory
                return arrays[a] if a in arrays else stack_arrays.read(descs[a], a.ty)
            return _as_view_array(arrays, self.plan.view_of(a))

        try:
            for entry in self.program:
                if entry[0] == "seg":
                    rc = self._segs[entry[1]](slots)
                    if rc:
                        _raise(rc)
                    continue
                eqn = entry[1].eqn
                impl = self._impls.get(id(eqn))
                if impl is None:
                    impl = self._impls[id(eqn)] = \
                        control_fallback.compiled_impl(eqn, compile_graph) or eqn.prim.impl
                res = impl(*[operand(a) for a in eqn.invars], **eqn.params)
                res = res if eqn.prim.multiple_results else [res]
                for v, r in zip(eqn.outvars, res):
                    if v.ty.dynamic:
                        r = stack_arrays.check_input(r, v.ty, f"{eqn.prim.name} result")
                        descs[v] = desc = stack_arrays.descriptor(r)   # lent to native readers
                        ptr = desc.ctypes.data
                    else:
                        r = np.asarray(r, dtype=v.ty.dtype).reshape(v.ty.shape)
                        r = r if r.flags.c_contiguous else r.copy()
                        ptr = r.ctypes.data
                    arrays[v] = r
                    slots[bp.slot_of(v)] = ptr
        finally:
            for k in bp.stack_slots:                   # the program's own stacks
                stack_arrays.release_py(descs[bp.slots[k].var])
        result = []
        returned = set()
        for j, a in enumerate(self.graph.outvars):
            base = self.plan.py_outputs.get(j)       # the plan decided: a fallback's array
            if base is not None:
                r = arrays[base] if a.ty.dynamic else arrays[base].reshape(a.ty.shape)
                result.append(r.copy() if id(arrays[base]) in returned else r)
                returned.add(id(arrays[base]))
            else:
                result.append(outs[j])
        return result

    def native_entry(self, spec=None) -> int:
        """Address of a pyabi METH_FASTCALL entry for this kernel (``pyabi.emit_entry``), for a
        ``pyabi_dispatch`` table. Default spec: every input an exact array of the graph's
        dtype/shape, outputs as the graph's. Only for fully native executables."""
        from . import pyabi
        if not self.native:
            raise ValueError("tracejit: a hybrid executable has no single native kernel")
        if not self.entry_ok:
            raise ValueError("tracejit: a graph with stack inputs or outputs (run-time shapes) "
                             "has no native entry; call the Executable")
        g = self.graph
        if spec is None:
            spec = pyabi.EntrySpec(
                inputs=tuple(("array", v.ty.dtype, v.ty.shape) for v in g.invars),
                outputs=tuple((v.ty.dtype, v.ty.shape) for v in g.outvars),
                return_tuple=len(g.outvars) != 1, on_error=_raise)
        if self._tier_cell is not None:
            spec = dataclasses.replace(spec, tier=self._tier_cell)
        module = ir.Module(name="tracejit_entry")
        module.triple = jit.triple()
        kernel = ir.Function(module, ir.FunctionType(ir.IntType(32), [ir.PointerType()]),
                             self.kernel_name)
        if spec.release_gil:     # another thread may be in this code when the last user goes
            for code in (self._module, getattr(self, "_hot_module", None)):
                if code is not None:
                    code.gil_free = True
        with jit.into(self._module.code):     # next to its kernel, freed with it
            return pyabi.build_entry(module, kernel, spec)

    # inspection ----------------------------------------------------------------------------------
    def asm(self) -> str:
        """Host assembly of the whole module."""
        if self.tier == "hot":
            return jit.emit_assembly(self._hot_code.llvm_ir, opt=1)
        return jit.emit_assembly(self.llvm_ir, opt=self.opt)

    def memory_analysis(self) -> dict:
        """Bytes of arguments, outputs, the temporary arena (one per call), the scratch that
        native loops allocate while they run (carry double buffers, loop-body arenas) and
        ``stack_bytes_per_step``: what one step of every ``while_record`` records (its tape
        grows by that much per iteration; nested loops counted once). Stack arguments and
        outputs have run-time sizes and count 0 in the static totals. ``in_place_updates``:
        values written into the buffer of a value that dies there (no copy), and
        ``carries_in_place``: loop carries kept in one buffer (no second buffer, no copy per
        iteration), nested loops included (``plan/inplace.py``)."""
        g = self.graph
        nbytes = lambda ty: 0 if ty.dynamic else ty.size * ty.dtype.itemsize  # noqa: E731
        updates, carries = control.in_place_counts(self.emitter, self.buffers)
        return {"in_place_updates": updates, "carries_in_place": carries,
                "argument_bytes": sum(nbytes(v.ty) for v in g.invars),
                "output_bytes": sum(nbytes(v.ty) for v in g.outvars),
                "temp_bytes": self.buffers.arena_bytes,
                "loop_scratch_bytes": control.scratch_bytes(self.emitter),
                "constant_bytes": sum(a.nbytes for a in self.buffers.const_arrays),
                "stack_bytes_per_step": stack_arrays.bytes_per_step(g)}

    def describe(self) -> str:
        """The fusion groups, in execution order, with the printer's var names."""
        n = self.namer
        lines = [f"fused plan: {len(self.plan.steps)} steps, "
                 f"{'one native kernel' if self.native else 'hybrid (NumPy fallbacks)'}, "
                 f"arena {self.buffers.arena_bytes} bytes"]
        for step in self.plan.steps:
            code = self.emitter.codes.get(id(step))
            if isinstance(step, LoopGroup):
                shape = ",".join(map(str, step.shape))
                head = f"  loop [{shape}]"
                if code is not None:
                    head += f" vl={code.vl} x{code.unroll}" + \
                        (" parallel" if code.parallel else "") + \
                        (f" parallel({code.chunks[1]} fixed chunks)" if code.chunks else "")
                ops = " ".join(f"{n(e.outvars[0])}={e.prim.name}" for e in step.eqns)
                sinks = " ".join(f"{n(e.outvars[0])}={e.prim.name}" for e in step.sinks)
                stores = " ".join(n(a) + self._in_place(d.base) for a, d in step.stores)
                lines.append(head + (f": {ops}" if ops else "") +
                             (f" | reduce {sinks}" if sinks else "") +
                             (f" | store {stores}" if stores else ""))
            elif isinstance(step, MatmulStep):
                lines.append(f"  matmul {n(step.out)}=dot_general{code}")
            elif isinstance(step, ScanStep):
                lines.append(f"  scan {n(step.eqn.outvars[0])}={step.eqn.prim.name}")
            elif isinstance(step, ArgStep):
                lines.append(f"  {n(step.eqn.outvars[0])}={step.eqn.prim.name}"
                             f"[axis={step.eqn.params['axis']}] (row walk)")
            elif isinstance(step, ScatterStep):
                p = step.eqn.params
                lines.append(f"  scatter {n(step.eqn.outvars[0])}=scatter[{p['mode']}, "
                             f"axis={p['axis']}]" + self._in_place(step.eqn.outvars[0]))
            elif isinstance(step, LinalgStep):
                outs = " ".join(n(v) for v in step.eqn.outvars)
                lines.append(f"  {outs} = {step.eqn.prim.name} (native loops)")
            elif isinstance(step, LapackStep):
                outs = " ".join(n(v) for v in step.eqn.outvars)
                lines.append(f"  {outs} = {step.eqn.prim.name} "
                             f"(LAPACK {lapack_routine(step.eqn)})")
            elif isinstance(step, FftStep):
                lines.append(f"  {n(step.eqn.outvars[0])} = {step.eqn.prim.name}"
                             f"[axes={step.eqn.params['axes']}] (native FFT)")
            elif isinstance(step, SortStep):
                lines.append(f"  {n(step.eqn.outvars[0])} = {step.eqn.prim.name} (native sort)")
            elif isinstance(step, ControlStep):
                outs = " ".join(n(v) for v in step.eqn.outvars)
                lines.append(f"  {outs} = {control.describe(step, code)}")
            else:
                outs = " ".join(n(v) for v in step.eqn.outvars)
                lines.append(f"  numpy {outs}={step.eqn.prim.name} (fallback)")
        return "\n".join(lines)

    def _in_place(self, var) -> str:
        """' (in place of x)' when ``var`` is written into the buffer of x (``plan/inplace``)."""
        x = self.buffers.in_place.get(id(var))
        return f" (in place of {self.namer(x)})" if x is not None else ""


GC_DEFER_EQNS = 4096      # graphs compiled with full garbage collections deferred


def compile_graph(graph) -> Executable:
    """``Executable(graph)``; a graph of ``GC_DEFER_EQNS`` equations or more with full garbage
    collections deferred meanwhile (``core.full_collections_deferred``): its planning and
    emission keep millions of objects alive, and a 10^4-op graph spent 0.9 s of its 5.3 s
    first call in full collections that freed nothing. Small graphs are not deferred: a
    program compiling many of them frees the cycles of evicted ones in the full collections
    that run meanwhile (tests/test_parallel_compile.py)."""
    if len(graph.eqns) < GC_DEFER_EQNS:
        return Executable(graph)
    with full_collections_deferred():
        return Executable(graph)
