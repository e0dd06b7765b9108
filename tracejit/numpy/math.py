"""Elementwise NumPy functions (the ufuncs) on tracers; concrete inputs go to NumPy itself."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import DTypeError
from ..ops import elementwise as ew
from ._base import convert, elementwise, implements, inexact

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _unary_float(np_fn, prim):
    """A unary math function: ints promote to float64, as NumPy's ufunc loops do."""
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
    """A unary function that keeps the dtype (bools go to int64 where NumPy does that)."""
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        if type_of(x).dtype == dtypes.bool_ and "b" not in kinds:
            x = convert(x, dtypes.int64 if prim is not ew.floor_p else dtypes.float64)
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
        if type_of(x).dtype.kind in "bi":
            return x
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
    if type_of(x).dtype.kind in "bi" and decimals >= 0:
        return x
    if decimals == 0:
        return rint(x)
    scale = 10.0 ** decimals
    return true_divide(rint(multiply(x, scale)), scale)


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
    return multiply(x, 0)


@_export
@implements(np.conj)
def conj(x, /):
    return elementwise(ew.conj_p, "conj", x) if dtypes.is_complex(type_of(x).dtype) else x


conjugate = conj
__all__.append("conjugate")


@_export
@implements(np.angle)
def angle(z, deg=False):
    """Argument of a complex number (0 or pi for reals, as NumPy)."""
    z = inexact(z)
    if dtypes.is_complex(type_of(z).dtype):
        a = arctan2(imag(z), real(z))
    else:
        a = arctan2(multiply(z, 0.0), z)
    return multiply(a, 180.0 / np.pi) if deg else a


@_export
@implements(np.square)
def square(x, /):
    return power(x, 2) if isinstance(x, Tracer) else multiply(x, x)


@_export
@implements(np.reciprocal)
def reciprocal(x, /):
    t = type_of(x)
    if t.dtype.kind in "bi":
        raise DTypeError("reciprocal of an integer array truncates in NumPy; convert to float first")
    return true_divide(1, x)


def _predicate(np_fn, prim, int_value):
    @implements(np_fn, name=np_fn.__name__)
    def fn(x, /):
        t = type_of(x)
        if t.dtype.kind in "bi":
            from .creation import full_like
            return full_like(x, int_value, dtype=bool)
        return elementwise(prim, np_fn.__name__, x)
    fn.__name__ = np_fn.__name__
    return _export(fn)


isnan = _predicate(np.isnan, ew.isnan_p, False)
isinf = _predicate(np.isinf, ew.isinf_p, False)
isfinite = _predicate(np.isfinite, ew.isfinite_p, True)


def _binary(np_fn, prim, *, float_only=False):
    @implements(np_fn, name=np_fn.__name__)
    def fn(x1, x2, /):
        if float_only:
            x1, x2 = inexact(x1), inexact(x2)
        return elementwise(prim, np_fn.__name__, x1, x2)
    fn.__name__ = np_fn.__name__
    return _export(fn)


add = _binary(np.add, ew.add_p)
subtract = _binary(np.subtract, ew.sub_p)
multiply = _binary(np.multiply, ew.mul_p)
maximum = _binary(np.maximum, ew.max_p)
minimum = _binary(np.minimum, ew.min_p)
arctan2 = _binary(np.arctan2, ew.atan2_p, float_only=True)
hypot = _binary(np.hypot, ew.hypot_p, float_only=True)
equal = _binary(np.equal, ew.eq_p)
not_equal = _binary(np.not_equal, ew.ne_p)
less = _binary(np.less, ew.lt_p)
less_equal = _binary(np.less_equal, ew.le_p)
greater = _binary(np.greater, ew.gt_p)
greater_equal = _binary(np.greater_equal, ew.ge_p)


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


@_export
@implements(np.logical_not)
def logical_not(x, /):
    return elementwise(ew.not_p, "logical_not", _truth(x))


@_export
@implements(np.true_divide)
def true_divide(x1, x2, /):
    """True division; integer operands divide as float64, as NumPy."""
    dt, _ = _promoted(x1, x2)
    if dt.kind in "bi":
        x1, x2 = convert(x1, dtypes.float64, _weak(x1)), convert(x2, dtypes.float64, _weak(x2))
    return elementwise(ew.div_p, "true_divide", x1, x2)


divide = true_divide
__all__.append("divide")


def _promoted(*xs):
    from ._base import result_type
    return result_type(*xs)


def _weak(x):
    return type_of(x).weak


@_export
@implements(np.floor_divide)
def floor_divide(x1, x2, /):
    """Floor division; integer division by zero gives 0, as NumPy."""
    return elementwise(ew.floordiv_p, "floor_divide", *_no_bool(x1, x2))


@_export
@implements(np.remainder)
def remainder(x1, x2, /):
    """Remainder with the sign of the divisor; integer x % 0 gives 0, as NumPy."""
    return elementwise(ew.rem_p, "remainder", *_no_bool(x1, x2))


mod = remainder
__all__.append("mod")


def _no_bool(*xs):
    dt, weak = _promoted(*xs)
    if dt == dtypes.bool_:
        return [convert(x, dtypes.int64, weak) for x in xs]
    return xs


@_export
@implements(np.power)
def power(x1, x2, /):
    """x1 ** x2. A Python-int exponent becomes integer_pow (exact repeated multiplication)."""
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, bool) and \
            isinstance(x1, Tracer) and abs(int(x2)) <= 64:
        n = int(x2)
        if n < 0 and x1.dtype.kind in "bi":
            raise ValueError("Integers to negative integer powers are not allowed.")
        if x1.dtype.kind == "b":
            x1 = convert(x1, dtypes.int64)
        if n == 1:
            return x1
        return ew.integer_pow_p.bind(x1, n=n)
    dt, _ = _promoted(x1, x2)
    if dt.kind in "bi":
        raise DTypeError("power with a traced integer exponent is not supported; use a Python int "
                         "exponent or float operands")
    return elementwise(ew.pow_p, "power", x1, x2)


@_export
@implements(np.fmax)
def fmax(x1, x2, /):
    """Maximum that ignores NaN (returns the other operand)."""
    from .logic import where
    m = maximum(x1, x2)
    if _promoted(x1, x2)[0].kind not in "fc":
        return m
    return where(isnan(x1), x2, where(isnan(x2), x1, m))


@_export
@implements(np.fmin)
def fmin(x1, x2, /):
    """Minimum that ignores NaN (returns the other operand)."""
    from .logic import where
    m = minimum(x1, x2)
    if _promoted(x1, x2)[0].kind not in "fc":
        return m
    return where(isnan(x1), x2, where(isnan(x2), x1, m))


@_export
@implements(np.logaddexp)
def logaddexp(x1, x2, /):
    """log(exp(x1) + exp(x2)) without overflow: max + log1p(exp(-|x1 - x2|))."""
    from .logic import where
    x1, x2 = inexact(x1), inexact(x2)
    m = maximum(x1, x2)
    d = subtract(x1, x2)
    r = add(m, log1p(exp(negative(absolute(d)))))
    # equal infinities give inf - inf = nan in d; the answer is m itself then
    return where(isnan(d), add(x1, x2), r)


@_export
@implements(np.clip)
def clip(a, a_min=None, a_max=None):
    """Clip to [a_min, a_max] (either may be None). NaN stays NaN, as NumPy."""
    if a_min is not None:
        a = maximum(a, a_min)
    if a_max is not None:
        a = minimum(a, a_max)
    return a


@_export
@implements(np.sinc)
def sinc(x, /):
    from .logic import where
    x = inexact(x)
    px = multiply(x, np.pi)
    safe = where(equal(x, 0), 1.0, px)
    return where(equal(x, 0), 1.0, true_divide(sin(safe), safe))


@_export
@implements(np.deg2rad)
def deg2rad(x, /):
    return multiply(inexact(x), np.pi / 180)


@_export
@implements(np.rad2deg)
def rad2deg(x, /):
    return multiply(inexact(x), 180 / np.pi)


radians, degrees = deg2rad, rad2deg
__all__ += ["radians", "degrees"]


@_export
@implements(np.positive)
def positive(x, /):
    return x
