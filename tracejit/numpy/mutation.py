"""NumPy's mutation model on tracers: writes, in-place operators and views, functionalised.

NumPy code mutates arrays: ``x[i] = v``, ``x += v``, and writes through views (``x[1:]``,
``x.T``, ``x.reshape(...)``, ``np.split(x, 2)``) that the base and every other live view see.
A traced array is an immutable IR value held by a Tracer object, so a write *rebinds*: the written
tracer gets the updated value (a functional ``update``), each base up the chain gets its own
(``ViewLink.put`` puts a view's new value back into its parent), and every live view of the root
is then recomputed from the root's new value (``ViewLink.take``). Views are held weakly: a view
nobody references cannot observe a write and is not recomputed.

A function's arguments are roots like the arrays it creates; ``Traced`` returns the final value of
each argument that was written as an extra output and writes it back into the caller's array
(see api.py), so the caller sees NumPy's mutation.

Scalars: NumPy's reductions, integer indexing and ufuncs on 0-d values return NumPy scalars, which
are immutable (``s += 1`` rebinds ``s``, with scalar promotion). A 0-d tracer behaves as a scalar
unless it is known to be a 0-d array (``Tracer.frozen is False``: a 0-d array argument or created
array, or a view such as ``x[...]``); ``frozen is True`` marks Python and NumPy scalar arguments.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import dtypes
from ..core import Tracer, static_value, type_of
from ..errors import ConcretizationError, TracerError, UnsupportedError
from ..ops import elementwise as ew
from . import indexing, intrange, intstore, math, products, selection
from . import shape as shp
from ._base import convert, is_scalar

__all__ = ["reshape", "ravel", "transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
           "broadcast_to", "broadcast_arrays", "split", "array_split", "flip", "fliplr",
           "flipud", "atleast_1d", "atleast_2d", "atleast_3d", "diagonal", "real", "imag",
           "permute_dims", "matrix_transpose", "copyto", "put", "fill_diagonal", "putmask",
           "place"]


class ViewLink:
    """How a view relates to the array it was taken of.

    take(parent value) -> the view's value; put(parent value, new view value) -> the parent's
    new value, or None for a read-only view (``readonly`` says why a write is refused);
    relayout(NumPy layout of the parent) -> the view's layout, or None where the view is one
    whatever the layout; see ``_layout``.
    """
    __slots__ = ("parent", "take", "put", "readonly", "relayout")

    def __init__(self, parent, take, put, readonly=None, relayout=None):
        self.parent, self.take, self.put = parent, take, put
        self.readonly, self.relayout = readonly, relayout


def value(t: Tracer) -> Tracer:
    """The current value of ``t`` as a new tracer that is nobody's view."""
    return Tracer(t.builder, t.irvar)


def array_copy(t: Tracer) -> Tracer:
    """A new array of ``t``'s value (a 0-d array, not a scalar, when ``t`` is 0-d)."""
    out = value(t)
    out.frozen = False if t.ndim == 0 else None
    return out


def link(parent, child, take, put, readonly=None, relayout=None):
    """Record that ``child`` is a NumPy view of ``parent``; returns ``child``."""
    if not isinstance(parent, Tracer) or not isinstance(child, Tracer):
        return child
    if is_scalar(parent) and put is not None:
        # NumPy makes a new array of a scalar, but for the methods that keep its shape, which
        # return a scalar (s.T, s.squeeze(), s.reshape(()), s.real; s[...] is in view_getitem)
        child = value(child)
        child.frozen = None
        return child
    if child is parent:
        return child
    if child.base is not None:            # the raw function already returned someone's view
        child = value(child)
    child.base = ViewLink(parent, take, put, readonly, relayout)
    if child.ndim == 0:
        child.frozen = False              # a 0-d view (x[...]) is an array, not a scalar
    if parent.viewed is None:
        parent.viewed = []
    parent.viewed.append(weakref.ref(child))
    return child


def _children(t):
    if not t.viewed:
        return []
    live = [c for c in (r() for r in t.viewed) if c is not None and c.base is not None and
            c.base.parent is t]
    t.viewed = [weakref.ref(c) for c in live]
    return live


def _rebind(t, v):
    t.builder, t.irvar = v.builder, v.irvar


def check_writeable(t: Tracer) -> None:
    """NumPy's error for a write into a read-only view (checked before anything else, as
    NumPy does: a read-only destination fails even with an out-of-range index)."""
    node = t
    while node.base is not None:
        lk = node.base
        if lk.put is None:
            if lk.readonly.startswith("writing into the"):
                raise UnsupportedError(lk.readonly)
            raise ValueError(f"assignment destination is read-only ({lk.readonly})")
        node = lk.parent


def assign(t: Tracer, new) -> None:
    """NumPy's write of the whole of ``new`` (already ``t``'s dtype and shape) into ``t``: ``t``,
    the arrays it is a view of and every live view of those see it."""
    if not isinstance(new, Tracer):          # a concrete value: a constant of t's trace
        new = t.builder.constant(np.array(np.broadcast_to(getattr(new, "value", new), t.shape),
                                          t.dtype))
    check_writeable(t)
    if new.ty.weak:           # (a Python number written into an array takes its strong type)
        new = ew.convert_p.bind(new, dtype=new.dtype)
    t.builder.wrote = True
    node, val = t, new
    while node.base is not None:
        lk = node.base
        val = lk.put(value(lk.parent), val)
        node = lk.parent
    _rebind(node, val if node is not t else new)
    stack = [node]
    while stack:                            # recompute the views below the root
        parent = stack.pop()
        for child in _children(parent):
            _rebind(child, new if child is t else child.base.take(value(parent)))
            stack.append(child)


def setitem(self, idx, v):
    """``x[idx] = v``: NumPy's write into x (and whatever x is a view of, and its views)."""
    if is_scalar(self):
        raise TypeError(f"a traced scalar {self.ty} does not support item assignment (NumPy "
                        f"scalars are immutable)")
    if isinstance(v, Tracer) and v.dtype.kind == "c" and self.dtype.kind != "c":
        raise TypeError(f"assigning a complex value into a {self.dtype} array would discard the "
                        f"imaginary part; take .real first")
    check_writeable(self)
    # (one element of v is only ever overwritten with itself: the copy equals the buffered one)
    if isinstance(v, Tracer) and v.size > 1 and _has_mask(idx) and _overlaps(self, v):
        raise UnsupportedError(
            "x[mask] = v where v shares memory with x: NumPy copies a boolean-mask assignment "
            "element by element without buffering, so its result depends on the overlap "
            "(every other write buffers); write x[mask] = v.copy() for the buffered result")
    selected = isinstance(v, selection.Selection)
    if not selected:
        v = intstore.setitem_value(v, idx, self.dtype, self.shape)
    if selected or isinstance(selection.index_part(idx), (slice, selection.Selection)):
        # (x[mask] = y[mask] * 2, x[a:b] = v with traced bounds: see selection.py)
        assign(self, selection.store(value(self), selection.store_mask(self, idx), v))
        return
    assign(self, indexing.update(value(self), idx, v, "set"))


def _has_mask(idx) -> bool:
    parts = idx if isinstance(idx, tuple) else (idx,)
    for p in parts:
        if isinstance(p, (Tracer, np.ndarray)) and p.dtype == np.bool_:
            return True
        if isinstance(p, (bool, np.bool_)) or isinstance(p, list) and p and \
                all(isinstance(q, (bool, np.bool_)) for q in p):
            return True
    return False


def _viewed_elements(t):
    """(the array ``t`` is a view of, ``t``'s element indices into it), the indices None where
    they are not known (the views of complex arrays' parts)."""
    chain = []
    while t.base is not None:
        chain.append(t.base)
        t = t.base.parent
    if t.dtype.kind == "c" and chain:
        return t, None
    idx = np.arange(t.size).reshape(t.shape)
    for lk in reversed(chain):
        if lk.relayout is None:
            return t, None
        idx = lk.relayout(idx)
    return t, idx


def _overlaps(a, b) -> bool:
    """Whether two traced arrays are views of one array with elements in common."""
    ra, ea = _viewed_elements(a)
    rb, eb = _viewed_elements(b)
    if ra is not rb:
        return False
    if ea is None or eb is None:
        return True
    if ea.shape == eb.shape and np.array_equal(ea, eb):
        return False      # the same elements in the same order: copying is the identity
    return bool(np.intersect1d(ea.ravel(), eb.ravel()).size)


def inplace(fn, symbol):
    """``x op= v``: NumPy writes the result into x (keeping x's dtype and shape); a scalar is
    immutable, so there it rebinds (``s op= v`` is ``s = s op v``)."""
    def method(self, other):
        if isinstance(other, selection.Selection) and not is_scalar(self):
            raise ConcretizationError(
                f"x {symbol}= y[mask] writes values of a data-dependent length into x; "
                f"write x[mask] {symbol}= ... (the same mask on both sides) or use numpy.where")
        out = fn(self, other)
        if out is NotImplemented or is_scalar(self):
            return out
        check_writeable(self)               # NumPy's first error, before the shape and cast
        if out.shape != self.shape:
            raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't "
                             f"match the broadcast shape {out.shape} (x {symbol}= v)")
        if out.dtype != self.dtype:
            if not np.can_cast(out.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc output from dtype('{out.dtype}') to "
                                f"dtype('{self.dtype}') with casting rule 'same_kind' (x "
                                f"{symbol}= v keeps x's dtype)")
            out = convert(out, self.dtype)
        assign(self, out)
        return self
    method.__name__ = f"__i{fn.__name__.strip('_')}__"
    return method


# layouts: which reshapes are views -------------------------------------------------------------

def _fake(dtype, shp, order="C"):
    """A NumPy array with the strides of a fresh ``shp`` array over a one-element buffer: only
    its metadata is ever used (slicing, transposing, reshaping without copy never read data)."""
    dt = np.dtype(dtype)
    strides, step = [0] * len(shp), dt.itemsize
    for k in (reversed(range(len(shp))) if order == "C" else range(len(shp))):
        strides[k] = step
        step *= max(shp[k], 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, dt), shp, strides, writeable=False)


def _layout(t):
    """NumPy's memory layout of ``t`` (a fake array, see _fake), its root taken as C-ordered:
    the arrays a function creates are; an argument's is checked when the function is called."""
    chain = []
    while t.base is not None:
        chain.append(t.base)
        t = t.base.parent
    t.builder.layout_roots.add(id(t))        # an argument's layout is checked at call time
    lay = _fake(t.dtype, t.shape)
    for lk in reversed(chain):
        lay = lk.relayout(lay)
    return lay


def set_shape(a, shape):
    """``x.shape = s``: NumPy changes the array object's shape in place, without copying."""
    if is_scalar(a):
        raise AttributeError("attribute 'shape' of a traced NumPy scalar is not writable")
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if id(a) in a.builder.arguments or a.base is not None or _children(a):
        what = "an argument (the caller's array)" if id(a) in a.builder.arguments else \
            "a view or an array with live views"
        raise UnsupportedError(f"x.shape = {shape} on {what} is not supported; write "
                               f"x = x.reshape({shape}) instead")
    try:
        np.reshape(_fake(a.dtype, a.shape), shape, copy=False)
    except ValueError as e:
        raise (AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                              "to make a copy with the desired shape.") if "copy" in str(e)
               else ValueError(str(e))) from None
    _rebind(a, shp.reshape(value(a), shape))


def _reshaped_view(a, out, newshape, order):
    """Link ``out = reshape(a, newshape)`` as a view of ``a`` when NumPy's reshape is one."""
    try:
        np.reshape(_layout(a), newshape, order=order, copy=False)
    except ValueError:
        return out                        # NumPy copies: writes into it stay in it
    old = a.shape
    return link(a, out, lambda p: shp.reshape(p, newshape, order=order),
                lambda p, v: shp.reshape(v, old, order=order),
                relayout=lambda lay: np.reshape(lay, newshape, order=order, copy=False))


def _same_layout_view(a, out):
    """Link a view that only adds or drops axes of length one (any layout keeps being one)."""
    old, new = a.shape, out.shape
    return link(a, out, lambda p: shp.reshape(p, new), lambda p, v: shp.reshape(v, old),
                relayout=lambda lay: lay.reshape(new))


# the view functions ------------------------------------------------------------------------------

def view_getitem(self, idx):
    """``x[idx]``: basic indexing (ints, slices, None, ...) is a view of x, the rest a copy;
    a traced mask or traced slice bounds give a selection (a copy, of data-dependent length)."""
    part = selection.index_part(idx)
    if isinstance(part, selection.Selection):
        return selection.gather(self, part)
    if isinstance(part, slice):
        return selection.dynamic_slice(value(self), part)
    if part is not None:
        return selection.select(value(self), part)
    out = indexing.getitem(self, idx)
    parts = idx if isinstance(idx, tuple) else (idx,)
    if not isinstance(out, Tracer) or \
            any(isinstance(p, (Tracer, list, np.ndarray, bool, np.bool_)) for p in parts):
        return out
    if out.ndim == 0 and not any(p is Ellipsis for p in parts):
        return value(out) if out is self else out       # NumPy gives a scalar (a copy)
    if out.ndim == 0 and is_scalar(self):
        return array_copy(out)            # s[...]: a new 0-d array of the scalar
    if out is self:
        return out
    return link(self, out, lambda p: indexing.getitem(p, idx),
                lambda p, v: indexing.update(p, idx, v, "set"),
                relayout=lambda lay: lay[idx])


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if not isinstance(a, Tracer):
        extra = {} if copy is None else {"copy": copy}
        return np.reshape(a, newshape if shape is None else shape, order=order, **extra)
    out = shp.reshape(a, shape, order=order, newshape=newshape, copy=copy)
    if not isinstance(a, Tracer) or copy:
        return value(out) if out is a else out
    if out is not a and [d for d in a.shape if d != 1] == [d for d in out.shape if d != 1]:
        return _same_layout_view(a, out)      # axes of length one only: a view in any layout
    return _reshaped_view(a, out, out.shape, order)


def ravel(a, order="C"):
    """numpy.ravel: a view only where the array is contiguous (reshape(-1) views more often)."""
    out = shp.ravel(a, order)
    if not isinstance(a, Tracer):
        return out
    lay = _layout(a)
    if not (lay.flags.c_contiguous if order != "F" else lay.flags.f_contiguous):
        return value(out)
    return _reshaped_view(a, out, out.shape, order)


def _perm_view(a, out, axes):
    inv = tuple(np.argsort(axes))
    return link(a, out, lambda p: shp.transpose(p, axes), lambda p, v: shp.transpose(v, inv),
                relayout=lambda lay: lay.transpose(axes))


def transpose(a, axes=None):
    out = shp.transpose(a, axes)
    if not isinstance(a, Tracer):
        return out
    axes = tuple(range(a.ndim))[::-1] if axes is None else \
        tuple(int(k) % max(a.ndim, 1) for k in axes)
    return _perm_view(a, out, axes)


def permute_dims(a, axes=None):
    return transpose(a, axes)


def _perm(fn, ndim, *args):
    """The permutation a transposing NumPy function applies (as transpose's ``axes``)."""
    probe = _fake(np.int8, tuple(range(2, ndim + 2)))     # distinct lengths name the axes
    return tuple(probe.shape.index(n) for n in fn(probe, *args).shape)


def swapaxes(a, axis1, axis2):
    out = shp.swapaxes(a, axis1, axis2)
    return _perm_view(a, out, _perm(np.swapaxes, a.ndim, axis1, axis2)) \
        if isinstance(a, Tracer) else out


def matrix_transpose(x):
    return swapaxes(x, -1, -2)


def moveaxis(a, source, destination):
    out = shp.moveaxis(a, source, destination)
    return _perm_view(a, out, _perm(np.moveaxis, a.ndim, source, destination)) \
        if isinstance(a, Tracer) else out


def expand_dims(a, axis):
    out = shp.expand_dims(a, axis)
    return _same_layout_view(a, out) if isinstance(a, Tracer) else out


def squeeze(a, axis=None):
    out = shp.squeeze(a, axis)
    return _same_layout_view(a, out) if isinstance(a, Tracer) else out


def _atleast(raw):
    def fn(*arys):
        outs = raw(*arys)
        many = len(arys) != 1
        fixed = [_same_layout_view(a, o) if isinstance(a, Tracer) else o
                 for a, o in zip(arys, outs if many else [outs])]
        return tuple(fixed) if many else fixed[0]
    fn.__name__ = raw.__name__
    return fn


atleast_1d = _atleast(shp.atleast_1d)
atleast_2d = _atleast(shp.atleast_2d)
atleast_3d = _atleast(shp.atleast_3d)


def flip(m, axis=None):
    out = shp.flip(m, axis)
    if not isinstance(m, Tracer):
        return out
    return link(m, out, lambda p: shp.flip(p, axis), lambda p, v: shp.flip(v, axis),
                relayout=lambda lay: np.flip(lay, axis))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def _pieces(raw, name):
    def fn(ary, indices_or_sections, axis=0):
        outs = raw(ary, indices_or_sections, axis)
        if not isinstance(ary, Tracer):
            return outs
        from ._base import normalize_axis
        ax = normalize_axis(axis, ary.ndim, name)
        lo, linked = 0, []
        for o in outs:
            n = o.shape[ax]
            idx = (slice(None),) * ax + (slice(lo, lo + n),)
            linked.append(link(ary, o, lambda p, idx=idx: indexing.getitem(p, idx),
                               lambda p, v, idx=idx: indexing.update(p, idx, v, "set"),
                               relayout=lambda lay, idx=idx: lay[idx]))
            lo += n
        return linked
    fn.__name__ = name
    return fn


split = _pieces(shp.split, "split")
array_split = _pieces(shp.array_split, "array_split")


def _readonly(raw, np_fn, why):
    """A view NumPy makes read-only (writes raise), which still sees writes to its base."""
    def fn(a, *args, **kwargs):
        out = raw(a, *args, **kwargs)
        if not isinstance(a, Tracer):
            return out
        if out is a:                           # same shape: still a read-only view
            out = value(a)
        return link(a, out, lambda p: raw(p, *args, **kwargs), None, why,
                    relayout=lambda lay: np_fn(lay, *args, **kwargs))
    fn.__name__ = raw.__name__
    return fn


broadcast_to = _readonly(shp.broadcast_to, np.broadcast_to,
                         "np.broadcast_to returns a read-only view")
diagonal = _readonly(products.diagonal, np.diagonal, "np.diagonal returns a read-only view; "
                     "write through an index such as x[i, i] = v")


def broadcast_arrays(*args, subok=False):
    outs = shp.broadcast_arrays(*args)
    return tuple(broadcast_to(a, type_of(o).shape) if isinstance(a, Tracer) else o
                 for a, o in zip(args, outs))


def _with_part(parent, new, which):
    """``parent`` (complex) with its real or imaginary part replaced by ``new``, exactly."""
    from ..ops.elementwise import complex_p
    if which == "real":
        return complex_p.bind(new, math.imag(parent))
    return complex_p.bind(math.real(parent), new)


def real(x, /):
    out = math.real(x)
    if not isinstance(x, Tracer) or not dtypes.is_complex(x.dtype) or is_scalar(x):
        return out          # of a real array: the array itself; of a scalar: a new scalar
    return link(x, out, math.real, lambda p, v: _with_part(p, v, "real"),
                relayout=lambda lay: lay.real)


def imag(x, /):
    out = math.imag(x)
    if not isinstance(x, Tracer) or is_scalar(x):
        return out                          # (of a NumPy scalar: a new scalar)
    if not dtypes.is_complex(x.dtype):      # NumPy: a new read-only array of zeros
        return link(x, out, math.imag, None, "the imaginary part of a real array is a read-only "
                    "array of zeros", relayout=lambda lay: _fake(lay.dtype, lay.shape))
    return link(x, out, math.imag, lambda p, v: _with_part(p, v, "imag"),
                relayout=lambda lay: lay.imag)



# NumPy's functions that write into an argument ------------------------------------------------

def _target(dst, fname):
    if not isinstance(dst, Tracer):
        raise TracerError(f"np.{fname} would write traced values into a NumPy array "
                          f"({type(dst).__name__}): only traced arrays can hold them. Create the "
                          f"array inside the traced function (np.zeros/np.empty/np.array trace) "
                          f"or take x.copy() of an argument.")
    if is_scalar(dst):
        raise TypeError(f"np.{fname}: a traced scalar {dst.ty} cannot be written into")
    return dst


def write_result(dst, result, casting="same_kind", where=True, what="out="):
    """Store ``result`` into ``dst`` (broadcast to its shape, cast under ``casting``, only where
    ``where``): NumPy's ``out=`` and ``copyto``."""
    from ._base import broadcast_to as broadcast
    from .logic import where as select
    check_writeable(dst)                     # (NumPy's first error, before the cast's)
    rt = type_of(result)
    if not rt.weak and not np.can_cast(rt.dtype, dst.dtype, casting=casting):
        raise TypeError(f"Cannot cast array data from dtype('{rt.dtype}') to "
                        f"dtype('{dst.dtype}') according to the rule '{casting}' ({what})")
    if isinstance(result, Tracer):
        result = intrange.check_narrowing(result, dst.dtype)  # a Python int that does not fit
    new = broadcast(convert(result, dst.dtype), dst.shape)
    if where is not True:
        new = select(where, new, value(dst))
    assign(dst, new)
    return dst


def copyto(dst, src, casting="same_kind", where=True):
    """numpy.copyto into a traced array."""
    write_result(_target(dst, "copyto"), src, casting, where, "copyto")


def _cyclic(values, n, dtype, fname):
    """``values`` as NumPy converts them (``intstore.put_values``), flattened and repeated to length
    ``n`` (NumPy's put/putmask/place rule)."""
    from .shape import ravel
    values = intstore.put_values(values, np.dtype(dtype), fname)
    flat = ravel(values) if isinstance(values, Tracer) else np.ravel(values)
    k = flat.shape[0]
    if k == 0:
        raise ValueError("cannot write from an empty array of values")
    return convert(flat if k == n else indexing.take(flat, np.arange(n) % k), dtype)


def _put_flat(a, positions, values, fname):
    from .shape import ravel
    a = _target(a, fname)
    check_writeable(a)                      # NumPy's first error, before an index error
    n = np.shape(positions)[0] if not isinstance(positions, Tracer) else positions.shape[0]
    flat = indexing.update(ravel(value(a)), positions, _cyclic(values, n, a.dtype, fname),
                           "set")
    assign(a, shp.reshape(flat, a.shape))


def put(a, ind, v, mode="raise"):
    """numpy.put (mode 'raise': out-of-range indices raise when the function runs)."""
    if mode != "raise":
        raise NotImplementedError(f"np.put(mode={mode!r}) on a traced array")
    ind = ind.ravel() if isinstance(ind, Tracer) else np.ravel(ind).astype(np.int64)
    _put_flat(a, ind, v, "put")


def fill_diagonal(a, val, wrap=False):
    """numpy.fill_diagonal: writes ``val`` (repeated as needed) along the main diagonal."""
    a = _target(a, "fill_diagonal")
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim == 2:
        step = a.shape[1] + 1
        end = a.size if wrap else min(a.shape[0], a.shape[1]) * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
        end = a.size
    _put_flat(a, np.arange(0, end, step), val, "fill_diagonal")


def putmask(a, mask, values):
    """numpy.putmask: a.flat[i] = values.flat[i % len(values)] where mask.flat[i]."""
    from .logic import where
    a = _target(a, "putmask")
    full = shp.reshape(_cyclic(values, a.size, a.dtype, "putmask"), a.shape)
    assign(a, where(mask, full, value(a)))


def place(arr, mask, vals):
    """numpy.place: the true positions of a concrete ``mask`` take ``vals`` in turn."""
    mask = static_value(mask)
    if isinstance(mask, Tracer):
        raise ConcretizationError("np.place with a traced mask takes a data-dependent number of "
                                  "values; use np.putmask or np.where instead")
    _put_flat(arr, np.flatnonzero(mask), vals, "place")


def fill(self, v):
    """``x.fill(v)``: every element becomes ``v`` (cast as NumPy's fill does, unsafely)."""
    dst = _target(self, "fill")
    if not isinstance(v, Tracer) or is_scalar(v):
        v = intstore.store_scalar(v, dst.dtype)
    write_result(dst, v, "unsafe", what="fill")
