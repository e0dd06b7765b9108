"""NumPy's long tail on tracers, as composites of the core functions: trunc, fix, meshgrid, diag, diagflat,
rot90, vander, diff, ediff1d, gradient, trapezoid, polyval, polyfit, append, hsplit/vsplit/dsplit,
cov, corrcoef, allclose, iscomplexobj/isrealobj, result_type, and the error-state functions.

Each follows NumPy's function of the same name (dtypes, shapes, edge cases); the functions that
return views in NumPy (rot90, the splits, a 2-D diag) are built from the view-tracking
functions of ``mutation`` so that writes through them reach their base, as in NumPy.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..core import Tracer, type_of
from ..errors import UnsupportedError
from . import mutation
from .math import trunc
from ._base import as_traceable, implements, normalize_axis

__all__ = ["fix", "meshgrid", "diag", "diagflat", "rot90", "vander", "diff", "ediff1d",
           "gradient", "trapezoid", "polyval", "polyfit", "append", "hsplit", "vsplit", "dsplit",
           "cov", "corrcoef", "allclose", "iscomplexobj", "isrealobj", "result_type", "seterr",
           "geterr", "errstate"]

# NumPy's floating-point error state is Python-side configuration: tracejit's code follows
# IEEE semantics and never warns, so these are NumPy's own (usable inside a trace)
seterr, geterr, errstate = np.seterr, np.geterr, np.errstate


@implements(np.fix)
def fix(x, out=None):
    """numpy.fix: round toward zero (``trunc``)."""
    if out is not None:
        raise UnsupportedError("np.fix(..., out=) on tracers; write out[...] = np.fix(x)")
    return trunc(x)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (``indexing`` 'xy' or 'ij')."""
    from .shape import broadcast_to, reshape
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ndim = len(xi)
    xs = [mutation.ravel(as_traceable(x)) for x in xi]
    outs = []
    for i, x in enumerate(xs):
        shape = [1] * ndim
        shape[i] = -1
        if indexing == "xy" and ndim > 1 and i < 2:
            shape[i], shape[1 - i] = 1, -1
        outs.append(reshape(x, tuple(shape)))
    if not sparse:
        full = np.broadcast_shapes(*[type_of(o).shape for o in outs])
        outs = [broadcast_to(o, full) if copy else mutation.broadcast_to(o, full) for o in outs]
    return tuple(outs)


@implements(np.diag)
def diag(v, k=0):
    """The k-th diagonal of a 2-D array (a read-only view), or a 2-D array with a 1-D ``v`` on
    its k-th diagonal."""
    from .indexing import take
    from .logic import where
    v = as_traceable(v)
    t = type_of(v)
    if t.ndim == 2:
        return mutation.diagonal(v, k)
    if t.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = t.shape[0] + abs(k)
    rows, cols = np.indices((n, n))
    on = cols - rows == k
    idx = np.where(on, np.minimum(rows, cols), 0).astype(np.int64)
    if t.shape[0] == 0:
        return np.zeros((n, n), t.dtype)
    return where(on, take(v, idx), np.zeros((), t.dtype))


@implements(np.diagflat)
def diagflat(v, k=0):
    return diag(mutation.ravel(as_traceable(v)), k)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    """Rotation by 90 degrees ``k`` times in the plane of ``axes`` (a view, as in NumPy)."""
    m = as_traceable(m)
    ndim = type_of(m).ndim
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    a0, a1 = (normalize_axis(a, ndim, "rot90") for a in axes)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return mutation.flip(mutation.flip(m, a0), a1)
    perm = list(range(ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return mutation.transpose(mutation.flip(m, a1), perm)
    return mutation.flip(mutation.transpose(m, perm), a1)


@implements(np.vander)
def vander(x, N=None, increasing=False):
    from .math import power
    x = as_traceable(x)
    if type_of(x).ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = type_of(x).shape[0] if N is None else int(N)
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    out = power(mutation.reshape(x, (-1, 1)), powers)
    if type_of(out).dtype != np.result_type(type_of(x).dtype, np.int64) and \
            type_of(x).dtype.kind in "biu":
        from ._base import convert
        out = convert(out, np.result_type(type_of(x).dtype, np.int64))
    return out


def _slice(ndim, axis, sl):
    idx = [slice(None)] * ndim
    idx[axis] = sl
    return tuple(idx)


@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """The n-th discrete difference along ``axis`` (booleans: not_equal, as NumPy)."""
    from .math import not_equal, subtract
    from .shape import broadcast_to, concatenate
    a = as_traceable(a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    ndim = type_of(a).ndim
    if ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, ndim, "diff")
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        e = as_traceable(extra)
        if type_of(e).ndim == 0:
            shape = list(type_of(a).shape)
            shape[axis] = 1
            e = broadcast_to(e, tuple(shape))
        parts.append(e)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis=axis)
    op = not_equal if type_of(a).dtype == dtypes.bool_ else subtract
    for _ in range(n):
        a = op(a[_slice(ndim, axis, slice(1, None))], a[_slice(ndim, axis, slice(None, -1))])
    return a


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    from ._base import convert
    from .shape import concatenate
    flat = mutation.ravel(as_traceable(ary))
    dt = type_of(flat).dtype
    out = diff(flat)
    pieces = [convert(mutation.ravel(as_traceable(p)), dt) if isinstance(p, Tracer) else
              np.ravel(np.asarray(p, dtype=dt)) for p in (to_begin, to_end) if p is not None]
    if to_begin is None and to_end is None:
        return out
    begin = [pieces.pop(0)] if to_begin is not None else []
    end = pieces if to_end is not None else []
    return concatenate(begin + [out] + end)


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    """Second-order central differences inside, first- or second-order one-sided ones at the
    edges, for uniform spacings (scalars) along each axis."""
    from ._base import convert
    from .math import add, multiply, subtract, true_divide
    from .shape import concatenate
    f = as_traceable(f)
    ndim = type_of(f).ndim
    axes = tuple(range(ndim)) if axis is None else \
        tuple(normalize_axis(a, ndim, "gradient") for a in np.atleast_1d(axis))
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if any(isinstance(h, Tracer) and type_of(h).ndim or np.ndim(h) for h in spacing):
        raise UnsupportedError("np.gradient with coordinate arrays is not supported on tracers; "
                               "pass uniform (scalar) spacings")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    if type_of(f).dtype.kind in "biu":
        f = convert(f, dtypes.float64)
    outs = []
    for ax, h in zip(axes, spacing):
        n = type_of(f).shape[ax]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")

        def s(a, b=None):
            return f[_slice(ndim, ax, slice(a, b))]
        inner = true_divide(subtract(s(2), s(None, -2)), multiply(2.0, h))
        if edge_order == 1:
            first = true_divide(subtract(s(1, 2), s(0, 1)), h)
            last = true_divide(subtract(s(-1), s(-2, -1)), h)
        else:
            first = true_divide(add(add(multiply(-1.5, s(0, 1)), multiply(2.0, s(1, 2))),
                                    multiply(-0.5, s(2, 3))), h)
            last = true_divide(add(add(multiply(0.5, s(-3, -2)), multiply(-2.0, s(-2, -1))),
                                   multiply(1.5, s(-1))), h)
        outs.append(concatenate([first, inner, last], axis=ax))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _trapezoid(y, x=None, dx=1.0, axis=-1):
    from .math import add, multiply, true_divide
    from .reductions import sum as sum_
    y = as_traceable(y)
    ndim = type_of(y).ndim
    axis = normalize_axis(axis, ndim, "trapezoid")
    if x is None:
        d = dx
    else:
        d = diff(x, axis=-1 if np.ndim(x) == 1 or type_of(as_traceable(x)).ndim == 1 else axis)
        if type_of(as_traceable(d)).ndim == 1 and ndim > 1:
            shape = [1] * ndim
            shape[axis] = -1
            d = mutation.reshape(d, tuple(shape))
    mid = true_divide(add(y[_slice(ndim, axis, slice(1, None))],
                          y[_slice(ndim, axis, slice(None, -1))]), 2.0)
    return sum_(multiply(d, mid), axis=axis)


for _name in ("trapezoid", "trapz"):
    if hasattr(np, _name):
        globals()[_name] = implements(getattr(np, _name), name=_name)(_trapezoid)
if "trapezoid" not in globals():
    trapezoid = _trapezoid


@implements(np.polyval)
def polyval(p, x):
    """Horner's scheme over the coefficients (highest degree first)."""
    from .math import add, multiply
    from .creation import zeros_like
    x = as_traceable(x)
    coeffs = [p[i] for i in range(len(p))]
    y = zeros_like(x) if not coeffs else multiply(zeros_like(x), coeffs[0])
    for c in coeffs:
        y = add(multiply(y, x), c)
    return y


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's least-squares polynomial fit, step for step (a column-scaled Vandermonde matrix
    solved by ``lstsq``; ``full`` and ``cov`` as NumPy's). NumPy's RankWarning for a
    rank-deficient fit is not raised (the rank is known only when the function runs: compare
    the rank ``full=True`` returns)."""
    from .linalg import inv, lstsq
    from .math import sqrt
    from .reductions import sum as sum_
    order = int(deg) + 1
    x, y = as_traceable(x) + 0.0, as_traceable(y) + 0.0
    tx, ty = type_of(x), type_of(y)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if tx.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if tx.shape[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if ty.ndim < 1 or ty.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if tx.shape[0] != ty.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = tx.shape[0] * np.finfo(tx.dtype).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = as_traceable(w) + 0.0
        if type_of(w).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if type_of(w).shape[0] != ty.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if ty.ndim == 2 else w)
    scale = sqrt(sum_(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, rcond
    if not cov:
        return c
    base = inv(lhs.T @ lhs) / (scale[:, None] * scale[None, :])
    if cov == "unscaled":
        fac = 1
    else:
        if tx.shape[0] <= order:
            raise ValueError("the number of data points must exceed order to scale the "
                             "covariance matrix")
        fac = resids / (tx.shape[0] - order)
    return (c, base * fac) if ty.ndim == 1 else (c, base[:, :, None] * fac)


@implements(np.append)
def append(arr, values, axis=None):
    from .shape import concatenate
    arr = as_traceable(arr)
    if axis is None:
        arr = mutation.ravel(arr) if type_of(arr).ndim != 1 else arr
        values = mutation.ravel(as_traceable(values))
        axis = type_of(arr).ndim - 1
    return concatenate((arr, values), axis=axis)


def _split_along(name, axis, min_ndim):
    np_fn = getattr(np, name)

    @implements(np_fn, name=name)
    def fn(ary, indices_or_sections):
        ary = as_traceable(ary)
        if type_of(ary).ndim < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        ax = 0 if name == "hsplit" and type_of(ary).ndim == 1 else axis
        return mutation.split(ary, indices_or_sections, axis=ax)
    return fn


hsplit = _split_along("hsplit", 1, 1)
vsplit = _split_along("vsplit", 0, 2)
dsplit = _split_along("dsplit", 2, 3)


@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """The covariance matrix (NumPy's estimator; weights are not supported on tracers)."""
    from ._base import convert
    from .products import matmul
    from .math import conjugate, subtract, true_divide
    from .reductions import mean
    from .shape import concatenate, squeeze
    if fweights is not None or aweights is not None:
        raise UnsupportedError("np.cov with fweights/aweights is not supported on tracers")
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = as_traceable(m)
    if type_of(m).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(type_of(m).dtype, np.float64) if y is None else \
            np.result_type(type_of(m).dtype, type_of(as_traceable(y)).dtype, np.float64)
    X = convert(mutation.atleast_2d(m), dtype)
    if not rowvar and type_of(X).shape[0] != 1:
        X = mutation.transpose(X)
    if y is not None:
        Y = convert(mutation.atleast_2d(as_traceable(y)), dtype)
        if not rowvar and type_of(Y).shape[0] != 1:
            Y = mutation.transpose(Y)
        X = concatenate((X, Y), axis=0)
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    n = type_of(X).shape[1]
    X = subtract(X, mean(X, axis=1, keepdims=True))
    c = true_divide(matmul(X, conjugate(mutation.transpose(X))), max(n - ddof, 0))
    return squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    from .math import clip, real, sqrt, true_divide
    c = cov(x, y, rowvar, dtype=dtype)
    if type_of(c).ndim == 0:
        return true_divide(c, c)
    d = real(diag(c)) if type_of(c).dtype.kind == "c" else diag(c)
    stddev = sqrt(d)
    c = true_divide(c, mutation.reshape(stddev, (-1, 1)))
    c = true_divide(c, mutation.reshape(stddev, (1, -1)))
    if type_of(c).dtype.kind != "c":
        c = clip(c, -1, 1)
    return c


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """all(isclose(a, b)): a traced boolean (use it with np.where, not ``if``)."""
    from .logic import isclose
    from .reductions import all as all_
    return all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


@implements(np.iscomplexobj)
def iscomplexobj(x):
    return type_of(as_traceable(x)).dtype.kind == "c"


@implements(np.isrealobj)
def isrealobj(x):
    return not iscomplexobj(x)


def _result_type_operand(x):
    if isinstance(x, Tracer):
        t = x.ty
        if t.weak:       # a Python scalar argument: NumPy's weak promotion
            return {"b": False, "i": 0, "f": 0.0, "c": 0j}[t.dtype.kind]
        return np.empty((), t.dtype)
    return x


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    return np.result_type(*[_result_type_operand(x) for x in arrays_and_dtypes])
