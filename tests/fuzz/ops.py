"""Candidate statements, one family per function: ``candidate(g)`` draws a family by weight and
returns ``(expr or lines, uses, tags)``, or None when the family does not fit the current
variables. Candidates need not be valid: ``Gen.try_add`` evaluates each with NumPy and drops
the ones NumPy rejects, so the families here can be optimistic and stay short.

Tags: the family name plus ``nofd`` for ops whose derivative at points the program is likely to
hit exactly is a convention (sqrt at 0, cbrt at 0) rather than a limit of finite differences.
"""
from __future__ import annotations

import numpy as np

from .gen import NARROW_INTS, _lit

# unary: template over {x}; the float-only ones take ints too (NumPy promotes)
UNARY = [
    ("np.sin({x})", []), ("np.cos({x})", []), ("np.tanh({x})", []), ("np.arctan({x})", []),
    ("np.arcsinh({x})", []), ("np.exp({x})", []), ("np.expm1({x})", []), ("np.exp2({x})", []),
    ("np.log(np.abs({x}) + 0.5)", []), ("np.log1p(np.abs({x}))", []),
    ("np.log2(np.abs({x}) + 1.0)", []), ("np.log10(np.abs({x}) + 0.25)", []),
    ("np.sqrt(np.abs({x}) + 0.25)", []), ("np.sqrt(np.abs({x}))", ["nofd"]),
    ("np.cbrt({x})", ["nofd"]), ("np.sinh({x})", []), ("np.cosh({x})", []),
    ("np.tan(np.clip({x}, -1.2, 1.2))", []), ("np.arcsin(np.clip({x}, -0.9, 0.9))", []),
    ("np.arccos(np.clip({x}, -0.9, 0.9))", []), ("np.arctanh(np.clip({x}, -0.9, 0.9))", []),
    ("np.arccosh(np.abs({x}) + 1.5)", []), ("np.square({x})", []),
    ("np.reciprocal({x} * {x} + 1.0)", []), ("np.sign({x})", []), ("-{x}", []),
    ("np.negative({x})", []), ("np.abs({x})", []), ("np.floor({x})", []), ("np.ceil({x})", []),
    ("np.rint({x})", []), ("np.round({x}, 1)", []), ("np.sinc({x})", []),
    ("np.deg2rad({x})", []), ("np.rad2deg({x})", []), ("np.isnan({x})", []),
    ("np.isfinite({x})", []), ("np.isinf({x})", []), ("np.positive({x})", []),
    ("np.real({x})", []), ("np.imag({x})", []), ("np.conj({x})", []), ("np.angle({x})", []),
    ("{x} ** 2", []), ("{x} ** 3", []), ("np.abs({x}) ** 0.5", ["nofd"]), ("{x}.real", []),
    ("np.logical_not({x})", []), ("~{x}", []), ("{x}.T", []), ("np.conjugate({x})", []),
]
BINARY = [
    "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / {y}", "{x} / ({y} * {y} + 1.0)",
    "{x} // {y}", "{x} % {y}", "np.maximum({x}, {y})", "np.minimum({x}, {y})",
    "np.fmax({x}, {y})", "np.fmin({x}, {y})", "np.arctan2({x}, {y})", "np.hypot({x}, {y})",
    "np.logaddexp({x}, {y})", "np.power(np.abs({x}) + 0.5, {y})", "{x} ** {y}",
    "{x} == {y}", "{x} != {y}", "{x} < {y}", "{x} <= {y}", "{x} > {y}", "{x} >= {y}",
    "np.logical_and({x}, {y})", "np.logical_or({x}, {y})", "np.logical_xor({x}, {y})",
    "np.isclose({x}, {y})",
]
INTOPS = ["{x} & {y}", "{x} | {y}", "{x} ^ {y}", "{x} << ({y} & 7)", "{x} >> ({y} & 7)",
          "{x} // {y}", "{x} % {y}", "np.bitwise_and({x}, {y})", "np.left_shift({x}, 3)",
          "np.right_shift({x}, 1)", "np.invert({x})", "{x} * {y} - {x}"]
REDUCE = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "any", "all",
          "amax", "ptp"]


def _bcast(a, b):
    try:
        np.broadcast_shapes(np.shape(a), np.shape(b))
        return True
    except ValueError:
        return False


def _operand(g, x, kind="f"):
    """A second operand for ``x``: a broadcast-compatible variable or a weak literal."""
    rng = g.rng
    if rng.random() < 0.3:
        return _lit(rng, kind), []
    xv = g.val(x)
    y = g.pick(lambda v: _bcast(v, xv))
    return (y, [y]) if y else (_lit(rng, kind), [])


def unary(g):
    x = g.pick()
    tmpl, tags = UNARY[g.rng.integers(len(UNARY))]
    if g.val(x).dtype.kind == "c" and tmpl.startswith(("np.round", "np.floor", "np.ceil",
                                                       "np.rint", "np.sign")):
        return None                      # rounding complex: tracejit refuses (DTypeError)
    if tmpl.startswith(("np.round", "np.floor", "np.ceil", "np.rint")) and \
            _near_rounding_boundary(g.val(x), tmpl):
        return None      # ill-conditioned here: an ulp of the operand (a libm difference) flips it
    if _computes_in_float16(tmpl, g.val(x)):
        return None
    return tmpl.format(x=x), [x], ["unary:" + tmpl.split("(")[0]] + tags


def _computes_in_float16(tmpl, *vals) -> bool:
    """Whether NumPy computes a step of ``tmpl`` in float16 for operands of these dtypes (a
    float ufunc of 8-bit ints), which tracejit refuses (DTypeError) even when a later float64
    operand hides it from the statement's result dtype."""
    if not any(v.dtype.kind in "iu" and v.dtype.itemsize == 1 for v in vals):
        return False
    seen = []

    class _Np:                   # np, with every function's result dtype recorded
        def __getattr__(self, name):
            fn = getattr(np, name)
            if not callable(fn):
                return fn

            def call(*a, **k):
                out = fn(*a, **k)
                seen.append(getattr(out, "dtype", None))
                return out
            return call
    ops = {"x": np.ones(1, vals[0].dtype), "y": np.ones(1, vals[-1].dtype)}
    try:
        with np.errstate(all="ignore"):
            eval(tmpl.format(x="x", y="y"), {"np": _Np(), **ops})
    except Exception:            # noqa: BLE001 - NumPy decides later, on the real operands
        return False
    return np.dtype(np.float16) in seen


def _near_rounding_boundary(v, tmpl) -> bool:
    """Whether an element of ``v`` lies within 8 ulps of where ``tmpl`` (floor/ceil: integers;
    rint: half-integers; round(x, 1): odd multiples of 0.05) jumps. The noise probe cannot
    see this when the operand comes from a flat function (sin near +-1, cos near 0), so such
    a program would report a one-ulp math-library difference as a wrong answer."""
    v = np.asarray(v)
    if v.dtype.kind != "f" or v.size == 0:
        return False
    with np.errstate(all="ignore"):
        w = v.astype(np.float64)
        if tmpl.startswith("np.round"):
            w = w * 10
        if tmpl.startswith(("np.rint", "np.round")):
            w = w - 0.5
        dist = np.abs(w - np.round(w))
        ulp = np.abs(np.spacing(v.astype(v.dtype))).astype(np.float64) * \
            (10 if tmpl.startswith("np.round") else 1)
        near = np.isfinite(w) & (dist <= 8 * ulp)
    return bool(near.any())


def binary(g):
    x = g.pick()
    y, uy = _operand(g, x, g.val(x).dtype.kind)
    tmpl = BINARY[g.rng.integers(len(BINARY))]
    if g.rng.random() < 0.3:
        x, y = y, x          # literal on the left too (weak scalar with __radd__ etc.)
        uy = uy if x in g.env else []
    if "**" in tmpl and _int_kind(g, x) and (
            str(y).startswith("-") or y in g.env and g.val(y).dtype.kind == "i"):
        # int ** a negative literal is refused when tracing; int ** a traced signed int raises
        # at run time for the inputs of later calls (and vmapped batches) that are negative
        return None
    uses = [u for u in (x, y) if u in g.env]
    if _jumps_near(g, x, y, tmpl) or _computes_in_float16(tmpl, *[g.val(u) for u in uses]):
        return None
    return tmpl.format(x=x, y=y), uses, ["binary:" + tmpl]


def _int_kind(g, x) -> bool:
    """Whether operand ``x`` (a variable or a literal) is a bool or an integer."""
    if x in g.env:
        return g.val(x).dtype.kind in "iub"
    return "." not in str(x) and "e" not in str(x) and "j" not in str(x)


def _jumps_near(g, x, y, tmpl) -> bool:
    """A comparison of float operands within 8 ulps of each other, or a float ``//``/``%``
    whose quotient is within 8 ulps of an integer: ill-conditioned at these inputs (a one-ulp
    libm difference upstream, e.g. tan(x) vs x for tiny f32 x, flips the result), which the
    noise probe cannot see when both sides move together. Such candidates are not generated."""
    compare = any(op in tmpl for op in ("==", "!=", "<", ">")) and "np." not in tmpl
    floor = "//" in tmpl or "%" in tmpl
    if not (compare or floor):
        return False
    try:
        a = np.asarray(g.val(x) if x in g.env else eval(x, {"np": np}))
        b = np.asarray(g.val(y) if y in g.env else eval(y, {"np": np}))
    except Exception:                # noqa: BLE001 - an operand we cannot evaluate: keep it
        return False
    if a.dtype.kind not in "f" and b.dtype.kind not in "f":
        return False
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        dt = np.result_type(a.dtype, b.dtype) if a.dtype.kind == b.dtype.kind == "f" else \
            (a.dtype if a.dtype.kind == "f" else b.dtype)
        if compare:
            scale = np.maximum(np.abs(a64), np.abs(b64))
            gap = np.abs(a64 - b64)
        else:
            q = a64 / b64
            scale, gap = np.abs(q), np.abs(q - np.round(q))
        near = np.isfinite(gap) & (gap <= 8 * np.spacing(scale.astype(dt)).astype(np.float64))
    return bool(near.any())


def intop(g):
    x = g.pick(lambda v: v.dtype.kind in "iub")
    if x is None:
        return None
    y, uy = _operand(g, x, "i")
    tmpl = INTOPS[g.rng.integers(len(INTOPS))]
    return tmpl.format(x=x, y=y), [x] + uy, ["intop:" + tmpl]


def astype(g):
    x = g.pick()
    if g.val(x).dtype.kind == "c":
        return f"{x}.astype(np.{g.rng.choice(['complex64', 'complex128'])})", [x], ["astype:c"]
    dt = g.rng.choice(["bool", "int32", "int64", "float32", "float64", "complex64",
                       "complex128", "int8", "int16", "uint8", "uint16", "uint32", "uint64"])
    cast = f"{x}.astype(np.{dt if dt != 'bool' else 'bool_'})"
    if g.val(x).dtype.kind == "f" and dt in NARROW_INTS:
        # NumPy's out-of-range float -> int cast is undefined (x86 wraps, tracejit saturates),
        # and new inputs may leave any range the first ones kept: clip into the dtype's range
        # (NaN stays NaN, an undefined cast too: not generated)
        if np.isnan(g.val(x)).any():
            return None
        info = np.iinfo(dt)
        lo, hi = max(int(info.min), -2**31), min(int(info.max), 2**31)
        cast = f"np.clip({x}, {lo}, {hi}).astype(np.{dt})"
    return cast, [x], [f"astype:{dt}"]


def where(g):
    c = g.pick(lambda v: v.dtype == np.bool_)
    x = g.pick()
    y, uy = _operand(g, x, g.val(x).dtype.kind)
    if c is None:
        cond, uc = f"{x} > {g.rng.choice([0, 0.5, -0.3])}", []
    else:
        cond, uc = c, [c]
    if g.rng.random() < 0.3:
        lo, hi = sorted(g.rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], 2, replace=False))
        return f"np.clip({x}, {lo}, {hi})", [x], ["clip"]
    return f"np.where({cond}, {x}, {y})", uc + [x] + uy, ["where"]


def _axes(g, nd, allow_tuple=True):
    rng = g.rng
    u = rng.random()
    if nd == 0 or u < 0.25:
        return None
    if allow_tuple and nd >= 2 and u < 0.5:
        k = int(rng.integers(1, nd + 1))
        ax = sorted(rng.choice(nd, k, replace=False).tolist())
        return tuple(a - nd if rng.random() < 0.3 else a for a in ax)
    return int(rng.integers(-nd, nd))


def reduce(g):
    x = g.pick()
    nd = g.val(x).ndim
    op = REDUCE[g.rng.integers(len(REDUCE))]
    if g.val(x).dtype.kind == "c" and op in ("argmax", "argmin", "max", "min", "amax", "ptp"):
        return None                      # complex ordering: tracejit refuses (DTypeError)
    ax = _axes(g, nd, allow_tuple=op not in ("argmax", "argmin"))
    kw = [] if ax is None and g.rng.random() < 0.5 else [f"axis={ax}"]
    if g.rng.random() < 0.35:
        kw.append("keepdims=True")
    if op in ("var", "std") and g.rng.random() < 0.2:
        kw.append("ddof=1")
    if g.rng.random() < 0.2 and op in ("sum", "max", "min", "prod", "mean", "any", "all"):
        return f"{x}.{op}({', '.join(kw)})", [x], [f"reduce:{op}"]
    return f"np.{op}({', '.join([x] + kw)})", [x], [f"reduce:{op}"]


def cumulative(g):
    x = g.pick()
    nd = g.val(x).ndim
    op = g.rng.choice(["cumsum", "cumprod"])
    ax = "" if nd == 0 or g.rng.random() < 0.3 else f", axis={int(g.rng.integers(-nd, nd))}"
    return f"np.{op}({x}{ax})", [x], [f"cum:{op}"]


def contract(g):
    """matmul/dot/einsum/tensordot/outer/inner/vdot of variables whose shapes fit."""
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1)
    if x is None:
        return None
    xv = g.val(x)
    kind = rng.choice(["matmul", "self", "einsum1", "einsum2", "tensordot", "outer", "inner",
                       "vdot", "dot"])
    if kind == "self":
        if xv.ndim == 1:
            return f"np.dot({x}, {x})", [x], ["contract:dot"]
        return f"np.matmul({x}, np.swapaxes({x}, -1, -2))", [x], ["contract:matmul"]
    if kind == "einsum1":
        letters = "abcde"[:xv.ndim]
        out = "".join(rng.permutation(list(letters))[:int(rng.integers(0, xv.ndim + 1))])
        return f"np.einsum('{letters}->{out}', {x})", [x], ["contract:einsum"]
    if kind == "vdot":
        y = g.pick(lambda v: v.size == xv.size)
        return f"np.vdot({x}, {y})", [x, y], ["contract:vdot"]
    if kind == "outer":
        y = g.pick(lambda v: v.size * xv.size <= 1024)
        return f"np.outer({x}, {y})", [x, y], ["contract:outer"]
    ys = g.names(lambda v: v.ndim >= 1)
    rng.shuffle(ys)
    for y in ys[:12]:
        yv = g.val(y)
        if kind in ("matmul", "dot", "inner"):
            fits = {"matmul": yv.shape[-2 if yv.ndim > 1 else 0] == xv.shape[-1],
                    "dot": yv.shape[-2 if yv.ndim > 1 else 0] == xv.shape[-1],
                    "inner": yv.shape[-1] == xv.shape[-1]}[kind]
            if fits:
                tmpl = {"matmul": "{x} @ {y}" if rng.random() < 0.5 else "np.matmul({x}, {y})",
                        "dot": "np.dot({x}, {y})", "inner": "np.inner({x}, {y})"}[kind]
                return tmpl.format(x=x, y=y), [x, y], [f"contract:{kind}"]
        if kind == "tensordot":
            pairs = [(i, j) for i in range(xv.ndim) for j in range(yv.ndim)
                     if xv.shape[i] == yv.shape[j]]
            if pairs:
                i, j = pairs[rng.integers(len(pairs))]
                return f"np.tensordot({x}, {y}, axes=([{i}], [{j}]))", [x, y], \
                    ["contract:tensordot"]
        if kind == "einsum2":
            lx = "abcd"[:xv.ndim]
            ly, fresh = "", iter("pqrs")
            for d in yv.shape:
                same = [c for c, s in zip(lx, xv.shape) if s == d and c not in ly]
                ly += same[0] if same and rng.random() < 0.6 else next(fresh)
            allc = sorted(set(lx + ly))
            out = "".join(rng.permutation(allc)[:int(rng.integers(0, len(allc) + 1))])
            return f"np.einsum('{lx},{ly}->{out}', {x}, {y})", [x, y], ["contract:einsum"]
    return None


def _perm(g, nd):
    return tuple(int(i) for i in g.rng.permutation(nd))


def structural(g):
    rng = g.rng
    x = g.pick()
    xv = g.val(x)
    nd, s = xv.ndim, xv.shape
    ax = int(rng.integers(-nd, nd)) if nd else 0
    k = rng.integers(15)
    if k == 0:
        y = g.pick(lambda v: v.shape == s and v.dtype == xv.dtype) or x
        fn = rng.choice(["stack", "concatenate"]) if nd else "stack"
        return f"np.{fn}([{x}, {y}], axis={ax if fn == 'concatenate' else int(rng.integers(-nd - 1, nd + 1))})", [x, y], [f"struct:{fn}"]
    if k == 1 and nd:
        return f"np.roll({x}, {int(rng.integers(-3, 4))}, axis={ax})", [x], ["struct:roll"]
    if k == 2 and nd >= 2:
        return f"np.swapaxes({x}, {ax}, {int(rng.integers(nd))})", [x], ["struct:swapaxes"]
    if k == 3 and nd >= 2:
        return f"np.moveaxis({x}, {ax}, {int(rng.integers(-nd, nd))})", [x], ["struct:moveaxis"]
    if k == 4:
        return (f"np.transpose({x}, {_perm(g, nd)})" if rng.random() < 0.6 else
                f"{x}.transpose()"), [x], ["struct:transpose"]
    if k == 5:
        n = xv.size
        divs = [d for d in range(1, n + 1) if n % d == 0] or [1]
        d = int(rng.choice(divs))
        shape = rng.choice([f"({n},)", f"({d}, -1)" if n else "(0, 2)", f"(-1, 1, {d})"
                            if n else "(0,)", "-1"])
        return f"{x}.reshape({shape})" if rng.random() < 0.5 else \
            f"np.reshape({x}, {shape})", [x], ["struct:reshape"]
    if k == 6:
        ones = [i for i, d in enumerate(s) if d == 1]
        if ones and rng.random() < 0.6:
            return f"np.squeeze({x}, axis={int(rng.choice(ones))})", [x], ["struct:squeeze"]
        return f"np.expand_dims({x}, {int(rng.integers(-nd - 1, nd + 1))})", [x], \
            ["struct:expand_dims"]
    if k == 7 and nd:
        return f"np.flip({x}, axis={ax if rng.random() < 0.7 else None})", [x], ["struct:flip"]
    if k == 8 and nd:
        w = tuple((int(rng.integers(0, 3)), int(rng.integers(0, 3))) for _ in range(nd))
        mode = rng.choice(["", ", constant_values=1.5", ", mode='edge'"])
        return f"np.pad({x}, {w}{mode})", [x], ["struct:pad"]
    if k == 9:
        reps = tuple(int(r) for r in rng.integers(1, 3, size=int(rng.integers(1, 4))))
        return f"np.tile({x}, {reps})", [x], ["struct:tile"]
    if k == 10:
        a = "" if not nd or rng.random() < 0.3 else f", axis={ax}"
        return f"np.repeat({x}, {int(rng.integers(1, 4))}{a})", [x], ["struct:repeat"]
    if k == 11:
        shape = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 2)))) + \
            tuple(d if rng.random() < 0.7 or d != 1 else 3 for d in s)
        return f"np.broadcast_to({x}, {shape})", [x], ["struct:broadcast_to"]
    if k == 12 and nd >= 2:
        a1, a2 = (int(v) for v in rng.choice(nd, 2, replace=False))
        return f"np.diagonal({x}, {int(rng.integers(-1, 2))}, {a1}, {a2})", [x], \
            ["struct:diagonal"]
    if k == 13 and nd >= 2:
        fn = rng.choice(["triu", "tril"])
        return f"np.{fn}({x}, {int(rng.integers(-1, 2))})", [x], [f"struct:{fn}"]
    if k == 14:
        return rng.choice([f"{x}.ravel()", f"np.copy({x})", f"np.atleast_2d({x})",
                           f"{x}.flatten()"]), [x], ["struct:misc"]
    return None


def _index(g, s):
    """A random basic index over shape ``s``: ints, slices with steps, None and ``...``."""
    rng = g.rng
    parts = []
    n_axes = int(rng.integers(1, len(s) + 1)) if s else 0
    for d in s[:n_axes]:
        u = rng.random()
        if u < 0.25 and d:
            parts.append(str(int(rng.integers(-d, d))))
        elif u < 0.85:
            step = int(rng.choice([1, 1, 2, -1, -2, 3]))
            a = "" if rng.random() < 0.5 else str(int(rng.integers(-d - 1, d + 2)))
            b = "" if rng.random() < 0.5 else str(int(rng.integers(-d - 1, d + 2)))
            parts.append(f"{a}:{b}" + (f":{step}" if step != 1 else ""))
        else:
            parts.append(":")
        if rng.random() < 0.1:
            parts.append("None")
    if rng.random() < 0.15:
        parts.insert(int(rng.integers(len(parts) + 1)), "...")
    if not parts:
        parts = ["None"] if rng.random() < 0.5 else ["..."]
    return ", ".join(parts)


def index(g):
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1)
    if x is None:
        return None
    s = g.val(x).shape
    u = rng.random()
    if u < 0.55:
        return f"{x}[{_index(g, s)}]", [x], ["index:basic"]
    ax = int(rng.integers(len(s)))
    if u < 0.8 and s[ax]:
        ids = rng.integers(-s[ax], s[ax], size=int(rng.integers(1, 5))).tolist()
        pre = ":, " * ax
        return f"{x}[{pre}np.array({ids})]", [x], ["index:gather"]
    k = int(rng.integers(1, len(s) + 1))
    mask = (rng.random(s[:k]) < 0.5).tolist()
    return f"{x}[np.array({mask}, dtype=bool)]", [x], ["index:mask"]


def update(g):
    rng = g.rng
    x = g.pick(lambda v: v.ndim >= 1 and v.size)
    if x is None:
        return None
    xv = g.val(x)
    idx = _index(g, xv.shape) if rng.random() < 0.6 else \
        f"np.array({rng.integers(-xv.shape[0], xv.shape[0], size=3).tolist()})"
    try:
        sub = xv[eval(idx, {"np": np})]
    except Exception:
        return None
    v = g.pick(lambda w: _bcast(w, sub) and np.broadcast_shapes(w.shape, sub.shape) == sub.shape
               and np.result_type(w, xv) == xv.dtype)
    v, uv = (v, [v]) if v and rng.random() < 0.6 else (_lit(rng, xv.dtype.kind), [])
    if rng.random() < 0.3 and "np.array" not in idx:
        return ["{t} = np.copy(" + x + ")", "{t}[" + idx + "] = " + v], [x] + uv, \
            ["update:setitem"]
    op = rng.choice(["set", "add", "mul", "min", "max"])
    return f"{x}.at[{idx}].{op}({v})", [x] + uv, [f"update:{op}"]


BODIES = {"f": ["{u} * 0.5 + np.sin({u})", "np.tanh({u}) + {w}", "{u} - 0.25 * {w}",
                "np.maximum({u}, {w})", "np.where({u} > 0, {u}, -{u} * 0.5)",
                "{u} * {u} * 0.1 + {w}", "{u} + np.mean({u}) * 0.1", "np.cos({u}) * {w}",
                "{u} * 0.9"],
          "c": ["{u} * 0.5 + {w}", "{u} * (0.5 - 0.25j)", "np.conj({u}) * 0.9 + {w}"],
          "i": ["({u} * 3 + {w}) % 7", "{u} + 1", "({u} ^ 5) - {w}", "np.maximum({u}, {w})"],
          "b": ["~{u}", "{u} ^ {w}", "np.logical_and({u}, {w})"]}


def _body(g, u, uval):
    kind = uval.dtype.kind if uval.dtype.kind in "fcib" else "f"
    w = g.pick(lambda v: _bcast(v, uval) and np.broadcast_shapes(v.shape, uval.shape)
               == uval.shape and np.result_type(v, uval) == uval.dtype)
    wt = w if w and g.rng.random() < 0.7 else ({"b": "True"}.get(kind) or _lit(g.rng, kind))
    tmpl = BODIES[kind][g.rng.integers(len(BODIES[kind]))]
    return tmpl.format(u=u, w=wt), [w] if wt == w else []


def control(g):
    rng = g.rng
    x = g.pick()
    xv = g.val(x)
    k = rng.integers(5)
    b1, u1 = _body(g, "u", xv)
    if k == 0:
        b2, u2 = _body(g, "u", xv)
        y = g.pick(lambda v: v.dtype.kind in "fi" and v.size) or x
        pred = f"np.sum({y}) > {rng.choice([0, 0.5, -1])}"
        return f"tj.cond({pred}, lambda u: {b1}, lambda u: {b2}, {x})", [x, y] + u1 + u2, \
            ["control:cond"]
    if k == 1:
        b2, u2 = _body(g, "u", xv)
        y = g.pick(lambda v: v.size and v.dtype.kind != "c")
        if y is None:
            return None
        return (f"tj.switch(np.argmax({y}), [lambda u: {b1}, lambda u: {b2}, lambda u: u], "
                f"{x})"), [x, y] + u1 + u2, ["control:switch"]
    if k == 2:
        n = int(rng.integers(0, 5))
        b1 = b1 if rng.random() < 0.7 or xv.dtype.kind not in "fi" else b1 + " + i"
        return f"tj.fori_loop(0, {n}, lambda i, u: {b1}, {x})", [x] + u1, ["control:fori"]
    if k == 3:
        n = int(rng.integers(0, 5))
        if xv.dtype.kind == "f" and rng.random() < 0.4:
            pred = f"(c[0] < 8) & (np.sum(np.abs(c[1])) < {rng.choice([1.0, 10.0, 50.0])})"
            return (f"tj.while_loop(lambda c: {pred}, lambda c: (c[0] + 1, "
                    f"(lambda u: {b1})(c[1]) * 1.5), (0, {x}))[1]"), [x] + u1, \
                ["control:while_data"]
        return (f"tj.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, "
                f"(lambda u: {b1})(c[1])), (0, {x}))[1]"), [x] + u1, ["control:while"]
    if xv.ndim == 0 or xv.shape[0] == 0:
        return None
    init = g.pick(lambda v: v.shape == xv.shape[1:] and v.dtype == xv.dtype)
    init = init or f"{x}[0] * 0"
    out = int(rng.integers(2))
    return (f"tj.scan(lambda u, r: ({b1.replace('{', '{{')} + r, u * 2), {init}, "
            f"{x}{', reverse=True' if rng.random() < 0.2 else ''})[{out}]"), \
        [x] + u1 + ([init] if init in g.env else []), ["control:scan"]


FAMILIES = [(unary, 20), (binary, 22), (intop, 5), (astype, 4), (where, 6), (reduce, 11),
            (cumulative, 3), (contract, 7), (structural, 14), (index, 8), (update, 6),
            (control, 5)]
# cumulative ops in big programs again since the cumprod JVP became a scan (549965b; it was
# O(n^2): finding "hang", seed 0 index 407, 16000 elements took 9 s), now an associative scan
# (0502945: the interpreter ran the sequential one step by step, fuzz 12004 #410)
BIG_FAMILIES = [(unary, 20), (binary, 22), (where, 5), (reduce, 12), (index, 4),
                (structural, 4), (astype, 2), (cumulative, 2)]


def candidate(g):
    from . import ops_more, ops_typed         # import this module's helpers
    fams = BIG_FAMILIES if g.big else FAMILIES + ops_more.FAMILIES + ops_typed.FAMILIES
    w = np.array([f[1] for f in fams], float)
    fn = fams[g.rng.choice(len(fams), p=w / w.sum())][0]
    return fn(g)
