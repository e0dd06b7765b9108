"""Emit native segments: ``i32 @seg(ptr slots)`` runs consecutive native steps in order.

A segment initialises reduction outputs, calls each loop group's body (directly, or through
``threads.tj_parallel_for`` when the group is large enough), and calls matmul kernels from
``matmul.emit_matmul`` with pointers (and element strides) taken from the operands' views.
``emit_kernel`` wraps a whole-graph segment in the pyabi contract ``i32 @kernel(ptr bufs)``
(inputs then outputs), building the slot array on its stack and the temporary arena with malloc.

Bounded functions (code generation of one function grows faster than its length): a segment of
more than ``SEGMENT_STEPS`` steps calls them in parts (``i32 @part(ptr slots)``, noinline), a
kernel sets its slots in parts of ``KERNEL_SLOTS``, and a module holds one matmul kernel per
distinct product (layout and ``epilogue.structure_key``): the steps of an unrolled loop share it.
A graph with no repeated product, and fewer steps and slots, is emitted as before, byte for
byte.

Errors: every slot array of a call points at one error cell ``{i32 error bits, i32 start}``
(the start: ``interrupt.py``). A step that fails sets bits (an index out of range, a failed
malloc, Ctrl-C, ...) and the segment returns after that step, skipping the rest.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir

from ...config import config
from ...ir import _Namer
from ..abi import ERR_NOMEM
from ..matmul import tiled as matmul
from ..plan.rowfuse import RowMatvecGroup
from ..plan.steps import (ArgStep, ControlStep, FftStep, LapackStep, LinalgStep, LoopGroup,
                          MatmulStep, ScanStep, ScatterStep, SortStep, matmul_layout)
from . import interrupt, stacks
from .arg import emit_arg
from .control import emit_control
from .epilogue import emitter, structure_key
from .fft import emit_fft
from .sort import emit_sort
from .lapack import emit_lapack
from .linalg import emit_linalg
from .loops import _combine, _for, emit_group, unroll_limit
from .memory import _real, add_index, identity
from .ops import I8, I32, I64, OpContext, mem_type, reg_type, slot_pointer
from .rowfuse import emit_rowmv
from .scan import emit_scan
from .scatter import emit_scatter

PTR = ir.PointerType()
MATMUL_PARALLEL_FLOPS = 4_000_000     # ~40 us at 100 GFLOP/s: split rows over the pool above
MATMUL_BLOCKS = 16                    # row blocks taken dynamically by the pool's threads
BLAS_BLOCK_ROWS = 16                  # row granularity of the blocks of a BLAS product
# Bounded functions: LLVM's code generation of one function grows faster than its length (a
# kernel setting 1000 slots in one block took 3.8 s; tests/test_compile_split.py)
SEGMENT_STEPS = 64                    # steps per function of a segment
KERNEL_SLOTS = 128                    # slots set per function of a kernel


def _i64(v):
    return ir.Constant(I64, int(v))


def graph_namer(graph) -> _Namer:
    """The printer's names for the graph's vars (so LLVM names line up with the printed IR)."""
    namer = _Namer()
    for v in (*graph.invars, *graph.constvars):
        namer(v)
    for e in graph.eqns:
        for v in e.outvars:
            namer(v)
    return namer


class ConstTable:
    """Constant arrays reached through one pointer table instead of addresses baked into the
    code, so a module's text (and object code) does not depend on where NumPy put them:
    ``@<prefix>_consts`` holds the address of a pointer array that ``Executable`` fills after
    loading; ``ptr(b, array)`` emits the two loads."""

    def __init__(self, module, prefix):
        self.module, self.name = module, f"{prefix}_consts"
        self.arrays: list = []
        self._index: dict = {}
        self._global = None

    def ptr(self, b, array):
        k = self._index.get(id(array))
        if k is None:
            k = self._index[id(array)] = len(self.arrays)
            self.arrays.append(array)
        if self._global is None:
            self._global = ir.GlobalVariable(self.module, PTR, self.name)
            self._global.initializer = ir.Constant(PTR, None)
        table = b.load(self._global, typ=PTR)
        return b.load(b.gep(table, [_i64(k)], source_etype=PTR), typ=PTR)


class _MatmulKernel(NamedTuple):
    """The function a product's call site calls: a rows chunk run ``nblocks`` times by the
    thread pool (``path``: "blas" or "parallel rows"), or a serial kernel (``nblocks`` 0);
    ``name`` is the one it was emitted under."""
    fn: ir.Function
    name: str
    path: str | None
    nblocks: int


class _Printed:
    """A function definition already printed: its text stands in the module's globals, which
    ``str(module)`` prints in order (so the module's text is the same), and the function's
    instructions are freed (a 10^5-equation graph held ~0.6 GB of them, and as much again in
    their cached strings, until the whole module was printed)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


class SegmentEmitter:
    """Emits groups and matmuls into one module; ``segment(steps)`` makes one ``@seg``."""

    def __init__(self, module, plan, slot_of, prefix, namer, err_slot, consts=None,
                 kernels=None):
        self.module, self.plan, self.slot_of = module, plan, slot_of
        self.consts = consts if consts is not None else ConstTable(module, prefix)
        self.kernels = kernels if kernels is not None else {}   # matmul key -> _MatmulKernel
        self.err_slot = err_slot
        self.prefix, self.namer = prefix, namer
        self.count = 0
        self.codes = {}            # id(step) -> GroupCode | matmul info
        self.keepalive = []        # arrays whose addresses the module holds (sub-graph consts)
        self.has_matmul = False    # matmul kernels need the O1 pipeline; fused loops do not
        self.unroll_max = None     # loops.unroll_limit(plan), computed at the first group

    def sub_emitter(self, plan, bp, prefix) -> "SegmentEmitter":
        """An emitter of a control step's sub-graph (``plan``, its buffer plan ``bp``) into the
        same module, sharing this one's constant table and matmul kernels."""
        return SegmentEmitter(self.module, plan, bp.slot_of, prefix, graph_namer(plan.graph),
                              bp.err_slot, consts=self.consts, kernels=self.kernels)

    def _name(self, kind):
        self.count += 1
        return f"{self.prefix}_{kind}{self.count}"

    def _slot_ptr(self, b, slots, view):
        return slot_pointer(b, slots, self.slot_of(view.base), view)

    def segment(self, steps, owned=()) -> ir.Function:
        """``i32 @seg(ptr slots)`` running ``steps``; it owns the stacks whose descriptors are
        in slots ``owned``: zeroed on entry, their rows freed on return (errors included).
        More than ``SEGMENT_STEPS`` steps run in parts of that many, each its own function."""
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR]), self._name("seg"))
        fn.args[0].name = "slots"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        slots = fn.args[0]
        descs = [b.load(b.gep(slots, [_i64(k)], source_etype=PTR), typ=PTR) for k in owned]
        for d in descs:
            stacks.zero(b, d)
        done = fn.append_basic_block("seg.done")
        if len(steps) <= SEGMENT_STEPS:
            self._steps(b, slots, steps, self._step, done)
        else:
            parts = []
            for k in range(0, len(steps), SEGMENT_STEPS):
                since = next(reversed(self.module.globals))
                parts.append(self._part(steps[k:k + SEGMENT_STEPS]))
                self._print_new(since)
            self._steps(b, slots, parts, lambda b, slots, part: b.call(part, [slots]), done)
        b.branch(done)
        b.position_at_end(done)
        for d in descs:
            stacks.release(b, self.module, d)
        b.ret(b.load(self._err_cell(b, slots), typ=I32))   # 0, or the bits the steps set
        return fn

    def _part(self, steps) -> ir.Function:
        """``i32 @part(ptr slots)``: consecutive steps of a long segment. Never inlined: code
        generation of one function (instruction selection, register allocation) grows faster
        than its length, so a long segment is cut into functions of bounded size."""
        fn = ir.Function(self.module, ir.FunctionType(I32, [PTR]), self._name("part"))
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.args[0].name = "slots"
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        done = fn.append_basic_block("part.done")
        self._steps(b, fn.args[0], steps, self._step, done)
        b.branch(done)
        b.position_at_end(done)
        b.ret(b.load(self._err_cell(b, fn.args[0]), typ=I32))
        return fn

    def _print_new(self, since):
        """Print the functions this emitter defined after the global named ``since`` (a
        finished part: its function and those of its steps) into ``_Printed`` stand-ins, and
        free their bodies. Only names of this prefix: a shared helper (a math body, an
        intrinsic) is looked up by name again later. A printed function stays callable (a
        matmul kernel shared by later steps): calls need only its name and type."""
        module, mine = self.module, self.prefix + "_"
        new = []
        for name in reversed(module.globals):
            if name == since:
                break
            new.append(name)
        for name in reversed(new):
            fn = module.globals[name]
            if isinstance(fn, ir.Function) and fn.blocks and name.startswith(mine):
                module.globals[name] = _Printed(str(fn))
                for blk in fn.blocks:         # no cycles left: freed now, not by a full
                    for ins in blk.instructions:   # collection (deferred while compiling)
                        if isinstance(ins, ir.PhiInstr):
                            ins.incomings = []
                    blk.instructions, blk.terminator = [], None
                fn.blocks = []
                fn.scope = type(fn.scope)()

    def _steps(self, b, slots, items, emit_one, done):
        """``emit_one(b, slots, item)`` for each item; a failed one (error bits set, or an
        interrupt) branches to ``done``, skipping the rest."""
        fn = b.function
        # the cell is loaded where it is read: held across the steps' calls, it cost a spill
        # and a reload per call at opt 0, measurable in a tight while loop's segments
        for k, item in enumerate(items):
            if k:
                nxt = fn.append_basic_block(f"seg.step{k}")
                failed = b.load(self._err_cell(b, slots), typ=I32)
                b.cbranch(b.icmp_signed("!=", failed, ir.Constant(I32, 0)), done, nxt)
                b.position_at_end(nxt)
            emit_one(b, slots, item)

    def _step(self, b, slots, step):
        if isinstance(step, LoopGroup):
            self._group(b, slots, step)
        elif isinstance(step, MatmulStep):
            self._matmul(b, slots, step)
        elif isinstance(step, ScanStep):
            scan = emit_scan(self.module, self._name("scan"), step.eqn, self.plan, self.slot_of)
            b.call(scan, [slots, _i64(0), _i64(0)])
        elif isinstance(step, ArgStep):
            b.call(emit_arg(self.module, self._name("arg"), step.eqn, self.plan,
                            self.slot_of, self.err_slot), [slots])
        elif isinstance(step, ScatterStep):
            b.call(emit_scatter(self.module, self._name("scatter"), step.eqn, self.plan,
                                self.slot_of, self.err_slot), [slots])
        elif isinstance(step, FftStep):
            b.call(emit_fft(self.module, self._name("fft"), step.eqn, self.plan, self.slot_of,
                            self.err_slot), [slots])
        elif isinstance(step, SortStep):
            b.call(emit_sort(self.module, self._name("sort"), step.eqn, self.plan, self.slot_of,
                             self.err_slot), [slots])
        elif isinstance(step, LinalgStep):
            self.has_matmul = True          # scalar loops with an accumulator want O1 too
            b.call(emit_linalg(self.module, self._name("linalg"), step.eqn, self.plan,
                               self.slot_of), [slots])
        elif isinstance(step, LapackStep):
            self.has_matmul = True          # the copies in and out want O1 too
            b.call(emit_lapack(self.module, self._name("lapack"), step.eqn, self.plan,
                               self.slot_of, self.err_slot), [slots])
        elif isinstance(step, ControlStep):
            self.codes[id(step)] = emit_control(self, b, slots, step, self._name("ctl"))
        else:
            raise AssertionError(step)

    def _group(self, b, slots, group):
        if isinstance(group, RowMatvecGroup):
            self.has_matmul = True          # row-fused products want O1 too (W2: 8% faster)
            code = emit_rowmv(self.module, self._name("loop"), group, self.plan, self.slot_of,
                              self.namer)
        else:
            if self.unroll_max is None:
                self.unroll_max = unroll_limit(self.plan)
            code = emit_group(self.module, self._name("loop"), group, self.plan, self.slot_of,
                              self.namer, self.err_slot, self.unroll_max)
        self.codes[id(group)] = code
        for var, ident in code.inits:
            self._fill(b, slots, var, ident)
        if code.n0 == 0:
            return
        if code.chunks is not None:
            self._chunked(b, slots, code)
            return
        body = code.fn
        # blocks of dim 0 compute what one call does when its indices are independent
        # (parallel), or when dim 0 is a scalar loop (two dims or more) whose reductions go
        # through the outputs in memory at each index, in order (loops.py): a one-thread loop
        # reducing its outer dim; not a one-dim reduction, whose accumulators span the range
        blockable = code.parallel or (code.chunks is None and len(code.dims) >= 2)
        block = interrupt.block_rows(code.work, code.n0, code.grain) if blockable else None
        if block is not None and block < code.n0 and not group.atomic:   # long: poll Ctrl-C
            body = interrupt.emit_blocked(self.module, self._name("blocks"), body, block,
                                          self.err_slot)
        if code.parallel:
            from ..engine import threads
            pf = threads.declare_parallel_for(self.module)
            b.call(pf, [body, slots, _i64(code.n0), _i64(code.grain)])
        else:
            b.call(body, [slots, _i64(0), _i64(code.n0)])

    def _chunked(self, b, slots, code):
        """Run a group whose outermost dim is reduced as fixed chunks over the thread pool:
        ctx = {slots, partials...}; chunk c runs the body on [c*len, (c+1)*len) with a private
        copy of the slot array whose reduced outputs point at partial c (identity-filled);
        then the partials are combined into the outputs in chunk order."""
        from ..engine import threads
        chunk, nchunks, sinks = code.chunks
        nslots = self.err_slot + 1
        parts = []
        for _, e in sinks:
            ty = e.outvars[0].ty
            parts.append(b.alloca(I8, size=_i64(nchunks * ty.size * ty.dtype.itemsize)))
        ctx = b.alloca(PTR, size=_i64(1 + len(parts)))
        for k, p in enumerate([slots, *parts]):
            b.store(p, b.gep(ctx, [_i64(k)], source_etype=PTR))
        drv = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]),
                          self._name("chunks"))
        drv.linkage = "internal"
        db = ir.IRBuilder(drv.append_basic_block("entry"))
        dctx, c0, c1 = drv.args
        local = db.alloca(PTR, size=_i64(nslots))
        src = db.load(dctx, typ=PTR)
        poll = interrupt.Poller(db, self.module, db.load(
            db.gep(src, [_i64(self.err_slot)], source_etype=PTR), typ=PTR))
        stop = drv.append_basic_block("chunks.stop")

        def one(c):
            poll.check(db, stop)            # a chunk is at most 1/CHUNKS of a long loop
            _for(db, _i64(0), _i64(nslots), _i64(1), lambda k: db.store(
                db.load(db.gep(src, [k], source_etype=PTR), typ=PTR),
                db.gep(local, [k], source_etype=PTR)), "cp")
            for n, (slot, e) in enumerate(sinks):
                ty = e.outvars[0].ty
                base = db.load(db.gep(dctx, [_i64(1 + n)], source_etype=PTR), typ=PTR)
                part = db.gep(base, [db.mul(c, _i64(ty.size * ty.dtype.itemsize))],
                              source_etype=I8)
                db.store(part, db.gep(local, [_i64(slot)], source_etype=PTR))
                self._fill_ptr(db, part, ty.dtype, ty.size, identity(e.prim.name, ty.dtype))
            lo = db.mul(c, _i64(chunk))
            hi = db.add(lo, _i64(chunk))
            hi = db.select(db.icmp_signed("<", hi, _i64(code.n0)), hi, _i64(code.n0))
            db.call(code.fn, [local, lo, hi])
        _for(db, c0, c1, _i64(1), one, "c")
        db.branch(stop)
        db.position_at_end(stop)
        db.ret_void()
        b.call(threads.declare_parallel_for(self.module), [drv, ctx, _i64(nchunks), _i64(1)])
        for n, (slot, e) in enumerate(sinks):
            self._combine_partials(b, slots, e, parts[n], nchunks)

    def _combine_partials(self, b, slots, e, parts, nchunks):
        ty = e.outvars[0].ty
        dt = np.dtype(ty.dtype)
        out = self._slot_ptr(b, slots, self.plan.view_of(e.outvars[0]))
        rt = mem_type(_real(dt))
        cx = OpContext(b, 1)
        comb = _combine(e.prim.name)
        npart = 2 if dt.kind == "c" else 1

        def at(idx, k):          # real element k of element idx
            return idx if npart == 1 else add_index(b, b.mul(idx, _i64(npart)), _i64(k))

        def load(p, idx):
            vals = [b.load(b.gep(p, [at(idx, k)], source_etype=rt), typ=rt)
                    for k in range(npart)]
            if dt.kind == "b":
                vals = [b.icmp_unsigned("!=", vals[0], ir.Constant(I8, 0))]
            return tuple(vals) if npart == 2 else vals[0]

        def store(p, idx, v):
            for k, part in enumerate(v if npart == 2 else (v,)):
                if dt.kind == "b":
                    part = b.zext(part, I8)
                b.store(part, b.gep(p, [at(idx, k)], source_etype=rt))

        def elem(j):
            acc = load(parts, j)
            for c in range(1, nchunks):
                acc = comb(cx, e, acc, load(parts, add_index(b, j, _i64(c * ty.size))))
            store(out, j, acc)
        _for(b, _i64(0), _i64(ty.size), _i64(1), elem, "comb")

    def _fill_ptr(self, b, p, dt, size, value):
        dt = np.dtype(dt)
        if dt.kind == "c":
            size, dt = 2 * size, np.dtype(dt.char.lower())
        c = ir.Constant(I8, int(value)) if dt.kind == "b" else OpContext(b, 1).const(
            reg_type(dt), value)
        _for(b, _i64(0), _i64(size), _i64(1),
             lambda i: b.store(c, b.gep(p, [i], source_etype=mem_type(dt))), "f")

    def _fill(self, b, slots, var, value):
        size = var.ty.size
        if size == 0:
            return
        dt = var.ty.dtype
        if dt.kind == "c":                       # (re, im) pairs of the real identity
            size, dt = 2 * size, np.dtype(dt.char.lower())
        view = self.plan.view_of(var)
        p = self._slot_ptr(b, slots, view)
        c = OpContext(b, 1).const(reg_type(dt), value)
        if dt.kind == "b":
            c = ir.Constant(I8, int(value))
        fn_name = self._name("fill")
        fill = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [PTR]), fn_name)
        fill.linkage = "internal"
        fb = ir.IRBuilder(fill.append_basic_block("entry"))
        _for(fb, _i64(0), _i64(size), _i64(1),
             lambda i: fb.store(c, fb.gep(fill.args[0], [i], source_etype=mem_type(dt))), "f")
        fb.ret_void()
        b.call(fill, [p])

    def _blas_rows(self, module, name, dt, M, K, N, a_st, b_st, epi):
        """A rows kernel calling numpy's OpenBLAS (``blas.emit_gemm_rows``, the epilogue swept
        over each block of rows it wrote) when ``blas.choose_path`` picks BLAS for this shape
        and the library was found, passed its self-test and lets us set its thread count;
        else None."""
        from ..matmul import blas
        if np.dtype(dt) not in (np.float64, np.float32) or not blas.available() or \
                not blas.thread_control() or blas.choose_path(dt, M, K, N, 1) != "blas":
            return None
        hook = None if epi is None else emitter(epi, dt, 5)
        n_extra = 0 if epi is None else len(epi.leaves)
        return blas.emit_gemm_rows(module, name, dt, M, K, N, a_st, b_st, epilogue=hook,
                                   extra_args=[PTR] * n_extra)

    def _matmul(self, b, slots, step):
        dt, M, K, N, a_st, b_st, batch, a_bs, b_bs = layout = matmul_layout(self.plan, step.eqn)
        self.has_matmul = True
        epi = step.epilogue
        out = step.out if epi is None else epi.result
        ptrs = [self._slot_ptr(b, slots, v) for v in (step.lhs, step.rhs, self.plan.view_of(out))]
        extra = [] if epi is None else [self._slot_ptr(b, slots, v) for _, v in epi.leaves]
        desc = () if epi is None else (epi.describe(self.namer or (lambda v: "")),)
        # one kernel per distinct product in a module: an unrolled loop's steps share theirs
        epi_key = None if epi is None else structure_key(epi)
        key = None if epi is not None and epi_key is None else \
            (np.dtype(dt).str, *layout[1:], epi_key)
        kern = self.kernels.get(key) if key is not None else None
        if kern is None:
            kern = self._matmul_kernel(self.module, self._name("mm"), layout, epi)
            if key is not None:
                self.kernels[key] = kern
        elif config.check_ir:        # the key must decide the code: emit it again and compare
            scratch = ir.Module(name="tracejit_check")
            scratch.hot_tier = getattr(self.module, "hot_tier", False)
            self._matmul_kernel(scratch, kern.name, layout, epi)
            for fn in scratch.functions:
                if not fn.is_declaration:
                    assert str(fn) == str(self.module.globals[fn.name]), \
                        f"matmul kernel key {key} does not decide the code of {fn.name}"
        if kern.nblocks:
            from ..engine import threads
            counter = b.alloca(I64)
            b.store(_i64(0), counter)
            ctx = b.alloca(PTR, size=_i64(5 + len(extra)))
            for k, p in enumerate(ptrs + extra + [counter, self._err_cell(b, slots)]):
                b.store(p, b.gep(ctx, [_i64(k)], source_etype=PTR))
            old = None
            if kern.path == "blas":       # our pool splits rows: never BLAS threads as well
                from ..matmul import blas
                old = blas.emit_set_threads(b, 1)
            b.call(threads.declare_parallel_for(self.module), [kern.fn, ctx, _i64(kern.nblocks),
                                                               _i64(1)])
            if old is not None:
                blas.emit_set_threads(b, old)
            self.codes[id(step)] = (M, K, N, batch, kern.path, *desc)
            return
        self.codes[id(step)] = (M, K, N, batch, *desc)
        rc = b.call(kern.fn, ptrs + extra + [self._err_cell(b, slots)])   # polls it; ERR_NOMEM:
        # no memory for a packed B panel
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
            b.atomic_rmw("or", self._err_cell(b, slots), rc, "monotonic")

    def _matmul_kernel(self, module, name, layout, epi) -> _MatmulKernel:
        """Emit the kernel of a product of this ``layout`` (``matmul_layout``) and epilogue:
        a rows-chunk function for the thread pool (``nblocks`` > 0) or a serial kernel."""
        dt, M, K, N, a_st, b_st, batch, a_bs, b_bs = layout
        n_extra = 0 if epi is None else len(epi.leaves)
        rows_kern = self._blas_rows(module, name, dt, M, K, N, a_st, b_st, epi) \
            if batch == 1 else None
        path = "blas" if rows_kern is not None else "parallel rows"
        rows = BLAS_BLOCK_ROWS if rows_kern is not None else matmul.tile_shape(dt, M, N)[0]
        if rows_kern is not None or \
                (batch == 1 and 2 * M * K * N >= MATMUL_PARALLEL_FLOPS and M >= 2 * rows):
            tiled = rows_kern is None
            if tiled:
                hook = None if epi is None else emitter(epi, dt, 5)
                rows_kern = matmul.emit_matmul_rows(module, name, dt, M, K, N,
                                                    a_strides=a_st, b_strides=b_st,
                                                    epilogue=hook, extra_args=[PTR] * n_extra,
                                                    poll=interrupt.Poller)
            # blocks depend on M only, never on the thread count: same sums for any count
            block = rows * max(1, round(M / rows / MATMUL_BLOCKS))
            chunk = matmul.emit_rows_chunk(module, name + "_chunk", rows_kern, n_extra, M, block,
                                           poll=interrupt.Poller, kernel_polls=tiled)
            return _MatmulKernel(chunk, name, path, -(-M // block))
        hook = None if epi is None else emitter(epi, dt, 3)
        kern = matmul.emit_matmul(module, name, dt, M, K, N, a_strides=a_st, b_strides=b_st,
                                  epilogue=hook, extra_args=[PTR] * n_extra,
                                  poll=interrupt.Poller)
        if batch != 1 or a_bs or b_bs:
            assert epi is None, "epilogues are planned for unbatched products only"
            kern = matmul.emit_batched(module, name + "_b", kern, dt, batch, a_bs, b_bs, M * N,
                                       polls=True)
        return _MatmulKernel(kern, name, None, 0)

    def _err_cell(self, b, slots):
        return b.load(b.gep(slots, [_i64(self.err_slot)], source_etype=PTR), typ=PTR)


def _set_slots(b, bufs, slots, arena, items, consts):
    """``slots[k]`` for each (k, source) of ``items`` (see ``emit_kernel``)."""
    for k, (kind, val) in items:
        if kind == "buf":
            p = b.load(b.gep(bufs, [_i64(val)], source_etype=PTR), typ=PTR)
        elif kind == "const":
            p = consts.ptr(b, val)
        else:
            p = b.gep(arena, [_i64(val)], source_etype=I8)
        b.store(p, b.gep(slots, [_i64(k)], source_etype=PTR))


def emit_kernel(module, name, seg_fn, nslots, sources, arena_bytes, consts) -> ir.Function:
    """``i32 @name(ptr bufs)``: slots from bufs (inputs, outputs), constants and the arena.

    ``sources[k]`` for slot k: ("buf", i) | ("const", array) | ("temp", byte offset); constant
    arrays are read from ``consts`` (a ``ConstTable``)."""
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), name)
    fn.args[0].name = "bufs"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slots = b.alloca(PTR, size=_i64(nslots + 1), name="slots")
    err = b.alloca(I32, size=_i64(2), name="err")      # {error bits, interrupt.start}
    b.store(ir.Constant(I32, 0), err)
    interrupt.emit_call_start(b, module, err)
    b.store(err, b.gep(slots, [_i64(nslots)], source_etype=PTR))
    arena = None
    if arena_bytes:
        malloc = module.globals.get("tj_malloc") or ir.Function(
            module, ir.FunctionType(PTR, [I64]), "tj_malloc")
        arena = b.call(malloc, [_i64(arena_bytes)], name="arena")
        with b.if_then(b.icmp_unsigned("==", arena, ir.Constant(PTR, None)), likely=False):
            b.ret(ir.Constant(I32, ERR_NOMEM))      # the caller raises MemoryError
    items = list(enumerate(sources))
    if len(items) <= KERNEL_SLOTS:
        _set_slots(b, fn.args[0], slots, arena, items, consts)
    else:          # one block of thousands of stores: code generation quadratic in its length
        null = ir.Constant(PTR, None)
        for c in range(0, len(items), KERNEL_SLOTS):
            part = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR]),
                               f"{name}_slots{c // KERNEL_SLOTS}")
            part.linkage = "internal"
            part.attributes.add("noinline")
            pb = ir.IRBuilder(part.append_basic_block("entry"))
            _set_slots(pb, *part.args, items[c:c + KERNEL_SLOTS], consts)
            pb.ret_void()
            b.call(part, [fn.args[0], slots, null if arena is None else arena])
    rc = b.call(seg_fn, [slots])
    if arena is not None:
        free = module.globals.get("tj_free") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), [PTR]), "tj_free")
        b.call(free, [arena])
    b.ret(rc)
    return fn
