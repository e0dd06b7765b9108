"""CPython-ABI entry points for compiled graphs.

A compiled graph is ``i32 @kernel(ptr %bufs)``: ``bufs`` holds one data pointer per input leaf,
then one per output leaf. ``emit_entry`` adds, to the kernel's own ``ir.Module``, an entry point
with the vectorcall prototype

    ptr @tj_entry_N(ptr %cache, ptr %args, i64 %nargsf, ptr %kwnames)

that unboxes and checks the arguments for exactly one signature, allocates (or reuses, see
below) the outputs, runs the kernel and boxes the result. On any mismatch it returns the
sentinel ``NOMATCH`` (the pointer value 1) without touching any reference count, so a dispatcher
(``pyabi_dispatch.FastDispatch``) can try the next specialisation and finally a Python fallback
with the original arguments.
Entries never raise for a mismatch; they return NULL (with an exception set) only for a real
error: allocation failure or a nonzero kernel code, which goes through ``spec.on_error(code)``.

Invariants:
- all checks are pointer compares against process constants registered with ``jit.add_symbol``
  under stable names (``tj_PyArray_Type``, ``tj_PyArray_Empty``, ``tj_descr_<dtype name>``), so
  the IR itself does not depend on the process;
- array inputs must be exactly ``ndarray`` with the canonical descr singleton of the dtype, the
  signature's shape, and C_CONTIGUOUS|ALIGNED; scalars must be exactly float/int/complex/bool
  or exactly the NumPy scalar type of the signature (``tj_sctype_<dtype name>``);
- an argument the function writes into (``EntrySpec.writes``) must also be WRITEABLE and share
  no byte with another array argument (C-contiguous extents compared), since the kernel was
  compiled for separate arrays; it is written in place by the kernel or copied in after the
  kernel succeeded, never half-written by a failing call;
- a 0-d output is returned as a NumPy scalar (``np.float64`` ...), as NumPy's own operators do:
  the kernel writes it into a stack slot and ``PyArray_Scalar`` boxes it, which is cheaper than
  allocating a 0-d array (``scalar_0d=False`` in the spec gives 0-d arrays instead);
- struct offsets are checked at import (``pyobj.NATIVE_OK``); if a check fails, ``build_entry``
  returns a pure-Python entry with the same contract instead of native code.

The object layout and the IR helpers that read it are in ``pyobj.py``. Large outputs are reused
from call to call when no Python code can tell (``pyabi_reuse``): the first argument of an entry
(``self`` in a vectorcall) is the dispatch table's cell for the entry's output cache.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from ..engine import jit
from . import pyabi_reuse, pyobj
from .pyobj import (_KEEP, ARR_DATA, ARR_DESCR, ARR_DIMS, ARR_FLAGS, ARR_ND, COMPLEX_IMAG,
                    COMPLEX_REAL, FLOAT_VAL, NPSCALAR_VAL, NPY_WRITEABLE, OB_TYPE, TUPLE_ITEMS,
                    declare,
                    descr_symbol, external, f32, f64, field_ptr, i1, i8, i32, i64, load_at,
                    ptr)

NOMATCH = 1                     # pointer value an entry returns for "not my signature"
NARGS_MASK = (1 << 63) - 1      # clears PY_VECTORCALL_ARGUMENTS_OFFSET from nargsf

_SCALAR_KIND = {float: "f", int: "i", complex: "c", bool: "b"}
# Python scalar kind -> dtype kinds it may be converted to (same_kind, like NumPy's weak scalars).
_ALLOWED = {"b": "biufc", "i": "iufc", "f": "fc", "c": "c"}
_SCALAR_TYPE = {"f": "PyFloat_Type", "i": "PyLong_Type", "c": "PyComplex_Type", "b": "PyBool_Type"}


@dataclass(frozen=True)
class EntrySpec:
    """One signature of a compiled graph.

    inputs:  per input leaf ``("array", dtype, shape)``, ``("pyscalar", type, dtype)`` where
             ``type`` is float, int, complex or bool, or ``("npscalar", scalar type, dtype)``
             (exactly ``np.float64``, ``np.int32``...: its value is the argument's);
    outputs: per output leaf ``(dtype, shape)``;
    return_tuple: return a tuple of arrays (required when there is not exactly one output);
    release_gil: drop the GIL around the kernel call (worth it only for large work);
    scalar_0d: return 0-d outputs as NumPy scalars (default) rather than 0-d arrays;
    on_error: ``on_error(code)`` raises the exception for a nonzero kernel return code;
    tier: None, or a ``TierCell`` (the hot tier, ``tiers.py``): the entry then calls the
          kernel through the cell's ``kernel`` pointer (which a tier-up overwrites) and
          decrements its ``countdown`` on each call, calling ``hook()`` when it reaches 0;
    writes: per array argument the function writes into (NumPy mutation, ``api.WriteBack``),
          ``(input i, output j, in_place)``: output j is argument i's new value (same dtype
          and shape). The entry takes only a WRITEABLE argument i that overlaps no other array
          argument; ``in_place``: the kernel writes it into argument i's buffer (the plan
          allows it, ``plan/inplace.py``), else it is copied in after the kernel succeeded;
    returns: how many leading outputs the call returns (None: all); with 0 and not
          ``return_tuple`` it returns None (a function without a return statement);
    aliases: ``(k, i)``: returned output k is the written argument i itself (``x += 1;
          return x``), returned as the caller's array.
    """
    inputs: tuple
    outputs: tuple
    return_tuple: bool = False
    release_gil: bool = False
    scalar_0d: bool = True
    on_error: object = field(default=None, compare=False)
    tier: object = field(default=None, compare=False)
    writes: tuple = ()
    returns: int | None = None
    aliases: tuple = ()

    def normalized(self) -> "EntrySpec":
        ins = []
        for leaf in self.inputs:
            if leaf[0] == "array":
                ins.append(("array", np.dtype(leaf[1]), tuple(int(d) for d in leaf[2])))
            elif leaf[0] == "pyscalar":
                if leaf[1] not in _SCALAR_KIND:
                    raise TypeError(f"pyscalar type must be float/int/complex/bool: {leaf[1]!r}")
                dt, kind = np.dtype(leaf[2]), _SCALAR_KIND[leaf[1]]
                if dt.kind not in _ALLOWED[kind]:
                    raise TypeError(f"tracejit: cannot pass a Python {leaf[1].__name__} as {dt}")
                ins.append(("pyscalar", leaf[1], dt))
            elif leaf[0] == "npscalar":
                dt = np.dtype(leaf[2])
                if dt.kind not in "biufc" or dt.itemsize > 8 * (1 + (dt.kind == "c")):
                    raise TypeError(f"tracejit: no native NumPy-scalar argument of {dt}")
                ins.append(("npscalar", dt.type, dt))
            else:
                raise ValueError(f"bad input leaf {leaf!r}")
        outs = tuple((np.dtype(dt), tuple(int(d) for d in shape)) for dt, shape in self.outputs)
        n_ret = len(outs) if self.returns is None else int(self.returns)
        if not 0 <= n_ret <= len(outs):
            raise ValueError(f"returns={self.returns} with {len(outs)} outputs")
        if n_ret > 1 and not self.return_tuple:
            raise ValueError("several outputs need return_tuple=True")
        writes = tuple((int(i), int(j), bool(p)) for i, j, p in self.writes)
        for i, j, _ in writes:
            if not (0 <= i < len(ins) and ins[i][0] == "array" and n_ret <= j < len(outs)
                    and outs[j] == ins[i][1:]):
                raise ValueError(f"bad write {(i, j)}: output j must be array input i's new "
                                 f"value, after the returned outputs")
        if len({i for i, _, _ in writes}) < len(writes) or \
                len({j for _, j, _ in writes}) < len(writes):
            raise ValueError("each argument and output is written back at most once")
        aliases = tuple((int(k), int(i)) for k, i in self.aliases)
        written = {i for i, _, _ in writes}
        # (an output that is the written argument itself: the argument's type, or a 0-d
        # placeholder of its dtype, which the trace returns there instead of a copy)
        if any(not 0 <= k < n_ret or i not in written or
               outs[k] not in (ins[i][1:], (ins[i][1], ())) for k, i in aliases):
            raise ValueError(f"bad aliases {aliases}: a returned output that is a written array")
        return EntrySpec(tuple(ins), outs, bool(self.return_tuple), bool(self.release_gil),
                         bool(self.scalar_0d),
                         default_on_error if self.on_error is None else self.on_error,
                         self.tier, writes, n_ret, aliases)


class TierCell(ctypes.Structure):
    """What a tiered entry reads (``EntrySpec.tier``): the countdown to the hot tier, the current
    kernel and the hook (a borrowed ``PyObject*``, kept alive by the cell's owner). Cells are
    never freed (``_KEEP``): an entry may outlive its executable by the rest of one call."""
    _fields_ = [("countdown", ctypes.c_int64), ("kernel", ctypes.c_void_p),
                ("hook", ctypes.c_void_p)]

    def symbol(self) -> str:
        """A process-unique symbol whose address is this cell (registered once)."""
        name = getattr(self, "_symbol", None)
        if name is None:
            name = self._symbol = jit.unique_name("tj_tier")
            _KEEP.append(self)
            jit.add_symbol(name, ctypes.addressof(self))
        return name


def default_on_error(code):
    """The ``on_error`` used when a spec gives none."""
    raise RuntimeError(f"tracejit: compiled kernel failed with error code {code}")


_on_error_symbols = {}


def _on_error_symbol(on_error) -> str:
    # Kept forever: an evicted entry may still be running (GIL released) and then call it.
    name = _on_error_symbols.get(id(on_error))
    if name is None:
        name = _on_error_symbols[id(on_error)] = jit.unique_name("tj_onerr")
        _KEEP.append(on_error)
        jit.add_symbol(name, id(on_error))
    return name


def _slot_type(dt):
    if dt.kind == "c":
        return ir.ArrayType(f32 if dt.itemsize == 8 else f64, 2)
    if dt.kind == "f":
        return {2: ir.HalfType(), 4: f32, 8: f64}[dt.itemsize]   # float16: 0-d results only
    return ir.IntType(8 * dt.itemsize)


def _int_range_ok(b, v, dt):
    """i1: the i64 ``v`` fits the integer dtype ``dt``."""
    info = np.iinfo(dt)
    lo, hi = max(info.min, -(1 << 63)), min(info.max, (1 << 63) - 1)
    ok = b.icmp_signed(">=", v, ir.Constant(i64, lo))
    return b.and_(ok, b.icmp_signed("<=", v, ir.Constant(i64, hi)))


def _convert_scalar(b, kind, val, dt):
    """Convert an unboxed Python scalar (kind b/i/f/c) to the slot value of dtype ``dt``."""
    if kind not in _ALLOWED or dt.kind not in _ALLOWED[kind]:
        raise TypeError(f"tracejit: cannot pass a Python {kind!r} scalar as {dt}")
    ty = _slot_type(dt)
    if dt.kind == "c":
        el = ty.element
        if kind == "c":
            re, im = val
            re, im = (b.fptrunc(re, el), b.fptrunc(im, el)) if el == f32 else (re, im)
        else:
            real_dt = np.dtype(np.float32 if el == f32 else np.float64)
            re, im = _convert_scalar(b, kind, val, real_dt), ir.Constant(el, 0.0)
        out = b.insert_value(ir.Constant(ty, ir.Undefined), re, 0)
        return b.insert_value(out, im, 1)
    if dt.kind == "f":
        if kind == "f":
            return b.fptrunc(val, ty) if ty == f32 else val
        if kind == "b":
            return b.uitofp(val, ty)
        return b.sitofp(val, ty)
    if kind == "b":
        return b.zext(val, ty)
    return b.trunc(val, ty) if ty.width < 64 else val


# ---------------------------------------------------------------------------------------------
# The entry point

def emit_entry(module, kernel_fn, spec) -> ir.Function:
    """Emit into ``module`` the CPython-ABI entry for ``kernel_fn`` and signature ``spec``.

    The entry has the vectorcall prototype ``ptr (ptr cache, ptr args, i64 nargsf, ptr kwnames)``
    and returns a new reference, NULL with an exception set, or ``NOMATCH`` (pointer value 1)
    when the arguments are not exactly this signature. ``cache`` is NULL or a cell holding NULL
    or the entry's output cache (``pyabi_reuse``). Symbols it needs are registered here, so
    compile the module afterwards (``jit.compile_ir``).
    """
    spec = spec.normalized()
    n_in, n_out = len(spec.inputs), len(spec.outputs)
    fn = ir.Function(module, ir.FunctionType(ptr, [ptr, ptr, i64, ptr]), jit.unique_name("tj_entry"))
    cache, args, nargsf, kwnames = fn.args
    cache.name, args.name, nargsf.name, kwnames.name = "cache", "args", "nargsf", "kwnames"

    incref = declare(module, "Py_IncRef", ir.VoidType(), [ptr])
    decref = declare(module, "Py_DecRef", ir.VoidType(), [ptr])
    nomatch_val = ir.Constant(i64, NOMATCH).inttoptr(ptr)

    entry = fn.append_basic_block("entry")
    nomatch = fn.append_basic_block("nomatch")
    b = ir.IRBuilder(nomatch)
    b.ret(nomatch_val)

    b = ir.IRBuilder(entry)
    bufs = b.alloca(ir.ArrayType(ptr, n_in + n_out), name="bufs")
    slots = [b.alloca(_slot_type(leaf[2]), name=f"arg{i}.slot") if leaf[0] != "array" else None
             for i, leaf in enumerate(spec.inputs)]
    overflow = b.alloca(i32, name="overflow")

    def require(cond, what):
        """Continue in a fresh block if ``cond``, else go to ``nomatch``."""
        nonlocal b
        ok = fn.append_basic_block(what)
        b.cbranch(cond, ok, nomatch)
        b = ir.IRBuilder(ok)

    def set_buf(i, p):
        b.store(p, b.gep(bufs, [ir.Constant(i64, 0), ir.Constant(i64, i)]))

    require(b.icmp_unsigned("==", kwnames, ir.Constant(ptr, None)), "no_kwargs")
    nargs = b.and_(nargsf, ir.Constant(i64, NARGS_MASK))
    require(b.icmp_unsigned("==", nargs, ir.Constant(i64, n_in)), "nargs_ok")

    written = {i: (j, in_place) for i, j, in_place in spec.writes}
    objs, data = {}, {}                      # array input -> its object, its data pointer
    for i, leaf in enumerate(spec.inputs):
        obj = b.load(b.gep(args, [ir.Constant(i64, i)], source_etype=ptr), typ=ptr, name=f"arg{i}")
        tp = load_at(b, obj, OB_TYPE, ptr)
        if leaf[0] == "array":
            _, dt, shape = leaf
            require(b.icmp_unsigned("==", tp, external(module, "tj_PyArray_Type")), f"arg{i}.type")
            descr = load_at(b, obj, ARR_DESCR, ptr)
            require(b.icmp_unsigned("==", descr, external(module, descr_symbol(dt))), f"arg{i}.dtype")
            nd = load_at(b, obj, ARR_ND, i32)
            need = 0x101 | (NPY_WRITEABLE if i in written else 0)   # + WRITEABLE if written
            flags = b.and_(load_at(b, obj, ARR_FLAGS, i32), ir.Constant(i32, need))
            ok = b.and_(b.icmp_signed("==", nd, ir.Constant(i32, len(shape))),
                        b.icmp_signed("==", flags, ir.Constant(i32, need)))
            require(ok, f"arg{i}.layout")
            if shape:
                dims = load_at(b, obj, ARR_DIMS, ptr)
                ok = ir.Constant(i1, 1)
                for d, extent in enumerate(shape):
                    dim = b.load(b.gep(dims, [ir.Constant(i64, d)], source_etype=i64), typ=i64)
                    ok = b.and_(ok, b.icmp_signed("==", dim, ir.Constant(i64, extent)))
                require(ok, f"arg{i}.shape")
            objs[i], data[i] = obj, load_at(b, obj, ARR_DATA, ptr)
            set_buf(i, data[i])
            continue
        if leaf[0] == "npscalar":            # exactly the NumPy scalar type: its value as is
            dt = leaf[2]
            sctype = external(module, pyobj.scalar_type_symbol(dt))
            require(b.icmp_unsigned("==", tp, sctype), f"arg{i}.type")
            b.store(load_at(b, obj, NPSCALAR_VAL, _slot_type(dt)), slots[i])
            set_buf(i, slots[i])
            continue
        _, pytype, dt = leaf
        kind = _SCALAR_KIND[pytype]
        require(b.icmp_unsigned("==", tp, external(module, _SCALAR_TYPE[kind])), f"arg{i}.type")
        if kind == "f":
            val = load_at(b, obj, FLOAT_VAL, f64)
        elif kind == "c":
            val = (load_at(b, obj, COMPLEX_REAL, f64), load_at(b, obj, COMPLEX_IMAG, f64))
        elif kind == "b":
            val = b.icmp_unsigned("==", obj, external(module, "_Py_TrueStruct"))
        else:
            as_ll = declare(module, "PyLong_AsLongLongAndOverflow", i64, [ptr, ptr])
            val = b.call(as_ll, [obj, overflow])
            # An exact int cannot fail except by overflow, which sends it to the fallback.
            require(b.icmp_signed("==", b.load(overflow), ir.Constant(i32, 0)), f"arg{i}.fits")
            if dt.kind in "iu":
                require(_int_range_ok(b, val, dt), f"arg{i}.range")
        b.store(_convert_scalar(b, kind, val, dt), slots[i])
        set_buf(i, slots[i])

    # A written argument sharing memory with another array argument: the trace took them as
    # separate arrays, so the Python path decides (it raises, naming both).
    nbytes = {i: _nbytes(leaf) for i, leaf in enumerate(spec.inputs) if leaf[0] == "array"}
    for i in written:
        for m in data:
            if m != i and nbytes[i] and nbytes[m] and (m not in written or m > i):
                require(b.not_(_overlap(b, data[i], nbytes[i], data[m], nbytes[m])),
                        f"arg{i}.apart{m}")

    if spec.tier is not None:
        tier_cell = external(module, spec.tier.symbol())
        _count_call(b, module, tier_cell)

    # Outputs. PyArray_Empty steals the descr reference, so take one first. 0-d outputs that
    # become NumPy scalars, and 0-d values that are never returned, are written to a stack slot
    # (boxed after the kernel, or copied back). Large outputs come from the cache list when
    # they can (``pyabi_reuse``); ``dropped`` are the references pushed out of it, released
    # when the call is over. An output written in place is the argument's own buffer.
    empty = declare(module, "tj_PyArray_Empty", ptr, [i32, ptr, ptr, i32])
    allocated, slots_out, dropped = {}, {}, []      # output j -> array / stack slot
    cached = pyabi_reuse.cached_outputs(spec)
    if cached:
        b, items = pyabi_reuse.emit_cache_items(b, module, cache, len(cached))
    aliased = dict(spec.aliases)                    # returned k -> written argument i
    n_ret = spec.returns
    back = {j: i for i, (j, in_place) in written.items() if not in_place}   # copied back

    def fail_with(b, cleanup):
        """Emit: decref ``cleanup`` (NULL allowed), return NULL (exception already set)."""
        for o in cleanup:
            b.call(decref, [o])
        b.ret(ir.Constant(ptr, None))

    def new_array(b, j, dt, shape):
        shape_ty = ir.ArrayType(i64, max(len(shape), 1))
        gshape = ir.GlobalVariable(module, shape_ty, f"{fn.name}.shape{j}")
        gshape.global_constant, gshape.linkage = True, "internal"
        gshape.initializer = ir.Constant(shape_ty, list(shape) or [0])
        descr = external(module, descr_symbol(dt))
        b.call(incref, [descr])
        out = b.call(empty, [ir.Constant(i32, len(shape)), gshape, descr, ir.Constant(i32, 0)],
                     name=f"out{j}")
        with b.if_then(b.icmp_unsigned("==", out, ir.Constant(ptr, None)), likely=False):
            fail_with(b, list(allocated.values()) + dropped)
        return out

    in_place = {j: i for i, (j, p) in written.items() if p}
    for j, (dt, shape) in enumerate(spec.outputs):
        if j in in_place:
            set_buf(n_in + j, data[in_place[j]])
            continue
        if not shape and (spec.scalar_0d or j >= n_ret or j in aliased):
            with b.goto_entry_block():
                slot = b.alloca(_slot_type(dt), name=f"out{j}.slot")
            slot.align = 16
            slots_out[j] = slot
            set_buf(n_in + j, slot)
            continue
        if j in cached:
            b, out, old = pyabi_reuse.emit_output(b, module, items, cached.index(j), dt, shape,
                                                  lambda b: new_array(b, j, dt, shape))
            dropped.append(old)
        else:
            out = new_array(b, j, dt, shape)
        allocated[j] = out
        set_buf(n_in + j, load_at(b, out, ARR_DATA, ptr))

    if spec.release_gil:
        tstate = b.call(declare(module, "PyEval_SaveThread", ptr, []), [])
    if spec.tier is not None:            # the current kernel of the tier cell (see _count_call)
        kernel_fn = b.load(field_ptr(b, tier_cell, 8), typ=kernel_fn.ftype.as_pointer())
    rc = b.call(kernel_fn, [bufs], name="rc")
    if spec.release_gil:
        b.call(declare(module, "PyEval_RestoreThread", ir.VoidType(), [ptr]), [tstate])

    failed = b.icmp_signed("!=", rc, ir.Constant(rc.type, 0))
    with b.if_then(failed, likely=False):
        _emit_kernel_error(b, module, spec.on_error, rc)
        fail_with(b, list(allocated.values()) + dropped)

    # The kernel succeeded: the new values of the arguments not written in place go in now
    # (all after the kernel, as the Python path's copies: an error never leaves one half-done).
    for j, i in back.items():
        src = slots_out[j] if j in slots_out else load_at(b, allocated[j], ARR_DATA, ptr)
        _memcpy(b, module, data[i], src, nbytes[i])

    results, made = [], []
    for j in range(n_ret):
        if j in aliased:                 # the caller's array, as NumPy returns it
            obj = objs[aliased[j]]
            b.call(incref, [obj])
            made.append(obj)
            results.append(obj)
        elif j in allocated:
            results.append(allocated[j])
        else:
            dt = spec.outputs[j][0]
            box = declare(module, "tj_PyArray_Scalar", ptr, [ptr, ptr, ptr])
            descr = external(module, descr_symbol(dt))
            sc = b.call(box, [slots_out[j], descr, ir.Constant(ptr, None)], name=f"out{j}")
            with b.if_then(b.icmp_unsigned("==", sc, ir.Constant(ptr, None)), likely=False):
                fail_with(b, list(allocated.values()) + made + dropped)
            made.append(sc)
            results.append(sc)
    # arrays the call does not return: copied back, or standing in for an aliased output
    scratch = [o for j, o in allocated.items() if j >= n_ret or j in aliased]

    if not spec.return_tuple:
        if results:
            result = results[0]
        else:                            # the function returned None
            result = external(module, "_Py_NoneStruct")
            b.call(incref, [result])
    else:
        result = b.call(declare(module, "PyTuple_New", ptr, [i64]), [ir.Constant(i64, n_ret)])
        with b.if_then(b.icmp_unsigned("==", result, ir.Constant(ptr, None)), likely=False):
            kept = [o for j, o in allocated.items() if j < n_ret and j not in aliased]
            fail_with(b, kept + made + scratch + dropped)
        for j, out in enumerate(results):   # PyTuple_SET_ITEM: the tuple takes our reference
            b.store(out, field_ptr(b, result, TUPLE_ITEMS + 8 * j))
    for old in scratch + dropped:    # last: freeing an array may run Python code (weakrefs)
        b.call(decref, [old])
    b.ret(result)
    return fn


def _nbytes(leaf) -> int:
    """Bytes of an ``("array", dtype, shape)`` input leaf."""
    return int(np.prod(leaf[2], dtype=np.int64)) * leaf[1].itemsize


def _overlap(b, p, n, q, m):
    """i1: the byte ranges [p, p+n) and [q, q+m) intersect (n, m > 0: Python ints)."""
    p, q = b.ptrtoint(p, i64), b.ptrtoint(q, i64)
    return b.and_(b.icmp_unsigned("<", p, b.add(q, ir.Constant(i64, m))),
                  b.icmp_unsigned("<", q, b.add(p, ir.Constant(i64, n))))


def _memcpy(b, module, dst, src, n):
    if n:
        fn = declare(module, "llvm.memcpy.p0.p0.i64", ir.VoidType(), [ptr, ptr, i64, i1])
        b.call(fn, [dst, src, ir.Constant(i64, n), ir.Constant(i1, 0)])


def _count_call(b, module, cell):
    """``if --cell.countdown == 0: cell.hook()`` (GIL held, nothing allocated yet); an
    exception from the hook is cleared (the hook is not supposed to raise)."""
    left = b.sub(load_at(b, cell, 0, i64), ir.Constant(i64, 1))
    b.store(left, b.bitcast(cell, i64.as_pointer()))
    with b.if_then(b.icmp_signed("==", left, ir.Constant(i64, 0)), likely=False):
        hook = load_at(b, cell, 16, ptr)
        vcall = declare(module, "PyObject_Vectorcall", ptr, [ptr, ptr, i64, ptr])
        null = ir.Constant(ptr, None)
        res = b.call(vcall, [hook, null, ir.Constant(i64, 0), null])
        with b.if_else(b.icmp_unsigned("==", res, null)) as (failed, done):
            with failed:
                b.call(declare(module, "PyErr_Clear", ir.VoidType(), []), [])
            with done:
                b.call(declare(module, "Py_DecRef", ir.VoidType(), [ptr]), [res])


def _emit_kernel_error(b, module, on_error, rc):
    """Call ``on_error(rc)`` so that it sets the exception (it should raise)."""
    incref = declare(module, "Py_IncRef", ir.VoidType(), [ptr])
    decref = declare(module, "Py_DecRef", ir.VoidType(), [ptr])
    on_err = external(module, _on_error_symbol(on_error))
    code = b.call(declare(module, "PyLong_FromLongLong", ptr, [i64]), [b.sext(rc, i64)])
    have_code = b.icmp_unsigned("!=", code, ir.Constant(ptr, None))
    with b.if_then(have_code):
        argv = b.alloca(ptr)
        b.store(code, argv)
        vcall = declare(module, "PyObject_Vectorcall", ptr, [ptr, ptr, i64, ptr])
        b.call(incref, [on_err])
        res = b.call(vcall, [on_err, argv, ir.Constant(i64, 1), ir.Constant(ptr, None)])
        b.call(decref, [on_err])
        b.call(decref, [code])
        with b.if_then(b.icmp_unsigned("!=", res, ir.Constant(ptr, None))):
            # on_error returned instead of raising: drop its result and raise a generic error.
            b.call(decref, [res])
            exc = b.load(external(module, "PyExc_RuntimeError"), typ=ptr)
            msg = _cstring(module, "tracejit: kernel failed and on_error did not raise")
            b.call(declare(module, "PyErr_SetString", ir.VoidType(), [ptr, ptr]), [exc, msg])


def _cstring(module, text):
    data = bytearray(text.encode() + b"\0")
    ty = ir.ArrayType(i8, len(data))
    gv = ir.GlobalVariable(module, ty, jit.unique_name("tj_str"))
    gv.global_constant, gv.linkage, gv.initializer = True, "internal", ir.Constant(ty, data)
    return gv


# ---------------------------------------------------------------------------------------------
# Building an entry, native or pure Python

def build_entry(module, kernel_fn, spec, opt: int = 2):
    """Emit the entry, compile ``module`` and return what ``FastDispatch.add_specialization``
    takes: the entry's address (native path) or a Python entry (``pyobj.NATIVE_OK`` is False)."""
    if not pyobj.NATIVE_OK:
        jit.compile_ir(module, opt=opt)
        return python_entry(jit.function_address(kernel_fn.name), spec)
    fn = emit_entry(module, kernel_fn, spec)
    jit.compile_ir(module, opt=opt)
    address = jit.function_address(fn.name)
    pyabi_reuse.register(address, spec)
    return address


def python_entry(kernel_address: int, spec):
    """Pure-Python entry with the native contract: ``entry(args, kwargs)`` returns the result or
    ``NOMATCH``. Used when the native path is disabled, and as a reference in tests."""
    spec = spec.normalized()
    kernel = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(kernel_address)
    nbuf = len(spec.inputs) + len(spec.outputs)
    ctor = {"f": float, "i": int, "c": complex, "b": bool}

    written = {i: (j, in_place) for i, j, in_place in spec.writes}
    aliased = dict(spec.aliases)

    def entry(args, kwargs):
        if kwargs or len(args) != len(spec.inputs):
            return NOMATCH
        bufs, keep = (ctypes.c_void_p * nbuf)(), []
        for i, (leaf, a) in enumerate(zip(spec.inputs, args)):
            if leaf[0] == "array":
                if (type(a) is not np.ndarray or a.dtype is not np.dtype(leaf[1].name)
                        or a.shape != leaf[2] or not (a.flags.c_contiguous and a.flags.aligned)
                        or i in written and not a.flags.writeable):
                    return NOMATCH
                bufs[i] = a.ctypes.data
            else:
                if type(a) is not leaf[1]:
                    return NOMATCH
                dt = leaf[2]
                if dt.kind in "iu" and not np.iinfo(dt).min <= a <= np.iinfo(dt).max:
                    return NOMATCH
                if leaf[1] is int and not -(1 << 63) <= a < (1 << 63):
                    return NOMATCH
                slot = np.array(ctor[dt.kind](a) if dt.kind in "fc" else a, dtype=dt)
                keep.append(slot)
                bufs[i] = slot.ctypes.data
        arrays = [i for i, leaf in enumerate(spec.inputs) if leaf[0] == "array"]
        if any(m != i and np.shares_memory(args[i], args[m]) for i in written for m in arrays):
            return NOMATCH
        outs = [np.empty(shape, dt) for dt, shape in spec.outputs]
        for i, (j, in_place) in written.items():
            if in_place:
                outs[j] = args[i]
        for j, o in enumerate(outs):
            bufs[len(spec.inputs) + j] = o.ctypes.data
        rc = kernel(bufs)
        if rc:
            spec.on_error(rc)
            raise RuntimeError("tracejit: kernel failed and on_error did not raise")
        for i, (j, in_place) in written.items():
            if not in_place:
                np.copyto(args[i], outs[j])
        outs = outs[:spec.returns]
        if spec.scalar_0d:
            outs = [o[()] if o.ndim == 0 else o for o in outs]
        outs = [args[aliased[k]] if k in aliased else o for k, o in enumerate(outs)]
        if spec.return_tuple:
            return tuple(outs)
        return outs[0] if outs else None

    return entry
