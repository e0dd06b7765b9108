"""Native ``argsort`` (stable) and ``searchsorted`` equations (``SortStep``): calls of the sort
library (``emit/sortlib.py``).

One internal function ``void @name(ptr slots)`` per equation:

- ``argsort``: the operand read as ``[outer, n, inner]`` around the sorted axis, one library call
  for all rows; the work area (``sortlib.work_bytes``) comes from the library's
  ``tj_sort_acquire`` and, if it cannot be allocated, the function sets ``ERR_NOMEM`` in the
  call's error cell and writes nothing (the caller raises MemoryError);
- ``searchsorted``: one library call over every value (the values flattened in C order).

Operands and results are contiguous views of slots (the partitioner copies others first).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..abi import ERR_NOMEM
from . import sortlib, stacks
from .ops import I64, slot_pointer

PTR = ir.PointerType()


def _i64(v):
    return ir.Constant(I64, int(v))


def emit_sort(module, name, eqn, plan, slot_of, err_slot) -> ir.Function:
    """``void @name(ptr slots)`` computing one argsort or searchsorted equation (module
    docstring)."""
    sortlib.ensure_compiled()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    out = eqn.outvars[0]
    code = sortlib.code_of(eqn.invars[0].ty.dtype)

    def slot_ptr(var):
        view = plan.view_of(var)
        return slot_pointer(b, fn.args[0], slot_of(view.base), view)

    if eqn.prim.name == "searchsorted":
        a, v = eqn.invars
        m = int(np.prod(v.ty.shape, dtype=np.int64))
        if m:
            right = 1 if eqn.params["side"] == "right" else 0
            b.call(sortlib.declare(module, "search", code),
                   [slot_ptr(a), _i64(a.ty.shape[0]), slot_ptr(v), _i64(m), slot_ptr(out),
                    _i64(right)])
        b.ret_void()
        return fn
    (x,), axis = eqn.invars, eqn.params["axis"]
    shape = x.ty.shape
    if int(np.prod(shape, dtype=np.int64)) == 0:
        b.ret_void()
        return fn
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
    area = b.call(sortlib.declare(module, "acquire"), [_i64(sortlib.work_bytes(shape[axis]))],
                  name="sort.work")
    with b.if_then(b.icmp_unsigned("==", area, ir.Constant(PTR, None)), likely=False):
        cell = b.load(b.gep(fn.args[0], [_i64(err_slot)], source_etype=PTR), typ=PTR)
        stacks.set_error(b, cell, ERR_NOMEM)
        b.ret_void()
    b.call(sortlib.declare(module, "argsort", code),
           [slot_ptr(x), slot_ptr(out), _i64(outer), _i64(shape[axis]), _i64(inner), area])
    b.call(sortlib.declare(module, "release"), [area])
    b.ret_void()
    return fn
