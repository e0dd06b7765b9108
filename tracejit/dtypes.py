"""The dtypes tracejit supports and NumPy's promotion rules with weak (Python-scalar) types.

A weak type comes from a Python scalar: it adopts the kind-compatible dtype of the other operand
(``f32_array * 2.0`` stays f32), as in NumPy 2 (NEP 50) and JAX.
"""
from __future__ import annotations

import functools

import numpy as np

from .errors import DTypeError

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

INTEGERS = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
SUPPORTED = (bool_, *INTEGERS, float16, float32, float64, complex64, complex128)
SHORT = {bool_: "bool", int8: "i8", int16: "i16", int32: "i32", int64: "i64", uint8: "u8",
         uint16: "u16", uint32: "u32", uint64: "u64", float16: "f16", float32: "f32",
         float64: "f64", complex64: "c64", complex128: "c128"}
# a weak operand raises the kind only: signed and unsigned integers are one level (a Python int
# next to a uint8 array stays uint8)
_KIND_ORDER = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}

# Python scalar type -> the dtype of its weak type
WEAK_DEFAULT = {bool: bool_, int: int64, float: float64, complex: complex128}


def canonical(dtype, what="value") -> np.dtype:
    """Map a dtype-like to one of SUPPORTED, or raise a DTypeError that says what to use."""
    dt = np.dtype(dtype)
    if dt in SUPPORTED:
        return dt
    if dt.name == "bfloat16":           # NumPy has it only through ml_dtypes: not a dependency
        raise DTypeError(f"tracejit does not support bfloat16 for {what}: NumPy has no bfloat16 "
                         f"dtype of its own (ml_dtypes adds one, and tracejit depends on NumPy "
                         f"and llvmlite only); convert with .astype(numpy.float32) (exact) or "
                         f".astype(numpy.float16) for half-precision storage")
    raise DTypeError(f"tracejit does not support dtype {dt} for {what}; supported dtypes are "
                     f"{', '.join(str(d) for d in SUPPORTED)}. Convert with .astype(...) first.")


def is_float(dt) -> bool:
    return np.dtype(dt).kind == "f"


def is_complex(dt) -> bool:
    return np.dtype(dt).kind == "c"


def is_inexact(dt) -> bool:
    return np.dtype(dt).kind in "fc"


def is_int(dt) -> bool:
    """A signed or unsigned integer dtype (bool is not)."""
    return np.dtype(dt).kind in "iu"


def sum_dtype(dt) -> np.dtype:
    """NumPy's default accumulator of sum/prod/cumsum/cumprod on a 64-bit platform: bools and
    signed ints narrower than int64 go to int64, unsigned ints to uint64."""
    dt = np.dtype(dt)
    if dt.kind in "bi":
        return int64
    return uint64 if dt.kind == "u" else dt


def float_result(dt) -> np.dtype:
    """The float dtype NumPy's float ufunc loops (sin, sqrt, arctan2, ...) pick for ``dt``: the
    smallest float that holds it exactly, so bool, int8 and uint8 go to float16, int16/uint16
    to float32 and wider ints to float64."""
    dt = np.dtype(dt)
    if dt.kind in "fc":
        return dt
    return np.promote_types(dt, np.float16)


def real_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    return {complex64: float32, complex128: float64}.get(dt, dt)


def complex_dtype(dt) -> np.dtype:
    dt = np.dtype(dt)
    return {float16: complex64, float32: complex64, float64: complex128}.get(
        dt, complex128 if dt.kind in "biu" else dt)


def float_dtype(dt) -> np.dtype:
    """The inexact dtype an operation like sin/sqrt gives for ``dt`` (ints go to float64)."""
    dt = np.dtype(dt)
    return dt if dt.kind in "fc" else float64


def promote(*typed) -> tuple[np.dtype, bool]:
    """Result (dtype, weak) of combining (dtype, weak) pairs, NumPy 2 style.

    Strong types promote with np.promote_types; a weak operand only raises the *kind*
    (bool < int < float < complex), then takes the default precision of that kind unless a strong
    operand of that kind exists already.
    """
    try:
        return _promote(tuple(typed))
    except TypeError:                   # an unhashable dtype-like: not cached
        return _promote.__wrapped__(tuple(typed))


@functools.lru_cache(maxsize=4096)      # every traced elementwise op asks
def _promote(typed) -> tuple[np.dtype, bool]:
    strong = [np.dtype(d) for d, w in typed if not w]
    weak = [np.dtype(d) for d, w in typed if w]
    if not strong:
        result = weak[0]
        for d in weak[1:]:
            result = np.promote_types(result, d)
        return result, True
    result = strong[0]
    for d in strong[1:]:
        result = np.promote_types(result, d)
    for d in weak:
        if _KIND_ORDER[d.kind] > _KIND_ORDER[result.kind]:
            if d.kind == "c":
                result = complex_dtype(result) if result.kind == "f" else complex128
            elif d.kind == "f":
                result = float64
            elif d.kind in "iu":
                result = int64
    return canonical(result), False
