"""Python operators, ndarray methods and NumPy's protocols on tracers, defined in terms of
tracejit.numpy.

Installed on ``core.Tracer`` with setattr when this module is imported: the package root imports
it right after tracejit.numpy, so core stays free of NumPy-layer imports. It sits above the
tracejit.numpy namespace (``__array_ufunc__``/``__array_function__`` dispatch into it through
dispatch.py), so the namespace package does not import it.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer
from ..errors import UnsupportedError
from . import (creation, dispatch, floatfns, indexing, logic, math, mutation, products,
               reductions, sorting)
from ._base import convert
# (not ``from . import shape, nonzero``: imported after the namespace, those names are its
# functions np.shape and np.nonzero)
from .nonzero import nonzero
from .selection import Selection
from .shape import ravel, repeat


def _swap(fn):
    return lambda self, other: fn(other, self)


def _astype(self, dtype, copy=True):
    dt = dtypes.canonical(dtype, what=f"astype (converting a traced {self.ty})")
    if dt.kind in "if" and self.dtype.kind == "c":
        raise TypeError(f"astype({dt}) of a complex array would discard the imaginary part; "
                        f"use .real first")
    out = convert(self, dt)
    out = _fresh(out) if out is self and copy else out
    if out is not self and out.ndim == 0:
        out.frozen = mutation.is_scalar(self)   # a NumPy scalar's astype is a scalar
    return out


def _fresh(t):
    """A new array of the same value: a NumPy copy (writes into it never reach ``t``); the
    copy of a scalar is a scalar, of a 0-d array a 0-d array."""
    return mutation.value(t) if mutation.is_scalar(t) else mutation.array_copy(t)


def _into_scalar(method):
    """``s.fill(v)``, ``s.put(i, v)`` on a NumPy scalar, which is immutable: NumPy writes into
    a temporary 0-d array of it, so only the errors of that write are seen."""
    def wrapped(self, *args, **kwargs):
        return method(mutation.array_copy(self) if mutation.is_scalar(self) else self, *args,
                      **kwargs)
    wrapped.__name__ = method.__name__
    return wrapped


def _new_array(fn):
    """An operation NumPy answers with a new array, even where the value is the operand's (+x,
    conj of a real array, round of an int array): writes into it must not reach the operand."""
    def method(self, *args, **kwargs):
        out = fn(self, *args, **kwargs)
        return mutation.value(out) if out is self else out
    method.__name__ = getattr(fn, "__name__", "method")
    return method


def _view(self, dtype=None, type=None):
    """``x.view()``: the same data; ``x.view(dtype)`` of an integer or float dtype of the same
    width: the same bits read as ``dtype`` (a bit cast, not a view: writes do not reach x)."""
    if dtype is not None and dtypes.canonical(dtype) != self.dtype and type is None:
        dt = dtypes.canonical(dtype)
        if dt.itemsize == self.dtype.itemsize and {dt.kind, self.dtype.kind} <= set("iuf"):
            from .bits import bitcast
            return bitcast(self, dt)
    if (dtype is not None and dtypes.canonical(dtype) != self.dtype) or type is not None:
        raise UnsupportedError(f"x.view({dtype!r}) reinterprets memory; tracejit supports "
                               f"x.view() and x.view(dtype) between integer and float dtypes "
                               f"of one width (use x.astype for a conversion)")
    return self


def _python_int(x):
    """The value of a Python int, also of a traced Python-int argument (whose value the trace
    then needs: see Tracer.known), else None."""
    if type(x) is int:
        return x
    if isinstance(x, Tracer) and x.ty.weak and x.dtype.kind == "i":
        value = x.known(need=True)
        return None if value is None else int(value)
    return None


def _pow(self, other):
    """``x ** y``: like ndarray.__pow__, an inexact array to the Python scalar 2, -1 or 0.5 is
    square, reciprocal or sqrt (NumPy's fast_scalar_power), where that differs from np.power;
    so is a boolean array to the Python int 2 (square: int8). NumPy scalars take no fast path
    (``np.True_ ** 2`` is int64, ``np.float64(-0.0) ** 0.5`` is 0.0): np.power."""
    if mutation.is_scalar(self):
        return math.scalar_power(self, other)
    if self.dtype.kind in "fc" and type(other) is float and other == 0.5:
        return math.sqrt(self)              # sqrt(-0.0) = -0.0 and sqrt(-inf) = nan, unlike pow
    if self.dtype == dtypes.bool_ and _python_int(other) == 2:
        return math.square(self)            # int8, where np.power(bool, 2) is int64
    if self.dtype.kind == "c" and type(other) is int and other in (2, -1):
        # complex square/reciprocal round differently from the power loop; real ones agree
        return math.square(self) if other == 2 else math.reciprocal(self)
    return math.power(self, other)


def _reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, Tracer)):
        shape = tuple(shape[0])
    return mutation.reshape(self, shape, order=order)


def _transpose(self, *axes):
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = tuple(axes[0]) if axes[0] is not None else None
    return mutation.transpose(self, axes or None)


_METHODS = {
    "__add__": math.add, "__radd__": _swap(math.add),
    "__sub__": math.subtract, "__rsub__": _swap(math.subtract),
    "__mul__": math.multiply, "__rmul__": _swap(math.multiply),
    "__truediv__": math.true_divide, "__rtruediv__": _swap(math.true_divide),
    "__floordiv__": math.floor_divide, "__rfloordiv__": _swap(math.floor_divide),
    "__mod__": math.remainder, "__rmod__": _swap(math.remainder),
    "__divmod__": floatfns.divmod, "__rdivmod__": _swap(floatfns.divmod),
    "__pow__": _pow, "__rpow__": _swap(math.power),
    "__matmul__": products.matmul, "__rmatmul__": _swap(products.matmul),
    "__neg__": lambda self: math.negative(convert(self, dtypes.int64) if self.ty.weak and
                                          self.dtype == dtypes.bool_ else self), "__pos__": math.positive, "__abs__": math.absolute,
    "__invert__": math.invert,
    "__and__": math.bitwise_and, "__rand__": _swap(math.bitwise_and),
    "__or__": math.bitwise_or, "__ror__": _swap(math.bitwise_or),
    "__xor__": math.bitwise_xor, "__rxor__": _swap(math.bitwise_xor),
    "__lshift__": math.left_shift, "__rlshift__": _swap(math.left_shift),
    "__rshift__": math.right_shift, "__rrshift__": _swap(math.right_shift),
    "__eq__": math.equal, "__ne__": math.not_equal,
    "__lt__": math.less, "__le__": math.less_equal,
    "__gt__": math.greater, "__ge__": math.greater_equal,
    "__getitem__": mutation.view_getitem, "__setitem__": mutation.setitem,
    "reshape": _reshape, "transpose": _transpose, "astype": _astype, "view": _view,
    "sum": reductions.sum, "mean": reductions.mean, "max": reductions.max,
    "min": reductions.min, "prod": reductions.prod, "var": reductions.var,
    "std": reductions.std, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "all": reductions.all, "any": reductions.any, "cumsum": reductions.cumsum,
    "cumprod": reductions.cumprod, "squeeze": mutation.squeeze, "ravel": mutation.ravel,
    "flatten": lambda self, order="C": _fresh(ravel(self, order)),
    "swapaxes": mutation.swapaxes, "repeat": repeat,
    "take": indexing.take, "dot": products.dot, "conj": math.conj, "conjugate": math.conj,
    "round": math.round, "clip": math.clip, "diagonal": mutation.diagonal, "trace": products.trace,
    "copy": lambda self, order="C": _fresh(self),
    "ptp": reductions.ptp, "fill": _into_scalar(mutation.fill),
    "put": _into_scalar(mutation.put),
    "nonzero": lambda self: nonzero(self),
    "sort": sorting.sort_inplace, "argsort": sorting.argsort,
}

def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return dispatch.array_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return dispatch.array_function(func, args, kwargs)


_METHODS["__array_ufunc__"] = _array_ufunc
_METHODS["__array_function__"] = _array_function

_PROPERTIES = {
    "T": mutation.transpose,
    "mT": mutation.matrix_transpose,
    "real": mutation.real,
    "imag": mutation.imag,
    "at": lambda self: indexing._AtIndexer(self),
    "itemsize": lambda self: self.dtype.itemsize,
    "nbytes": lambda self: self.size * self.dtype.itemsize,
    "flat": None,
}

def _defer_to_selection(fn):
    """A binary operator that leaves a selection operand (``x[mask]`` of a traced mask: see
    selection.py) to the selection's reflected operator, which knows its length is unknown."""
    def method(self, other):
        if isinstance(other, Selection):
            return NotImplemented
        return fn(self, other)
    method.__name__ = getattr(fn, "__name__", "operator")
    return method


for _name in [n for n in _METHODS if n.startswith("__r") or n[2:-2] in (
        "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
        "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge")]:
    _METHODS[_name] = _defer_to_selection(_METHODS[_name])

_INPLACE = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
            "rshift": ">>"}
for _op, _sym in _INPLACE.items():
    _METHODS[f"__i{_op}__"] = mutation.inplace(_METHODS[f"__{_op}__"], _sym)

for _name in ("__pos__", "__abs__", "__neg__", "__invert__", "__pow__", "conj", "conjugate",
              "round", "clip", "take", "repeat", "flatten", "cumsum", "cumprod"):
    _METHODS[_name] = _new_array(_METHODS[_name])
for _name, _fn in _METHODS.items():
    setattr(Tracer, _name, _fn)


def _part_setter(part):
    """``x.real = v`` / ``x.imag = v`` (also what ``x.imag *= 2`` ends with): NumPy writes
    ``v`` into that part of ``x``."""
    def setter(self, v):
        mutation.setitem(part(self), Ellipsis, v)
    return setter


_SETTERS = {"real": _part_setter(mutation.real), "imag": _part_setter(mutation.imag)}
# ``x.shape = s``: NumPy's in-place reshape (the getter is core's)
Tracer.shape = property(Tracer.shape.fget, lambda self, value: mutation.set_shape(self, value))
for _name, _fn in _PROPERTIES.items():
    if _fn is not None:
        setattr(Tracer, _name, property(_fn, _SETTERS.get(_name)))

__all__ = []
del creation, logic
