"""Fixed-shape matrix products emitted as LLVM IR (register-tiled, explicit vectors, fma).

Shapes are static per trace, so every kernel is specialised on M, K, N and on the element strides
of its operands; a transposed view is just another stride pattern.  Design (see
shared/reference/matmul-notes.md, "tiled fixed-shape"):

* C is cut into register tiles of ``MR`` rows x ``NV`` vectors (24 accumulators, 6 x 4 for large
  M and N; the tile widens to 24/M vectors for skinny M so fma latency stays hidden, and grows to
  12 or 24 rows when N fits in 2 or 1 vectors).  Each tile runs a
  real k-loop with the accumulators in phi nodes: one vector load of B per vector, one broadcast
  of A per row, ``MR * NV`` fmas per k step.  A is read as broadcast scalars, so any A stride
  (including Aᵀ) is free.
* Column tails use ``llvm.masked.load/store``; row tails use tiles of 8, 4, 2, 1 rows, so the same
  body serves the row-range variant (runtime row bounds) used to split work over threads.
* When B's column stride is not 1 (e.g. a Bᵀ view), each column panel of B (K x MR-tile width) is
  packed once into a contiguous buffer (stack below 128 KiB, else malloc) and reused by all rows.
  Kernels return an i32: 0, or ``stacks.ERR_NOMEM`` when that malloc failed (nothing written).
* ``N == 1`` with k-contiguous A (matrix-vector) uses a dot-product form instead: a single pass
  over A with vector partial sums, reduced at the end (the product is memory bound).

Summation order (what "exact" means here), per output element C[i, j]:
  tiled path:  acc = 0 (or C_old when ``accumulate``); for k = 0..K-1: acc = fma(A[i,k], B[k,j], acc)
               i.e. strictly sequential in k, one rounding per step (integers: mul + add, wrapping).
  dot path:    lane l of U vector accumulators sums k = l + VL*u + U*VL*t sequentially with fma;
               the U*VL partial sums are then added pairwise (u first, then lanes by halving),
               and C_old is added last when ``accumulate``.
  complex:     scalar loop, acc.re = fma(-ai, bi, fma(ar, br, acc.re)),
               acc.im = fma(ai, br, fma(ar, bi, acc.im)), sequential in k.

Invariants: C must not overlap A or B (arguments are ``noalias``); strides are in elements and may
be negative or zero; all code is plain IR through ``llvmlite.ir`` (only backend/jit.py touches
``llvmlite.binding``).  Batches: the caller either calls the kernel per batch with offset pointers
or wraps it with :func:`emit_batched`.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .kernel import (  # noqa: F401 - re-exported: the backend's matmul vocabulary
    _SCALAR, I32, I64, PTR, _emit_complex, _emit_dot_rows, _emit_tiled, _i64, _Kernel, _loop,
    _vsuffix, lanes, tile_shape, vector_bytes)

# ---------------------------------------------------------------------------------------------
# Public emitters

def _make_function(module, name, extra):
    fn = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, PTR] + list(extra)), name)
    for i, nm in enumerate("ABC"):
        fn.args[i].name = nm
        fn.args[i].add_attribute("noalias")
    fn.attributes.add("nounwind")
    return fn


def _emit_body(fn, operands, dtype, M, K, N, a_strides, b_strides, c_strides, epilogue, accumulate,
               row_start, row_end, poll=None):
    dtype = np.dtype(dtype)
    if dtype not in _SCALAR:
        raise TypeError(f"tracejit matmul: unsupported dtype {dtype}")
    if min(M, K, N) < 0:
        raise ValueError(f"tracejit matmul: negative shape {(M, K, N)}")
    c_strides = tuple(c_strides) if c_strides is not None else (N, 1)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    kn = _Kernel(b, dtype, K, tuple(a_strides), tuple(b_strides), c_strides, epilogue, accumulate)
    if poll is not None:                 # the error cell is the last argument
        kn.poller = poll(b, fn.module, fn.args[-1])
    A, B, C = operands
    if M and N:
        if dtype.kind == "c":
            _emit_complex(kn, A, B, C, N, row_start, row_end)
        elif N == 1 and kn.sa[1] == 1 and K >= kn.vl:
            # matrix-vector: pack a strided x onto the stack if needed, then one pass over A
            x = B
            if kn.sb[0] != 1:
                x = b.alloca(kn.T, size=_i64(K), name="xpack")
                _loop(b, 0, K, lambda k, _: b.store(
                    b.load(kn.ptr(B, kn.idx((k, kn.sb[0]))), typ=kn.T), kn.ptr(x, k)), name="px")
            kn.sc = (kn.sc[0], 0)
            _emit_dot_rows(kn, A, x, C, row_start, row_end)
        elif N == 1 and kn.sa[0] == 1 and kn.sa[1] != 1 and M >= kn.vl and \
                (row_start, row_end) == (0, M) and \
                (epilogue is None or getattr(epilogue, "lanes_along_rows", False)):
            # matrix-vector with an m-contiguous A (an Aᵀ view): the axpy form x[1, K] @
            # Aᵀ[K, M], rows of Aᵀ read as vectors, instead of tiles using one lane in VL; the
            # same fma sequence in k per element, so the same bits
            ep = None if epilogue is None else (
                lambda b_, acc, row, col0, mask: epilogue(b_, acc, col0, row, mask, lanes="rows"))
            kt = _Kernel(b, dtype, K, (0, kn.sb[0]), (kn.sa[1], 1), (0, kn.sc[0]), ep,
                         accumulate)
            _emit_tiled(kt, B, A, C, 1, M, 0, 1)
        else:
            _emit_tiled(kn, A, B, C, M, N, row_start, row_end)
    b.ret(ir.Constant(I32, 0))
    return fn


def emit_matmul(module, name, dtype, M, K, N, *, a_strides, b_strides, c_strides=None,
                epilogue=None, accumulate=False, extra_args=(), poll=None):
    """Emit ``i32 @name(ptr A, ptr B, ptr C, <extra_args>...)``: C[M,N] = A[M,K] @ B[K,N];
    returns 0, or ERR_NOMEM when a packed B panel could not be allocated (module docstring).

    Strides are element strides: ``a_strides=(s_m, s_k)``, ``b_strides=(s_k, s_n)``,
    ``c_strides=(s_m, s_n)`` (default ``(N, 1)``).  Aᵀ/Bᵀ views are just swapped strides; a B with
    ``s_n != 1`` is packed per column panel (see module docstring).  ``dtype``: float64/float32
    (tiled, fma), int64/int32 (tiled, wrapping mul+add), complex128/complex64 (scalar loops; pointers
    address interleaved (re, im) pairs, strides count complex elements).  Any M, K, N >= 0.
    With ``accumulate`` the product is added to C's old value (accumulators start from it).

    ``epilogue(builder, acc, row, col0, mask) -> value`` is called once per accumulator vector,
    after the k-sum (and the old C when accumulating), right before the store, with the builder
    positioned inside the kernel:
      acc   ``<VL x T>`` (VL = :func:`lanes`); lanes beyond the mask hold unspecified values
            (on the matrix-vector path, N == 1, only lane 0 is valid and mask says so).
            Complex dtypes give ``<2 x T>`` holding (re, im) of one element, mask None.
      row   i64 absolute row of C;  col0  i64 column of lane 0 (lane l is column col0 + l);
      mask  constant ``<VL x i1>`` of valid lanes for a column tail, else None (all valid).
    An epilogue with a true attribute ``lanes_along_rows`` also accepts
    ``epilogue(builder, acc, row0, col, mask, lanes="rows")``, lane l holding C[row0 + l, col]:
    the matrix-vector product with an m-contiguous A (an Aᵀ view) then runs in the axpy form
    (a 1 x K @ K x M tile; other epilogues keep the one-lane tiles).
    It must return a value of acc's type and may emit any code (e.g. load ``bias[col0:]``
    through a masked load, reading pointers passed as ``extra_args`` via
    ``builder.function.args[3:]``).  It is emitted several times (once per tile variant and
    tile position), so it must not create functions or globals with fixed names.

    ``poll`` (``emit.interrupt.Poller``, passed in: this package does not import the emitters)
    adds a last argument, the call's error cell, polled before each column panel (complex:
    each row): on Ctrl-C or an error already in the cell the kernel returns 0 early, C
    partly written (the call raises). Without it, the kernel is the same code as before.
    """
    fn = _make_function(module, name, list(extra_args) + ([PTR] if poll else []))
    return _emit_body(fn, fn.args[:3], dtype, M, K, N, a_strides, b_strides, c_strides, epilogue,
                      accumulate, 0, M, poll)


def emit_matmul_rows(module, name, dtype, M, K, N, *, a_strides, b_strides, c_strides=None,
                     epilogue=None, accumulate=False, extra_args=(), poll=None):
    """Emit ``i32 @name(ptr A, ptr B, ptr C, i64 row_start, i64 row_end, <extra_args>...)``.

    Same product and contract as :func:`emit_matmul` but only rows ``[row_start, row_end)`` of C
    are computed; A, B, C are the full matrices' base pointers.  Requires
    ``0 <= row_start <= row_end <= M``.  Any split is correct; splitting at multiples of
    ``tile_shape(dtype, M, N)[0]`` avoids extra remainder tiles.  Threads may run disjoint row
    ranges concurrently (the kernel has no shared state; a Bᵀ panel buffer is per call).
    """
    fn = _make_function(module, name, [I64, I64] + list(extra_args) + ([PTR] if poll else []))
    fn.args[3].name, fn.args[4].name = "row_start", "row_end"
    return _emit_body(fn, fn.args[:3], dtype, M, K, N, a_strides, b_strides, c_strides, epilogue,
                      accumulate, fn.args[3], fn.args[4], poll)


def emit_matvec(module, name, dtype, M, K, *, a_strides, x_stride=1, y_stride=1,
                accumulate=False):
    """Emit ``i32 @name(ptr A, ptr x, ptr y)``: y[M] = A[M,K] @ x[K] (y += ... if accumulate).

    k-contiguous A (``a_strides[1] == 1``) uses the dot form (one pass over A, 4 rows x 2 vector
    partial sums, strided x packed to the stack).  m-contiguous A (Aᵀ) uses the axpy form: the
    tiled kernel as a 1 x K @ K x M product with 24 vector accumulators.
    """
    sm, sk = a_strides
    if sk == 1 or sm != 1:
        return emit_matmul(module, name, dtype, M, K, 1, a_strides=(sm, sk),
                           b_strides=(x_stride, 0), c_strides=(y_stride, 0), accumulate=accumulate)
    fn = _make_function(module, name, ())
    A, x, y = fn.args[:3]
    x.name, y.name = "x", "y"
    return _emit_body(fn, (x, A, y), dtype, 1, K, M, (0, x_stride), (sk, sm), (0, y_stride),
                      None, accumulate, 0, 1)


def emit_vecmat(module, name, dtype, K, N, *, b_strides, x_stride=1, y_stride=1,
                accumulate=False):
    """Emit ``i32 @name(ptr x, ptr B, ptr y)``: y[N] = x[K] @ B[K,N].

    Row-major B uses the axpy form (1 x K @ K x N tiled); k-contiguous B (a Bᵀ view) is computed
    as the dot-form ``Bᵀ @ x`` so no packing is needed.
    """
    sk, sn = b_strides
    if sk == 1 and sn != 1:  # y = Bt @ x with Bt[n, k] = B[k, n] contiguous in k
        fn = _make_function(module, name, ())
        x, B, y = fn.args[:3]
        x.name, B.name, y.name = "x", "B", "y"
        return _emit_body(fn, (B, x, y), dtype, N, K, 1, (sn, sk), (x_stride, 0), (y_stride, 0),
                          None, accumulate, 0, N)
    return emit_matmul(module, name, dtype, 1, K, N, a_strides=(0, x_stride),
                       b_strides=(sk, sn), c_strides=(0, y_stride), accumulate=accumulate)


def emit_batched(module, name, kernel, dtype, batch, a_batch_stride, b_batch_stride,
                 c_batch_stride, polls=False):
    """Emit ``i32 @name(ptr A, ptr B, ptr C)`` running ``kernel`` once per batch element (the
    first non-zero code it returns stops the batch and is returned).

    ``kernel`` is an ``ir.Function`` from :func:`emit_matmul` in the same module (no extra args);
    element ``i`` uses ``A + i*a_batch_stride`` etc. (element strides, 0 broadcasts an operand).
    This is the whole batching story: the 2-D kernel never sees batch dimensions, so callers with
    several batch dims either flatten them into one stride or loop themselves with offset
    pointers.  The kernel is called (not inlined by force); LLVM inlines it when profitable.
    ``polls``: ``kernel`` was emitted with a ``poll`` (its last argument is the error cell),
    and so is this function's; the cell is passed on.
    """
    fn = _make_function(module, name, [PTR] if polls else ())
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    size = np.dtype(dtype).itemsize
    i8 = ir.IntType(8)

    def one(i, _):
        ptrs = [b.gep(p, [b.mul(i, _i64(st * size))], source_etype=i8)
                for p, st in zip(fn.args[:3], (a_batch_stride, b_batch_stride, c_batch_stride))]
        rc = b.call(kernel, ptrs + list(fn.args[3:]))
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
            b.ret(rc)
    _loop(b, 0, batch, one, name="batch")
    b.ret(ir.Constant(I32, 0))
    return fn


def emit_rows_chunk(module, name, rows_kernel, n_extra, M, block, poll=None,
                    kernel_polls=False):
    """Emit ``void @name(ptr ctx, i64, i64)``: rows of C in blocks taken from a shared counter.

    ``ctx`` points to ``3 + n_extra`` pointers ``{A, B, C, extra...}`` followed by a pointer to
    an i64 counter starting at 0 and one to the call's i32 error cell. Each call ignores its
    range and repeatedly takes the next block (an atomic add) and runs ``rows_kernel`` (from
    :func:`emit_matmul_rows`, ``extra_args`` of ``n_extra`` pointers; or a void BLAS one) on
    rows ``[k*block, min((k+1)*block, M))`` until none is left or the kernel returns an error
    code, which is or-ed into the cell. Run it
    with ``threads.tj_parallel_for(fn, ctx, n=nblocks, grain=1)``: a thread that is descheduled
    (the other core busy on a shared machine) leaves its blocks to the others instead of
    finishing last on a static half, which made 2 threads as slow as 1. Each element's sum is
    the kernel's fixed k-order whatever the split, so results do not depend on the thread count;
    ``block`` should be a multiple of ``tile_shape(dtype, M, N)[0]`` (no extra remainder tiles).
    With ``poll`` (``emit.interrupt.Poller``) each take is polled first: Ctrl-C, or an error a
    block of another thread set (its panel malloc failed), stops every thread at its next block
    instead of computing the rest of a product whose call raises. ``kernel_polls``: the rows
    kernel takes the cell as its last argument (``emit_matmul_rows(poll=...)``).
    """
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, I64, I64]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = fn.args[0]
    ops = [b.load(b.gep(ctx, [_i64(i)], source_etype=PTR), typ=PTR) for i in range(3 + n_extra)]
    counter = b.load(b.gep(ctx, [_i64(3 + n_extra)], source_etype=PTR), typ=PTR)
    cell = b.load(b.gep(ctx, [_i64(4 + n_extra)], source_etype=PTR), typ=PTR)
    loop, body, done = (fn.append_basic_block(n) for n in ("take", "rows", "done"))
    poller = None if poll is None else poll(b, module, cell)
    b.branch(loop)
    b.position_at_end(loop)
    if poller is not None:
        poller.check(b, done)
    k = b.atomic_rmw("add", counter, _i64(1), "monotonic")
    lo = b.mul(k, _i64(block))
    b.cbranch(b.icmp_signed("<", lo, _i64(M)), body, done)
    b.position_at_end(body)
    hi = b.add(lo, _i64(block))
    hi = b.select(b.icmp_signed("<", hi, _i64(M)), hi, _i64(M))
    rc = b.call(rows_kernel, ops[:3] + [lo, hi] + ops[3:] + ([cell] if kernel_polls else []))
    if rc.type == I32:
        failed = fn.append_basic_block("failed")
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), failed, loop)
        b.position_at_end(failed)
        b.atomic_rmw("or", cell, rc, "monotonic")
        b.branch(done)
    else:
        b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return fn
