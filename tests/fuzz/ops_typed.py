"""Statement families about types (see ops.py for the contract): what users write that the other
families leave to chance: NumPy scalar operands (``x * np.float32(1.5)``, ``x + np.int16(3)``:
strong types under NEP 50), narrow integer arrays with Python ints (``u8 + 200``), reductions
with ``dtype=``, ufuncs with ``where=`` (into an ``out=`` array the statement creates, or a
reduction's ``where=``), ``.astype`` chains and shapes computed from other arrays
(``np.zeros(x.shape[0])``). Not generated: NumPy scalar constructors of traced values
(``np.float32(x.sum())``), which NumPy evaluates through ``__array__`` (a ConcretizationError
by design: write ``x.sum().astype(np.float32)``).

As in ops.py, candidates may be invalid: ``Gen.try_add`` evaluates each with NumPy and drops
what NumPy rejects. Float -> integer casts are written with a clip into the target's range
(NumPy's out-of-range cast is undefined, see ops.astype) and not generated from NaN.
"""
from __future__ import annotations

import numpy as np

from .gen import NARROW_INTS

_REALS = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint32"]
_INTS = ["int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64"]


def scalar_lit(rng, dt):
    """``np.<dt>(v)``, a NumPy scalar literal that fits ``dt``."""
    kind = np.dtype(dt).kind
    if kind == "f":
        return f"np.{dt}({rng.choice([0.5, 1.5, -0.75, 2.0, 0.1, -2.5])})"
    lo = 0 if kind == "u" else -3
    return f"np.{dt}({int(rng.integers(lo, 6))})"


def _float_to(expr, src_kind, dt):
    """``expr.astype(dt)``, clipped into ``dt``'s range first when a float goes to an int."""
    if src_kind == "f" and np.dtype(dt).kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -2**31), min(int(info.max), 2**31 - 1)
        return f"np.clip({expr}, {lo}, {hi}).astype(np.{dt})"
    return f"{expr}.astype(np.{dt})"


def _real(v):
    return v.dtype.kind in "fiub"


def _pick(g, pred):
    """``g.pick(pred)`` among arrays and NumPy scalars: a Python int argument is not an operand
    here (its new inputs may leave the range NumPy accepts next to a narrow array, and plain
    programs are validated on the first inputs only: fuzz sample 2024 #615)."""
    ns = [n for n in g.names(pred) if not isinstance(g.env[n], (bool, int, float, complex))]
    if not ns:
        return None
    w = np.arange(1, len(ns) + 1, dtype=float) ** 1.5
    return ns[g.rng.choice(len(ns), p=w / w.sum())]


def npscalar(g):
    """A NumPy scalar operand of a random dtype, on either side of an arithmetic op."""
    rng = g.rng
    x = _pick(g, _real)
    if x is None:
        return None
    s = scalar_lit(rng, str(rng.choice(_REALS)))
    op = rng.choice(["+", "-", "*", "/", "max", "min"])
    if op in ("max", "min"):
        code = f"np.{op}imum({x}, {s})" if rng.random() < 0.5 else f"np.{op}imum({s}, {x})"
    else:
        code = f"{x} {op} {s}" if rng.random() < 0.6 else f"{s} {op} {x}"
    return code, [x], ["typed:npscalar"]


def narrow_pyint(g):
    """A narrow integer array with a Python int near the edge of its range (NumPy raises
    OverflowError for one outside it: dropped), or a wrapping product."""
    rng = g.rng
    x = _pick(g, lambda v: v.dtype.name in NARROW_INTS)
    if x is None:
        return None
    info = np.iinfo(g.val(x).dtype)
    k = int(rng.choice([info.max, info.max // 2, info.min, 100, 7, -1 if info.min else 1]))
    tmpl = rng.choice(["{x} + {k}", "{x} - {k}", "{x} * {k}", "{k} - {x}", "({x} + {k}) // 3",
                       "np.maximum({x}, {k})", "{x} == {k}", "{x} < {k}"])
    return tmpl.format(x=x, k=k), [x], ["typed:narrow_pyint"]


def reduce_dtype(g):
    """sum/prod/mean/cumsum/cumprod with ``dtype=`` (an integer dtype only for integer data:
    a float cast to int in a reduction is unsafe, undefined out of range)."""
    rng = g.rng
    x = _pick(g, _real)
    if x is None:
        return None
    xv = g.val(x)
    op = rng.choice(["sum", "prod", "mean", "cumsum", "cumprod", "nansum"])
    dts = ["float32", "float64"] + (["int16", "int32", "int64", "uint32"]
                                    if xv.dtype.kind in "iub" else [])
    axis = f", axis={int(rng.integers(-xv.ndim, xv.ndim))}" if xv.ndim and \
        rng.random() < 0.5 else ""
    dt = rng.choice(dts)
    if op in ("sum", "prod", "mean", "cumsum") and rng.random() < 0.3:
        return f"{x}.{op}({axis[2:]}{', ' if axis else ''}dtype=np.{dt})", [x], \
            [f"typed:reduce_dtype:{op}"]
    return f"np.{op}({x}{axis}, dtype=np.{dt})", [x], [f"typed:reduce_dtype:{op}"]


def where_kw(g):
    """A ufunc with ``where=`` into an ``out=`` array the statement creates, or a reduction
    with ``where=`` (``max``/``min`` with ``initial=``)."""
    rng = g.rng
    x = _pick(g, lambda v: _real(v) and v.ndim >= 1)
    if x is None:
        return None
    xv = g.val(x)
    cond = f"{x} > {rng.choice([0, 0.5, -0.3])}"
    if rng.random() < 0.4:
        op = rng.choice(["sum", "max", "min", "prod"])
        axis = f", axis={int(rng.integers(-xv.ndim, xv.ndim))}" if rng.random() < 0.5 else ""
        init = f", initial={rng.choice([-5.0, 0.0, 3.0])}" if op in ("max", "min") else ""
        return f"np.{op}({x}{axis}, where={cond}{init})", [x], [f"typed:where_reduce:{op}"]
    y = _pick(g, lambda v: _real(v) and _fits(v.shape, xv.shape))
    if y is None:
        return None
    fn = rng.choice(["add", "multiply", "subtract", "maximum", "minimum", "true_divide"])
    out_dt = np.result_type(xv, g.val(y))
    if fn == "true_divide" or out_dt.kind == "b":
        out_dt = np.result_type(out_dt, np.float32)
    if out_dt == np.float32 and rng.random() < 0.3:
        out_dt = np.dtype(np.float64)
    fill = rng.choice([0, 1, -2])
    return (f"np.{fn}({x}, {y}, out=np.full({xv.shape}, {fill}, dtype=np.{out_dt.name}), "
            f"where={cond})"), [x, y], [f"typed:where_out:{fn}"]


def _fits(small, big):
    """Whether ``small`` broadcasts to ``big`` without changing it."""
    try:
        return np.broadcast_shapes(small, big) == tuple(big)
    except ValueError:
        return False


def astype_chain(g):
    """``x.astype(a).astype(b)[.astype(c)]`` through narrow ints and floats (wrapping casts
    between ints; each float -> int step clipped into the target's range)."""
    rng = g.rng
    x = _pick(g, _real)
    if x is None or g.val(x).dtype.kind == "f" and np.isnan(g.val(x)).any():
        return None
    code, kind = x, g.val(x).dtype.kind
    chain = [str(rng.choice(_INTS + ["float32", "float64", "bool"]))
             for _ in range(int(rng.integers(2, 4)))]
    for dt in chain:
        code = _float_to(code, kind, dt) if dt != "bool" else f"{code}.astype(np.bool_)"
        kind = np.dtype(dt).kind
    return code, [x], ["typed:astype_chain"]


def shape_ints(g):
    """Arrays whose shapes are ints computed from other arrays' shapes and sizes."""
    rng = g.rng
    x = _pick(g, lambda v: v.ndim >= 1 and v.size)
    if x is None:
        return None
    forms = [f"np.reshape({x}, ({x}.shape[0], -1))", f"np.ones({x}.size) * {x}.ravel()",
             f"np.broadcast_to({x}, (2,) + {x}.shape) * 1",
             f"np.full({x}.shape, np.float32(0.5)) + {x}",
             f"np.arange({x}.shape[-1]) * {x}", f"np.zeros(len({x})) + {x}[0]",
             f"np.zeros(({x}.shape[-1], {x}.ndim), {x}.dtype) + {x}.reshape(-1)[:1]",
             f"np.linspace(0.0, 1.0, {x}.shape[-1]) + {x}"]
    return forms[int(rng.integers(len(forms)))], [x], ["typed:shape_ints"]


FAMILIES = [(npscalar, 4), (narrow_pyint, 3), (reduce_dtype, 3), (where_kw, 3),
            (astype_chain, 2), (shape_ints, 2)]
