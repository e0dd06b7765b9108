"""Native LAPACK: numpy's OpenBLAS exports LAPACK (through LAPACKE) as well as BLAS, and JIT code
calls it directly (``emit/lapack.py``), so no linalg primitive needs NumPy between segments.

Discovery is ``blas.py``'s (the library numpy loaded, its mangling and integer width); this
module adds, on first use:
- ``tj_lapack_<x><routine>``: the LAPACKE ``*_work`` entry points (column-major layout: a
  direct call of the Fortran routine, no NaN scan, no allocation; ``info`` is the result);
- ``tj_cblas_<x>trsm``: BLAS's triangular solve (the interpreter's substitution, blocked);
- ``tj_lapack_log`` / ``tj_lapack_hypot``: libm's, the functions NumPy's slogdet uses, so the
  native determinant is NumPy's to the last bit.
Workspace sizes are asked of the routines themselves (``lwork = -1``) at compile time, for the
one matrix shape an equation has; the emitted code allocates that much per call.

Invariants: :func:`available` is True only if blas discovery succeeded, every routine listed in
``_SIGNATURES`` exists, and a ctypes call of ``dgetrf`` on a 2x2 matrix returns LAPACK's pivots
and factors (which checks the integer width). Only double-precision routines (``d``, ``z``) are
registered for LAPACK, because NumPy computes float32 and complex64 linalg in double precision
(``numpy.linalg._commonType``); trsm keeps the operand's precision, as the interpreter does.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np
from llvmlite import ir

from ..engine import jit
from . import blas

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
COL_MAJOR = 102                 # LAPACK_COL_MAJOR
ROW_MAJOR, LEFT, UPPER, LOWER, NON_UNIT, UNIT = 101, 141, 121, 122, 131, 132
NO_TRANS, TRANS, CONJ_TRANS, CONJ_NO_TRANS = 111, 112, 113, 114

# LAPACKE_<x><routine>_work argument kinds: L layout (int), C char, I lapack_int, P pointer.
# The real and complex forms of gesdd and geev differ (rwork); "r"/"c" select them.
_SIGNATURES = {
    "potrf": "LCIPI",
    "gesv": "LIIPIPPI",
    "getrf": "LIIPIP",
    "syevd": "LCCIPIPPIPI",
    "heevd": "LCCIPIPPIPIPI",
    "gesdd.r": "LCIIPIPPIPIPIP",
    "gesdd.c": "LCIIPIPPIPIPIPP",
    "geqrf": "LIIPIPPI",
    "orgqr": "LIIIPIPPI",
    "ungqr": "LIIIPIPPI",
    "geev.r": "LCCIPIPPPIPIPI",
    "geev.c": "LCCIPIPPIPIPIP",
}
_REAL = ("potrf", "gesv", "getrf", "syevd", "gesdd.r", "geqrf", "orgqr", "geev.r")
_COMPLEX = ("potrf", "gesv", "getrf", "heevd", "gesdd.c", "geqrf", "ungqr", "geev.c")


def routine_name(x, routine) -> str:
    """``dgesdd`` for ("d", "gesdd.r"): the LAPACK name of a ``_SIGNATURES`` key."""
    return x + routine.split(".")[0]


def _symbols(state):
    """{registered name: (library symbol, kinds)} of every routine, or None if one is missing."""
    out = {}
    for x, names in (("d", _REAL), ("z", _COMPLEX)):
        for r in names:
            sym = state.symbol(f"LAPACKE_{routine_name(x, r)}_work")
            if sym is None:
                return None
            out[f"tj_lapack_{routine_name(x, r)}"] = (sym, _SIGNATURES[r])
    for x in "sdcz":
        sym = state.symbol(f"cblas_{x}trsm")
        if sym is None:
            return None
        out[f"tj_cblas_{x}trsm"] = (sym, None)
    return out


def _ctypes_fn(state, sym, kinds):
    int_t = ctypes.c_int64 if state.ilp64 else ctypes.c_int32
    types = {"L": ctypes.c_int, "C": ctypes.c_char, "I": int_t, "P": ctypes.c_void_p}
    sym.argtypes = [types[k] for k in kinds]
    sym.restype = int_t
    return sym


@functools.cache
def _state():
    """(blas state, {name: (symbol, kinds)}) once registered and self-tested, else None."""
    state = blas._state()
    if state is None:
        return None
    syms = _symbols(state)
    if syms is None:
        return None
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name, (sym, _) in syms.items():
        jit.add_symbol(name, ctypes.cast(sym, ctypes.c_void_p).value)
    for name in ("log", "hypot"):
        jit.add_symbol(f"tj_lapack_{name}", ctypes.cast(getattr(libm, name),
                                                        ctypes.c_void_p).value)
    # self-test: dgetrf of [[1, 2], [3, 4]] (column-major [1, 3, 2, 4]) pivots row 2 first
    getrf = _ctypes_fn(state, *syms["tj_lapack_dgetrf"])
    a = np.array([1.0, 3.0, 2.0, 4.0])
    ipiv = np.zeros(2, np.int64 if state.ilp64 else np.int32)
    info = getrf(COL_MAJOR, 2, 2, a.ctypes.data, 2, ipiv.ctypes.data)
    if info != 0 or list(ipiv) != [2, 2] or not np.allclose(a, [3.0, 1 / 3, 4.0, 2 / 3]):
        return None
    return state, syms


def available() -> bool:
    """True if numpy's LAPACK was found, registered and passed its self-test (first call)."""
    return _state() is not None


def int_type():
    """The IR type of LAPACK's integers (i64 for numpy's ILP64 OpenBLAS)."""
    return _state()[0].int_t


def declare(module, name):
    """The declaration of ``tj_lapack_<name>`` (``dgesv``, ...) in ``module``."""
    fn = module.globals.get(f"tj_lapack_{name}")
    if fn is not None:
        return fn
    state, syms = _state()
    kinds = syms[f"tj_lapack_{name}"][1]
    it = state.int_t
    types = {"L": I32, "C": I8, "I": it, "P": PTR}
    return ir.Function(module, ir.FunctionType(it, [types[k] for k in kinds]),
                       f"tj_lapack_{name}")


def declare_trsm(module, x, scalar):
    """The declaration of ``cblas_<x>trsm`` (``scalar``: the IR type of alpha for real x; a
    pointer for complex x)."""
    fn = module.globals.get(f"tj_cblas_{x}trsm")
    if fn is not None:
        return fn
    it = _state()[0].int_t
    alpha = PTR if x in "cz" else scalar
    return ir.Function(module, ir.FunctionType(ir.VoidType(), [I32] * 5 + [it, it, alpha, PTR, it,
                                                                       PTR, it]),
                       f"tj_cblas_{x}trsm")


def declare_libm(module, name):
    """``double tj_lapack_log(double)`` / ``double tj_lapack_hypot(double, double)``."""
    fn = module.globals.get(f"tj_lapack_{name}")
    if fn is not None:
        return fn
    d = ir.DoubleType()
    return ir.Function(module, ir.FunctionType(d, [d] * (2 if name == "hypot" else 1)),
                       f"tj_lapack_{name}")


def _call(name, *args):
    """Call ``tj_lapack_<name>`` through ctypes (workspace queries); returns info."""
    state, syms = _state()
    return _ctypes_fn(state, *syms[f"tj_lapack_{name}"])(COL_MAJOR, *args)


@functools.cache
def workspace(name, *dims) -> dict:
    """Optimal workspace lengths (elements of each buffer) for one call of ``name`` (``dsyevd``,
    ``zgesdd``, ...) on a matrix of ``dims``, asked of the routine (``lwork = -1``)."""
    work = np.zeros(4)                  # room for one complex answer (in its real part)
    iwork = np.zeros(2, np.int64 if _state()[0].ilp64 else np.int32)
    rwork = np.zeros(2)
    dummy = np.zeros(4)
    d, w, i, r = dummy.ctypes.data, work.ctypes.data, iwork.ctypes.data, rwork.ctypes.data
    x, base = name[0], name[1:]
    if base in ("syevd", "heevd"):
        jobz, n = dims
        if base == "syevd":
            info = _call(name, jobz, b"L", n, d, n, d, w, -1, i, -1)
            out = {"work": work[0], "iwork": iwork[0]}
        else:
            info = _call(name, jobz, b"L", n, d, n, d, w, -1, r, -1, i, -1)
            out = {"work": work[0], "rwork": rwork[0], "iwork": iwork[0]}
    elif base == "gesdd":
        jobz, m, n, ldvt = dims
        k, mx = min(m, n), max(m, n)
        args = [jobz, m, n, d, m, d, d, m, d, ldvt, w, -1]
        info = _call(name, *(args + [i] if x == "d" else args + [r, i]))
        out = {"work": work[0], "iwork": 8 * k}
        if x == "z":                    # LAPACK's documented minimum (not queried)
            out["rwork"] = 7 * k if jobz == b"N" else \
                max(5 * k * k + 5 * k, 2 * mx * k + 2 * k * k + k)
    elif base == "geqrf":
        m, n = dims
        info = _call(name, m, n, d, m, d, w, -1)
        out = {"work": max(work[0], n)}
    elif base in ("orgqr", "ungqr"):
        m, mc, k = dims
        info = _call(name, m, mc, k, d, m, d, w, -1)
        out = {"work": max(work[0], mc)}
    elif base == "geev":
        (n,) = dims
        if x == "d":
            info = _call(name, b"N", b"V", n, d, n, d, d, d, 1, d, n, w, -1)
        else:
            info = _call(name, b"N", b"V", n, d, n, d, d, 1, d, n, w, -1, d)
        out = {"work": work[0], "rwork": 2 * n}
    else:
        raise ValueError(f"workspace: no query for {name}")
    if info != 0:
        raise RuntimeError(f"tracejit: LAPACK {name} workspace query for {dims} failed "
                           f"(info {info})")
    return {k: max(1, int(v)) for k, v in out.items()}
