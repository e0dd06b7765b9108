"""``trace`` (alias ``jit``): trace once per input signature, simplify, compile, cache.

The signature of a call (``signature.Signature``) is its pytree structure, (dtype, shape, weak)
of every array leaf, the values of static arguments, per Python-int leaf whether it fits int32
and its sign (``numpy.intrange``), and the values of the Python ints and bools the traces of
those types needed; a graph relying on any of these gets no native entry (which checks types
only). A per-function LRU cache maps signatures to compiled executables;
``cache_info()`` counts hits, misses and traces, and ``config.log_retraces`` explains each retrace
by the argument path that changed. Python side effects of the function happen while tracing only.

Threads: every signature cache is guarded by one process-wide lock (``_cache_lock``), held only
for lookups, inserts and evictions, never while tracing or compiling; a compile in progress is
an in-flight marker (``_Pending``) that other threads asking for the same signature wait for,
so a signature is compiled once and a cache never holds more than ``config.cache_size``
entries. ``os.fork`` takes the locks first, so a child never inherits them held; markers of
compiles that were running in the parent are ignored by the child (they carry the pid).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import _thread
import os
import sys
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

import numpy as np

from . import autograph, forksafe, funkey, pickling, tree
from .artifact import Artifact, ArtifactError, Entry, portable
from .config import _on_code_change, config
from .core import Tracer, current_builder, make_graph, refuse_shared_memory
from .errors import (ConcretizationError, InputError, numpy_grid_from_tracer,
                     numpy_shape_from_tracer)
from .ir import Graph
from .numpy import aliases
from .passes import simplify
from .signature import Learned, Signature, explain, hashable, leaf_type, pretty_path

log = logging.getLogger("tracejit")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    traces: int
    maxsize: int
    currsize: int


def _conversion_helps(exc) -> bool:
    """Whether tracing again with the function converted by autograph may work: Python branched
    on a traced value, or a traced value was stored into an array NumPy made (converted code
    makes the arrays of ``np.ndarray(shape)`` traced). NumPy reports the tracer's error as the
    cause of its own ("setting an array element with a sequence")."""
    return getattr(exc, "control_flow", False) or \
        getattr(exc.__cause__, "control_flow", None) is not None


class Outputs(NamedTuple):
    """A trace's output structure: the function's pytree, then the written-back arguments."""
    tree: Any
    writes: "WriteBack | None"
    arrays0d: frozenset = frozenset()    # positions of 0-d outputs NumPy returns as arrays
    values: frozenset = frozenset()      # Python-scalar argument leaves whose values it used
    aliases: tuple = ()                  # the signature's alias pattern (numpy/aliases.py)
    inner_writes: bool = False           # a staged function wrote into its arguments (core.
                                         # note_argument_writes): calls sharing memory refused


class WriteBack:
    """The arguments a traced function writes into (NumPy mutation of the caller's arrays).

    The graph returns each one's final value after the function's own outputs; a call checks
    the arguments can take the write (writable ndarrays not overlapping another argument, as the
    trace assumed independent arrays, C-contiguous where a write went through a reshape view)
    before running, then copies the values in, unless the llvm backend wrote them in place
    (``backend/plan/inplace.py``: only where nothing can stop the call after the first write,
    so an error never leaves an argument half-written). An output that *is* a written argument
    (``x += 1; return x``) is the caller's array itself, as in NumPy.
    """

    def __init__(self, leaves, n_out, aliases, contiguous):
        self.leaves, self.n_out, self.aliases = leaves, n_out, aliases
        self.contiguous = contiguous
        self.names = [f"leaf {i}" for i in range(max(leaves + contiguous) + 1)]
        self.members = {}     # a root of shared memory (aliases.py) -> the leaves it holds

    @classmethod
    def of(cls, tracers, before, out_leaves, builder, views=None) -> "WriteBack | None":
        """What a trace wrote: ``tracers`` are the graph's inputs, ``views`` {leaf: (the view
        the function received, the input of its root)} for arguments sharing memory."""
        written = tuple(i for i, t in enumerate(tracers) if t.irvar is not before[i])
        # NumPy's reshape of an argument is a view or a copy depending on its memory layout;
        # the trace took arguments as C-contiguous, which only matters when something is written
        contiguous = ()
        if builder.wrote and builder.layout_roots:
            args = {id(t) for t in tracers}
            # a computed array (x * 2, x.astype) has its operands' layout in NumPy
            derived = any(r not in args and r not in builder.c_roots
                          for r in builder.layout_roots)
            contiguous = tuple(i for i, t in enumerate(tracers) if id(t) in builder.layout_roots
                               or derived and t.ndim >= 2)
        if not written and not contiguous:
            return None
        aliases = tuple((k, i) for k, o in enumerate(out_leaves) for i in written
                        if o is tracers[i])
        aliases += tuple((k, i) for k, o in enumerate(out_leaves)
                         for i, (view, root) in (views or {}).items()
                         if o is view and root in written)
        return cls(written, len(out_leaves), aliases, contiguous)

    def pairs(self) -> tuple:
        """Graph.writes: (argument leaf, output position) of each write-back."""
        return tuple((i, self.n_out + k) for k, i in enumerate(self.leaves))

    def check(self, leaves):
        for i in self.contiguous:
            x = leaves[i]
            if isinstance(x, np.ndarray) and not x.flags.c_contiguous:
                raise InputError(
                    f"argument {self.names[i]} is not C-contiguous, and the traced function "
                    f"reshapes it (or an array computed from it) and writes into arrays: whether "
                    f"NumPy's reshape is a view (seeing the writes) or a copy depends on the memory layout, and this trace assumed a "
                    f"C-contiguous array. Pass np.ascontiguousarray(x).")
        for i in self.leaves:
            x = leaves[i]
            if not isinstance(x, np.ndarray):
                raise InputError(f"the traced function writes into argument {self.names[i]}, a "
                                 f"{type(x).__name__}: only a NumPy array can be updated in "
                                 f"place (pass np.asarray(x), or copy it inside the function)")
            if not x.flags.writeable:
                raise ValueError(f"assignment destination is read-only: the traced function "
                                 f"writes into argument {self.names[i]}, a read-only array")
            for j, y in enumerate(leaves):
                if j != i and j not in self.members.get(i, ()) and isinstance(y, np.ndarray) \
                        and np.may_share_memory(x, y) and np.shares_memory(x, y):
                    raise InputError(
                        f"arguments {self.names[i]} and {self.names[j]} share memory and the "
                        f"traced function writes into {self.names[i]}: tracejit compiles "
                        f"arguments as separate arrays, so the write would not be seen through "
                        f"{self.names[j]} as NumPy shows it. Pass a copy (x.copy()) of one.")

    def write_back(self, leaves, outs):
        for i, new in zip(self.leaves, outs[self.n_out:]):
            if new is not leaves[i]:        # else the kernel wrote it in place
                np.copyto(leaves[i], new)
        outs = list(outs[:self.n_out])
        for k, i in self.aliases:
            outs[k] = leaves[i]
        return outs


_cache_lock = threading.Lock()       # every Traced's _cache, _pending and counters
# Serialises changes of native dispatch tables (add/clear_specializations are several Python
# statements; two threads interleaving them could release an output cache twice). Re-entrant:
# releasing evicted outputs may run Python code that calls a traced function.
_table_lock = threading.RLock()


# taken around os.fork before the backend's locks: a thread holding _table_lock may be compiling
forksafe.register(_table_lock, forksafe.TABLES)
forksafe.register(_cache_lock, forksafe.CACHES)


class _Pending:
    """A signature being traced and compiled by one thread; others wait for ``done``."""

    def __init__(self):
        self.done = threading.Event()
        self.thread = threading.get_ident()
        self.pid = os.getpid()


class Compiled:
    """One traced and compiled signature: the graph, its output structure and an executable.

    ``objects``: the object code of the graph's modules as compiled or loaded here, kept for
    artifacts (``artifact_entry``); ``trusted``: authenticated object code to load instead of
    compiling (``from_artifact``)."""

    def __init__(self, graph: Graph, raw: Graph, out_tree, backend: str, trusted=None):
        self.graph = graph
        self.raw = raw
        self.out_tree = out_tree.tree
        self.writes = out_tree.writes
        self.arrays0d = out_tree.arrays0d
        self.value_leaves = out_tree.values   # valid only for those arguments' values
        self.alias_pattern = out_tree.aliases
        self.inner_writes = getattr(out_tree, "inner_writes", False)
        if self.writes and self.alias_pattern:
            n = len(graph.invars) - len(self.alias_pattern)
            self.writes.members = {n + g: {leaf for leaf, _, _ in members}
                                   for g, (_, _, members) in enumerate(self.alias_pattern)}
        self.backend = backend
        self.executable, self.objects = _compile_with_objects(graph, backend, trusted)
        self._sealed = None
        self.specialized = False          # native entry in the dispatch table (see Traced)
        self.native_address = None        # that entry, built once, added again after eviction
        # (leaf, IntRange field, value) facts about Python-int arguments the graph relies on:
        # reused for other ranges that agree on them; no native entry when there are any
        self.range_facts = frozenset()

    def __call__(self, leaves):
        if self.alias_pattern:            # the roots of the memory arguments share
            leaves = list(leaves) + aliases.spans(leaves, self.alias_pattern)
        if self.writes:
            self.writes.check(leaves)
        # (a Python int beyond int64 is passed to the function as a value, never read here)
        args = [np.asarray(x if type(x) is not int or -2**63 <= x < 2**63 else 0,
                           dtype=v.ty.dtype) for x, v in zip(leaves, self.graph.invars)]
        outs = self.executable(args)
        # 0-d results are NumPy scalars, as NumPy's own reductions return (and the native path),
        # but for the 0-d arrays the function made (np.array(2.0), x.astype of a 0-d array)
        outs = [o[()] if o.ndim == 0 and k not in self.arrays0d else o
                for k, o in enumerate(outs)]
        if self.writes:           # (a written argument's new value may be the argument itself)
            n = self.writes.n_out
            outs = [o.copy() if k < n and any(o is a for a in args) else o
                    for k, o in enumerate(outs)]
            outs = self.writes.write_back(leaves, outs)     # (returned arguments stay arrays)
        return tree.unflatten(self.out_tree, outs)

    def artifact_entry(self, sig: Signature, variant=None) -> Entry:
        """This signature as an artifact entry (object code sealed for this user)."""
        if self._sealed is None:
            from .backend import sealed_objects
            self._sealed = sealed_objects(self.objects) if self.objects else []
        w = self.writes
        writes = None if w is None else dict(
            leaves=tuple(w.leaves), n_out=w.n_out, aliases=tuple(w.aliases),
            contiguous=tuple(w.contiguous), names=tuple(w.names))
        outputs = dict(tree=self.out_tree, writes=writes, arrays0d=self.arrays0d,
                       values=self.value_leaves, aliases=self.alias_pattern,
                       inner_writes=self.inner_writes)
        return Entry(variant, sig, self.backend, self.graph, outputs, self.range_facts,
                     self._sealed)

    @classmethod
    def from_artifact(cls, entry: Entry) -> "Compiled":
        """The compiled signature of an artifact entry: its object code where this user's
        secret authenticates it for this host, else compiled from the entry's graph."""
        trusted = None
        if entry.backend == "llvm" and entry.objects:
            from .backend import trusted_objects
            trusted = trusted_objects(entry.objects)
        o = entry.outputs
        writes = None
        if o["writes"] is not None:
            w = o["writes"]
            writes = WriteBack(list(w["leaves"]), w["n_out"], w["aliases"], w["contiguous"])
            writes.names = list(w["names"])
        out = Outputs(o["tree"], writes, frozenset(o["arrays0d"]), frozenset(o["values"]),
                      tuple(o.get("aliases", ())), bool(o.get("inner_writes", False)))
        compiled = cls(entry.graph, entry.graph, out, entry.backend, trusted)
        compiled.range_facts = frozenset(entry.range_facts)
        return compiled

    def entry_spec(self, sig: "Signature"):
        """The native fast-path spec of this signature, or None when the call shape is not
        eligible (static arguments, keyword arguments, nested pytrees, non-native executable)."""
        from .backend.runtime import pyabi
        from .backend.runtime.executable import _raise
        if self.backend != "llvm" or not getattr(self.executable, "entry_ok", False) or \
                self.range_facts or self.value_leaves or self.alias_pattern or \
                self.inner_writes:          # (the Python path checks the call's memory)
            return None
        # 0-d arrays NumPy returns as arrays: only the caller's own arrays (written, aliased)
        if self.arrays0d - {k for k, _ in (self.writes.aliases if self.writes else ())}:
            return None
        td = sig.treedef
        # (a 0-d array there must be written into, not rebound)
        if sig.static or td.kind is not tuple or len(td.children) != 2:
            return None
        args_td, kwargs_td = td.children
        if kwargs_td.children or any(c.kind is not None for c in args_td.children):
            return None
        ot = self.out_tree
        if ot.kind is None or ot.kind is type(None) and self.writes:    # (None: it mutates)
            return_tuple = False
        elif ot.kind is tuple and all(c.kind is None for c in ot.children) and \
                (ot.children or self.writes):
            return_tuple = True
        else:
            return None
        w = self.writes
        if w and any(sig.types[i].weak for i in w.leaves):
            return None       # a Python scalar cannot be written: the Python path raises
        if w and any(i in sig.scalars for i in w.leaves):
            return None       # (NumPy scalars are immutable: the trace never writes them)
        inputs = []
        for i, t in enumerate(sig.types):
            if i in sig.scalars:                      # np.float64(1.5), np.int32(3)...
                inputs.append(("npscalar", t.dtype.type, t.dtype))
            elif t.weak:
                py = {"f": float, "i": int, "b": bool, "c": complex}[t.dtype.kind]
                inputs.append(("pyscalar", py, t.dtype))
            else:
                inputs.append(("array", t.dtype, t.shape))
        outputs = tuple((v.ty.dtype, v.ty.shape) for v in self.graph.outvars)
        work = sum(t.size for t in sig.types) + sum(int(np.prod(s)) for _, s in outputs)
        # loops can run long on small data (other Python threads must not freeze meanwhile);
        # releasing the GIL costs ~0.1 us, so only tiny straight-line kernels keep it
        loops = any(e.prim.kind == "control" for e in self.graph.eqns)
        # a written argument: the entry checks it is writable and apart from the other arrays,
        # then the kernel writes it in place (plan/inplace.py) or the entry copies it back
        in_place = {j for j, _ in self.executable._in_place_outs}
        writes = () if not w else tuple((i, j, j in in_place) for i, j in w.pairs())
        return pyabi.EntrySpec(tuple(inputs), outputs, return_tuple=return_tuple,
                               release_gil=loops or work >= 100_000, on_error=_raise,
                               writes=writes, returns=w.n_out if w else None,
                               aliases=w.aliases if w else ())


def _compile(graph: Graph, backend: str):
    return _compile_with_objects(graph, backend)[0]


def _compile_with_objects(graph: Graph, backend: str, trusted=None):
    """(executable, object code of its modules: ``backend.compile_graph_with_objects``)."""
    if backend == "interpret" or config.debug_nans:      # debug_nans checks every equation
        from . import interpret
        return functools.partial(interpret.run, graph), []
    if backend == "llvm":
        from .backend import compile_graph_with_objects
        return compile_graph_with_objects(graph, trusted)
    raise ValueError(f"unknown backend {backend!r}; use 'llvm' or 'interpret'")


class Traced:
    """A traced function: call it like the original; inspect it with ``ir``, ``cache_info``.

    Created by :func:`trace`; see there. The object is an instance of a native type (see
    ``backend/pyabi_dispatch.py``) carrying these methods: a call whose arguments match a
    compiled signature exactly (positional arrays of the right dtype/shape, C-contiguous, and
    Python scalars) runs entirely in native code — signature check, output allocation, kernel —
    without entering Python; every other call goes to :meth:`_python_call`. A signature gets its
    native entry on its second call (the first call stays as fast to compile as possible).
    """
    _tj_traced = True

    def __init__(self, fun: Callable, static_argnums=(), static_argnames=(), backend=None):
        from .backend.runtime.pyabi_dispatch import DispatchMethods, PyDispatch
        base = PyDispatch if isinstance(self, PyDispatch) else DispatchMethods
        base.__init__(self, self._python_call)
        # functools.update_wrapper, minus ``__dict__`` (the native type has no __dict__ getter)
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            if hasattr(fun, attr):
                setattr(self, attr, getattr(fun, attr))
        self.__wrapped__ = fun
        self.fun = fun
        self.backend = backend
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        self.static_argnums = _as_tuple(static_argnums)
        self.static_argnames = _as_tuple(static_argnames)
        if self._sig is not None:
            params = list(self._sig.parameters)
            for n in self.static_argnames:
                if n in params and params.index(n) not in self.static_argnums:
                    self.static_argnums += (params.index(n),)
            for i in self.static_argnums:
                if i < len(params) and params[i] not in self.static_argnames:
                    self.static_argnames += (params[i],)
        self._cache: OrderedDict = OrderedDict()      # key -> Compiled, LRU order
        self._pending: dict = {}                       # key -> _Pending (compiling now)
        self._owners: list = []          # dispatch objects that forward calls here unchanged
        self._hits = self._misses = self._traces = 0
        self._last_sig: Signature | None = None
        self._learned = Learned()        # how later calls of a signature are keyed and traced
        self._autograph = False          # trace with Python control flow converted (autograph)
        self._restorable: dict = {}      # key -> artifact Entry, compiled on its first call
        self._captured = None            # funkey.captured_arrays at the first trace

    # signature ---------------------------------------------------------------------------------
    def _split(self, args, kwargs):
        """(dynamic leaves, Signature) for a call."""
        static = []
        dyn_args = []
        for i, a in enumerate(args):
            if i in self.static_argnums:
                static.append((i, hashable(a, f"static argument {i}")))
            else:
                dyn_args.append(a)
        dyn_kwargs = {}
        for k, v in kwargs.items():
            if k in self.static_argnames:
                static.append((k, hashable(v, f"static argument {k!r}")))
            else:
                dyn_kwargs[k] = v
        leaves, treedef = tree.flatten((tuple(dyn_args), dyn_kwargs))
        paths = tree.leaf_paths(treedef)
        types = tuple(leaf_type(x, pretty_path(p, self._sig)) for x, p in zip(leaves, paths))
        from .numpy import intrange
        # NumPy scalars are immutable and stored like Python numbers (through int()/float()),
        # unlike the 0-d arrays of the same type: traced as scalars (see Signature.scalars)
        scalars = tuple(i for i, x in enumerate(leaves) if isinstance(x, np.generic))
        return leaves, Signature(treedef, types, tuple(static), intrange.ranges(leaves),
                                 scalars)

    def _signature(self, args, kwargs):
        """(dynamic leaves, Signature) of a call, the values of the Python scalars its traces
        needed (see Builder.know_input) included."""
        leaves, sig = self._split(args, kwargs)
        return leaves, self._learned.apply(leaves, sig)

    def _rebuild_args(self, args, kwargs, sig: Signature, tracers):
        dyn_args, dyn_kwargs = tree.unflatten(sig.treedef, tracers)
        it = iter(dyn_args)
        full = [a if i in self.static_argnums else next(it) for i, a in enumerate(args)]
        kw = {k: (v if k in self.static_argnames else dyn_kwargs[k]) for k, v in kwargs.items()}
        return full, kw

    # tracing -----------------------------------------------------------------------------------
    def trace_graph(self, args, kwargs, sig: Signature | None = None, count: bool = True,
                    facts: list | None = None):
        """Trace for the signature of ``args``: (raw graph, output treedef); ``count`` it in
        ``cache_info().traces``. ``facts`` gets the trace's ``intrange.Facts`` appended."""
        from .numpy import intrange
        call_leaves, call_sig = self._split(args, kwargs)
        if sig is None:
            sig = call_sig
        out_tree_box = []

        def flat_fun(*inputs):
            # one input per argument leaf, then the roots of the memory arguments share
            tracers, roots = inputs[:len(sig.types)], inputs[len(sig.types):]
            for i in sig.scalars:
                tracers[i].frozen = True
            builder = current_builder()
            passed = list(tracers)
            for i, (t, x) in enumerate(zip(tracers, call_leaves)):
                if type(x) is int or type(x) is bool:      # (floats are data: traced)
                    if sig.pinned:
                        passed[i] = x
                    else:
                        builder.know_input(t.irvar, x, i)
            views = aliases.member_views(roots, sig.types, sig.aliases)
            for i, v in views.items():
                passed[i] = v
            before = [t.irvar for t in inputs]
            full, kw = self._rebuild_args(args, kwargs, sig, passed)
            ranges = sig.int_ranges or (None,) * len(tracers)
            with intrange.arguments(tracers, ranges, call_leaves) as used:
                try:
                    if self._autograph:
                        with autograph.enabled():
                            out = autograph.call(self.fun, *full, **kw)
                    else:
                        out = autograph.call(self.fun, *full, **kw)   # (on inside a conversion)
                except (TypeError, AttributeError) as exc:
                    better = numpy_grid_from_tracer(exc) or numpy_shape_from_tracer(exc)
                    if better is None:
                        raise
                    raise better from None
            if facts is not None:
                facts.append(used)
            leaves, out_tree = tree.flatten(out)
            n = len(tracers)
            writes = WriteBack.of(inputs, before, leaves, builder,
                                  {i: (v, n + g) for g, (_, _, members) in
                                   enumerate(sig.aliases) for i, _, _ in members
                                   for v in [views[i]]})
            if writes:
                names = [pretty_path(p, self._sig) for p in tree.leaf_paths(sig.treedef)]
                writes.names = names + [
                    "the memory shared by " + " and ".join(names[i] for i, _, _ in members)
                    for _, _, members in sig.aliases]
            arrays0d = frozenset(k for k, o in enumerate(leaves) if isinstance(o, Tracer) and
                                 o.ndim == 0 and o.frozen is False)
            out_tree_box.append(Outputs(out_tree, writes, arrays0d, frozenset(builder.needed),
                                        sig.aliases, builder.inner_argument_writes))
            if not writes:
                return leaves
            # an output that is a written argument is the caller's array (write_back): the
            # graph returns a 0-d placeholder there instead of a copy of the new value
            for k, i in writes.aliases:
                leaves[k] = builder.constant(np.zeros((), leaves[k].dtype))
            return leaves + [inputs[i] for i in writes.leaves]

        if count:
            with _cache_lock:
                self._traces += 1
        types = tuple(sig.types) + tuple(aliases.root_types(sig.aliases))
        # NumPy generator objects the function can reach: a trace that draws from one is redone
        # converted, so that the compiled code draws each time it runs (autograph.call)
        gens = autograph.generators_of(self.fun) if config.autograph and \
            not self._autograph else []
        before = autograph.states(gens)
        try:
            graph, captured = make_graph(flat_fun, types)
            if gens and autograph.drew(gens, before):
                self._autograph = True
                out_tree_box.clear()
                graph, captured = make_graph(flat_fun, types)
        except (ConcretizationError, ValueError, TypeError) as exc:
            if not (_conversion_helps(exc) and config.autograph) or self._autograph:
                raise
            autograph.drew(gens, before)
            self._autograph = True     # Python branched on a traced value: convert it, again
            graph, captured = make_graph(flat_fun, types)
        assert not captured
        outputs = out_tree_box[0]
        if outputs.writes:
            graph.writes = outputs.writes.pairs()
        return graph, outputs

    def _compatible_entry(self, sig: Signature) -> Compiled | None:
        """A cached trace of ``sig`` up to its Python ints' ranges that relied on no range
        fact in which ``sig`` differs (``Compiled.range_facts``): valid for ``sig`` as is."""
        if not sig.int_ranges:
            return None
        base, rest = sig._replace(int_ranges=()), self._key(sig)[1:]
        with _cache_lock:
            for key, entry in self._cache.items():
                s = key[0]
                if key[1:] == rest and s.int_ranges and s._replace(int_ranges=()) == base and \
                        all(getattr(sig.int_ranges[i], field) == value
                            for i, field, value in entry.range_facts):
                    return entry
        return None

    def _compile_sig(self, args, kwargs, sig: Signature) -> Compiled:
        reuse = self._compatible_entry(sig)
        if reuse is not None:
            return reuse
        entry = self._restorable.pop(self._key(sig), None)
        if entry is not None:
            return Compiled.from_artifact(entry)        # no trace
        if config.log_retraces and self._last_sig is not None:
            log.warning("tracejit: retracing %s: %s", self.__name__,
                        explain(self._last_sig, sig, self._sig))
        self._check_captured()
        facts = []
        raw, out_tree = self.trace_graph(args, kwargs, sig, facts=facts)
        graph = simplify(raw).replace(writes=raw.writes)
        compiled = Compiled(graph, raw, out_tree, self.backend or config.backend)
        # valid only for Python ints of these ranges, which the native entry cannot check
        compiled.range_facts = frozenset().union(*[f.used for f in facts])
        return compiled

    def _check_captured(self) -> None:
        """Before a trace: if a NumPy array the function captured (a global or a closure cell)
        changed since its first trace, drop every traced signature (they bake the old values
        in), so that all signatures traced from now on agree. Costs a digest of the captured
        arrays' bytes per trace, nothing per call (README: "Captured arrays")."""
        record = self._captured
        if record is not None and funkey.arrays_changed(record, self.fun):
            if config.log_retraces:
                log.warning("tracejit: %s: a captured array changed; dropping its %d traced "
                            "signatures", self.__name__, len(self._cache))
            self.clear_cache()
            record = None
        if record is None:
            self._captured = funkey.captured_arrays(self.fun)

    # calling -----------------------------------------------------------------------------------
    def _key(self, sig):
        return (sig, self.backend or config.backend, config.debug_nans)

    def _python_call(self, *args, **kwargs):
        """The general call path: signature, cache lookup (trace + compile on a miss), run."""
        leaves, sig = self._signature(args, kwargs)
        if any(isinstance(x, Tracer) for x in leaves):
            return autograph.call(self.fun, *args, **kwargs)    # inside another trace: inline
        remember = []            # what a retrace that worked teaches about later calls
        while True:
            try:
                entry, specialize = self._entry(args, kwargs, sig, hit=True)
                break
            except Exception as exc:
                again = self._learned.fallback(leaves, sig, exc)
                if again is None:
                    raise
            sig, learn = again
            remember.append(learn)
        for learn in remember:
            learn()
        if entry.inner_writes:
            refuse_shared_memory(leaves)
        aliased = self._aliased(leaves, sig, entry.writes)
        if aliased is not sig:
            sig = aliased
            entry, specialize = self._entry(args, kwargs, sig, hit=True)
        if specialize:
            self._specialize(entry, sig)
        if entry.value_leaves and not sig.values:      # keyed by value since this call
            sig = self._learned.with_values(leaves, sig)
        self._last_sig = sig
        return entry(leaves)

    @staticmethod
    def _aliased(leaves, sig: Signature, writes) -> Signature:
        """``sig`` with the call's alias pattern (numpy/aliases.py) when an argument the
        function writes (``writes``: the WriteBack of ``sig``'s trace) shares memory with
        another: such a call is traced as views of one array. Else ``sig`` itself."""
        if not writes or sig.aliases:
            return sig
        pattern = aliases.pattern(leaves, writes.leaves, writes.names)
        return sig._replace(aliases=pattern) if pattern else sig

    def _entry(self, args, kwargs, sig: Signature, hit: bool):
        """(Compiled, whether this call should build its native entry) for ``sig``: from the
        cache (counted as a hit when ``hit``), after another thread's compile of it, or traced
        and compiled here (a miss) and inserted, evicting the least recently used."""
        key = self._key(sig)
        while True:
            with _cache_lock:
                entry = self._cache.get(key)
                if entry is not None:
                    self._cache.move_to_end(key)
                    if not hit:
                        return entry, False
                    self._hits += 1
                    specialize, entry.specialized = not entry.specialized, True
                    return entry, specialize
                pending = self._pending.get(key)
                # our own marker: the function calls itself with this signature while being
                # traced (recursion, as without threads); a parent process's: nobody finishes it
                if pending is None or pending.thread == threading.get_ident() or \
                        pending.pid != os.getpid():
                    mine = self._pending[key] = _Pending()
                    self._misses += 1
                    break
            pending.done.wait()          # then look again: cached now, or it failed
        try:
            entry = self._compile_sig(args, kwargs, sig)
            with _cache_lock:
                keyed = self._learned.needs_values(self._split(args, kwargs)[0], sig,
                                                   entry.value_leaves)
                if keyed is not None:
                    key = self._key(keyed)
                self._cache.pop(key, None)
                # make room first: even a reader without the lock never sees it over the bound
                while len(self._cache) >= max(1, config.cache_size):
                    self._cache.popitem(last=False)
                self._cache[key] = entry
        finally:
            with _cache_lock:
                if self._pending.get(key) is mine:
                    del self._pending[key]
            mine.done.set()
        return entry, False

    def _specialize(self, entry: Compiled, sig: Signature) -> None:
        """Add the native fast-path entry of a signature to this object's dispatch table (and to
        the owners that forward calls here unchanged, e.g. a grad object). The caller claimed
        it (``entry.specialized``) under the cache lock."""
        spec = entry.entry_spec(sig)
        if spec is None:
            return
        from .backend.runtime import tiers
        if tiers.compiling():     # building it now would wait for LLVM: a later call builds it
            with _cache_lock:
                entry.specialized = False
            return
        address = entry.native_address
        if address is None:       # (lives as long as the executable: built once per config)
            address = entry.native_address = entry.executable.native_entry(spec)
        with _table_lock:
            evicted = []
            for target in (self, *self._owners):
                out = target.add_specialization(address, entry)
                if target is self:
                    evicted = out
                _with_entries.add(target)
        with _cache_lock:         # their next Python-path call adds them again (hot again)
            for old in evicted:
                if old is not None and old is not entry:
                    old.specialized = False

    def lower(self, *args, **kwargs) -> Compiled:
        """The compiled entry for these arguments' signature (compiling if needed); the
        signature of their alias pattern where arguments share memory with a written one."""
        leaves, sig = self._signature(args, kwargs)
        entry = self._entry(args, kwargs, sig, hit=False)[0]
        aliased = self._aliased(leaves, sig, entry.writes)
        return entry if aliased is sig else self._entry(args, kwargs, aliased, hit=False)[0]

    # inspection --------------------------------------------------------------------------------
    def ir(self, *args, optimize: bool = True, stage: str | None = None, **kwargs):
        """The IR for the signature of ``args`` (``optimize=False``: the raw trace).

        ``stage="fused"`` shows the backend's fusion groups (llvm backend).
        """
        if stage is not None:
            from .backend import describe_stage
            return describe_stage(self.lower(*args, **kwargs), stage)
        leaves, sig = self._split(args, kwargs)
        raw, outputs = self.trace_graph(args, kwargs, sig, count=False)
        aliased = self._aliased(leaves, sig, outputs.writes)
        if aliased is not sig:            # traced as the call traces it (see _python_call)
            raw, _ = self.trace_graph(args, kwargs, aliased, count=False)
        return simplify(raw).replace(writes=raw.writes) if optimize else raw

    def inspect_llvm(self, *args, **kwargs) -> str:
        """The LLVM IR compiled for this signature."""
        return self.lower(*args, **kwargs).executable.llvm_ir

    def inspect_asm(self, *args, **kwargs) -> str:
        """The host assembly compiled for this signature."""
        return self.lower(*args, **kwargs).executable.asm()

    def memory_analysis(self, *args, **kwargs):
        """Argument, output and temporary bytes of the compiled function for this signature."""
        return self.lower(*args, **kwargs).executable.memory_analysis()

    def cache_info(self) -> CacheInfo:
        """Hits (Python-path calls of a cached signature), misses, traces, the bound and the
        number of cached signatures."""
        with _cache_lock:
            return CacheInfo(self._hits, self._misses, self._traces, config.cache_size,
                             len(self._cache))

    def clear_cache(self) -> None:
        """Drop every compiled signature (and the native fast-path entries)."""
        with _cache_lock:
            self._cache.clear()
            self._restorable.clear()
            self._learned.clear()
            self._last_sig = None
            self._captured = None
        with _table_lock:
            for target in (self, *self._owners):
                target.clear_specializations()

    # artifacts and pickling ------------------------------------------------------------------
    def export_artifact(self, strict: bool = True) -> Artifact:
        """The compiled signatures of this function as an ``Artifact`` (``tracejit.artifact``:
        graphs, signatures and the object code, authenticated for this user).
        ``strict=False`` leaves out the signatures that have no data form (a static argument
        that is an arbitrary object) instead of raising ``ArtifactError``."""
        return Artifact(self._artifact_entries(None, strict), self.__name__, _producer())

    def _artifact_entries(self, variant, strict: bool) -> list:
        with _cache_lock:
            cached = list(self._cache.items())
            later = list(self._restorable.values())
        entries = []
        for (sig, backend, debug_nans), compiled in cached:
            if not debug_nans:
                entries.append(compiled.artifact_entry(sig, variant))
        entries += [dataclasses.replace(e, variant=variant) for e in later]
        return portable(entries, strict, self.__name__)

    def load_artifact(self, artifact: Artifact) -> int:
        """Make an artifact's signatures known to this function: their first calls run the
        artifact's graphs (no trace) with its object code where it is trusted (this user, this
        host), else compiled from the graph. Returns how many signatures it added."""
        return sum(self._restore_later(e) for e in artifact.entries)

    def _restore_later(self, entry: Entry) -> bool:
        sig = entry.signature
        if not isinstance(sig, Signature):
            raise ArtifactError(f"artifact entry signature is a {type(sig).__name__}")
        key = (sig, entry.backend, False)
        with _cache_lock:
            if key in self._cache or key in self._restorable:
                return False
            self._restorable[key] = entry
            self._learned.restore(sig)
        return True

    def __reduce__(self):
        """By reference when importable; else the function by value with the artifact of the
        compiled signatures (``tracejit/pickling.py``)."""
        if pickling.importable(self):
            return self.__qualname__
        fun = self.fun
        art = None
        if not pickling.user_importable(fun):
            packed = pickling.by_value(fun)
            if packed is fun and pickling.in_main(self):
                return self.__qualname__     # no cloudpickle: by reference into __main__
            fun = packed
            art = _artifact_bytes(self._artifact_entries(None, strict=False), self.__name__)
        return _restore_traced, (fun, self.static_argnums, self.static_argnames, self.backend,
                                 art)

    def __repr__(self):
        return f"<tracejit.trace of {getattr(self.fun, '__qualname__', self.fun)}>"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)


def _producer() -> str:
    from .version import __version__
    return f"tracejit {__version__}"


def _artifact_bytes(entries, name):
    """The artifact of ``entries`` as bytes for a pickle, or None when there are none."""
    return Artifact(entries, name, _producer()).to_bytes() if entries else None


def _restore_traced(fun, static_argnums, static_argnames, backend, artifact):
    """Unpickle a traced function: ``trace(fun, ...)`` knowing the artifact's signatures."""
    t = trace(fun, static_argnums=static_argnums, static_argnames=static_argnames,
              backend=backend)
    if artifact is not None:
        t.load_artifact(Artifact.from_bytes(artifact))
    return t


def trace(fun: Callable | None = None, *, static_argnums=(), static_argnames=(), backend=None):
    """Trace ``fun`` once per input signature and compile it; use as ``@trace`` or
    ``trace(f, static_argnums=...)``.

    Arguments are pytrees of arrays and numbers; Python scalars are weakly typed and traced, not
    baked in, except that a Python int or bool whose value the trace needs (a ``range`` bound, a
    shape, a slice bound, an ``if``) is specialised on: its value joins the cache key. Static arguments (hashable) are passed to the function as Python values and are part
    of the cache key. The returned object calls like ``fun`` and has ``ir``, ``inspect_llvm``,
    ``inspect_asm``, ``memory_analysis``, ``cache_info`` and ``clear_cache``.
    """
    if fun is None:
        return functools.partial(trace, static_argnums=static_argnums,
                                 static_argnames=static_argnames, backend=backend)
    return traced_type()(fun, static_argnums, static_argnames, backend)


_traced_type = None
_with_entries: "weakref.WeakSet" = weakref.WeakSet()     # objects holding native entries


def traced_type():
    """The native dispatch type of traced functions (built on first use: it compiles a small
    module, so ``import tracejit`` stays cheap)."""
    global _traced_type
    if _traced_type is None:
        from .backend.runtime.pyabi_dispatch import make_dispatch_type
        _traced_type = make_dispatch_type("Traced", Traced, doc=Traced.__doc__)
    return _traced_type


def _forget_unfinished_imports():
    """In a child of ``os.fork``: forget the imports other threads had in progress. tracejit
    imports its backend lazily (the first trace, the first compile of a kind); a thread of the
    parent in the middle of such an import holds that module's import lock, which the child
    inherits held by a thread it does not have, so the child's first trace deadlocked on it
    (CPython does not reset module locks at fork). The half-executed modules are dropped from
    ``sys.modules`` (the child imports them afresh) and their locks released. Only CPython's
    importlib has these tables; elsewhere nothing is done."""
    import importlib._bootstrap as boot
    me = threading.get_ident()
    for name, ref in list(getattr(boot, "_module_locks", {}).items()):
        lock = ref()
        if lock is None or not getattr(lock, "count", None) or lock.owner == me:
            continue
        module = sys.modules.get(name)
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            del sys.modules[name]
        lock.lock, lock.wakeup = _thread.allocate_lock(), _thread.allocate_lock()
        lock.owner, lock.count, lock.waiters = None, type(lock.count)(), 0
        del boot._module_locks[name]
    blocking = getattr(boot, "_blocking_on", None)
    if blocking is not None:
        for tid in [t for t in blocking if t != me]:
            blocking.pop(tid, None)


forksafe.in_child(_forget_unfinished_imports)


def is_traced(obj) -> bool:
    return getattr(obj, "_tj_traced", False) is True


def _drop_native_entries():
    for target in list(_with_entries):
        with _table_lock:
            target.clear_specializations()
        with _cache_lock:
            for compiled in getattr(target, "_cache", {}).values():
                compiled.specialized, compiled.native_address = False, None
    _with_entries.clear()


_on_code_change.append(_drop_native_entries)


jit = trace


def make_ir(fun: Callable, *, static_argnums=(), static_argnames=(), optimize=True):
    """``make_ir(f)(*args)`` is the (simplified) IR of ``f`` for these arguments."""
    def ir_of(*args, **kwargs):
        t = fun if is_traced(fun) else trace(fun, static_argnums=static_argnums,
                                             static_argnames=static_argnames)
        return t.ir(*args, optimize=optimize, **kwargs)
    return ir_of


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


