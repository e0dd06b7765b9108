"""NumPy's protocols on tracers: ``__array_ufunc__`` and ``__array_function__`` route NumPy
calls on traced values to tracejit.numpy, so unmodified NumPy code traces."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedError
from ._base import strong

_UFUNC_ALIASES = {"absolute": "absolute", "conjugate": "conj", "divide": "true_divide"}
_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
           "logical_and": "all", "logical_or": "any"}
_ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}
# NumPy submodules whose functions tracejit.numpy has under the same submodule name
_SUBMODULES = {"numpy.fft": "fft", "numpy.linalg": "linalg"}


def _namespace():
    from .. import numpy as tnp
    return tnp


def _selection_among(values) -> bool:
    """Whether an operand is a selection (x[mask] of a traced mask, numpy/selection.py): NumPy
    then calls the selection's own protocol method."""
    return any(getattr(type(v), "_tj_selection", False) for v in values)


def array_ufunc(ufunc, method, inputs, kwargs):
    if _selection_among(inputs):
        return NotImplemented
    tnp = _namespace()
    name = _UFUNC_ALIASES.get(ufunc.__name__, ufunc.__name__)
    out = kwargs.pop("out", None)
    if out is not None:
        return _into(ufunc, method, inputs, kwargs, out)
    if kwargs.get("where", True) is not True:
        raise UnsupportedError(f"numpy.{ufunc.__name__}(..., where=...) without out= leaves the "
                               f"other elements undefined; pass out= or use numpy.where on the "
                               f"result")
    dtype = kwargs.get("dtype")
    if method == "__call__":
        fn = getattr(tnp, name, None) if _is_numpy(ufunc) else _foreign(ufunc)
        if fn is None:
            owner = "numpy." if _is_numpy(ufunc) else ""
            raise UnsupportedError(f"the ufunc {owner}{ufunc.__name__} is not supported by "
                                   f"tracejit on traced arrays")
        out = fn(*inputs)
        out = out.astype(dtype) if dtype is not None else out
        return _new(strong(out), inputs)   # a new array (np.positive(x)); np.abs(2.0): np.float64
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


def _is_numpy(ufunc) -> bool:
    import numpy as np
    return getattr(np, ufunc.__name__, None) is ufunc


def _foreign(ufunc):
    """A ufunc of another library: SciPy's special functions (``special_gamma.UFUNCS``,
    ``special_incomplete.UFUNCS`` and ``special_inverse.UFUNCS``), by name; None for others
    (the caller says it is unsupported)."""
    from .special_inverse import UFUNCS
    return UFUNCS.get(ufunc.__name__)


def _into(ufunc, method, inputs, kwargs, out):
    """``ufunc(..., out=o, where=m)``: NumPy writes the result into ``o`` (see mutation)."""
    from . import mutation
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != 1 or ufunc.nout != 1:
        raise UnsupportedError(f"numpy.{ufunc.__name__}: out= with several outputs")
    where = kwargs.pop("where", True)
    result = array_ufunc(ufunc, method, inputs, kwargs)
    dst = mutation._target(outs[0], f"{ufunc.__name__}(..., out=...)")
    return mutation.write_result(dst, result, kwargs.get("casting", "same_kind"), where,
                                 f"{ufunc.__name__}(..., out=...)")


def array_function(func, args, kwargs):
    if _selection_among(args) or _selection_among(kwargs.values()):
        return NotImplemented
    module = getattr(func, "__module__", "numpy") or "numpy"
    public = "numpy" if module.startswith("numpy._core") or module == "numpy" else module
    namespace = _namespace() if public == "numpy" else \
        getattr(_namespace(), _SUBMODULES[public]) if public in _SUBMODULES else None
    fn = getattr(namespace, func.__name__, None)
    if fn is None or fn is func or not callable(fn):
        raise UnsupportedError(f"{public}.{func.__name__} is not supported by tracejit on traced "
                               f"arrays (tracejit.numpy lists what is); compute it outside the "
                               f"traced function or express it with supported operations")
    return _kind(func.__name__, strong(fn(*args, **kwargs)), args)


# functions whose result NumPy returns as an array even when 0-d (others give NumPy scalars),
# and those that may return their operand itself (np.asarray) or a view of it
_ARRAY_RESULTS = {"where", "zeros_like", "ones_like", "empty_like", "full_like", "copy", "array",
                  "asarray", "asanyarray", "ascontiguousarray", "transpose", "reshape",
                  "squeeze", "expand_dims", "broadcast_to", "atleast_1d", "atleast_2d",
                  "atleast_3d", "moveaxis", "swapaxes", "flip", "permute_dims"}
_SAME_OR_VIEW = {"asarray", "asanyarray", "ascontiguousarray", "real", "reshape", "ravel",
                 "transpose", "squeeze", "expand_dims", "broadcast_to", "atleast_1d",
                 "atleast_2d", "atleast_3d", "swapaxes", "moveaxis", "permute_dims",
                 "matrix_transpose", "flip", "diagonal"}


def _new(out, operands):
    """``out``, or a new tracer of its value when it is one of the operands: NumPy returned a
    new array, so writes into it must not reach the operand."""
    from ..core import Tracer
    from .mutation import value
    if isinstance(out, Tracer) and any(out is a for a in operands):
        return value(out)
    return out


def _kind(name, out, args):
    from ..core import Tracer
    if name not in _SAME_OR_VIEW:
        out = _new(out, args)
    if isinstance(out, Tracer) and out.ndim == 0 and name in _ARRAY_RESULTS and \
            not any(out is a for a in args):
        out.frozen = False
    return out
