"""NumPy's protocols on tracers: ``__array_ufunc__`` and ``__array_function__`` route NumPy
calls on traced values to tracejit.numpy, so unmodified NumPy code traces."""
from __future__ import annotations

from ..errors import UnsupportedError

_UFUNC_ALIASES = {"absolute": "absolute", "conjugate": "conj", "divide": "true_divide"}
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any"}
# functions outside the main namespace with the main namespace's semantics
_SAME_AS_NUMPY = {("numpy.linalg", "matmul"), ("numpy.linalg", "tensordot"),
                  ("numpy.linalg", "outer")}
_ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}


def _namespace():
    from .. import numpy as tnp
    return tnp


def array_ufunc(ufunc, method, inputs, kwargs):
    tnp = _namespace()
    name = _UFUNC_ALIASES.get(ufunc.__name__, ufunc.__name__)
    if kwargs.get("out") is not None:
        raise UnsupportedError(f"numpy.{ufunc.__name__}(..., out=...) would write into an array; "
                               f"tracejit is functional: use the return value")
    if kwargs.get("where", True) is not True:
        raise UnsupportedError(f"numpy.{ufunc.__name__}(..., where=...) is not supported; "
                               f"use numpy.where on the result")
    dtype = kwargs.get("dtype")
    if method == "__call__":
        fn = getattr(tnp, name, None)
        if fn is None:
            raise UnsupportedError(f"the ufunc numpy.{ufunc.__name__} is not supported by "
                                   f"tracejit on traced arrays")
        out = fn(*inputs)
        return out.astype(dtype) if dtype is not None else out
    if method == "reduce" and name in _REDUCE:
        axis = kwargs.get("axis", 0)
        return getattr(tnp, _REDUCE[name])(inputs[0], axis=axis,
                                            keepdims=kwargs.get("keepdims", False))
    if method == "accumulate" and name in _ACCUMULATE:
        return getattr(tnp, _ACCUMULATE[name])(inputs[0], axis=kwargs.get("axis", 0))
    if method == "outer" and len(inputs) == 2:
        a, b = inputs
        return getattr(tnp, name)(tnp.reshape(a, tuple(tnp.shape(a)) + (1,) * tnp.ndim(b)), b)
    raise UnsupportedError(f"numpy.{ufunc.__name__}.{method} is not supported by tracejit on "
                           f"traced arrays")


def array_function(func, args, kwargs):
    module = getattr(func, "__module__", "numpy") or "numpy"
    public = "numpy" if module.startswith("numpy._core") or module == "numpy" else module
    same = public == "numpy" or (public, func.__name__) in _SAME_AS_NUMPY
    fn = getattr(_namespace(), func.__name__, None) if same else None
    if fn is None or fn is func or not callable(fn):
        raise UnsupportedError(f"{public}.{func.__name__} is not supported by tracejit on traced "
                               f"arrays (tracejit.numpy lists what is); compute it outside the "
                               f"traced function or express it with supported operations")
    return fn(*args, **kwargs)
