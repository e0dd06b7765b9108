"""Views: how a step reads a value that is not materialised by itself.

A ``View`` is an affine map from an index over ``shape`` to elements of a *base*: a materialised
Var (one slot) or a Literal (all strides 0). broadcast_in_dim, transpose, slice, rev, reshape of
contiguous data (or one that only adds or drops size-1 axes) and iota compose into a view and
cost nothing: no step runs for them.

Invariants: strides and offset are in elements of ``dtype``, never bytes; a view never reads
outside its base (the primitives' shape rules guarantee it); ``compose`` of a view primitive
gives the view of that primitive's result.
"""
from __future__ import annotations

import numpy as np

from ...ir import Var

VIEW_PRIMS = ("broadcast_in_dim", "transpose", "slice", "rev")


def unit_reshape(src, dst) -> bool:
    """Whether a reshape only inserts or removes size-1 axes."""
    return tuple(d for d in src if d != 1) == tuple(d for d in dst if d != 1)


def row_major(shape):
    """Element strides of a C-order array; a stack's run-time leading dimension (None) gets
    the row size (it is the outermost, so nothing multiplies it)."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d if d is not None else 0
    return tuple(reversed(strides))


class View:
    """Elements ``base[offset + sum(i_d * strides[d])]`` for an index ``i`` over ``shape``.

    ``base`` is a materialised Var (owning a slot) or a Literal (all strides 0)."""
    __slots__ = ("base", "offset", "strides", "shape", "dtype")

    def __init__(self, base, offset, strides, shape, dtype):
        self.base, self.offset = base, int(offset)
        self.strides, self.shape = tuple(int(s) for s in strides), tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def whole(cls, var):
        return cls(var, 0, row_major(var.ty.shape) if isinstance(var, Var) else (),
                   var.ty.shape, var.ty.dtype)

    def contiguous(self):
        return all(s == r for s, r, d in zip(self.strides, row_major(self.shape), self.shape)
                   if d != 1)

    def is_whole(self):
        return isinstance(self.base, Var) and self.offset == 0 and self.contiguous() and \
            self.shape == self.base.ty.shape

    def covers_base(self):
        """Whether the view is all of its base in the base's own memory order (the base, or a
        reshape of it): the view's elements are the base's bytes, in order."""
        if self.is_whole():
            return True
        return isinstance(self.base, Var) and not self.base.ty.dynamic and self.offset == 0 \
            and self.contiguous() and self.dtype == self.base.ty.dtype and \
            int(np.prod(self.shape, dtype=np.int64)) == int(self.base.ty.size)

    def key(self):
        return (id(self.base), self.offset, self.strides, self.shape)

    def compose(self, prim, params, out_ty):
        """The view after a view primitive (``VIEW_PRIMS`` or contiguous reshape)."""
        st, sh, off = list(self.strides), self.shape, self.offset
        name = prim
        if name == "broadcast_in_dim":
            shape, dims = params["shape"], params["dims"]
            new = [0] * len(shape)
            for i, d in enumerate(dims):
                new[d] = st[i] if sh[i] == shape[d] else 0
            return View(self.base, off, new, shape, self.dtype)
        if name == "transpose":
            perm = params["perm"]
            return View(self.base, off, [st[p] for p in perm], out_ty.shape, self.dtype)
        if name == "slice":
            start, step = params["start"], params["step"]
            if any(d == 0 for d in out_ty.shape):
                return View(self.base, off, [0] * len(sh), out_ty.shape, self.dtype)
            off += sum(s * t for s, t in zip(start, st))
            return View(self.base, off, [t * p for t, p in zip(st, step)], out_ty.shape,
                        self.dtype)
        if name == "rev":
            for a in params["axes"]:
                if sh[a] > 0:
                    off += (sh[a] - 1) * st[a]
                st[a] = -st[a]
            return View(self.base, off, st, sh, self.dtype)
        if name == "reshape":
            if unit_reshape(sh, out_ty.shape):       # size-1 axes in or out: any strides
                real = iter(s for s, d in zip(st, sh) if d != 1)
                return View(self.base, off, [0 if d == 1 else next(real) for d in out_ty.shape],
                            out_ty.shape, self.dtype)
            assert self.contiguous()
            return View(self.base, off, row_major(out_ty.shape), out_ty.shape, self.dtype)
        raise ValueError(name)

    def __repr__(self):
        return f"View(off={self.offset}, strides={self.strides}, shape={self.shape})"
