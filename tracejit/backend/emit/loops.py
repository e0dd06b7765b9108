"""Emit one fused loop nest (a ``LoopGroup``) as ``void @g(ptr slots, i64 start, i64 end)``.

Layout of the generated code:
- the group's iteration shape is collapsed: extent-1 dims are dropped and adjacent dims merge
  when every memory access (leaf loads, stores, reduction outputs) stays affine across them;
- dims 0..k-2 are scalar loops; the innermost dim is explicit vector code of ``VL`` lanes
  (``VL = vector bytes / widest itemsize in the group``, max 16), interleaved ``U`` times in
  program order (each equation emitted for u = 0..U-1 before the next; ``U`` = 1 outside
  reductions in a plan of more than ``UNROLL_EQNS`` loop equations). When the inner extent
  is not a multiple of ``U*VL``, the whole steps run unmasked and the last one under lane masks
  (``llvm.masked.load/store``; strided operands use masked gather/scatter), a second copy of the
  body; a long body, or any body of such a large plan, in the first tier is emitted once, every
  vector masked (``_split_tail``). The range [start, end) is over collapsed dim 0 (the only dim
  when k == 1)
  and, when k == 1, starts at a multiple of the grain ``U*VL``;
- loads of operands whose innermost stride is 0 are hoisted out of the inner loop and splat;
- a body of float arithmetic and math calls has its constants and callees computed in the entry
  block and its masked reduction selects in a block of their own, so that the opt-0 tier's
  FastISel selects it instead of SelectionDAG (``ops.OpContext``: ~2x faster codegen).

Reductions (sinks), per output element:
- innermost dim reduced: U vector accumulators (lane l of accumulator u takes inner indices
  i = u*VL + l mod U*VL, sequentially), combined pairwise (u), then lanes by halving, then
  combined into the output, which holds the running result over the outer reduced indices in
  loop order (outputs are initialised with the identity first, +0.0 for float sums as in NumPy);
- innermost dim kept: the output vector is loaded, combined and stored at each reduced index.
The order depends only on the shape, never on the thread count. Large groups (estimated work
>= PARALLEL_NS from the op mix) run on the thread pool: split over collapsed dim 0 when every
reduction keeps it (disjoint outputs); otherwise (dim 0 reduced) as CHUNKS fixed chunks of dim 0,
each reducing into its own partial output, combined in chunk order by the segment (so a chunked
reduction adds one more level, chunk partials, to the order above). argmax/argmin over dim 0 and
very large partial outputs stay on one thread.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ...ir import Literal
from ..matmul.kernel import vector_bytes
from ..plan.lowering import COST
from ..plan.steps import ARG_PRIMS, LoopGroup
from . import ops
from .complex import CEMIT
from .memory import MemoryOps, _real, add_index, identity
from .ops import EMIT, I32, I64, OpContext, mem_type, reg_type
from .rules import rule

PTR = ir.PointerType()
PARALLEL_NS = 50_000          # estimated work above which a loop is split across threads
CHUNKS = 16                   # fixed chunks of a parallel reduction over the outermost dim
SPLIT_TAIL_EQNS = 24          # bodies up to this long get an unmasked main loop in every tier
# A plan with more fused-loop equations than this emits each once (no unrolled copies, no split
# tail in the first tier) outside reductions: every copy costs emission, printing and code
# generation, which dominate the first call of a large graph (a 10^4-op random graph: 4.9 ->
# 3.0 s of emission), while its many small loops gain little from unrolling
UNROLL_EQNS = 2048


def _map(fn, *vals):
    """Apply ``fn`` per component when the values are complex (re, im) pairs."""
    if isinstance(vals[0], tuple):
        return tuple(fn(*parts) for parts in zip(*vals))
    return fn(*vals)


def _i64(v):
    return ir.Constant(I64, int(v))


class Access:
    """A memory operand: view + per-dim strides (collapsed along with the group dims)."""

    def __init__(self, view, slot):
        self.view, self.slot = view, slot
        self.strides = list(view.strides)
        self.dtype = view.dtype
        self.ptr = None


def _identity(prim, dtype):
    return identity(prim, dtype)


def _acc_dtype(eqn):
    """Accumulator dtype of a reduction's vector lanes: f32 sums accumulate in f64 (measured:
    1e-8 relative error at n = 1e7 like NumPy's pairwise sum, against 1e-6 with f32 lanes,
    for ~10-40% more time)."""
    dt = eqn.outvars[0].ty.dtype
    return np.dtype(np.float64) if eqn.prim.name == "reduce_sum" and dt == np.float32 else dt


def _combine(prim):
    key = {"reduce_sum": "add", "reduce_prod": "mul", "reduce_max": "max",
           "reduce_min": "min"}[prim]

    def comb(cx, e, x, y):
        return (CEMIT if isinstance(x, tuple) else EMIT)[key](cx, e, x, y)
    return comb


class GroupCode:
    """What the segment needs to run a group: the body function and how to call it."""

    def __init__(self, fn, n0, grain, parallel, inits, vl, unroll, dims):
        self.fn, self.n0, self.grain, self.parallel = fn, n0, grain, parallel
        self.inits, self.vl, self.unroll, self.dims = inits, vl, unroll, dims
        self.chunks = None     # (chunk_len, nchunks, [(slot, sink eqn), ...]): see _chunking
        self.work = 0          # estimated ns of one call over [0, n0): long loops poll Ctrl-C


def _collapse(shape, accesses, red_flags):
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    ext = [shape[d] for d in dims]
    strides = [[a.strides[d] for d in dims] for a in accesses]
    reds = [[r[d] for d in dims] for r in red_flags]
    i = len(ext) - 2
    while i >= 0:
        ok = all(s[i] == s[i + 1] * ext[i + 1] for s in strides) and \
            all(r[i] == r[i + 1] for r in reds)
        if ok:
            ext[i] *= ext[i + 1]
            del ext[i + 1]
            for s in strides:
                del s[i]                 # the merged dim keeps the inner stride
            for r in reds:
                del r[i + 1]
        i -= 1
    for a, s in zip(accesses, strides):
        a.strides = s
    return ext, reds


def _for(b, lo, hi, step, body, name):
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    loop = b.append_basic_block(f"{name}.body")
    done = b.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name)
    i.add_incoming(lo, pre)
    b.cbranch(b.icmp_signed("<", i, hi), loop, done)
    b.position_at_end(loop)
    body(i)
    i.add_incoming(b.add(i, step), b.block)
    b.branch(head)
    b.position_at_end(done)


class _Emitter(MemoryOps):
    def __init__(self, module, name, group, plan, slot_of, namer, err_slot=0, unroll_max=4):
        self.module, self.group, self.plan = module, group, plan
        self.unroll_max = unroll_max
        self.err_slot = err_slot
        self.slot_of, self.namer = slot_of, namer
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
        self.fn.args[0].name, self.fn.args[1].name, self.fn.args[2].name = "slots", "start", "end"
        self.fn.attributes.add("nounwind")
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.leaves: dict = {}
        self.consts: dict = {}
        self.stores: list = []
        self.sinks: list = []
        self.gathers: dict = {}       # id(take eqn) -> (access of x, axis stride, axis length)

    # setup ---------------------------------------------------------------------------------------
    def _access(self, view):
        return Access(view, self.slot_of(view.base))

    def collect(self):
        g, plan = self.group, self.plan
        for e in (*g.eqns, *g.sinks):
            if e.prim.name == "take":
                self._take(e)
                continue
            for a in e.invars:
                self._leaf(a)
        for a, dst in g.stores:
            self._leaf(a)
            self.stores.append((a, self._access(dst)))
        for e in g.sinks:
            out = e.outvars[0]
            axes = e.params["axes"] if "axes" in e.params else (e.params["axis"],)
            kept = [d for d in range(len(g.shape)) if d not in axes]
            ostrides = [0] * len(g.shape)
            acc = 1
            for d in reversed(kept):
                ostrides[d] = acc
                acc *= g.shape[d]
            view = plan.view_of(out)
            a = self._access(view)
            a.strides = ostrides
            self.sinks.append((e, a, [d in axes for d in range(len(g.shape))]))

    def _take(self, e):
        """take(x, idx, axis): idx is read broadcast over the output; x through a gather
        access whose strides cover every output dim except idx's (the axis part comes from
        the index value at run time)."""
        x, idx = e.invars
        axis, ni = e.params["axis"], idx.ty.ndim
        xv = self.plan.view_of(x)
        xs = list(xv.strides)
        acc = self._access(xv)
        acc.strides = xs[:axis] + [0] * ni + xs[axis + 1:]
        self.gathers[id(e)] = (acc, xs[axis], x.ty.shape[axis])
        if isinstance(idx, Literal) or id(idx) in self.group.members:
            return                  # a member has the output's shape (x is 1-D): read in place
        iv = self.plan.view_of(idx)
        if isinstance(iv.base, Literal):
            self.consts[("idx", id(e))] = iv.base
            return
        ia = self._access(iv)
        ia.strides = [0] * axis + list(iv.strides) + [0] * (x.ty.ndim - axis - 1)
        self.leaves[("idx", id(e))] = ia

    def _leaf(self, a):
        if isinstance(a, Literal) or id(a) in self.group.members or id(a) in self.leaves \
                or id(a) in self.consts:
            return
        view = self.plan.view_of(a)
        if isinstance(view.base, Literal):
            self.consts[id(a)] = view.base
            return
        acc = self._access(view)
        if view.shape != self.group.shape:        # a rank-0 operand broadcasts implicitly
            assert view.shape == (), (view.shape, self.group.shape)
            acc.strides = [0] * len(self.group.shape)
        self.leaves[id(a)] = acc

    def all_accesses(self):
        return [*self.leaves.values(), *(s for _, s in self.stores),
                *(s for _, s, _ in self.sinks), *(g[0] for g in self.gathers.values())]

    def lanes(self):
        size = 1
        for e in (*self.group.eqns, *self.group.sinks):
            for v in (*e.invars, *e.outvars):
                size = max(size, _real(v.ty.dtype).itemsize)
        for a in self.all_accesses():
            size = max(size, _real(a.dtype).itemsize)
        return max(2, min(16, vector_bytes() // size))

    # code ----------------------------------------------------------------------------------------
    def emit(self) -> GroupCode:
        g = self.group
        self.collect()
        accesses = self.all_accesses()
        shape = g.shape
        if any(a.dtype.kind == "c" for a in accesses) and not g.eqns and not g.sinks \
                and not self.consts and all(id(v) in self.leaves for v, _ in g.stores):
            shape = self._complex_as_pairs(accesses)
        ext, reds = _collapse(shape, accesses, [r for _, _, r in self.sinks])
        self.reds = reds
        k = len(ext)
        size = int(np.prod(g.shape, dtype=np.int64))
        b = self.b
        inits = [(e.outvars[0], _identity(e.prim.name, e.outvars[0].ty.dtype)) for e in g.sinks
                 if e.prim.name not in ARG_PRIMS]
        bases, ptrs = {}, {}      # a slot read and written (leaf and store) is loaded once
        for a in accesses:
            base = bases.get(a.slot)
            if base is None:
                base = bases[a.slot] = b.load(b.gep(self.fn.args[0], [_i64(a.slot)],
                                                    source_etype=PTR), typ=PTR)
            off = a.view.offset * (2 if a.dtype.kind == "c" else 1)
            key = (a.slot, off, _real(a.dtype))
            if key not in ptrs:
                ptrs[key] = b.gep(base, [_i64(off)], source_etype=mem_type(_real(a.dtype))) \
                    if off else base
            a.ptr = ptrs[key]
        if size == 0:
            b.ret_void()
            return GroupCode(self.fn, 0, 1, False, inits, 1, 1, ext)
        if k == 0:
            self.vl, self.unroll = 1, 1
            self.cx = OpContext(b, 1)
            self._inner_setup([_i64(0)] * len(accesses))
            self._body(1, _i64(0), None, [_i64(0)] * len(accesses))
            self._inner_finish([_i64(0)] * len(accesses))
            b.ret_void()
            return GroupCode(self.fn, 1, 1, False, inits, 1, 1, ext)
        self.vl = self.lanes()
        inner = ext[-1]
        nops = len(g.eqns) + len(g.stores) + len(g.sinks)
        self.unroll = 4 if inner >= 4 * self.vl and nops <= 400 else \
            (2 if inner >= 2 * self.vl else 1)
        if not any(r[-1] for r in reds):        # (reductions keep their order: see above)
            self.unroll = min(self.unroll, self.unroll_max)
        self.cx = OpContext(b, self.vl, hoist=self._fast_isel_ok())
        self._nest(ext, 0, [_i64(0)] * len(accesses))
        b.ret_void()
        parallel_ok = all(not r[0] for r in reds)
        work = size * self._cost()
        parallel = parallel_ok and work >= PARALLEL_NS and ext[0] >= 2
        grain = self.vl * self.unroll if k == 1 else 1
        code = GroupCode(self.fn, ext[0], grain, parallel, inits, self.vl, self.unroll, ext)
        code.work = work
        if not parallel_ok and work >= PARALLEL_NS and ext[0] >= 2:
            code.chunks = self._chunking(ext, reds, grain)
        return code

    def _chunking(self, ext, reds, grain):
        """Split collapsed dim 0 into at most CHUNKS fixed chunks (a function of the shape only)
        when it is reduced: each chunk reduces into its own partial output, and the segment
        combines the partials in chunk order, so results never depend on the thread count."""
        red0 = [(self.sinks[n][1].slot, self.sinks[n][0]) for n, r in enumerate(reds) if r[0]]
        if any(e.prim.name in ARG_PRIMS for _, e in red0):
            return None
        if sum(e.outvars[0].ty.size * e.outvars[0].ty.dtype.itemsize for _, e in red0) * \
                CHUNKS > 1 << 16:
            return None
        chunk = -(-ext[0] // CHUNKS)
        chunk = -(-chunk // grain) * grain
        return chunk, -(-ext[0] // chunk), red0

    def _complex_as_pairs(self, accesses):
        """A pure copy of complex data moves (re, im) pairs: add a trailing dim of 2 reals."""
        for a in accesses:
            real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
            a.view = type(a.view)(a.view.base, a.view.offset * 2, [], (), real)
            a.strides = [2 * s for s in a.strides] + [1]
            a.dtype = real
        return self.group.shape + (2,)

    def _fast_isel_ok(self):
        """Whether the body is all float arithmetic and calls, which FastISel selects when
        constants and callees are hoisted (``ops.FAST_ISEL``)."""
        return not ops.is_hot(self.b.module) and all(
            e.prim.name in ops.FAST_ISEL and e.outvars[0].ty.dtype.kind == "f"
            for e in self.group.eqns)

    def _split_tail(self) -> bool:
        """Whether an inner extent that is not a multiple of the step gets an unmasked main loop
        and a masked tail (two copies of the body) rather than one loop with every vector
        under its lane mask. Masked loads and stores are about as fast as plain ones with
        AVX-512 but several times slower with AVX2 (``vmaskmov``: 4.5x on a stencil-sized
        loop), so the split pays wherever the body is short or the kernel is hot; a second copy
        of a long chain, or of every body of a large plan, would double the first tier's
        emission and codegen time."""
        return ops.is_hot(self.b.module) or \
            (len(self.group.eqns) <= SPLIT_TAIL_EQNS and self.unroll_max > 1)

    def _cost(self):
        c = sum(COST.get(e.prim.name, 0.05) for e in self.group.eqns)
        c += 0.1 * (len(self.leaves) + len(self.stores) + len(self.sinks))
        return c

    def _nest(self, ext, level, offs):
        b, k = self.b, len(ext)
        accesses = self.all_accesses()
        lo = self.fn.args[1] if level == 0 else _i64(0)
        hi = self.fn.args[2] if level == 0 else _i64(ext[level])
        if level < k - 1:
            def outer(i):
                new = [b.add(o, b.mul(i, _i64(a.strides[level]))) if a.strides[level] else o
                       for o, a in zip(offs, accesses)]
                self._nest(ext, level + 1, new)
            _for(b, lo, hi, _i64(1), outer, f"d{level}")
            return
        self._inner_setup(offs)
        step = self.vl * self.unroll
        if ext[-1] % step == 0:
            # every call range covers whole steps: [start, end) splits at multiples of the grain
            _for(b, lo, hi, _i64(step), lambda i: self._body(self.unroll, i, None, offs), "i")
        else:
            def masked(i):
                lanes = [ir.Constant(ir.VectorType(I64, self.vl),
                                     [u * self.vl + j for j in range(self.vl)])
                         for u in range(self.unroll)]
                end = self._splat(hi)
                at = self._splat(i)
                masks = [b.icmp_signed("<", b.add(at, lane), end) for lane in lanes]
                self._body(self.unroll, i, masks, offs)
            tail = lo
            if self._split_tail():
                # whole steps unmasked, then the rest under lane masks: the same vectors in the
                # same order (reduction lanes too), so the results are those of the masked loop
                whole = b.mul(b.sdiv(b.sub(hi, lo), _i64(step)), _i64(step))
                tail = b.add(lo, whole)
                _for(b, lo, tail, _i64(step),
                     lambda i: self._body(self.unroll, i, None, offs), "i")
            _for(b, tail, hi, _i64(step), masked, "i")
        self._inner_finish(offs)

    # inner loop pieces -----------------------------------------------------------------------------
    def _inner_setup(self, offs):
        """Hoisted loads of inner-stride-0 leaves; reduction accumulators."""
        b = self.b
        accesses = self.all_accesses()
        self.hoisted = {}
        for key, a in self.leaves.items():
            if not a.strides or a.strides[-1] == 0:
                off = offs[accesses.index(a)]
                self.hoisted[key] = self._splat(self._scalar_load(a, off))
        self.accs = {}
        for n, (e, a, red) in enumerate(self.sinks):
            if e.prim.name in ARG_PRIMS:
                assert self.vl > 1 and self.reds[n][-1]
                self.accs[n] = self._arg_setup(e)
                continue
            if self.vl > 1 and self.reds[n] and self.reds[n][-1]:
                odt = _acc_dtype(e)
                init = self._identity_value(e.prim.name, odt)
                slots = []
                with b.goto_entry_block():
                    for _ in range(self.unroll):
                        slots.append(_map(lambda v: b.alloca(v.type), init))
                for slot in slots:
                    _map(lambda v, p: b.store(v, p), init, slot)
                self.accs[n] = slots

    def _inner_finish(self, offs):
        b, cx = self.b, self.cx
        accesses = self.all_accesses()
        for n, slots in self.accs.items():
            e, a, _ = self.sinks[n]
            if e.prim.name in ARG_PRIMS:
                self._arg_finish(e, a, slots, offs[accesses.index(a)])
                continue
            comb = _combine(e.prim.name)
            vals = [_map(lambda p: b.load(p), s) for s in slots]
            while len(vals) > 1:
                vals = [comb(cx, e, vals[i], vals[i + 1]) if i + 1 < len(vals) else vals[i]
                        for i in range(0, len(vals), 2)]
            v = vals[0]
            width = self.vl
            if _acc_dtype(e) != e.outvars[0].ty.dtype:          # f64 accumulators of an f32 sum
                v = b.fptrunc(v, ir.VectorType(reg_type(e.outvars[0].ty.dtype), self.vl))
            sub = OpContext(b, 1)
            while width > 1:
                half = width // 2
                lo = _map(lambda x: b.shuffle_vector(x, x, ir.Constant(
                    ir.VectorType(I32, half), list(range(half)))), v)
                hi = _map(lambda x: b.shuffle_vector(x, x, ir.Constant(
                    ir.VectorType(I32, half), list(range(half, width)))), v)
                if half > 1:
                    v = comb(OpContext(b, half), e, lo, hi)
                else:
                    first = _map(lambda x: b.extract_element(x, _i64(0)), lo)
                    v = comb(sub, e, first, _map(lambda x: b.extract_element(x, _i64(0)), hi))
                width = half
            off = offs[accesses.index(a)]
            old = self._scalar_load(a, off)
            self._scalar_store(a, off, comb(sub, e, old, v))

    # argmax / argmin: (value, index) accumulator pairs, first index of the extreme; NaN is the
    # extreme (the first NaN wins), as NumPy ----------------------------------------------------
    def _const(self, lit):
        if lit.ty.dtype.kind == "c":
            t = reg_type(_real(lit.ty.dtype))
            z = complex(lit.value)
            return self.cx.const(t, z.real), self.cx.const(t, z.imag)
        return self.cx.const(reg_type(lit.ty.dtype), lit.value.item())

    def _identity_value(self, prim, dtype):
        dt = np.dtype(dtype)
        if dt.kind == "c":
            t = reg_type(_real(dt))
            return self.cx.const(t, 1.0 if prim == "reduce_prod" else 0.0), self.cx.const(t, 0.0)
        return self.cx.const(reg_type(dt), _identity(prim, dt))

    def _body(self, nu, i, masks, offs):
        """``nu`` interleaved vectors at inner index ``i``; ``masks``: one lane mask per vector
        (None: all lanes active)."""
        b, cx = self.b, self.cx
        mask = masks or [None] * nu
        at = [add_index(b, i, _i64(u * self.vl)) for u in range(nu)]   # index of vector u
        accesses = self.all_accesses()
        env = {}
        for key, a in self.leaves.items():
            if key in self.hoisted:
                env[key] = [self.hoisted[key]] * nu
            else:
                off = offs[accesses.index(a)]
                env[key] = [self._vec_load(a, off, at[u], mask[u]) for u in range(nu)]

        def val(atom, u):
            if isinstance(atom, Literal):
                return self._const(atom)
            if id(atom) in self.consts:
                return self._const(self.consts[id(atom)])
            return env[id(atom)][u]

        for e in self.group.eqns:
            if e.prim.name == "take":
                env[id(e.outvars[0])] = [self._gather(e, u, i, mask[u], offs, val, env)
                                         for u in range(nu)]
                continue
            if e.prim.name == "check":
                env[id(e.outvars[0])] = [self._check(e, val(e.invars[0], u),
                                                     val(e.invars[1], u), mask[u])
                                         for u in range(nu)]
                continue
            emit = rule(e)
            outs = [emit(cx, e, *[val(a, u) for a in e.invars]) for u in range(nu)]
            name = self.namer(e.outvars[0]) if self.namer else ""
            if name:
                for o in outs:
                    if isinstance(o, ir.Instruction):
                        o.name = name
            env[id(e.outvars[0])] = outs
        if cx.hoist and (masks and self.sinks or
                         any(e.prim.name in ARG_PRIMS for e, _, _ in self.sinks)):
            # reductions select masked lanes (and argmax compares): a block of their own, so
            # the block of the equations above stays whole for FastISel (see OpContext.hoist)
            step = b.append_basic_block(f"{b.block.name}.sinks")
            b.branch(step)
            b.position_at_end(step)
        for atom, a in self.stores:
            off = offs[accesses.index(a)]
            for u in range(nu):
                self._vec_store(a, off, at[u], val(atom, u), mask[u])
        for n, (e, a, _) in enumerate(self.sinks):
            if e.prim.name in ARG_PRIMS:
                for u in range(nu):
                    self._arg_step(e, self.accs[n][u], val(e.invars[0], u), at[u], mask[u])
                continue
            comb = _combine(e.prim.name)
            odt = e.outvars[0].ty.dtype
            off = offs[accesses.index(a)]
            if n in self.accs:
                adt = _acc_dtype(e)
                ident = self._identity_value(e.prim.name, adt)
                for u in range(nu):
                    v = val(e.invars[0], u)
                    if adt != odt:
                        v = b.fpext(v, cx.ty(reg_type(adt)))
                    if mask[u] is not None:
                        v = _map(lambda x, y: b.select(mask[u], x, y), v, ident)
                    slot = self.accs[n][u]
                    new = comb(cx, e, _map(lambda p: b.load(p), slot), v)
                    _map(lambda x, p: b.store(x, p), new, slot)
            else:
                for u in range(nu):
                    old = self._vec_load(a, off, at[u], mask[u])
                    self._vec_store(a, off, at[u], comb(cx, e, old, val(e.invars[0], u)), mask[u])


def unroll_limit(plan) -> int:
    """The most copies of a loop body (``U``) the groups of ``plan`` may interleave: 1 when the
    plan has more than ``UNROLL_EQNS`` fused-loop equations (a function of the plan only, so
    both tiers emit the same loops)."""
    n = sum(len(s.eqns) + len(s.stores) + len(s.sinks) for s in plan.steps
            if isinstance(s, LoopGroup))
    return 4 if n <= UNROLL_EQNS else 1


def emit_group(module, name, group, plan, slot_of, namer=None, err_slot=0,
               unroll_max=4) -> GroupCode:
    """Emit ``group``'s loop nest into ``module`` (see the module docstring). ``err_slot``: the
    slot holding a pointer to the i32 error cell (set to ``ERR_INDEX`` by a failed gather);
    ``unroll_max``: ``unroll_limit(plan)``. (A ``RowMatvecGroup`` has its own emitter,
    ``rowfuse.emit_rowmv``.)"""
    return _Emitter(module, name, group, plan, slot_of, namer, err_slot, unroll_max).emit()
