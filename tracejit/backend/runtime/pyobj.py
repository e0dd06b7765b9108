"""The CPython 3.11 / NumPy 2.x object layout that native entries read, and IR to read it.

Struct offsets (``OB_*``, ``ARR_*``, ...) are baked into the entries that ``pyabi.py`` emits and
into the dispatch type of ``pyabi_dispatch.py``; ``_self_check`` verifies every one of them in
this process at import, with the NumPy C-API slots and the CPython symbols the entries call.

Invariants:
- ``NATIVE_OK`` is True only when every check held; otherwise no native entry is ever built
  (``NATIVE_DISABLED_REASON`` says why) and the pure-Python entries take over;
- process constants (``tj_PyArray_Type``, ``tj_PyArray_Empty``, ``tj_descr_<dtype>``, ...) are
  registered under stable names with ``jit.add_symbol``, so the emitted IR does not depend on
  the process; the objects behind them stay alive for the process (``_KEEP``).
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
import weakref

import numpy as np
from llvmlite import ir

from ..engine import jit

# Struct offsets, CPython 3.11 default build / NumPy 2.x (checked by _self_check).
OB_REFCNT, OB_TYPE, OB_SIZE = 0, 8, 16
FLOAT_VAL = 16
COMPLEX_REAL, COMPLEX_IMAG = 16, 24
NPSCALAR_VAL = 16                    # a NumPy scalar's value (obval), after the object header
TUPLE_ITEMS = LIST_ITEMS = 24        # tuple: the items inline; list: a pointer to them
ARR_DATA, ARR_ND, ARR_DIMS, ARR_STRIDES, ARR_DESCR, ARR_FLAGS, ARR_WEAKLIST = (
    16, 24, 32, 40, 56, 64, 72)
NPY_C_CONTIGUOUS, NPY_ALIGNED, NPY_WRITEABLE = 0x1, 0x100, 0x400
_API_EMPTY, _API_ARRAY_TYPE, _API_SCALAR = 184, 2, 60      # slots of numpy's _ARRAY_API table

i1, i8, i32, i64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
f32, f64 = ir.FloatType(), ir.DoubleType()
ptr = ir.PointerType()


# ---------------------------------------------------------------------------------------------
# Process constants: NumPy C API via the capsule, offsets self-check.

def _array_api():
    from numpy._core import _multiarray_umath
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return (ctypes.c_void_p * 400).from_address(get(_multiarray_umath._ARRAY_API, None))


def _self_check() -> str | None:
    """None if every struct offset this module bakes in holds in this process, else why not."""
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return f"unsupported interpreter {sys.implementation.name} {sys.version_info[:2]}"
    if sysconfig.get_config_var("Py_GIL_DISABLED") or object.__basicsize__ != 16:
        return "unexpected PyObject header size"
    peek = lambda t, addr: t.from_address(addr).value  # noqa: E731
    a = np.arange(6.0).reshape(2, 3)
    x, z, t, view = 2.5, complex(1.5, -2.0), (a,), a[:, ::2]   # held: id() of live objects
    npf, npi, npc, npb = np.float32(1.5), np.int16(-7), np.complex128(1.5 - 2j), np.bool_(True)
    lst, ref = [a, x, z], weakref.ref(a)
    checks = [
        peek(ctypes.c_void_p, id(a) + OB_TYPE) == id(np.ndarray),
        peek(ctypes.c_void_p, id(a) + ARR_DATA) == a.ctypes.data,
        peek(ctypes.c_int32, id(a) + ARR_ND) == 2,
        peek(ctypes.c_int64, peek(ctypes.c_void_p, id(a) + ARR_DIMS) + 8) == 3,
        peek(ctypes.c_void_p, id(a) + ARR_DESCR) == id(np.dtype(np.float64)),
        peek(ctypes.c_int32, id(a) + ARR_FLAGS) & 0x101 == 0x101,
        peek(ctypes.c_int32, id(view) + ARR_FLAGS) & NPY_C_CONTIGUOUS == 0,
        peek(ctypes.c_int64, peek(ctypes.c_void_p, id(a) + ARR_STRIDES)) == 24,
        peek(ctypes.c_void_p, id(a) + ARR_WEAKLIST) == id(ref),
        peek(ctypes.c_void_p, id(view) + ARR_WEAKLIST) is None,
        peek(ctypes.c_int64, id(ref) + OB_REFCNT) == sys.getrefcount(ref) - 1,
        peek(ctypes.c_int64, id(lst) + OB_SIZE) == 3,
        peek(ctypes.c_void_p, peek(ctypes.c_void_p, id(lst) + LIST_ITEMS) + 16) == id(z),
        peek(ctypes.c_double, id(x) + FLOAT_VAL) == 2.5,
        peek(ctypes.c_double, id(z) + COMPLEX_IMAG) == -2.0,
        peek(ctypes.c_void_p, id(t) + TUPLE_ITEMS) == id(a),
        peek(ctypes.c_void_p, id(npf) + OB_TYPE) == id(np.float32),
        peek(ctypes.c_float, id(npf) + NPSCALAR_VAL) == 1.5,
        peek(ctypes.c_int16, id(npi) + NPSCALAR_VAL) == -7,
        peek(ctypes.c_double, id(npc) + NPSCALAR_VAL + 8) == -2.0,
        peek(ctypes.c_uint8, id(npb) + NPSCALAR_VAL) == 1,
        _array_api()[_API_ARRAY_TYPE] == id(np.ndarray),
        np.dtype("float64") is np.arange(2.0).dtype,
    ]
    if not all(checks):
        return f"struct offset self-check failed: {checks}"
    for name in ("PyObject_Vectorcall", "PyFloat_Type", "Py_IncRef", "PyEval_SaveThread"):
        if not jit.address_of_symbol(name):
            return f"CPython symbol {name} does not resolve"
    return None


_KEEP = []          # objects whose addresses are registered as symbols: alive for the process
_descr_symbols = {}


def _register_constants():
    api = _array_api()
    jit.add_symbol("tj_PyArray_Empty", api[_API_EMPTY])
    jit.add_symbol("tj_PyArray_Type", api[_API_ARRAY_TYPE])
    jit.add_symbol("tj_PyArray_Scalar", api[_API_SCALAR])


def descr_symbol(dtype) -> str:
    """Stable symbol name whose address is the canonical descr singleton of ``dtype``."""
    dt = np.dtype(dtype)
    name = _descr_symbols.get(dt)
    if name is None:
        if not dt.isnative or dt.fields is not None or dt.kind not in "biufc":
            raise TypeError(f"tracejit: unsupported dtype {dt!r}")
        canon = np.dtype(dt.name)
        name = f"tj_descr_{dt.name}"
        jit.add_symbol(name, id(canon))
        _KEEP.append(canon)
        _descr_symbols[dt] = name
    return name


def scalar_type_symbol(dtype) -> str:
    """Stable symbol name whose address is the NumPy scalar type of ``dtype`` (np.float64...)."""
    dt = np.dtype(dtype)
    name = f"tj_sctype_{dt.name}"
    if name not in _descr_symbols:
        jit.add_symbol(name, id(dt.type))
        _KEEP.append(dt.type)
        _descr_symbols[name] = name
    return name


try:
    NATIVE_DISABLED_REASON = _self_check()
    if NATIVE_DISABLED_REASON is None:
        _register_constants()
except Exception as exc:  # noqa: BLE001 - any surprise here means "use the Python path"
    NATIVE_DISABLED_REASON = f"self-check raised {exc!r}"
NATIVE_OK = NATIVE_DISABLED_REASON is None


# ---------------------------------------------------------------------------------------------
# IR helpers

def declare(module, name, ret, args):
    """Get or declare the function ``name`` in ``module``."""
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), name)
    return fn


def external(module, name):
    """Get or declare ``@name = external global i8`` (its address is the object)."""
    gv = module.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(module, i8, name)
    return gv


def field_ptr(b, base, offset):
    return b.gep(base, [ir.Constant(i64, offset)], source_etype=i8) if offset else base


def load_at(b, base, offset, ty):
    return b.load(field_ptr(b, base, offset), typ=ty)
