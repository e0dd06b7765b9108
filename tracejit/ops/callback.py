"""Host callbacks: primitives that run Python code when the compiled function runs.

- ``pure_callback[callback, result_types, vectorized] *args``: ``callback(*arrays)`` (a *flat*
  callable: arrays in, a list of arrays out, see ``tracejit.callback``) returns arrays of
  ``result_types`` exactly; anything else is an error naming the callback. Pure: CSE may merge
  two equal calls and DCE drops an unused one. No derivative: differentiating it is an error
  that says to give it one with ``custom_jvp``/``custom_vjp``.
- ``numpy_draw[method, args, kwargs, result_types]``: ``method(*args, **kwargs)``, a sampling
  method of a NumPy ``RandomState``/``Generator`` object with concrete arguments, called each
  time the compiled function runs (autograph turns such calls in user code into it): the
  generator's state advances as it would in the NumPy program. No operands, so no derivative
  (a sample is data) and no batching (under ``vmap`` one draw serves every example); an
  ``effect``, like ``debug_print``.
- ``debug_print[fmt, tree] *args``: formats ``fmt`` with the run-time values (``tree``
  rebuilds ``(args, kwargs)`` from the operands) and prints it; no results. ``fmt`` is a
  format string (``debug.print``) or a :class:`PythonPrint` (Python's ``print`` called while
  tracing, :func:`python_print`). Its ``effect`` property is what the passes read: DCE keeps
  it, CSE never merges two, and the llvm backend runs effectful steps in program order
  (``passes.has_effect``).

The llvm backend has no native lowering for either: each runs as a FallbackStep calling the
impl here from Python (the rest of the graph stays native and its object code stays cacheable:
the callable lives in the equation, never in the LLVM IR).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import dtypes
from ..ad_util import defnondiff
from ..core import Primitive, Tracer, current_builder
from ..errors import ShapeError, UnsupportedError
from ..ir import Type
from ..tree import flatten, unflatten


def check_results(name: str, outs, result_types) -> list:
    """``outs`` as arrays of exactly ``result_types``, or a ShapeError naming callback ``name``.
    A result sharing memory with anything (a view, an operand returned as is) is copied: the
    runtime may reuse an operand's memory after the call."""
    outs = list(outs)
    if len(outs) != len(result_types):
        raise ShapeError(f"pure_callback: {name} returned {len(outs)} arrays, but "
                         f"result_shape_dtypes describes {len(result_types)}")
    checked = []
    for k, (o, t) in enumerate(zip(outs, result_types)):
        arr = np.asarray(o)
        if arr.shape != t.shape or arr.dtype != t.dtype:
            raise ShapeError(
                f"pure_callback: {name} returned result {k} as {arr.dtype}{list(arr.shape)}, "
                f"but result_shape_dtypes says {t.dtype}{list(t.shape)}; return exactly that "
                f"shape and dtype (e.g. np.asarray(r, dtype).reshape(shape))")
        checked.append(arr.copy() if arr.base is not None or not arr.flags.owndata else arr)
    return checked


def _read_only(a):
    view = np.asarray(a).view()
    view.flags.writeable = False          # the runtime's memory: the callback must not write it
    return view


def _callback_shape(*in_types, callback, result_types, vectorized):
    return list(result_types)


def _callback_impl(*args, callback, result_types, vectorized):
    outs = callback(*[_read_only(a) for a in args])
    return check_results(callback.__name__, outs, result_types)


def _callback_jvp(primals, tangents, *, callback, **params):
    raise UnsupportedError(
        f"pure_callback: cannot differentiate the host callback {callback.__name__} (tracejit "
        f"cannot see inside Python code). Give it a derivative: wrap the function calling "
        f"pure_callback in tracejit.custom_jvp or tracejit.custom_vjp, whose rule may call "
        f"pure_callback again for the derivative")


@dataclass(frozen=True)
class Sequential:
    """The batched callback of a ``vectorized=False`` callback: one call per example (arrays
    batched at axis 0 when ``batched[k]``), the results stacked."""
    inner: object
    batched: tuple
    size: int
    result_types: tuple

    @property
    def __name__(self):
        return self.inner.__name__

    def __call__(self, *args):
        rows = []
        for i in range(self.size):
            outs = self.inner(*[a[i] if b else a for a, b in zip(args, self.batched)])
            rows.append(check_results(self.__name__, outs, self.result_types))
        return [np.stack([r[k] for r in rows]) if rows else np.empty((0,) + t.shape, t.dtype)
                for k, t in enumerate(self.result_types)]


def _callback_batch(args, dims, B, *, callback, result_types, vectorized):
    batched_types = tuple(Type(t.dtype, (B,) + t.shape) for t in result_types)
    if not vectorized:
        callback = Sequential(callback, tuple(d is not None for d in dims), B,
                              tuple(result_types))
    outs = pure_callback_p.bind(*args, callback=callback, result_types=batched_types,
                                vectorized=vectorized)
    return outs, [0] * len(outs)


pure_callback_p = Primitive("pure_callback", "other", _callback_shape, _callback_impl,
                            multiple_results=True)
pure_callback_p.jvp = _callback_jvp
pure_callback_p.batch = _callback_batch


def _print_shape(*in_types, fmt, tree):
    return []


class PythonPrint(NamedTuple):
    """The ``fmt`` of a ``debug_print`` made from Python's ``print(*args, sep=, end=, file=)``
    called while tracing (:func:`python_print`): ``parts`` holds each argument's ``str``
    where it was concrete, None where the next operand pytree's run-time value goes. ``file``
    None is ``sys.stdout`` as it is when the print runs, as for Python's ``print``. (A record
    of data, so a graph that prints can still be cached and exported.)"""
    parts: tuple
    sep: str
    end: str
    file: object = None

    def emit(self, values) -> None:
        values = iter(values)
        texts = [str(next(values)) if p is None else p for p in self.parts]
        print(*texts, sep=self.sep, end=self.end, file=self.file, flush=True)


def python_print(*args, sep=" ", end="\n", file=None, flush=False):
    """Python's ``print`` called by user code while tracing (numpy/intercept.py swaps it in
    while a trace runs): a ``debug_print`` step that prints each time the compiled code runs,
    in program order (once per iteration inside a loop that became a while_loop), with the
    run-time values of its traced arguments, as the Python program would. Concrete arguments
    are formatted now (``str``), as Python formats them in this call."""
    parts, operands = [], []
    for a in args:
        if any(isinstance(x, Tracer) for x in flatten(a)[0]):
            parts.append(None)
            operands.append(a)
        else:
            parts.append(str(a))
    fmt = PythonPrint(tuple(parts), " " if sep is None else sep, "\n" if end is None else end,
                      file)
    leaves, treedef = flatten((tuple(operands), {}))
    builder = current_builder()
    leaves = [x if isinstance(x, Tracer) else builder.constant(np.asarray(x)) for x in leaves]
    debug_print_p.bind(*leaves, fmt=fmt, tree=treedef)


def _print_impl(*args, fmt, tree):
    pos, kw = unflatten(tree, [np.asarray(a) for a in args])
    if isinstance(fmt, PythonPrint):
        fmt.emit(pos)
    else:
        print(fmt.format(*pos, **kw), flush=True)
    return []


def _print_jvp(primals, tangents, **params):
    # the primal values, printed once; a print has no results, so no tangents
    debug_print_p.bind(*primals, **params)
    return [], []


def _print_batch(args, dims, B, **params):
    # the batched values in one print (batch axis first; unbatched operands as they are)
    debug_print_p.bind(*args, **params)
    return [], []


debug_print_p = Primitive("debug_print", "other", _print_shape, _print_impl,
                          multiple_results=True, effect="prints")
debug_print_p.jvp = _print_jvp
debug_print_p.batch = _print_batch


def _draw_shape(*in_types, method, args, kwargs, result_types):
    return list(result_types)


def _draw_impl(*operands, method, args, kwargs, result_types):
    out = method(*args, **dict(kwargs))
    return check_results(getattr(method, "__qualname__", "a NumPy draw"),
                         [] if out is None else [np.asarray(out)], result_types)


def _static(x):
    """An argument of a NumPy draw as a hashable parameter (lists as tuples)."""
    if isinstance(x, (list, tuple)):
        return tuple(_static(v) for v in x)
    if isinstance(x, np.ndarray):
        return _static(x.tolist())
    return x


def draw(method, args, kwargs):
    """``method(*args, **kwargs)``, a sampling method of a NumPy RandomState or Generator (one
    made outside the trace, or NumPy's global one behind ``np.random.normal`` ...), bound as
    ``numpy_draw``: drawn each time the compiled function runs, from the generator itself, so
    the samples and the generator's state are those of running the NumPy program. The
    arguments must be concrete; the result's shape and dtype come from drawing from a copy of
    the generator (the generator itself stays as it was). A method returning None
    (``np.random.seed(0)``) gives a step without results, run in program order."""
    name = getattr(method, "__qualname__", None) or repr(method)
    if any(isinstance(x, Tracer) for x in flatten((args, kwargs))[0]):
        raise UnsupportedError(
            f"{name} is called with a traced argument: a NumPy generator's draws run from "
            f"compiled code with concrete arguments only; draw standard samples and transform "
            f"them (mu + sigma * rs.randn(n)), or use tracejit.random with a key argument")
    if getattr(method, "__name__", "") == "shuffle":
        raise UnsupportedError(
            f"{name} shuffles an array in place while tracing, once; index with a permutation "
            f"drawn when the compiled code runs instead: x[np.random.permutation(len(x))]")
    probe = getattr(copy.deepcopy(method.__self__), method.__name__)(*args, **kwargs)
    if probe is None:
        result_types = ()
    else:
        arr = np.asarray(probe)
        weak = isinstance(probe, (bool, int, float, complex))     # a Python number, as NumPy
        result_types = (Type(dtypes.canonical(arr.dtype, "a NumPy draw"), arr.shape, weak),)
    outs = numpy_draw_p.bind(method=method, args=_static(args),
                             kwargs=tuple(sorted((k, _static(v)) for k, v in kwargs.items())),
                             result_types=result_types)
    return outs[0] if outs else None


numpy_draw_p = Primitive("numpy_draw", "other", _draw_shape, _draw_impl, multiple_results=True,
                         effect="draws")
defnondiff(numpy_draw_p, "a sample is data (no operands: nothing to differentiate)")


def _draw_batch(args, dims, B, **params):
    # (a draw's arguments are concrete, so vmap never batches one: this is a guard)
    raise UnsupportedError(f"{getattr(params['method'], '__qualname__', 'a NumPy draw')} with "
                           f"a batched operand under vmap: draw the whole batch outside the "
                           f"vmapped function, or use tracejit.random with split keys")


numpy_draw_p.batch = _draw_batch
