"""NumPy's remaining ufuncs on tracers, as composites: fmod, modf, divmod, gcd, lcm,
bitwise_count.

Invariants: results are NumPy's bit for bit (dtypes, signed zeros, NaN/inf cases, integer
wrap-around and division by zero giving 0), on both backends. float ``fmod`` is exact: it is
``copysign(remainder(|x1|, |x2|), x1)``, and NumPy's remainder of non-negative operands is
C's fmod itself. gcd/lcm run Euclid's algorithm for a fixed number of steps (enough for the
dtype's width: consecutive Fibonacci numbers are the worst case), in the unsigned dtype of the
same width so that |INT_MIN| is representable, as NumPy's. Derivatives: fmod's are 1 and
-trunc(x1/x2) (through the composite), modf's fraction has derivative 1 and its integer part 0;
gcd, lcm and bitwise_count have integer results.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import type_of
from ..errors import DTypeError
from . import math as m
from ._base import as_traceable, convert, implements, result_type
from .bits import copysign
from .logic import where

__all__ = ["fmod", "modf", "divmod", "gcd", "lcm", "bitwise_count"]


def _int_operands(name, *xs):
    """Operands promoted to their integer dtype (bool to int8, as NumPy's loops); floats and
    complex raise NumPy's TypeError."""
    dt, weak = result_type(*xs)
    if dt.kind == "b":
        dt = dtypes.int8
    if dt.kind not in "iu":
        raise DTypeError(f"ufunc '{name}' did not contain a loop for {dt} operands (as in "
                         f"NumPy: integers only)")
    return [convert(x, dt, weak) for x in xs]


@implements(np.fmod)
def fmod(x1, x2, /):
    """C's fmod: the remainder of truncated division, with the sign of ``x1`` (integer x % 0
    gives 0, as NumPy)."""
    dt, _ = result_type(x1, x2)
    if dt.kind == "c":
        raise DTypeError("ufunc 'fmod' is not supported for complex operands (as in NumPy)")
    if dt.kind in "biu":
        a, b = _int_operands("fmod", x1, x2)
        r = m.remainder(a, b)                       # floor remainder: sign of b
        fix = m.logical_and(m.not_equal(r, 0), m.not_equal(m.less(r, 0), m.less(a, 0)))
        return where(fix, m.subtract(r, b), r)
    a, b = m._inexact_pair(x1, x2)
    return copysign(m.remainder(m.absolute(a), m.absolute(b)), a)


@implements(np.modf)
def modf(x, /):
    """(fractional part, integral part), both with the sign of ``x``; ±inf gives (±0, ±inf)."""
    x = m.inexact(as_traceable(x))
    if type_of(x).dtype.kind == "c":
        raise DTypeError("ufunc 'modf' is not supported for complex operands (as in NumPy)")
    whole = m.trunc(x)
    frac = where(m.isinf(x), 0.0, m.subtract(x, whole))
    return copysign(frac, x), whole


@implements(np.divmod)
def divmod(x1, x2, /):  # noqa: A001 - NumPy's name
    """(floor_divide, remainder), as NumPy's."""
    return m.floor_divide(x1, x2), m.remainder(x1, x2)


def _unsigned(dt):
    return np.dtype(f"u{dt.itemsize}")


def _abs_unsigned(x):
    """|x| in the unsigned dtype of the same width (|INT_MIN| = 2**(bits-1) fits)."""
    dt = type_of(x).dtype
    if dt.kind == "u":
        return x
    return where(m.less(x, 0), m.negative(x), x).astype(_unsigned(dt))   # -INT_MIN wraps


def _euclid(a, b):
    """gcd of two non-negative unsigned arrays: ``a, b = b, a % b`` while b != 0, unrolled to
    the dtype's worst case (the step count of consecutive Fibonacci numbers)."""
    bits = 8 * type_of(a).dtype.itemsize
    steps = int(np.ceil(bits * np.log(2) / np.log((1 + 5 ** 0.5) / 2))) + 2
    for _ in range(steps):
        nonzero = m.not_equal(b, 0)
        a, b = where(nonzero, b, a), where(nonzero, m.remainder(a, where(nonzero, b, 1)), 0)
    return a


@implements(np.gcd)
def gcd(x1, x2, /):
    """Greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0; |INT_MIN| wraps, as NumPy)."""
    a, b = _int_operands("gcd", x1, x2)
    dt = type_of(a).dtype
    return _euclid(_abs_unsigned(a), _abs_unsigned(b)).astype(dt)


@implements(np.lcm)
def lcm(x1, x2, /):
    """Least common multiple, ``|x1| // gcd * |x2|`` wrapped to the dtype (0 if either is 0),
    as NumPy's."""
    a, b = _int_operands("lcm", x1, x2)
    ua, ub = _abs_unsigned(a), _abs_unsigned(b)
    g = _euclid(ua, ub)
    q = m.floor_divide(ua, where(m.equal(g, 0), 1, g))      # exact: g divides |x1|
    return where(m.equal(g, 0), 0, m.multiply(q, ub)).astype(type_of(a).dtype)


@implements(np.bitwise_count)
def bitwise_count(x, /):
    """The number of 1-bits in |x| (uint8), as NumPy's."""
    (x,) = _int_operands("bitwise_count", x)
    v = _abs_unsigned(x).astype(np.uint64)
    v = m.subtract(v, m.bitwise_and(m.right_shift(v, 1), 0x5555555555555555))
    v = m.add(m.bitwise_and(v, 0x3333333333333333),
              m.bitwise_and(m.right_shift(v, 2), 0x3333333333333333))
    v = m.bitwise_and(m.add(v, m.right_shift(v, 4)), 0x0F0F0F0F0F0F0F0F)
    return m.right_shift(m.multiply(v, 0x0101010101010101), 56).astype(np.uint8)
