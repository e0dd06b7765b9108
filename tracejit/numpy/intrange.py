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
- Comparisons with a traced weak int are exact for every int64 value (``_base.compare``,
  called by ``elementwise``): the int is clamped to the array's range and the clamped-away
  cases fixed up with scalar flags, so they need no fact. Literal ints are folded when out of
  range.
- uint64 against a signed integer array compares exactly too (``_base.compare_mixed_sign``), as
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

Scalars stored into integer arrays (``x[i] = v``) are intstore.py's. This module builds no
operation: it is the range facts the layers above read (it imports nothing of tracejit.numpy).

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
