"""More of NumPy's long tail on tracers: logspace, resize, choose and poly, as composites.

Each follows NumPy's function step for step (dtypes, shapes, edge cases). Where NumPy's result
depends on values a trace does not know (``choose``'s default ``mode='raise'`` with traced
indices, ``poly``'s complex-to-real result and its 2-d eigenvalue form), the function raises an
error that says what to pass instead.
"""
from __future__ import annotations

import numpy as np

from ..core import Tracer, type_of
from ..errors import UnsupportedError
from ._base import as_traceable, convert, implements

__all__ = ["logspace", "resize", "choose", "poly"]


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, ...)`` (NumPy's own composition)."""
    from .creation import linspace
    from .math import power
    from .shape import expand_dims, reshape
    shape = np.broadcast_shapes(*[type_of(as_traceable(v)).shape for v in (start, stop, base)])

    def at_least(v):                    # NumPy's np.array(v, ndmin=len(shape))
        v = as_traceable(v)
        return reshape(v, (1,) * (len(shape) - type_of(v).ndim) + type_of(v).shape)
    start, stop, base = at_least(start), at_least(stop), at_least(base)
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    out = power(expand_dims(base, axis), y)
    return out if dtype is None else out.astype(dtype)


@implements(np.resize)
def resize(a, new_shape):
    """``a`` flattened, repeated as often as needed and cut to ``new_shape`` (concrete)."""
    from .creation import zeros
    from .mutation import ravel
    from .shape import concatenate, reshape
    shape = (int(new_shape),) if np.ndim(new_shape) == 0 else tuple(int(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    a = ravel(as_traceable(a))
    size, new_size = type_of(a).shape[0], int(np.prod(shape, dtype=np.int64))
    if size == 0 or new_size == 0:
        return zeros(shape, type_of(a).dtype)
    repeats = -(-new_size // size)
    return reshape(concatenate((a,) * repeats)[:new_size], shape)


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    """``choices[a[i]][i]`` with everything broadcast; ``mode`` 'raise' (checked here when the
    indices are concrete), 'wrap' or 'clip'."""
    from ._base import result_type
    from .logic import where
    from .math import clip, remainder
    from .shape import broadcast_arrays
    if out is not None:
        raise UnsupportedError("np.choose(..., out=) on tracers; write out[...] = np.choose(...)")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got '{mode}')")
    n = len(choices)
    if isinstance(a, Tracer):
        if mode == "raise":
            raise UnsupportedError(
                "np.choose with traced indices and mode='raise': whether an index is out of "
                "range is known only when the function runs; pass mode='clip' or mode='wrap'")
        if type_of(a).dtype.kind not in "iub":
            raise TypeError("Cannot cast array data from float to int64 according to the rule "
                            "'safe'")
    else:
        a = np.asarray(a)
        if a.dtype.kind not in "iub":
            raise TypeError("Cannot cast array data from float to int64 according to the rule "
                            "'safe'")
        if mode == "raise" and a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError("invalid entry in choice array")
    idx = convert(as_traceable(a), np.int64)
    if mode == "wrap":
        idx = remainder(idx, n)
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    parts = broadcast_arrays(idx, *[as_traceable(c) for c in choices])
    idx, cs = parts[0], parts[1:]
    dt, _ = result_type(*cs)
    out = convert(cs[-1], dt)
    for k in range(n - 2, -1, -1):
        out = where(idx == k, convert(cs[k], dt), out)
    return out


@implements(np.poly)
def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given real roots (1-d), NumPy's
    repeated convolution."""
    from .creation import ones
    from .shape import atleast_1d
    from .signal import convolve
    z = atleast_1d(as_traceable(seq_of_zeros))
    t = type_of(z)
    if t.ndim != 1:
        raise UnsupportedError("np.poly of a traced square matrix (its eigenvalues' polynomial "
                               "has a real or complex dtype by their values); pass the roots")
    if t.dtype.kind == "c":
        raise UnsupportedError("np.poly of traced complex roots: NumPy returns real "
                               "coefficients when the roots come in conjugate pairs, a fact "
                               "of the values; take .real of np.poly(roots) yourself")
    dt = np.dtype(np.mintypecode(t.dtype.char))
    z = convert(z, dt)
    if t.shape[0] == 0:
        return 1.0
    a = ones((1,), dt)
    for k in range(t.shape[0]):
        a = convolve(a, _pair(z[k], dt), mode="full")
    return a


def _pair(zero, dt):
    """``[1, -zero]`` of dtype ``dt``."""
    from .shape import stack
    return stack([convert(np.ones((), dt), dt), convert(-zero, dt)])
