"""nonzero, flatnonzero, argwhere and count_nonzero; ``size=`` for traced arrays.

Where a traced array is nonzero is known only when the function runs, and so is how many such
positions there are: the result of ``np.nonzero(x)`` has a data-dependent shape, which a compiled
function cannot have. As in JAX, ``tracejit.numpy.nonzero(x, size=k, fill_value=f)`` returns
exactly ``k`` indices per axis: the first ``k`` positions in C order, then ``f`` (default 0)
where there are fewer. The same ``size``/``fill_value`` work on concrete arrays.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, static_value
from ..errors import ConcretizationError

__all__ = ["nonzero", "flatnonzero", "argwhere", "count_nonzero"]


def _fills(fill_value, ndim):
    if fill_value is None:
        return (0,) * ndim
    if np.ndim(fill_value) == 0:
        return (fill_value,) * ndim
    fills = tuple(fill_value)
    if len(fills) != ndim:
        raise ValueError(f"nonzero: fill_value has {len(fills)} entries for a {ndim}-d array")
    return fills


def nonzero(a, *, size=None, fill_value=None):
    """numpy.nonzero; ``size``: return exactly that many indices per axis (needed on traced
    arrays), padded with ``fill_value`` (a scalar or one per axis; default 0)."""
    from .math import floor_divide, less_equal, not_equal, remainder
    from .logic import where
    from .reductions import cumsum, sum as sum_
    from .shape import ravel, reshape
    a = static_value(a)
    nd = np.ndim(a)
    if nd == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar)"
                         ".nonzero() instead.")
    if not isinstance(a, Tracer):
        found = np.nonzero(np.asarray(a))
        if size is None:
            return found
        return tuple(np.concatenate([i[:size], np.full(max(0, size - len(i)), f, np.int64)])
                     for i, f in zip(found, _fills(fill_value, nd)))
    if size is None:
        raise ConcretizationError(
            f"np.nonzero of a traced array {a.ty} has a data-dependent number of results. Use "
            f"tracejit.numpy.nonzero(x, size=k, fill_value=f) for exactly k indices (the first "
            f"k, padded with f), or np.where(cond, x, y) to keep the shape.")
    size = int(size)
    flat = ravel(not_equal(a, 0)).astype(dtypes.int64)
    seen = cumsum(flat)                          # seen[i]: nonzeros among the first i + 1
    # the (k+1)-th nonzero is at the number of positions that have seen at most k of them
    pos = sum_(less_equal(reshape(seen, (1, -1)), np.arange(size).reshape(-1, 1)), axis=1)
    valid = pos < a.size
    out, stride = [], a.size
    for d, f in zip(range(nd), _fills(fill_value, nd)):
        stride //= a.shape[d]
        coord = remainder(floor_divide(pos, max(stride, 1)), a.shape[d])
        out.append(where(valid, coord, np.int64(f)))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """numpy.flatnonzero (``size``/``fill_value`` as in :func:`nonzero`)."""
    from .shape import ravel
    a = static_value(a)
    flat = ravel(a) if isinstance(a, Tracer) else np.ravel(a)
    return nonzero(flat, size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """numpy.argwhere (``size``/``fill_value`` as in :func:`nonzero`)."""
    from .shape import stack
    a = static_value(a)
    if np.ndim(a) == 0 or not isinstance(a, Tracer):
        if size is None:
            return np.argwhere(np.asarray(a))
        a = np.atleast_1d(a) if not isinstance(a, Tracer) else a
    idx = nonzero(a, size=size, fill_value=fill_value)
    return stack(idx, axis=-1) if any(isinstance(i, Tracer) for i in idx) else \
        np.stack(idx, axis=-1)


def count_nonzero(a, axis=None, *, keepdims=False):
    """numpy.count_nonzero: the number of nonzero entries (along ``axis``), as int64."""
    from .math import not_equal
    from .reductions import sum as sum_
    if not isinstance(a, Tracer):
        return np.count_nonzero(a, axis=axis, keepdims=keepdims)
    return sum_(not_equal(a, 0), axis=axis, keepdims=keepdims, dtype=dtypes.int64)
