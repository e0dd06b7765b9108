"""Plain-NumPy stand-ins for ``tj.cond/switch/while_loop/fori_loop/scan/checkpoint`` and
``x.at[...]``.

Used only to *validate* generated programs (and to estimate numerical noise): the shim raises
where tracejit would reject a program for a type reason (a carry changing shape or dtype,
branches of different types), so such programs are discarded instead of being counted.
"""
from __future__ import annotations

import numpy as np

MAX_TRIPS = 64


def _leaves(x):
    if isinstance(x, (tuple, list)):
        return [leaf for item in x for leaf in _leaves(item)]
    return [x]


def _same_types(a, b, what):
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        raise TypeError(f"{what}: structure changed")
    for u, v in zip(la, lb):
        u, v = np.asarray(u), np.asarray(v)
        if u.shape != v.shape or u.dtype != v.dtype:
            raise TypeError(f"{what}: {u.dtype}{u.shape} vs {v.dtype}{v.shape}")


def _strong(x):
    """A Python scalar carry becomes a 0-d array of its default dtype, as in tracejit."""
    if isinstance(x, (tuple, list)):
        return type(x)(_strong(v) for v in x)
    return np.asarray(x)


def cond(pred, true_fun, false_fun, *operands):
    p = np.asarray(pred)
    if p.shape != () or p.dtype != np.bool_:
        raise TypeError("cond predicate must be a bool scalar")
    a, b = _strong(true_fun(*operands)), _strong(false_fun(*operands))
    _same_types(a, b, "cond")
    return a if bool(p) else b


def switch(index, branches, *operands):
    outs = [_strong(fn(*operands)) for fn in branches]
    for o in outs[1:]:
        _same_types(outs[0], o, "switch")
    return outs[int(np.clip(int(index), 0, len(branches) - 1))]


def while_loop(cond_fun, body_fun, init_val):
    val = _strong(init_val)
    for trip in range(MAX_TRIPS):
        c = np.asarray(cond_fun(val))
        if c.shape != () or c.dtype != np.bool_:
            raise TypeError("while_loop cond must return a bool scalar")
        if not c:
            if trip == 0:        # tracejit traces the body even when it never runs
                _same_types(val, _strong(body_fun(val)), "while_loop")
            return val
        new = _strong(body_fun(val))
        _same_types(val, new, "while_loop")
        val = new
    raise RuntimeError("while_loop: too many trips for a fuzz program")


def fori_loop(lower, upper, body_fun, init_val):
    val = _strong(init_val)
    if int(upper) <= int(lower):     # no trips: type-check the body anyway, as tracing does
        _same_types(val, _strong(body_fun(np.int64(lower), val)), "fori_loop")
    for i in range(int(lower), int(upper)):
        new = _strong(body_fun(np.int64(i), val))
        _same_types(val, new, "fori_loop")
        val = new
    return val


def scan(f, init, xs=None, length=None, reverse=False, checkpoint_every=None):
    carry = _strong(init)
    n = len(xs) if xs is not None else length
    order = range(n - 1, -1, -1) if reverse else range(n)
    ys = [None] * n
    for i in order:
        new, y = f(carry, None if xs is None else xs[i])
        new = _strong(new)
        _same_types(carry, new, "scan")
        carry, ys[i] = new, np.asarray(y)
    if n == 0:
        raise TypeError("scan over an empty axis: ys type unknown to the shim")
    for y in ys[1:]:
        _same_types(ys[0], y, "scan ys")
    return carry, np.stack(ys)


def checkpoint(fun, policy=None):
    """Rematerialisation changes no value: the identity on functions."""
    return fun


class At:
    """``At(x)[idx].add(v)``: NumPy's spelling of tracejit's functional ``x.at[idx].add(v)``."""

    def __init__(self, x):
        self.x = np.asarray(x)

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)


class _AtIndex:
    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def _check_int(self, v):
        """A Python int out of an integer array's range raises, as ``x[i] = v`` and tracejit's
        ``.at`` do (``ufunc.at`` itself would wrap it: uint8 ``-1`` became 255)."""
        if type(v) is int and self.x.dtype.kind in "iu":
            info = np.iinfo(self.x.dtype)
            if not info.min <= v <= info.max:
                raise OverflowError(f"Python integer {v} out of bounds for {self.x.dtype}")

    def _apply(self, ufunc, v):
        self._check_int(v)
        out = self.x.copy()
        v = np.asarray(v)
        if np.result_type(out, v) != out.dtype and not (v.ndim == 0 and v.dtype.kind in "iub"
                                                       and out.dtype.kind in "iufc"):
            raise TypeError("at[] update would need an unsafe cast")
        ufunc.at(out, self.idx, v)
        return out

    def set(self, v):
        self._check_int(v)
        out = self.x.copy()
        if np.result_type(out, np.asarray(v)) != out.dtype and np.ndim(v):
            raise TypeError("at[].set would need an unsafe cast")
        out[self.idx] = v
        return out

    def add(self, v):
        return self._apply(np.add, v)

    def mul(self, v):
        return self._apply(np.multiply, v)

    def min(self, v):
        return self._apply(np.minimum, v)

    def max(self, v):
        return self._apply(np.maximum, v)
