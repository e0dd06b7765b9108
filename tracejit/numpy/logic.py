"""Selection and truth functions: where, select, all, any, isclose, allclose-free variants."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import type_of
from ._base import convert, filled, implements, result_type, shape_of
from .math import where  # (in math, whose ufuncs use it; exported from here, as before)

__all__ = ["where", "select", "isclose", "array_equal", "iscomplex", "isreal"]


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
