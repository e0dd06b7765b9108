"""Which Python functions behave the same: keys for caches of objects built from a function.

``tj.grad(f)`` written inside a loop makes a new function object each time (and often a new
``lambda`` with it). Two functions behave the same when they run the same code object on the
same closure cell contents, defaults and globals — compared by identity, as a trace compares
the values it closes over: a trace bakes closed-over arrays in as constants (documented in the
README), so a cell rebound to a new array gives a new key, and the same array object gives the
same key. ``behaviour_key`` returns the key and the objects it refers to by id; ``Memo`` keeps
those objects alive while the entry lives, so an id in a live key is never reused by another
object. Bound methods key by their function and ``__self__``; ``functools.partial`` by its
function, arguments and keywords; any other callable by itself.
"""
from __future__ import annotations

import functools
import hashlib
import threading
import types
from collections import OrderedDict

import numpy as np

from . import forksafe


def _cells(fun):
    out = []
    for cell in fun.__closure__ or ():
        try:
            out.append(cell.cell_contents)
        except ValueError:                 # an empty cell (a name assigned later)
            out.append(_EMPTY)
    return tuple(out)


_EMPTY = object()


def _first(item):
    return item[0]


def behaviour_key(fun):
    """(key, pinned objects) identifying what ``fun`` computes, or None when it cannot be keyed
    (an unhashable callable)."""
    if isinstance(fun, types.FunctionType):
        pins = (fun.__globals__, _cells(fun), tuple(fun.__defaults__ or ()),
                tuple(sorted((fun.__kwdefaults__ or {}).items(), key=_first)))
        key = ("function", fun.__code__, id(pins[0]), tuple(map(id, pins[1])),
               tuple(map(id, pins[2])), tuple((k, id(v)) for k, v in pins[3]))
        return key, pins
    if isinstance(fun, types.MethodType):
        inner = behaviour_key(fun.__func__)
        if inner is None:
            return None
        return ("method", inner[0], id(fun.__self__)), (inner[1], fun.__self__)
    if isinstance(fun, functools.partial):
        inner = behaviour_key(fun.func)
        if inner is None:
            return None
        kw = tuple(sorted(fun.keywords.items(), key=_first))
        return (("partial", inner[0], tuple(map(id, fun.args)),
                 tuple((k, id(v)) for k, v in kw)), (inner[1], fun.args, kw))
    try:
        hash(fun)
    except TypeError:
        return None
    return ("object", fun), ()


# Captured arrays: a trace bakes the NumPy arrays a function reads from its globals and
# closure in as constants. ``captured_arrays`` records them (by name or cell, with the object
# and a digest of its bytes) when a function is first traced; ``Traced`` compares that record
# at each later trace, and on a change drops every traced signature, so that no two of them
# see different values of one array (README: "Captured arrays").

def _code_names(code, out):
    out.update(code.co_names)
    for c in code.co_consts:                 # nested functions and lambdas read globals too
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _digest(arr):
    if arr.dtype.hasobject:
        return None                          # (object arrays: compared by identity only)
    return hashlib.blake2b(np.ascontiguousarray(arr).view(np.uint8).reshape(-1),
                           digest_size=16).digest()


def captured_arrays(fun) -> tuple:
    """((where, array, digest), ...) for the ndarrays ``fun`` reads from its globals (by name)
    and closure cells (by index); () for callables that are not Python functions."""
    while isinstance(fun, (types.MethodType, functools.partial)):
        fun = fun.__func__ if isinstance(fun, types.MethodType) else fun.func
    fun = getattr(fun, "__wrapped__", fun)
    if not isinstance(fun, types.FunctionType):
        return ()
    found = [(("global", name), fun.__globals__[name])
             for name in sorted(_code_names(fun.__code__, set())) if name in fun.__globals__]
    found += [(("cell", k), v) for k, v in enumerate(_cells(fun))]
    return tuple((where, v, _digest(v)) for where, v in found if isinstance(v, np.ndarray))


def arrays_changed(record, fun) -> bool:
    """Whether an array of ``record`` (``captured_arrays`` of ``fun`` earlier) was rebound to
    another object or changed in place since."""
    now = {where: (v, d) for where, v, d in captured_arrays(fun)}
    return any(where not in now or now[where][0] is not v or now[where][1] != d
               for where, v, d in record)


class Memo:
    """A thread-safe LRU of objects built from functions, keyed by ``behaviour_key`` and the
    build options; holds each entry's pinned objects (bounded: ``size`` entries)."""

    def __init__(self, size: int = 256):
        self.size = size
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        # a leaf lock (build() runs outside it): taken around os.fork, so that a child never
        # inherits it held by a thread of the parent
        forksafe.register(self._lock, forksafe.LEAF)

    def get(self, fun, options, build):
        """The object built for ``fun`` and ``options`` (hashable), ``build()`` on a miss."""
        keyed = behaviour_key(fun)
        if keyed is None:
            return build()
        key = (keyed[0], options)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[1]
        made = build()
        with self._lock:
            hit = self._entries.setdefault(key, (keyed[1], made))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return hit[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
