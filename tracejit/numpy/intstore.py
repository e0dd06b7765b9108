"""Scalars stored into integer arrays as NumPy stores them (``x[i] = v``, ``x.fill(v)``): through
Python's ``int()`` (a NumPy scalar through an advanced index is cast as a 0-d array instead:
``setitem_value``), with NumPy's errors at trace time when the value is known (a literal, or a
Python-int argument by its recorded range, intrange.py) and at run time (``check``) otherwise;
and the values of np.put/np.place/np.putmask as NumPy converts them (``put_values``).

Above the ufuncs (it builds its checks from them), below mutation.py, its only user.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..ir import Literal
from ..ops.elementwise import check
from ._base import concrete, convert, has_tracer, is_scalar
from .creation import array
from .intrange import _known, check_narrowing
from .math import isinf, isnan, logical_or, trunc, where


def store_scalar(v, dtype):
    """``v``, a scalar NumPy stores into an integer array of ``dtype`` (``x[i] = v``,
    ``x.fill(v)``), as NumPy stores it: through Python's ``int()``, so a NaN raises ValueError,
    an infinity or a value outside the dtype's range OverflowError (at run time for a traced
    value: ``check``) — except a NumPy scalar into an unsigned array, which NumPy converts with
    a C cast through int64 that wraps (``np.float64(300.0)`` into uint8 is 44, ``-1.0`` 255).
    The caller has decided that ``v`` is a scalar (not a 0-d array, which NumPy casts); any
    other value or destination is returned unchanged."""
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


def setitem_value(v, idx, dtype):
    """``v`` as ``x[idx] = v`` stores it into an array of ``dtype``. A Python number always goes
    through ``store_scalar`` (int(): NumPy's OverflowError). A NumPy scalar does too through a
    basic index (integers, slices, ``...``, a 0-d integer array), but an advanced index (an
    integer array or list, any boolean) makes NumPy convert the value to a 0-d array first and
    cast it as arrays are cast: ``x[mask] = np.uint64(2**63)`` wraps into int64 where
    ``x[0] = np.uint64(2**63)`` raises OverflowError. Arrays are returned unchanged."""
    if isinstance(v, np.ndarray) or isinstance(v, Tracer) and not is_scalar(v):
        return v
    numpy_scalar = isinstance(v, np.generic) or isinstance(v, Tracer) and not type_of(v).weak
    if numpy_scalar and _advanced(idx):
        return v
    return store_scalar(v, dtype)


def _advanced(idx) -> bool:
    """Whether NumPy's setitem takes ``idx`` as an advanced index: a component that is a boolean
    (even a bare True) or an integer array or list of rank >= 1 (a 0-d one counts as an int)."""
    for c in idx if isinstance(idx, tuple) else (idx,):
        if isinstance(c, (bool, np.bool_)):
            return True
        if isinstance(c, (Tracer, np.ndarray)):
            if c.dtype == np.bool_ or c.ndim:
                return True
        elif isinstance(c, list):
            return True
    return False


def put_values(values, dtype, fname):
    """``values`` as NumPy's put/putmask/place convert them to ``dtype``, as np.array(values,
    dtype) does: a scalar in a list, or a bare Python number, is stored as ``x[i] = s`` stores
    it (``store_scalar``: through int(), so [np.int64(300)] into int8 raises
    OverflowError), an array or a bare NumPy scalar is cast (putmask and place refuse an array
    they cannot cast under 'safe', as NumPy)."""
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
    if isinstance(values, (list, tuple)):
        return [_stored(v, dtype) for v in values]
    if isinstance(values, np.ndarray) or isinstance(values, Tracer) and not is_scalar(values):
        return values
    return store_scalar(values, dtype)
