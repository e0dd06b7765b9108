"""Shared machinery of the NumPy layer: dtype promotion, broadcasting, and the wrapper that sends
concrete inputs to NumPy itself and traced inputs to primitives.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes
from ..core import Tracer, current_builder, type_of
from ..errors import ShapeError
from ..ir import Literal
from ..ops import elementwise as ew
from ..ops import structural as st
from . import intrange

_COMPARISONS = (ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.eq_p, ew.ne_p)


def has_tracer(args) -> bool:
    for a in args:
        if isinstance(a, Tracer):
            return True
        if isinstance(a, (list, tuple)) and has_tracer(a):
            return True
    return False


def implements(np_fn=None, *, name=None):
    """Decorate a traced implementation: concrete-only calls go straight to ``np_fn``."""
    def deco(traced_fn):
        fallback = np_fn

        @functools.wraps(traced_fn)
        def wrapper(*args, **kwargs):
            if fallback is not None and not has_tracer(args) and not has_tracer(kwargs.values()):
                return fallback(*[concrete(a) for a in args], **kwargs)
            return traced_fn(*args, **kwargs)

        wrapper.__tracejit_name__ = name or traced_fn.__name__
        return wrapper
    return deco


def concrete(x):
    """A Literal as the value NumPy should see: a Python scalar when it is weakly typed (so NEP 50
    still applies), a NumPy scalar of its dtype otherwise. Anything else is returned as is.

    Composites convert their operands (making Literals of scalars) and then call other
    tracejit.numpy functions; with no tracer among them those go to NumPy, which does not know
    Literals.
    """
    if not isinstance(x, Literal):
        return x
    if x.ty.weak:
        return {"b": bool, "i": int, "f": float, "c": complex}[x.ty.dtype.kind](x.value)
    return x.value


def result_type(*args) -> tuple[np.dtype, bool]:
    """(dtype, weak) of combining operands NumPy-2 style (Python scalars are weak)."""
    return dtypes.promote(*[(type_of(a).dtype, type_of(a).weak) for a in args])


def convert(x, dtype, weak=False):
    """``x`` as an operand of ``dtype``: Python scalars become literals, tracers get converted."""
    dtype = np.dtype(dtype)
    if isinstance(x, Tracer):
        if x.dtype == dtype:
            return x
        if x.ty.weak and x.dtype.kind == "i" and dtype in (dtypes.float32, dtypes.complex64):
            # NumPy converts a Python int through a double (a Literal does so too): rounding
            # int64 -> float32 directly can differ in the last bit from that double rounding
            x = ew.convert_p.bind(x, dtype=dtypes.float64)
        if dtype == dtypes.bool_ and x.dtype.kind == "c":
            # NumPy: a complex number is true when its real or imaginary part is nonzero (the
            # convert primitive refuses complex -> real, which would drop the imaginary part)
            return ew.ne_p.bind(x, Literal(0j, ir_type(x.dtype, True)))
        return ew.convert_p.bind(x, dtype=dtype)
    if isinstance(x, Literal):
        x = x.value
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        if dtype.kind in "iuf" and isinstance(x, complex):
            raise TypeError(f"cannot convert complex {x} to {dtype}")
        return Literal(x, ir_type(dtype, weak))
    arr = np.asarray(x)
    if arr.ndim == 0:
        return Literal(arr.astype(dtype)[()], ir_type(dtype, False))
    return arr.astype(dtype, copy=False)


def ir_type(dtype, weak):
    from ..ir import Type
    return Type(np.dtype(dtype), (), weak)


def shape_of(x) -> tuple:
    return type_of(x).shape


def broadcast_shapes(opname, *shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ShapeError(f"{opname}: operands could not be broadcast together with shapes "
                         f"{' '.join(str(s) for s in shapes)}") from None


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (a broadcast_in_dim equation when needed)."""
    xs = shape_of(x)
    shape = tuple(shape)
    if xs == shape:
        return x
    if not isinstance(x, (Tracer, Literal, np.ndarray, np.generic)):
        x = np.asarray(x)
    if isinstance(x, np.ndarray) and not isinstance(x, Tracer):
        return np.broadcast_to(x, shape)
    lead = len(shape) - len(xs)
    if lead < 0:
        raise ShapeError(f"cannot broadcast shape {xs} to {shape}")
    squeeze = [i for i, d in enumerate(xs) if d == 1 and shape[lead + i] != 1]
    if squeeze:
        from ..ops.structural import reshape_p
        keep = [d for i, d in enumerate(xs) if i not in squeeze]
        x = reshape_p.bind(x, shape=tuple(keep))
        dims = tuple(lead + i for i in range(len(xs)) if i not in squeeze)
    else:
        dims = tuple(range(lead, len(shape)))
    return st.broadcast_in_dim_p.bind(x, shape=shape, dims=dims)


def elementwise(prim, opname, *args, dtype=None, kinds=None):
    """Promote dtypes, broadcast non-scalar operands to the common shape, bind ``prim``.

    ``dtype``: force the operand dtype (e.g. float for true division of ints).
    """
    dt, weak = result_type(*args)
    if dtype is not None:
        dt = np.dtype(dtype)
    elif dt == dtypes.float64 and prim in _COMPARISONS:
        exact = intrange.compare_mixed_sign(prim, *args)     # uint64 vs int64: not via floats
        if exact is not None:
            return exact
    if intrange.narrows(dt) and any(intrange.is_weak_int(a) for a in args):
        # a Python int next to an int32 array: exact comparisons, NumPy's OverflowError
        if prim in _COMPARISONS:
            exact = intrange.compare(prim, *args, dt)
            if exact is not None:
                return exact
        else:
            args = [intrange.check_narrowing(a, dt) if intrange.is_weak_int(a) else a
                    for a in args]
    ops = [convert(a, dt, weak) for a in args]
    shapes = [shape_of(a) for a in ops]
    shape = broadcast_shapes(opname, *shapes)
    ops = [a if shape_of(a) in ((), shape) else broadcast_to(a, shape) for a in ops]
    if all(not isinstance(a, Tracer) for a in ops):
        # concrete operands inside a trace: compute now (constant folding at trace time)
        vals = [a.value if isinstance(a, Literal) else a for a in ops]
        return prim.impl(*vals)
    out = prim.bind(*ops)
    if weak and dt == dtypes.int64:      # Python ints: exact, or an error (never wrapped)
        out = intrange.python_int_result(prim, ops, out)
    return out


def filled(shape, value, dtype):
    """``shape`` filled with the scalar ``value``: inside a trace a broadcast of a literal,
    recorded in the current trace (a tracer, with ``.at`` and ``x[i] = v`` like any other traced
    array, for results such as ``isnan(int_array)`` or ``zeros_like(x)`` that do not depend on
    the values of their traced operand); a NumPy array outside any trace."""
    dtype = np.dtype(dtype)
    builder = current_builder()
    if builder is None:
        return np.full(shape, value, dtype=dtype)
    lit = Literal(value, ir_type(dtype, False))
    # bind would evaluate an operation on literals only; recording it keeps the value traced
    return builder.add_eqn(st.broadcast_in_dim_p, [lit], dict(shape=tuple(shape), dims=()))[0]


def inexact(x, what=""):
    """``x`` converted to the inexact dtype of NumPy's float ufunc loops
    (``dtypes.float_result``: bools and ints of 32 bits or more go to float64, 16-bit ints to
    float32; ``what``, the ufunc, names a refused float16)."""
    t = type_of(x)
    if t.dtype.kind in "fc":
        return x
    return convert(x, dtypes.float_result(t.dtype, what), t.weak)


def normalize_axis(axis, ndim, opname="") -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise np.exceptions.AxisError(f"{opname}: axis {axis} is out of bounds for array of "
                                      f"dimension {ndim}")
    return axis % ndim if ndim else 0


def normalize_axes(axis, ndim, opname="") -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    axes = tuple(sorted({normalize_axis(int(a), ndim, opname) for a in axis}))
    if len(axes) != len(axis):
        raise ValueError(f"{opname}: repeated axis in {axis}")
    return axes


def as_traceable(x):
    """A tracer stays; anything else becomes an ndarray of a supported dtype."""
    if isinstance(x, Tracer):
        return x
    if isinstance(x, Literal):
        return np.asarray(x.value)
    arr = np.asarray(x)
    dt = dtypes.canonical(arr.dtype)
    return arr if arr.dtype == dt else arr.astype(dt)
