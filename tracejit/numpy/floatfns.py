"""More of NumPy's float functions on tracers, as composites: fabs, heaviside, divmod,
float_power, logaddexp2, isposinf, isneginf, nan_to_num, and the array-API spellings cumulative_sum,
cumulative_prod, vecdot, matvec, vecmat, astype, unstack.

Each follows NumPy's definition (dtypes: integer inputs of the float ufuncs give float64, as
NumPy's type resolution does). The functions of a float's bits (signbit, copysign, nextafter,
spacing, frexp, ldexp) are in ``bits.py``.
"""
from __future__ import annotations

import numpy as np

from ..core import type_of
from ..errors import DTypeError, UnsupportedError
from ._base import as_traceable, half_in_float32, implements, normalize_axis

__all__ = ["fabs", "heaviside", "divmod", "float_power", "logaddexp2", "isposinf", "isneginf",
           "nan_to_num", "cumulative_sum", "cumulative_prod", "vecdot", "matvec", "vecmat",
           "astype", "unstack"]


def _real_float(x, name):
    """``x`` as a real float array (ints and bools as float64, NumPy's safe cast); a Python
    number stays one (weak, as NEP 50 has it)."""
    if type(x) in (int, float):
        return float(x)
    x = as_traceable(x)
    kind = type_of(x).dtype.kind
    if kind == "c":
        raise DTypeError(f"ufunc '{name}' not supported for complex input (as in NumPy)")
    return x if kind == "f" else x.astype(np.float64)


@implements(np.fabs)
def fabs(x, /):
    """Absolute value of a real array, as a float."""
    from .math import absolute
    return absolute(_real_float(x, "fabs"))


@implements(np.heaviside)
def heaviside(x1, x2, /):
    """0 below zero, 1 above, ``x2`` at zero, NaN for NaN."""
    from .logic import where
    from .math import _inexact_pair, isnan
    x1, x2 = _inexact_pair(_real_float(x1, "heaviside"), _real_float(x2, "heaviside"))
    out = where(x1 < 0, 0, where(x1 > 0, 1, x2))
    return where(isnan(x1), x1, out).astype(type_of(x1).dtype)


@implements(np.divmod)
def divmod(x1, x2, /):
    """``(x1 // x2, x1 % x2)``, as NumPy's divmod (also ``divmod(x, y)`` on tracers)."""
    from .math import floor_divide, remainder
    return floor_divide(x1, x2), remainder(x1, x2)


@implements(np.float_power)
def float_power(x1, x2, /):
    """``x1 ** x2`` computed in float64 (complex128 for complex operands)."""
    from .math import power
    x1, x2 = as_traceable(x1), as_traceable(x2)
    complex_ = any(type_of(x).dtype.kind == "c" for x in (x1, x2))
    dt = np.complex128 if complex_ else np.float64
    return power(x1.astype(dt), x2.astype(dt))


@implements(np.logaddexp2)
@half_in_float32
def logaddexp2(x1, x2, /):
    """log2(2**x1 + 2**x2) without overflow: max + log1p(2**-|x1 - x2|) / ln 2."""
    from .logic import where
    from .math import (absolute, add, exp2, isnan, log1p, maximum, multiply, negative,
                       subtract)
    from .math import _inexact_pair
    x1, x2 = _inexact_pair(x1, x2)
    if type_of(x1).dtype.kind == "c":
        raise DTypeError("ufunc 'logaddexp2' is not supported for complex operands (as in NumPy)")
    m = maximum(x1, x2)
    d = subtract(x1, x2)
    r = add(m, multiply(log1p(exp2(negative(absolute(d)))), float(1.0 / np.log(2.0))))
    return where(isnan(d), add(x1, x2), r)     # equal infinities: m itself


def _inf_test(x, positive, name):
    from .math import isinf, logical_and
    x = as_traceable(x)
    kind = type_of(x).dtype.kind
    if kind == "c":
        raise TypeError(f"This operation is not supported for complex values because it would "
                        f"be ambiguous ({name})")
    if kind != "f":
        return x != x                                  # all False, of x's shape
    return logical_and(isinf(x), x > 0 if positive else x < 0)


@implements(np.isposinf)
def isposinf(x, out=None):
    """Whether each element is +inf."""
    if out is not None:
        raise UnsupportedError("np.isposinf(..., out=) on tracers")
    return _inf_test(x, True, "isposinf")


@implements(np.isneginf)
def isneginf(x, out=None):
    """Whether each element is -inf."""
    if out is not None:
        raise UnsupportedError("np.isneginf(..., out=) on tracers")
    return _inf_test(x, False, "isneginf")


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NaN -> ``nan``, +inf -> ``posinf`` (the dtype's largest), -inf -> ``neginf``."""
    from .logic import where
    from .math import isnan
    x = as_traceable(x)
    t = type_of(x)
    if t.dtype.kind == "c":
        raise UnsupportedError("np.nan_to_num of a complex traced array; apply it to x.real and "
                               "x.imag and recombine")
    if t.dtype.kind != "f":
        return x.copy() if hasattr(x, "copy") else x
    info = np.finfo(t.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = where(isnan(x), nan, x)
    out = where(_inf_test(x, True, "nan_to_num"), big, out)
    return where(_inf_test(x, False, "nan_to_num"), small, out).astype(t.dtype)


def _cumulative(name, accumulate, identity):
    def fn(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        from .shape import concatenate
        if out is not None:
            raise UnsupportedError(f"np.{name}(..., out=) on tracers")
        x = as_traceable(x)
        nd = type_of(x).ndim
        if axis is None:
            if nd > 1:
                raise ValueError("axis must be specified for multi-dimensional arrays.")
            axis = 0
        axis = normalize_axis(axis, max(nd, 1), name)
        res = accumulate(x, axis=axis, dtype=dtype)
        if not include_initial:
            return res
        shape = list(type_of(res).shape)
        shape[axis] = 1
        first = np.full(shape, identity, type_of(res).dtype)
        return concatenate([first, res], axis=axis)
    fn.__name__ = name
    fn.__doc__ = f"NumPy 2's {name} (``include_initial`` prepends the identity)."
    return fn


def _cumsum(x, axis, dtype):
    from .reductions import cumsum
    return cumsum(x, axis=axis, dtype=dtype)


def _cumprod(x, axis, dtype):
    from .reductions import cumprod
    return cumprod(x, axis=axis, dtype=dtype)


cumulative_sum = implements(np.cumulative_sum)(_cumulative("cumulative_sum", _cumsum, 0)) \
    if hasattr(np, "cumulative_sum") else _cumulative("cumulative_sum", _cumsum, 0)
cumulative_prod = implements(np.cumulative_prod)(_cumulative("cumulative_prod", _cumprod, 1)) \
    if hasattr(np, "cumulative_prod") else _cumulative("cumulative_prod", _cumprod, 1)


def vecdot(x1, x2, /, *, axis=-1, out=None):
    """Vector dot product over ``axis``, conjugating ``x1`` (NumPy 2's vecdot)."""
    from .math import conj, multiply
    from .reductions import sum as sum_
    if out is not None:
        raise UnsupportedError("np.vecdot(..., out=) on tracers")
    x1, x2 = as_traceable(x1), as_traceable(x2)
    if type_of(x1).dtype.kind == "c":
        x1 = conj(x1)
    return sum_(multiply(x1, x2), axis=axis)


def matvec(x1, x2, /, *, out=None):
    """Matrix-vector product over the last axes (NumPy 2's matvec)."""
    from .products import matmul
    from .shape import expand_dims, squeeze
    if out is not None:
        raise UnsupportedError("np.matvec(..., out=) on tracers")
    return squeeze(matmul(x1, expand_dims(as_traceable(x2), -1)), -1)


def vecmat(x1, x2, /, *, out=None):
    """Conjugated vector-matrix product over the last axes (NumPy 2's vecmat)."""
    from .products import matmul
    from .math import conj
    from .shape import expand_dims, squeeze
    if out is not None:
        raise UnsupportedError("np.vecmat(..., out=) on tracers")
    x1 = as_traceable(x1)
    if type_of(x1).dtype.kind == "c":
        x1 = conj(x1)
    return squeeze(matmul(expand_dims(x1, -2), x2), -2)


for _name in ("vecdot", "matvec", "vecmat"):
    if hasattr(np, _name):
        globals()[_name] = implements(getattr(np, _name))(globals()[_name])


def astype(x, dtype, /, *, copy=True, device=None):
    """NumPy 2's ``np.astype(x, dtype)``."""
    return as_traceable(x).astype(dtype)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    from .mutation import moveaxis
    x = as_traceable(x)
    moved = moveaxis(x, axis, 0)
    return tuple(moved[i] for i in range(type_of(moved).shape[0]))


for _name in ("astype", "unstack"):
    if hasattr(np, _name):
        globals()[_name] = implements(getattr(np, _name))(globals()[_name])
