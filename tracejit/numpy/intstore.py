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
from .math import isinf, isnan, logical_and, logical_or, trunc, where


def store_scalar(v, dtype, valid=None):
    """``v``, a scalar NumPy stores into an integer array of ``dtype`` (``x[i] = v``,
    ``x.fill(v)``), as NumPy stores it: through Python's ``int()``, so a NaN raises ValueError,
    an infinity or a value outside the dtype's range OverflowError (at run time for a traced
    value: ``check``) — except a NumPy scalar into an unsigned array, which NumPy converts with
    a C cast through int64 that wraps (``np.float64(300.0)`` into uint8 is 44, ``-1.0`` 255).
    The caller has decided that ``v`` is a scalar (not a 0-d array, which NumPy casts); any
    other value or destination is returned unchanged. ``valid``, a traced bool or None: where
    the index ``v`` is stored at is in bounds (``_index_valid``); the value's errors are raised
    only there, so an out-of-range index raises its IndexError first, as in NumPy."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return v
    if not isinstance(v, Tracer):
        if isinstance(v, Literal):
            v = concrete(v)
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            try:
                np.zeros((), dtype)[()] = v            # NumPy's own error, if any
            except (ValueError, OverflowError) as e:
                if valid is None:
                    raise
                # stored only where the traced index is out of bounds, which raises IndexError
                error = "nan_to_int" if isinstance(e, ValueError) else \
                    "inf_to_int" if np.isinf(v) else "scalar_out_of_bounds"
                return check(valid, convert(valid, dtype), error=error)
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
        v = check(_where_valid(isnan(v), valid), v, error="nan_to_int")
        v = check(_where_valid(isinf(v), valid), v, error="inf_to_int")
        t = trunc(v)
        return check(_where_valid(logical_or(t < info.min, t >= float(info.max + 1)), valid), v,
                     error="scalar_out_of_bounds")
    if not (ty.weak or signed):
        return v                                      # integer casts wrap, as NumPy's C cast
    if _known(v) is not None and valid is None:       # a Python-int argument: its range fact
        check_narrowing(v, dtype)
        return v
    src = np.iinfo(ty.dtype)
    if info.min <= src.min and src.max <= info.max:
        return v
    low, high = max(info.min, src.min), min(info.max, src.max)
    bad = logical_or(v < np.array(low, ty.dtype)[()], v > np.array(high, ty.dtype)[()])
    # (strong, so that storing it is not checked again, before the index)
    return convert(check(_where_valid(bad, valid), v, error="scalar_out_of_bounds"), dtype)


def _where_valid(bad, valid):
    return bad if valid is None else logical_and(bad, valid)


def setitem_value(v, idx, dtype, shape=None):
    """``v`` as ``x[idx] = v`` stores it into an array of ``dtype``. A Python number always goes
    through ``store_scalar`` (int(): NumPy's OverflowError). A NumPy scalar does too through a
    basic index (integers, slices, ``...``, a 0-d integer array), but an advanced index (an
    integer array or list, any boolean) makes NumPy convert the value to a 0-d array first and
    cast it as arrays are cast: ``x[mask] = np.uint64(2**63)`` wraps into int64 where
    ``x[0] = np.uint64(2**63)`` raises OverflowError. Arrays are returned unchanged. With the
    array's ``shape``, a basic index is checked before the value, as NumPy does (an advanced
    one after it: NumPy converts the value first)."""
    if isinstance(v, np.ndarray) or isinstance(v, Tracer) and not is_scalar(v):
        return v
    advanced = _advanced(idx)
    numpy_scalar = isinstance(v, np.generic) or isinstance(v, Tracer) and not type_of(v).weak
    if numpy_scalar and advanced:
        return v
    valid = None if advanced or shape is None else _index_valid(idx, shape)
    return store_scalar(v, dtype, valid)


def _index_valid(idx, shape):
    """Whether the basic index ``idx`` of an array of ``shape`` is in bounds: None when its
    integers are all concrete (checked here, NumPy's IndexError), else a traced bool over the
    traced ones. An index NumPy rejects for another reason is left to the indexing itself."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    used = sum(p is not None and p is not Ellipsis for p in parts)
    axis, valid = 0, None
    for p in parts:
        if p is None:
            continue
        if p is Ellipsis:
            axis += len(shape) - used
            continue
        if axis >= len(shape):
            return valid
        n = shape[axis]
        if isinstance(p, Tracer) and p.ndim == 0 and p.dtype.kind in "iu":
            if p.dtype.kind == "u":
                ok = convert(p, dtypes.uint64) < np.uint64(n)
            else:
                i = convert(p, dtypes.int64)
                ok = logical_and(i >= np.int64(-n), i < np.int64(n))
            valid = ok if valid is None else logical_and(valid, ok)
        elif isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
            if not -n <= p < n:
                raise IndexError(f"index {p} is out of bounds for axis {axis} with size {n}")
        axis += 1
    return valid


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
