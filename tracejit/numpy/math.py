"""Elementwise NumPy functions (the ufuncs) on tracers; concrete inputs go to NumPy itself.

``where`` and ``trunc`` live here because the ufuncs' composites use them (logic.py and the
namespace export them as before). This module imports only _base.py and intrange.py of the NumPy
layer: every other module of it is above (tests/test_import_layout.py, ``NUMPY_LAYERS``).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..custom import custom_jvp
from ..errors import DTypeError, UnsupportedError
from ..ops import elementwise as ew
from ._base import (_guard, as_traceable, broadcast_shapes, broadcast_to, concrete, convert,
                    elementwise, filled, half_in_float32, implements, inexact, python_division,
                    python_int_result, result_type, shape_of)

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _unary_float(np_fn, prim):
    """A unary math function: ints promote to the float NumPy's ufunc loops pick (float16 for
    bools and 8-bit ints, float32 for 16-bit ones, float64 for wider; ``dtypes.float_result``)."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        return elementwise(prim, np_fn.__name__, inexact(x))
    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"Elementwise {np_fn.__name__}, as numpy.{np_fn.__name__}."
    return _export(fn)


exp = _unary_float(np.exp, ew.exp_p)
exp2 = _unary_float(np.exp2, ew.exp2_p)
expm1 = _unary_float(np.expm1, ew.expm1_p)
log = _unary_float(np.log, ew.log_p)
log2 = _unary_float(np.log2, ew.log2_p)
log10 = _unary_float(np.log10, ew.log10_p)
log1p = _unary_float(np.log1p, ew.log1p_p)
sqrt = _unary_float(np.sqrt, ew.sqrt_p)
cbrt = _unary_float(np.cbrt, ew.cbrt_p)
sin = _unary_float(np.sin, ew.sin_p)
cos = _unary_float(np.cos, ew.cos_p)
tan = _unary_float(np.tan, ew.tan_p)
sinh = _unary_float(np.sinh, ew.sinh_p)
cosh = _unary_float(np.cosh, ew.cosh_p)
tanh = _unary_float(np.tanh, ew.tanh_p)
arcsin = _unary_float(np.arcsin, ew.arcsin_p)
arccos = _unary_float(np.arccos, ew.arccos_p)
arctan = _unary_float(np.arctan, ew.arctan_p)
arcsinh = _unary_float(np.arcsinh, ew.arcsinh_p)
arccosh = _unary_float(np.arccosh, ew.arccosh_p)
arctanh = _unary_float(np.arctanh, ew.arctanh_p)


def _unary_same(np_fn, prim, kinds="ifc"):
    """A unary function that keeps the dtype (NumPy's bool rules: abs(bool) is bool, -bool and
    sign(bool) raise TypeError)."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        if type_of(x).dtype == dtypes.bool_:
            if prim is ew.abs_p:
                return x
            raise DTypeError(f"numpy.{np_fn.__name__} is not supported for bool arrays (as in "
                            f"NumPy); use logical_not (~) or convert with .astype(int) first")
        return elementwise(prim, np_fn.__name__, x)
    fn.__name__ = np_fn.__name__
    return _export(fn)


negative = _unary_same(np.negative, ew.neg_p)
sign = _unary_same(np.sign, ew.sign_p)
absolute = _unary_same(np.absolute, ew.abs_p)
abs = absolute  # noqa: A001 - NumPy's name
__all__.append("abs")


def _rounding(np_fn, prim):
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        if type_of(x).dtype.kind in "biu":
            # NumPy 2: floor/ceil keep integer (and bool) dtypes; rint goes through a float
            return x if prim is not ew.round_p else inexact(x)
        return elementwise(prim, np_fn.__name__, x)
    fn.__name__ = np_fn.__name__
    return _export(fn)


floor = _rounding(np.floor, ew.floor_p)
ceil = _rounding(np.ceil, ew.ceil_p)
rint = _rounding(np.rint, ew.round_p)


@_export
@implements(np.round)
def round(x, decimals=0):  # noqa: A001 - NumPy's name
    """Round half to even to ``decimals`` places (NumPy's algorithm: scale, rint, unscale)."""
    decimals = int(decimals)
    t = type_of(x)
    if t.dtype == dtypes.bool_:
        if decimals != 0:               # NumPy scales by 10**decimals in the bool dtype
            raise DTypeError(f"round(decimals={decimals}) of a bool array is not supported "
                             f"(as in NumPy); convert with .astype(float) first")
        return convert(x, dtypes.float16, t.weak)   # as NumPy
    if t.dtype.kind in "iu":
        return x if decimals >= 0 else _round_int(x, 10 ** -decimals)
    if t.dtype.kind == "c":
        re, im = round(real(x), decimals), round(imag(x), decimals)
        return ew.complex_p.bind(re, im)             # exact: NaN and -0.0 parts stay apart
    if decimals == 0:
        return rint(x)
    if decimals > 0:                     # NumPy's order of operations, for identical results
        scale = 10.0 ** decimals
        return true_divide(rint(multiply(x, scale)), scale)
    scale = 10.0 ** -decimals
    return multiply(rint(true_divide(x, scale)), scale)


def _round_int(x, f):
    """Integers rounded to a multiple of ``f`` (half to even), exactly, in integer arithmetic
    (NumPy rounds x / f in float64, which is exact for these magnitudes). Compared as ``r`` vs
    ``f - r``: ``2 * r`` may overflow a narrow dtype."""
    t = type_of(x)
    if not t.weak:
        info = np.iinfo(t.dtype)
        if f > info.max:
            if f > 2 * max(info.max, -info.min):         # every |x| < f / 2: all round to 0
                return multiply(x, 0)
            # NumPy's float result is out of the dtype's range for some x (an undefined cast
            # there); round in float64 and convert (saturating here)
            return convert(multiply(rint(true_divide(x, float(f))), float(f)), t.dtype)
    q = floor_divide(x, f)
    r = subtract(x, multiply(q, f))                    # 0 <= r < f
    rest = subtract(f, r)
    up = logical_or(greater(r, rest), logical_and(equal(r, rest), equal(remainder(q, 2), 1)))
    return multiply(where(up, add(q, 1), q), f)


around = round
__all__.append("around")


@_export
@implements(np.real)
def real(x, /):
    return elementwise(ew.real_p, "real", x) if dtypes.is_complex(type_of(x).dtype) else x


@_export
@implements(np.imag)
def imag(x, /):
    if dtypes.is_complex(type_of(x).dtype):
        return elementwise(ew.imag_p, "imag", x)
    return _zeros_like(x)


@_export
@implements(np.conj)
def conj(x, /):
    t = type_of(x)
    if t.dtype == dtypes.bool_:
        return convert(x, dtypes.int8)              # NumPy's conj (and square) of bool: int8
    return elementwise(ew.conj_p, "conj", x) if dtypes.is_complex(t.dtype) else x


conjugate = conj
__all__.append("conjugate")


@_export
@implements(np.angle)
def angle(z, deg=False):
    """Argument of a complex number (0 or pi for reals, as NumPy: ``arctan2(0, z)``, where the
    Python 0 makes bools int64, hence float64)."""
    z = convert(z, dtypes.float64) if type_of(z).dtype == dtypes.bool_ else inexact(z)
    if dtypes.is_complex(type_of(z).dtype):
        a = arctan2(imag(z), real(z))
    else:
        a = arctan2(_zeros_like(z), z)
    return multiply(a, 180.0 / np.pi) if deg else a


@_export
@implements(np.square)
def square(x, /):
    t = type_of(x)
    if t.dtype == dtypes.bool_:
        x = convert(x, dtypes.int8)         # as NumPy
    if isinstance(x, Tracer) and t.dtype.kind != "c":
        return power(x, 2)                  # integer_pow[n=2]: the same values as x * x
    return multiply(x, x)                   # complex: NumPy's square is the product


@_export
@implements(np.reciprocal)
def reciprocal(x, /):
    t = type_of(x)
    if t.dtype.kind in "biu":
        raise DTypeError("reciprocal of an integer array truncates in NumPy; convert to float "
                         "first")
    if t.dtype.kind == "c":
        # NumPy's complex reciprocal (unlike its division) has no zero case: 1/0j is nan+nanj
        return where(equal(x, 0), complex(np.nan, np.nan), true_divide(1, x))
    return true_divide(1, x)


def _predicate(np_fn, prim, int_value):
    """isnan/isinf/isfinite: on integers and bools a constant (traced: a tracer in, a tracer
    out, so ``.at`` and writes work on the result), as NumPy's bool arrays."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        t = type_of(x)
        if t.dtype.kind in "biu":
            return filled(t.shape, int_value, dtypes.bool_)
        return elementwise(prim, np_fn.__name__, x)
    fn.__name__ = np_fn.__name__
    return _export(fn)


isnan = _predicate(np.isnan, ew.isnan_p, False)
isinf = _predicate(np.isinf, ew.isinf_p, False)
isfinite = _predicate(np.isfinite, ew.isfinite_p, True)


def _binary(np_fn, prim, *, float_only=False, on_bool=None, on_complex=None):
    """A binary ufunc. ``on_bool``/``on_complex``: the composite used when the operands promote
    to bool (NumPy: bool + bool is logical or) or complex (lexicographic order)."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x1, x2, /):
        if float_only:
            x1, x2 = _inexact_pair(x1, x2)
        if on_bool is not None or on_complex is not None:
            kind = _promoted(x1, x2)[0].kind
            if kind == "b" and on_bool is not None:
                return on_bool(x1, x2)
            if kind == "c" and on_complex is not None:
                return on_complex(x1, x2)
        return elementwise(prim, np_fn.__name__, x1, x2)
    fn.__name__ = np_fn.__name__
    return _export(fn)


def _inexact_pair(x1, x2):
    """Both operands in their promoted inexact dtype (ints promote together, then to the float
    of ``dtypes.float_result``, so a weak int next to a float32 array stays float32, as
    NumPy)."""
    dt, weak = _promoted(x1, x2)
    dt = dtypes.float_result(dt)
    return convert(x1, dt, weak), convert(x2, dt, weak)


def _no_bool_subtract(x1, x2):
    raise DTypeError("numpy boolean subtract, the `-` operator, is not supported (as in NumPy); "
                    "use the bitwise_xor, the `^` operator, or the logical_xor function instead")


def _complex_parts(x1, x2):
    from ..ir import Literal, Type
    dt, weak = _promoted(x1, x2)
    parts = []
    for x in (convert(x1, dt, weak), convert(x2, dt, weak)):
        if isinstance(x, Literal):
            rt = Type(dtypes.real_dtype(dt), (), x.ty.weak)
            parts += [Literal(x.value.real, rt), Literal(x.value.imag, rt)]
        else:
            parts += [real(x), imag(x)]
    return parts


def _complex_order(strict, greater_):
    """NumPy's lexicographic complex order (npy_math's CLT/CLE/CGT/CGE, NaN rules included)."""
    def cmp(x1, x2):
        xr, xi, yr, yi = _complex_parts(x1, x2)
        if greater_:
            xr, xi, yr, yi = yr, yi, xr, xi
        no_nan = logical_and(elementwise(ew.eq_p, "equal", xi, xi),
                             elementwise(ew.eq_p, "equal", yi, yi))
        first = logical_and(elementwise(ew.lt_p, "less", xr, yr), no_nan)
        second = elementwise(ew.lt_p if strict else ew.le_p, "less", xi, yi)
        return logical_or(first, logical_and(elementwise(ew.eq_p, "equal", xr, yr), second))
    return cmp


def _complex_extreme(is_max):
    """maximum/minimum of complex numbers: lexicographic, NaN-propagating (as NumPy)."""
    def fn(x1, x2):
        dt, weak = _promoted(x1, x2)
        x1, x2 = convert(x1, dt, weak), convert(x2, dt, weak)
        keep = _complex_order(False, is_max)(x1, x2)
        keep = logical_or(keep, isnan(x1))
        return where(keep, x1, x2)
    return fn


add = _binary(np.add, ew.add_p, on_bool=lambda a, b: logical_or(a, b))
subtract = _binary(np.subtract, ew.sub_p, on_bool=_no_bool_subtract)
multiply = _binary(np.multiply, ew.mul_p, on_bool=lambda a, b: logical_and(a, b))
maximum = _binary(np.maximum, ew.max_p, on_complex=_complex_extreme(True))
minimum = _binary(np.minimum, ew.min_p, on_complex=_complex_extreme(False))
arctan2 = _binary(np.arctan2, ew.atan2_p, float_only=True)
hypot = _binary(np.hypot, ew.hypot_p, float_only=True)
equal = _binary(np.equal, ew.eq_p)
not_equal = _binary(np.not_equal, ew.ne_p)
less = _binary(np.less, ew.lt_p, on_complex=_complex_order(True, False))
less_equal = _binary(np.less_equal, ew.le_p, on_complex=_complex_order(False, False))
greater = _binary(np.greater, ew.gt_p, on_complex=_complex_order(True, True))
greater_equal = _binary(np.greater_equal, ew.ge_p, on_complex=_complex_order(False, True))


def _logical(np_fn, prim):
    @implements(np_fn, name=np_fn.__name__)
    def fn(x1, x2, /):
        return elementwise(prim, np_fn.__name__, _truth(x1), _truth(x2))
    fn.__name__ = np_fn.__name__
    return _export(fn)


def _truth(x):
    t = type_of(x)
    if t.dtype == dtypes.bool_:
        return x
    return not_equal(x, 0)


logical_and = _logical(np.logical_and, ew.and_p)
logical_or = _logical(np.logical_or, ew.or_p)
logical_xor = _logical(np.logical_xor, ew.xor_p)


def _bitwise(np_fn, prim, kinds="bi"):
    """A bitwise ufunc: integers (and bools, where it is the logical operation), as NumPy.
    ``kinds="i"`` (the shifts): bools are shifted as int8, as NumPy."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x1, x2, /):
        dt, weak = _promoted(x1, x2)
        if dt.kind not in "biu":
            what = "bool or integer" if "b" in kinds else "integer"
            raise TypeError(f"ufunc '{np_fn.__name__}' not supported for dtype {dt} (as in "
                            f"NumPy): it takes {what} operands")
        if dt.kind not in kinds + "u":
            x1, x2 = convert(x1, dtypes.int8), convert(x2, dtypes.int8)
        return elementwise(prim, np_fn.__name__, x1, x2)
    fn.__name__ = np_fn.__name__
    return _export(fn)


bitwise_and = _bitwise(np.bitwise_and, ew.and_p)
bitwise_or = _bitwise(np.bitwise_or, ew.or_p)
bitwise_xor = _bitwise(np.bitwise_xor, ew.xor_p)
left_shift = _bitwise(np.left_shift, ew.shl_p, kinds="i")
right_shift = _bitwise(np.right_shift, ew.shr_p, kinds="i")


@_export
@implements(np.invert)
def invert(x, /):
    """~x: logical not for bools, -1 - x for signed integers (two's complement) and
    max - x for unsigned ones (every bit flipped), as NumPy."""
    t = type_of(x)
    if t.dtype == dtypes.bool_:
        return logical_not(x)
    if t.dtype.kind == "u":
        return subtract(int(np.iinfo(t.dtype).max), x)
    if t.dtype.kind != "i":
        raise TypeError(f"ufunc 'invert' not supported for dtype {t.dtype} (as in NumPy)")
    return subtract(-1, x)


bitwise_not = invert
__all__.append("bitwise_not")


@_export
@implements(np.logical_not)
def logical_not(x, /):
    return elementwise(ew.not_p, "logical_not", _truth(x))


@_export
@implements(np.true_divide)
def true_divide(x1, x2, /):
    """True division; integer operands divide as float64, as NumPy."""
    dt, weak = _promoted(x1, x2)
    if dt.kind in "biu":
        x1, x2 = convert(x1, dtypes.float64, _weak(x1)), convert(x2, dtypes.float64, _weak(x2))
        if weak:                             # Python ints: k / 0 raises, as in Python
            python_division(ew.div_p, x2, None)
            return python_division(ew.div_p, x2, elementwise(ew.div_p, "true_divide", x1, x2))
    return elementwise(ew.div_p, "true_divide", x1, x2)


divide = true_divide
__all__.append("divide")


def _promoted(*xs):
    return result_type(*xs)


def _weak(x):
    return type_of(x).weak


@_export
@implements(np.floor_divide)
def floor_divide(x1, x2, /):
    """Floor division; integer division by zero gives 0, as NumPy (Python bools and ints:
    ZeroDivisionError, as Python)."""
    return _python_bool_division(elementwise(ew.floordiv_p, "floor_divide",
                                             *_no_bool(x1, x2)), x1, x2)


@_export
@implements(np.remainder)
def remainder(x1, x2, /):
    """Remainder with the sign of the divisor; integer x % 0 gives 0, as NumPy (Python bools
    and ints: ZeroDivisionError, as Python)."""
    return _python_bool_division(elementwise(ew.rem_p, "remainder", *_no_bool(x1, x2)), x1, x2)


def _python_bool_division(out, x1, x2):
    """``out`` (x1 // x2 or x1 % x2), checked as Python does when both are Python bools
    (``True // False`` is ZeroDivisionError; the Python ints' check is ``elementwise``'s)."""
    dt, weak = _promoted(x1, x2)
    if not (weak and dt == dtypes.bool_):
        return out
    return _guard(logical_not(x2), out, "python_int_zero_division")


mod = remainder
__all__.append("mod")


def _no_bool(*xs):
    """Bool operands of an arithmetic ufunc without a bool loop: int8, as NumPy."""
    dt, _ = _promoted(*xs)
    if dt == dtypes.bool_:
        return [convert(x, dtypes.int8) for x in xs]
    return xs


@_export
@implements(np.power)
def power(x1, x2, /):
    """x1 ** x2. A Python-int exponent becomes integer_pow (exact repeated multiplication).
    A real array to a scalar exponent equal to 0.5 is its sqrt, as NumPy's power loop computes
    it (its fast path for an exponent of stride 0: sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where
    C's pow, which a NumPy scalar's ``**`` uses (``scalar_power``), gives 0.0 and inf): decided
    at trace time for a concrete exponent, at run time for a traced one (``_pow_loop``)."""
    dt, weak = _promoted(x1, x2)
    # (two Python numbers (weak) are Python's ``**``: C's pow, as scalar_power)
    if dt in (dtypes.float32, dtypes.float64) and not weak and _stride_zero(x1, x2):
        if isinstance(x1, Tracer) and _is_half(x2):
            return sqrt(convert(x1, dt, weak))
        if isinstance(x2, Tracer):
            # (a Python-number base is passed as one: custom_jvp takes values, not Literals)
            return _pow_loop(concrete(convert(x1, dt, weak)), convert(x2, dt, weak))
    return scalar_power(x1, x2)


def _stride_zero(x1, x2):
    """Whether NumPy's power loop sees the exponent with stride 0: a 0-d one, or a size-1 one
    broadcast over more elements (two 1-element 1-d arrays take the general loop)."""
    size2 = int(np.prod(shape_of(x2)))
    out = broadcast_shapes("power", shape_of(x1), shape_of(x2))
    return not shape_of(x2) or (size2 == 1 and int(np.prod(out)) > 1)


def _is_half(x):
    """Whether ``x`` is a concrete scalar 0.5 (a Python or NumPy float, a size-1 array)."""
    x = concrete(x)
    return isinstance(x, (float, np.floating, np.ndarray)) and np.size(x) == 1 and x == 0.5


def _pow_loop_value(x, p):
    return where(equal(p, 0.5), sqrt(x), elementwise(ew.pow_p, "power", x, p))


def _pow_loop_jvp(primals, tangents):
    """pow's own derivative (the sqrt branch would lose the exponent's tangent)."""
    return _pow_loop(*primals), ew.pow_p.jvp(primals, tangents)[1]


_pow_loop = custom_jvp(_pow_loop_value)
_pow_loop.trace_cache = {}
_pow_loop.defjvp(_pow_loop_jvp)


def scalar_power(x1, x2):
    """``x1 ** x2`` of a NumPy scalar ``x1`` (C's pow: no fast path for 0.5; see power)."""
    # (-64 <= n, not abs(n): this module's abs is NumPy's, which wraps -2**63)
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, bool) and \
            isinstance(x1, Tracer) and -64 <= int(x2) <= 64:
        n = int(x2)
        if n < 0 and x1.ty.weak and x1.dtype.kind == "i" and type(x2) is int:
            return _int_power(x1, x2, dtypes.int64, True)     # 0 ** -1: ZeroDivisionError
        if n < 0 and x1.dtype.kind in "biu":
            from .intrange import check_narrowing, int_exponent_sign
            if type(x2) is int:                  # NumPy converts it first: -1 is no uint8
                check_narrowing(n, x1.dtype)
            int_exponent_sign(n)                 # raises NumPy's ValueError, at the user's line
        if type(x2) is not int:                  # a NumPy integer is strong: it promotes x1
            x1 = convert(x1, _promoted(x1, x2)[0])
        if x1.dtype.kind == "b":
            x1 = convert(x1, dtypes.int64)
        if n == 1:
            return x1
        out = ew.integer_pow_p.bind(x1, n=n)
        if x1.ty.weak and x1.dtype.kind == "i":      # Python ints: exact, or an error
            out = python_int_result(ew.integer_pow_p, (x1,), out, n=n)
        elif x1.ty.weak and x1.dtype == dtypes.float64 and type(x2) is int and n < 0:
            # (a small positive n is repeated multiplication, unchecked as x * x is: the IR of
            # a Python float squared stays one integer_pow)
            out = _guard(equal(x1, 0), out, "python_zero_power")
        return out
    dt, weak = _promoted(x1, x2)
    if dt.kind in "biu":
        return _int_power(x1, x2, dt, weak)
    out = elementwise(ew.pow_p, "power", x1, x2)
    return _python_float_power(x1, x2, out) if weak and dt == dtypes.float64 else out


def _python_float_power(x1, x2, out):
    """``out = x1 ** x2`` of Python numbers (a float among them) checked as Python's float
    ``**`` does: ZeroDivisionError for 0.0 to a negative power, OverflowError where a finite
    base and exponent give inf (NumPy: inf and a warning). (A negative base to a fractional
    power is a complex number in Python, NaN here, as NumPy's float64; a Python-int exponent
    in [1, 64] is ``integer_pow``, repeated multiplication, inf on overflow as ``x * x``.)"""
    out = _guard(logical_and(equal(x1, 0), less(x2, 0)), out, "python_zero_power")
    big = logical_and(isinf(out), logical_and(isfinite(x1), isfinite(x2)))
    return _guard(big, out, "python_float_overflow")


def _int_power(x1, x2, dt, weak):
    """Integer power by binary exponentiation over all 63 exponent bits (wraps like NumPy).

    NumPy raises ``ValueError: Integers to negative integer powers are not allowed.`` for a
    negative exponent, and so does this: at trace time when the sign is known then (a literal,
    a concrete array, a Python-int argument: its sign is in the signature), else at run time
    on every backend, through a run-time check on the result (``ops/elementwise.py``, ``check_p``: the power's
    value passes through ``check(exponent < 0, ...)``, so it runs whenever the result is used).
    Unsigned exponents never raise.
    """
    from .intrange import check_narrowing, int_exponent_sign, unchecked
    from ._base import broadcast_to
    if dt == dtypes.bool_:
        dt, weak = dtypes.int8, False    # bool ** bool is int8 in NumPy
    # NumPy's OverflowError for an out-of-range Python int
    x1, x2 = [check_narrowing(a, dt) if _weak(a) and type_of(a).dtype.kind == "i" else a
              for a in (x1, x2)]
    python_ints = weak and dt == dtypes.int64
    try:
        nonneg = int_exponent_sign(x2) or dt.kind == "u"
    except ValueError:
        if not python_ints:
            raise
        nonneg = False    # Python: 0 ** -1 is ZeroDivisionError, 2 ** -1 a float: checked below
    x1, x2 = [a if isinstance(a, Tracer) else np.asarray(getattr(a, "value", a), dt)
              for a in (convert(x1, dt, weak), convert(x2, dt, weak))]
    result, base, e = 1 if weak else np.asarray(1, dt), x1, x2
    # (np.where's result is strongly typed; a power of Python ints is a Python int)
    select = (lambda c, a, b: ew.select_p.bind(c, a, b)) if weak else where
    with unchecked():                    # (the squarings past the exponent's top bit wrap)
        for _ in range(8 * dt.itemsize - (dt.kind == "i")):     # the exponent's value bits
            result = select(equal(remainder(e, 2), 1), multiply(result, base), result)
            base = multiply(base, base)
            e = floor_divide(e, 2)
    if weak and dt == dtypes.int64 and isinstance(result, Tracer):
        # Python ints: exact, or an error (|x1| ** x2 beyond int64; a negative x2 fails below)
        with unchecked():
            big = less_equal(2.0 ** 63, power(absolute(convert(x1, dtypes.float64)),
                                               convert(x2, dtypes.float64)))
        result = ew.check(logical_and(big, x2 >= 0), result, "python_int_overflow")
    if nonneg:
        return result
    # a negative e gives some value above (e // 2 stays -1); the check raises before anyone sees it
    bad = less(x2, 0)
    if python_ints:        # Python's error for 0 ** -1; NumPy's for 2 ** -1 (0.5 is no int)
        zero = logical_and(bad, equal(x1, 0))
        result = _guard(zero, result, "python_zero_power")
        bad = logical_and(bad, logical_not(zero))
    if np.ndim(bad) != 0:
        bad = broadcast_to(bad, np.shape(result))
    return _guard(bad, result, "negative_power")


def _nan_ignoring(np_fn, extreme, is_max):
    """fmax/fmin: the other operand where one is NaN. Complex numbers as NumPy's loop:
    ``x1 if isnan(x2) or x1 >= x2 (lexicographic, CGE/CLE) else x2`` (two NaNs give x1)."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x1, x2, /):
        dt, weak = _promoted(x1, x2)
        if dt.kind == "c":
            x1, x2 = convert(x1, dt, weak), convert(x2, dt, weak)
            keep = logical_or(isnan(x2), _complex_order(False, is_max)(x1, x2))
            return where(keep, x1, x2)
        m = extreme(x1, x2)
        if dt.kind != "f":
            return m
        return where(isnan(x1), x2, where(isnan(x2), x1, m))
    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"{'Max' if is_max else 'Min'}imum that ignores NaN (returns the other operand)."
    return _export(fn)


fmax = _nan_ignoring(np.fmax, maximum, True)
fmin = _nan_ignoring(np.fmin, minimum, False)


@_export
@implements(np.logaddexp)
@half_in_float32
def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)) without overflow: max + log1p(exp(-|x1 - x2|))."""
    x1, x2 = _inexact_pair(x1, x2)
    if type_of(x1).dtype.kind == "c":
        raise DTypeError("ufunc 'logaddexp' is not supported for complex operands (as in NumPy)")
    m = maximum(x1, x2)
    d = subtract(x1, x2)
    r = add(m, log1p(exp(negative(absolute(d)))))
    # equal infinities give inf - inf = nan in d; the answer is m itself then
    return where(isnan(d), add(x1, x2), r)


@_export
@implements(np.clip)
def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):  # noqa: A002
    """Clip to [a_min, a_max] (either may be None; NumPy 2's min=/max= too). NaN stays NaN."""
    if out is not None:
        raise UnsupportedError("clip(out=...) would write into an array; use the return value")
    from .intrange import clip_bound
    a_min = clip_bound(a, min if a_min is None else a_min, is_max=False)
    a_max = clip_bound(a, max if a_max is None else a_max, is_max=True)
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


@_export
@implements(np.sinc)
def sinc(x, /):
    """sin(pi x) / (pi x). For |pi x| < 1/2 it is the Taylor series (to the (pi x)^16 term,
    below an ulp there): the quotient's derivative, (cos - sin/(pi x)) / x, cancels
    catastrophically near 0 (float32 gradients were off by 30%), the series' does not.
    Integers of every width give float64 (NumPy's sinc is Python code, not a ufunc loop)."""
    t = type_of(x)
    x = x if t.dtype.kind in "fc" else convert(x, dtypes.float64, t.weak)
    px = multiply(x, np.pi)
    small = less(absolute(px), 0.5)
    safe = where(small, 1.0, px)
    p2 = square(where(small, px, 0.0))
    series = 0.0
    for k in range(8, -1, -1):            # Horner in (pi x)^2: sum (-1)^k (pi x)^2k / (2k+1)!
        series = add(multiply(series, p2), (-1) ** k / float(np.prod(np.arange(1, 2 * k + 2))))
    return where(small, series, true_divide(sin(safe), safe))


@_export
@implements(np.deg2rad)
@half_in_float32
def deg2rad(x, /):
    x = _real_inexact(x, "deg2rad")
    dt = type_of(x).dtype.type          # NumPy's constant is computed in the operand's precision
    return multiply(x, float(dt(np.pi) / dt(180)))


@_export
@implements(np.rad2deg)
@half_in_float32
def rad2deg(x, /):
    x = _real_inexact(x, "rad2deg")
    dt = type_of(x).dtype.type
    return multiply(x, float(dt(180) / dt(np.pi)))


def _real_inexact(x, opname):
    """``x`` as a float (``dtypes.float_result``); complex operands raise, as in NumPy."""
    if type_of(x).dtype.kind == "c":
        raise DTypeError(f"ufunc '{opname}' is not supported for complex operands (as in NumPy)")
    return inexact(x)


radians, degrees = deg2rad, rad2deg
__all__ += ["radians", "degrees"]


@_export
@implements(np.positive)
def positive(x, /):
    if type_of(x).dtype == dtypes.bool_:
        raise DTypeError("numpy.positive is not supported for bool arrays (as in NumPy)")
    return x


def _zeros_like(x):
    """Zeros of ``x``'s shape and dtype (creation.zeros_like, which is above this module)."""
    t = type_of(x)
    return filled(t.shape, 0, t.dtype) if isinstance(x, Tracer) else np.full(t.shape, 0, t.dtype)


@implements(np.where)
def where(condition, x=None, y=None, /):
    """Elementwise select: x where condition else y (both branches are computed)."""
    if x is None or y is None:
        raise UnsupportedError("where(condition) with one argument returns data-dependent "
                               "shapes; use the three-argument form where(condition, x, y)")
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


@_export
@implements(np.trunc)
def trunc(x, /):
    """Round toward zero: ceil below zero, floor elsewhere (exact for -0.0 and NaN); integer and
    bool arrays keep their dtype, as in NumPy 2."""
    x = as_traceable(x)
    if type_of(x).dtype.kind in "biu":
        return x
    return where(x < 0, ceil(x), floor(x))
