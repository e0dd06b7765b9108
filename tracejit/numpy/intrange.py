"""Python ints next to narrower integer arrays, as NumPy 2 (NEP 50) treats them.

NumPy knows the value of a Python int: ``int32_array < 2**40`` is exact (all True) and
``int32_array + 2**40`` (or ``uint8_array + -1``) raises ``OverflowError: Python integer ...
out of bounds for int32``. A traced Python-int argument is an ``i64`` weak tracer whose value
is unknown at trace time, so:

- The call signature records an :class:`IntRange` per Python-int argument (which of the
  integer dtypes narrower than int64 it fits, and its sign: it fits uint64 when it is not
  negative); ``arguments`` makes those facts visible to the trace. The trace records each
  fact it relies on (``Facts.used``): its graph is reused for a call whose ints differ only in
  facts it did not rely on (no retrace), and a graph relying on any fact gets no native fast
  path entry (that entry does not check ranges).
- Comparisons with a traced weak int are exact for every int64 value (``compare``): the int is
  clamped to the array's range and the clamped-away cases fixed up with scalar flags, so they
  need no fact. Literal ints are folded when out of range.
- uint64 against a signed integer array compares exactly too (``compare_mixed_sign``), as
  NumPy 2 does, although the two promote to float64.
- Arithmetic (every other integer ufunc) raises NumPy's OverflowError at trace time for a
  literal or an argument known to be out of range (``check_narrowing``); a weak int computed
  inside the trace (``k * 2``) has no recorded range: its value is checked when the function
  runs (``check_p``), on every backend.
- Python ints computed from Python ints are exact in Python; traced, they are int64, so each
  operation on them (+ - * // % ** << >>, unary -, abs) checks at run time that its result did
  not wrap (``python_int_result``: OverflowError), and ``//``/``%`` by zero and negative shift
  counts raise Python's ZeroDivisionError/ValueError, where NumPy's int64 would answer quietly.
- Stores: a scalar stored into an integer array goes through Python's int() (``store_scalar``),
  and so do the scalars of a list of values given to np.put/np.place/np.putmask
  (``put_values``: NumPy converts the list with np.array(values, dtype)).

Invariant: the registry maps ``id(var)`` of the current trace's input vars, which the trace
keeps alive, to their range; it is reset when the trace ends.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import _with_location
from ..ir import Literal


# the integer dtypes a Python int (an int64 value) may not fit, besides uint64 (fits unless
# negative); each is an IntRange field ``fits_<name>``
_NARROW = (dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32)


class IntRange(NamedTuple):
    """What the cache key records about a Python-int argument (its value is traced)."""
    fits_int8: bool
    fits_uint8: bool
    fits_int16: bool
    fits_uint16: bool
    fits_int32: bool
    fits_uint32: bool
    negative: bool

    def __str__(self):
        sign = "negative" if self.negative else "non-negative"
        for dt in _NARROW:
            if getattr(self, f"fits_{dt.name}"):
                return f"{sign} int within the {dt.name} range"
        return f"{sign} int outside the {'int32' if self.negative else 'uint32'} range"


def of(value: int) -> IntRange:
    """The range class of a Python int (ints outside int64 fail later, at conversion)."""
    return IntRange(*(_fits(value, dt) for dt in _NARROW), value < 0)


def ranges(leaves) -> tuple:
    """Signature.int_ranges of a call's leaves (empty when no leaf is a Python int)."""
    out = tuple(of(x) if type(x) is int else None for x in leaves)
    return out if any(r is not None for r in out) else ()


def _field(dtype):
    """The IntRange field saying whether an int fits ``dtype`` (a dtype ``narrows`` to), and
    the value of that field for which it fits."""
    dtype = np.dtype(dtype)
    return ("negative", False) if dtype == dtypes.uint64 else (f"fits_{dtype.name}", True)


_INT64_MAX = (1 << 63) - 1


class Facts:
    """The ranges of one trace's Python-int inputs; ``used``: the (leaf index, IntRange field,
    value) the graph relies on."""

    def __init__(self):
        self.ranges: dict = {}         # id(input var) -> (IntRange, value, leaf index)
        self.used: set = set()


_facts: contextvars.ContextVar = contextvars.ContextVar("tracejit_int_facts", default=None)


@contextlib.contextmanager
def arguments(tracers, ranges, values):
    """Record, while the body traces, the range of each input tracer whose ``ranges`` entry
    is an IntRange (``values``: the call's Python ints, for error messages only: a trace that
    raises is not cached, so the message is about this call's value)."""
    facts = Facts()
    for i, (t, r, v) in enumerate(zip(tracers, ranges, values)):
        if r is not None:
            facts.ranges[id(t.irvar)] = (r, v, i)
    token = _facts.set(facts)
    try:
        yield facts
    finally:
        _facts.reset(token)


def _known(x):
    """(IntRange, value, leaf index) of a traced Python-int argument of the current trace, or
    None."""
    facts = _facts.get()
    if facts is None or not isinstance(x, Tracer):
        return None
    return facts.ranges.get(id(x.irvar))


def _rely(known, field):
    """Record that the graph is valid only for ints with this argument's ``field``."""
    _facts.get().used.add((known[2], field, getattr(known[0], field)))


def is_weak_int(x) -> bool:
    t = type_of(x)
    return t.weak and t.dtype.kind == "i"


def _python_int(x):
    """The value of a concrete weak int (Python int or weak Literal), else None."""
    if isinstance(x, Literal):
        return int(x.value) if x.ty.weak and x.ty.dtype.kind == "i" else None
    if type(x) is int:
        return x
    return None


def narrows(dtype) -> bool:
    """A weak int converted to ``dtype`` may not fit (an integer dtype other than int64)."""
    dtype = np.dtype(dtype)
    return dtype.kind in "iu" and dtype != dtypes.int64


def _overflow(value, dtype):
    return OverflowError(_with_location(f"Python integer {value} out of bounds for {dtype}"))


def _fits(value, dtype) -> bool:
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


def check_narrowing(x, dtype):
    """``x`` as an arithmetic ufunc converts the weak int ``x`` to ``dtype``: NumPy's
    OverflowError when it is known not to fit (a literal, an argument's range, while tracing;
    a recorded fact when the graph relies on it fitting), a run-time check of its value for a
    Python int the function computed (``k * 2``). Anything else passes unchanged."""
    if not narrows(dtype):
        return x
    value = _python_int(x)
    if value is not None:
        if not _fits(value, dtype):
            raise _overflow(value, np.dtype(dtype))
        return x
    known = _known(x)
    if known is not None:
        field, fits = _field(dtype)
        if getattr(known[0], field) != fits:
            raise _overflow(known[1], np.dtype(dtype))
        _rely(known, field)
        return x
    if not (isinstance(x, Tracer) and is_weak_int(x)):
        return x
    from ..ops.elementwise import check
    info = np.iinfo(dtype)
    with unchecked():
        bad = x < int(info.min) if info.max >= _INT64_MAX else \
            (x < int(info.min)) | (x > int(info.max))
    return check(bad, x, error="python_int_out_of_bounds")


# Python ints computed in a trace are weak int64 tracers; Python's ints are exact, so an
# operation whose int64 result wrapped (or a // or % by zero, or a negative shift) raises when
# the function runs instead (``python_int_result``); the expressions that detect it are
# computed unchecked
_checking: contextvars.ContextVar = contextvars.ContextVar("tracejit_int_unchecked",
                                                           default=False)


@contextlib.contextmanager
def unchecked():
    """While it is active, operations on Python ints are not checked (``python_int_result``:
    the checks' own expressions, a power's squarings past the exponent's top bit)."""
    token = _checking.set(True)
    try:
        yield
    finally:
        _checking.reset(token)


def python_int_result(prim, ops, out, n=None):
    """``out``, the weak int64 result of ``prim(*ops)`` on Python ints (weak int tracers and
    literals; ``n``: integer_pow's exponent), checked to be Python's exact result: OverflowError
    when it wrapped around int64, ZeroDivisionError for ``//`` or ``%`` by zero, ValueError for
    a negative shift count."""
    from ._base import concrete, convert
    from .math import absolute
    name = prim.name
    if _checking.get() or name not in _INT_CHECKS or not isinstance(out, Tracer):
        return out
    with unchecked():
        a, b = (concrete(o) for o in (ops[0], ops[-1]))
        lo = -_INT64_MAX - 1
        if name == "add":
            bad = ((a ^ out) & (b ^ out)) < 0
        elif name == "sub":
            bad = ((a ^ b) & (a ^ out)) < 0
        elif name == "mul":
            bad = (a != 0) & ((out // _nonzero(a) != b) | ((a == -1) & (b == lo)))
        elif name in ("neg", "abs"):
            bad = a == lo
        elif name == "integer_pow":
            bad = absolute(convert(a, dtypes.float64)) ** float(n) >= 2.0 ** 63
        elif name in ("floordiv", "rem"):
            out = _guard(b == 0, out, "python_int_zero_division")
            bad = (a == lo) & (b == -1) if name == "floordiv" else False
        elif name == "shl":
            out = _guard(b < 0, out, "python_int_negative_shift")
            bad = (b >= 0) & ((b > 63) & (a != 0) | ((out >> _clip_shift(b)) != a))
        else:                                            # shr
            return _guard(b < 0, out, "python_int_negative_shift")
    return _guard(bad, out, "python_int_overflow")


def _guard(bad, out, error):
    """``check(bad, out, error)``; a concrete ``bad`` raises now or passes."""
    from ..ops.elementwise import ERRORS, check
    if isinstance(bad, Tracer):
        return check(bad, out, error=error)
    if bad:
        exc, message = ERRORS[error]
        raise exc(_with_location(message))
    return out


_INT_CHECKS = frozenset(("add", "sub", "mul", "neg", "abs", "integer_pow", "floordiv", "rem",
                         "shl", "shr"))


def _nonzero(a):
    from .logic import where
    return where(a == 0, 1, a)


def _clip_shift(b):
    from .math import clip
    return clip(b, 0, 63)


_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def compare(prim, x1, x2, dtype):
    """``prim(x1, x2)`` (a comparison) exactly, where one operand is a weak int and ``dtype``
    (the promoted dtype) is narrower than it: None when neither operand needs it."""
    from ..ops import elementwise as ew
    from ._base import broadcast_shapes, elementwise, filled, shape_of
    from .math import logical_and, logical_not, logical_or
    if not narrows(dtype):
        return None
    name = prim.name
    if is_weak_int(x1) and not is_weak_int(x2):
        x1, x2, name = x2, x1, _FLIP[name]           # the weak int on the right: x OP k
    elif not is_weak_int(x2) or is_weak_int(x1):
        return None
    info = np.iinfo(dtype)
    value = _python_int(x2)
    prims = {p.name: p for p in (ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.eq_p, ew.ne_p)}
    if value is not None:
        if _fits(value, dtype):
            return None
        # every value of x is on the same side of k: the answer is a constant
        above = value > info.max
        answer = {"lt": above, "le": above, "gt": not above, "ge": not above,
                  "eq": False, "ne": True}[name]
        shape = broadcast_shapes(name, shape_of(x1), ())
        return filled(shape, answer, dtypes.bool_)
    if not isinstance(x2, Tracer):
        return None
    # x OP k == x OP clamp(k), corrected where clamping moved k (one side of the whole range;
    # uint64's maximum is beyond every int64 k: only its lower side clamps)
    from ._base import convert
    lo, hi = int(info.min), min(int(info.max), _INT64_MAX)
    k = elementwise(ew.max_p, "maximum", x2, lo)
    if hi < _INT64_MAX:
        k = elementwise(ew.min_p, "minimum", k, hi)
    c = convert(k, dtype)
    above = elementwise(ew.gt_p, "greater", x2, hi)
    below = elementwise(ew.lt_p, "less", x2, lo)
    r = elementwise(prims[name], name, convert(x1, dtype), c)
    if name == "lt":
        return logical_or(r, above)
    if name == "le":
        return logical_and(r, logical_not(below))
    if name == "gt":
        return logical_or(r, below)
    if name == "ge":
        return logical_and(r, logical_not(above))
    out = logical_or(above, below)
    return logical_or(r, out) if name == "ne" else logical_and(r, logical_not(out))


def compare_mixed_sign(prim, x1, x2):
    """``prim(x1, x2)`` (a comparison) exactly when one operand is uint64 and the other a
    signed integer: they promote to float64, but NumPy 2 compares them exactly (its ``qQ``
    loops), so ``uint64(2**63) == int64(2**63 - 1)`` is False. None for other operands."""
    from ..ops import elementwise as ew
    from ._base import convert, elementwise
    from .math import logical_and, logical_not, logical_or
    t1, t2 = type_of(x1), type_of(x2)
    name = prim.name
    if t1.weak or t2.weak or {t1.dtype.kind, t2.dtype.kind} != {"u", "i"} or \
            dtypes.uint64 not in (t1.dtype, t2.dtype):
        return None
    if t1.dtype.kind == "i":
        x1, x2, name = x2, x1, _FLIP[name]           # the unsigned operand on the left
    prims = {p.name: p for p in (ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.eq_p, ew.ne_p)}
    negative = elementwise(ew.lt_p, "less", x2, 0)  # below every uint64
    r = elementwise(prims[name], name, x1, convert(x2, dtypes.uint64))
    if name in ("gt", "ge", "ne"):
        return logical_or(r, negative)
    return logical_and(r, logical_not(negative))


def clip_bound(a, bound, is_max):
    """NumPy's clip ignores a Python-int bound beyond the array dtype's range on the side that
    cannot restrict (``a_max`` above the maximum); beyond the other side it raises (through
    maximum/minimum). The bound to use, or None to drop it."""
    dt = type_of(a).dtype
    if bound is None or not narrows(dt):
        return bound
    value = _python_int(bound)
    if value is not None:
        return None if (value > np.iinfo(dt).max if is_max else value < np.iinfo(dt).min) \
            else bound
    known = _known(bound)
    field, fits = _field(dt)
    if known is not None and getattr(known[0], field) != fits and known[0].negative != is_max:
        _rely(known, field)
        _rely(known, "negative")
        return None
    return bound


def int_exponent_sign(x2):
    """For an integer power: raise NumPy's ValueError when the exponent is known to be
    negative (a literal, a concrete array or a Python-int argument); True when it is known to
    be non-negative, False when only the run time knows."""
    if isinstance(x2, Tracer) and x2.known() is not None:
        x2 = x2.known()                     # an array the function made with NumPy
    value = _python_int(x2)
    if value is None and not isinstance(x2, Tracer):
        arr = np.asarray(getattr(x2, "value", x2))
        negative, known = bool((arr < 0).any()), True
    elif value is not None:
        negative, known = value < 0, True
    else:
        k = _known(x2)
        if k is None:
            return False
        _rely(k, "negative")
        negative, known = k[0].negative, True
    if negative:
        raise ValueError(_with_location("Integers to negative integer powers are not allowed."))
    return known


def store_scalar(v, dtype):
    """``v``, a scalar NumPy stores into an integer array of ``dtype`` (``x[i] = v``,
    ``x.fill(v)``), as NumPy stores it: through Python's ``int()``, so a NaN raises ValueError,
    an infinity or a value outside the dtype's range OverflowError (at run time for a traced
    value: ``check``) — except a NumPy scalar into an unsigned array, which NumPy converts with
    a C cast through int64 that wraps (``np.float64(300.0)`` into uint8 is 44, ``-1.0`` 255).
    The caller has decided that ``v`` is a scalar (not a 0-d array, which NumPy casts); any
    other value or destination is returned unchanged."""
    from ..ops.elementwise import check
    from ._base import concrete, convert
    from .logic import where
    from .math import isinf, isnan, logical_or
    from .tail import trunc
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return v
    if not isinstance(v, Tracer):
        if isinstance(v, Literal):
            v = concrete(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            np.zeros((), dtype)[()] = v                # NumPy's own error, if any
        return v
    ty = type_of(v)
    if ty.ndim or ty.dtype.kind not in "iuf":
        return v
    info, signed = np.iinfo(dtype), dtype.kind == "i"
    if ty.dtype.kind == "f":
        if not (ty.weak or signed):                   # C cast through int64
            wrapped = convert(convert(v, dtypes.int64), dtype)
            return where(v < 0, wrapped, convert(v, dtype)) if dtype == dtypes.uint64 else \
                wrapped
        v = check(isnan(v), v, error="nan_to_int")
        v = check(isinf(v), v, error="inf_to_int")
        t = trunc(v)
        return check(logical_or(t < info.min, t >= float(info.max + 1)), v,
                     error="scalar_out_of_bounds")
    if not (ty.weak or signed):
        return v                                      # integer casts wrap, as NumPy's C cast
    if _known(v) is not None:                         # a Python-int argument: its range fact
        check_narrowing(v, dtype)
        return v
    src = np.iinfo(ty.dtype)
    if info.min <= src.min and src.max <= info.max:
        return v
    low, high = max(info.min, src.min), min(info.max, src.max)
    bad = logical_or(v < np.array(low, ty.dtype)[()], v > np.array(high, ty.dtype)[()])
    return check(bad, v, error="scalar_out_of_bounds")


def put_values(values, dtype, fname):
    """``values`` as NumPy's put/putmask/place convert them to ``dtype``, as np.array(values,
    dtype) does: a scalar in a list, or a bare Python number, is stored as ``x[i] = s`` stores
    it (``store_scalar``: through int(), so [np.int64(300)] into int8 raises
    OverflowError), an array or a bare NumPy scalar is cast (putmask and place refuse an array
    they cannot cast under 'safe', as NumPy)."""
    from ._base import has_tracer
    from .creation import array
    from .mutation import is_scalar
    if isinstance(values, (list, tuple)):
        if not has_tracer(values):
            return np.array(values, dtype)            # NumPy's own conversion and errors
        return array(_stored(values, dtype), dtype)
    if isinstance(values, (np.ndarray, Tracer)) and not \
            (isinstance(values, Tracer) and is_scalar(values)):
        vt = type_of(values)
        if fname in ("place", "putmask") and not np.can_cast(vt.dtype, dtype, casting="safe"):
            what = "scalar" if vt.ndim == 0 else "array data"
            raise TypeError(f"Cannot cast {what} from dtype('{vt.dtype}') to dtype('{dtype}') "
                            f"according to the rule 'safe' (np.{fname} values)")
        return values
    if not isinstance(values, np.generic) and (not isinstance(values, Tracer) or
                                               type_of(values).weak):
        values = store_scalar(values, dtype)  # a Python number: int(), as x[i] = v
    return values


def _stored(values, dtype):
    """A list of values with its scalars stored as ``x[i] = s`` stores them (see put_values)."""
    from .mutation import is_scalar
    if isinstance(values, (list, tuple)):
        return [_stored(v, dtype) for v in values]
    if isinstance(values, np.ndarray) or isinstance(values, Tracer) and not is_scalar(values):
        return values
    return store_scalar(values, dtype)
