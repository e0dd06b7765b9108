"""``x[mask]`` and ``x[a:b]`` with traced bounds: a data-dependent number of elements.

NumPy's ``x[mask]`` (``mask`` a traced boolean array over x's leading axes) is a new array of the
selected elements, of shape ``(count, *rows)`` with ``count`` known only when the function runs;
a compiled function has static shapes, so that array cannot exist. What NumPy code does with it
is usually free of its shape: combine it elementwise with selections of the same elements or with
values that broadcast to a row, reduce it (sum, mean, max, dot, ...), or store it back where it
came from (``x[m] = f(x[m])``, ``x[m] += v``, ``y[m] = x[m] * 2``). A ``Selection`` holds the
indexed array's values at *every* position and the mask; those operations compute on every
position and keep the selected ones (a ``where``), which is NumPy's result exactly: the values at
unselected positions never reach a result. A slice with traced bounds (``x[a[i]:a[i + 1]]``,
CSR rows) is the selection of the positions ``a[i] <= k < a[i + 1]``, and indexing an array with
an integer selection (``x[cols]``) gathers at every position (unselected ones read element 0).

Anything that needs the count as a shape (``len``, ``.shape``, indexing into the selection, an
operand of another length, another mask's selection) raises ConcretizationError naming it.

Invariants: ``values.shape == mask.shape + rows``; selections combine only when their masks are
the same value (the same IR variable, or equations that compute it from the same operands:
``same_value``), so they select the same elements in the same order; no operation that could
observe the order of the selected elements is supported.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import ConcretizationError, user_frame_full
from ..ir import Literal, Var
from ..ops import elementwise as ew
from ..ops import structural as st
from . import indexing, math, reductions
from . import shape as shp
from ._base import as_traceable, convert, normalize_axes

__all__ = ["Selection", "select", "dynamic_slice", "gather", "store", "dot", "same_value",
           "is_selection", "index_part", "store_mask"]

_ADVICE = ("x[mask] with a traced mask (or x[a:b] with traced bounds) has a data-dependent "
           "length. Combine it elementwise with selections of the same mask or with scalars, "
           "reduce it (sum, mean, max, min, prod, any, all, dot) or store it back (x[mask] = "
           "...); otherwise use numpy.where(mask, x, 0), which keeps the shape, or "
           "x[tracejit.numpy.nonzero(mask, size=k)] for the first k selected elements")


def _unsupported(what: str, sel: "Selection | None" = None) -> ConcretizationError:
    made = f" (x[mask] of {sel.values.ty} with a traced boolean mask {sel.mask.ty}, made at " \
        f"{sel.made})" if sel is not None and sel.made else ""
    return ConcretizationError(f"{what} of a selection{made}: {_ADVICE}.")


def is_selection(x) -> bool:
    return isinstance(x, Selection)


# which masks are the same value -------------------------------------------------------------

_WINDOW = 512        # equations searched back for a producer (masks are compared soon after)
_DEPTH = 12


def _producers(builder, want):
    """{id(var): eqn} of the vars in ``want`` among the builder's last equations."""
    found = {}
    for eqn in reversed(builder.eqns[-_WINDOW:]):
        for v in eqn.outvars:
            if id(v) in want:
                found[id(v)] = eqn
        if len(found) == len(want):
            break
    return found


def _params_equal(p, q) -> bool:
    if p.keys() != q.keys():
        return False
    for k in p:
        a, b = p[k], q[k]
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and
                    a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)):
                return False
            continue
        try:
            if not bool(a == b):
                return False
        except Exception:  # noqa: BLE001 - params we cannot compare are not known equal
            return False
    return True


def _same_atom(builder, a, b, depth) -> bool:
    if a is b:
        return True
    if isinstance(a, Literal) or isinstance(b, Literal):
        return isinstance(a, Literal) and isinstance(b, Literal) and a.ty == b.ty and \
            a.value.tobytes() == b.value.tobytes()
    if not (isinstance(a, Var) and isinstance(b, Var)) or a.ty != b.ty or depth == 0:
        return False
    eqns = _producers(builder, {id(a), id(b)})
    ea, eb = eqns.get(id(a)), eqns.get(id(b))
    if ea is None or eb is None or ea.prim is not eb.prim or \
            len(ea.invars) != len(eb.invars) or ea.outvars.index(a) != eb.outvars.index(b):
        return False
    if not _params_equal(ea.params, eb.params):
        return False
    return all(_same_atom(builder, x, y, depth - 1) for x, y in zip(ea.invars, eb.invars))


def same_value(a: Tracer, b: Tracer) -> bool:
    """Whether two tracers hold the same value: the same IR variable, or computed by the same
    (deterministic) equations from the same operands. False means "not known to be"."""
    if a.builder is not b.builder:
        return False
    return _same_atom(a.builder, a.irvar, b.irvar, _DEPTH)


# the selection --------------------------------------------------------------------------------

class Selection:
    """The elements of a traced array picked by a traced mask (see the module docstring):
    ``values`` at every position of the indexed array (``mask.shape + rows``) and ``mask``."""
    __slots__ = ("values", "mask", "made")
    __array_priority__ = 2000          # above Tracer's: binary operators come here
    __hash__ = None
    _tj_selection = True               # (dispatch.py returns NotImplemented for these)

    def __init__(self, values: Tracer, mask: Tracer):
        self.values, self.mask = values, mask
        self.made = user_frame_full()          # the user's line, for errors raised later

    # what a selection is -----------------------------------------------------------------------
    @property
    def dtype(self):
        return self.values.dtype

    @property
    def rows(self) -> tuple:
        return self.values.shape[self.mask.ndim:]

    @property
    def ndim(self) -> int:
        return 1 + len(self.rows)

    @property
    def shape(self):
        raise _unsupported("the shape", self)

    @property
    def size(self):
        raise _unsupported("the size", self)

    def __len__(self):
        raise _unsupported("len()", self)

    def __repr__(self):
        return f"Selection({self.values.ty} where {self.mask.ty})"

    def __array__(self, dtype=None, copy=None):
        raise _unsupported("a NumPy array (np.asarray)", self)

    def __bool__(self):
        raise _unsupported("the truth value", self)

    def __iter__(self):
        raise _unsupported("iterating over the elements", self)

    def __getitem__(self, idx):
        raise _unsupported("indexing into the elements", self)

    def __setitem__(self, idx, v):
        raise _unsupported("a write into the elements (a copy in NumPy: it reaches no array)", self)

    # elementwise ------------------------------------------------------------------------------
    def _with(self, values):
        return Selection(values, self.mask)

    def _operand(self, x, what):
        """``x`` as an operand at every position: a selection of the same mask gives its values,
        anything else must broadcast to one row (one value per selected element)."""
        if isinstance(x, Selection):
            if x.mask is not self.mask and not same_value(x.mask, self.mask):
                raise _unsupported(f"{what} with a selection of another mask (their lengths "
                                   f"may differ)")
            if x.rows != self.rows:
                try:
                    np.broadcast_shapes(x.rows, self.rows)
                except ValueError:
                    raise ValueError(f"operands could not be broadcast together: rows "
                                     f"{x.rows} and {self.rows}") from None
            return x.values
        shp_x = type_of(x).shape if isinstance(x, Tracer) else np.shape(x)
        rows = self.rows
        if len(shp_x) == len(rows) + 1 and shp_x[0] == 1:
            shp_x = shp_x[1:]                  # (1, *rows): one row for every element
            x = shp.reshape(x, shp_x) if isinstance(x, Tracer) else np.reshape(x, shp_x)
        try:
            fits = len(shp_x) <= len(rows) and np.broadcast_shapes(shp_x, rows) == rows
        except ValueError:
            fits = False
        if not fits:
            raise _unsupported(f"{what} with an operand of shape {tuple(shp_x)}")
        return x

    def _binary(self, fn, other, what, swap=False):
        if isinstance(other, Selection) and not isinstance(self, Selection):
            return NotImplemented
        b = self._operand(other, what)
        out = fn(b, self.values) if swap else fn(self.values, b)
        if isinstance(out, tuple):
            return tuple(self._with(o) for o in out)
        return self._with(out)

    def _inplace(self, fn, other, symbol):
        """``s op= v``: NumPy computes into the selection's own (temporary) array: its dtype
        stays, under the same_kind rule."""
        out = self._binary(fn, other, f"{symbol}=")
        if out.dtype != self.dtype:
            if not np.can_cast(out.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc output from dtype('{out.dtype}') to "
                                f"dtype('{self.dtype}') with casting rule 'same_kind' (x[mask] "
                                f"{symbol}= v keeps x's dtype)")
            out = self._with(convert(out.values, self.dtype))
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None or \
                kwargs.get("where", True) is not True:
            raise _unsupported(f"numpy.{ufunc.__name__}.{method}(..., out=/where=)")
        first = next(x for x in inputs if isinstance(x, Selection))
        args = [first._operand(x, f"numpy.{ufunc.__name__}") for x in inputs]
        out = ufunc(*args, **kwargs)
        if isinstance(out, tuple):
            return tuple(first._with(as_traceable(o)) for o in out)
        return first._with(as_traceable(out))

    def __array_function__(self, func, types, args, kwargs):
        impl = _FUNCTIONS.get(getattr(func, "__name__", ""))
        if impl is None or getattr(np, func.__name__, None) is not func:
            raise _unsupported(f"numpy.{getattr(func, '__name__', func)}")
        return impl(*args, **kwargs)

    def astype(self, dtype, copy=True):
        return self._with(self.values.astype(dtype))

    def copy(self, order="C"):
        return self._with(self.values)

    @property
    def real(self):
        return self._with(math.real(self.values))

    @property
    def imag(self):
        return self._with(math.imag(self.values))

    def conj(self):
        return self._with(math.conj(self.values))

    conjugate = conj

    def __matmul__(self, other):
        return dot(self, other)

    def __rmatmul__(self, other):
        return dot(other, self)

    # reductions --------------------------------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce(self, "sum", axis, dtype, out, keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce(self, "prod", axis, dtype, out, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return _reduce(self, "mean", axis, dtype, out, keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return _reduce(self, "max", axis, None, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return _reduce(self, "min", axis, None, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return _reduce(self, "any", axis, None, out, keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        return _reduce(self, "all", axis, None, out, keepdims)

    def dot(self, other):
        return dot(self, other)


def _binary_method(fn, symbol, swap=False):
    def method(self, other):
        return self._binary(fn, other, symbol, swap)
    return method


def _inplace_method(fn, symbol):
    def method(self, other):
        return self._inplace(fn, other, symbol)
    return method


# Python's operators on the values: NumPy's array operators (x ** 2 is a square, as ndarray's)
_OPERATORS = {"add": ("+", lambda a, b: a + b), "sub": ("-", lambda a, b: a - b),
              "mul": ("*", lambda a, b: a * b), "truediv": ("/", lambda a, b: a / b),
              "floordiv": ("//", lambda a, b: a // b), "mod": ("%", lambda a, b: a % b),
              "pow": ("**", lambda a, b: a ** b), "and": ("&", lambda a, b: a & b),
              "or": ("|", lambda a, b: a | b), "xor": ("^", lambda a, b: a ^ b),
              "lshift": ("<<", lambda a, b: a << b), "rshift": (">>", lambda a, b: a >> b)}
for _name, (_sym, _fn) in _OPERATORS.items():
    setattr(Selection, f"__{_name}__", _binary_method(_fn, _sym))
    setattr(Selection, f"__r{_name}__", _binary_method(_fn, _sym, swap=True))
    setattr(Selection, f"__i{_name}__", _inplace_method(_fn, _sym))
for _name, _fn in {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
                   "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
                   "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}.items():
    setattr(Selection, f"__{_name}__", _binary_method(_fn, _name))
for _name, _fn in {"neg": lambda a: -a, "pos": lambda a: +a, "abs": abs,
                   "invert": lambda a: ~a}.items():
    setattr(Selection, f"__{_name}__", lambda self, _fn=_fn: self._with(_fn(self.values)))


# reductions -----------------------------------------------------------------------------------

_FILL = {"sum": lambda dt: 0, "prod": lambda dt: 1, "mean": lambda dt: 0,
         "any": lambda dt: False, "all": lambda dt: True,
         "max": lambda dt: -np.inf if dt.kind == "f" else
         (False if dt.kind == "b" else np.iinfo(dt).min),
         "min": lambda dt: np.inf if dt.kind == "f" else
         (True if dt.kind == "b" else np.iinfo(dt).max)}


def _spread(sel: Selection):
    """The mask reshaped to broadcast against the values (one mask entry per row)."""
    m = sel.mask
    return shp.reshape(m, m.shape + (1,) * len(sel.rows)) if sel.rows else m


def _reduce(sel: Selection, kind: str, axis, dtype, out, keepdims):
    if out is not None:
        raise _unsupported(f"{kind}(out=...)")
    if kind in ("max", "min") and sel.dtype.kind == "c":
        raise _unsupported(f"the {kind} of complex values")
    axes = normalize_axes(axis, sel.ndim, kind)
    k = sel.mask.ndim
    row_axes = tuple(k + a - 1 for a in axes if a > 0)
    if 0 not in axes:                 # within each selected row: still a selection
        fn = {"mean": reductions.mean, "sum": reductions.sum, "prod": reductions.prod,
              "max": reductions.max, "min": reductions.min, "any": reductions.any,
              "all": reductions.all}[kind]
        extra = {"dtype": dtype} if kind in ("sum", "prod", "mean") else {}
        return sel._with(fn(sel.values, axis=row_axes, keepdims=keepdims, **extra))
    fill = np.asarray(_FILL[kind](sel.dtype), dtype=sel.dtype)
    filled = math.where(_spread(sel), sel.values, fill)
    over = tuple(range(k)) + row_axes
    if kind == "mean":
        dt = np.dtype(dtype) if dtype is not None else \
            (sel.dtype if sel.dtype.kind in "fc" else dtypes.float64)
        total = reductions.sum(filled, axis=over, dtype=dt)
        per = int(np.prod([sel.rows[a - k] for a in row_axes], dtype=np.int64))
        count = reductions.sum(sel.mask, axis=tuple(range(k)))
        result = math.true_divide(total, convert(math.multiply(count, per), dt))
    else:
        fn = {"sum": reductions.sum, "prod": reductions.prod, "max": reductions.max,
              "min": reductions.min, "any": reductions.any, "all": reductions.all}[kind]
        extra = {"dtype": dtype} if kind in ("sum", "prod") else {}
        result = fn(filled, axis=over, **extra)
        if kind in ("max", "min"):      # NumPy: a reduction with no identity of no elements
            empty = math.logical_not(reductions.any(sel.mask))
            result = ew.check(empty, as_traceable(result), "empty_selection")
    if keepdims:
        kept = tuple(1 if a in axes else n for a, n in enumerate((1,) + sel.rows))
        result = shp.reshape(result, kept)
    return result


def dot(a, b):
    """``np.dot``/``@`` of two 1-D selections of the same mask: the sum of their products."""
    if not (isinstance(a, Selection) and isinstance(b, Selection)) or a.rows or b.rows:
        raise _unsupported("a matrix product with an operand of another length")
    prod = a._binary(lambda x, y: x * y, b, "dot")
    # (in the product's dtype: dot of int8 is int8, where sum would promote it to int64)
    return _reduce(prod, "sum", None, prod.values.dtype, None, False)


def _vdot(a, b):
    return dot(a.conj() if isinstance(a, Selection) else a, b)


def _where(condition, x, y):
    first = next(v for v in (condition, x, y) if isinstance(v, Selection))
    c, u, v = (first._operand(z, "numpy.where") for z in (condition, x, y))
    return first._with(math.where(c, u, v))


def _reduction(kind):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if kw.get("where") is not None or kw.get("initial") is not None:
            raise _unsupported(f"numpy.{kind}(where=/initial=)")
        return _reduce(a, kind, axis, dtype if kind in ("sum", "prod", "mean") else None,
                       out, keepdims)
    return fn


def _count_nonzero(a, axis=None, *, keepdims=False):
    return _reduce(a != 0, "sum", axis, None, None, keepdims)


_FUNCTIONS = {"sum": _reduction("sum"), "prod": _reduction("prod"), "mean": _reduction("mean"),
              "max": _reduction("max"), "amax": _reduction("max"), "min": _reduction("min"),
              "amin": _reduction("min"), "any": _reduction("any"), "all": _reduction("all"),
              "dot": dot, "matmul": dot, "inner": dot, "vdot": _vdot, "where": _where,
              "count_nonzero": _count_nonzero,
              "real": lambda a: a.real, "imag": lambda a: a.imag,
              "conj": lambda a: a.conj(), "conjugate": lambda a: a.conj(),
              "copy": lambda a, order="K", subok=False: a.copy()}


# making selections ----------------------------------------------------------------------------

def _full_slice(q) -> bool:
    return q is Ellipsis or isinstance(q, slice) and q.start is None and q.stop is None and \
        q.step is None


def index_part(idx):
    """The part of an index that makes ``x[idx]`` a selection: a traced boolean mask, a slice
    with a traced bound, or a selection of indices (full slices may follow it); else None."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    if not parts or not all(_full_slice(q) for q in parts[1:]):
        if any(isinstance(q, Selection) for q in parts):
            raise _unsupported("indexing with a selection next to other indices")
        return None
    p = parts[0]
    if isinstance(p, Selection):
        return p
    if isinstance(p, Tracer) and p.dtype == np.bool_ and p.known() is None:
        return p
    if isinstance(p, slice) and any(isinstance(b, Tracer) and b.known(need=True) is None
                                    for b in (p.start, p.stop)):
        return p
    return None


def store_mask(x: Tracer, idx) -> Tracer:
    """The mask of the positions ``x[idx] = selection`` writes."""
    part = index_part(idx)
    if isinstance(part, slice):
        return dynamic_slice(x, part).mask
    if isinstance(part, Tracer):
        return part
    raise ConcretizationError(
        "storing a selection (x[mask] or x[a:b] with traced bounds: a data-dependent length) is "
        "supported into x[mask] of the same mask or x[a:b] of the same bounds only; use "
        "numpy.where(mask, new, x) to update x elementwise")

def select(x: Tracer, mask: Tracer) -> Selection:
    """``x[mask]`` for a traced boolean ``mask`` over x's leading axes."""
    t = type_of(x)
    if mask.shape != t.shape[:mask.ndim]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed array "
                         f"{t.shape} (it must match the leading dimensions)")
    if mask.ndim == 0:
        raise _unsupported("a 0-d mask")
    return Selection(x, mask)


def _bound(b, n, default):
    """A slice bound as Python normalises it for a length ``n`` (negative counts from the end,
    then clipped to [0, n]): an int, or an int64 tracer."""
    if b is None:
        return default
    if not isinstance(b, Tracer):
        return min(max(b + n, 0), n) if b < 0 else min(b, n)
    b = convert(b, dtypes.int64)
    return math.where(math.less(b, 0), math.maximum(math.add(b, n), 0), math.minimum(b, n))


def dynamic_slice(x: Tracer, sl: slice) -> Selection:
    """``x[a:b]`` (along axis 0) where a bound is a traced integer: the selection of the
    positions ``a <= k < b``."""
    if sl.step is not None and not (isinstance(sl.step, (int, np.integer)) and sl.step == 1):
        raise _unsupported("a slice with traced bounds and a step")
    for b in (sl.start, sl.stop):
        if isinstance(b, Tracer) and (b.ndim != 0 or b.dtype.kind not in "iu"):
            raise TypeError("slice indices must be integers or None or have an __index__ method")
    t = type_of(x)
    if t.ndim == 0:
        raise IndexError("too many indices for array: array is 0-dimensional, but 1 were indexed")
    n = t.shape[0]
    lo, hi = _bound(sl.start, n, 0), _bound(sl.stop, n, n)
    k = st.iota_p.bind(dtype=dtypes.int64, shape=(n,), axis=0)
    mask = math.logical_and(math.greater_equal(k, lo), math.less(k, hi))
    return Selection(x, mask)


def gather(x, sel: Selection) -> Selection:
    """``x[sel]`` for an integer selection: x's rows at the selected indices."""
    if sel.dtype.kind not in "iu":
        raise _unsupported("indexing with a selection that is not of integers")
    safe = math.where(_spread(sel), sel.values, 0)   # (unselected positions: row 0, unused)
    return sel._with(indexing.take(x, safe, axis=0))


def store(dst_value: Tracer, mask: Tracer, v) -> Tracer:
    """The new value of ``dst`` after ``dst[mask] = v``: the selected positions take the
    selection ``v``'s values (or ``v`` itself, where it broadcasts to a row), converted to dst's
    dtype; the others keep dst's."""
    t = type_of(dst_value)
    if mask.shape != t.shape[:mask.ndim]:
        raise IndexError(f"boolean index of shape {mask.shape} does not match the indexed array "
                         f"{t.shape} (it must match the leading dimensions)")
    rows = t.shape[mask.ndim:]
    if isinstance(v, Selection):
        if mask is not v.mask and not same_value(mask, v.mask):
            raise _unsupported("x[mask] = values selected by another mask (the counts may "
                               "differ): a store")
        try:
            ok = len(v.rows) <= len(rows) and np.broadcast_shapes(v.rows, rows) == rows
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"shape mismatch: value rows of shape {v.rows} could not be "
                             f"broadcast to indexing result rows of shape {rows}")
        v = v.values
    else:
        v = Selection(dst_value, mask)._operand(v, "a store")
    v = as_traceable(v)
    if v.dtype.kind == "c" and t.dtype.kind != "c":
        raise TypeError(f"assigning a complex value into a {t.dtype} array would discard the "
                        f"imaginary part; take .real first")
    new = shp.broadcast_to(convert(v, t.dtype), t.shape) if isinstance(v, Tracer) else \
        np.broadcast_to(v.astype(t.dtype), t.shape)
    m = shp.reshape(mask, mask.shape + (1,) * len(rows)) if rows else mask
    return math.where(m, new, dst_value)
