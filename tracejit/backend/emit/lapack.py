"""The linalg primitives as calls into numpy's LAPACK (``LapackStep``; ``matmul/lapack.py``
finds and registers the routines).

One internal function ``void @name(ptr slots)`` per equation, called from its segment: it
allocates one scratch block (``tj_malloc``; ``ERR_NOMEM`` if that fails), loops over the batch
of matrices, and frees the block. Each matrix is handled as ``numpy/linalg/umath_linalg.cpp``
handles it, so results are NumPy's to the last bit (same library, same routine, same inputs):
copied in column-major order ("linearized", converted to float64 / complex128: NumPy computes
float32 linalg in double), passed to the routine NumPy uses, and copied out transposed and
rounded to the result dtype:

| primitive        | routine                 | failure (``info > 0``)                        |
|------------------|-------------------------|-----------------------------------------------|
| cholesky         | potrf ('L')             | flag set, L is NaN                            |
| solve            | gesv                    | flag set, X is NaN                            |
| slogdet          | getrf, then the diagonal| sign 0, logdet -inf                           |
| eigh             | syevd / heevd ('V')     | ``no_convergence`` error bit (LinAlgError)    |
| svd              | gesdd ('N', 'S', 'A')   | ``no_convergence`` error bit                  |
| qr               | geqrf, orgqr / ungqr    | (cannot fail)                                 |
| eig              | geev ('N', 'V')         | ``no_convergence``; also for inf/NaN input    |
| triangular_solve | BLAS trsm (row-major)   | (a zero pivot gives inf/NaN, as BLAS)         |

The flags feed the NumPy layer's checks (``check_p``); the error bit is raised by the runtime as
NumPy's LinAlgError. Operands are contiguous (the partitioner copies strided views first).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..abi import CHECK_BITS, ERR_NOMEM
from ..matmul import lapack
from . import stacks
from .linalg import view_pointer
from .loops import _for
from .ops import I1, I8, I32, I64

PTR = ir.PointerType()
F32, F64 = ir.FloatType(), ir.DoubleType()
LAYOUT = ir.Constant(I32, lapack.COL_MAJOR)
NO_CONVERGENCE = CHECK_BITS["no_convergence"]


def _i64(v):
    return ir.Constant(I64, int(v))


def _char(c):
    return ir.Constant(I8, ord(c))


class _Lapack:
    def __init__(self, module, name, eqn, plan, slot_of, err_slot):
        self.module, self.eqn, self.plan, self.slot_of = module, eqn, plan, slot_of
        self.err_slot = err_slot
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.it = lapack.int_type()
        self.dt = np.dtype(eqn.invars[0].ty.dtype)
        self.cplx = self.dt.kind == "c"
        self.x = "z" if self.cplx else "d"          # the double-precision routine NumPy calls
        self.block = None

    # memory --------------------------------------------------------------------------------
    def ptr(self, var):
        return view_pointer(self.b, self.fn.args[0], self.plan, self.slot_of, var)

    def scratch(self, **sizes):
        """One malloc'd block holding buffers of ``sizes`` bytes (64-byte aligned each):
        {name: pointer}. A failed allocation sets ERR_NOMEM and returns."""
        b, offsets, total = self.b, {}, 0
        for name, nbytes in sizes.items():
            offsets[name] = total
            total += -(-max(int(nbytes), 16) // 64) * 64
        self.block = b.call(stacks.libc(self.module, "malloc"), [_i64(total + 64)])
        with b.if_then(b.icmp_unsigned("==", self.block, ir.Constant(PTR, None)), likely=False):
            self.set_error(ERR_NOMEM)
            b.ret_void()
        # align the start to 64 bytes (malloc guarantees 16)
        addr = b.ptrtoint(self.block, I64)
        start = b.and_(b.add(addr, _i64(63)), _i64(-64))
        base = b.inttoptr(start, PTR)
        return {k: b.gep(base, [_i64(v)], source_etype=I8) for k, v in offsets.items()}

    def set_error(self, bit):
        b = self.b
        cell = b.load(b.gep(self.fn.args[0], [_i64(self.err_slot)], source_etype=PTR), typ=PTR)
        stacks.set_error(b, cell, bit)

    def wbytes(self, count, cplx=None):
        """Bytes of ``count`` work elements (float64, or complex128 pairs)."""
        return count * (16 if (self.cplx if cplx is None else cplx) else 8)

    def ibytes(self, count):
        return count * self.it.width // 8

    def load(self, p, dt, k):
        """Element ``k`` of an array of ``dt`` as its components, in float64."""
        b = self.b
        parts, ty = (2, F32 if dt == np.complex64 else F64) if dt.kind == "c" else \
            (1, F32 if dt == np.float32 else F64)
        out = []
        for c in range(parts):
            idx = b.add(b.mul(k, _i64(parts)), _i64(c)) if parts == 2 else k
            v = b.load(b.gep(p, [idx], source_etype=ty), typ=ty)
            out.append(b.fpext(v, F64) if ty is F32 else v)
        return out

    def store(self, p, dt, k, vals):
        """Store components (float64) as element ``k`` of an array of ``dt``."""
        b = self.b
        ty = F32 if dt in (np.float32, np.complex64) else F64
        parts = len(vals)
        for c, v in enumerate(vals):
            idx = b.add(b.mul(k, _i64(parts)), _i64(c)) if parts == 2 else k
            b.store(b.fptrunc(v, F32) if ty is F32 else v, b.gep(p, [idx], source_etype=ty))

    def wdt(self, cplx=None):
        return np.dtype(np.complex128 if (self.cplx if cplx is None else cplx) else np.float64)

    def copy_in(self, src, base, rows, cols, dst, transpose=True):
        """dst (column-major rows x cols, work dtype) = the row-major matrix at ``src + base``;
        with ``transpose=False`` the plain copy (column-major: the transposed matrix)."""
        b, dt, wdt = self.b, self.dt, self.wdt()
        if not transpose:
            _for(b, _i64(0), _i64(rows * cols), _i64(1),
                 lambda k: self.store(dst, wdt, k, self.load(src, dt, b.add(base, k))), "cp")
            return

        def col(j):
            def row(i):
                self.store(dst, wdt, b.add(i, b.mul(j, _i64(rows))),
                           self.load(src, dt, b.add(base, b.add(b.mul(i, _i64(cols)), j))))
            _for(b, _i64(0), _i64(rows), _i64(1), row, "ci")
        _for(b, _i64(0), _i64(cols), _i64(1), col, "cj")

    def copy_out(self, src, ld, rows, cols, dst, dt, base, keep=None, cplx=None):
        """The row-major rows x cols matrix at ``dst + base`` of ``dt`` = the column-major work
        matrix ``src`` (leading dimension ``ld``); ``keep(i, j)`` False gives a zero."""
        b, wdt = self.b, self.wdt(cplx)

        def row(i):
            def col(j):
                vals = self.load(src, wdt, b.add(i, b.mul(j, _i64(ld))))
                if keep is not None:
                    k = keep(i, j)
                    vals = [b.select(k, v, ir.Constant(F64, 0.0)) for v in vals]
                self.store(dst, dt, b.add(base, b.add(b.mul(i, _i64(cols)), j)), vals)
            _for(b, _i64(0), _i64(cols), _i64(1), col, "oj")
        _for(b, _i64(0), _i64(rows), _i64(1), row, "oi")

    def fill(self, dst, dt, base, count, value=float("nan")):
        """``count`` elements of ``dt`` at ``dst + base`` = value (complex: value + 0j)."""
        b = self.b
        vals = [ir.Constant(F64, value)] + ([ir.Constant(F64, 0.0)] if dt.kind == "c" else [])
        _for(b, _i64(0), _i64(count), _i64(1),
             lambda k: self.store(dst, dt, b.add(base, k), vals), "nan")

    def call(self, name, *args):
        """``info = tj_lapack_<name>(COL_MAJOR, args...)``: ints as Python ints, chars as str."""
        fn = lapack.declare(self.module, name)
        conv = []
        for a, ty in zip(args, fn.ftype.args[1:]):
            if isinstance(a, str):
                a = _char(a)
            elif isinstance(a, int):
                a = ir.Constant(ty, a)
            conv.append(a)
        return self.b.call(fn, [LAYOUT, *conv])

    def batch_loop(self, body):
        shape = self.eqn.invars[0].ty.shape
        _for(self.b, _i64(0), _i64(int(np.prod(shape[:-2], dtype=np.int64))), _i64(1), body,
             "p")

    def flag(self, fp, p, bad):
        self.b.store(self.b.zext(bad, I8), self.b.gep(fp, [p], source_etype=I8))

    def failed(self, info):
        return self.b.icmp_signed("!=", info, ir.Constant(self.it, 0))

    # cholesky, solve, slogdet ----------------------------------------------------------------
    def cholesky(self):
        b, eqn = self.b, self.eqn
        (a,), (out, flag) = eqn.invars, eqn.outvars
        n = a.ty.shape[-1]
        ap, lp, fp = self.ptr(a), self.ptr(out), self.ptr(flag)
        s = self.scratch(a=self.wbytes(n * n))

        def matrix(p):
            base = b.mul(p, _i64(n * n))
            self.copy_in(ap, base, n, n, s["a"])
            bad = self.failed(self.call(self.x + "potrf", "L", n, s["a"], n))
            self.flag(fp, p, bad)
            with b.if_else(bad) as (then, otherwise):
                with then:
                    self.fill(lp, self.dt, base, n * n)
                with otherwise:
                    self.copy_out(s["a"], n, n, n, lp, self.dt, base,
                                  keep=lambda i, j: b.icmp_signed("<=", j, i))
        self.batch_loop(matrix)

    def solve(self):
        b, eqn = self.b, self.eqn
        (a, rhs), (out, flag) = eqn.invars, eqn.outvars
        n, m = rhs.ty.shape[-2:]
        ap, bp, xp, fp = self.ptr(a), self.ptr(rhs), self.ptr(out), self.ptr(flag)
        s = self.scratch(a=self.wbytes(n * n), b=self.wbytes(n * m), ipiv=self.ibytes(n))

        def matrix(p):
            abase, bbase = b.mul(p, _i64(n * n)), b.mul(p, _i64(n * m))
            self.copy_in(ap, abase, n, n, s["a"], transpose=not eqn.params["transpose_a"])
            self.copy_in(bp, bbase, n, m, s["b"])
            bad = self.failed(self.call(self.x + "gesv", n, m, s["a"], n, s["ipiv"], s["b"], n))
            self.flag(fp, p, bad)
            with b.if_else(bad) as (then, otherwise):
                with then:
                    self.fill(xp, self.dt, bbase, n * m)
                with otherwise:
                    self.copy_out(s["b"], n, n, m, xp, self.dt, bbase)
        self.batch_loop(matrix)

    def slogdet(self):
        """NumPy's ``slogdet_single_element``: the sign from the pivots' parity times each
        diagonal entry's sign (``d / |d|``), log|det| the sum of ``log|d|`` in order."""
        b, eqn = self.b, self.eqn
        (a,), (sign, logdet) = eqn.invars, eqn.outvars
        n = a.ty.shape[-1]
        rdt = np.dtype(logdet.ty.dtype)
        ap, sp, lp = self.ptr(a), self.ptr(sign), self.ptr(logdet)
        s = self.scratch(a=self.wbytes(n * n), ipiv=self.ibytes(n))
        log, hypot = lapack.declare_libm(self.module, "log"), lapack.declare_libm(self.module,
                                                                                  "hypot")
        with b.goto_entry_block():
            cells = [b.alloca(F64) for _ in range(3)]      # sign re, sign im, log|det|
            swaps = b.alloca(I64)
        sr, si, acc = cells
        zero = ir.Constant(F64, 0.0)

        def matrix(p):
            self.copy_in(ap, b.mul(p, _i64(n * n)), n, n, s["a"])
            info = self.call(self.x + "getrf", n, n, s["a"], n, s["ipiv"])
            with b.if_else(self.failed(info)) as (then, otherwise):
                with then:
                    self.store(sp, self.dt, p, [zero] * (2 if self.cplx else 1))
                    self.store(lp, rdt, p, [ir.Constant(F64, float("-inf"))])
                with otherwise:
                    b.store(_i64(0), swaps)

                    def pivot(i):
                        piv = b.sext(b.load(b.gep(s["ipiv"], [i], source_etype=self.it),
                                            typ=self.it), I64)
                        moved = b.icmp_signed("!=", piv, b.add(i, _i64(1)))
                        b.store(b.add(b.load(swaps, typ=I64), b.zext(moved, I64)), swaps)
                    _for(b, _i64(0), _i64(n), _i64(1), pivot, "pv")
                    odd = b.trunc(b.load(swaps, typ=I64), I1)
                    b.store(b.select(odd, ir.Constant(F64, -1.0), ir.Constant(F64, 1.0)), sr)
                    b.store(zero, si)
                    b.store(zero, acc)
                    _for(b, _i64(0), _i64(n), _i64(1), self._diagonal(s["a"], n, cells, log,
                                                                         hypot), "dg")
                    vals = [b.load(sr, typ=F64)] + ([b.load(si, typ=F64)] if self.cplx else [])
                    self.store(sp, self.dt, p, vals)
                    self.store(lp, rdt, p, [b.load(acc, typ=F64)])
        self.batch_loop(matrix)

    def _diagonal(self, lu, n, cells, log, hypot):
        b = self.b
        sr, si, acc = cells

        def step(i):
            vals = self.load(lu, self.wdt(), b.mul(i, _i64(n + 1)))
            if not self.cplx:
                d = vals[0]
                neg = b.fcmp_ordered("<", d, ir.Constant(F64, 0.0))
                b.store(b.select(neg, b.fneg(b.load(sr, typ=F64)), b.load(sr, typ=F64)), sr)
                d = b.select(neg, b.fneg(d), d)
            else:
                re, im = vals
                d = b.call(hypot, [re, im])
                er, ei = b.fdiv(re, d), b.fdiv(im, d)
                r1, i1 = b.load(sr, typ=F64), b.load(si, typ=F64)
                b.store(b.fsub(b.fmul(r1, er), b.fmul(i1, ei)), sr)
                b.store(b.fadd(b.fmul(r1, ei), b.fmul(i1, er)), si)
            b.store(b.fadd(b.load(acc, typ=F64), b.call(log, [d])), acc)
        return step

    # eigh, svd, qr, eig ----------------------------------------------------------------------
    def no_convergence(self, info, outs):
        """On ``info != 0``: the error bit, and NaN in ``outs`` [(ptr, dtype, base, count)]."""
        b = self.b
        with b.if_then(self.failed(info), likely=False):
            self.set_error(NO_CONVERGENCE)
            for ptr, dt, base, count in outs:
                self.fill(ptr, dt, base, count)

    def eigh(self):
        b, eqn = self.b, self.eqn
        (a,), (w, v) = eqn.invars, eqn.outvars
        n = a.ty.shape[-1]
        rdt = np.dtype(w.ty.dtype)
        name = self.x + ("heevd" if self.cplx else "syevd")
        ws = lapack.workspace(name, b"V", n)
        ap, wp, vp = self.ptr(a), self.ptr(w), self.ptr(v)
        s = self.scratch(a=self.wbytes(n * n), w=8 * n, work=self.wbytes(ws["work"]),
                         rwork=8 * ws.get("rwork", 1), iwork=self.ibytes(ws["iwork"]))
        uplo = "L" if eqn.params["lower"] else "U"

        def matrix(p):
            wbase, vbase = b.mul(p, _i64(n)), b.mul(p, _i64(n * n))
            self.copy_in(ap, vbase, n, n, s["a"])
            head = ["V", uplo, n, s["a"], n, s["w"], s["work"], ws["work"]]
            tail = [s["iwork"], ws["iwork"]]
            info = self.call(name, *(head + ([s["rwork"], ws["rwork"]] if self.cplx else []) +
                                     tail))
            self.no_convergence(info, [(wp, rdt, wbase, n), (vp, self.dt, vbase, n * n)])
            with b.if_then(b.not_(self.failed(info))):
                self.copy_out(s["w"], 1, 1, n, wp, rdt, wbase, cplx=False)
                self.copy_out(s["a"], n, n, n, vp, self.dt, vbase)
        self.batch_loop(matrix)

    def svd(self):
        b, eqn = self.b, self.eqn
        (a,), outs = eqn.invars, eqn.outvars
        m, n = a.ty.shape[-2:]
        k = min(m, n)
        full, uv = eqn.params["full_matrices"], eqn.params["compute_uv"]
        jobz = "N" if not uv else ("A" if full else "S")
        ucols, vrows = (0, 0) if not uv else ((m, n) if full else (k, k))
        ldvt = max(1, vrows)
        name = self.x + "gesdd"
        ws = lapack.workspace(name, jobz.encode(), m, n, ldvt)
        ptrs = [self.ptr(o) for o in outs]
        sp = ptrs[1] if uv else ptrs[0]
        rdt = np.dtype(outs[1 if uv else 0].ty.dtype)
        s = self.scratch(a=self.wbytes(m * n), s=8 * k, u=self.wbytes(max(1, m * ucols)),
                         vt=self.wbytes(max(1, ldvt * n)), work=self.wbytes(ws["work"]),
                         rwork=8 * ws.get("rwork", 1), iwork=self.ibytes(ws["iwork"]))
        ap = self.ptr(a)

        def matrix(p):
            sbase = b.mul(p, _i64(k))
            ubase, vbase = b.mul(p, _i64(m * ucols)), b.mul(p, _i64(vrows * n))
            self.copy_in(ap, b.mul(p, _i64(m * n)), m, n, s["a"])
            args = [jobz, m, n, s["a"], m, s["s"], s["u"], m, s["vt"], ldvt, s["work"],
                    ws["work"]]
            args += ([s["rwork"]] if self.cplx else []) + [s["iwork"]]
            info = self.call(name, *args)
            bad = [(sp, rdt, sbase, k)]
            if uv:
                bad += [(ptrs[0], self.dt, ubase, m * ucols), (ptrs[2], self.dt, vbase,
                                                                vrows * n)]
            self.no_convergence(info, bad)
            with b.if_then(b.not_(self.failed(info))):
                self.copy_out(s["s"], 1, 1, k, sp, rdt, sbase, cplx=False)
                if uv:
                    self.copy_out(s["u"], m, m, ucols, ptrs[0], self.dt, ubase)
                    self.copy_out(s["vt"], ldvt, vrows, n, ptrs[2], self.dt, vbase)
        self.batch_loop(matrix)

    def qr(self):
        """geqrf, R = the upper triangle of its first ``qc`` rows, then (unless mode 'r') Q by
        orgqr / ungqr in the same buffer (``m x max(n, qc)``: complete mode of a tall matrix
        needs m columns)."""
        b, eqn = self.b, self.eqn
        (a,), outs = eqn.invars, eqn.outvars
        mode = eqn.params["mode"]
        m, n = a.ty.shape[-2:]
        k = min(m, n)
        qc = m if mode == "complete" else k
        geqrf, gqr = self.x + "geqrf", self.x + ("ungqr" if self.cplx else "orgqr")
        lwork = lapack.workspace(geqrf, m, n)["work"]
        if mode != "r":
            lwork = max(lwork, lapack.workspace(gqr, m, qc, k)["work"])
        s = self.scratch(a=self.wbytes(m * max(n, qc)), tau=self.wbytes(k),
                         work=self.wbytes(lwork))
        ap = self.ptr(a)
        rp = self.ptr(outs[-1])
        qp = self.ptr(outs[0]) if mode != "r" else None

        def matrix(p):
            self.copy_in(ap, b.mul(p, _i64(m * n)), m, n, s["a"])
            self.call(geqrf, m, n, s["a"], m, s["tau"], s["work"], lwork)
            self.copy_out(s["a"], m, qc, n, rp, self.dt, b.mul(p, _i64(qc * n)),
                          keep=lambda i, j: b.icmp_signed(">=", j, i))
            if qp is not None:
                self.call(gqr, m, qc, k, s["a"], m, s["tau"], s["work"], lwork)
                self.copy_out(s["a"], m, m, qc, qp, self.dt, b.mul(p, _i64(m * qc)))
        self.batch_loop(matrix)

    def eig(self):
        """geev of the matrix (NumPy first refuses infs and NaNs: the same error bit here).
        A real matrix's eigenvectors come packed (a complex pair j, j+1 as the columns re, im),
        unpacked as NumPy's ``mk_geev_complex_eigenvectors`` does."""
        b, eqn = self.b, self.eqn
        (a,), (w, v) = eqn.invars, eqn.outvars
        n = a.ty.shape[-1]
        cdt = np.dtype(w.ty.dtype)
        name = self.x + "geev"
        ws = lapack.workspace(name, n)
        ap, wp, vp = self.ptr(a), self.ptr(w), self.ptr(v)
        s = self.scratch(a=self.wbytes(n * n), w=16 * n, wi=8 * n, vr=self.wbytes(n * n),
                         vl=16, work=self.wbytes(ws["work"]), rwork=8 * ws["rwork"])
        with b.goto_entry_block():
            finite = b.alloca(I1)
            second = b.alloca(I1)

        def matrix(p):
            wbase, vbase = b.mul(p, _i64(n)), b.mul(p, _i64(n * n))
            self.copy_in(ap, vbase, n, n, s["a"])
            b.store(ir.Constant(I1, 1), finite)
            parts = 2 if self.cplx else 1

            def check(kk):
                x = b.load(b.gep(s["a"], [kk], source_etype=F64), typ=F64)
                ok = b.fcmp_ordered("==", b.fsub(x, x), ir.Constant(F64, 0.0))
                b.store(b.and_(b.load(finite, typ=I1), ok), finite)
            _for(b, _i64(0), _i64(n * n * parts), _i64(1), check, "fin")
            with b.if_else(b.load(finite, typ=I1)) as (then, otherwise):
                with then:
                    if self.cplx:
                        info = self.call(name, "N", "V", n, s["a"], n, s["w"], s["vl"], 1,
                                         s["vr"], n, s["work"], ws["work"], s["rwork"])
                    else:
                        info = self.call(name, "N", "V", n, s["a"], n, s["w"], s["wi"],
                                         s["vl"], 1, s["vr"], n, s["work"], ws["work"])
                    self.no_convergence(info, [(wp, cdt, wbase, n), (vp, cdt, vbase, n * n)])
                    with b.if_then(b.not_(self.failed(info))):
                        if self.cplx:
                            self.copy_out(s["w"], 1, 1, n, wp, cdt, wbase)
                            self.copy_out(s["vr"], n, n, n, vp, cdt, vbase)
                        else:
                            self._unpack(s, n, wp, vp, cdt, wbase, vbase, second)
                with otherwise:
                    self.no_convergence(ir.Constant(self.it, 1),
                                        [(wp, cdt, wbase, n), (vp, cdt, vbase, n * n)])
        self.batch_loop(matrix)

    def _unpack(self, s, n, wp, vp, cdt, wbase, vbase, second):
        b = self.b

        def value(j):
            re = b.load(b.gep(s["w"], [j], source_etype=F64), typ=F64)
            im = b.load(b.gep(s["wi"], [j], source_etype=F64), typ=F64)
            self.store(wp, cdt, b.add(wbase, j), [re, im])
        _for(b, _i64(0), _i64(n), _i64(1), value, "ev")
        b.store(ir.Constant(I1, 0), second)

        def column(j):
            im_j = b.load(b.gep(s["wi"], [j], source_etype=F64), typ=F64)
            sec = b.load(second, typ=I1)
            first = b.and_(b.not_(sec), b.and_(b.fcmp_unordered("!=", im_j, ir.Constant(F64, 0.0)),
                                               b.icmp_signed("<", b.add(j, _i64(1)), _i64(n))))
            # column of the real part, column of the imaginary part (or none), its sign
            re_col = b.select(sec, b.sub(j, _i64(1)), j)
            im_col = b.select(sec, j, b.add(j, _i64(1)))
            paired = b.or_(sec, first)
            neg = sec

            def row(i):
                re = self.load(s["vr"], np.dtype(np.float64), b.add(i, b.mul(re_col, _i64(n))))[0]
                im_idx = b.select(paired, b.add(i, b.mul(im_col, _i64(n))), _i64(0))
                im = self.load(s["vr"], np.dtype(np.float64), im_idx)[0]
                im = b.select(paired, b.select(neg, b.fneg(im), im), ir.Constant(F64, 0.0))
                self.store(vp, cdt, b.add(vbase, b.add(b.mul(i, _i64(n)), j)), [re, im])
            _for(b, _i64(0), _i64(n), _i64(1), row, "vr")
            b.store(first, second)
        _for(b, _i64(0), _i64(n), _i64(1), column, "vc")

    # triangular_solve ------------------------------------------------------------------------
    def triangular_solve(self):
        """X = B, then BLAS trsm in place on X (row-major: no copies), in the operand's own
        precision as the interpreter's substitution."""
        b, eqn = self.b, self.eqn
        p = eqn.params
        (a, rhs), (out,) = eqn.invars, eqn.outvars
        n, m = rhs.ty.shape[-2:]
        x = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}[
            self.dt.type]
        T = F32 if self.dt in (np.float32, np.complex64) else F64
        fn = lapack.declare_trsm(self.module, x, T)
        if self.cplx:
            with b.goto_entry_block():
                alpha = b.alloca(T, size=_i64(2))
            b.store(ir.Constant(T, 1.0), alpha)
            b.store(ir.Constant(T, 0.0), b.gep(alpha, [_i64(1)], source_etype=T))
        else:
            alpha = ir.Constant(T, 1.0)
        conj = p["conjugate_a"] and self.cplx
        trans = {(False, False): lapack.NO_TRANS, (True, False): lapack.TRANS,
                 (True, True): lapack.CONJ_TRANS, (False, True): lapack.CONJ_NO_TRANS}[
            (p["transpose_a"], conj)]
        flags = [lapack.ROW_MAJOR, lapack.LEFT, lapack.LOWER if p["lower"] else lapack.UPPER,
                 trans, lapack.UNIT if p["unit_diagonal"] else lapack.NON_UNIT]
        ap, bp, xp = self.ptr(a), self.ptr(rhs), self.ptr(out)
        size = self.dt.itemsize
        memcpy = self.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
        it = self.it

        def matrix(q):
            ab, xb = b.mul(q, _i64(n * n * size)), b.mul(q, _i64(n * m * size))
            xq = b.gep(xp, [xb], source_etype=I8)
            b.call(memcpy, [xq, b.gep(bp, [xb], source_etype=I8), _i64(n * m * size),
                            ir.Constant(I1, 0)])
            b.call(fn, [ir.Constant(I32, f) for f in flags] +
                   [ir.Constant(it, n), ir.Constant(it, m), alpha,
                    b.gep(ap, [ab], source_etype=I8), ir.Constant(it, n), xq,
                    ir.Constant(it, m)])
        self.batch_loop(matrix)

    def emit(self):
        getattr(self, self.eqn.prim.name)()
        if self.block is not None:
            self.b.call(stacks.libc(self.module, "free"), [self.block])
        self.b.ret_void()
        return self.fn


def emit_lapack(module, name, eqn, plan, slot_of, err_slot) -> ir.Function:
    """``void @name(ptr slots)`` computing one linalg equation by LAPACK (module docstring)."""
    return _Lapack(module, name, eqn, plan, slot_of, err_slot).emit()


def routine(eqn) -> str:
    """The LAPACK / BLAS routine a LapackStep calls (for the plan's printout)."""
    name, cplx = eqn.prim.name, np.dtype(eqn.invars[0].ty.dtype).kind == "c"
    x = "z" if cplx else "d"
    return {"cholesky": x + "potrf", "solve": x + "gesv", "slogdet": x + "getrf",
            "eigh": x + ("heevd" if cplx else "syevd"), "svd": x + "gesdd",
            "qr": x + "geqrf" + ("" if eqn.params.get("mode") == "r" else
                                 "+" + x + ("ungqr" if cplx else "orgqr")),
            "eig": x + "geev", "triangular_solve": "trsm"}[name]
