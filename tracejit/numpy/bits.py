"""NumPy's functions of a float's bits on tracers: signbit, copysign, nextafter, spacing, frexp,
ldexp, and ``x.view(dtype)`` of a same-width dtype (``bitcast``).

Invariants: every function is a composite over the ``bitcast_convert`` primitive (the same bits
read as another dtype of one width) and integer arithmetic, so it is exact: the sign of a NaN
and of -0.0, subnormals, infinities and the largest finite value give NumPy's results bit for
bit, on both backends. Integer (and bool) operands of the float functions promote as NumPy's
ufunc loops do (``dtypes.float_result``); complex operands are refused, as in NumPy.
Derivatives (custom_jvp rules; the bit arithmetic itself has none): copysign +-t1 (the sign
bits agree or not), nextafter t1, ldexp t1 * 2**n, frexp's mantissa t * 2**-exponent;
spacing is piecewise constant (0); signbit and the exponent are integers or bools.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..custom import custom_jvp, stop_gradient
from ..errors import DTypeError
from ..ops import elementwise as ew
from . import logic, math as m
from ._base import as_traceable, implements
from .creation import full_like
from .shape import broadcast_arrays

__all__ = ["signbit", "copysign", "nextafter", "spacing", "frexp", "ldexp"]

# per float dtype: (its integer dtype, mantissa bits, exponent bias, smallest normal exponent)
_LAYOUT = {np.dtype(np.float16): (np.dtype(np.int16), 10, 15, -14),
           np.dtype(np.float32): (np.dtype(np.int32), 23, 127, -126),
           np.dtype(np.float64): (np.dtype(np.int64), 52, 1023, -1022)}


def bitcast(x, dtype):
    """The bits of ``x`` read as ``dtype`` (same width; integer or float), as ``x.view(dtype)``
    of an ndarray and JAX's ``lax.bitcast_convert_type``."""
    dtype = dtypes.canonical(dtype)
    if not isinstance(x, Tracer):
        return np.asarray(x).view(dtype)
    return ew.bitcast_convert_p.bind(x, dtype=dtype)


def _float(x, name):
    """``x`` as a float array: ints and bools promote as NumPy's float ufunc loops do."""
    x = as_traceable(x)
    dt = type_of(x).dtype
    if dt.kind == "c":
        raise DTypeError(f"ufunc '{name}' not supported for complex input (as in NumPy)")
    if dt.kind != "f":
        x = x.astype(dtypes.float_result(dt))
    if type_of(x).dtype not in _LAYOUT:
        raise DTypeError(f"{name}: dtype {type_of(x).dtype} is not supported by tracejit")
    return x


def _float_pair(x1, x2, name):
    from .math import _inexact_pair
    if any(type_of(as_traceable(v)).dtype.kind == "c" for v in (x1, x2)):
        raise DTypeError(f"ufunc '{name}' not supported for complex input (as in NumPy)")
    x1, x2 = _inexact_pair(x1, x2)
    return as_traceable(x1), as_traceable(x2)


def _bits(x):
    return bitcast(x, _LAYOUT[type_of(x).dtype][0])


def _from_bits(b, like):
    return bitcast(b, type_of(like).dtype)


def _sign_mask(dt):
    return int(np.iinfo(_LAYOUT[dt][0]).min)          # only the sign bit set


@implements(np.signbit)
def signbit(x, /):
    """True where the sign bit is set (-0.0 and NaNs with the sign bit included)."""
    x = as_traceable(x)
    dt = type_of(x).dtype
    if dt.kind == "c":
        raise TypeError("ufunc 'signbit' not supported for complex input (as in NumPy)")
    if dt.kind == "b":
        return m.less(x.astype(np.int8), 0)
    if dt.kind in "iu":
        return m.less(x, 0)
    return m.less(_bits(_float(x, "signbit")), 0)


def _pure_jvp(fn, rule):
    """``fn`` with the derivative ``rule(primals, tangents, ans)``; its graph is traced once per
    argument types."""
    core = custom_jvp(fn)
    core.trace_cache = {}
    core.defjvp(lambda primals, tangents: (lambda ans: (ans, rule(primals, tangents, ans)))(
        core(*primals)))
    return core


def _copysign_bits(x1, x2):
    sign = _sign_mask(type_of(x1).dtype)
    b = m.bitwise_or(m.bitwise_and(_bits(x1), ~sign), m.bitwise_and(_bits(x2), sign))
    return _from_bits(b, x1)


_copysign = _pure_jvp(_copysign_bits, lambda p, t, ans: m.multiply(t[0], logic.where(
    m.equal(m.less(_bits(p[0]), 0), m.less(_bits(p[1]), 0)), 1.0, -1.0)))


def _signed_bits(like, magnitude_bits):
    """The float with ``magnitude_bits`` and the sign bit of ``like`` (no arithmetic on
    ``like``: an inf or NaN there leaves the result alone)."""
    sign = _sign_mask(type_of(like).dtype)
    return _from_bits(m.bitwise_or(m.bitwise_and(_bits(like), sign), magnitude_bits), like)


@implements(np.copysign)
def copysign(x1, x2, /):
    """``x1`` with the sign bit of ``x2`` (NaN signs included), elementwise."""
    x1, x2 = _float_pair(x1, x2, "copysign")
    x1, x2 = broadcast_arrays(x1, x2) if _shapes_differ(x1, x2) else (x1, x2)
    return _copysign(x1, x2)


def _shapes_differ(*xs):
    return len({type_of(x).shape for x in xs}) > 1


@implements(np.nextafter)
def nextafter(x1, x2, /):
    """The next float after ``x1`` towards ``x2`` (``x2`` where they are equal; the smallest
    subnormal with x2's sign from a zero; NaN where either is NaN)."""
    x1, x2 = _float_pair(x1, x2, "nextafter")
    x1, x2 = broadcast_arrays(x1, x2) if _shapes_differ(x1, x2) else (x1, x2)
    return _nextafter(x1, x2)


def _nextafter_bits(x1, x2):
    b = _bits(x1)
    # magnitude up where x1 moves away from zero; as a signed integer a negative float's bits
    # are -2**(w-1) + magnitude, so both signs step by +-1
    away = m.equal(m.greater(x2, x1), m.greater(x1, 0))
    r = _from_bits(logic.where(away, m.add(b, 1), m.subtract(b, 1)), x1)
    r = logic.where(m.equal(x1, 0), _signed_bits(x2, 1), r)      # the smallest subnormal
    r = logic.where(m.equal(x1, x2), x2, r)
    return logic.where(m.logical_or(m.isnan(x1), m.isnan(x2)), m.add(x1, x2), r)


_nextafter = _pure_jvp(_nextafter_bits, lambda p, t, ans: t[0])


@implements(np.spacing)
def spacing(x, /):
    """The distance from ``x`` to the next float away from zero, with x's sign (the smallest
    subnormal at both zeros, NaN at infinities, inf at the largest finite values, a NaN
    itself), as NumPy's."""
    # piecewise constant in x: no derivative (nextafter(x) - x would carry -dx)
    x = stop_gradient(_float(x, "spacing"))
    if type_of(x).dtype == dtypes.float16:
        return _half_spacing(x)
    inf_bits = int(np.asarray(np.inf, type_of(x).dtype).view(_LAYOUT[type_of(x).dtype][0]))
    d = m.subtract(_nextafter_bits(x, _signed_bits(x, inf_bits)), x)
    tiny = _from_bits(np.asarray(1, _LAYOUT[type_of(x).dtype][0]), x)
    d = logic.where(m.equal(x, 0), tiny, logic.where(m.isinf(x), np.nan, d))
    return logic.where(m.isnan(x), x, d)


def _half_spacing(x):
    """NumPy's float16 spacing (``npy_half_spacing``), which differs from its float32/64 one:
    the result is never negative, a negative power of two gives the spacing below it (toward
    zero), and only +65504 gives inf."""
    h = m.bitwise_and(_bits(x).astype(np.int32), 0xFFFF)
    h_exp = m.bitwise_and(h, 0x7C00)
    boundary = m.logical_and(m.greater_equal(h, 0x8000),
                             m.equal(m.bitwise_and(h, 0x03FF), 0))
    shift = logic.where(boundary, 1, 0)               # one binade lower at negative boundaries
    top = logic.where(boundary, 0x2C00, 0x2800)       # above: the exponent field minus 10
    sub = m.left_shift(1, m.subtract(m.right_shift(h_exp, 10), shift + 1))
    bits = logic.where(m.greater(h_exp, top), m.subtract(h_exp, top),
                       logic.where(m.greater(h_exp, 0x0400), sub, 1))
    d = bitcast(bits.astype(np.int16), np.float16)
    d = logic.where(m.equal(h, 0x7BFF), np.float16(np.inf), d)
    return logic.where(m.equal(h_exp, 0x7C00), np.float16(np.nan), d)


@implements(np.frexp)
def frexp(x, /):
    """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1 (x itself
    and 0 for zeros, infinities and NaN); the exponent is int32, as NumPy's."""
    return _frexp(_float(x, "frexp"))


def _frexp_bits(x):
    dt = type_of(x).dtype
    idt, mbits, bias, emin = _LAYOUT[dt]
    # subnormals: scale into the normal range first (exactly), then correct the exponent
    scale = mbits + 2
    sub = m.logical_and(m.not_equal(x, 0), m.less(m.absolute(x), 2.0 ** emin))
    xs = logic.where(sub, m.multiply(x, dt.type(2.0 ** scale)), x)
    b = _bits(xs)
    field = m.bitwise_and(m.right_shift(b, mbits), 2 * bias + 1)
    exp = m.subtract(m.subtract(field, bias - 1), logic.where(sub, scale, 0))
    mant = _from_bits(m.bitwise_or(m.bitwise_and(b, ~((2 * bias + 1) << mbits)),
                                   (bias - 1) << mbits), x)
    special = m.logical_or(m.equal(x, 0), m.logical_not(m.isfinite(x)))
    return logic.where(special, x, mant), logic.where(special, 0, exp).astype(np.int32)


# d mantissa = t * 2**-exponent (the exponent is piecewise constant); the exponent: no tangent
_frexp = _pure_jvp(_frexp_bits, lambda p, t, ans: (
    m.multiply(t[0], _ldexp(full_like(p[0], 1), m.negative(ans[1]))), ans[1]))


@implements(np.ldexp)
def ldexp(x1, x2, /):
    """``x1 * 2**x2`` rounded once (musl's scalbn: at most two exact scalings before the
    final multiply, so a subnormal result is not rounded twice)."""
    x = _float(x1, "ldexp")
    n = as_traceable(x2)
    if type_of(n).dtype.kind not in "biu":
        raise TypeError("ufunc 'ldexp' not supported for the input types: the exponent must be "
                        "an integer (as in NumPy)")
    if _shapes_differ(x, n):
        x, n = broadcast_arrays(x, n)
    return _ldexp(x, n)


def _ldexp_bits(x, n):
    dt = type_of(x).dtype
    idt, mbits, bias, emin = _LAYOUT[dt]
    n = m.clip(n.astype(np.int64), -4 * bias, 4 * bias)
    up, down = dt.type(2.0 ** bias), dt.type(2.0 ** (emin + mbits + 1))
    for _ in range(2):
        big = m.greater(n, bias)
        x = logic.where(big, m.multiply(x, up), x)
        n = logic.where(big, m.subtract(n, bias), n)
        small = m.less(n, emin)
        x = logic.where(small, m.multiply(x, down), x)
        n = logic.where(small, m.add(n, -(emin + mbits + 1)), n)
    n = m.clip(n, emin, bias)
    pow2 = _from_bits(m.left_shift(m.add(n, bias), mbits).astype(idt), x)
    return m.multiply(x, pow2)


# d (x 2**n) = t 2**n (linear in t, so it transposes; 2**n itself overflows beyond the range)
_ldexp = _pure_jvp(_ldexp_bits, lambda p, t, ans: m.multiply(
    t[0], _ldexp(full_like(p[0], 1), p[1])))
