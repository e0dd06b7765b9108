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
import threading
import types
from collections import OrderedDict

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
