"""Selection and truth functions: where, select, all, any, isclose, allclose-free variants."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import type_of
from ..ops import elementwise as ew
from ._base import (broadcast_shapes, broadcast_to, convert, filled, implements, result_type,
                    shape_of)

__all__ = ["where", "select", "isclose", "array_equal", "iscomplex", "isreal"]


@implements(np.where)
def where(condition, x=None, y=None, /):
    """Elementwise select: x where condition else y (both branches are computed)."""
    if x is None or y is None:
        from ..errors import UnsupportedError
        raise UnsupportedError("where(condition) with one argument returns data-dependent "
                               "shapes; use the three-argument form where(condition, x, y)")
    from .math import not_equal
    cond = condition if type_of(condition).dtype == dtypes.bool_ else not_equal(condition, 0)
    dt, weak = result_type(x, y)
    x, y = (convert(_wrap_int(a, dt), dt, weak) for a in (x, y))
    shape = broadcast_shapes("where", shape_of(cond), shape_of(x), shape_of(y))
    ops = [a if shape_of(a) in ((), shape) else broadcast_to(a, shape) for a in (cond, x, y)]
    if shape and all(shape_of(a) == () for a in ops):
        ops[1] = broadcast_to(ops[1], shape)
    if not any(hasattr(a, "builder") for a in ops):
        return np.where(*[getattr(a, "value", a) for a in ops])
    return ew.select_p.bind(*ops)


def _wrap_int(v, dt):
    """A Python int operand of where, cast (wrapping) to an integer ``dt`` as NumPy 2's where
    does (it is not a ufunc: ``where(c, uint8_array, -3)`` holds 253, no OverflowError)."""
    if type(v) is int and dt.kind in "iu" and -2**63 <= v < 2**64:
        return np.array(v, dtype=np.uint64 if v >= 2**63 else np.int64).astype(dt)[()].item()
    return v


@implements(np.select)
def select(condlist, choicelist, default=0):
    """First matching choice, as numpy.select (built from where, last condition innermost)."""
    result = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        result = where(cond, choice, result)
    return result


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """numpy.isclose, NumPy's formula: ``b`` is first made inexact (result_type(b, 1.0)), so
    bool and unsigned operands do not subtract in their own dtype, and an infinite ``b`` is close
    only when equal."""
    from .math import absolute, subtract, less_equal, add, multiply, isnan, isfinite, \
        logical_and, logical_or, equal
    if isinstance(b, int) and not isinstance(b, bool):
        b = float(b)
    elif not isinstance(b, (bool, float, complex)):
        b = convert(b, result_type(b, 1.0)[0])
    diff = absolute(subtract(a, b))
    close = logical_and(less_equal(diff, add(atol, multiply(rtol, absolute(b)))), isfinite(b))
    close = logical_or(close, equal(a, b))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(a), isnan(b)))
    return close


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    from .reductions import all as all_
    from .math import equal
    if shape_of(a1) != shape_of(a2):
        return False
    return all_(equal(a1, a2))


@implements(np.iscomplex)
def iscomplex(x):
    """Elementwise: a nonzero imaginary part (all False for a real dtype, traced like ``x``)."""
    from .math import imag, not_equal
    t = type_of(x)
    return not_equal(imag(x), 0) if t.dtype.kind == "c" else filled(t.shape, False, dtypes.bool_)


@implements(np.isreal)
def isreal(x):
    """Elementwise: a zero imaginary part (all True for a real dtype, traced like ``x``)."""
    from .math import equal, imag
    t = type_of(x)
    return equal(imag(x), 0) if t.dtype.kind == "c" else filled(t.shape, True, dtypes.bool_)
