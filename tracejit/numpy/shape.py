"""Shape manipulation: reshape ravel transpose swapaxes moveaxis expand_dims squeeze
broadcast_to concatenate stack hstack vstack split tile repeat flip roll pad."""
from __future__ import annotations

import numpy as np

from ..core import Tracer, static_value, type_of
from ..errors import ShapeError, UnsupportedError
from ..ops import structural as st
from ._base import (as_traceable, broadcast_shapes, broadcast_to as _bcast, convert, gather,
                    implements, static_shape,
                    normalize_axes, normalize_axis, result_type)

__all__ = ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "concatenate", "stack", "hstack", "vstack",
           "column_stack", "split", "array_split", "tile", "repeat", "flip", "fliplr", "flipud",
           "roll", "pad", "atleast_1d", "atleast_2d", "atleast_3d", "shape", "ndim", "size"]


def _resolve_shape(newshape, size, opname="reshape"):
    static_shape(newshape, opname)
    if isinstance(newshape, (int, np.integer, Tracer)):
        newshape = (int(newshape),)
    newshape = [int(d) for d in newshape]
    if newshape.count(-1) > 1:
        raise ShapeError(f"{opname}: can only specify one unknown dimension")
    if -1 in newshape:
        known = int(np.prod([d for d in newshape if d != -1]))
        if known == 0 or size % known:
            raise ShapeError(f"cannot reshape array of size {size} into shape {tuple(newshape)}")
        newshape[newshape.index(-1)] = size // known
    return tuple(newshape)


@implements(np.reshape)
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise UnsupportedError(f"reshape(order={order!r}): only C order is supported")
    shape = newshape if shape is None else shape
    t = type_of(a)
    shape = _resolve_shape(shape, t.size)
    if shape == t.shape:
        return a
    return st.reshape_p.bind(a, shape=shape)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape(a, (-1,), order=order)


@implements(np.transpose)
def transpose(a, axes=None):
    t = type_of(a)
    perm = tuple(range(t.ndim))[::-1] if axes is None else \
        tuple(normalize_axis(int(x), t.ndim, "transpose") for x in axes)
    if perm == tuple(range(t.ndim)):
        return a
    return st.transpose_p.bind(a, perm=perm)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    t = type_of(a)
    perm = list(range(t.ndim))
    i, j = normalize_axis(axis1, t.ndim), normalize_axis(axis2, t.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    t = type_of(a)
    src = [normalize_axis(s, t.ndim) for s in np.atleast_1d(source)]
    dst = [normalize_axis(d, t.ndim) for d in np.atleast_1d(destination)]
    order = [n for n in range(t.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@implements(np.expand_dims)
def expand_dims(a, axis):
    t = type_of(a)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    nd = t.ndim + len(axes)
    axes = sorted(normalize_axis(x, nd, "expand_dims") for x in axes)
    shape = list(t.shape)
    for x in axes:
        shape.insert(x, 1)
    return reshape(a, tuple(shape))


@implements(np.squeeze)
def squeeze(a, axis=None):
    t = type_of(a)
    if axis is None:
        axes = [i for i, d in enumerate(t.shape) if d == 1]
    else:
        axes = normalize_axes(axis, t.ndim, "squeeze")
        for x in axes:
            if t.shape[x] != 1:
                raise ShapeError("cannot select an axis to squeeze out which has size not "
                                 f"equal to one (axis {x} of shape {t.shape})")
    return reshape(a, tuple(d for i, d in enumerate(t.shape) if i not in axes))


@implements(np.broadcast_to)
def broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    broadcast_shapes("broadcast_to", type_of(array).shape, shape)
    if broadcast_shapes("broadcast_to", type_of(array).shape, shape) != shape:
        raise ShapeError(f"cannot broadcast shape {type_of(array).shape} to {shape}")
    return _bcast(as_traceable(array), shape)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    shape = broadcast_shapes("broadcast_arrays", *[type_of(a).shape for a in args])
    return [broadcast_to(a, shape) for a in args]


def _same_dtype(arrays, opname):
    dt, weak = result_type(*arrays)
    return [convert(as_traceable(a) if not isinstance(a, (int, float, complex)) else a, dt, weak)
            for a in arrays]


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = _same_dtype(arrays, "concatenate")
    t = type_of(arrays[0])
    if t.ndim == 0:
        raise ShapeError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis(axis, t.ndim, "concatenate")
    if len(arrays) == 1:
        return arrays[0]
    if not any(isinstance(a, Tracer) for a in arrays):
        return np.concatenate(arrays, axis)
    return st.concatenate_p.bind(*[_operand(a) for a in arrays], axis=axis)


def _operand(a):
    if hasattr(a, "value"):            # Literal
        return np.asarray(a.value)
    return a


@implements(np.stack)
def stack(arrays, axis=0, out=None):
    arrays = list(arrays)
    shapes = {type_of(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ShapeError(f"stack: all input arrays must have the same shape, got {sorted(shapes)}")
    nd = len(shapes.pop()) + 1
    axis = normalize_axis(axis, nd, "stack")
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis)


@implements(np.hstack)
def hstack(tup):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if type_of(arrs[0]).ndim == 1 else 1)


@implements(np.vstack)
def vstack(tup):
    return concatenate([atleast_2d(a) for a in tup], axis=0)


@implements(np.column_stack)
def column_stack(tup):
    cols = [reshape(a, (-1, 1)) if type_of(a).ndim < 2 else a for a in tup]
    return concatenate(cols, axis=1)


def _slice_axis(a, axis, start, stop, step=1):
    t = type_of(a)
    starts = [0] * t.ndim
    limits = list(t.shape)
    steps = [1] * t.ndim
    starts[axis], limits[axis], steps[axis] = start, stop, step
    if not isinstance(a, Tracer):
        return np.asarray(a)[tuple(slice(s, l, k) for s, l, k in zip(starts, limits, steps))]
    return st.slice_p.bind(a, start=tuple(starts), limit=tuple(limits), step=tuple(steps))


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    t = type_of(ary)
    axis = normalize_axis(axis, t.ndim, "split")
    n = t.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise ShapeError(f"split: array of length {n} along axis {axis} does not divide into "
                             f"{k} equal sections; use array_split")
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        start, stop, _ = slice(lo, hi).indices(n)       # Python slicing, as NumPy's split
        pieces.append(_slice_axis(ary, axis, start, max(start, stop)))
    return pieces


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    t = type_of(ary)
    axis = normalize_axis(axis, t.ndim, "array_split")
    n = t.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        idx = list(np.cumsum(sizes)[:-1])
        return split(ary, idx, axis)
    return split(ary, indices_or_sections, axis)


@implements(np.tile)
def tile(A, reps):
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    t = type_of(A)
    nd = max(t.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - t.ndim) + t.shape
    a = reshape(A, shape)
    # broadcast to (r0, d0, r1, d1, ...) then merge each pair
    inter = []
    for r, d in zip(reps, shape):
        inter += [r, d]
    expanded = reshape(a, tuple(x for d in shape for x in (1, d)))
    b = broadcast_to(expanded, tuple(inter))
    return reshape(b, tuple(r * d for r, d in zip(reps, shape)))


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    """Repeat elements; ``repeats`` must be concrete (the result shape depends on it)."""
    repeats = static_value(repeats, need=True)
    if isinstance(repeats, Tracer):
        raise UnsupportedError("repeat with traced repeats has a data-dependent shape; pass "
                               "concrete repeats")
    if axis is None:
        a = ravel(a)
        axis = 0
    t = type_of(a)
    axis = normalize_axis(axis, t.ndim, "repeat")
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iub" and (isinstance(repeats, np.ndarray) or reps.size):
        raise TypeError(f"repeat: repeats must be integers, got {reps.dtype}")
    reps = np.broadcast_to(reps.astype(np.int64), (t.shape[axis],))
    if (reps < 0).any():
        raise ValueError("repeat: repeats may not contain negative values")
    if np.all(reps == reps[0]) if reps.size else True:
        r = int(reps[0]) if reps.size else 0
        a2 = expand_dims(a, axis + 1)
        shape = list(type_of(a2).shape)
        shape[axis + 1] = r
        b = broadcast_to(a2, tuple(shape))
        out = list(t.shape)
        out[axis] = t.shape[axis] * r
        return reshape(b, tuple(out))
    idx = np.repeat(np.arange(t.shape[axis]), reps)
    return gather(as_traceable(a), idx, axis)


@implements(np.flip)
def flip(m, axis=None):
    t = type_of(m)
    axes = normalize_axes(axis, t.ndim, "flip")
    if not axes:
        return m
    return st.rev_p.bind(m, axes=axes)


@implements(np.fliplr)
def fliplr(m):
    return flip(m, 1)


@implements(np.flipud)
def flipud(m):
    return flip(m, 0)


@implements(np.roll)
def roll(a, shift, axis=None):
    if axis is None:
        t = type_of(a)
        return reshape(roll(ravel(a), shift, 0), t.shape)
    shifts = np.broadcast_to(np.asarray(shift), np.shape(axis))
    axes = np.atleast_1d(axis)
    for s, ax in zip(np.atleast_1d(shifts), axes):
        t = type_of(a)
        ax = normalize_axis(int(ax), t.ndim, "roll")
        n = t.shape[ax]
        if n == 0:
            continue
        k = int(s) % n
        if k:
            a = concatenate([_slice_axis(a, ax, n - k, n), _slice_axis(a, ax, 0, n - k)], ax)
    return a


@implements(np.pad)
def pad(array, pad_width, mode="constant", constant_values=0, **kwargs):
    """Pad with a constant (other modes: edge, wrap, reflect, symmetric via slices)."""
    array = as_traceable(array)
    t = type_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (t.ndim, 2))
    if (widths < 0).any():
        raise ValueError("pad: index can't contain negative values")
    if kwargs:
        raise UnsupportedError(f"pad: options {sorted(kwargs)} are not supported")
    if mode == "constant":
        if isinstance(constant_values, Tracer) and constant_values.ndim == 0:
            values = [[constant_values, constant_values]] * t.ndim
        else:
            if isinstance(constant_values, Tracer):
                raise UnsupportedError("pad: traced constant_values must be a scalar")
            values = np.broadcast_to(np.asarray(constant_values, dtype=object), (t.ndim, 2))
        uniform = all(v is values[0][0] or (not isinstance(v, Tracer) and not isinstance(
            values[0][0], Tracer) and v == values[0][0]) for row in values for v in row)
        if uniform:
            value = convert(values[0][0], t.dtype, False)
            return st.pad_p.bind(array, value, lo=tuple(int(w) for w in widths[:, 0]),
                                 hi=tuple(int(w) for w in widths[:, 1]))
        out = array             # NumPy pads axis by axis: later axes cover the corners
        for ax in range(t.ndim):
            for side in (0, 1):
                w = int(widths[ax, side])
                if w:
                    lo = tuple(w if (a == ax and side == 0) else 0 for a in range(t.ndim))
                    hi = tuple(w if (a == ax and side == 1) else 0 for a in range(t.ndim))
                    out = st.pad_p.bind(out, convert(values[ax][side], t.dtype, False),
                                        lo=lo, hi=hi)
        return out
    if mode in ("edge", "wrap", "reflect", "symmetric"):
        out = array
        for ax in range(t.ndim):
            lo, hi = int(widths[ax, 0]), int(widths[ax, 1])
            n = type_of(out).shape[ax]
            idx = np.pad(np.arange(n), (lo, hi), mode=mode)
            if lo or hi:
                out = gather(as_traceable(out), idx, ax)
        return out
    raise UnsupportedError(f"pad(mode={mode!r}) is not supported; use constant, edge, wrap, "
                           f"reflect or symmetric")


@implements(np.atleast_1d)
def atleast_1d(*arys):
    res = [reshape(a, (1,)) if type_of(a).ndim == 0 else a for a in arys]
    return res[0] if len(res) == 1 else res


@implements(np.atleast_2d)
def atleast_2d(*arys):
    res = []
    for a in arys:
        t = type_of(a)
        res.append(reshape(a, (1, 1)) if t.ndim == 0 else reshape(a, (1,) + t.shape)
                   if t.ndim == 1 else a)
    return res[0] if len(res) == 1 else res


@implements(np.atleast_3d)
def atleast_3d(*arys):
    res = []
    for a in arys:
        t = type_of(a)
        shape = {0: (1, 1, 1), 1: (1,) + t.shape + (1,), 2: t.shape + (1,)}.get(t.ndim, t.shape)
        res.append(reshape(a, shape))
    return res[0] if len(res) == 1 else res


@implements(np.shape)
def shape(a):
    return type_of(a).shape


@implements(np.ndim)
def ndim(a):
    return type_of(a).ndim


@implements(np.size)
def size(a, axis=None):
    t = type_of(a)
    return t.size if axis is None else t.shape[axis]
