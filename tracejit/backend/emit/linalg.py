"""Native ``cholesky``, ``triangular_solve`` and ``solve`` of small real matrices
(``LinalgStep``).

One internal function ``void @name(ptr slots)`` per equation, called from its segment, looping
over the batch of matrices (row-major, contiguous). The algorithms are the unblocked textbook
ones, which for the small matrices the planner sends here (``steps.can_lower_linalg``) beat a
LAPACK call (``emit/lapack.py``: no per-call copies and set-up), or, without LAPACK, a call into
NumPy between native segments by a wide margin:

- cholesky (Cholesky-Banachiewicz, row by row): ``L[i,j] = (A[i,j] - sum_k<j L[i,k] L[j,k]) /
  L[j,j]``, ``L[i,i] = sqrt(A[i,i] - sum_k<i L[i,k]^2)``; only the lower triangle of ``A`` is
  read, the upper triangle of ``L`` is zero. A pivot that is not > 0 (or NaN), LAPACK's failure
  test, sets the matrix's flag and fills its ``L`` with NaN, as the NumPy implementation does.
- triangular_solve: forward or backward substitution per right-hand-side column over
  ``op(A)`` (``A`` or ``A^T`` read from the triangle asked for; the diagonal taken as ones
  with ``unit_diagonal``); a zero pivot gives inf/NaN, as BLAS trsm and the NumPy
  implementation.
- solve: Gaussian elimination with partial pivoting on a stack copy of ``op(A)`` (see
  ``solve``); an exact zero pivot flags the matrix and fills its X with NaN, as the NumPy
  implementation (LAPACK gesv's ``info > 0``).

Results equal LAPACK's up to rounding (a different summation order). Arithmetic is plain IEEE
(no fast-math), so NaN and inf propagate as in the reference.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .loops import _for
from .ops import I8, I64, mem_type

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def view_pointer(b, slots, plan, slot_of, var):
    """The address of ``var``'s first element: its base's slot plus the view's offset."""
    view = plan.view_of(var)
    p = b.load(b.gep(slots, [_i64(slot_of(view.base))], source_etype=PTR), typ=PTR)
    if view.offset:
        p = b.gep(p, [_i64(view.offset * view.dtype.itemsize)], source_etype=I8)
    return p


class _Linalg:
    def __init__(self, module, name, eqn, plan, slot_of):
        self.module, self.eqn, self.plan, self.slot_of = module, eqn, plan, slot_of
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ty = mem_type(np.dtype(eqn.invars[0].ty.dtype))
        self.acc = self.b.alloca(self.ty, name="acc")      # in the entry block: one slot

    def ptr(self, var):
        return view_pointer(self.b, self.fn.args[0], self.plan, self.slot_of, var)

    def load(self, p, k):
        return self.b.load(self.b.gep(p, [k], source_etype=self.ty), typ=self.ty)

    def store(self, v, p, k):
        self.b.store(v, self.b.gep(p, [k], source_etype=self.ty))

    def at(self, base, i, j, n):
        """Index ``base + i * n + j`` (all i64)."""
        b = self.b
        return b.add(base, b.add(b.mul(i, _i64(n)), j))

    def dot_minus(self, s, count, left, right):
        """``s - sum_{k < count} left(k) * right(k)``, accumulated in order (a scalar loop)."""
        b, acc = self.b, self.acc
        b.store(s, acc)

        def body(k):
            b.store(b.fsub(b.load(acc, typ=self.ty), b.fmul(left(k), right(k))), acc)
        _for(b, _i64(0), count, _i64(1), body, "k")
        return b.load(acc, typ=self.ty)

    # cholesky --------------------------------------------------------------------------------
    def cholesky(self):
        b, eqn = self.b, self.eqn
        (a,), (out, flag) = eqn.invars, eqn.outvars
        n = a.ty.shape[-1]
        batch = int(np.prod(a.ty.shape[:-2], dtype=np.int64))
        ap, lp, fp = self.ptr(a), self.ptr(out), self.ptr(flag)
        sqrt = self.module.declare_intrinsic("llvm.sqrt", [self.ty])
        zero, nan = ir.Constant(self.ty, 0.0), ir.Constant(self.ty, float("nan"))
        failed = b.alloca(ir.IntType(1), name="failed")

        def matrix(p):
            base = b.mul(p, _i64(n * n))
            b.store(ir.Constant(ir.IntType(1), 0), failed)

            def row(i):
                def col(j):
                    s = self.dot_minus(self.load(ap, self.at(base, i, j, n)), j,
                                       lambda k: self.load(lp, self.at(base, i, k, n)),
                                       lambda k: self.load(lp, self.at(base, j, k, n)))
                    diag = b.icmp_signed("==", i, j)
                    bad = b.and_(diag, b.not_(b.fcmp_ordered(">", s, zero)))
                    b.store(b.or_(b.load(failed, typ=ir.IntType(1)), bad), failed)
                    pivot = self.load(lp, self.at(base, j, j, n))
                    value = b.select(diag, b.call(sqrt, [s]), b.fdiv(s, b.select(diag, s, pivot)))
                    self.store(value, lp, self.at(base, i, j, n))
                _for(b, _i64(0), b.add(i, _i64(1)), _i64(1), col, "j")
                _for(b, b.add(i, _i64(1)), _i64(n), _i64(1),
                     lambda j: self.store(zero, lp, self.at(base, i, j, n)), "z")
            _for(b, _i64(0), _i64(n), _i64(1), row, "i")
            bad = b.load(failed, typ=ir.IntType(1))
            b.store(b.zext(bad, I8), b.gep(fp, [p], source_etype=I8))
            with b.if_then(bad):
                _for(b, _i64(0), _i64(n * n), _i64(1),
                     lambda k: self.store(nan, lp, b.add(base, k)), "nan")
        _for(b, _i64(0), _i64(batch), _i64(1), matrix, "p")

    # triangular_solve ------------------------------------------------------------------------
    def triangular_solve(self):
        b, eqn = self.b, self.eqn
        (a, rhs), (out,) = eqn.invars, eqn.outvars
        p = eqn.params
        n, m = rhs.ty.shape[-2:]
        batch = int(np.prod(a.ty.shape[:-2], dtype=np.int64))
        ap, bp, xp = self.ptr(a), self.ptr(rhs), self.ptr(out)
        forward = p["lower"] != p["transpose_a"]

        def op(base, i, j):          # op(A)[i, j]
            return self.load(ap, self.at(base, j, i, n) if p["transpose_a"] else
                             self.at(base, i, j, n))

        def matrix(q):
            abase, bbase = b.mul(q, _i64(n * n)), b.mul(q, _i64(n * m))

            def column(c):
                def step(t):
                    i = t if forward else b.sub(_i64(n - 1), t)
                    lo, count = (_i64(0), i) if forward else (b.add(i, _i64(1)),
                                                              b.sub(_i64(n - 1), i))
                    s = self.dot_minus(
                        self.load(bp, self.at(bbase, i, c, m)), count,
                        lambda k: op(abase, i, b.add(lo, k)),
                        lambda k: self.load(xp, self.at(bbase, b.add(lo, k), c, m)))
                    if not p["unit_diagonal"]:
                        s = b.fdiv(s, op(abase, i, i))
                    self.store(s, xp, self.at(bbase, i, c, m))
                _for(b, _i64(0), _i64(n), _i64(1), step, "t")
            _for(b, _i64(0), _i64(m), _i64(1), column, "c")
        _for(b, _i64(0), _i64(batch), _i64(1), matrix, "q")

    # solve -----------------------------------------------------------------------------------
    def solve(self):
        """Gaussian elimination with partial pivoting (LAPACK getf2's pivots: the first row of
        largest magnitude) applied to ``op(A)`` and ``B`` together, then back substitution. An
        exact zero pivot (getrf's ``info > 0``) flags the matrix and fills its X with NaN."""
        b, eqn = self.b, self.eqn
        (a, rhs), (out, flag) = eqn.invars, eqn.outvars
        n, m = rhs.ty.shape[-2:]
        batch = int(np.prod(a.ty.shape[:-2], dtype=np.int64))
        ap, bp, xp, fp = self.ptr(a), self.ptr(rhs), self.ptr(out), self.ptr(flag)
        with b.goto_entry_block():
            s = b.alloca(self.ty, size=_i64(n * n), name="lu")
            piv = b.alloca(I64, name="piv")
            big = b.alloca(self.ty, name="big")
            failed = b.alloca(ir.IntType(1), name="failed")
        zero, nan = ir.Constant(self.ty, 0.0), ir.Constant(self.ty, float("nan"))
        fabs = self.module.declare_intrinsic("llvm.fabs", [self.ty])
        z = _i64(0)

        def swap(p, i, j):
            t = self.load(p, i)
            self.store(self.load(p, j), p, i)
            self.store(t, p, j)

        def matrix(q):
            abase, bbase = b.mul(q, _i64(n * n)), b.mul(q, _i64(n * m))
            b.store(ir.Constant(ir.IntType(1), 0), failed)

            def copy_a(k):                   # S = op(A), row-major
                i, j = b.sdiv(k, _i64(n)), b.srem(k, _i64(n))
                src = self.at(abase, j, i, n) if eqn.params["transpose_a"] else b.add(abase, k)
                self.store(self.load(ap, src), s, k)
            _for(b, z, _i64(n * n), _i64(1), copy_a, "cp")
            _for(b, z, _i64(n * m), _i64(1),
                 lambda k: self.store(self.load(bp, b.add(bbase, k)), xp, b.add(bbase, k)), "cx")

            def column(c):
                b.store(c, piv)
                b.store(b.call(fabs, [self.load(s, self.at(z, c, c, n))]), big)

                def search(r):
                    v = b.call(fabs, [self.load(s, self.at(z, r, c, n))])
                    more = b.fcmp_ordered(">", v, b.load(big, typ=self.ty))
                    b.store(b.select(more, r, b.load(piv, typ=I64)), piv)
                    b.store(b.select(more, v, b.load(big, typ=self.ty)), big)
                _for(b, b.add(c, _i64(1)), _i64(n), _i64(1), search, "r")
                p = b.load(piv, typ=I64)
                _for(b, z, _i64(n), _i64(1),
                     lambda j: swap(s, self.at(z, c, j, n), self.at(z, p, j, n)), "sa")
                _for(b, z, _i64(m), _i64(1),
                     lambda j: swap(xp, self.at(bbase, c, j, m), self.at(bbase, p, j, m)), "sb")
                pivot = self.load(s, self.at(z, c, c, n))
                b.store(b.or_(b.load(failed, typ=ir.IntType(1)),
                              b.fcmp_ordered("==", pivot, zero)), failed)

                def eliminate(r):
                    f = b.fdiv(self.load(s, self.at(z, r, c, n)), pivot)

                    def row_s(j):
                        k = self.at(z, r, j, n)
                        self.store(b.fsub(self.load(s, k),
                                          b.fmul(f, self.load(s, self.at(z, c, j, n)))), s, k)

                    def row_x(j):
                        k = self.at(bbase, r, j, m)
                        self.store(b.fsub(self.load(xp, k),
                                          b.fmul(f, self.load(xp, self.at(bbase, c, j, m)))),
                                   xp, k)
                    _for(b, b.add(c, _i64(1)), _i64(n), _i64(1), row_s, "es")
                    _for(b, z, _i64(m), _i64(1), row_x, "ex")
                _for(b, b.add(c, _i64(1)), _i64(n), _i64(1), eliminate, "e")
            _for(b, z, _i64(n), _i64(1), column, "col")

            def back(col):
                def step(t):
                    i = b.sub(_i64(n - 1), t)
                    lo = b.add(i, _i64(1))
                    v = self.dot_minus(self.load(xp, self.at(bbase, i, col, m)),
                                       b.sub(_i64(n - 1), i),
                                       lambda k: self.load(s, self.at(z, i, b.add(lo, k), n)),
                                       lambda k: self.load(xp, self.at(bbase, b.add(lo, k), col,
                                                                        m)))
                    self.store(b.fdiv(v, self.load(s, self.at(z, i, i, n))), xp,
                               self.at(bbase, i, col, m))
                _for(b, z, _i64(n), _i64(1), step, "t")
            _for(b, z, _i64(m), _i64(1), back, "bk")
            bad = b.load(failed, typ=ir.IntType(1))
            b.store(b.zext(bad, I8), b.gep(fp, [q], source_etype=I8))
            with b.if_then(bad):
                _for(b, z, _i64(n * m), _i64(1),
                     lambda k: self.store(nan, xp, b.add(bbase, k)), "nan")
        _for(b, z, _i64(batch), _i64(1), matrix, "q")

    def emit(self):
        getattr(self, self.eqn.prim.name)()
        self.b.ret_void()
        return self.fn


def emit_linalg(module, name, eqn, plan, slot_of) -> ir.Function:
    """``void @name(ptr slots)`` computing one cholesky, triangular_solve or solve equation."""
    return _Linalg(module, name, eqn, plan, slot_of).emit()
