"""The native FFT library: generic complex, real-to-complex and complex-to-real transforms of
rows, compiled once per process (object code cached as library code) and called from the
kernels that ``emit/fft.py`` emits, with the twiddle tables of each length as data symbols.

Functions (``c`` = ``d`` for float64 / complex128 operands and results, ``s`` for float32 /
complex64 ones, converted on the way in and rounded once on the way out: the arithmetic is
double either way, as NumPy's pocketfft does for float32, whose accuracy it matches; complex
arrays are interleaved; a row of a ``[outer, n, inner]`` C-order array is its elements
``(o, 0..n-1, i)``):

- ``void tj_fft_c2c_c(in, out, outer, n, inner, sign, plan, work)``: each row's unnormalised
  DFT with ``exp(-2 pi i jk/n)`` (``sign`` = 1.0) or ``exp(+...)`` (``sign`` = -1.0: the
  inverse is ``conj(F(conj x))``, the conjugations being multiplications of the imaginary
  parts by ``sign``, which are exact). ``in`` may equal ``out`` (a row is read whole first).
- ``void tj_fft_r2c_c(in, out, outer, n, inner, plan, half, work)``: real rows of length ``n``
  to their first ``n//2 + 1`` bins. Even ``n``: the half-length trick (the row as ``n/2``
  complex numbers ``x[2k] + i x[2k+1]``, one complex FFT of ``n/2``, then a split with the
  table ``half`` = ``W_n^k``, k = 0..n/2); odd ``n``: a complex FFT of ``n`` of the row.
- ``void tj_fft_c2r_c(in, out, outer, n, inner, plan, half, work)``: ``n//2 + 1`` bins to ``n``
  reals, unnormalised (``sum_k w_k X_k exp(+...)``), ignoring the imaginary parts of bins 0
  and ``n/2`` as pocketfft does: the inverse of the split above, or for odd ``n`` a complex
  inverse FFT of the Hermitian completion.

The complex FFT of a row (``cpx``) works on split real/imaginary arrays (unit-stride loops the
vectoriser turns into SIMD). Powers of two: Stockham autosort, radix-4 stages and a final
radix-2 one, ping-ponging between the row and scratch. Other lengths: Bluestein (chirp-z), a
cyclic convolution by two power-of-two FFTs of length ``M >= 2n - 1``.

``plan`` (per length ``n`` of the complex FFT, ``ffttables.plan_table``): ``W_N^k`` for k < N as
[re..., im...] where ``N`` = ``n`` for a power of two, else ``M``, followed for Bluestein by the
chirp ``exp(-i pi k^2/n)`` (k < n) and ``FFT_M(conj chirp, wrapped)/M`` ([re..., im...] each).
Every table entry is computed in long double and rounded once to double. ``work`` holds
``ffttables.work_size`` doubles; the caller allocates it (and reports a failure).
"""
from __future__ import annotations

import threading

import numpy as np
from llvmlite import ir

from ..engine import jit, objects
from . import ffttables, stacks
from .ffttables import PAD
from .loops import _for
from .ops import I1, I8, I64

PTR = ir.PointerType()
TYPES = {"d": ir.DoubleType(), "s": ir.FloatType()}
F64 = TYPES["d"]


def _i64(v):
    return ir.Constant(I64, int(v))


def code_of(dtype) -> str:
    """``d`` or ``s``: the library variant for a float or complex dtype."""
    return "s" if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else "d"


# --------------------------------------------------------------------------------------------
# the library module

class _Lib:
    """Builds the functions of one element type into ``module``."""

    def __init__(self, module, c):
        self.m, self.c, self.T, self.io = module, c, F64, TYPES[c]
        self.stage4 = self._stage4()
        self.stage2 = self._stage2()
        self.pow2 = self._pow2()
        self.cpx = self._cpx()
        for f in (self.pow2, self.cpx):      # called once per row: inlining them into every
            f.attributes.add("noinline")     # driver's two row loops only costs compile time
        self._c2c()
        self._r2c()
        self._c2r()

    def function(self, name, args, linkage="internal", aliased=(), ret=ir.VoidType()):
        """A new function whose pointer arguments are ``noalias`` except those in ``aliased``
        (the vectoriser needs the promise to run the stage loops without run-time checks)."""
        fn = ir.Function(self.m, ir.FunctionType(ret, args), f"tj_fft_{name}_{self.c}")
        fn.linkage = linkage
        fn.attributes.add("nounwind")
        for k, a in enumerate(fn.args):
            if isinstance(a.type, ir.PointerType) and k not in aliased:
                a.add_attribute("noalias")
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        return fn

    # helpers ---------------------------------------------------------------------------------
    def at(self, p, k):
        return self.b.gep(p, [k], source_etype=self.T)

    def ld(self, p, k):
        return self.b.load(self.at(p, k), typ=self.T)

    def st(self, v, p, k):
        self.b.store(v, self.at(p, k))

    def result(self, flag, yes, no):
        """The split pair ``yes`` where ``flag`` is set, else ``no``."""
        return tuple(self.b.select(flag, p, q) for p, q in zip(yes, no))

    def padded(self, n, k):
        """The offset of the ``k``-th split array of length ``n`` in a work area (``PAD``)."""
        return self.b.mul(self.b.add(n, _i64(PAD)), _i64(k))

    def const(self, v):
        return ir.Constant(self.T, v)

    def cmul(self, ar, ai, br, bi):
        b = self.b
        return b.fsub(b.fmul(ar, br), b.fmul(ai, bi)), b.fadd(b.fmul(ar, bi), b.fmul(ai, br))

    def loop(self, lo, hi, body, name="k"):
        _for(self.b, lo if isinstance(lo, ir.Value) else _i64(lo), hi, _i64(1), body, name)

    # Stockham stages -------------------------------------------------------------------------
    def _stage4(self):
        """One radix-4 stage: length ``L`` sub-transforms, stride ``s`` (``x`` -> ``y``)."""
        fn = self.function("stage4", [PTR] * 6 + [I64, I64])
        xr, xi, yr, yi, wr, wi, big_l, s = fn.args
        b = self.b
        m = b.lshr(big_l, _i64(2))

        def butterfly(p, q, w):
            def get(k):
                idx = b.add(q, b.mul(s, b.add(p, b.mul(m, _i64(k)))))
                return self.ld(xr, idx), self.ld(xi, idx)
            (ar, ai), (br, bi), (cr, ci), (dr, di) = get(0), get(1), get(2), get(3)
            pr, pi = b.fadd(ar, cr), b.fadd(ai, ci)          # a + c
            mr, mi = b.fsub(ar, cr), b.fsub(ai, ci)          # a - c
            qr, qi = b.fadd(br, dr), b.fadd(bi, di)          # b + d
            jr, ji = b.fsub(bi, di), b.fsub(dr, br)          # -i (b - d)
            outs = [(b.fadd(pr, qr), b.fadd(pi, qi)), (b.fadd(mr, jr), b.fadd(mi, ji)),
                    (b.fsub(pr, qr), b.fsub(pi, qi)), (b.fsub(mr, jr), b.fsub(mi, ji))]
            for j, (vr, vi) in enumerate(outs):
                if j and w is not None:
                    vr, vi = self.cmul(vr, vi, *w[j - 1])
                idx = b.add(q, b.mul(s, b.add(b.mul(p, _i64(4)), _i64(j))))
                self.st(vr, yr, idx)
                self.st(vi, yi, idx)

        def twiddles(p):
            ps = b.mul(p, s)
            return [(self.ld(wr, b.mul(ps, _i64(j))), self.ld(wi, b.mul(ps, _i64(j))))
                    for j in (1, 2, 3)]

        with b.if_else(b.icmp_signed("==", s, _i64(1))) as (first, other):
            with first:         # s = 1: no inner loop (its one iteration would cost more)
                self.loop(0, m, lambda p: butterfly(p, _i64(0), twiddles(p)), "p1")
            with other:
                def outer(p):
                    w = twiddles(p)
                    self.loop(0, s, lambda q: butterfly(p, q, w), "q")
                self.loop(0, m, outer, "p")
        b.ret_void()
        return fn

    def _stage2(self):
        """The last radix-2 stage (``L`` = 2, no twiddles): ``y[q] = x[q] + x[q+s]``,
        ``y[q+s] = x[q] - x[q+s]``."""
        fn = self.function("stage2", [PTR] * 4 + [I64])
        xr, xi, yr, yi, s = fn.args
        b = self.b

        def body(q):
            q2 = b.add(q, s)
            ar, ai, br, bi = (self.ld(xr, q), self.ld(xi, q), self.ld(xr, q2), self.ld(xi, q2))
            self.st(b.fadd(ar, br), yr, q)
            self.st(b.fadd(ai, bi), yi, q)
            self.st(b.fsub(ar, br), yr, q2)
            self.st(b.fsub(ai, bi), yi, q2)
        self.loop(0, s, body, "q")
        b.ret_void()
        return fn

    def _pow2(self):
        """The forward DFT of ``(xr, xi)``, ``n`` a power of two, twiddles ``(wr, wi)`` =
        ``W_n^k``. Stages alternate between the row and the scratch ``(sr, si)``; returns
        whether the result is in the scratch (an odd number of stages: no copy back)."""
        fn = self.function("pow2", [PTR] * 6 + [I64], ret=I1)
        xr, xi, sr, si, wr, wi, n = fn.args
        b = self.b
        big_l, s, flip = (b.alloca(I64, name="L"), b.alloca(I64, name="s"),
                          b.alloca(I1, name="flip"))
        b.store(n, big_l)
        b.store(_i64(1), s)
        b.store(ir.Constant(I1, 0), flip)

        def ends():
            f = b.load(flip, typ=I1)
            src = [b.select(f, p, q) for p, q in ((sr, xr), (si, xi))]
            dst = [b.select(f, p, q) for p, q in ((xr, sr), (xi, si))]
            return src, dst

        head, body, tail = (fn.append_basic_block(x) for x in ("st.head", "st.body", "st.tail"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(b.icmp_signed(">=", b.load(big_l, typ=I64), _i64(4)), body, tail)
        b.position_at_end(body)
        (pr, pi), (qr, qi) = ends()
        b.call(self.stage4, [pr, pi, qr, qi, wr, wi, b.load(big_l, typ=I64), b.load(s, typ=I64)])
        b.store(b.not_(b.load(flip, typ=I1)), flip)
        b.store(b.lshr(b.load(big_l, typ=I64), _i64(2)), big_l)
        b.store(b.shl(b.load(s, typ=I64), _i64(2)), s)
        b.branch(head)
        b.position_at_end(tail)
        with b.if_then(b.icmp_signed("==", b.load(big_l, typ=I64), _i64(2))):
            (pr, pi), (qr, qi) = ends()
            b.call(self.stage2, [pr, pi, qr, qi, b.load(s, typ=I64)])
            b.store(b.not_(b.load(flip, typ=I1)), flip)
        b.ret(b.load(flip, typ=I1))
        return fn

    def _cpx(self):
        """The forward DFT of ``(xr, xi)`` of any length ``n`` (scratch: ``cpx_work(n)``);
        returns whether the result is in the scratch's first two split arrays (else in x)."""
        fn = self.function("cpx", [PTR, PTR, PTR, I64, PTR], ret=I1)
        xr, xi, work, n, plan = fn.args
        b = self.b
        pow2 = b.icmp_signed("==", b.and_(n, b.sub(n, _i64(1))), _i64(0))
        with b.if_then(pow2):
            b.ret(b.call(self.pow2, [xr, xi, work, self.at(work, self.padded(n, 1)), plan,
                                     self.at(plan, n), n]))
        # Bluestein: M = 2^ceil(log2(2n - 1)) (n >= 3 here)
        ctlz = self.m.globals.get("llvm.ctlz.i64") or ir.Function(
            self.m, ir.FunctionType(I64, [I64, I1]), "llvm.ctlz.i64")
        bits = b.sub(_i64(64), b.call(ctlz, [b.sub(b.mul(n, _i64(2)), _i64(2)),
                                             ir.Constant(I1, 0)]))
        m = b.shl(_i64(1), bits)
        ar, ai, tr, ti = (self.at(work, self.padded(m, k)) for k in range(4))
        wr, wi = plan, self.at(plan, m)
        chr_ = self.at(plan, b.mul(m, _i64(2)))
        chi = self.at(chr_, n)
        sr, si = self.at(chi, n), self.at(chi, b.add(n, m))

        def chirp_in(k):
            vr, vi = self.cmul(self.ld(xr, k), self.ld(xi, k), self.ld(chr_, k), self.ld(chi, k))
            self.st(vr, ar, k)
            self.st(vi, ai, k)

        def zero(k):
            self.st(self.const(0.0), ar, k)
            self.st(self.const(0.0), ai, k)
        self.loop(0, n, chirp_in, "ci")
        self.loop(n, m, zero, "z")
        first = b.call(self.pow2, [ar, ai, tr, ti, wr, wi, m])
        (pr, pi), (qr, qi) = self.result(first, (tr, ti), (ar, ai)), \
            self.result(first, (ar, ai), (tr, ti))

        def convolve(k):        # p <- conj(p * B): the inverse FFT as conj(F(conj .))
            vr, vi = self.cmul(self.ld(pr, k), self.ld(pi, k), self.ld(sr, k), self.ld(si, k))
            self.st(vr, pr, k)
            self.st(b.fneg(vi), pi, k)
        self.loop(0, m, convolve, "cv")
        second = b.call(self.pow2, [pr, pi, qr, qi, wr, wi, m])
        rr, ri = self.result(second, (qr, qi), (pr, pi))

        def chirp_out(k):
            vr, vi = self.cmul(self.ld(rr, k), b.fneg(self.ld(ri, k)),
                               self.ld(chr_, k), self.ld(chi, k))
            self.st(vr, xr, k)
            self.st(vi, xi, k)
        self.loop(0, n, chirp_out, "co")
        b.ret(ir.Constant(I1, 0))
        return fn

    # row drivers -----------------------------------------------------------------------------
    def transform(self, rr, ri, cw, n, plan):
        """The complex FFT of the split row ``(rr, ri)`` (scratch ``cw``): where its result is."""
        flip = self.b.call(self.cpx, [rr, ri, cw, n, plan])
        return self.result(flip, (cw, self.at(cw, self.padded(n, 1))), (rr, ri))

    def rows(self, outer, inner, body):
        """``body(o, i, inner)`` for every row; contiguous rows (``inner`` = 1, the common case)
        get their own copy of the body with the constant stride, which the vectoriser needs to
        turn the gathers and scatters into vector loads and shuffles (measured: both 4x
        faster)."""
        one = _i64(1)
        with self.b.if_else(self.b.icmp_signed("==", inner, one)) as (contiguous, strided):
            with contiguous:
                self.loop(0, outer, lambda o: body(o, _i64(0), one), "o1")
            with strided:
                self.loop(0, outer, lambda o: self.loop(0, inner, lambda i: body(o, i, inner),
                                                        "i"), "o")

    def elem(self, base, k, inner):
        """The index of element ``k`` of the row starting at ``base`` (stride ``inner``)."""
        return self.b.add(base, self.b.mul(k, inner))

    def load(self, p, k):
        """Element ``k`` of an operand (float or double), as a double."""
        v = self.b.load(self.b.gep(p, [k], source_etype=self.io), typ=self.io)
        return v if self.io is F64 else self.b.fpext(v, F64)

    def store(self, v, p, k):
        """A double into element ``k`` of a result (rounded once to float for float32)."""
        if self.io is not F64:
            v = self.b.fptrunc(v, self.io)
        self.b.store(v, self.b.gep(p, [k], source_etype=self.io))

    def cload(self, p, idx):
        """The complex element ``idx`` of an interleaved operand."""
        two = self.b.mul(idx, _i64(2))
        return self.load(p, two), self.load(p, self.b.add(two, _i64(1)))

    def cstore(self, vr, vi, p, idx):
        two = self.b.mul(idx, _i64(2))
        self.store(vr, p, two)
        self.store(vi, p, self.b.add(two, _i64(1)))

    def row_base(self, o, i, n, inner):
        b = self.b
        return b.add(b.mul(b.mul(o, n), inner), i)

    def _c2c(self):
        fn = self.function("c2c", [PTR, PTR, I64, I64, I64, self.T, PTR, PTR], "external",
                           aliased=(0, 1))       # in == out is allowed
        src, dst, outer, n, inner, sign, plan, work = fn.args
        b = self.b
        rr, ri, cw = work, self.at(work, self.padded(n, 1)), self.at(work, self.padded(n, 2))

        def row(o, i, inner):
            base = self.row_base(o, i, n, inner)

            def gather(k):
                vr, vi = self.cload(src, self.elem(base, k, inner))
                self.st(vr, rr, k)
                self.st(b.fmul(vi, sign), ri, k)

            def scatter(k):
                self.cstore(self.ld(cr, k), b.fmul(self.ld(ci, k), sign), dst,
                            self.elem(base, k, inner))
            self.loop(0, n, gather, "g")
            cr, ci = self.transform(rr, ri, cw, n, plan)
            self.loop(0, n, scatter, "sc")
        self.rows(outer, inner, row)
        b.ret_void()

    def real_driver(self, name):
        """The arguments of ``tj_fft_<name>`` (r2c / c2r) and the values both derive from
        them: whether ``n`` is even, ``h = n//2``, the bins ``h + 1``, the complex FFT's
        length (``h`` or ``n``), the split row, its FFT's scratch and the ``half`` table."""
        fn = self.function(name, [PTR, PTR, I64, I64, I64, PTR, PTR, PTR], "external")
        src, dst, outer, n, inner, plan, half, work = fn.args
        b = self.b
        even = b.icmp_signed("==", b.and_(n, _i64(1)), _i64(0))
        h = b.lshr(n, _i64(1))
        hb = b.add(h, _i64(1))
        m = b.select(even, h, n)
        split = (work, self.at(work, self.padded(m, 1)), self.at(work, self.padded(m, 2)))
        return fn.args, (even, h, hb), split, (half, self.at(half, hb))

    def _r2c(self):
        (src, dst, outer, n, inner, plan, _, _), (even, h, hb), (rr, ri, cw), (hr, hi) = \
            self.real_driver("r2c")
        b = self.b
        half_c = self.const(0.5)

        def row(o, i, inner):
            base = self.row_base(o, i, n, inner)
            obase = self.row_base(o, i, hb, inner)
            with b.if_else(even) as (is_even, is_odd):
                with is_even:
                    def gather(k):
                        k2 = b.mul(k, _i64(2))
                        self.st(self.load(src, self.elem(base, k2, inner)), rr, k)
                        self.st(self.load(src, self.elem(base, b.add(k2, _i64(1)), inner)), ri, k)

                    def split(k):           # 0 < k < h (Z_{h-k} read backwards)
                        zc = b.sub(h, k)
                        ar, ai, yr, yi = (self.ld(cr, k), self.ld(ci, k), self.ld(cr, zc),
                                          self.ld(ci, zc))
                        er, ei = b.fmul(half_c, b.fadd(ar, yr)), b.fmul(half_c, b.fsub(ai, yi))
                        orr, oi = b.fmul(half_c, b.fsub(ar, yr)), b.fmul(half_c, b.fadd(ai, yi))
                        tr, ti = self.cmul(self.ld(hr, k), self.ld(hi, k), orr, oi)
                        self.cstore(b.fadd(er, ti), b.fsub(ei, tr), dst,
                                    self.elem(obase, k, inner))
                    self.loop(0, h, gather, "g")
                    cr, ci = self.transform(rr, ri, cw, h, plan)
                    zero = _i64(0)
                    ar, ai = self.ld(cr, zero), self.ld(ci, zero)      # bins 0 and h: real
                    self.cstore(b.fadd(ar, ai), self.const(0.0), dst, obase)
                    self.cstore(b.fsub(ar, ai), self.const(0.0), dst, self.elem(obase, h, inner))
                    self.loop(1, h, split, "sp")
                with is_odd:
                    def gather_odd(k):
                        self.st(self.load(src, self.elem(base, k, inner)), rr, k)
                        self.st(self.const(0.0), ri, k)

                    def scatter(k):
                        self.cstore(self.ld(cr_odd, k), self.ld(ci_odd, k), dst,
                                    self.elem(obase, k, inner))
                    self.loop(0, n, gather_odd, "g")
                    cr_odd, ci_odd = self.transform(rr, ri, cw, n, plan)
                    self.st(self.const(0.0), ci_odd, _i64(0))   # bin 0 of real data is real
                    self.loop(0, hb, scatter, "sc")
        self.rows(outer, inner, row)
        b.ret_void()

    def _c2r(self):
        (src, dst, outer, n, inner, plan, _, _), (even, h, hb), (rr, ri, cw), (hr, hi) = \
            self.real_driver("c2r")
        b = self.b
        zero = self.const(0.0)

        def row(o, i, inner):
            base = self.row_base(o, i, hb, inner)
            obase = self.row_base(o, i, n, inner)
            with b.if_else(even) as (is_even, is_odd):
                with is_even:
                    def merge(k):
                        """conj(Z_k), Z_k = (X_k + conj X_{h-k}) + i conj(W^k) (X_k - conj
                        X_{h-k}), for 0 < k < h."""
                        ar, ai = self.cload(src, self.elem(base, k, inner))
                        yr, yi = self.cload(src, self.elem(base, b.sub(h, k), inner))
                        sr, si = b.fadd(ar, yr), b.fsub(ai, yi)
                        dr, di = b.fsub(ar, yr), b.fadd(ai, yi)
                        ur, ui = self.cmul(self.ld(hr, k), b.fneg(self.ld(hi, k)), dr, di)
                        self.st(b.fsub(sr, ui), rr, k)
                        self.st(b.fneg(b.fadd(si, ur)), ri, k)

                    def scatter(k):
                        k2 = b.mul(k, _i64(2))
                        self.store(self.ld(cr, k), dst, self.elem(obase, k2, inner))
                        self.store(b.fneg(self.ld(ci, k)), dst,
                                self.elem(obase, b.add(k2, _i64(1)), inner))
                    first = self.load(src, b.mul(base, _i64(2)))         # the real parts of
                    last = self.load(src, b.mul(self.elem(base, h, inner), _i64(2)))  # 0 and h
                    self.st(b.fadd(first, last), rr, _i64(0))
                    self.st(b.fsub(last, first), ri, _i64(0))
                    self.loop(1, h, merge, "mg")
                    cr, ci = self.transform(rr, ri, cw, h, plan)
                    self.loop(0, h, scatter, "sc")
                with is_odd:
                    def complete(k):        # conj of the Hermitian completion Y
                        low = b.icmp_signed("<=", k, h)
                        j = b.select(low, k, b.sub(n, k))
                        vr, vi = self.cload(src, self.elem(base, j, inner))
                        vi = b.select(b.icmp_signed("==", k, _i64(0)), zero,
                                      b.select(low, b.fneg(vi), vi))
                        self.st(vr, rr, k)
                        self.st(vi, ri, k)

                    def real(k):
                        self.store(self.ld(cr_odd, k), dst, self.elem(obase, k, inner))
                    self.loop(0, n, complete, "hc")
                    cr_odd, _ = self.transform(rr, ri, cw, n, plan)
                    self.loop(0, n, real, "re")
        self.rows(outer, inner, row)
        b.ret_void()


# The work area of the last call is kept for the next one up to this size: a fresh large
# malloc is a fresh mmap whose pages fault in on first touch (measured: the complex FFT of
# 2^20 points took 45 ms per call instead of 24 ms).
SPARE_MAX = 64 << 20
_HEADER = 64                            # the area's size, and the data stays 64-byte aligned


def work_functions(module, prefix="tj_fft"):
    """``ptr <prefix>_acquire(i64 bytes)`` (NULL when out of memory) and ``void
    <prefix>_release(ptr)``: one spare area, taken and given back by atomic exchange, so calls
    from several threads each own the area they hold (the sort library has its own)."""
    spare = ir.GlobalVariable(module, PTR, f"{prefix}_spare")
    spare.linkage = "internal"
    spare.initializer = ir.Constant(PTR, None)
    malloc, free = stacks.libc(module, "malloc"), stacks.libc(module, "free")
    null = ir.Constant(PTR, None)

    fn = ir.Function(module, ir.FunctionType(PTR, [I64]), f"{prefix}_acquire")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    nbytes = fn.args[0]
    p = b.atomic_rmw("xchg", spare, null, "acq_rel")
    with b.if_then(b.icmp_unsigned("!=", p, null)):
        with b.if_then(b.icmp_unsigned(">=", b.load(p, typ=I64), nbytes)):
            b.ret(b.gep(p, [_i64(_HEADER)], source_etype=I8))
        b.call(free, [p])
    q = b.call(malloc, [b.add(nbytes, _i64(_HEADER))])
    with b.if_then(b.icmp_unsigned("==", q, null), likely=False):
        b.ret(null)
    b.store(nbytes, q)
    b.ret(b.gep(q, [_i64(_HEADER)], source_etype=I8))

    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), f"{prefix}_release")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    p = b.gep(fn.args[0], [_i64(-_HEADER)], source_etype=I8)
    with b.if_then(b.icmp_unsigned(">", b.load(p, typ=I64), _i64(SPARE_MAX))):
        b.call(free, [p])
        b.ret_void()
    b.call(free, [b.atomic_rmw("xchg", spare, p, "acq_rel")])
    b.ret_void()


def build_module() -> ir.Module:
    """The library module: every function for both element types, and the work areas'."""
    module = ir.Module(name="tj_fft")
    for c in TYPES:
        _Lib(module, c)
    work_functions(module)
    return module


FUNCTIONS = ("c2c", "r2c", "c2r")
_compiled = False
_lock = threading.Lock()
jit.register_fork_lock(_lock)         # held around the library's compile


def ensure_compiled() -> None:
    """Compile the library into the process once (opt 3: the stage loops want the loop
    vectoriser) and register its entry points for kernel modules that declare them."""
    global _compiled
    if _compiled:
        return
    with _lock:
        if _compiled:
            return
        jit.compile_library("fft", build_module, objects.source_key(__file__, ffttables.__file__),
                            opt=3)
        syms = [f"tj_fft_{name}_{c}" for c in TYPES for name in FUNCTIONS]
        for sym in syms + ["tj_fft_acquire", "tj_fft_release"]:
            jit.add_symbol(sym, jit.function_address(sym))
        _compiled = True


def declare(module, name: str, c: str = "") -> ir.Function:
    """The declaration of ``tj_fft_<name>_<c>`` (or of ``tj_fft_acquire`` / ``release``) in a
    kernel module."""
    sym = f"tj_fft_{name}_{c}" if c else f"tj_fft_{name}"
    fn = module.globals.get(sym)
    if fn is None and not c:
        sig = ir.FunctionType(PTR, [I64]) if name == "acquire" else \
            ir.FunctionType(ir.VoidType(), [PTR])
        fn = ir.Function(module, sig, sym)
    if fn is None:
        args = [PTR, PTR, I64, I64, I64] + ([F64, PTR, PTR] if name == "c2c" else [PTR] * 3)
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), args), sym)
    return fn


def table_ref(module, symbol: str):
    """The address of a registered table, as an external global of ``module``."""
    g = module.globals.get(symbol)
    if g is None:
        g = ir.GlobalVariable(module, ir.IntType(8), symbol)
        g.linkage = "external"
    return g
