"""The native sort library: the stable argsort of rows and NumPy's binary search, compiled once
per process (object code cached as library code) and called from the kernels ``emit/sort.py``
emits.

Keys. Every element type maps to an unsigned 64-bit key whose unsigned order is NumPy's order
*with its ties* (NumPy's ``LT(a, b)`` is ``a < b or (b is NaN and a is not)``):

- floats: ``-0.0`` as ``+0.0`` (they are equal), every NaN as the largest key (after ``+inf``;
  all NaNs equal), otherwise the IEEE bits with the sign bit set for a positive value and every
  bit flipped for a negative one; float32 keys are zero-extended;
- signed integers: the value with its sign bit flipped, zero-extended; unsigned integers and
  bools: zero-extended.

So ``LT(a, b)`` is ``key(a) < key(b)`` exactly, and a stable sort of the keys is NumPy's stable
argsort to the index (``kind="stable"``: ties keep their order), whatever the algorithm.

Functions (``c`` is the dtype's code without byte order: ``f8 f4 i8 i4 i2 i1 u8 u4 u2 u1``;
bools use ``u1``):

- ``void tj_sort_argsort_c(in, out, outer, n, inner, work)``: for each row of the C-order
  ``[outer, n, inner]`` array ``in`` (its elements ``(o, 0..n-1, i)``), the int64 stable argsort
  into the same row of ``out``. Rows of up to ``INSERTION_MAX`` elements: insertion sort; longer
  ones: LSD radix sort by bytes (counts of all eight digits in one pass, then one stable scatter
  per digit, skipping a digit every key shares: float32 and narrower keys never scatter their
  zero high bytes). ``work`` holds ``work_bytes(n)`` bytes.
- ``void tj_sort_search_c(a, n, v, m, out, right)``: ``out[j]`` (int64) the insertion point of
  ``v[j]`` in ``a[0..n)``, by NumPy's own ``binsearch`` step for step (the bounds kept from the
  previous key), so an unsorted ``a`` gives NumPy's answer too; ``right`` selects ``<=``.
- ``ptr tj_sort_acquire(i64 bytes)`` / ``void tj_sort_release(ptr)``: the work area
  (``fftlib.work_functions``: one spare area kept between calls).

The functions keep their loop state in allocas: the library is compiled at opt 3, whose mem2reg
turns them into registers.
"""
from __future__ import annotations

import threading

import numpy as np
from llvmlite import ir

from ..engine import jit, objects
from . import fftlib
from .loops import _for
from .ops import I64

PTR = ir.PointerType()
CODES = ("f8", "f4", "i8", "i4", "i2", "i1", "u8", "u4", "u2", "u1")
INSERTION_MAX = 16
_RADIX = 256
_DIGITS = 8


def _i64(v):
    return ir.Constant(I64, int(v))


def code_of(dtype):
    """The library variant sorting ``dtype``, or None (complex, float16, other kinds)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return "u1"
    code = dt.str[1:]
    return code if code in CODES else None


def work_bytes(n: int) -> int:
    """The work area one argsort of rows of ``n`` elements needs: two key and index arrays
    (the radix sort's ping-pong) and the digit counts."""
    return 4 * 8 * n + _DIGITS * _RADIX * 8


def _elem_type(code):
    bits = int(code[1]) * 8
    if code[0] == "f":
        return ir.DoubleType() if bits == 64 else ir.FloatType()
    return ir.IntType(bits)


def _key(b, x, code):
    """The unsigned 64-bit key of element ``x`` (module docstring)."""
    bits = int(code[1]) * 8
    it = ir.IntType(bits)
    top = ir.Constant(it, 1 << (bits - 1))
    if code[0] == "f":
        x = b.select(b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0)),
                     ir.Constant(x.type, 0.0), x)           # -0.0 sorts as +0.0
        u = b.bitcast(x, it)
        k = b.select(b.icmp_signed("<", u, ir.Constant(it, 0)), b.not_(u), b.xor(u, top))
        k = b.select(b.fcmp_unordered("uno", x, x), ir.Constant(it, (1 << bits) - 1), k)
    elif code[0] == "i":
        k = b.xor(x, top)
    else:
        k = x
    return k if bits == 64 else b.zext(k, I64)


def _less(b, x, y, code):
    """NumPy's ``LT(x, y)`` on elements (``key(x) < key(y)`` without computing keys: the binary
    search compares each probe once, and the key's selects lengthen its dependency chain)."""
    if code[0] == "f":
        return b.or_(b.fcmp_ordered("<", x, y),
                     b.and_(b.fcmp_unordered("uno", y, y), b.fcmp_ordered("ord", x, x)))
    return (b.icmp_signed if code[0] == "i" else b.icmp_unsigned)("<", x, y)


class _Builder:
    """Emits one library function at a time into ``module``."""

    def __init__(self, module):
        self.m = module

    def function(self, name, args, ret=ir.VoidType(), linkage="external"):
        fn = ir.Function(self.m, ir.FunctionType(ret, args), name)
        fn.linkage = linkage
        fn.attributes.add("nounwind")
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        return fn

    def var(self, typ, init, name):
        """A mutable local (an alloca in the entry block)."""
        b = self.b
        with b.goto_entry_block():
            p = b.alloca(typ, name=name)
        b.store(init, p)
        return p

    def ld(self, p, k, typ=I64):
        return self.b.load(self.b.gep(p, [k], source_etype=typ), typ=typ)

    def st(self, v, p, k, typ=I64):
        self.b.store(v, self.b.gep(p, [k], source_etype=typ))

    def loop(self, lo, hi, body, name="k"):
        lo, hi = (v if isinstance(v, ir.Value) else _i64(v) for v in (lo, hi))
        _for(self.b, lo, hi, _i64(1), body, name)

    def while_(self, cond, body, name):
        """``while cond(): body()``; ``cond`` may branch (it returns an i1 in its last block)."""
        b = self.b
        head = b.append_basic_block(f"{name}.head")
        loop = b.append_basic_block(f"{name}.body")
        done = b.append_basic_block(f"{name}.done")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(cond(), loop, done)
        b.position_at_end(loop)
        body()
        b.branch(head)
        b.position_at_end(done)

    # the sort of (key, index) pairs ----------------------------------------------------------
    def insertion(self):
        """``void insertion(keys, idx, n)``: stable insertion sort of the pairs in place."""
        fn = self.function("tj_sort_insertion", [PTR, PTR, I64], linkage="internal")
        keys, idx, n = fn.args
        b = self.b

        def each(i):
            k, x = self.ld(keys, i), self.ld(idx, i)
            j = self.var(I64, i, "j")

            def cond():                 # j > 0 and keys[j - 1] > k (short-circuit: no keys[-1])
                jv = b.load(j, typ=I64)
                test = b.append_basic_block("ins.test")
                out = b.append_basic_block("ins.out")
                start = b.block
                b.cbranch(b.icmp_signed(">", jv, _i64(0)), test, out)
                b.position_at_end(test)
                greater = b.icmp_unsigned(">", self.ld(keys, b.sub(jv, _i64(1))), k)
                b.branch(out)
                b.position_at_end(out)
                phi = b.phi(ir.IntType(1))
                phi.add_incoming(ir.Constant(ir.IntType(1), 0), start)
                phi.add_incoming(greater, test)
                return phi

            def shift():
                jv = b.load(j, typ=I64)
                prev = b.sub(jv, _i64(1))
                self.st(self.ld(keys, prev), keys, jv)
                self.st(self.ld(idx, prev), idx, jv)
                b.store(prev, j)

            self.while_(cond, shift, "ins")
            jv = b.load(j, typ=I64)
            self.st(k, keys, jv)
            self.st(x, idx, jv)

        self.loop(1, n, each, "i")
        b.ret_void()
        return fn

    def radix(self):
        """``ptr radix(keys, idx, keys2, idx2, counts, n)``: stable LSD radix sort of the pairs;
        returns the index array (``idx`` or ``idx2``) holding the sorted order."""
        fn = self.function("tj_sort_radix", [PTR] * 5 + [I64], ret=PTR, linkage="internal")
        keys, idx, keys2, idx2, counts, n = fn.args
        for a in fn.args[:5]:
            a.add_attribute("noalias")
        b = self.b
        self.loop(0, _DIGITS * _RADIX, lambda d: self.st(_i64(0), counts, d), "z")

        def count(i):
            k = self.ld(keys, i)
            for d in range(_DIGITS):
                slot = b.add(b.and_(b.lshr(k, _i64(8 * d)), _i64(_RADIX - 1)), _i64(d * _RADIX))
                self.st(b.add(self.ld(counts, slot), _i64(1)), counts, slot)

        self.loop(0, n, count, "c")
        first = self.ld(keys, _i64(0))
        cur = [self.var(PTR, p, nm) for p, nm in ((keys, "sk"), (idx, "si"), (keys2, "dk"),
                                                   (idx2, "di"))]
        for d in range(_DIGITS):
            base = b.gep(counts, [_i64(d * _RADIX)], source_etype=I64)
            digit = b.and_(b.lshr(first, _i64(8 * d)), _i64(_RADIX - 1))
            shared = b.icmp_unsigned("==", self.ld(base, digit), n)   # every key has it
            with b.if_then(b.not_(shared)):
                self._scatter(base, cur, n, d)
        b.ret(b.load(cur[1], typ=PTR))
        return fn

    def _scatter(self, base, cur, n, d):
        """One stable pass by digit ``d``: counts -> starts, pairs src -> dst, then swap."""
        b = self.b
        total = self.var(I64, _i64(0), "start")

        def start(r):
            c = self.ld(base, r)
            s = b.load(total, typ=I64)
            self.st(s, base, r)
            b.store(b.add(s, c), total)

        self.loop(0, _RADIX, start, "s")
        sk, si, dk, di = (b.load(p, typ=PTR) for p in cur)

        def move(i):
            k = self.ld(sk, i)
            r = b.and_(b.lshr(k, _i64(8 * d)), _i64(_RADIX - 1))
            pos = self.ld(base, r)
            self.st(b.add(pos, _i64(1)), base, r)
            self.st(k, dk, pos)
            self.st(self.ld(si, i), di, pos)

        self.loop(0, n, move, "m")
        for p, v in zip(cur, (dk, di, sk, si)):
            b.store(v, p)

    # the entry points ------------------------------------------------------------------------
    def argsort(self, code, insertion, radix):
        """``tj_sort_argsort_<code>`` (module docstring)."""
        fn = self.function(f"tj_sort_argsort_{code}", [PTR, PTR, I64, I64, I64, PTR])
        src, out, outer, n, inner, work = fn.args
        b = self.b
        et = _elem_type(code)
        keys, idx = work, b.gep(work, [n], source_etype=I64)
        keys2, idx2 = b.gep(work, [b.mul(n, _i64(2))], source_etype=I64), \
            b.gep(work, [b.mul(n, _i64(3))], source_etype=I64)
        counts = b.gep(work, [b.mul(n, _i64(4))], source_etype=I64)

        def row(o):
            def col(i):
                first = b.add(b.mul(b.mul(o, n), inner), i)

                def load(j):
                    at = b.add(first, b.mul(j, inner))
                    self.st(_key(b, self.ld(src, at, et), code), keys, j)
                    self.st(j, idx, j)

                self.loop(0, n, load, "l")
                res = self.var(PTR, idx, "res")
                with b.if_else(b.icmp_signed("<=", n, _i64(INSERTION_MAX))) as (small, big):
                    with small:
                        b.call(insertion, [keys, idx, n])
                    with big:
                        b.store(b.call(radix, [keys, idx, keys2, idx2, counts, n]), res)
                order = b.load(res, typ=PTR)
                self.loop(0, n, lambda j: self.st(self.ld(order, j), out,
                                                  b.add(first, b.mul(j, inner))), "w")

            self.loop(0, inner, col, "i")

        self.loop(0, outer, row, "o")
        b.ret_void()

    def search(self, code):
        """``tj_sort_search_<code>``: NumPy's ``binsearch`` (module docstring)."""
        fn = self.function(f"tj_sort_search_{code}", [PTR, I64, PTR, I64, PTR, I64])
        a, n, v, m, out, right = fn.args
        b = self.b
        et = _elem_type(code)
        with b.if_then(b.icmp_signed("<=", m, _i64(0))):
            b.ret_void()
        with b.if_else(b.icmp_signed("!=", right, _i64(0))) as (on_right, on_left):
            for side, right_side in ((on_right, True), (on_left, False)):
                with side:              # one loop per side: no select in the binary search
                    self._search_loop(a, n, v, m, out, et, code, right_side)
        b.ret_void()

    def _search_loop(self, a, n, v, m, out, et, code, right_side):
        b = self.b

        def cmp(x, y):                  # left: LT(x, y); right: not LT(y, x)
            return b.not_(_less(b, y, x, code)) if right_side else _less(b, x, y, code)

        lo, hi = self.var(I64, _i64(0), "lo"), self.var(I64, n, "hi")
        last = self.var(et, self.ld(v, _i64(0), et), "last")

        def each(j):
            k = self.ld(v, j, et)
            h = b.load(hi, typ=I64)
            with b.if_else(cmp(b.load(last, typ=et), k)) as (up, down):
                with up:                # a larger key: keep the lower bound
                    b.store(n, hi)
                with down:
                    b.store(_i64(0), lo)
                    b.store(b.select(b.icmp_signed("<", h, n), b.add(h, _i64(1)), n), hi)
            b.store(k, last)

            def halve(probe):
                lv, hv = b.load(lo, typ=I64), b.load(hi, typ=I64)
                mid = b.add(lv, b.ashr(b.sub(hv, lv), _i64(1)))
                below = probe(self.ld(a, mid, et))
                b.store(b.select(below, b.add(mid, _i64(1)), lv), lo)
                b.store(b.select(below, hv, mid), hi)

            def search(probe):
                self.while_(lambda: b.icmp_signed("<", b.load(lo, typ=I64),
                                                  b.load(hi, typ=I64)),
                            lambda: halve(probe), "bs")

            if code[0] == "f":          # a number k: one ordered compare per probe
                with b.if_else(b.fcmp_unordered("uno", k, k)) as (nan, number):
                    with nan:
                        search(lambda x: cmp(x, k))
                    with number:
                        search(lambda x: b.fcmp_ordered("<=" if right_side else "<", x, k))
            else:
                search(lambda x: cmp(x, k))
            self.st(b.load(lo, typ=I64), out, j)

        self.loop(0, m, each, "j")


def build_module() -> ir.Module:
    """The library module: argsort and search for every key type, and the work area's."""
    module = ir.Module(name="tj_sort")
    lib = _Builder(module)
    insertion, radix = lib.insertion(), lib.radix()
    for f in (insertion, radix):
        f.attributes.add("noinline")     # called once per row from ten entry points
    for code in CODES:
        lib.argsort(code, insertion, radix)
        lib.search(code)
    fftlib.work_functions(module, "tj_sort")
    return module


FUNCTIONS = ("argsort", "search")
_compiled = False
_lock = threading.Lock()
jit.register_fork_lock(_lock)         # held around the library's compile


def ensure_compiled() -> None:
    """Compile the library into the process once and register its entry points for kernel
    modules that declare them."""
    global _compiled
    if _compiled:
        return
    with _lock:
        if _compiled:
            return
        jit.compile_library("sort", build_module, objects.source_key(__file__), opt=3)
        syms = [f"tj_sort_{name}_{c}" for c in CODES for name in FUNCTIONS]
        for sym in syms + ["tj_sort_acquire", "tj_sort_release"]:
            jit.add_symbol(sym, jit.function_address(sym))
        _compiled = True


def declare(module, name: str, code: str = "") -> ir.Function:
    """The declaration of ``tj_sort_<name>_<code>`` (or of ``tj_sort_acquire`` / ``release``)
    in a kernel module."""
    sym = f"tj_sort_{name}_{code}" if code else f"tj_sort_{name}"
    fn = module.globals.get(sym)
    if fn is not None:
        return fn
    if name == "acquire":
        sig = ir.FunctionType(PTR, [I64])
    elif name == "release":
        sig = ir.FunctionType(ir.VoidType(), [PTR])
    elif name == "argsort":
        sig = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, I64, PTR])
    else:
        sig = ir.FunctionType(ir.VoidType(), [PTR, I64, PTR, I64, PTR, I64])
    return ir.Function(module, sig, sym)
