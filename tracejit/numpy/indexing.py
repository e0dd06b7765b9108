"""Indexing: x[idx] (basic and advanced, NumPy's rules), take, take_along_axis, x.at[idx].op(v).

Basic indexing (ints, slices with any step, None, ...) becomes slice/rev/reshape equations.
Advanced indexing (integer arrays, concrete boolean masks) moves the indexed axes to the front,
merges them and gathers with one ``take`` on a flat index, then places the result dims where
NumPy puts them. Concrete indices are bounds-checked at trace time (IndexError, as NumPy); traced
out-of-range indices raise IndexError when the function runs. A traced boolean mask has a
data-dependent result shape and is refused with advice (``where``, ``.at[mask]``).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, static_value, type_of
from ..errors import ConcretizationError, UnsupportedError
from ..ir import Literal
from ..ops import structural as st
from . import intrange
from ._base import as_traceable, broadcast_shapes, gather, implements, normalize_axis

__all__ = ["take", "take_along_axis", "getitem", "compress", "extract"]


def _is_int(c):
    return isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_))


def _expand(idx, ndim):
    """Index tuple with Ellipsis expanded and concrete boolean masks turned into int arrays."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    comps = []
    for c in idx:
        if isinstance(c, Tracer) and c.known() is not None:
            c = np.asarray(c.known())          # an index array the function made with NumPy
            if c.ndim == 0 and c.dtype.kind in "iu":
                c = c[()]                      # NumPy treats a 0-d integer array as an int
        if isinstance(c, Tracer):
            if c.dtype == dtypes.bool_:
                raise ConcretizationError(
                    f"indexing with a traced boolean mask {c.ty} has a data-dependent result "
                    f"shape. Use numpy.where(mask, x, 0) to keep the shape, x.at[mask].set(v) "
                    f"for an update, or x[tracejit.numpy.nonzero(mask, size=k)] for the first k "
                    f"selected elements (padded with fill_value=...).")
            if c.dtype.kind not in "iu":
                raise IndexError(f"arrays used as indices must be of integer type, got {c.dtype}")
            comps.append(c)
        elif isinstance(c, (list, np.ndarray)):
            arr = np.asarray(c)
            if arr.dtype == bool:
                comps.extend(np.nonzero(arr))
            elif arr.dtype.kind in "iu" or arr.size == 0:
                comps.append(arr.astype(np.int64))
            else:
                raise IndexError("arrays used as indices must be of integer (or boolean) type")
        elif isinstance(c, (bool, np.bool_)):
            raise UnsupportedError("indexing with a bare True/False is not supported")
        elif c is None or c is Ellipsis or isinstance(c, slice) or _is_int(c):
            comps.append(c)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             f"(`None`) and integer or boolean arrays are valid indices, got "
                             f"{type(c).__name__}")
    n_ell = sum(c is Ellipsis for c in comps)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for c in comps if c is not None and c is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} "
                         f"were indexed")
    if n_ell:
        i = next(k for k, c in enumerate(comps) if c is Ellipsis)
        comps[i:i + 1] = [slice(None)] * (ndim - used)
    else:
        comps += [slice(None)] * (ndim - used)
    return comps


def getitem(x, idx):
    """``x[idx]`` with NumPy semantics (static result shape)."""
    x = as_traceable(x)
    t = type_of(x)
    comps = _expand(idx, t.ndim)
    advanced = [c for c in comps if isinstance(c, (Tracer, np.ndarray))]
    starts, limits, steps, rev = [], [], [], []
    slots = []                       # output layout: 'new' | ('dim', k) | 'adv'
    adv_axes, adv_idx = [], []
    axis = 0
    for c in comps:
        if c is None:
            slots.append("new")
            continue
        n = t.shape[axis]
        if isinstance(c, slice):
            s, e, k = c.indices(n)
            count = len(range(s, e, k))
            if k < 0:
                rev.append(axis)
                s, k = n - 1 - s, -k
            starts.append(s)
            limits.append(s + (count - 1) * k + 1 if count else s)
            steps.append(k)
            slots.append(("dim", axis))
        elif _is_int(c) and not advanced:
            i = int(c)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            i %= n
            starts.append(i), limits.append(i + 1), steps.append(1)
        else:
            starts.append(0), limits.append(n), steps.append(1)
            adv_axes.append(axis)
            adv_idx.append(np.int64(c) if _is_int(c) else c)
            slots.append("adv")
        axis += 1
    y = x
    if rev:
        y = st.rev_p.bind(y, axes=tuple(rev)) if isinstance(y, Tracer) else np.flip(y, rev)
    if (tuple(starts), tuple(limits), tuple(steps)) != ((0,) * t.ndim, t.shape, (1,) * t.ndim):
        y = _slice(y, starts, limits, steps)
    if not adv_axes:
        shape = tuple(1 if s == "new" else type_of(y).shape[s[1]] for s in slots)
        return _reshape(y, shape)
    return _advanced(y, slots, adv_axes, adv_idx)


def _slice(y, starts, limits, steps):
    if isinstance(y, Tracer):
        return st.slice_p.bind(y, start=tuple(starts), limit=tuple(limits), step=tuple(steps))
    return y[tuple(slice(s, l, k) for s, l, k in zip(starts, limits, steps))]


def _reshape(y, shape):
    if type_of(y).shape == tuple(shape):
        return y
    if isinstance(y, Tracer):
        return st.reshape_p.bind(y, shape=tuple(shape))
    return np.reshape(y, shape)


def _advanced(y, slots, adv_axes, adv_idx):
    from .math import add, multiply
    from .shape import transpose
    ys = type_of(y).shape
    rest = [a for a in range(len(ys)) if a not in adv_axes]
    y = transpose(y, tuple(adv_axes) + tuple(rest))
    sizes = [ys[a] for a in adv_axes]
    merged = int(np.prod(sizes, dtype=np.int64))
    y = _reshape(y, (merged,) + tuple(ys[a] for a in rest))
    bshape = broadcast_shapes("index", *[type_of(i).shape for i in adv_idx])
    flat = None
    stride = 1
    for i, n, ax in reversed(list(zip(adv_idx, sizes, adv_axes))):
        i = _normalize_index(i, n, ax)
        term = multiply(i, stride) if stride != 1 else i
        flat = term if flat is None else add(flat, term)
        stride *= n
    flat = _broadcast_index(flat, bshape)
    out = gather(y, flat, 0)
    nb = len(bshape)
    adv_pos = [k for k, s in enumerate(slots) if s == "adv"]
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    non_adv = [s for s in slots if s != "adv"]
    if adjacent:
        before = sum(1 for s in slots[:adv_pos[0]] if s != "new" and s != "adv")
        nrest = len(rest)
        perm = list(range(nb, nb + before)) + list(range(nb)) + list(range(nb + before,
                                                                            nb + nrest))
        out = transpose(out, tuple(perm))
        layout = []
        for k, s in enumerate(slots):
            if s == "adv":
                if k == adv_pos[0]:
                    layout += ["b"] * nb
            else:
                layout.append(s)
    else:
        layout = ["b"] * nb + non_adv
    shp = type_of(out).shape
    shape, j = [], 0
    for s in layout:
        if s == "new":
            shape.append(1)
        else:
            shape.append(shp[j])
            j += 1
    return _reshape(out, tuple(shape))


def _normalize_index(i, n, axis):
    """Non-negative indices; out-of-range ones become -(huge) so the gather raises IndexError."""
    from .logic import where
    from .math import add, less, logical_or, greater_equal
    if not isinstance(i, Tracer):
        arr = np.asarray(i, dtype=np.int64)
        bad = (arr < -n) | (arr >= n)
        if bad.any():
            raise IndexError(f"index {int(arr[bad].flat[0])} is out of bounds for axis {axis} "
                             f"with size {n}")
        return arr % n if n else arr
    if i.dtype != dtypes.int64:
        from ._base import convert
        i = convert(i, dtypes.int64)
    wrapped = where(less(i, 0), add(i, n), i)
    bad = logical_or(less(wrapped, 0), greater_equal(wrapped, n))
    return where(bad, np.int64(-2**62), wrapped)


def _broadcast_index(flat, shape):
    from .shape import broadcast_to
    return broadcast_to(flat, shape) if type_of(flat).shape != tuple(shape) else flat


@implements(np.take)
def take(a, indices, axis=None, out=None, mode=None):
    """numpy.take (mode 'raise'): out-of-range indices raise IndexError."""
    from .shape import ravel
    if mode not in (None, "raise"):
        raise UnsupportedError(f"take(mode={mode!r}) is not supported")
    a = as_traceable(a)
    if axis is None:
        a = ravel(a)
        axis = 0
    t = type_of(a)
    axis = normalize_axis(axis, t.ndim, "take")
    idx = _normalize_index(indices if isinstance(indices, Tracer) else np.asarray(indices),
                           t.shape[axis], axis)
    return gather(a, idx, axis)


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis):
    """Gather along ``axis`` with an index array broadcast against the other axes."""
    from .math import add, multiply
    from .shape import ravel
    arr = as_traceable(arr)
    t = type_of(arr)
    if axis is None:
        return take(ravel(arr), indices)
    axis = normalize_axis(axis, t.ndim, "take_along_axis")
    it = type_of(indices)
    if it.ndim != t.ndim:
        raise ValueError("take_along_axis: indices and arr must have the same number of dims")
    shape = tuple(it.shape[d] if d == axis else
                  broadcast_shapes("take_along_axis", (t.shape[d],), (it.shape[d],))[0]
                  for d in range(t.ndim))
    strides = np.cumprod((t.shape[1:] + (1,))[::-1])[::-1]
    base = np.zeros(shape, dtype=np.int64)
    for d in range(t.ndim):
        if d != axis:
            r = np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(t.ndim)])
            base = base + r * int(strides[d])
    idx = _normalize_index(indices, t.shape[axis], axis)
    flat = add(base, multiply(_broadcast_index(idx, shape), int(strides[axis])))
    return gather(ravel(arr), flat, 0)


@implements(np.compress)
def compress(condition, a, axis=None):
    condition = static_value(condition)
    if isinstance(condition, Tracer):
        raise ConcretizationError("compress with a traced condition has a data-dependent shape")
    return take(a, np.nonzero(np.asarray(condition))[0], axis=axis)


@implements(np.extract)
def extract(condition, arr):
    condition = static_value(condition)
    from .shape import ravel
    if isinstance(condition, Tracer):
        raise ConcretizationError("extract with a traced condition has a data-dependent shape")
    return take(ravel(arr), np.nonzero(np.ravel(condition))[0])


# ---------------------------------------------------------------------------------------------
# functional updates

class _AtIndexer:
    """``x.at[idx]``: functional updates returning a new array; repeated indices accumulate
    for add/mul/min/max; for set, the last update of a repeated index wins."""
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtRef(self.x, idx)


class _AtRef:
    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self):
        return getitem(self.x, self.idx)

    def set(self, values):
        return update(self.x, self.idx, values, "set")

    def add(self, values):
        return update(self.x, self.idx, values, "add")

    def multiply(self, values):
        return update(self.x, self.idx, values, "mul")

    mul = multiply

    def min(self, values):
        return update(self.x, self.idx, values, "min")

    def max(self, values):
        return update(self.x, self.idx, values, "max")


def update(x, idx, values, mode):
    """A copy of ``x`` with ``x[idx]`` updated by ``values`` (``mode`` in set/add/mul/min/max)."""
    from ._base import convert
    from .logic import where
    from .math import add, maximum, minimum, multiply
    from .shape import broadcast_to, ravel, reshape
    x = as_traceable(x)
    t = type_of(x)
    if isinstance(values, Tracer):
        values = intrange.check_narrowing(values, t.dtype)   # a Python int that does not fit
    idx = tuple(static_value(c) for c in idx) if isinstance(idx, tuple) else static_value(idx)
    if isinstance(idx, Tracer) and idx.dtype == dtypes.bool_:
        return _update_masked(x, t, idx, values, mode)
    if mode == "set":
        out = _set_box(x, t, idx, values)
        if out is not None:
            return out
    positions = getitem(np.arange(t.size, dtype=np.int64).reshape(t.shape), idx)
    pshape = type_of(positions).shape
    v = convert(values, t.dtype, False)
    v = v if isinstance(v, Tracer) else np.asarray(getattr(v, "value", v))
    v = broadcast_to(v, pshape)
    flat = st.scatter_p.bind(ravel(x), ravel(positions) if isinstance(positions, Tracer) else
                             np.ravel(positions), ravel(v) if isinstance(v, Tracer) else
                             np.ravel(v), axis=0, mode=mode)
    return reshape(flat, t.shape)


def _update_masked(x, t, mask, values, mode):
    """``x[mask] op= values`` for a traced boolean mask over x's leading axes: a select. Values
    for each selected row (broadcasting to a row) apply to every row; a run of values, one per
    selected row, is handed out as NumPy does (``_masked_values``)."""
    from ._base import convert
    from .logic import where
    from .math import add, maximum, minimum, multiply
    from .shape import reshape
    k = mask.ndim
    if mask.shape != t.shape[:k]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed array "
                         f"{t.shape} (it must match the leading dimensions)")
    vt, rows = type_of(values), t.shape[k:]
    if not rows and vt.ndim > 1:
        raise TypeError(f"NumPy boolean array indexing assignment requires a 0 or 1-dimensional "
                        f"input, input has {vt.ndim} dimensions")
    if rows and vt.ndim == len(rows) + 1 and vt.shape[0] == 1:    # one run for every row
        values = _reshape(values, vt.shape[1:])
        vt = type_of(values)
    try:
        per_row = vt.ndim <= len(rows) and np.broadcast_shapes(vt.shape, rows) == rows
    except ValueError:
        per_row = False
    combine = {"set": lambda a, v: v, "add": add, "mul": multiply, "min": minimum,
               "max": maximum}[mode]
    m = reshape(mask, mask.shape + (1,) * (t.ndim - k)) if k < t.ndim else mask
    if per_row or vt.size == 1 and not rows:
        if not per_row:
            values = _reshape(values, ())
        return where(m, convert(combine(x, values), t.dtype), x)
    if not _is_run(vt.shape, rows):
        raise ValueError(f"shape mismatch: value array of shape {vt.shape} could not be "
                         f"broadcast to indexing result of shape (n,{', '.join(map(str, rows))})"
                         f" (n: the number of True elements of the mask)")
    return _masked_values(x, t, mask, m, values, combine)


def _is_run(shape, rows) -> bool:
    """Whether values of ``shape`` are a run of entries each broadcasting to ``rows``."""
    try:
        return len(shape) == len(rows) + 1 and np.broadcast_shapes(shape[1:], rows) == rows
    except ValueError:
        return False


def _reshape(v, shape):
    from .shape import reshape
    return reshape(v, shape) if isinstance(v, Tracer) else np.reshape(v, shape)


def _masked_values(x, t, mask, m, values, combine):
    """``x[mask] op= values`` with a run of ``n`` values (or rows of values) along the first
    axis of ``values``: as NumPy, the k-th selected position (row-major) gets ``values[k]``,
    and the number of selected positions must be ``n`` (a run-time check, ValueError). The
    k-th selected position is where ``cumsum(mask) - 1 == k``: a gather from ``values``,
    then a select; derivatives and vmap follow from those ops (JAX's functional view)."""
    from ._base import convert
    from .logic import where
    from .math import clip, not_equal, subtract
    from .reductions import cumsum, sum as sum_
    from .shape import broadcast_to, reshape
    from ..ops import elementwise as ew
    rows = t.shape[mask.ndim:]
    n = type_of(values).shape[0]
    flat = reshape(mask, (-1,)).astype(np.int64)
    bad = not_equal(sum_(flat), n)
    if n == 0:                                       # nothing to hand out: no True allowed
        return ew.check(bad, as_traceable(x), "mask_values")
    v = broadcast_to(as_traceable(convert(values, t.dtype, False)), (n,) + rows)
    pos = clip(subtract(cumsum(flat), 1), 0, n - 1)          # (before the first True: 0)
    picked = reshape(take(v, pos, axis=0), t.shape)
    return ew.check(bad, where(m, convert(combine(x, picked), t.dtype), x), "mask_values")


def _set_box(x, t, idx, values):
    """``x[idx] = values`` for an index of ints and unit-step slices (a box of ``x``): a select
    between ``x`` and the values padded to its shape, one fused elementwise pass (a scatter
    reads an index per element). None where the index is not such a box."""
    from ._base import convert, ir_type
    from .logic import where
    from .math import greater_equal, less, logical_and
    from .shape import broadcast_to, reshape
    if not isinstance(x, Tracer) or t.ndim == 0:
        return None
    parts = idx if isinstance(idx, tuple) else (idx,)
    if any(isinstance(p, (Tracer, list, np.ndarray, bool, np.bool_)) for p in parts):
        return None
    comps = _expand(idx, t.ndim)
    lo, size = [], []
    for c in (c for c in comps if c is not None):
        n = t.shape[len(lo)]
        if isinstance(c, slice):
            start, stop, step = c.indices(n)
            if step != 1:
                return None
            lo.append(start), size.append(max(0, stop - start))
        else:
            i = int(c)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {len(lo)} with size {n}")
            lo.append(i % n), size.append(1)
    view_shape = type_of(getitem(x, idx)).shape
    v = convert(values, t.dtype, False)
    v = v if isinstance(v, Tracer) else np.asarray(getattr(v, "value", v), dtype=t.dtype)
    v = reshape(broadcast_to(v, view_shape), tuple(size))
    if 0 in size:
        return x
    hi = tuple(n - a - k for n, a, k in zip(t.shape, lo, size))
    if not any(lo) and not any(hi):
        return as_traceable(v) if v.shape == t.shape else broadcast_to(as_traceable(v), t.shape)
    padded = st.pad_p.bind(v, Literal(np.zeros((), t.dtype)[()], ir_type(t.dtype, False)),
                           lo=tuple(lo), hi=hi)
    mask = None
    for d, (a, k) in enumerate(zip(lo, size)):
        if a == 0 and k == t.shape[d]:
            continue
        pos = st.iota_p.bind(dtype=dtypes.int64, shape=t.shape, axis=d)
        inside = logical_and(greater_equal(pos, a), less(pos, a + k))
        mask = inside if mask is None else logical_and(mask, inside)
    return where(mask, padded, x)
