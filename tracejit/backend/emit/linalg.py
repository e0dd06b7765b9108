"""Native ``cholesky`` and ``triangular_solve`` of small real matrices (``LinalgStep``).

One internal function ``void @name(ptr slots)`` per equation, called from its segment, looping
over the batch of matrices (row-major, contiguous). The algorithms are the unblocked textbook
ones, which for the small matrices the planner sends here (``steps.LINALG_MAX_WORK``) beat a call
into NumPy between native segments by a wide margin, and keep the whole function native:

- cholesky (Cholesky-Banachiewicz, row by row): ``L[i,j] = (A[i,j] - sum_k<j L[i,k] L[j,k]) /
  L[j,j]``, ``L[i,i] = sqrt(A[i,i] - sum_k<i L[i,k]^2)``; only the lower triangle of ``A`` is
  read, the upper triangle of ``L`` is zero. A pivot that is not > 0 (or NaN), LAPACK's failure
  test, sets the matrix's flag and fills its ``L`` with NaN, as the NumPy implementation does.
- triangular_solve: forward or backward substitution per right-hand-side column over
  ``op(A)`` (``A`` or ``A^T`` read from the triangle asked for; the diagonal taken as ones
  with ``unit_diagonal``); a zero pivot gives inf/NaN, as BLAS trsm and the NumPy
  implementation.

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


class _Linalg:
    def __init__(self, module, name, eqn, plan, slot_of):
        self.module, self.eqn, self.plan, self.slot_of = module, eqn, plan, slot_of
        self.fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
        self.fn.linkage = "internal"
        self.b = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.ty = mem_type(np.dtype(eqn.invars[0].ty.dtype))
        self.acc = self.b.alloca(self.ty, name="acc")      # in the entry block: one slot

    def ptr(self, var):
        b, view = self.b, self.plan.view_of(var)
        p = b.load(b.gep(self.fn.args[0], [_i64(self.slot_of(view.base))], source_etype=PTR),
                   typ=PTR)
        if view.offset:
            p = b.gep(p, [_i64(view.offset * view.dtype.itemsize)], source_etype=I8)
        return p

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

    def emit(self):
        getattr(self, self.eqn.prim.name)()
        self.b.ret_void()
        return self.fn


def emit_linalg(module, name, eqn, plan, slot_of) -> ir.Function:
    """``void @name(ptr slots)`` computing one cholesky or triangular_solve equation."""
    return _Linalg(module, name, eqn, plan, slot_of).emit()
