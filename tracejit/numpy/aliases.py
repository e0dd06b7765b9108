"""Arguments that share memory, as NumPy sees them: traced as views of one root.

``f(a, a)`` or ``f(a[1:], a[:-1])`` where ``f`` writes into an argument: in NumPy a write through
one name is seen through the other. A compiled function takes each argument as its own buffer,
so such a call is traced again for its *alias pattern*, which joins the signature (api.Traced):
each group of arguments sharing memory gets a *root*, an extra argument that is the span of
memory the group covers (a 1-D array of its elements, passed as a view of the caller's memory),
and every member of the group is traced as a view of the root at its offset and element strides
(a slice of the root, reshaped, where the member is a C-order block of it, else a gather from
the root; a write into a member reaches the root, which the other members then read:
``mutation.link``). The members' own inputs stay in the graph, unused, so the
calling convention keeps one input per argument leaf; the roots come after them, and the written
roots are what the call writes back.

Invariants: a pattern exists only when a written argument shares memory with another argument
(only groups holding a written argument are joined: reads of shared memory need nothing); the
members of a group have one dtype, and offsets and strides that are multiples of its item size
(otherwise InputError: NumPy's aliasing of such arrays cannot be expressed as element views);
a root covers exactly the group's elements from the lowest to the highest address.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..ir import Type
from . import indexing, mutation

__all__ = ["pattern", "spans", "root_types", "member_views"]


def _extent(x: np.ndarray):
    """(lowest byte address, one past the highest) of ``x``'s elements."""
    lo = hi = x.__array_interface__["data"][0]
    for n, s in zip(x.shape, x.strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return lo, hi + x.dtype.itemsize


def _groups(leaves, written):
    """The groups (sorted leaf indices) of array leaves sharing memory that hold a written
    leaf: connected components of "shares memory with"."""
    arrays = [i for i, x in enumerate(leaves) if isinstance(x, np.ndarray) and x.size]
    parent = {i: i for i in arrays}

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, i in enumerate(arrays):
        for j in arrays[a + 1:]:
            if np.may_share_memory(leaves[i], leaves[j]) and \
                    np.shares_memory(leaves[i], leaves[j]):
                parent[find(i)] = find(j)
    comps = {}
    for i in arrays:
        comps.setdefault(find(i), []).append(i)
    return [sorted(c) for c in comps.values()
            if len(c) > 1 and any(i in written for i in c)]


def pattern(leaves, written, names) -> tuple:
    """The alias pattern of a call (part of its signature): per group of arguments that share
    memory with a written one, ``(span, dtype, ((leaf, offset, strides), ...))`` in elements of
    the group's dtype; ``()`` when no written argument shares memory with another."""
    out = []
    for group in _groups(leaves, set(written)):
        xs = [leaves[i] for i in group]
        dt = xs[0].dtype
        if any(x.dtype != dt for x in xs):
            raise InputError(
                f"arguments {', '.join(names[i] for i in group)} share memory with different "
                f"dtypes and the traced function writes into one of them: tracejit reproduces "
                f"NumPy's aliasing for views of one dtype only. Pass a copy (x.copy()) of one.")
        size = dt.itemsize
        extents = [_extent(x) for x in xs]
        base = min(lo for lo, _ in extents)
        members = []
        for i, x in zip(group, xs):
            start = x.__array_interface__["data"][0] - base
            if start % size or any(s % size for s in x.strides):
                raise InputError(
                    f"argument {names[i]} shares memory with another argument the traced "
                    f"function writes into, at an offset or stride that is not a whole number of "
                    f"elements: NumPy's aliasing of it cannot be traced. Pass a copy "
                    f"(x.copy()).")
            members.append((i, start // size, tuple(s // size for s in x.strides)))
        span = (max(hi for _, hi in extents) - base) // size
        out.append((span, dt.str, tuple(members)))
    return tuple(out)


def spans(leaves, pat) -> list:
    """The root of each group of ``pat``: a 1-D view of the caller's memory the group covers,
    from its lowest element (``offset`` elements below the first member's first element)."""
    as_strided = np.lib.stride_tricks.as_strided
    roots = []
    for span, dt, members in pat:
        size = np.dtype(dt).itemsize
        leaf, offset, _ = members[0]
        x = leaves[leaf]
        down = as_strided(x, shape=(offset + 1,), strides=(-size,),
                          writeable=x.flags.writeable)       # (reads nothing: a view)
        roots.append(as_strided(down[-1:], shape=(span,), strides=(size,),
                                writeable=x.flags.writeable))
    return roots


def root_types(pat) -> list:
    """The input types of the roots (after the argument leaves' inputs)."""
    return [Type(np.dtype(dt), (span,)) for span, dt, _ in pat]


def member_views(roots, types, pat) -> dict:
    """{leaf: the tracer the function receives for it}: a view of its group's root tracer at
    its offset and strides (writes through it reach the root and the other members)."""
    views = {}
    for root, (span, dt, members) in zip(roots, pat):
        root.frozen = False
        for leaf, offset, strides in members:
            shape = types[leaf].shape
            if _c_order(shape, strides):
                # a block of the root (f(a, a), rows of one array): a slice of it, reshaped,
                # NumPy's own views (mutation.py), not a gather of every element
                n = int(np.prod(shape, dtype=np.int64))
                views[leaf] = root[offset:offset + n].reshape(shape)
                continue
            idx = np.full(shape, offset, dtype=np.int64)       # the member's element indices
            for k, (n, s) in enumerate(zip(shape, strides)):
                idx += (np.arange(n, dtype=np.int64) * s).reshape(
                    (n,) + (1,) * (len(shape) - 1 - k))
            view = indexing.take(root, idx)
            views[leaf] = mutation.link(
                root, view, lambda p, idx=idx: indexing.take(p, idx),
                lambda p, v, idx=idx: indexing.update(p, idx, v, "set"),
                relayout=lambda lay, offset=offset, shape=shape, strides=strides:
                _relayout(lay, offset, shape, strides))
    return views


def _c_order(shape, strides) -> bool:
    """Whether element strides are C order's for ``shape`` (any stride on a length-1 axis)."""
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != step:
            return False
        step *= n
    return True


def _relayout(lay, offset, shape, strides):
    """A member's layout (or its element indices) from its root's: element ``offset`` on."""
    step = lay.strides[0]
    return np.lib.stride_tricks.as_strided(lay[offset:], shape=shape,
                                           strides=tuple(s * step for s in strides),
                                           writeable=False)
