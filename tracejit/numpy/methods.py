"""Python operators and ndarray methods on tracers, defined in terms of tracejit.numpy.

Installed on ``core.Tracer`` when tracejit.numpy is imported (tracejit imports it first thing),
so core stays free of NumPy-layer imports.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import TracerError
from . import creation, indexing, linalg, logic, math, reductions, shape
from ._base import convert


def _swap(fn):
    return lambda self, other: fn(other, self)


def _astype(self, dtype, copy=True):
    dt = dtypes.canonical(dtype, what=f"astype (converting a traced {self.ty})")
    if dt.kind in "if" and self.dtype.kind == "c":
        raise TypeError(f"astype({dt}) of a complex array would discard the imaginary part; "
                        f"use .real first")
    out = convert(self, dt)
    return _fresh(out) if out is self and copy else out


def _fresh(t):
    """A new tracer of the same value: a NumPy copy (writes into it never reach ``t``)."""
    return Tracer(t.builder, t.irvar)


def _pow(self, other):
    """``x ** y``: like ndarray.__pow__, an inexact array to the Python scalar 2, -1 or 0.5 is
    square, reciprocal or sqrt (NumPy's fast_scalar_power), where that differs from np.power."""
    if self.dtype.kind in "fc" and type(other) is float and other == 0.5:
        return math.sqrt(self)              # sqrt(-0.0) = -0.0 and sqrt(-inf) = nan, unlike pow
    if self.dtype.kind == "c" and type(other) is int and other in (2, -1):
        # complex square/reciprocal round differently from the power loop; real ones agree
        return math.square(self) if other == 2 else math.reciprocal(self)
    return math.power(self, other)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, Tracer)):
        shape = tuple(shape[0])
    return shape_mod.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = tuple(axes[0]) if axes[0] is not None else None
    return shape_mod.transpose(self, axes or None)


def _setitem(self, idx, value):
    """``x[idx] = v`` rebinds this tracer to the updated array (NumPy's result, no mutation of
    the caller's data). Refused where NumPy's aliasing would make a view see the change."""
    _refuse_aliased_write(self, "assigning into", "x[idx] = v",
                          "Write `x = x.at[idx].set(v)` (or take `x = x.copy()` first) instead.")
    new = indexing.update(self, idx, value, "set")
    # the update is recorded in the current trace, which may be nested inside the one that made
    # this tracer (a copy of a closed-over value): rebind both, or later uses would read the
    # outer value and lose the update (and its derivative)
    self.builder, self.irvar = new.builder, new.irvar


def _refuse_aliased_write(t, doing, form, fix, temporary_view=False):
    """Raise where NumPy's in-place write into ``t`` would be seen by someone else (the caller,
    the base of a view, a live view): tracejit rebinds instead, which only matches NumPy when
    nobody else can observe the array. ``temporary_view``: ``t`` is a view nobody holds (the
    ``y[1:]`` of ``y[1:] += v``, which Python writes back with ``y[1:] = ...``)."""
    if t.is_input:
        raise TracerError(f"{doing} an argument of the traced function ({form}) would mutate the "
                          f"caller's array in NumPy, which tracejit does not do yet. {fix}")
    if t.base is not None and not temporary_view:
        raise TracerError(f"{doing} a view (a slice, reshape or transpose of another traced "
                          f"array; {form}) would also change that array in NumPy. {fix}")
    if _live_views(t):
        raise TracerError(f"{doing} an array after a view of it was taken (by slicing, reshape "
                          f"or transpose; {form}) would also change the view in NumPy. {fix}")


def _inplace(fn, symbol):
    """``x op= v``: NumPy writes into x (x keeps its dtype and shape). Here the tracer is
    rebound to the result where no one else can see x, and refused where NumPy's write would
    be observed; a result that NumPy could not store in x raises as NumPy does."""
    def method(self, other):
        # CPython references: the caller's stack, ``self``, getrefcount's argument, and the
        # base's list of views; one more is a name (``v = y[:2]; v += 1``: y must change too)
        viewed = self.base.viewed if self.base is not None else None
        listed = sum(v is self for v in viewed) if isinstance(viewed, list) else 0
        temporary = self.base is not None and sys.getrefcount(self) <= 3 + listed
        _refuse_aliased_write(self, "updating", f"x {symbol}= v",
                              f"Write `x = x {symbol} v` (a new array) instead.", temporary)
        out = fn(self, other)
        if out.shape != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {out.shape} (x {symbol}= v)")
        if out.dtype != self.dtype:
            if not np.can_cast(out.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc output from dtype('{out.dtype}') to "
                                f"dtype('{self.dtype}') with casting rule 'same_kind' (x "
                                f"{symbol}= v keeps x's dtype)")
            out = convert(out, self.dtype)
        return out
    method.__name__ = f"__i{fn.__name__.strip('_')}__"
    return method


def _add_view(base, view):
    """Record that ``view`` aliases ``base`` (``base.viewed`` holds the views taken of it)."""
    view.base = base
    if not isinstance(base.viewed, list):
        base.viewed = []
    base.viewed.append(view)


def _live_views(t) -> bool:
    """Whether a view of ``t`` is still referenced by the user's code.

    A view nobody holds any more cannot observe a write, so ``y[i] += 1`` (which takes and
    drops a temporary view) is allowed. Liveness is read from CPython reference counts: a view
    referenced only by this list (and the getrefcount argument) has a count of 2.
    """
    views = t.viewed if isinstance(t.viewed, list) else []
    t.viewed = [views[k] for k in range(len(views)) if sys.getrefcount(views[k]) > 2]
    return bool(t.viewed)


def _view(fn):
    """Wrap an operation that returns a view in NumPy: record the aliasing for _setitem."""
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        if isinstance(out, Tracer) and out is not self and out.ndim > 0:
            _add_view(self, out)
        return out
    method.__name__ = getattr(fn, "__name__", "view")
    return method


def _getitem(self, idx):
    out = indexing.getitem(self, idx)
    parts = idx if isinstance(idx, tuple) else (idx,)
    basic = not any(isinstance(p, (Tracer, list, np.ndarray)) for p in parts)
    if basic and isinstance(out, Tracer) and out.ndim > 0 and out is not self:
        _add_view(self, out)
    return out


shape_mod = shape

_METHODS = {
    "__add__": math.add, "__radd__": _swap(math.add),
    "__sub__": math.subtract, "__rsub__": _swap(math.subtract),
    "__mul__": math.multiply, "__rmul__": _swap(math.multiply),
    "__truediv__": math.true_divide, "__rtruediv__": _swap(math.true_divide),
    "__floordiv__": math.floor_divide, "__rfloordiv__": _swap(math.floor_divide),
    "__mod__": math.remainder, "__rmod__": _swap(math.remainder),
    "__pow__": _pow, "__rpow__": _swap(math.power),
    "__matmul__": linalg.matmul, "__rmatmul__": _swap(linalg.matmul),
    "__neg__": math.negative, "__pos__": math.positive, "__abs__": math.absolute,
    "__invert__": math.invert,
    "__and__": math.bitwise_and, "__rand__": _swap(math.bitwise_and),
    "__or__": math.bitwise_or, "__ror__": _swap(math.bitwise_or),
    "__xor__": math.bitwise_xor, "__rxor__": _swap(math.bitwise_xor),
    "__lshift__": math.left_shift, "__rlshift__": _swap(math.left_shift),
    "__rshift__": math.right_shift, "__rrshift__": _swap(math.right_shift),
    "__eq__": math.equal, "__ne__": math.not_equal,
    "__lt__": math.less, "__le__": math.less_equal,
    "__gt__": math.greater, "__ge__": math.greater_equal,
    "__getitem__": _getitem, "__setitem__": _setitem,
    "reshape": _view(_reshape), "transpose": _view(_transpose), "astype": _astype,
    "sum": reductions.sum, "mean": reductions.mean, "max": reductions.max,
    "min": reductions.min, "prod": reductions.prod, "var": reductions.var,
    "std": reductions.std, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "all": reductions.all, "any": reductions.any, "cumsum": reductions.cumsum,
    "cumprod": reductions.cumprod, "squeeze": _view(shape.squeeze), "ravel": _view(shape.ravel),
    "flatten": shape.ravel, "swapaxes": shape.swapaxes, "repeat": shape.repeat,
    "take": indexing.take, "dot": linalg.dot, "conj": math.conj, "conjugate": math.conj,
    "round": math.round, "clip": math.clip, "diagonal": linalg.diagonal, "trace": linalg.trace,
    "copy": lambda self, order="C": _fresh(self),
    "ptp": reductions.ptp,
}

_PROPERTIES = {
    "T": _view(shape.transpose),
    "mT": lambda self: shape.swapaxes(self, -1, -2),
    "real": lambda self: math.real(self),
    "imag": lambda self: math.imag(self),
    "at": lambda self: indexing._AtIndexer(self),
    "flat": None,
}

_INPLACE = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
            "rshift": ">>"}
for _op, _sym in _INPLACE.items():
    _METHODS[f"__i{_op}__"] = _inplace(_METHODS[f"__{_op}__"], _sym)

for _name, _fn in _METHODS.items():
    setattr(Tracer, _name, _fn)
for _name, _fn in _PROPERTIES.items():
    if _fn is not None:
        setattr(Tracer, _name, property(_fn))

__all__ = []
del creation, logic
