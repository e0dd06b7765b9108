"""Call signatures: the cache key of a traced function's call, and what its traces taught.

A call's ``Signature`` is its pytree structure, (dtype, shape, weak) of every leaf
(``leaf_type``), the values of static arguments, per Python-int leaf its ``IntRange``
(``numpy.intrange``), which leaves are NumPy scalars (not 0-d arrays: ``scalars``), and, for
the signatures whose traces needed them, the values of Python ints and bools (``values``: a
``range`` bound, a shape, an ``if``; ``pinned`` when they are passed to the function as Python
values). ``Learned`` remembers, per signature of types, which
leaves a later call must be keyed by (or traced differently): the trace of the first call of a
signature decides it, and every later call of those types is looked up with it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import dtypes, tree
from .core import Tracer
from .errors import InputError
from .ir import Type


def leaf_type(x, path: str) -> Type:
    """The IR type of an argument leaf; Python scalars are weak. Bad leaves name their path."""
    if isinstance(x, Tracer):
        return x.ty
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return Type(dtypes.WEAK_DEFAULT[type(x)], (), weak=True)
    if isinstance(x, np.ndarray) and type(x) is not np.ndarray and not isinstance(x, np.memmap):
        # np.matrix (* is a matrix product), masked arrays (a mask) and other subclasses change
        # what NumPy's operations mean; tracing their data as plain arrays would change it too
        raise InputError(f"argument {path} is a {type(x).__module__}.{type(x).__name__}, a NumPy "
                         f"array subclass whose operations mean something else than ndarray's; "
                         f"tracejit traces plain arrays only. Pass np.asarray(x) if ndarray "
                         f"semantics are what you want (for a masked array: x.filled(v) or "
                         f"x.data with the mask as a separate argument).")
    if isinstance(x, (np.ndarray, np.generic)):
        dt = x.dtype
    else:
        if isinstance(x, (str, bytes)) or not hasattr(x, "__array__") and \
                not isinstance(x, (list, tuple)):
            raise InputError(f"argument {path} is a {type(x).__name__} ({x!r:.60}), not an array "
                             f"or number. Pass arrays/numbers, or mark it static with "
                             f"static_argnums / static_argnames.")
        dt = np.asarray(x).dtype
    try:
        dt = dtypes.canonical(dt, what=f"argument {path}")
    except Exception as e:
        raise InputError(str(e).split("\n")[0] + f" (argument {path})") from None
    return Type(dt, tuple(np.shape(x)))


class Signature(NamedTuple):
    """The cache key of a call. ``int_ranges``: per leaf, the IntRange of a Python int (does it
    fit int32, its sign: what NumPy's treatment of the int can depend on), else None."""
    treedef: Any
    types: tuple
    static: tuple
    int_ranges: tuple = ()
    # leaves that are NumPy scalars: traced as immutable scalars (Tracer.frozen), which NumPy
    # treats differently from 0-d arrays of the same type (``s += 1`` rebinds, ``a[i] = s``
    # converts through int()/float(), ``s ** 0.5`` takes no fast path)
    scalars: tuple = ()
    # (leaf, value key) of the Python-scalar arguments whose values the trace needed (a range
    # bound, a shape, a branch): set only for the signatures whose traces did (see _signature)
    values: tuple = ()
    # the Python ints and bools are passed to the function as Python values (static), after
    # the trace with them traced failed (code that needs a real int: isinstance, == "str")
    pinned: bool = False
    # arguments sharing memory with a written one: numpy/aliases.py's pattern (groups traced
    # as views of one root), set only for calls whose arguments do (see Traced._python_call)
    aliases: tuple = ()


def value_key(x):
    """A Python scalar as a cache-key value (floats by their bits: -0.0 and NaN are values)."""
    if type(x) is float:
        return x.hex()
    if type(x) is complex:
        return (x.real.hex(), x.imag.hex())
    return x


# what code that needs a real Python int raises on a traced one (a value error is the user's)
_NEEDS_A_REAL_INT = (TypeError, AttributeError, NotImplementedError)


def _python_int(x) -> bool:
    return type(x) is int or type(x) is bool


class Learned:
    """What the traces of one function taught about its signatures: the Python int/bool leaves
    to key by value (their values were needed, or they are pinned: passed as Python values
    after the trace with them traced failed). Thread-safe: each change is one dict operation."""

    def __init__(self):
        # (no lock, none to inherit held across os.fork: dict operations are atomic)
        self._values: dict = {}          # signature -> (leaves keyed by value, pinned)

    def apply(self, leaves, sig: Signature) -> Signature:
        """``sig`` of a call with ``leaves``, with what was learned about it."""
        sig = self.with_values(leaves, sig)
        if not sig.pinned and any(type(x) is int and not -2**63 <= x < 2**63 for x in leaves):
            # beyond int64 (uint64_array + 2**63 is fine in NumPy): a traced int cannot hold
            # it, so the ints are passed as Python values
            ints = tuple(i for i, x in enumerate(leaves) if _python_int(x))
            sig = sig._replace(values=tuple((i, leaves[i]) for i in ints), pinned=True)
        return sig

    def with_values(self, leaves, sig: Signature) -> Signature:
        needed, pinned = self._values.get(sig._replace(values=(), pinned=False), ((), False))
        if not needed:
            return sig
        return sig._replace(values=tuple((i, value_key(leaves[i])) for i in needed),
                            pinned=pinned)

    def fallback(self, leaves, sig: Signature, exc: Exception):
        """(signature to trace again with after the trace of ``sig`` raised ``exc``, a function
        recording it for later calls once that trace worked), or None."""
        base = sig._replace(values=(), pinned=False)
        ints = tuple(i for i, x in enumerate(leaves) if _python_int(x))
        if ints and not sig.pinned and isinstance(exc, _NEEDS_A_REAL_INT):
            # code that needs a real Python int (a comparison with a string, an API that
            # checks its type): pass the ints and bools as Python values, one trace per value
            again = sig._replace(values=tuple((i, leaves[i]) for i in ints), pinned=True)
            return again, lambda: self._learn(self._values, base, (ints, True))
        return None

    def needs_values(self, leaves, sig: Signature, needed: frozenset) -> Signature | None:
        """After a trace of ``sig`` that needed the values of the Python-scalar leaves
        ``needed``: None when ``sig`` holds them, else the signature that does (learned: later
        calls of these types are keyed by those values)."""
        have = {i for i, _ in sig.values}
        if needed <= have:
            return None
        base = sig._replace(values=(), pinned=False)
        self._learn(self._values, base, (tuple(sorted(have | needed)), False))
        return self.with_values(leaves, base)

    def restore(self, sig: Signature) -> None:
        """Learn what a signature from an artifact says (the Python scalars keyed by value), so
        later calls of its types are keyed by it."""
        big = any(type(v) is int and not -2**63 <= v < 2**63 for _, v in sig.values)
        if sig.values and not big:      # (ints beyond int64 are pinned on every call anyway)
            self._values[sig._replace(values=(), pinned=False)] = \
                (tuple(i for i, _ in sig.values), sig.pinned)

    @staticmethod
    def _learn(table, sig, what):
        table[sig] = what

    def clear(self) -> None:
        self._values.clear()


def hashable(value, what):
    try:
        hash(value)
    except TypeError:
        raise InputError(f"{what} must be hashable to be part of the trace cache key, got "
                         f"{type(value).__name__}; pass a tuple instead of a list, or make it a "
                         f"traced (non-static) argument") from None
    return value


def pretty_path(path, sig):
    """'[0][0]...' of the (args, kwargs) tree to 'args[0]...' / 'kwargs['x']...'."""
    if path.startswith("[0]"):
        rest = path[3:]
        return "args" + rest
    if path.startswith("[1]"):
        return "kwargs" + path[3:]
    return path


def explain(old: Signature, new: Signature, sig) -> str:
    if old.static != new.static:
        return f"static arguments changed from {old.static} to {new.static}"
    if old.treedef != new.treedef:
        return f"argument structure changed from {old.treedef} to {new.treedef}"
    paths = tree.leaf_paths(new.treedef)
    diffs = [f"{pretty_path(p, sig)} changed from {a} to {b}"
             for p, a, b in zip(paths, old.types, new.types) if a != b]
    if not diffs and old.values != new.values:
        was = dict(old.values)
        diffs = [f"{pretty_path(paths[i], sig)} changed value from {was.get(i, '?')} to {v}"
                 for i, v in new.values if was.get(i) != v]
        if diffs:
            diffs[-1] += (" (the trace needs the values of these Python scalars: a range "
                          "bound, a shape or a branch)")
    if not diffs and old.scalars != new.scalars:
        kind = {True: "a NumPy scalar", False: "a 0-d array"}
        diffs = [f"{pretty_path(p, sig)} changed from {kind[i in old.scalars]} to "
                 f"{kind[i in new.scalars]}" for i, p in enumerate(paths)
                 if (i in old.scalars) != (i in new.scalars)]
    if not diffs and old.int_ranges != new.int_ranges:
        diffs = [f"{pretty_path(p, sig)} changed from a {a} to a {b}" for p, a, b in
                 zip(paths, old.int_ranges or (None,) * len(paths),
                     new.int_ranges or (None,) * len(paths)) if a != b]
    if not diffs and old.aliases != new.aliases:
        diffs = ["the arguments that share memory with a written one changed (traced as views "
                 "of one array: numpy/aliases.py)"]
    return "; ".join(diffs) or "cache entry evicted (LRU)"
