"""Shared machinery of the NumPy layer: dtype promotion, broadcasting, and the wrapper that sends
concrete inputs to NumPy itself and traced inputs to primitives; exact comparisons with Python
ints and uint64 (``compare``, ``compare_mixed_sign``, from intrange.py's facts), concrete-shape
checks and the gather at the end of ``take``.

Below every other module of the NumPy layer but intrange.py: it imports no other.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import dtypes
from ..core import Tracer, current_builder, static_value, type_of
from ..errors import ConcretizationError, ShapeError, _with_location
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
    types = [type_of(a) for a in args]
    return dtypes.promote(*[(t.dtype, t.weak) for t in types])


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
        if weak and x.ty.weak:       # a Python number stays one (n / 4 next to float32 data)
            return ew.convert_p.bind(x, dtype=dtype, weak=True)
        return ew.convert_p.bind(x, dtype=dtype)
    if isinstance(x, Literal):
        x = concrete(x)                  # a weak literal stays a Python scalar (and weak)
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
    # the common case (tracing every elementwise op): equal shapes, or scalars next to one
    # shape; np.broadcast_shapes costs ~25 us a call
    if all(type(s) is tuple for s in shapes):
        nonscalar = {s for s in shapes if s}
        if len(nonscalar) <= 1:
            return nonscalar.pop() if nonscalar else ()
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as e:
        listed = ' '.join(str(s) for s in shapes)
        if "too large" in str(e):       # the shapes agree, but their element count overflows
            raise ShapeError(f"{opname}: operands with shapes {listed} broadcast to more "
                             f"elements than an array can hold (NumPy: {e})") from None
        raise ShapeError(f"{opname}: operands could not be broadcast together with shapes "
                         f"{listed}") from None


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
        exact = compare_mixed_sign(prim, *args)              # uint64 vs int64: not via floats
        if exact is not None:
            return exact
    if intrange.narrows(dt) and any(intrange.is_weak_int(a) for a in args):
        # a Python int next to an int32 array: exact comparisons, NumPy's OverflowError
        if prim in _COMPARISONS:
            exact = compare(prim, *args, dt)
            if exact is not None:
                return exact
        else:
            args = [intrange.check_narrowing(a, dt) if intrange.is_weak_int(a) else a
                    for a in args]
    ops = [convert(a, dt, weak) for a in args]
    shapes = [shape_of(a) for a in ops]
    shape = broadcast_shapes(opname, *shapes)
    ops = [a if shape_of(a) in ((), shape) else broadcast_to(a, shape) for a in ops]
    python_float = weak and dt == dtypes.float64 and prim.name in _FLOAT_DIVISIONS
    if python_float:
        python_division(prim, ops[1], None)      # a concrete zero raises now
    if all(not isinstance(a, Tracer) for a in ops):
        # concrete operands inside a trace: compute now (constant folding at trace time)
        vals = [a.value if isinstance(a, Literal) else a for a in ops]
        return prim.impl(*vals)
    out = prim.bind(*ops)
    if weak and dt == dtypes.int64:      # Python ints: exact, or an error (never wrapped)
        out = python_int_result(prim, ops, out)
    elif python_float:
        out = python_division(prim, ops[1], out)
    return out


_FLOAT_DIVISIONS = {"div": "python_float_division", "floordiv": "python_float_floor_division",
                    "rem": "python_float_floor_division"}


def python_division(prim, divisor, out):
    """``out``, the result of ``prim`` (div, floordiv, rem) on Python numbers, checked as Python
    does: ZeroDivisionError where ``divisor`` is 0 (NumPy gives inf/nan and a warning)."""
    zero = concrete(divisor) == 0
    if out is None and isinstance(zero, Tracer):     # (before the operation: concrete only)
        return None
    return _guard(zero, out, _FLOAT_DIVISIONS[prim.name])


# exact comparisons with Python ints and uint64 (see intrange.py), used by ``elementwise``

_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def compare(prim, x1, x2, dtype):
    """``prim(x1, x2)`` (a comparison) exactly, where one operand is a weak int and ``dtype``
    (the promoted dtype) is narrower than it: None when neither operand needs it."""
    if not intrange.narrows(dtype):
        return None
    name = prim.name
    if intrange.is_weak_int(x1) and not intrange.is_weak_int(x2):
        x1, x2, name = x2, x1, _FLIP[name]           # the weak int on the right: x OP k
    elif not intrange.is_weak_int(x2) or intrange.is_weak_int(x1):
        return None
    info = np.iinfo(dtype)
    value = intrange._python_int(x2)
    prims = {p.name: p for p in (ew.lt_p, ew.le_p, ew.gt_p, ew.ge_p, ew.eq_p, ew.ne_p)}
    if value is not None:
        if intrange._fits(value, dtype):
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
    lo, hi = int(info.min), min(int(info.max), intrange._INT64_MAX)
    k = elementwise(ew.max_p, "maximum", x2, lo)
    if hi < intrange._INT64_MAX:
        k = elementwise(ew.min_p, "minimum", k, hi)
    c = convert(k, dtype)
    above = elementwise(ew.gt_p, "greater", x2, hi)
    below = elementwise(ew.lt_p, "less", x2, lo)
    r = elementwise(prims[name], name, convert(x1, dtype), c)
    if name == "lt":
        return _or(r, above)
    if name == "le":
        return _and(r, _not(below))
    if name == "gt":
        return _or(r, below)
    if name == "ge":
        return _and(r, _not(above))
    out = _or(above, below)
    return _or(r, out) if name == "ne" else _and(r, _not(out))


def compare_mixed_sign(prim, x1, x2):
    """``prim(x1, x2)`` (a comparison) exactly when one operand is uint64 and the other a
    signed integer: they promote to float64, but NumPy 2 compares them exactly (its ``qQ``
    loops), so ``uint64(2**63) == int64(2**63 - 1)`` is False. None for other operands."""
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
        return _or(r, negative)
    return _and(r, _not(negative))


def _or(x1, x2):
    """``logical_or`` of two boolean operands (comparison results), as math.logical_or."""
    return _logical(np.logical_or, ew.or_p, x1, x2)


def _and(x1, x2):
    return _logical(np.logical_and, ew.and_p, x1, x2)


def _not(x):
    return _logical(np.logical_not, ew.not_p, x)


def _logical(np_fn, prim, *xs):
    if not has_tracer(xs):
        return np_fn(*[concrete(x) for x in xs])
    return elementwise(prim, np_fn.__name__, *xs)


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


def inexact(x):
    """``x`` converted to the inexact dtype of NumPy's float ufunc loops
    (``dtypes.float_result``: bools and 8-bit ints go to float16, 16-bit ints to float32, wider
    ints to float64)."""
    t = type_of(x)
    if t.dtype.kind in "fc":
        return x
    return convert(x, dtypes.float_result(t.dtype), t.weak)


def half_in_float32(fn):
    """A composite standing for one NumPy float ufunc, computed as NumPy's float16 loop does
    when the operands promote to float16: converted to float32, ``fn`` on them, each float32
    result rounded to float16 once (step by step in float16, the composite would round after
    every step)."""
    @functools.wraps(fn)
    def wrapper(*args):
        if dtypes.float_result(result_type(*args)[0]) != dtypes.float16:
            return fn(*args)
        # weak operands (Python scalars) adapt to float32 by themselves
        out = fn(*[a if type_of(a).weak else convert(a, dtypes.float32) for a in args])
        return tuple(map(_to_half, out)) if isinstance(out, tuple) else _to_half(out)
    return wrapper


def _to_half(x):
    return convert(x, dtypes.float16) if type_of(x).dtype == dtypes.float32 else x


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


def strong(out):
    """NumPy's functions and ufuncs return arrays or NumPy scalars, never Python numbers: a
    weakly typed result (of Python-number operands only: ``np.abs(2.0)``, ``np.reshape(2.0,
    (-1,))``) is strongly typed, so it promotes as NumPy's float64/int64 does (fuzz 9501 #178,
    9521 #534)."""
    if isinstance(out, (tuple, list)):
        parts = [strong(o) for o in out]
        return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)
    if isinstance(out, Tracer) and type_of(out).weak:
        made = ew.convert_p.bind(out, dtype=type_of(out).dtype)
        # a read-only view of a Python scalar (np.broadcast_to(k, n)) stays one: the scalar
        # never changes, so only the link that refuses writes matters
        made.base = out.base
        return made
    return out


def concrete_bound(x, fname):
    """The concrete value of ``x`` (a size or bound a result shape depends on), else
    ConcretizationError."""
    x = static_value(x, need=True)
    if isinstance(x, Tracer):
        raise ConcretizationError(f"{fname} needs concrete bounds (the result shape depends on "
                                  f"them); got a traced {x.ty}. Pass them as static arguments "
                                  f"(static_argnums / static_argnames) or Python ints.")
    return x


def static_shape(shape, fname):
    """``shape`` itself, after checking that every dimension is concrete (else
    ConcretizationError)."""
    for d in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        concrete_bound(d, f"{fname}(shape)")
    return shape


def gather(y, idx, axis):
    """``y`` at the normalised indices ``idx`` along ``axis`` (take's last step): NumPy's take
    on concrete operands."""
    if not isinstance(y, Tracer) and not isinstance(idx, Tracer):
        return np.take(y, idx, axis=axis)
    return st.take_p.bind(as_traceable(y), as_traceable(idx), axis=axis)


# Python ints computed in a trace (intrange.py): each operation checks its int64 result
def python_int_result(prim, ops, out, n=None):
    """``out``, the weak int64 result of ``prim(*ops)`` on Python ints (weak int tracers and
    literals; ``n``: integer_pow's exponent), checked to be Python's exact result: OverflowError
    when it wrapped around int64, ZeroDivisionError for ``//`` or ``%`` by zero, ValueError for
    a negative shift count."""
    name = prim.name
    if intrange._checking.get() or name not in _INT_CHECKS or not isinstance(out, Tracer):
        return out
    with intrange.unchecked():
        a, b = (concrete(o) for o in (ops[0], ops[-1]))
        lo = -intrange._INT64_MAX - 1
        if name == "add":
            bad = ((a ^ out) & (b ^ out)) < 0
        elif name == "sub":
            bad = ((a ^ b) & (a ^ out)) < 0
        elif name == "mul":
            bad = (a != 0) & ((out // _nonzero(a) != b) | ((a == -1) & (b == lo)))
        elif name in ("neg", "abs"):
            bad = a == lo
        elif name == "integer_pow":
            bad = np.abs(convert(a, dtypes.float64)) ** float(n) >= 2.0 ** 63
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
    if isinstance(bad, Tracer):
        return ew.check(bad, out, error=error)
    if bad:
        exc, message = ew.ERRORS[error]
        raise exc(_with_location(message))
    return out


_INT_CHECKS = frozenset(("add", "sub", "mul", "neg", "abs", "integer_pow", "floordiv", "rem",
                         "shl", "shr"))


def _nonzero(a):
    return np.where(a == 0, 1, a)           # (a traced a dispatches to tracejit.numpy's)


def _clip_shift(b):
    return np.clip(b, 0, 63)


def is_scalar(t: Tracer) -> bool:
    """Whether NumPy would hold this value as an immutable scalar (see mutation.py's docstring)."""
    return t.frozen if t.frozen is not None else (t.ndim == 0 and t.base is None)
