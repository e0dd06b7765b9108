"""The register-tiled matmul kernel emitters behind ``matmul.py`` (whose docstring has the
design, the tile shapes and the summation order): IR helpers, the tiled path, the packed Bᵀ
panels, the matrix-vector dot path and the complex scalar path."""
from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir

from ..engine import jit
from ..abi import ERR_NOMEM
from ..plan.lowering import MATMUL_DTYPES

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
_STACK_PACK_LIMIT = 128 * 1024  # bytes; larger B panels go to malloc (worker threads have small stacks)

_SCALAR = {np.dtype(np.float64): ir.DoubleType(), np.dtype(np.float32): ir.FloatType(),
           np.dtype(np.int64): I64, np.dtype(np.int32): I32,
           # narrow and unsigned ints: the same wrapping mul + add (the bits do not depend on
           # the sign); NumPy's int8 @ int8 is int8 too
           **{np.dtype(d): ir.IntType(8 * np.dtype(d).itemsize)
              for d in ("int8", "int16", "uint8", "uint16", "uint32", "uint64")},
           np.dtype(np.complex128): ir.DoubleType(), np.dtype(np.complex64): ir.FloatType()}
assert _SCALAR.keys() == MATMUL_DTYPES, "the planner's dtypes are this table's keys"


@functools.cache
def vector_bytes() -> int:
    """Register width used for tiles: 64 with AVX-512, else 32 (AVX2/NEON-ish fallback)."""
    return 64 if "+avx512f" in jit.host_cpu()[1] else 32


def lanes(dtype) -> int:
    """Vector lanes per register for a real dtype (8 for f64, 16 for f32 with AVX-512)."""
    return vector_bytes() // np.dtype(dtype).itemsize


def tile_shape(dtype, M, N):
    """(MR rows, NV vectors) of the register tile chosen for an M x N output."""
    vl = lanes(dtype)
    nvec = max(1, -(-N // vl))
    # 24 accumulators with AVX-512's 32 registers, 12 with AVX2's 16 (24 spill there: measured
    # 12 vs 23 GFLOP/s f64 1000^3 on znver3). 6 rows x 4 vectors measured 0-15% faster than
    # 12 x 2 on znver4 (fewer loads per fma, fewer re-reads of A); skinny M widens the tile so
    # the fma chains stay in flight.
    acc = 24 if vector_bytes() >= 64 else 12
    nv = min(nvec, max(acc // 6, acc // max(1, min(M, 6))))
    mr = max(1, min(M, acc // nv))
    return mr, nv


@functools.cache
def _register_libc():
    """Register malloc/free under stable aliases (libc is not in LLVM's default search path)."""
    libc = ctypes.CDLL(None)
    for name in ("malloc", "free"):
        jit.add_symbol(f"tj_{name}", ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)


# ---------------------------------------------------------------------------------------------
# Small IR helpers

def _declare(module, name, fnty):
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, fnty, name)


def _vsuffix(vty):
    el = vty.element
    kind = "i" if isinstance(el, ir.IntType) else "f"
    bits = el.width if kind == "i" else (64 if isinstance(el, ir.DoubleType) else 32)
    return f"v{vty.count}{kind}{bits}"


def _i64(v):
    return ir.Constant(I64, v) if isinstance(v, int) else v


def _loop(b, start, stop, body, carried=(), name="i", step=1):
    """Emit ``for i in range(start, stop, step)`` carrying SSA values in phis.

    ``body(i, vals) -> new vals`` emits the loop body at the builder position.  Returns the carried
    values at loop exit (the header phis, which dominate the exit block).
    """
    start, stop = _i64(start), _i64(stop)
    pre = b.block
    head = b.append_basic_block(name + ".head")
    loop_body = b.append_basic_block(name + ".body")
    done = b.append_basic_block(name + ".done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name)
    i.add_incoming(start, pre)
    phis = []
    for v in carried:
        p = b.phi(v.type)
        p.add_incoming(v, pre)
        phis.append(p)
    b.cbranch(b.icmp_signed("<", i, stop), loop_body, done)
    b.position_at_end(loop_body)
    new = body(i, phis)
    new = new if phis else ()  # bodies without carried values may return anything
    latch = b.block
    i.add_incoming(b.add(i, ir.Constant(I64, step)), latch)
    for p, v in zip(phis, new):
        p.add_incoming(v, latch)
    b.branch(head)
    b.position_at_end(done)
    return phis


def _repeat(b, count, body, name):
    """``for t in range(count)`` for a static count: no loop for 0 or 1 iterations."""
    if count == 1:
        body(ir.Constant(I64, 0), [])
    elif count > 1:
        _loop(b, 0, count, body, name=name)


class _Kernel:
    """Per-function emission state: types, intrinsics, operand strides and options."""

    def __init__(self, b, dtype, K, a_strides, b_strides, c_strides, epilogue, accumulate):
        self.b = b
        self.dtype = np.dtype(dtype)
        self.is_int = self.dtype.kind in "iu"
        self.T = _SCALAR[self.dtype]
        self.vl = lanes(self.dtype) if self.dtype.kind != "c" else 1
        self.V = ir.VectorType(self.T, self.vl)
        self.K = K
        self.sa, self.sb, self.sc = a_strides, b_strides, c_strides
        self.epilogue, self.accumulate = epilogue, accumulate
        self.poller = None        # ``poll(b, module, cell)`` of the caller: see ``check``
        self.align = self.dtype.itemsize if self.dtype.kind != "c" else self.dtype.itemsize // 2
        self.zero = ir.Constant(self.V, None)
        m = b.module
        sfx = _vsuffix(self.V)
        mty = ir.VectorType(I1, self.vl)
        if not self.is_int:
            self.fma_fn = _declare(m, f"llvm.fma.{sfx}", ir.FunctionType(self.V, [self.V] * 3))
            self.sfma_fn = _declare(m, f"llvm.fma.{'f64' if self.T == ir.DoubleType() else 'f32'}",
                                    ir.FunctionType(self.T, [self.T] * 3))
        self.mload_fn = _declare(m, f"llvm.masked.load.{sfx}.p0",
                                 ir.FunctionType(self.V, [PTR, mty, self.V]))
        self.mstore_fn = _declare(m, f"llvm.masked.store.{sfx}.p0",
                                  ir.FunctionType(ir.VoidType(), [self.V, PTR, mty]))

    def check(self, cleanup=None):
        """Between two column panels (or complex rows): stop the kernel, returning 0, when the
        caller's poller says so (Ctrl-C, or an error another thread of the call set: the
        call raises anyway); ``cleanup()`` (freeing a packed panel) runs first. No-op without a
        poller, so kernels emitted without one are unchanged."""
        if self.poller is None:
            return
        b = self.b
        stop = b.function.append_basic_block("mm.stop")
        self.poller.check(b, stop)
        with b.goto_block(stop):
            if cleanup is not None:
                cleanup()
            b.ret(ir.Constant(I32, 0))

    # -- arithmetic --------------------------------------------------------------------------
    def fma(self, x, y, acc):
        """acc + x*y with one rounding (integers: wrapping mul + add)."""
        if self.is_int:
            return self.b.add(self.b.mul(x, y), acc)
        fn = self.fma_fn if isinstance(x.type, ir.VectorType) else self.sfma_fn
        return self.b.call(fn, [x, y, acc])

    def add(self, x, y):
        return self.b.add(x, y) if self.is_int else self.b.fadd(x, y)

    def splat(self, x):
        b = self.b
        v = b.insert_element(ir.Constant(self.V, ir.Undefined), x, ir.Constant(I32, 0))
        return b.shuffle_vector(v, ir.Constant(self.V, ir.Undefined),
                                ir.Constant(ir.VectorType(I32, self.vl), [0] * self.vl))

    # -- memory ------------------------------------------------------------------------------
    def ptr(self, base, index):
        return self.b.gep(base, [_i64(index)], source_etype=self.T)

    def idx(self, *terms):
        """Sum of (value, stride) products as an i64 index; folds static zeros and ones."""
        b, out = self.b, None
        for v, s in terms:
            if s == 0:
                continue
            t = _i64(v) if s == 1 else b.mul(_i64(v), ir.Constant(I64, s))
            out = t if out is None else b.add(out, t)
        return out if out is not None else ir.Constant(I64, 0)

    def mask(self, n):
        """Constant lane mask with the first ``n`` lanes on, or None for a full vector."""
        if n in (None, self.vl):
            return None
        return ir.Constant(ir.VectorType(I1, self.vl), [1] * n + [0] * (self.vl - n))

    def vload(self, p, mask=None):
        if mask is None:
            return self.b.load(p, typ=self.V, align=self.align)
        return self.b.call(self.mload_fn, [p, mask, self.zero])

    def vstore(self, v, p, mask=None):
        if mask is None:
            self.b.store(v, p, align=self.align)
        else:
            self.b.call(self.mstore_fn, [v, p, mask])

    def load_c_vec(self, C, row, col0, nlanes):
        """Vector of C[row, col0 : col0 + nlanes] (zero padded), any column stride."""
        b, sm, sn = self.b, self.sc[0], self.sc[1]
        if sn == 1:
            return self.vload(self.ptr(C, self.idx((row, sm), (col0, 1))), self.mask(nlanes))
        v = self.zero
        for l in range(nlanes):
            x = b.load(self.ptr(C, self.idx((row, sm), (b.add(col0, _i64(l)), sn))), typ=self.T)
            v = b.insert_element(v, x, ir.Constant(I32, l))
        return v

    def store_c_vec(self, v, C, row, col0, nlanes):
        b, sm, sn = self.b, self.sc[0], self.sc[1]
        if sn == 1:
            self.vstore(v, self.ptr(C, self.idx((row, sm), (col0, 1))), self.mask(nlanes))
            return
        for l in range(nlanes):
            x = b.extract_element(v, ir.Constant(I32, l))
            b.store(x, self.ptr(C, self.idx((row, sm), (b.add(col0, _i64(l)), sn))))

    def finish(self, C, acc, row, col0, nlanes):
        """Apply the epilogue to one accumulator vector and store it."""
        if self.epilogue is not None:
            acc = self.epilogue(self.b, acc, row, col0, self.mask(nlanes))
        self.store_c_vec(acc, C, row, col0, nlanes)


# ---------------------------------------------------------------------------------------------
# Tiled path (real and integer dtypes)

def _emit_tile(kn, A, Bsrc, C, row0, col0, mr, widths):
    """One MR x NV register tile: k-loop of fmas, then epilogue and store.

    ``Bsrc(k, v) -> (ptr, mask)`` addresses vector ``v`` of B's row ``k`` for this panel;
    ``widths`` are the valid lanes of each of the NV vectors (only the last may be partial).
    """
    b, vl, nv = kn.b, kn.vl, len(widths)
    rows = [b.add(row0, _i64(r)) if r else row0 for r in range(mr)]
    cols = [b.add(col0, _i64(v * vl)) if v else col0 for v in range(nv)]
    if kn.accumulate:
        init = [kn.load_c_vec(C, rows[r], cols[v], widths[v]) for r in range(mr) for v in range(nv)]
    else:
        init = [kn.zero] * (mr * nv)

    def kstep(k, accs):
        bv = [kn.vload(*Bsrc(k, v)) for v in range(nv)]
        out = list(accs)
        for r in range(mr):
            a = b.load(kn.ptr(A, kn.idx((rows[r], kn.sa[0]), (k, kn.sa[1]))), typ=kn.T)
            s = kn.splat(a)
            for v in range(nv):
                out[r * nv + v] = kn.fma(s, bv[v], out[r * nv + v])
        return out

    accs = _loop(b, 0, kn.K, kstep, init, name="k") if kn.K > 0 else init
    for r in range(mr):
        for v in range(nv):
            kn.finish(C, accs[r * nv + v], rows[r], cols[v], widths[v])


def _emit_rows(kn, A, Bsrc, C, row_start, row_end, mr, widths):
    """Cover rows [row_start, row_end) with MR-row tiles, then 8/4/2/1-row remainder tiles.

    Static (int) bounds give straight-line remainders; runtime bounds get a test per size.
    """
    b = kn.b
    if isinstance(row_start, int) and isinstance(row_end, int):
        nfull, rem = divmod(row_end - row_start, mr)
        _repeat(b, nfull, lambda t, _: _emit_tile(
            kn, A, Bsrc, C, b.add(_i64(row_start), b.mul(t, _i64(mr))), Bsrc.col0, mr, widths),
            "it")
        row = row_start + nfull * mr
        for size in (16, 8, 4, 2, 1):
            if rem & size:
                _emit_tile(kn, A, Bsrc, C, _i64(row), Bsrc.col0, size, widths)
                row += size
        return
    count = b.sub(row_end, row_start)
    nfull = b.sdiv(count, _i64(mr))
    _loop(b, 0, nfull, lambda t, _: _emit_tile(
        kn, A, Bsrc, C, b.add(row_start, b.mul(t, _i64(mr))), Bsrc.col0, mr, widths), name="it")
    row = b.add(row_start, b.mul(nfull, _i64(mr)))
    rem = b.sub(count, b.mul(nfull, _i64(mr)))
    for size in (16, 8, 4, 2, 1):
        if size >= mr:
            continue
        take = b.icmp_unsigned("!=", b.and_(rem, _i64(size)), _i64(0))
        with b.if_then(take):
            _emit_tile(kn, A, Bsrc, C, row, Bsrc.col0, size, widths)
        row = b.select(take, b.add(row, _i64(size)), row)


class _BPanel:
    """Addresses B vectors for one column panel starting at ``col0`` (direct or packed)."""

    def __init__(self, kn, B, col0, buf=None, width=0):
        self.kn, self.B, self.col0, self.buf, self.width = kn, B, col0, buf, width
        self.masks = None

    def __call__(self, k, v):
        kn = self.kn
        if self.buf is not None:  # packed: row k of the panel is contiguous, zero padded
            return kn.ptr(self.buf, kn.idx((k, self.width), (_i64(v * kn.vl), 1))), None
        col = kn.b.add(self.col0, _i64(v * kn.vl)) if v else self.col0
        return kn.ptr(self.B, kn.idx((k, kn.sb[0]), (col, 1))), self.masks[v]


def _pack_panel(kn, B, buf, col0, width, ncols):
    """buf[k*width + c] = B[k, col0 + c] for c < ncols, zero for the padding columns."""
    b = kn.b

    def col(c, _):
        src = b.add(col0, c)

        def krow(k, _):
            x = b.load(kn.ptr(B, kn.idx((k, kn.sb[0]), (src, kn.sb[1]))), typ=kn.T)
            b.store(x, kn.ptr(buf, b.add(b.mul(k, _i64(width)), c)))
        _loop(b, 0, kn.K, krow, name="pk")
    _loop(b, 0, ncols, col, name="pc")
    if ncols < width:
        def zrow(k, _):
            for c in range(ncols, width):
                b.store(ir.Constant(kn.T, 0), kn.ptr(buf, b.add(b.mul(k, _i64(width)), _i64(c))))
        _loop(b, 0, kn.K, zrow, name="pz")


def _emit_tiled(kn, A, B, C, M, N, row_start, row_end):
    b, vl = kn.b, kn.vl
    mr, nv = tile_shape(kn.dtype, M, N)
    width = nv * vl
    ncol_full, rem = divmod(N, width)
    packed = kn.sb[1] != 1 and kn.K > 0
    buf = free = None
    if packed:
        nbytes = kn.K * width * kn.dtype.itemsize
        entry = b.function.entry_basic_block
        if nbytes <= _STACK_PACK_LIMIT:
            with b.goto_block(entry):
                b.position_at_start(entry)
                buf = b.alloca(kn.T, size=_i64(kn.K * width), name="bpack")
        else:
            _register_libc()
            malloc = _declare(b.module, "tj_malloc", ir.FunctionType(PTR, [I64]))
            free = _declare(b.module, "tj_free", ir.FunctionType(ir.VoidType(), [PTR]))
            buf = b.call(malloc, [_i64(nbytes)], name="bpack")
            with b.if_then(b.icmp_unsigned("==", buf, ir.Constant(PTR, None)), likely=False):
                b.ret(ir.Constant(I32, ERR_NOMEM))   # nothing allocated, nothing written yet

    def panel(col0, nvec, ncols):
        kn.check(None if free is None else lambda: b.call(free, [buf]))
        widths = [min(vl, ncols - v * vl) for v in range(nvec)]
        src = _BPanel(kn, B, col0, buf, nvec * vl)
        src.masks = [kn.mask(w) for w in widths]
        if packed:
            _pack_panel(kn, B, buf, col0, nvec * vl, ncols)
        _emit_rows(kn, A, src, C, row_start, row_end, mr, widths)

    _repeat(b, ncol_full, lambda jt, _: panel(b.mul(jt, _i64(width)), nv, width), "jt")
    if rem:
        panel(_i64(ncol_full * width), -(-rem // vl), rem)
    if free is not None:
        b.call(free, [buf])


def emit_epilogue_sweep(b, dtype, C, N, row_start, row_end, epilogue):
    """Apply ``epilogue`` (the contract of ``tiled.emit_matmul``) to rows [row_start, row_end)
    of a row-major C[:, N] that already holds the product (a BLAS call's result), in place:
    one pass over rows the caller just wrote, so they are still in cache."""
    kn = _Kernel(b, dtype, 0, (0, 0), (0, 0), (N, 1), epilogue, False)
    vl = kn.vl
    nfull, tail = divmod(N, vl)

    def row(i, _):
        def vec(j, _):
            col0 = b.mul(j, _i64(vl))
            kn.finish(C, kn.load_c_vec(C, i, col0, vl), i, col0, vl)
        _loop(b, 0, nfull, vec, name="ev")
        if tail:
            kn.finish(C, kn.load_c_vec(C, i, _i64(nfull * vl), tail), i, _i64(nfull * vl), tail)
    _loop(b, row_start, row_end, row, name="er")


# ---------------------------------------------------------------------------------------------
# Dot-product path (N == 1 with k-contiguous A): memory-bound matrix-vector product

def _hsum(kn, v):
    """Pairwise horizontal sum of a vector (halve, add, repeat)."""
    b, n = kn.b, kn.vl
    while n > 1:
        n //= 2
        lo = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, n), list(range(n))))
        hi = b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, n), list(range(n, 2 * n))))
        v = kn.add(lo, hi)
    return b.extract_element(v, ir.Constant(I32, 0))


def _emit_dot_rows(kn, A, x, y, row_start, row_end, unroll=2, block=4):
    """y[i] = sum_k A[i, k] * x[k] for rows in range, with A[i, :] and x contiguous.

    ``kn.sc[0]`` is y's stride.  Rows go in blocks of ``block`` (independent accumulator chains,
    one pass over A); the k range is split into full U*VL chunks, leftover full vectors, and one
    masked tail vector.
    """
    b, vl, K, sam = kn.b, kn.vl, kn.K, kn.sa[0]
    chunk = unroll * vl
    nchunk, krem = divmod(K, chunk)
    extra, tail = divmod(krem, vl)

    def rows_tile(row0, nrow):
        rows = [b.add(row0, _i64(r)) for r in range(nrow)]

        def step(kk, accs, nvecs, masks):
            xs = [kn.vload(kn.ptr(x, b.add(kk, _i64(u * vl))), masks[u]) for u in range(nvecs)]
            out = list(accs)
            for r in range(nrow):
                base = kn.idx((rows[r], sam), (kk, 1))
                for u in range(nvecs):
                    av = kn.vload(kn.ptr(A, b.add(base, _i64(u * vl))), masks[u])
                    out[r * unroll + u] = kn.fma(av, xs[u], out[r * unroll + u])
            return out

        accs = [kn.zero] * (nrow * unroll)
        if nchunk:
            accs = _loop(b, 0, nchunk, lambda t, a: step(b.mul(t, _i64(chunk)), a, unroll,
                                                          [None] * unroll), accs, name="kc")
        if extra or tail:
            masks = [None] * extra + ([kn.mask(tail)] if tail else [])
            accs = step(_i64(nchunk * chunk), accs, len(masks), masks + [None] * unroll)
        for r in range(nrow):
            s = accs[r * unroll]
            for u in range(1, unroll):
                s = kn.add(s, accs[r * unroll + u])
            s = _hsum(kn, s)
            yp = kn.ptr(y, kn.idx((rows[r], kn.sc[0])))
            if kn.accumulate:
                s = kn.add(s, b.load(yp, typ=kn.T))
            if kn.epilogue is not None:  # same contract as the tiles: a vector with lane 0 valid
                v = b.insert_element(kn.zero, s, ir.Constant(I32, 0))
                v = kn.epilogue(b, v, rows[r], _i64(0), kn.mask(1))
                s = b.extract_element(v, ir.Constant(I32, 0))
            b.store(s, yp)

    count = b.sub(_i64(row_end), _i64(row_start))
    nblk = b.sdiv(count, _i64(block))
    _loop(b, 0, nblk, lambda t, _: rows_tile(b.add(_i64(row_start), b.mul(t, _i64(block))),
                                             block), name="rb")
    _loop(b, b.add(_i64(row_start), b.mul(nblk, _i64(block))), row_end,
          lambda r, _: rows_tile(r, 1), name="rr")


# ---------------------------------------------------------------------------------------------
# Complex path: plain scalar loops (correct, not tuned)

def _emit_complex(kn, A, B, C, N, row_start, row_end):
    b, T = kn.b, kn.T

    def cload(base, index):
        p = kn.ptr(base, b.mul(index, _i64(2)))
        return b.load(p, typ=T), b.load(kn.ptr(p, 1), typ=T)

    def row(i, _):
        kn.check()

        def col(j, _):
            if kn.accumulate:
                init = list(cload(C, kn.idx((i, kn.sc[0]), (j, kn.sc[1]))))
            else:
                init = [ir.Constant(T, 0)] * 2

            def kstep(k, acc):
                ar, ai = cload(A, kn.idx((i, kn.sa[0]), (k, kn.sa[1])))
                br, bi = cload(B, kn.idx((k, kn.sb[0]), (j, kn.sb[1])))
                re = kn.fma(b.fneg(ai), bi, kn.fma(ar, br, acc[0]))
                im = kn.fma(ai, br, kn.fma(ar, bi, acc[1]))
                return [re, im]
            re, im = _loop(b, 0, kn.K, kstep, init, name="k")
            p = kn.ptr(C, b.mul(kn.idx((i, kn.sc[0]), (j, kn.sc[1])), _i64(2)))
            if kn.epilogue is not None:
                V2 = ir.VectorType(T, 2)
                v = b.insert_element(ir.Constant(V2, None), re, ir.Constant(I32, 0))
                v = kn.epilogue(b, b.insert_element(v, im, ir.Constant(I32, 1)), i, j, None)
                re, im = (b.extract_element(v, ir.Constant(I32, n)) for n in (0, 1))
            b.store(re, p)
            b.store(im, kn.ptr(p, 1))
        _loop(b, 0, N, col, name="j")
    _loop(b, row_start, row_end, row, name="i")
