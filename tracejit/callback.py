"""Calling Python from traced code: ``pure_callback`` and ``debug.print`` (JAX's API).

Both run when the compiled function runs, not when it is traced (a plain Python ``print``
in a traced function prints tracers, once, while tracing). The primitives are in
``ops/callback.py``; this module turns pytrees into their flat operands and results.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes, tree
from .errors import InputError, ShapeError
from .ir import Type
from .ops.callback import debug_print_p, pure_callback_p

__all__ = ["pure_callback", "debug_print"]


@dataclass(frozen=True)
class _Flat:
    """The user's callback on flat arrays: rebuilds its pytree arguments, flattens its results.
    Hashable by the identity of ``fn`` (two equal params are the same Python function)."""
    fn: object
    in_tree: object
    out_tree: object

    @property
    def __name__(self):
        return getattr(self.fn, "__qualname__", None) or repr(self.fn)

    def __call__(self, *arrays):
        args, kwargs = tree.unflatten(self.in_tree, list(arrays))
        leaves, out_tree = tree.flatten(self.fn(*args, **kwargs))
        if out_tree != self.out_tree:
            raise ShapeError(f"pure_callback: {self.__name__} returned a value of structure "
                             f"{out_tree}, but result_shape_dtypes has structure {self.out_tree}")
        return leaves


def _result_type(spec) -> Type:
    if not (hasattr(spec, "shape") and hasattr(spec, "dtype")):
        raise InputError(f"pure_callback: each leaf of result_shape_dtypes needs .shape and "
                         f".dtype (a NumPy array or a jax.ShapeDtypeStruct-like object), got "
                         f"{type(spec).__name__}")
    return Type(dtypes.canonical(spec.dtype, "a pure_callback result"), tuple(spec.shape))


def pure_callback(callback, result_shape_dtypes, *args, vectorized=False, **kwargs):
    """Call ``callback(*args, **kwargs)`` (any Python code: NumPy, SciPy, a simulator) with
    the arguments' NumPy values when the compiled function runs; it must return arrays of the
    shapes and dtypes of ``result_shape_dtypes`` (a pytree of objects with ``.shape`` and
    ``.dtype``, e.g. ``np.empty(shape, dtype)`` or ``jax.ShapeDtypeStruct``).

    The callback must be pure (the same inputs give the same results): calls may be merged or
    dropped when unused. Under ``vmap`` it is called once per example, or once on the whole
    batch when ``vectorized=True`` (batched arguments then have the batch axis first, the
    others stay as they are, and it must return results with a leading batch axis). It has
    no derivative of its own: wrap the function calling it in ``custom_jvp``/``custom_vjp``.
    On the llvm backend it runs from Python between native steps (a loop containing it is
    driven from Python, its body still compiled)."""
    leaves, in_tree = tree.flatten((args, kwargs))
    specs, out_tree = tree.flatten(result_shape_dtypes)
    result_types = tuple(_result_type(s) for s in specs)
    outs = pure_callback_p.bind(*leaves, callback=_Flat(callback, in_tree, out_tree),
                                result_types=result_types, vectorized=bool(vectorized))
    return tree.unflatten(out_tree, list(outs))


def debug_print(fmt: str, *args, **kwargs) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the run-time values of traced arguments,
    each time the compiled function runs (``tracejit.debug.print``).

    Prints stay in the order written within a function (the passes never drop or merge one,
    and the llvm backend runs them in program order). Under ``vmap`` one print shows the
    batched values (batch axis first); under ``grad``/``jvp`` the primal values are printed
    once per evaluation. Arguments are pytrees of arrays."""
    if not isinstance(fmt, str):
        raise InputError(f"debug.print: the format must be a str, got {type(fmt).__name__}")
    leaves, in_tree = tree.flatten((args, kwargs))
    debug_print_p.bind(*leaves, fmt=fmt, tree=in_tree)

