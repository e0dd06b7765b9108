"""Primitives, the one tracer type, the graph builder, and graph evaluation.

``Primitive.bind`` is the only way an operation happens: with a tracer among the operands it
records an equation in the current builder (a ContextVar); otherwise it runs the primitive's NumPy
reference implementation. ``eval_graph`` walks a graph calling ``bind``, so evaluating a graph on
tracers inlines it into the enclosing trace, and evaluating it on arrays is the interpreter.

core imports no layer above it (tests/test_import_layout.py): ``Tracer`` carries the IR side of
a traced array (type, builder, known values); its Python operators, ndarray methods, NumPy's
protocols (``__array_ufunc__``, ``__array_function__``) and the ``x.shape = s`` setter are
installed on the class with setattr by tracejit/numpy/methods.py, which the package root imports
first thing (as JAX's array_methods.py does for its Tracer).
"""
from __future__ import annotations

import contextlib
import contextvars
import dis
import gc
import operator
import sys
import threading
from typing import Any, Callable

import numpy as np

from . import dtypes, forksafe
from .errors import ConcretizationError, InputError, TracerError, UnsupportedError, \
    user_location
from .ir import PRIMITIVES, Eqn, Graph, Literal, Type, Var


class Primitive:
    """Everything about one primitive in one record.

    kind: 'elementwise' | 'reduction' | 'structural' | 'contraction' | 'control' | 'other'.
    Rules (None until defined; a missing rule is reported by the registry test):
      shape_rule(*in_types, **params) -> Type | list[Type]
      impl(*arrays, **params) -> array | list      NumPy reference (the oracle)
      jvp(primals, tangents, **params) -> (outs, tangent_outs)
      transpose(cts, *args, **params) -> cts for the linear (UndefinedPrimal) args
      batch(args, dims, **params) -> (outs, out_dims)
      lower: backend-specific emitter (attached by the backend)
    props: linear, commutative, identity, ... (data read by passes and rules).
    """

    def __init__(self, name: str, kind: str, shape_rule: Callable, impl: Callable, *,
                 multiple_results: bool = False, **props):
        self.name = name
        self.kind = kind
        self.shape_rule = shape_rule
        self.impl = impl
        self.multiple_results = multiple_results
        self.jvp: Callable | None = None
        self.transpose: Callable | None = None
        self.batch: Callable | None = None
        self.props = props
        REGISTRY[name] = self

    def __repr__(self):
        return f"Primitive({self.name})"

    def abstract_eval(self, in_types, **params) -> list[Type]:
        out = self.shape_rule(*in_types, **params)
        return list(out) if self.multiple_results else [out]

    def bind(self, *args, **params):
        # an equation without operands (iota) is recorded in the current trace rather than
        # evaluated into a constant, so replaying a graph (jvp, vmap, inlining) keeps it symbolic
        builder = _builder_for(args) if args else _current.get()
        if builder is None:
            values = [a.value if isinstance(a, Literal) else a for a in args]
            out = self.impl(*values, **params)
            return out if self.multiple_results else out
        outs = builder.add_eqn(self, args, params)
        return outs if self.multiple_results else outs[0]


REGISTRY: dict[str, Primitive] = PRIMITIVES      # (ir.py: by name)


# ---------------------------------------------------------------------------------------------
# tracers and the builder

_current: contextvars.ContextVar = contextvars.ContextVar("tracejit_builder", default=None)


_INPLACE_METHODS = ("sort", "fill", "resize", "put", "partition", "itemset", "setfield",
                    "byteswap", "setflags")


_BINARY_SUBSCR = dis.opmap["BINARY_SUBSCR"]


def _executing_subscript(frame) -> bool:
    """Whether ``frame`` is evaluating ``a[index]`` now (its current instruction)."""
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == _BINARY_SUBSCR


class Tracer:
    """A traced value: a Var in some builder, with NumPy's array interface on top."""
    __slots__ = ("builder", "irvar", "frozen", "base", "viewed", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, builder: "Builder", var: Var):
        self.builder = builder
        self.irvar = var
        # NumPy's mutation and aliasing model (see tracejit.numpy.mutation)
        self.frozen = None         # True: an immutable scalar; False: an array; None: 0-d = scalar
        self.base = None           # a mutation.ViewLink when this is a NumPy view of another
        self.viewed = None         # weak references to the views taken of this one

    def known(self, need: bool = False):
        """The concrete value when it depends on constants only (an array the function created
        with NumPy and did not write a traced value into), else None. ``need``: the trace cannot
        go on without it, so a value computed from Python-scalar arguments counts too (and the
        trace becomes specialised to those arguments' values: see Builder.know_input)."""
        return self.builder.known_value(self.irvar, need)

    # array attributes -------------------------------------------------------------------------
    @property
    def ty(self) -> Type:
        return self.irvar.ty

    @property
    def shape(self):
        return self.irvar.ty.shape

    @property
    def dtype(self):
        return self.irvar.ty.dtype

    @property
    def ndim(self):
        return len(self.irvar.ty.shape)

    @property
    def size(self):
        return self.irvar.ty.size

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __repr__(self):
        return f"Tracer<{self.irvar.ty}>"

    # values that need concrete data ------------------------------------------------------------
    def _concrete(self, what, instead, control_flow=False):
        """The known value, else ConcretizationError; ``control_flow``: api.Traced traces
        again with the function converted by autograph (which also makes the arrays of
        ``np.ndarray(shape)`` calls traced: a store into one is what fails here)."""
        value = self.known(need=True)
        if value is not None:
            return value
        e = ConcretizationError(
            f"{what} needs a concrete value, but this is a traced array {self.irvar.ty} whose value "
            f"is only known when the compiled function runs. {instead}")
        e.control_flow = control_flow
        raise e

    def __bool__(self):
        try:
            return bool(self._concrete(
                "Python control flow on a traced value (if/while/and/or/bool())",
                "Use tracejit.numpy.where(cond, a, b) for a select, tracejit.cond / "
                "tracejit.while_loop for branches and loops, or mark the argument static "
                "with static_argnums / static_argnames. (tracejit converts if/while/for statements "
                "on traced values by itself, break/continue/return included, but not loops "
                "containing try, yield, global or nonlocal, nor code whose source it cannot "
                "read.)"))
        except ConcretizationError as e:
            e.control_flow = True          # api.Traced traces again with it converted
            raise

    def __float__(self):
        return float(self._concrete("float()", "Keep it an array, or pass it as a static "
                                               "argument."))

    def __int__(self):
        return int(self._concrete("int()", "Keep it an array, or pass it as a static argument."))

    def __complex__(self):
        return complex(self._concrete("complex()", "Keep it an array, or pass it as a static "
                                                   "argument."))

    def __index__(self):
        try:
            return operator.index(self._concrete(
                "Using a traced value as an index or a shape (__index__)",
                "Shapes must be static: pass the value with static_argnums, or index with "
                "an integer array instead of a Python int. A slice bound read from an array "
                "(x[a[i]:a[i + 1]]) gives a data-dependent length: select with a mask instead, "
                "np.where((k >= a[i]) & (k < a[i + 1]), x, 0) with k = np.arange(len(x))."))
        except ConcretizationError as e:
            e.control_flow = True          # range(traced): traced again with for loops converted
            raise

    def tolist(self):
        return np.asarray(self._concrete(".tolist()", "Return the array from the traced "
                                                      "function instead.")).tolist()

    def item(self, *args):
        return np.asarray(self._concrete(".item()", "Return the array from the traced function "
                                                    "instead.")).item(*args)

    def __array__(self, dtype=None, copy=None):
        try:
            return self._array(dtype)
        except ConcretizationError as e:
            # ``c[i]`` of a NumPy array c (NumPy asks for the index array): autograph's
            # conversion indexes a traced copy of c instead, so trace again converted
            if _executing_subscript(sys._getframe(1)):
                e.control_flow = True
            raise

    def _array(self, dtype):
        value = np.asarray(self._concrete(
            "Converting to a NumPy array (np.asarray / __array__, or storing it into a NumPy "
            "array)", _scipy_hint() + "Use tracejit.numpy (or plain NumPy functions, which "
            "dispatch to tracejit on tracers) instead of forcing a concrete array; to store traced values into an "
            "array, create it inside the function with np.zeros/np.empty/np.array (which trace; "
            "so does np.ndarray(shape) in code whose source tracejit reads and converts) "
            "or update it functionally with x.at[idx].set(v). To index a NumPy array c with "
            "traced indices, write np.array(c)[i] in the function (it traces) or "
            "tracejit.numpy.take(c, i): c[i] asks NumPy, which needs concrete indices.",
            control_flow=True))
        # a copy: writing into the result must not change the trace's constant
        return np.array(value, dtype=dtype, copy=True)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        # like ndarray: a value known only at run time cannot be a dict key or set member (an
        # identity hash would silently bake one trace-time lookup into the compiled code)
        raise TypeError(f"unhashable type: a traced array {self.irvar.ty} cannot be a dict key "
                        f"or a set member (NumPy arrays are unhashable too); key by a static "
                        f"argument or use an index array instead")

    def __getattr__(self, name):
        # ndarray attributes tracejit does not provide: say so instead of a bare AttributeError
        if not name.startswith("__") and hasattr(np.ndarray, name):
            inplace = name in _INPLACE_METHODS
            raise UnsupportedError(
                f"ndarray.{name} on a traced array {self.irvar.ty} is not supported"
                + (" (it modifies the array in place)" if inplace else "")
                + (f"; use np.{name}(x) if tracejit.numpy provides it" if hasattr(np, name)
                   else "")
                + ("; write x = np.full_like(x, v) instead" if name == "fill" else ""))
        raise AttributeError(f"'Tracer' object has no attribute '{name}'")

    # NumPy's operators, methods and protocols (__array_ufunc__, __array_function__, the
    # ``shape`` setter) are installed by tracejit/numpy/methods.py: see the module docstring


def _scipy_hint() -> str:
    """For a SciPy function that converts its arguments (scipy.special.logsumexp, a
    scipy.stats method): the tracejit.scipy function to call instead."""
    frame, outer = sys._getframe(2), None
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("scipy."):
            outer = frame
        elif outer is not None:
            break
        frame = frame.f_back
    if outer is None:
        return ""
    part = outer.f_globals["__name__"].split(".")[1]
    name = outer.f_code.co_name
    return (f"SciPy's {name} (scipy.{part}) converts its arguments to NumPy arrays; on traced "
            f"arrays call tracejit.scipy.{part}'s instead (import tracejit.scipy.{part}). ")


def note_argument_writes(tracers, before) -> bool:
    """Whether a function a transform stages (grad, jvp, vmap: called inside the transform's
    own trace) wrote into its arguments ``tracers``, whose variables were ``before``; if so,
    every enclosing trace is told (``Builder.inner_argument_writes``). The transform runs the
    function on arguments of its own, so memory the caller's arrays share is not shared
    there: callers refuse such calls rather than compute something NumPy would not."""
    if all(t.irvar is b for t, b in zip(tracers, before)):
        return False
    outer = _current.get()
    outer = outer.parent if outer is not None else None
    while outer is not None:
        outer.inner_argument_writes = True
        outer = outer.parent
    return True


def refuse_shared_memory(leaves) -> None:
    """InputError when two array leaves of a call share memory, for a call of a transform (grad,
    jvp, vmap...) of a function that writes into its arguments (``note_argument_writes``):
    NumPy would show each write through the other names, the transform's copies do not."""
    arrays = [(i, x) for i, x in enumerate(leaves) if isinstance(x, np.ndarray) and x.size]
    for a, (i, x) in enumerate(arrays):
        for j, y in arrays[a + 1:]:
            if np.may_share_memory(x, y) and np.shares_memory(x, y):
                raise InputError(
                    f"arguments {i} and {j} share memory, and the function given to a "
                    f"transform (grad, jvp, vmap...) writes into its arguments: the transform "
                    f"works on its own copies of them, so a write would not be seen through the "
                    f"other argument as NumPy shows it. Pass a copy (x.copy()) of one.")


class Builder:
    """Collects equations of one trace. Outer tracers used inside become extra inputs."""

    def __init__(self, parent: "Builder | None" = None):
        self.parent = parent
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.constvals: list[np.ndarray] = []
        self._const_index: dict[int, Var] = {}
        self.captured: list[Tracer] = []         # outer tracers, in order of capture
        self.captured_vars: list[Var] = []
        self._capture_index: dict[int, Var] = {}
        self.finished = False
        # values that depend on constants only: var id -> its constant array or the equation
        # computing it (evaluated on demand, memoised in _values); see Tracer.known
        self._known: dict[int, Any] = {}
        self._values: dict[int, Any] = {}
        # Python-scalar arguments are known too, but using one's value specialises the trace:
        # var id -> the argument leaves its known value derives from; ``needed``: the leaves
        # whose values the trace used (the cache key must then hold them: api.Traced)
        self._input_deps: dict[int, frozenset] = {}
        self.needed: set[int] = set()
        # NumPy mutation bookkeeping (tracejit.numpy.mutation): whether a write happened, and
        # the roots whose memory layout decided whether a reshape was a view
        self.wrote = False
        # a function staged inside this trace (by grad, jvp, vmap...) wrote into its own
        # arguments: a call whose arrays share memory cannot be traced as NumPy would run it
        self.inner_argument_writes = False
        self.arguments: set[int] = set()     # id() of the input tracers (the caller's arrays)
        self.layout_roots: set[int] = set()
        self.c_roots: set[int] = set()       # arrays created C-ordered whatever the arguments
        # source of the equations being added, when a transform knows it (a rule's equations
        # carry the source of the equation they derive from): saves a stack walk per equation
        self.source: str | None = None

    def new_input(self, ty: Type) -> Tracer:
        v = Var(ty)
        self.invars.append(v)
        t = Tracer(self, v)
        # a Python scalar is immutable; an array argument (even 0-d) is written in place
        t.frozen = True if ty.weak else False
        self.arguments.add(id(t))
        return t

    def atom(self, x) -> Var | Literal:
        """The IR operand for a Python value used in this trace."""
        if isinstance(x, Tracer):
            if x.builder is self:
                return x.irvar
            return self._capture(x)
        if isinstance(x, Literal):
            return x
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            dt = dtypes.WEAK_DEFAULT[type(x)]
            if type(x) is int and not (-2**63 <= x < 2**63):
                raise OverflowError(f"Python int {x} does not fit in int64")
            return Literal(x, Type(dt, (), weak=True))
        arr = np.asarray(x)
        if arr.dtype == object or arr.dtype.kind in "USMmOV":
            raise TracerError(f"cannot use a value of type {type(x).__name__} "
                              f"(dtype {arr.dtype}) in a traced computation")
        dt = dtypes.canonical(arr.dtype, what="a constant captured by the trace")
        if arr.ndim == 0:
            return Literal(arr.astype(dt)[()], Type(dt, ()))
        return self._const(arr.astype(dt, copy=False) if arr.dtype != dt else arr)

    def _const(self, arr: np.ndarray) -> Var:
        v = self._const_index.get(id(arr))
        if v is None:
            v = Var(Type(arr.dtype, arr.shape))
            self._const_index[id(arr)] = v
            self.constvars.append(v)
            self.constvals.append(arr)
            self._known[id(v)] = arr
        return v

    def constant(self, value) -> Tracer:
        """A tracer of a constant array (its value stays known: see Tracer.known)."""
        arr = np.asarray(value)
        return Tracer(self, self._const(arr) if arr.ndim else self.atom(arr))

    def know_input(self, var: Var, value, leaf: int) -> None:
        """Make input ``var`` (the Python scalar ``value``, argument leaf ``leaf``) known to
        computations that cannot go on without a concrete value (``range(n)``, a shape, a slice
        bound, ``if flag:``); using it records ``leaf`` in ``needed``."""
        self._known[id(var)] = np.asarray(value, dtype=var.ty.dtype)[()]
        self._input_deps[id(var)] = frozenset((leaf,))

    def known_value(self, var, need: bool = False):
        """The concrete value of ``var`` when it depends on constants only (or, when ``need``,
        on Python-scalar arguments too: see know_input), else None."""
        if isinstance(var, Literal):
            return var.value
        key = id(var)
        if key not in self._known:
            return None
        deps = self._input_deps.get(key)
        if deps:
            if not need:
                return None
            self.needed |= deps
        if key in self._values:
            return self._values[key]
        stack = [var]                      # evaluate the equations it needs, deepest first
        while stack:
            v = stack[-1]
            if id(v) in self._values:
                stack.pop()
                continue
            entry = self._known[id(v)]
            if isinstance(entry, Tracer):        # a captured outer value known from arguments
                entry = entry.known(need=True)
            if not isinstance(entry, Eqn):
                self._values[id(v)] = entry
                stack.pop()
                continue
            todo = [a for a in entry.invars if not isinstance(a, Literal) and
                    id(a) not in self._values]
            if todo:
                stack.extend(todo)
                continue
            with outside_trace():
                outs = entry.prim.bind(*[a if isinstance(a, Literal) else self._values[id(a)]
                                         for a in entry.invars], **entry.params)
            for o, x in zip(entry.outvars, outs if entry.prim.multiple_results else [outs]):
                self._values[id(o)] = x
            stack.pop()
        return self._values[key]

    def _capture(self, t: Tracer) -> Var:
        if t.builder.finished:
            raise TracerError(
                f"a traced value {t.ty} escaped from the trace that created it (a 'leaked' tracer, "
                f"e.g. stored in a global or a closure and used later). Pass it as an argument.")
        # keyed by the value, and a snapshot is kept: ``x[i] = v`` rebinds a Tracer object in
        # place, and the captured value must stay the one that was read
        v = self._capture_index.get(id(t.irvar))
        if v is None:
            v = Var(t.ty)
            self._capture_index[id(t.irvar)] = v
            outer = Tracer(t.builder, t.irvar)
            self.captured.append(outer)
            self.captured_vars.append(v)
            deps = t.builder._input_deps.get(id(t.irvar))
            if deps:         # known from the outer trace's Python-scalar arguments: needing it
                self._known[id(v)] = outer          # here specialises the outer trace
                self._input_deps[id(v)] = deps
        return v

    def add_eqn(self, prim: Primitive, args, params) -> list[Tracer]:
        atoms = [self.atom(a) for a in args]
        out_types = prim.abstract_eval([a.ty for a in atoms], **params)
        outvars = [Var(t) for t in out_types]
        src = self.source if self.source is not None else user_location()
        eqn = Eqn(prim, tuple(atoms), tuple(outvars), params, src)
        self.eqns.append(eqn)
        known = self._known
        if all(isinstance(a, Literal) or id(a) in known for a in atoms):
            deps = self._input_deps
            dep = frozenset().union(*[deps.get(id(a), ()) for a in atoms]) if deps else None
            for v in outvars:
                known[id(v)] = eqn
                if dep:
                    deps[id(v)] = dep
        return [Tracer(self, v) for v in outvars]

    def finish(self, outs) -> Graph:
        out_atoms = tuple(self.atom(o) for o in outs)
        self.finished = True
        return Graph(tuple(self.invars) + tuple(self.captured_vars), out_atoms, self.eqns,
                     tuple(self.constvars), tuple(self.constvals))


def _builder_for(args) -> Builder | None:
    cur = _current.get()
    for a in args:
        if isinstance(a, Tracer):
            if cur is None:
                raise TracerError(
                    f"a traced value {a.ty} was used outside of any trace (a leaked tracer, e.g. "
                    f"saved in a global during tracing). Return it from the function instead.")
            return cur
    return None


def current_builder() -> Builder | None:
    return _current.get()


@contextlib.contextmanager
def outside_trace():
    """Evaluate concretely even while a trace is being recorded (no current builder)."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def static_value(x, need: bool = False):
    """``x``'s concrete value when it is a tracer of a known value (see Tracer.known), else ``x``:
    for operands that must be concrete (repeat counts, masks, bounds; ``need``: the operation
    has no traced form, so a value computed from Python-scalar arguments is taken too)."""
    if isinstance(x, Tracer):
        value = x.known(need)
        return x if value is None else value
    return x


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


_trace_hooks: list = []


def register_trace_hooks(enter: Callable, exit: Callable) -> None:
    """Call ``enter()`` as each trace starts and ``exit()`` as it ends (the NumPy layer uses it to
    intercept NumPy's creation functions while, and only while, something is being traced)."""
    _trace_hooks.append((enter, exit))


_gc_lock = threading.Lock()
_gc_depth = 0                  # traces and passes running with full collections deferred
_gc_saved = None               # the collector's thresholds before the outermost one began
# a leaf lock, taken around os.fork (as numpy/intercept's): a child never inherits it held,
# and a child forked in the middle of another thread's trace gets full collections back
def _gc_after_fork_in_child():
    global _gc_depth
    if _gc_depth:
        gc.set_threshold(*_gc_saved)
        _gc_depth = 0


forksafe.register(_gc_lock, forksafe.LEAF)
forksafe.in_child(_gc_after_fork_in_child)


@contextlib.contextmanager
def full_collections_deferred():
    """Run the body without the cyclic garbage collector's full collections (of the oldest
    generation); the young generations are still collected, which frees the cycles a trace
    makes (they die young). Why: CPython starts a full collection, a walk over every live
    object, each time the long-lived objects have grown by a quarter, so while a trace or a pass
    builds a large graph (10^5 equations are millions of objects) it walks the growing heap again
    and again; that was a quarter of the time of tracing a 64k-equation gradient, and the part of
    it that grew faster than the graph. The graph being built stays alive, so those walks free
    nothing. Nested and concurrent uses share one deferral, which the last to finish ends (the
    next full collection then runs when CPython would have started it)."""
    global _gc_depth, _gc_saved
    with _gc_lock:
        if _gc_depth == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(_gc_saved[0], _gc_saved[1], 1 << 30)
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            if _gc_depth:                     # (0: reset in a forked child)
                _gc_depth -= 1
                if _gc_depth == 0:
                    gc.set_threshold(*_gc_saved)


def make_graph(fn: Callable, in_types, *, nout_hint=None) -> tuple[Graph, list]:
    """Trace ``fn(*tracers) -> list of outputs`` into a Graph (full garbage collections
    deferred meanwhile: see ``full_collections_deferred``).

    Returns (graph, captured): outer tracers the function closed over become trailing graph inputs;
    ``captured`` lists them so the caller can pass them when evaluating the graph.
    """
    builder = Builder(_current.get())
    args = [builder.new_input(t) for t in in_types]
    token = _current.set(builder)
    for enter, _ in _trace_hooks:
        enter()
    try:
        with full_collections_deferred():
            outs = fn(*args)
            graph = builder.finish(list(outs))
    finally:
        for _, exit_ in _trace_hooks:
            exit_()
        _current.reset(token)
        builder.finished = True
    return graph, list(builder.captured)


def eval_graph(graph: Graph, args, *, on_eqn=None, keep_source=False) -> list:
    """Evaluate ``graph`` on values (arrays → interpret; tracers → inline into the current trace).

    ``on_eqn(eqn, outs)`` is called after each equation (used by debug_nans). ``keep_source``:
    equations inlined into a trace keep the source of the equation they replay (when it has one)
    instead of the line that called eval_graph; that line is looked up once, not per equation.
    """
    builder = _current.get()
    if keep_source and builder is not None and any(isinstance(a, Tracer) for a in args):
        saved = builder.source
        outer = saved if saved is not None else user_location()
        try:
            return _eval_eqns(graph, args, on_eqn, builder, outer)
        finally:
            builder.source = saved
    return _eval_eqns(graph, args, on_eqn, None, None)


def _eval_eqns(graph: Graph, args, on_eqn, builder, outer) -> list:
    env: dict[int, Any] = {}

    def read(a):
        return a if isinstance(a, Literal) else env[id(a)]

    if len(args) != len(graph.invars):
        raise TypeError(f"graph takes {len(graph.invars)} inputs, got {len(args)}")
    if _current.get() is not None and not any(isinstance(a, Tracer) for a in args):
        with outside_trace():                # concrete values stay concrete (see bind)
            return eval_graph(graph, args, on_eqn=on_eqn)
    for v, x in zip(graph.invars, args):
        env[id(v)] = x
    for v, x in zip(graph.constvars, graph.constvals):
        env[id(v)] = x
    for eqn in graph.eqns:
        if builder is not None:
            builder.source = eqn.source or outer
        outs = eqn.prim.bind(*[read(a) for a in eqn.invars], **eqn.params)
        if not eqn.prim.multiple_results:
            outs = [outs]
        if on_eqn is not None:
            on_eqn(eqn, outs)
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [read(a) for a in graph.outvars]


def literal_value(a):
    """The NumPy value of a Literal, or a concrete array/scalar as is."""
    return a.value if isinstance(a, Literal) else a


def type_of(x) -> Type:
    """The IR type of a tracer, literal, array or Python scalar (Python scalars are weak)."""
    if isinstance(x, Tracer):
        return x.ty
    if isinstance(x, Literal):
        return x.ty
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return Type(dtypes.WEAK_DEFAULT[type(x)], (), weak=True)
    arr = np.asarray(x)
    return Type(dtypes.canonical(arr.dtype), arr.shape)
