"""Products: dot matmul vdot inner outer tensordot trace diagonal kron cross (all via dot_general;
einsum is in einsum.py), with the main namespace's semantics (numpy.linalg's are in linalg.py)."""
from __future__ import annotations

import numpy as np

from ..core import Tracer, type_of
from ..errors import ShapeError, UnsupportedError
from ..ops.contraction import dot_general_p
from ._base import as_traceable, convert, implements, result_type

__all__ = ["dot", "matmul", "vdot", "inner", "outer", "tensordot", "trace", "diagonal", "kron",
           "cross"]


def _dot_general(a, b, contract, batch=((), ())):
    dt, weak = result_type(a, b)
    if dt.kind == "b":
        from .. import dtypes
        dt = dtypes.int64
    a, b = convert(as_traceable(a), dt, weak), convert(as_traceable(b), dt, weak)
    a = np.asarray(a.value) if hasattr(a, "value") and not isinstance(a, Tracer) else a
    b = np.asarray(b.value) if hasattr(b, "value") and not isinstance(b, Tracer) else b
    return dot_general_p.bind(a, b, contract=contract, batch=batch)


@implements(np.matmul)
def matmul(x1, x2, /):
    """Matrix product with NumPy's rules for 1-D operands and broadcast batch dims."""
    from .shape import broadcast_to, reshape
    a, b = as_traceable(x1), as_traceable(x2)
    ta, tb = type_of(a), type_of(b)
    if ta.ndim == 0 or tb.ndim == 0:
        raise ShapeError("matmul: input operand does not have enough dimensions (scalars are not "
                         "allowed; use * instead)")
    ka, kb = ta.shape[-1], tb.shape[0] if tb.ndim == 1 else tb.shape[-2]
    if ka != kb:
        raise ShapeError(f"matmul: mismatch in its core dimension: shapes {ta.shape} @ "
                         f"{tb.shape} need {ka} == {kb} ((n,k),(k,m)->(n,m))")
    if result_type(a, b)[0].kind == "b":
        from .math import not_equal
        return not_equal(matmul(convert(a, np.int64), convert(b, np.int64)), 0)
    if ta.ndim == 1 and tb.ndim == 1:
        return dot(a, b)
    squeeze_a, squeeze_b = ta.ndim == 1, tb.ndim == 1
    if ta.ndim <= 2 and tb.ndim <= 2:          # vector-matrix / matrix-vector: no reshapes
        return _dot_general(a, b, ((ta.ndim - 1,), (0,)))
    if squeeze_a:
        a = reshape(a, (1, ta.shape[0]))
    if squeeze_b:
        b = reshape(b, (tb.shape[0], 1))
    ta, tb = type_of(a), type_of(b)
    if ta.shape[-1] != tb.shape[-2]:
        raise ShapeError(f"matmul: mismatch in its core dimension: {type_of(x1).shape} @ "
                         f"{type_of(x2).shape} (n?k),(k?m)->(n?m) needs "
                         f"{ta.shape[-1]} == {tb.shape[-2]}")
    batch = np.broadcast_shapes(ta.shape[:-2], tb.shape[:-2])
    nb = len(batch)
    if ta.ndim > 2 or tb.ndim > 2:
        a = broadcast_to(a, batch + ta.shape[-2:])
        b = broadcast_to(b, batch + tb.shape[-2:])
    out = _dot_general(a, b, ((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    if squeeze_a and squeeze_b:
        return reshape(out, batch)
    if squeeze_a:
        return reshape(out, batch + (type_of(out).shape[-1],))
    if squeeze_b:
        return reshape(out, batch + (type_of(out).shape[-2],))
    return out


@implements(np.dot)
def dot(a, b, out=None):
    a, b = as_traceable(a), as_traceable(b)
    ta, tb = type_of(a), type_of(b)
    if ta.ndim == 0 or tb.ndim == 0:
        from .math import multiply
        return multiply(a, b)
    bc = 0 if tb.ndim == 1 else tb.ndim - 2
    if ta.shape[-1] != tb.shape[bc]:
        raise ShapeError(f"dot: shapes {ta.shape} and {tb.shape} not aligned: "
                         f"{ta.shape[-1]} (dim {ta.ndim - 1}) != {tb.shape[bc]} (dim {bc})")
    return _bool_product(_dot_general(a, b, ((ta.ndim - 1,), (bc,))), a, b)


def _bool_product(out, a, b):
    """NumPy's products of two bool arrays are bool (any of the ands): int64 sum != 0."""
    if result_type(a, b)[0].kind == "b":
        from .math import not_equal
        return not_equal(out, 0)
    return out


@implements(np.vdot)
def vdot(a, b, /):
    from .math import conj
    from .shape import ravel
    a = ravel(a)
    return dot(conj(a) if type_of(a).dtype.kind == "c" else a, ravel(b))   # conj(bool) is int


@implements(np.inner)
def inner(a, b, /):
    ta, tb = type_of(a), type_of(b)
    if ta.ndim == 0 or tb.ndim == 0:
        from .math import multiply
        return multiply(a, b)
    if ta.shape[-1] != tb.shape[-1]:
        raise ShapeError(f"inner: shapes {ta.shape} and {tb.shape} not aligned: last dimensions "
                         f"{ta.shape[-1]} != {tb.shape[-1]}")
    return _bool_product(_dot_general(a, b, ((ta.ndim - 1,), (tb.ndim - 1,))), a, b)


@implements(np.outer)
def outer(a, b, out=None):
    from .shape import ravel
    from .math import multiply
    from .shape import reshape
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    ta, tb = type_of(a), type_of(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        ca, cb = tuple(range(ta.ndim - n, ta.ndim)), tuple(range(n))
    else:
        ca, cb = axes
        ca = (ca,) if isinstance(ca, (int, np.integer)) else tuple(ca)
        cb = (cb,) if isinstance(cb, (int, np.integer)) else tuple(cb)
        ca = tuple(x % ta.ndim for x in ca)
        cb = tuple(x % tb.ndim for x in cb)
    for x, y in zip(ca, cb):
        if ta.shape[x] != tb.shape[y]:
            raise ShapeError(f"tensordot: shape-mismatch for sum: {ta.shape} axis {x} vs "
                             f"{tb.shape} axis {y}")
    return _bool_product(_dot_general(a, b, (ca, cb)), a, b)


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    """The diagonal as a gather on the flattened pair of axes (moved last)."""
    from .shape import moveaxis, reshape
    from .indexing import take
    t = type_of(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = type_of(a).shape[-2:]
    if offset >= 0:
        k = max(0, min(n, m - offset))
        idx = np.arange(k) * m + np.arange(k) + offset
    else:
        k = max(0, min(n + offset, m))
        idx = (np.arange(k) - offset) * m + np.arange(k)
    flat = reshape(a, type_of(a).shape[:-2] + (n * m,))
    return take(flat, idx.astype(np.int64), axis=t.ndim - 2)


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    from .reductions import sum as sum_
    return sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@implements(np.kron)
def kron(a, b):
    from .math import multiply
    from .shape import reshape
    ta, tb = type_of(a), type_of(b)
    if ta.ndim != 2 or tb.ndim != 2:
        raise UnsupportedError("kron is supported for 2-D operands")
    prod = multiply(reshape(a, (ta.shape[0], 1, ta.shape[1], 1)),
                    reshape(b, (1, tb.shape[0], 1, tb.shape[1])))
    return reshape(prod, (ta.shape[0] * tb.shape[0], ta.shape[1] * tb.shape[1]))


@implements(np.cross)
def cross(a, b, axis=-1):
    from .indexing import take
    from .math import multiply, subtract
    from .shape import stack
    def comp(x, i):
        return take(x, np.int64(i), axis=axis)
    a0, a1, a2 = (comp(a, i) for i in range(3))
    b0, b1, b2 = (comp(b, i) for i in range(3))
    return stack([subtract(multiply(a1, b2), multiply(a2, b1)),
                  subtract(multiply(a2, b0), multiply(a0, b2)),
                  subtract(multiply(a0, b1), multiply(a1, b0))], axis=axis)
