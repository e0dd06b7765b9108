"""Native ``fft`` / ``rfft`` / ``irfft`` equations (``FftStep``): calls of the FFT library.

One internal function ``void @name(ptr slots)`` per equation. A transform over several axes is
one library call per axis, each over the rows of that axis (the array read as
``[outer, n, inner]``):

- ``fft``: the first axis from the operand into the result, the others in place in the result;
- ``rfft``: the real transform of the last listed axis into the result, then the complex ones
  in place (``numpy.fft.rfftn``'s order);
- ``irfft``: the complex inverse transforms of the other axes first, into a malloc'd copy when
  there are any (the operand is not written), then the real one into the result.

One work area serves every call (the largest any needs; ``fftlib.SPARE_MAX``: the last one
is kept for the next call); if it cannot be allocated the function sets ``ERR_NOMEM`` in the
call's error cell and writes nothing. The tables of each length are built and registered
(``ffttables.plan_table``) while the kernel is emitted, before its module is compiled, so
their symbols resolve; the library is compiled at the same time.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..abi import ERR_NOMEM
from . import fftlib, ffttables, stacks
from .ops import I8, I64, slot_pointer

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def _calls(eqn):
    """The library calls of ``eqn``: (kind, axis, shape read, output length, source, dest), the
    source and destination being "in", "out" or "tmp"."""
    x, name, axes = eqn.invars[0], eqn.prim.name, eqn.params["axes"]
    shape = list(x.ty.shape)
    if name == "fft":
        return [("c2c", a, tuple(shape), shape[a], "in" if k == 0 else "out", "out")
                for k, a in enumerate(axes)]
    if name == "rfft":
        real = ("r2c", axes[-1], tuple(shape), shape[axes[-1]], "in", "out")
        shape[axes[-1]] = shape[axes[-1]] // 2 + 1
        return [real] + [("c2c", a, tuple(shape), shape[a], "out", "out") for a in axes[:-1]]
    first = "in"
    calls = []
    for a in axes[:-1]:
        calls.append(("c2c", a, tuple(shape), shape[a], first, "tmp"))
        first = "tmp"
    calls.append(("c2r", axes[-1], tuple(shape), eqn.params["n"], first, "out"))
    return calls


def emit_fft(module, name, eqn, plan, slot_of, err_slot) -> ir.Function:
    """``void @name(ptr slots)`` computing one fft, rfft or irfft equation (module docstring)."""
    fftlib.ensure_compiled()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    (x,), (out,) = eqn.invars, eqn.outvars
    c = fftlib.code_of(x.ty.dtype)
    item = 8                            # the work area and the copy hold doubles
    calls = _calls(eqn)

    def slot_ptr(var):
        view = plan.view_of(var)
        return slot_pointer(b, fn.args[0], slot_of(view.base), view)

    if int(np.prod(x.ty.shape, dtype=np.int64)) == 0:
        b.ret_void()                    # nothing to transform (transformed axes are never 0)
        return fn
    work = max(ffttables.work_size(kind, n) for kind, _, _, n, _, _ in calls)
    tmp = int(np.prod(x.ty.shape, dtype=np.int64)) * 2 if len(calls) > 1 and \
        eqn.prim.name == "irfft" else 0
    area = b.call(fftlib.declare(module, "acquire"), [_i64((work + tmp) * item)],
                  name="fft.work")
    with b.if_then(b.icmp_unsigned("==", area, ir.Constant(PTR, None)), likely=False):
        cell = b.load(b.gep(fn.args[0], [_i64(err_slot)], source_etype=PTR), typ=PTR)
        stacks.set_error(b, cell, ERR_NOMEM)         # the caller raises MemoryError
        b.ret_void()
    ptrs = {"in": slot_ptr(x), "out": slot_ptr(out),
            "tmp": b.gep(area, [_i64(work * item)], source_etype=I8)}
    for kind, axis, shape, n, src, dst in calls:
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        table = fftlib.table_ref(module, ffttables.plan_table(ffttables.cpx_length(kind, n)))
        args = [ptrs[src], ptrs[dst], _i64(outer), _i64(n), _i64(inner)]
        if kind == "c2c":
            inverse = eqn.prim.name == "irfft" or eqn.params.get("inverse", False)
            args += [ir.Constant(fftlib.F64, -1.0 if inverse else 1.0), table, area]
        else:
            half = fftlib.table_ref(module, ffttables.half_table(n)) if n % 2 == 0 else \
                ir.Constant(PTR, None)
            args += [table, half, area]
        b.call(fftlib.declare(module, kind, c), args)
    b.call(fftlib.declare(module, "release"), [area])
    b.ret_void()
    return fn
