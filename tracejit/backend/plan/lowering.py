"""What the native code generator can lower, as data the planner reads (no llvmlite here).

The planner decides which equations run natively before any LLVM IR exists, so the facts it
needs about the emitters are kept here as names and dtypes:

- ``NATIVE_DTYPES``: the dtypes with a register type (bool, the fixed-width integers, f32, f64);
  complex values are (re, im) pairs of their real dtype. ``STORAGE_DTYPES`` (float16) are
  loaded, stored, ``convert``-ed and bitcast natively only: ``half.py`` rewrites their arithmetic to f32.
- ``ELEMENTWISE`` / ``COMPLEX``: the primitives with a real / a complex elementwise rule. The
  rule tables themselves (``emit/ops.py`` ``EMIT``, ``emit/complex.py`` ``CEMIT``) check at
  import that their keys are exactly these names, so the planner and the emitter never disagree.
- ``MATMUL_DTYPES``: the dtypes the matmul kernels handle (``matmul/kernel.py`` checks it).
- ``COST``: rough single-core ns per element (f64) of each elementwise rule; the loop emitter
  reads it to decide on multi-threading and the hot tier to estimate a call's native time.
"""
from __future__ import annotations

import numpy as np

NATIVE_DTYPES = frozenset(np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64"))
STORAGE_DTYPES = frozenset((np.dtype("float16"),))

MATH = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos", "tan",
        "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")

ELEMENTWISE = frozenset((
    "neg", "sign", "abs", "floor", "ceil", "round", "sqrt", "isnan", "isinf", "isfinite", "not",
    "add", "sub", "mul", "div", "floordiv", "rem", "pow", "atan2", "hypot", "max", "min",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "shl", "shr",
    "integer_pow", "select", "convert", "bitcast_convert", "stop_gradient", "check", *MATH))

COMPLEX = frozenset((
    "add", "sub", "mul", "div", "neg", "conj", "real", "imag", "eq", "ne", "isnan", "isinf",
    "isfinite", "select", "convert", "exp", "log", "sqrt", "sin", "cos", "tanh", "integer_pow",
    "sinh", "cosh", "tan", "log2", "log10", "exp2", "expm1", "log1p", "stop_gradient", "abs",
    "sign", "pow", "complex", "check"))

MATMUL_DTYPES = frozenset(np.dtype(d) for d in (
    "float64", "float32", "complex128", "complex64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64"))

COST = {name: 0.05 for name in sorted(ELEMENTWISE)}
COST.update({n: 0.5 for n in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
                              "cos", "tanh", "sinh", "cosh", "arcsinh", "arccosh", "arctanh")})
COST.update({n: 2.0 for n in ("tan", "arcsin", "arccos", "arctan", "cbrt", "pow", "atan2",
                              "hypot", "floordiv", "rem")})
COST.update({"div": 0.15, "sqrt": 0.15})


def dtype_ok(dtype) -> bool:
    """Whether ``dtype`` has a register type (complex dtypes do not: they are pairs)."""
    return np.dtype(dtype) in NATIVE_DTYPES


_LOWERABLE: dict = {}     # (primitive name, dtypes) -> bool; asked once per equation per plan


def lowerable(eqn) -> bool:
    """Whether an elementwise equation has a native rule for its dtypes."""
    name = eqn.prim.name
    dts = tuple(a.ty.dtype for a in (*eqn.invars, *eqn.outvars))
    key = (name, dts)
    ok = _LOWERABLE.get(key)
    if ok is None:
        dts = [np.dtype(d) for d in dts]
        if any(d.kind == "c" for d in dts):
            ok = name in COMPLEX and all(d in NATIVE_DTYPES or d.kind == "c" for d in dts)
        elif name in ("convert", "bitcast_convert"):
            ok = all(d in NATIVE_DTYPES or d in STORAGE_DTYPES for d in dts)
        else:
            ok = name in ELEMENTWISE and all(d in NATIVE_DTYPES for d in dts)
        ok = _LOWERABLE[key] = bool(ok)
    return ok
