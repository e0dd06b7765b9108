"""The plan's records: one class per step kind, its legality test beside it, and the Plan.

A step kind is defined here once: the record the partitioner fills in (``partition.py``), the
test that says whether an equation may become that kind of step, and (in the docstring) the
emitter that carries it out (``emit/<kind>.py``, which imports this module, never the reverse).

| kind      | record         | legality                           | emitter               |
|-----------|----------------|------------------------------------|-----------------------|
| loop      | ``LoopGroup``  | :func:`can_lower` / ``_take`` / ``_arg`` | ``emit/loops.py``     |
| rowmv     | ``rowfuse.RowMatvecGroup`` | ``rowfuse.fuse_rowwise``   | ``emit/rowfuse.py``   |
| matmul    | ``MatmulStep`` | :func:`matmul_layout`              | ``emit/segment.py``   |
| scan      | ``ScanStep``   | :func:`can_lower_scan`             | ``emit/scan.py``      |
| arg       | ``ArgStep``    | :func:`can_lower_arg_any`          | ``emit/arg.py``       |
| scatter   | ``ScatterStep``| :func:`can_lower_scatter`          | ``emit/scatter.py``   |
| linalg    | ``LinalgStep`` | :func:`can_lower_linalg`           | ``emit/linalg.py``    |
| lapack    | ``LapackStep`` | :func:`can_lower_lapack`           | ``emit/lapack.py``    |
| fft       | ``FftStep``    | :func:`can_lower_fft`              | ``emit/fft.py``       |
| sort      | ``SortStep``   | :func:`can_lower_sort`             | ``emit/sort.py``      |
| control   | ``ControlStep``| ``partition.plan_subgraphs``       | ``emit/control.py``   |
| numpy     | ``FallbackStep`` | (anything else)                  | ``runtime/executable.py`` |

Invariants: records are plain data (no LLVM values); a legality test reads only the equation
and the views planned so far; ``Step.writes`` lists every materialised var the step defines and
``Plan.producer`` maps each of them to exactly one step (checked by ``verify.py``).
"""
from __future__ import annotations

import numpy as np

from ...ir import Literal, Var
from . import lowering
from .views import View

REDUCE_PRIMS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")
ARG_PRIMS = ("argmax", "argmin")


def touches_stack(eqn) -> bool:
    """Whether an equation reads or defines a stack (a value of run-time leading dimension)."""
    return any(a.ty.dynamic for a in (*eqn.invars, *eqn.outvars))




class Step:
    """One unit of the schedule. ``preds``: steps that must run first."""
    kind = "step"

    def __init__(self, index):
        self.index = index
        self.preds: set = set()
        self.writes: list = []          # materialised vars this step defines (fully or partly)
        self.atomic = False             # must not stop halfway (no Ctrl-C poll): it runs after
                                        # a caller's argument was written in place (inplace.py)


class LoopGroup(Step):
    """One loop nest over ``shape``: members computed per element, stores, reduction sinks.

    ``stores``: list of (atom, destination View) filled by ``finish``; ``sinks``: reduction eqns
    whose input is a member or a leaf and whose output var is materialised by this group."""
    kind = "loop"

    def __init__(self, index, shape):
        super().__init__(index)
        self.shape = tuple(shape)
        self.eqns: list = []
        self.members: set = set()
        self.sinks: list = []
        self.stores: list = []          # (var or literal, View)
        self.parallel = False


class MatmulStep(Step):
    kind = "matmul"

    def __init__(self, index, eqn, lhs, rhs, out):
        super().__init__(index)
        self.eqn, self.lhs, self.rhs, self.out = eqn, lhs, rhs, out
        self.epilogue = None            # plan/epilogue.Epilogue: a consumer loop run in the kernel


class EqnStep(Step):
    """A step that runs one equation by itself (the kind says which emitter)."""

    def __init__(self, index, eqn):
        super().__init__(index)
        self.eqn = eqn


class ScanStep(EqnStep):
    """cumsum / cumprod (``emit/scan.py``; legality: :func:`can_lower_scan`)."""
    kind = "scan"


class ControlStep(EqnStep):
    """cond / while / scan / while_record as native branches and loops (``emit/control.py``;
    legality: ``partition.plan_subgraphs``);
    ``subs``: the partitioned sub-graphs (branches, or cond and body, or the scan body)."""
    kind = "control"

    def __init__(self, index, eqn, subs):
        super().__init__(index, eqn)
        self.subs = subs


def loop_carries(eqn):
    """(operand index of the first carry's initial value, body input index of the first carry,
    number of carries) of a ``while`` / ``while_record`` / ``scan`` equation (carry j is
    output j and body output j); None for any other equation."""
    p, name = eqn.params, eqn.prim.name
    if name in ("while", "while_record"):
        n = p["n_carry"] if name == "while_record" else len(eqn.outvars)
        return p["n_cond_consts"] + p["n_body_consts"], p["n_body_consts"], n
    if name == "scan":
        return p["n_consts"], p["n_consts"], p["n_carry"]
    return None


class ArgStep(EqnStep):
    """argmax / argmin over a non-innermost axis (``emit/arg.py``; legality:
    :func:`can_lower_arg_any`)."""
    kind = "arg"


class ScatterStep(EqnStep):
    """scatter as native loops (``emit/scatter.py``; legality: :func:`can_lower_scatter`)."""
    kind = "scatter"


class LinalgStep(EqnStep):
    """cholesky / triangular_solve / solve of small real matrices as native loops (``emit/linalg.py``;
    legality: :func:`can_lower_linalg`)."""
    kind = "linalg"


class LapackStep(EqnStep):
    """A linalg primitive as calls into numpy's LAPACK (``emit/lapack.py``; legality:
    :func:`can_lower_lapack`)."""
    kind = "lapack"
class FftStep(EqnStep):
    """fft / rfft / irfft over any axes as calls of the native FFT library (``emit/fft.py``;
    legality: :func:`can_lower_fft`)."""
    kind = "fft"


class SortStep(EqnStep):
    """stable argsort / searchsorted as calls of the native sort library (``emit/sort.py``;
    legality: :func:`can_lower_sort`)."""
    kind = "sort"


class FallbackStep(EqnStep):
    """An equation without a native lowering, run by NumPy between native segments."""
    kind = "numpy"


class Plan:
    """The result of :func:`partition`: steps in order, views, and slot owners."""

    def __init__(self, graph, vector_bytes: int, donated=None, arguments=False, lapack=None):
        self.graph = graph
        self.lapack = lapack            # () -> whether numpy's LAPACK can be called (asked
                                        # only when an equation needs it), or None: it cannot
        self.donated = dict(donated or {})  # input index -> output index that may reuse its
                                            # buffer (loop carries, written arguments)
        self.arguments = arguments      # the donated inputs are the caller's arrays: once one is
                                        # written, nothing may stop the call (inplace.py)
        self.out_in_place: dict = {}    # output index -> the donated input it is, unchanged
                                        # (``_finish``; chains: ``BufferPlan.out_in_place``)
        self.vector_bytes = vector_bytes    # the target's vector register width (row fusion)
        self.steps: list = []
        self.views: dict = {}           # id(var) -> View for vars that are views
        self.member_of: dict = {}       # id(var) -> LoopGroup computing it
        self.producer: dict = {}        # id(materialised var) -> Step
        self.extra_consts: list = []    # (Var, ndarray) made by the planner (iota)
        self.out_aliases: dict = {}     # id(var) -> output index stored directly into
        self.py_outputs: dict = {}      # output index -> base var: returned as the NumPy array a
                                        # fallback made (the output is a whole view of it)
        self.fuse_index = None          # readers.FuseIndex while rowfuse/epilogue merge steps
        self.level: dict = {}           # step -> a number above its preds' (0 if absent)
        self.users: dict = {}           # step -> steps ever given it as a pred (a superset)
        self.last_effect = None         # the last step with an effect (they run in order)

    # helpers ------------------------------------------------------------------------------------
    def new(self, cls, *args):
        step = cls(len(self.steps), *args)
        self.steps.append(step)
        return step

    def view_of(self, atom) -> View:
        if isinstance(atom, Literal):
            return View(atom, 0, (), (), atom.ty.dtype)
        v = self.views.get(id(atom))
        return v if v is not None else View.whole(atom)

    def step_of(self, atom):
        """The step an operand's value comes from (None for inputs, constants, literals)."""
        if isinstance(atom, Literal):
            return None
        g = self.member_of.get(id(atom))
        if g is not None:
            return g
        view = self.views.get(id(atom))
        if view is None:                          # not a view: its own producer
            return self.producer.get(id(atom))
        base = view.base
        if isinstance(base, Literal):
            return None
        g = self.member_of.get(id(base))          # a view of a loop member reads its store
        return g if g is not None else self.producer.get(id(base))

    def depends_on(self, step, target) -> bool:
        """Whether ``target`` is reached from ``step`` through preds. A path only goes down in
        ``level``, so the walk stops at steps not above ``target``'s level."""
        level = self.level
        floor = level.get(target, 0)
        seen, todo = set(), [step]
        while todo:
            s = todo.pop()
            if s is target:
                return True
            if id(s) in seen or level.get(s, 0) <= floor:
                continue
            seen.add(id(s))
            todo.extend(s.preds)
        return False

    def add_pred(self, step, pred):
        """``step`` runs after ``pred``. Every pred is added here: it keeps each step's level
        above its preds' (raising the steps that use ``step`` when needed)."""
        step.preds.add(pred)
        self.users.setdefault(pred, set()).add(step)
        level = self.level
        if level.get(step, 0) > level.get(pred, 0):
            return
        level[step] = level.get(pred, 0) + 1
        todo = [step]
        while todo:
            s = todo.pop()
            up = level[s] + 1
            for u in self.users.get(s, ()):
                if level.get(u, 0) < up:
                    level[u] = up
                    todo.append(u)

    def add_preds(self, step, atoms):
        for a in atoms:
            p = self.step_of(a)
            if p is not None and p is not step:
                self.add_pred(step, p)


def step_reads(step) -> list:
    """The atoms ``step`` reads: a loop group's operands of members, sinks and stores (its own
    members included), a matmul's operands and epilogue leaves, an equation step's operands."""
    if isinstance(step, LoopGroup):
        atoms = [a for e in (*step.eqns, *step.sinks) for a in e.invars]
        atoms.extend(a for a, _ in step.stores)
        return atoms
    if isinstance(step, MatmulStep) and step.epilogue is not None:
        return [*step.eqn.invars, *(a for a, _ in step.epilogue.leaves)]
    return list(step.eqn.invars)

# ---------------------------------------------------------------------------------------------
# legality, one test per step kind

def can_lower(eqn) -> bool:
    """Loop group: whether ``eqn`` (elementwise or reduction) has a native loop lowering."""
    name = eqn.prim.name
    if name in REDUCE_PRIMS:
        dt = eqn.invars[0].ty.dtype
        return lowering.dtype_ok(dt) or (dt.kind == "c" and name == "reduce_sum")
    return lowering.lowerable(eqn)


def can_lower_arg(eqn) -> bool:
    """Loop group: argmax/argmin natively when the axis is innermost once size-1 dims are
    dropped (the whole axis is then one vector loop per output element); otherwise NumPy."""
    x = eqn.invars[0]
    axis = eqn.params["axis"]
    return lowering.dtype_ok(x.ty.dtype) and x.ty.shape[axis] > 1 and \
        all(d == 1 for d in x.ty.shape[axis + 1:])


def can_lower_take(eqn) -> bool:
    """Loop group: a gather (``take``) with integer indices from a slot."""
    x, idx = eqn.invars
    return (lowering.dtype_ok(x.ty.dtype) or x.ty.dtype.kind == "c") and isinstance(x, Var) and \
        idx.ty.dtype.kind == "i"


def _merge(view, axes, shape):
    """(extent, element stride) of ``axes`` read as one dim, or None if not affine."""
    if not axes:
        return 1, 0
    inner = [a for a in axes if shape[a] != 1]     # size-1 axes have no say in the layout
    for a, b in zip(inner, inner[1:]):
        if view.strides[a] != view.strides[b] * shape[b]:
            return None
    extent = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    return extent, (view.strides[inner[-1]] if inner else 0)


def matmul_layout(plan, eqn):
    """MatmulStep: (dtype, M, K, N, a_strides, b_strides, batch, a_bs, b_bs) for a dot_general
    the matmul kernel handles: batch, free and contracted axes must each merge into one strided
    dim (always true for contiguous operands in NumPy order), else None. No contracted axis is
    an outer product: K = 1 with stride 0."""
    lhs, rhs = eqn.invars
    dt = eqn.outvars[0].ty.dtype
    if np.dtype(dt) not in lowering.MATMUL_DTYPES:
        return None
    (lc, rc), (lb, rb) = eqn.params["contract"], eqn.params["batch"]
    lv, rv = plan.view_of(lhs), plan.view_of(rhs)
    if not isinstance(lv.base, Var) or not isinstance(rv.base, Var):
        return None
    lf = [a for a in range(lhs.ty.ndim) if a not in (*lc, *lb)]
    rf = [a for a in range(rhs.ty.ndim) if a not in (*rc, *rb)]
    ls, rs = lhs.ty.shape, rhs.ty.shape
    parts = [_merge(lv, lf, ls), _merge(rv, rf, rs), _merge(lv, list(lc), ls),
             _merge(rv, list(rc), rs), _merge(lv, list(lb), ls), _merge(rv, list(rb), rs)]
    if any(p is None for p in parts):
        return None
    (M, sm), (N, sn), (K, sak), (_, sbk), (batch, a_bs), (_, b_bs) = parts
    if not lc:
        K, sak, sbk = 1, 0, 0
    return dt, M, K, N, (sm, sak), (sbk, sn), batch, a_bs, b_bs


def can_lower_scan(eqn) -> bool:
    """ScanStep: cumsum / cumprod of a real or complex dtype."""
    dt = eqn.invars[0].ty.dtype
    return lowering.dtype_ok(dt) or dt.kind == "c"


def can_lower_arg_any(plan, eqn) -> bool:
    """ArgStep: argmax / argmin over any axis of a contiguous view of a slot."""
    x = eqn.invars[0]
    if not isinstance(x, Var) or not lowering.dtype_ok(x.ty.dtype):
        return False
    view = plan.view_of(x)
    return isinstance(view.base, Var) and view.contiguous()


def _scatter_operand_ok(plan, atom) -> bool:
    if isinstance(atom, Literal):
        return True
    view = plan.view_of(atom)
    return isinstance(view.base, Literal) or (isinstance(view.base, Var) and view.contiguous())


def can_lower_scatter(plan, eqn) -> bool:
    """ScatterStep: operands that are literals, broadcast literals or contiguous views; modes
    set/add/mul/min/max for real and bool dtypes, set/add/mul for complex."""
    x, idx, upd = eqn.invars
    dt, mode = np.dtype(x.ty.dtype), eqn.params["mode"]
    if dt.kind == "c":
        dtype_ok = mode in ("set", "add", "mul")
    else:
        dtype_ok = lowering.dtype_ok(dt)
    return dtype_ok and idx.ty.dtype.kind == "i" and all(_scatter_operand_ok(plan, a)
                                                         for a in eqn.invars)


# Matrices needing at most this many multiply-adds each run the native unblocked algorithms of
# emit/linalg.py (about 1 ns per multiply-add) when numpy's LAPACK cannot be called: they beat
# the ~150 us a NumPy step between native segments costs up to about there (measured: cholesky
# n=32 native 6 us, NumPy alone 20 us, through the fallback ~200 us).
LINALG_MAX_WORK = 50_000
# When LAPACK is called natively (LapackStep), the loops win only below these (per matrix;
# measured on batches of 100, one BLAS thread): cholesky n=16 loops 3.6 us vs potrf 4.7 us, n=24
# 9.4 vs 8.2; solve (one column) n=48 90 vs 92 us, n=64 288 vs 155, (n columns) n=24 43 vs 39;
# triangular_solve (one column) n=96 15 vs 26 us, (n columns) n=8 0.9 vs 1.0, n=16 7.1 vs 1.9.
LOOPS_BEFORE_LAPACK = {"cholesky": 2_000, "solve": 30_000, "triangular_solve": 1_024,
                       "triangular_solve, one column": 5_000}
LINALG_PRIMS = ("cholesky", "triangular_solve", "solve")
_LINALG_STACK_BYTES = 64 * 1024      # solve's copy of the matrix lives on the stack


def _linalg_work(eqn) -> int:
    n = eqn.invars[0].ty.shape[-1]
    if eqn.prim.name == "cholesky":
        return n ** 3 // 6
    if eqn.prim.name == "solve":
        if n * n * eqn.invars[0].ty.dtype.itemsize > _LINALG_STACK_BYTES:
            return LINALG_MAX_WORK + 1
        return n ** 3 // 3 + n * n * eqn.invars[1].ty.shape[-1]
    return n * n * eqn.invars[1].ty.shape[-1] // 2


def _loops_limit(plan, eqn) -> int:
    """The most work the loops take for ``eqn``: LAPACK's crossover when it can be called."""
    if plan.lapack is None or not plan.lapack():
        return LINALG_MAX_WORK
    name = eqn.prim.name
    if name == "triangular_solve" and eqn.invars[1].ty.shape[-1] == 1:
        name += ", one column"
    return LOOPS_BEFORE_LAPACK[name]


FFT_PRIMS = ("fft", "rfft", "irfft")
# The longest transformed axis run natively: the tables of a length are kept for the process
# (a power of two n: n complex twiddles; another length: about 10 n) and built in long double
# on first use (~0.3 s at 2^20).
FFT_MAX_N = 1 << 22
# Lengths other than powers of two run Bluestein's algorithm (three FFTs of >= 2n points):
# 3x faster than pocketfft on a prime (4093), but 0.25-0.8x its time on lengths whose prime
# factors are all <= 7 (n = 1000 0.64x, 3072 0.33x, 10^4 0.27x), which pocketfft does with
# radix passes; and on short lengths its rounding differs from pocketfft's exact cancellations
# (a constant row's non-zero bins are exactly 0 in pocketfft, ~1e-16 here), which results
# derived by comparisons and integer casts expose (tests/fuzz found three). So only long
# lengths with a prime factor above 7 run it; the others keep NumPy's pocketfft.
FFT_BLUESTEIN_MIN = 1024


def _fft_native_length(n: int) -> bool:
    if n > FFT_MAX_N:
        return False
    if n & (n - 1) == 0:
        return True
    m = n
    for p in (2, 3, 5, 7):
        while m % p == 0:
            m //= p
    return m != 1 and n >= FFT_BLUESTEIN_MIN


def can_lower_fft(plan, eqn) -> bool:
    """FftStep: fft of complex64/complex128, rfft of float32/float64, irfft of complex64/
    complex128, every transformed axis of a length run natively (``_fft_native_length``: a
    power of two or a long one with a prime factor above 7, at most ``FFT_MAX_N``), the
    operand a view of a slot
    (the partitioner copies a strided one into a contiguous temporary first) and the result a
    contiguous view."""
    (x,), (out,) = eqn.invars, eqn.outvars
    ok = ("float32", "float64") if eqn.prim.name == "rfft" else ("complex64", "complex128")
    if np.dtype(x.ty.dtype).name not in ok or touches_stack(eqn):
        return False
    axes = eqn.params["axes"]
    lengths = [x.ty.shape[a] for a in axes]
    if eqn.prim.name == "irfft":
        lengths[-1] = eqn.params["n"]
    if not all(_fft_native_length(n) for n in lengths) or not isinstance(x, Var) or \
            not isinstance(plan.view_of(x).base, Var):
        return False
    return plan.view_of(out).contiguous()


SORT_PRIMS = ("argsort", "searchsorted")
# the dtypes the sort library keys (``emit/sortlib.py``: floats, integers, bools)
SORT_DTYPES = ("float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32",
               "uint16", "uint8", "bool")


def can_lower_sort(plan, eqn) -> bool:
    """SortStep: a stable argsort or a searchsorted of one of ``SORT_DTYPES``, the result a
    contiguous view (the partitioner copies strided operands and stores literal ones first).
    NumPy's default-kind argsort stays NumPy's: its order of ties is its own (introsort or
    x86-simd-sort), which a stable sort does not reproduce."""
    x, out = eqn.invars[0], eqn.outvars[0]
    if np.dtype(x.ty.dtype).name not in SORT_DTYPES or touches_stack(eqn):
        return False
    if eqn.prim.name == "argsort" and not eqn.params["stable"]:
        return False
    return plan.view_of(out).contiguous()


def can_lower_linalg(plan, eqn) -> bool:
    """LinalgStep: a real float32/float64 cholesky, triangular_solve or solve of matrices
    needing at most ``_loops_limit`` multiply-adds each, every operand a view of a slot (the
    partitioner copies a strided one into a contiguous temporary first)."""
    a = eqn.invars[0]
    if np.dtype(a.ty.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)) or \
            _linalg_work(eqn) > _loops_limit(plan, eqn):
        return False
    return _slot_operands(plan, eqn)


def _slot_operands(plan, eqn) -> bool:
    return all(isinstance(x, Var) and isinstance(plan.view_of(x).base, Var)
               for x in eqn.invars)


LAPACK_PRIMS = LINALG_PRIMS + ("slogdet", "eigh", "svd", "qr", "eig")


def can_lower_lapack(plan, eqn) -> bool:
    """LapackStep: any linalg primitive (real or complex, single or double precision) of
    non-empty matrices, when the target can call numpy's LAPACK (``Plan.lapack``) and every
    operand is a view of a slot (the partitioner copies a strided one into a contiguous
    temporary first). Small real cholesky / triangular_solve / solve are native loops instead
    (:func:`can_lower_linalg`, tried first)."""
    if eqn.prim.name not in LAPACK_PRIMS or plan.lapack is None or \
            any(d == 0 for x in eqn.invars for d in x.ty.shape[-2:]):
        return False
    return _slot_operands(plan, eqn) and plan.lapack()
