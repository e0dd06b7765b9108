"""Optional fast path: call numpy's already-loaded OpenBLAS (cblas gemm/gemv) from JIT code.

Discovery (see shared/reference/matmul-notes.md, section 1):
1. find the loaded BLAS shared object through ``/proc/self/maps`` (or ``dl_iterate_phdr`` where
   there is no procfs), preferring a file under numpy; never the build-time path in
   ``numpy.__config__``;
2. reopen it with ``RTLD_NOLOAD`` (same handle, no second copy) and probe the manglings
   ``scipy_cblas_dgemm64_``, ``cblas_dgemm64_``, ``scipy_cblas_dgemm``, ``cblas_dgemm``; a ``64_``
   suffix (or ``USE64BITINT`` in the config string) means ILP64 integers;
3. register ``tj_cblas_{s,d}gemm`` / ``tj_cblas_{s,d}gemv`` with ``jit.add_symbol`` (numpy loads the
   library RTLD_LOCAL, so LLVM cannot find it by name), so IR never depends on the mangling;
4. self-test at first use: JIT-compiled calls (plain, Aᵀ, Bᵀ, gemv) against numpy.  Only if that
   passes does :func:`available` return True; otherwise every caller uses the generated kernel.

Threads: the OpenBLAS thread count is process-global and shared with numpy (same library
instance).  This module never changes it permanently: :func:`threads` is a context manager that
sets a count and restores the previous one; emitted calls run with whatever count is current when
they execute.  Never combine BLAS threads with tracejit's own row-split threads (oversubscription
collapses OpenBLAS by ~600x in the notes' measurements).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
import warnings

import numpy as np
from llvmlite import ir

from ..engine import jit
from .kernel import emit_epilogue_sweep, vector_bytes

I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_MANGLINGS = (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", ""))
_NAME_HINTS = ("openblas", "blas", "mkl", "flexiblas")
_lock = threading.Lock()
jit.register_fork_lock(_lock)


class _Blas:
    """What discovery found: the library handle, its mangling and integer width."""

    def __init__(self, path, lib, prefix, suffix, ilp64):
        self.path, self.lib, self.prefix, self.suffix, self.ilp64 = path, lib, prefix, suffix, ilp64
        self.int_t = I64 if ilp64 else I32
        self.thread_control = False     # openblas_{get,set}_num_threads found (_register)

    def symbol(self, base):
        return getattr(self.lib, f"{self.prefix}{base}{self.suffix}", None)


def _loaded_objects():
    """Paths of shared objects mapped into this process."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    paths.append(parts[5].strip())
    except OSError:
        paths = _dl_iterate_phdr()
    return list(dict.fromkeys(paths))


def _dl_iterate_phdr():
    class Info(ctypes.Structure):
        _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]
    names = []
    cb_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Info), ctypes.c_size_t, ctypes.c_void_p)

    def cb(info, size, data):
        if info.contents.name:
            names.append(info.contents.name.decode())
        return 0
    try:
        ctypes.CDLL(None).dl_iterate_phdr(cb_t(cb), None)
    except (AttributeError, OSError):
        pass
    return names


def _candidates():
    objs = [p for p in _loaded_objects()
            if any(h in os.path.basename(p).lower() for h in _NAME_HINTS)]
    return sorted(objs, key=lambda p: "numpy" not in p)  # numpy's own copy first


def _discover():
    """Find numpy's BLAS and its mangling, or None (reasons go to ``_reason``)."""
    global _reason
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_NOW)
        except OSError:
            continue
        for prefix, suffix in _MANGLINGS:
            if hasattr(lib, f"{prefix}cblas_dgemm{suffix}"):
                ilp64 = suffix.endswith("64_")
                if not ilp64:
                    cfg = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
                    if cfg is not None:
                        cfg.restype = ctypes.c_char_p
                        ilp64 = b"USE64BITINT" in (cfg() or b"")
                return _Blas(path, lib, prefix, suffix, ilp64)
    _reason = "no loaded library exports cblas_dgemm"
    return None


_reason = "not probed yet"


def _register(blas):
    for base in ("cblas_dgemm", "cblas_sgemm", "cblas_dgemv", "cblas_sgemv"):
        fn = blas.symbol(base)
        if fn is None:
            raise RuntimeError(f"{blas.prefix}{base}{blas.suffix} missing from {blas.path}")
        jit.add_symbol(f"tj_{base}", ctypes.cast(fn, ctypes.c_void_p).value)
    for base in ("openblas_get_num_threads", "openblas_set_num_threads"):
        fn = blas.symbol(base)
        if fn is not None:
            jit.add_symbol(f"tj_{base}", ctypes.cast(fn, ctypes.c_void_p).value)
    blas.thread_control = all(blas.symbol(b) is not None for b in
                              ("openblas_get_num_threads", "openblas_set_num_threads"))


def _check_corename(blas):
    fn = blas.symbol("openblas_get_corename")
    if fn is None:
        return
    fn.restype = ctypes.c_char_p
    core = (fn() or b"").decode(errors="replace")
    if core.lower() == "haswell" and "+avx512f" in jit.host_cpu()[1]:
        warnings.warn("tracejit: OpenBLAS runs its Haswell kernels on an AVX-512 CPU "
                      "(OPENBLAS_CORETYPE set?); BLAS products will be ~2x slower", stacklevel=3)


@functools.cache
def _state():
    """Discover, register and self-test once; returns the _Blas or None."""
    global _reason
    with _lock:
        blas = _discover()
        if blas is None:
            return None
        try:
            _register(blas)
            _state_for_emit[0] = blas
            _self_test()
        except Exception as exc:  # any failure means: do not offer the BLAS path
            _state_for_emit[0] = None
            _reason = f"self-test failed: {exc}"
            return None
        _check_corename(blas)
        _reason = "ok"
        return blas


_state_for_emit = [None]  # set during the self-test so emit_* can run before _state() returns


def available() -> bool:
    """True if numpy's BLAS was found and passed the self-test (probed on first call)."""
    return _state() is not None


def reason() -> str:
    """Why the BLAS path is (not) available, for diagnostics and test skips."""
    _state()
    return _reason


def info() -> dict:
    """Library path, mangling and integer width of the BLAS in use (empty if unavailable)."""
    blas = _state()
    if blas is None:
        return {}
    return {"path": blas.path, "prefix": blas.prefix, "suffix": blas.suffix, "ilp64": blas.ilp64}


# ---------------------------------------------------------------------------------------------
# Threads

def get_num_threads():
    """OpenBLAS's current thread count (shared with numpy), or None if unknown."""
    blas = _state()
    fn = blas and blas.symbol("openblas_get_num_threads")
    return int(fn()) if fn else None


@contextlib.contextmanager
def threads(n: int):
    """Run a region with ``n`` OpenBLAS threads, restoring numpy's previous count afterwards."""
    blas = _state()
    get = blas and blas.symbol("openblas_get_num_threads")
    put = blas and blas.symbol("openblas_set_num_threads")
    if not (get and put):
        yield
        return
    put.argtypes = [ctypes.c_int]
    old = int(get())
    put(int(n))
    try:
        yield
    finally:
        put(old)


# ---------------------------------------------------------------------------------------------
# IR emission

def _int(blas, v):
    return ir.Constant(blas.int_t, v) if isinstance(v, int) else v


def _prefix(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return "d", ir.DoubleType()
    if dtype == np.float32:
        return "s", ir.FloatType()
    raise TypeError(f"tracejit BLAS path: no gemm for dtype {dtype}")


def _blas_for_emit():
    blas = _state_for_emit[0] or _state()
    if blas is None:
        raise RuntimeError(f"tracejit: BLAS path unavailable ({_reason})")
    return blas


def emit_gemm_call(builder, dtype, M, K, N, a_ptr, a_trans, lda, b_ptr, b_trans, ldb, c_ptr, ldc,
                   *, alpha=1.0, beta=0.0):
    """Emit a row-major ``C = alpha * op(A) @ op(B) + beta * C`` call into numpy's OpenBLAS.

    op(A) is M x K (A stored K x M when ``a_trans``), op(B) is K x N; ``lda/ldb/ldc`` are row
    strides in elements (>= the stored row length; must be >= 1).  M, K, N, ld* are Python ints
    or i64 IR values (truncated to i32 on LP64 builds).  Only valid when :func:`available`.
    """
    blas = _blas_for_emit()
    p, T = _prefix(dtype)
    it = blas.int_t
    fnty = ir.FunctionType(ir.VoidType(), [I32, I32, I32, it, it, it, T, PTR, it, PTR, it, T,
                                           PTR, it])
    name = f"tj_cblas_{p}gemm"
    fn = builder.module.globals.get(name) or ir.Function(builder.module, fnty, name)

    def i(v):
        v = _int(blas, v)
        return builder.trunc(v, it) if v.type.width > it.width else v
    trans = [ir.Constant(I32, TRANS if t else NO_TRANS) for t in (a_trans, b_trans)]
    return builder.call(fn, [ir.Constant(I32, ROW_MAJOR), *trans, i(M), i(N), i(K),
                             ir.Constant(T, alpha), a_ptr, i(lda), b_ptr, i(ldb),
                             ir.Constant(T, beta), c_ptr, i(ldc)])


def thread_control() -> bool:
    """Whether JIT code can read and set the BLAS thread count (:func:`emit_set_threads`)."""
    blas = _state()
    return blas is not None and blas.thread_control


def emit_set_threads(builder, n):
    """Emit ``old = openblas_get_num_threads(); openblas_set_num_threads(n)``; returns ``old``
    (an i32) so the caller can restore it with ``emit_set_threads(builder, old)``.  The count is
    process-global and shared with numpy: always restore it.  Needs :func:`thread_control`."""
    m = builder.module
    get = m.globals.get("tj_openblas_get_num_threads") or ir.Function(
        m, ir.FunctionType(I32, []), "tj_openblas_get_num_threads")
    put = m.globals.get("tj_openblas_set_num_threads") or ir.Function(
        m, ir.FunctionType(ir.VoidType(), [I32]), "tj_openblas_set_num_threads")
    old = builder.call(get, [])
    builder.call(put, [ir.Constant(I32, n) if isinstance(n, int) else n])
    return old


def emit_gemm_rows(module, name, dtype, M, K, N, a_strides, b_strides, *, epilogue=None,
                   extra_args=()):
    """Emit ``void @name(ptr A, ptr B, ptr C, i64 lo, i64 hi, <extra_args>...)``: rows [lo, hi)
    of the row-major C[M, N] = A @ B as one gemm call, A and B given by element strides
    (``a_strides=(s_m, s_k)``, ``b_strides=(s_k, s_n)``), or None when a stride pair is not a
    BLAS layout (one of the two must be 1, the other at least the row length).  Same signature
    and ``epilogue`` contract as ``tiled.emit_matmul_rows``, so ``tiled.emit_rows_chunk`` can
    spread it over the pool: the epilogue then runs over the rows just written (still in
    cache), so C must not overlap the buffers the epilogue reads (the planner never lets a
    product's result share a leaf's buffer)."""
    (sm, sak), (sbk, sn) = a_strides, b_strides
    if sak == 1 and sm >= max(K, 1):
        a_trans, lda = False, sm
    elif sm == 1 and sak >= max(M, 1):
        a_trans, lda = True, sak
    else:
        return None
    if sn == 1 and sbk >= max(N, 1):
        b_trans, ldb = False, sbk
    elif sbk == 1 and sn >= max(K, 1):
        b_trans, ldb = True, sn
    else:
        return None
    _, T = _prefix(dtype)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64, I64] +
                                             list(extra_args)), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    a, bb, c, lo, hi = fn.args[:5]
    a = b.gep(a, [b.mul(lo, ir.Constant(I64, sm))], source_etype=T)
    rows = b.gep(c, [b.mul(lo, ir.Constant(I64, N))], source_etype=T)
    emit_gemm_call(b, dtype, b.sub(hi, lo), K, N, a, a_trans, lda, bb, b_trans, ldb, rows, N)
    if epilogue is not None:
        emit_epilogue_sweep(b, dtype, c, N, lo, hi, epilogue)
    b.ret_void()
    return fn


def emit_gemv_call(builder, dtype, M, N, a_ptr, trans, lda, x_ptr, incx, y_ptr, incy,
                   *, alpha=1.0, beta=0.0):
    """Emit row-major ``y = alpha * op(A) @ x + beta * y`` with A stored M x N (op = ᵀ if trans)."""
    blas = _blas_for_emit()
    p, T = _prefix(dtype)
    it = blas.int_t
    fnty = ir.FunctionType(ir.VoidType(), [I32, I32, it, it, T, PTR, it, PTR, it, T, PTR, it])
    name = f"tj_cblas_{p}gemv"
    fn = builder.module.globals.get(name) or ir.Function(builder.module, fnty, name)

    def i(v):
        v = _int(blas, v)
        return builder.trunc(v, it) if v.type.width > it.width else v
    return builder.call(fn, [ir.Constant(I32, ROW_MAJOR), ir.Constant(I32, TRANS if trans else
                                                                      NO_TRANS),
                             i(M), i(N), ir.Constant(T, alpha), a_ptr, i(lda), x_ptr, i(incx),
                             ir.Constant(T, beta), y_ptr, i(incy)])


def _self_test():
    """Compile tiny gemm/gemv calls (plain and transposed operands) and check them vs numpy."""
    mod = ir.Module()
    cases = []
    rng = np.random.default_rng(1234)
    for dtype in (np.float64, np.float32):
        for a_t, b_t in ((False, False), (True, False), (False, True)):
            M, K, N = 2, 3, 4
            A = rng.standard_normal((K, M) if a_t else (M, K)).astype(dtype)
            B = rng.standard_normal((N, K) if b_t else (K, N)).astype(dtype)
            ref = (A.T if a_t else A) @ (B.T if b_t else B)
            name = jit.unique_name("tj_blas_selftest")
            fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [PTR] * 3), name)
            b = ir.IRBuilder(fn.append_basic_block())
            emit_gemm_call(b, dtype, M, K, N, fn.args[0], a_t, A.shape[1], fn.args[1], b_t,
                           B.shape[1], fn.args[2], N)
            b.ret_void()
            cases.append((name, A, B, ref))
        A = rng.standard_normal((3, 5)).astype(dtype)
        x = rng.standard_normal(3).astype(dtype)
        name = jit.unique_name("tj_blas_selftest")
        fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [PTR] * 3), name)
        b = ir.IRBuilder(fn.append_basic_block())
        emit_gemv_call(b, dtype, 3, 5, fn.args[0], True, 5, fn.args[1], 1, fn.args[2], 1)
        b.ret_void()
        cases.append((name, A, x, A.T @ x))
    jit.compile_ir(mod)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    for name, A, B, ref in cases:
        out = np.full(ref.shape, np.nan, dtype=ref.dtype)
        proto(jit.function_address(name))(A.ctypes.data, B.ctypes.data, out.ctypes.data)
        tol = 1e-12 if ref.dtype == np.float64 else 1e-5
        if not np.allclose(out, ref, rtol=tol, atol=tol):
            raise RuntimeError(f"{name}: wrong result {out!r} != {ref!r}")


# ---------------------------------------------------------------------------------------------
# Dispatch

def choose_path(dtype, M, K, N, threads=1, *, b_trans=False) -> str:
    """'kernel' (generated tiled kernel) or 'blas' for a fixed-shape product.

    Rule from bench/matmul_bench.py on this znver4 host, 1 thread: the generated kernel is level
    with or faster than OpenBLAS from 64³ to 1024³ (f64 52-56 vs 49-52, f32 107-115 vs 99-105
    GFLOP/s), also with a Bᵀ operand (packed: f64 49 vs 49, f32 91 vs 91), but falls to 34/64
    against 54/105 at 2048³ (cache-set aliasing of the unpacked B panel).  Hence:
    * non-float dtypes or BLAS unavailable -> kernel;
    * ``threads > 1`` and M*K*N >= 128³ -> BLAS (OpenBLAS scales ~1.7x on 2 threads; the kernel's
      row split needs a native pool to pay off below ~512³, see ``emit_matmul_rows``);
    * M*K*N > 1024³ or K or N > 1024 -> BLAS;
    * without AVX-512 (``kernel.vector_bytes() < 64``: 12 accumulators, no packing of A), M*K*N
      >= 256³ unless M or N <= 8 -> BLAS (znver3, f64: kernel 33 vs OpenBLAS 43 GFLOP/s at 256³,
      23 vs 40 at 1000³; level or ahead at 128³ and below);
    * otherwise kernel (fusable epilogue, no call overhead; per the notes 2-5x faster than a
      BLAS call below 32³, where the call itself costs 15-80 ns).
    ``b_trans`` is accepted for callers that track it but does not change the choice (measured).
    """
    del b_trans
    if np.dtype(dtype) not in (np.float64, np.float32) or not available():
        return "kernel"
    work = M * K * N
    if threads > 1 and work >= 128 ** 3:
        return "blas"
    if work > 1024 ** 3 or max(K, N) > 1024:
        return "blas"
    if vector_bytes() < 64 and work >= 256 ** 3 and min(M, N) > 8:
        return "blas"
    return "kernel"
