"""Selection programs (``--programs selecting``): half are mutating programs (``mutate.py``,
checked against NumPy by ``oracle_mut.py``) whose statements are half drawn from the families
below, what users write with data-dependent selections and loops carrying arrays; the other
half plain programs (``gen.py``, llvm against the interpreter under the transform layers:
derivatives and vmap through selections) with a quarter of their statements from ``value``:

- ``mask_read``: ``x[x > c]`` (or ``x[m]`` of a mask over the leading axes, ``m`` computed from
  another array of the same shape) feeding a reduction (``sum``/``mean``/``max``/``min``/
  ``prod``/``any``/``all``, ``axis=0`` over selected rows), an elementwise expression reduced
  afterwards, a product of two selections of the same mask (``np.dot(x[m], y[m])``);
  ``max``/``min`` of an empty selection raise ValueError in NumPy and must in tracejit;
- ``mask_store``: the selection stored back: ``x[m] = f(x[m])``, ``x[m] += v``,
  ``y[m] = x[m] * 2``, ``x[m] = s`` with ``s`` a reduction of the selection;
- ``traced_slice``: slices whose bounds are traced Python-int arguments
  (``x[k:].sum()``, ``x[:k] = 0``, ``x[k:k + 2] *= 2``; ``k`` may be out of range, as NumPy
  allows for slices);
- ``overlap``: writes whose source overlaps the destination (``x[1:] += x[:-1]``,
  ``x[:-1] = x[1:] * 0.5``, ``np.add(x[1:], x[:-1], out=x[:-1])``), which NumPy buffers;
- ``carried``: loops carrying arrays: ``tj.fori_loop`` whose body updates the carry with
  ``.at[i].set/add`` or writes into it in place (a ``def`` body), a Python ``for`` over
  ``range`` rebinding ``y = y.at[i].add(...)``, a ``for`` writing ``y[i] = ...`` from the
  row before.

Selections are refused by tracejit where their count would be a shape (``len``, indexing
them, another mask): such statements are not generated; any that slip through are
refusals (``ConcretizationError``), listed apart by the oracle, never counted as findings.
"""
from __future__ import annotations

import numpy as np

from .gen import _lit
from .mutate import _is_array, _writable


def _float_array(g, writable=False, min_size=1):
    """A float (or int) array variable with at least ``min_size`` elements, or None."""
    def ok(v):
        return _is_array(v) and v.ndim >= 1 and v.size >= min_size and \
            v.dtype.kind in "fi" and (not writable or _writable(v))
    return g.pick(ok)


def _mask(g, x):
    """A traced mask over ``x``: ``x > c`` (``x``'s shape), or over its leading axis from a
    column (``x[:, 0] > c``) or another array of ``x``'s shape."""
    rng, xv = g.rng, g.val(x)
    c = rng.choice(["0", "0.5", "-0.25", "1"])
    u = rng.random()
    if xv.ndim >= 2 and u < 0.25:
        return f"{x}[:, {int(rng.integers(xv.shape[1]))}] > {c}", [x], "rows"
    y = g.pick(lambda v: _is_array(v) and v.shape == xv.shape and v.dtype.kind in "fi")
    if y is not None and y != x and u < 0.5:
        return f"{y} < {c}", [y], "other"
    return f"{x} > {c}", [x], "self"


def mask_read(g):
    """A selection ``x[m]`` reduced, combined elementwise then reduced, or dotted."""
    rng = g.rng
    x = _float_array(g)
    if x is None:
        return None
    m, um, how = _mask(g, x)
    sel = f"{x}[{m}]"
    red = str(rng.choice(["sum()", "mean()", "max()", "min()", "prod()", "any()", "all()"]))
    if how == "rows":
        red = str(rng.choice(["sum(axis=0)", "max(axis=0)", "mean(axis=0)", "sum()"]))
    k = int(rng.integers(5))
    if k == 0:
        body = f"{sel}.{red}"
    elif k == 1:
        body = f"np.{red.split('(')[0]}(" + rng.choice(
            [f"np.sin({sel})", f"{sel} * {_lit(rng, 'f')}", f"np.abs({sel}) + 1",
             f"{sel} ** 2"]) + (", axis=0)" if "axis" in red else ")")
    elif k == 2:
        y = g.pick(lambda v: _is_array(v) and v.shape == g.val(x).shape and
                   v.dtype.kind in "fi")
        if y is None:
            return None
        body = rng.choice([f"np.dot({x}[{m}], {y}[{m}])" if g.val(x).ndim == 1 and how != "rows"
                           else f"({x}[{m}] * {y}[{m}]).sum()",
                           f"({x}[{m}] - {y}[{m}]).max()" if how != "rows" else
                           f"({x}[{m}] + {y}[{m}]).sum(axis=0)"])
        return body, [x, y] + um, ["sel:read:pair"]
    elif k == 3:
        body = f"np.count_nonzero({m})" if rng.random() < 0.5 else f"{sel}.size"
    else:
        body = f"np.where({m}, {x}, 0).sum() - {sel}.sum()"
    return body, [x] + um, ["sel:read:" + red.split("(")[0]]


def mask_store(g):
    """The selection stored back into an array of the mask's shape."""
    rng = g.rng
    x = _float_array(g, writable=True)
    if x is None:
        return None
    m, um, how = _mask(g, x)
    sel = f"{x}[{m}]"
    k = int(rng.integers(5))
    if k == 0:
        rhs = rng.choice([f"{sel} * 2", f"np.sqrt(np.abs({sel}))", f"-{sel}", f"{sel} + 1"])
        if g.val(x).dtype.kind == "i" and "sqrt" in rhs:
            rhs = f"{sel} * 2"
        return [f"{x}[{m}] = {rhs}"], [x] + um, ["sel:store:map", "write"], x
    if k == 1:
        op = rng.choice(["+=", "-=", "*="])
        v = rng.choice(["1", "2", "0.5"] if g.val(x).dtype.kind == "f" else ["1", "2"])
        return [f"{x}[{m}] {op} {v}"], [x] + um, ["sel:store:aug", "write"], x
    if k == 2:
        y = g.pick(lambda v: _writable(v) and v.shape == g.val(x).shape and v is not g.env[x])
        if y is None:
            return None
        return [f"{y}[{m}] = {sel} * 2"], [x, y] + um, ["sel:store:other", "write"], y
    if k == 3 and how != "rows":
        red = rng.choice(["sum()", "max()", "mean()"]) if g.val(x).dtype.kind == "f" else \
            "sum()"
        return [f"{x}[{m}] = {sel}.{red}" if red == "sum()" else
                f"{x}[{m}] = {x}.{red}"], [x] + um, ["sel:store:reduced", "write"], x
    return [f"{x}[{m}] = 0"], [x] + um, ["sel:store:fill", "write"], x


def traced_slice(g):
    """Slices whose bounds are a traced Python-int argument."""
    rng = g.rng
    ints = [a.name for a in g.args if a.kind == "int"]
    if not ints:
        return None
    k = str(rng.choice(ints))
    x = _float_array(g)
    if x is None:
        return None
    u = int(rng.integers(4))
    if u == 0:
        part = rng.choice([f"{k}:", f":{k}", f"{k}:{k} + 2", f"-{k}:"])
        return f"{x}[{part}]." + rng.choice(["sum()", "sum(axis=0)", "any()"]), [x, k], \
            ["sel:slice:read"]
    if not _writable(g.env[x]):
        return None
    part = rng.choice([f"{k}:", f":{k}", f"{k}:{k} + 2"])
    if u == 1:
        return [f"{x}[{part}] = 0"], [x, k], ["sel:slice:fill", "write"], x
    if u == 2:
        return [f"{x}[{part}] *= 2"], [x, k], ["sel:slice:aug", "write"], x
    return [f"{x}[{part}] = {x}[{part}] * 0.5 + 1"], [x, k], ["sel:slice:map", "write"], x


def overlap(g):
    """Writes from an overlapping part of the same array (NumPy buffers them)."""
    rng = g.rng
    x = g.pick(lambda v: _writable(v) and v.ndim >= 1 and v.shape[0] >= 2 and
               v.dtype.kind in "fi")
    if x is None:
        return None
    lines = [f"{x}[1:] += {x}[:-1]", f"{x}[:-1] = {x}[1:] * 0.5", f"{x}[::-1] = {x} * 1",
             f"np.add({x}[1:], {x}[:-1], out={x}[:-1])", f"{x}[1:] = {x}[:-1] - 1",
             f"np.multiply({x}[:-1], 0.5, out={x}[1:])"]
    line = str(rng.choice(lines))
    if g.val(x).dtype.kind == "i" and ("0.5" in line):
        line = f"{x}[1:] += {x}[:-1]"
    return [line], [x], ["sel:overlap", "write"], x


def carried(g):
    """Loops carrying an array updated with ``.at[i]`` or in-place writes."""
    rng = g.rng
    x = g.pick(lambda v: _is_array(v) and v.ndim >= 1 and v.shape[0] >= 2 and
               v.dtype.kind == "f")
    if x is None:
        return None
    n = g.val(x).shape[0]
    c = rng.choice(["0.5", "-0.25", "0.9"])
    k = int(rng.integers(4))
    if k == 0:
        op = rng.choice(["set", "add"])
        return f"tj.fori_loop(1, {n}, lambda i, u: u.at[i].{op}(u[i - 1] * {c}), " \
            f"{x}.copy())", [x], ["sel:loop:fori_at"]
    if k == 1:
        return ["def _body{t}(i, u):", f"    u[i] = u[i - 1] * {c} + u[i]", "    return u",
                "{t} = tj.fori_loop(1, " + str(n) + ", _body{t}, " + x + " * 1.0)"], [x], \
            ["sel:loop:fori_write"]
    if k == 2:
        return ["{t} = " + x + " * 1.0", f"for i in range(1, {n}):",
                "    {t} = {t}.at[i].add({t}[i - 1] * " + c + ")"], [x], \
            ["sel:loop:for_at"]
    if not _writable(g.env[x]):
        return None
    return [f"for i in range(1, {n}):", f"    {x}[i] = {x}[i - 1] * {c} + {x}[i]"], [x], \
        ["sel:loop:for_write", "write"], x


FAMILIES = [(mask_read, 14), (mask_store, 12), (traced_slice, 8), (overlap, 6), (carried, 8)]


def candidate(g):
    """Half the statements from these families, half from mutate.py's."""
    from . import mutate
    if g.rng.random() < 0.5:
        return mutate.candidate(g)
    w = np.array([f[1] for f in FAMILIES], float)
    return FAMILIES[g.rng.choice(len(FAMILIES), p=w / w.sum())][0](g)


def value(g):
    """A plain-program statement through a selection (so that the oracle's transform layers,
    grad/jvp/vjp/jacobians/vmap, run through it): a selection read, or a local copy whose
    selection is mapped and stored back (``y = x * 1.0; y[y > c] = sin(y[y > c])``)."""
    rng = g.rng
    x = g.pick(lambda v: _is_array(v) and v.ndim >= 1 and v.size and v.dtype.kind == "f")
    if x is None:
        return None
    if rng.random() < 0.5:
        cand = mask_read(g)
        return None if cand is None or cand[0] is None else cand[:3]
    m, um, _ = _mask(g, x)
    m = m.replace(x, "{t}", 1) if m.startswith(x) else m
    fn = rng.choice(["np.sin({s})", "{s} ** 2", "{s} * {s}.sum()", "np.exp(-{s})",
                     "{s} + {s}.mean()"])
    sel = "{t}[" + m + "]"
    return ["{t} = " + x + " * 1.0", "{t}[" + m + "] = " + fn.format(s=sel)], [x] + um, \
        ["sel:value:store"]


def plain_candidate(g):
    """A plain program's statement: a quarter through a selection, the rest ops.py's."""
    from . import ops
    return value(g) if g.rng.random() < 0.25 else ops.candidate(g)


def generate(seed: int):
    """Program ``seed`` of ``--programs selecting``: half mutating programs with these
    families (checked against NumPy), half plain programs with ``value`` statements (checked
    llvm against the interpreter under transforms)."""
    from . import gen, mutate
    if np.random.default_rng([seed, 13]).random() < 0.5:
        return mutate.generate(seed, candidate)
    return gen.generate(seed, draw=plain_candidate)
