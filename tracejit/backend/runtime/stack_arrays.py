"""Stacks at run time: NumPy arrays in and out of the descriptors of ``emit/stacks.py``.

A graph input stack is lent to the kernel (:func:`descriptor` borrows the array's rows); a graph
output stack is written into a caller-owned zeroed descriptor (:func:`new_descriptor`) and
adopted without a copy (:func:`adopt`: the NumPy array frees the malloc'd rows when it goes).
Invariants: every block a kernel hands over is freed exactly once, with libc ``free``; a
descriptor is zeroed once its rows are adopted or released.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..emit.stacks import row_bytes

_libc = ctypes.CDLL(None)
_free = _libc.free
_free.argtypes, _free.restype = [ctypes.c_void_p], None


def new_descriptor():
    """Zeroed caller-owned memory for one descriptor (a stack output)."""
    return np.zeros(2, np.uint64)


def descriptor(array):
    """A descriptor borrowing the rows of a C-contiguous ``array`` (keep both alive)."""
    return np.array([array.ctypes.data if array.size else 0, array.shape[0]], np.uint64)


class _Rows:
    """A malloc'd block handed over by a kernel; NumPy arrays made from it keep it alive, and
    the block is freed when the last of them goes."""

    def __init__(self, address, shape, dtype):
        self.address = address
        self.__array_interface__ = {"shape": shape, "typestr": dtype.str, "version": 3,
                                    "data": (address, False)}

    def __del__(self):
        _free(self.address)


def adopt(desc, ty):
    """The stack a kernel wrote into the caller-owned descriptor ``desc`` as a NumPy array of
    shape ``(length, *row)``, taking ownership of its rows (no copy); ``desc`` is zeroed."""
    address, n = int(desc[0]), int(desc[1])
    desc[:] = 0
    shape = (n,) + ty.row.shape
    if not address:
        return np.empty(shape, ty.dtype)
    if n * ty.row.size == 0:
        _free(address)
        return np.empty(shape, ty.dtype)
    return np.asarray(_Rows(address, shape, np.dtype(ty.dtype)))


def read(desc, ty):
    """A copy of the stack behind descriptor ``desc`` (which keeps its rows)."""
    address, n = int(desc[0]), int(desc[1])
    shape = (n,) + ty.row.shape
    out = np.empty(shape, ty.dtype)
    if address and out.nbytes:
        ctypes.memmove(out.ctypes.data, address, out.nbytes)
    return out


def release_py(desc):
    """Free the rows of a graph-owned descriptor (hybrid programs) and zero it."""
    if int(desc[0]):
        _free(int(desc[0]))
    desc[:] = 0


def check_input(array, ty, what):
    """``array`` as a C-contiguous stack of ``ty`` (dtype, row shape), or a ValueError naming
    ``what`` (e.g. the argument's position)."""
    a = np.ascontiguousarray(array, dtype=ty.dtype)
    if a.ndim != ty.ndim or a.shape[1:] != ty.shape[1:]:
        raise ValueError(f"tracejit: {what} should be a stack {ty} (rows of shape "
                         f"{ty.shape[1:]}), got an array of shape {a.shape}")
    return a


def bytes_per_step(graph) -> int:
    """Bytes one step of every ``while_record`` in ``graph`` (sub-graphs included) records."""
    total = 0
    for eqn in graph.eqns:
        if eqn.prim.name == "while_record":
            total += sum(row_bytes(v.ty) for v in eqn.outvars[eqn.params["n_carry"]:])
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(sub, "eqns"):
                    total += bytes_per_step(sub)
    return total
