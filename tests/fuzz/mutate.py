"""Mutating programs: NumPy code that writes into arrays, with NumPy itself as the oracle.

A mutating program (``Program.mutating``) writes into its arguments, into arrays it creates
(``np.zeros``, ``np.empty_like`` + a fill, ``np.array(x)``, arithmetic) and through views of
them (basic indexing, ``.T``, ``transpose``/``swapaxes``/``moveaxis``, ``reshape``/``ravel``,
``squeeze``/``expand_dims``/``atleast_*d``, ``flip``, ``split`` pieces, read-only
``broadcast_to``/``diagonal``, views of views, several live views of one base) with
``x[idx] = v`` (basic, integer-array, concrete and traced boolean masks), augmented assignment
(``x += v``, ``x[i] *= v``), Python ``for`` loops (stencils, recurrences, accumulations,
iteration over rows), ``np.copyto``/``put``/``fill``/``fill_diagonal``/``putmask``/``place``
and ufuncs with ``out=`` (and ``where=``), mixing dtypes where NumPy casts; NumPy scalars from
reductions are ``+=``'d (a rebind). Now and then the last statement is one NumPy rejects (a
write into a read-only view, a cast ``same_kind`` refuses, an index out of range, a shape
mismatch): the program then raises, and tracejit must raise too (``oracle_mut``).

Validity: aliasing makes a statement's effect depend on every earlier one, so each candidate
is checked by running the *whole* program so far on fresh inputs with NumPy (``run_numpy``);
one that raises, warns about a complex-to-real cast or an invalid value (NaN, or a float
out of an integer's range cast to it) is dropped. ``Gen.env`` then holds the live objects of
that run (views stay views), from which later candidates pick their operands.

Statements that only write (no new variable) have the written variable as ``target`` and the
tag ``write``; the minimiser deletes them without substituting anything.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import gen, ops, ops_typed
from .gen import DTYPES, MAX_ELEMS, Program, Stmt, _lit


def run_numpy(prog_or_stmts, args, seed, call=0):
    """Run statements (a Program's or a list) on fresh inputs; the final namespace. Raises what
    NumPy raises, and on an invalid value or a complex-to-real cast."""
    stmts = prog_or_stmts.stmts if isinstance(prog_or_stmts, Program) else prog_or_stmts
    ns = dict(gen.np_namespace(), **{a.name: gen.make_arg(a, seed, call) for a in args})
    src = gen.to_numpy_source("\n".join(ln for s in stmts for ln in s.lines))
    with np.errstate(all="ignore", invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        warnings.simplefilter("error", DeprecationWarning)
        exec(compile(src, "<fuzz-mut>", "exec"), ns)
    return ns


def _frozen(v):
    a = np.asarray(v)
    a.flags.writeable = False
    return a


def _is_array(v):
    return isinstance(v, np.ndarray)


def _writable(v):
    return isinstance(v, np.ndarray) and v.flags.writeable


def _fits(vshape, shape):
    """Whether a value of ``vshape`` broadcasts to exactly ``shape`` (an assignment's rule)."""
    try:
        return np.broadcast_shapes(vshape, shape) == tuple(shape)
    except ValueError:
        return False


class MutGen(gen.Gen):
    """``Gen`` for mutating programs: candidates are validated by re-running the program."""

    def names(self, pred=lambda v: True):
        """Variables whose live value satisfies ``pred``; a Python scalar argument is seen
        as a read-only 0-d array (it cannot be written into)."""
        return [n for n, v in self.env.items() if pred(v if hasattr(v, "dtype") else
                                                       _frozen(v))]

    def try_add(self, cand, must_raise=False) -> bool:
        """Keep candidate ``(body, uses, tags[, target])`` if the program with it runs (or,
        with ``must_raise``, if it raises in this statement)."""
        if cand is None:
            return False
        body, uses, tags = cand[:3]
        target = cand[3] if len(cand) > 3 else f"v{len(self.stmts)}"
        lines = [f"{target} = {body}"] if isinstance(body, str) else \
            [ln.replace("{t}", target) for ln in body]
        stmt = Stmt(target, lines, sorted(set(u for u in uses if u)), list(tags))
        try:
            ns = run_numpy(self.stmts + [stmt], self.args, self.seed)
        except Exception:                       # noqa: BLE001 - NumPy decides validity
            if must_raise:
                stmt.tags.append("raises")
                self.stmts.append(stmt)
                return True
            return False
        if must_raise:
            return False
        v = ns.get(target)
        if not hasattr(v, "dtype") and not (target in self.env and len(cand) > 3):
            return False                         # a new variable must be an array or scalar
        names = list(self.env) + ([target] if target not in self.env else [])
        if not all(self._acceptable(ns[n]) for n in names):
            return False
        self.env = {n: ns[n] for n in names}
        vv = np.asarray(v)
        stmt.shape, stmt.dtype = vv.shape, str(vv.dtype)
        self.stmts.append(stmt)
        return True

    @staticmethod
    def _acceptable(v) -> bool:
        """Finite values of a supported dtype and a sane size and magnitude (no NaN or inf:
        the plain programs cover non-finite values; here they would only turn into invalid
        casts)."""
        if not hasattr(v, "dtype"):
            return True                          # a Python scalar argument
        v = np.asarray(v)
        if str(v.dtype) not in DTYPES or v.size > MAX_ELEMS or v.ndim > 5:
            return False
        if v.dtype.kind in "fc" and v.size:
            return bool(np.isfinite(v).all()) and float(np.max(np.abs(v))) <= 1e12
        return True


# ---------------------------------------------------------------------------------------------
# indices and right-hand sides

def _int_index(g, n, unique):
    """Concrete integer indices for an axis of length n (negative ones too)."""
    k = int(g.rng.integers(1, min(n, 4) + 1)) if unique else int(g.rng.integers(1, 5))
    ids = g.rng.choice(n, k, replace=False) if unique else g.rng.integers(0, n, k)
    return [int(i) - n if g.rng.random() < 0.3 else int(i) for i in ids]


def _write_index(g, x, repeats_ok=False, traced_mask=True):
    """An index to write through: basic, an integer array on some axis, a concrete mask, a
    traced mask (setitem only: ``x[x > c] += v`` reads ``x[mask]``, refused by design), or a
    Python int argument."""
    rng, xv = g.rng, g.env[x]
    s = xv.shape
    if not s:
        return str(rng.choice(["...", "()"])), [], "0d"
    u = rng.random()
    if u < 0.45:
        return ops._index(g, s), [], "basic"
    ax = int(rng.integers(len(s)))
    if u < 0.65 and s[ax]:
        pre = "..., " if ax == len(s) - 1 and rng.random() < 0.3 else "".join([":, "] * ax)
        return f"{pre}np.array({_int_index(g, s[ax], not repeats_ok)})", [], "intarray"
    if u < 0.8:
        k = int(rng.integers(1, len(s) + 1))
        return f"np.array({(rng.random(s[:k]) < 0.5).tolist()}, dtype=bool)", [], "mask"
    if u < 0.9 and traced_mask and xv.dtype.kind in "fi":
        return f"{x} > {rng.choice([0, 0.5, -0.25])}", [x], "traced_mask"   # see setitem
    ints = [a.name for a in g.args if a.kind == "int"]
    if ints and rng.random() < 0.7:              # a traced Python int (may be out of range)
        n = str(rng.choice(ints))
        return n, [n], "traced_int"
    return (str(int(rng.integers(-s[0], s[0]))) if s[0] else ":"), [], "int"


def _value(g, shape, dtype):
    """A right-hand side that broadcasts to ``shape``: a variable (any dtype NumPy casts), an
    expression of one, or a weak literal."""
    rng = g.rng
    kind = np.dtype(dtype).kind
    # complex into a real array: NumPy warns only if an element is written (not for an empty
    # selection), tracejit refuses by design (a documented deviation): not generated
    y = g.pick(lambda v: _fits(v.shape, shape) and (v.dtype.kind != "c" or kind == "c"))
    if y is None or rng.random() < 0.3:
        if kind in "iufc" and rng.random() < 0.3:      # a NumPy scalar: stored as NumPy does
            return ops_typed.scalar_lit(rng, str(rng.choice(
                ["float32", "float64", "int8", "uint8", "int16", "int64"] if kind in "fc"
                else ["int8", "uint8", "int16", "int64", "float32", "float64"]))), []
        return ("True" if rng.random() < 0.5 else "False") if kind == "b" else \
            _lit(rng, kind), []
    u = rng.random()
    if kind in "iu" and np.asarray(g.val(y)).dtype.kind in "fc":
        # a float out of the integer range (a negative one into unsigned) casts to whatever
        # the C conversion gives on this machine (NumPy does not define it): kept in range
        return f"np.clip({y}, {0 if kind == 'u' else -100}, 100)", [y]
    if u < 0.5:
        return y, [y]
    lit = _lit(rng, "i" if kind in "ib" else kind)
    # (y - y.mean() is a float: into an integer array it would be the C conversion again)
    centred = f"{y} - {y}.mean()" if g.val(y).size and kind not in "iu" else f"{y} * 2"
    return rng.choice([f"{y} * {lit}", f"{y} + {lit}", f"np.abs({y})", f"-{y}",
                       centred]), [y]


def _sub(g, x, idx):
    """``x[idx]`` for a candidate index (None where NumPy rejects the index)."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(g.env[x][eval(idx, dict(gen.np_namespace(), **g.env))])
    except Exception:                            # noqa: BLE001
        return None


def _array_operand(g):
    """``(name, value)`` of an array variable (a Python scalar seen as a read-only 0-d array),
    or ``(None, None)``."""
    x = g.pick(_is_array)
    return (x, g.val(x)) if x is not None else (None, None)


# ---------------------------------------------------------------------------------------------
# the families: each returns (body, uses, tags[, target]) or None (see ops.py)

def create(g):
    """A local array: a creation function, a copy, or arithmetic (a fresh array)."""
    rng, (x, xv) = g.rng, _array_operand(g)
    if x is None:
        return None
    s, n = tuple(xv.shape), (xv.shape[0] if xv.ndim else 3)
    dt = rng.choice(["", ", dtype=np.float32", ", dtype=np.int64", ", dtype=np.int32",
                     ", dtype=np.complex128", ", dtype=bool", f", dtype={x}.dtype"])
    k = rng.integers(14)
    body = {0: f"np.zeros({s}{dt})", 1: f"np.ones({s}{dt})",
            2: f"np.full({s}, {_lit(rng, 'f')}{dt})", 3: f"np.zeros_like({x}{dt})",
            4: f"np.ones_like({x})", 5: f"np.full_like({x}, {_lit(rng, xv.dtype.kind)})",
            6: f"np.eye({n}{dt})", 7: f"np.identity({n})", 8: f"np.arange({n}{dt})",
            9: f"np.linspace({_lit(rng, 'f')}, 2.5, {n})", 10: f"np.tri({n}, k=-1{dt})",
            11: rng.choice([f"np.array({x})", f"np.copy({x})", f"{x}.copy()",
                            f"np.asarray({x})", f"np.array({x}, dtype=np.float32)"]),
            12: rng.choice([f"{x} * 1.0", f"{x} + 0", f"{x} * 2"]),
            13: None}[int(k)]
    tag = {11: "copy", 12: "arithmetic"}.get(int(k), body and body.split("(")[0])
    if body is None:                            # empty: undefined until filled, so fill now
        fill = rng.choice([f"{{t}}.fill({_lit(rng, 'i')})", f"np.copyto({{t}}, {x})",
                           f"{{t}}[...] = {x} * 0.5"])
        return ["{t} = np.empty_like(" + x + ")", fill], [x], ["mut:create:empty"]
    return body, [x], ["mut:create:" + tag]


def view(g):
    """A view of an array (of an argument, a local, or another view)."""
    rng, (x, xv) = g.rng, _array_operand(g)
    if x is None:
        return None
    nd, s = xv.ndim, xv.shape
    ax = int(rng.integers(-nd, nd)) if nd else 0
    n = xv.size
    div = int(rng.choice([d for d in range(1, n + 1) if n % d == 0] or [1]))
    other = int(rng.integers(nd)) if nd else 0
    pieces = int(rng.integers(1, 4))
    options = [
        ("basic", f"{x}[{ops._index(g, s)}]" if nd else f"{x}[...]"),
        ("int", f"{x}[{int(rng.integers(-s[0], s[0]))}]" if nd >= 2 and s[0] else None),
        ("ellipsis", f"{x}[..., {int(rng.integers(-s[-1], s[-1]))}]" if nd and s[-1] else None),
        ("T", f"{x}.T"),
        ("transpose", f"np.transpose({x}, {tuple(int(i) for i in rng.permutation(nd))})"),
        ("swapaxes", f"np.swapaxes({x}, {ax}, {other})" if nd >= 2 else None),
        ("moveaxis", f"np.moveaxis({x}, {ax}, {other})" if nd >= 2 else None),
        ("reshape", rng.choice([f"{x}.reshape({div}, -1)", f"np.reshape({x}, (-1,))",
                                f"{x}.reshape(-1, 1, {div})"]) if n else None),
        ("ravel", rng.choice([f"{x}.ravel()", f"np.ravel({x})"])),
        ("squeeze", f"np.squeeze({x})" if rng.random() < 0.5 else
         f"np.expand_dims({x}, {int(rng.integers(-nd - 1, nd + 1))})"),
        ("atleast", f"np.atleast_{rng.integers(1, 4)}d({x})"),
        ("flip", (f"np.flip({x}, {ax})" if rng.random() < 0.6 else f"np.flip({x})")
         if nd else None),
        ("fliplr", rng.choice([f"np.fliplr({x})", f"np.flipud({x})"]) if nd >= 2 else None),
        ("split", f"np.{rng.choice(['split', 'array_split'])}({x}, {pieces}, axis={ax})"
         f"[{int(rng.integers(pieces))}]" if nd else None),
        ("broadcast_to", f"np.broadcast_to({x}, {(2,) + s})"),
        ("diagonal", f"np.diagonal({x}, {int(rng.integers(-1, 2))})" if nd >= 2 else None),
        ("real", f"{x}.real" if xv.dtype.kind == "c" else None),
        ("reverse", f"{x}[::-1]" if nd else None),
        ("all", f"{x}[:]" if nd else None)]
    tag, body = options[int(rng.integers(len(options)))]
    if body is None:
        return None
    return body, [x], ["mut:view:" + tag]


def setitem(g):
    """``x[idx] = v``."""
    x = g.pick(lambda v: _writable(v) and (v.size or v.ndim == 0))
    if x is None:
        return None
    idx, ui, kind = _write_index(g, x)
    sub = _sub(g, x, idx)
    if sub is None:
        return None
    # unique integer indices (_write_index); under a traced mask mostly a scalar: an array
    # must have as many elements as the mask has True ones, which new inputs change
    shape = () if kind == "traced_mask" and g.rng.random() < 0.8 else sub.shape
    rhs, uv = _value(g, shape, g.env[x].dtype)
    return [f"{x}[{idx}] = {rhs}"], [x] + ui + uv, ["mut:setitem:" + kind, "write"], x


AUG = {"f": ["+=", "-=", "*=", "/=", "**="], "c": ["+=", "-=", "*=", "/="],
       "i": ["+=", "-=", "*=", "//=", "%=", "&=", "|=", "^=", "<<=", ">>="],
       "b": ["&=", "|=", "^=", "+="]}


def augassign(g):
    """``x op= v`` on a whole array, a view, an indexed part (``x[1:] *= 2``, repeated
    indices included: no accumulation), or a NumPy scalar (a rebind)."""
    rng = g.rng
    x = g.pick(lambda v: _writable(v) or isinstance(v, np.generic))
    if x is None:
        return None
    xv = g.env[x]
    kind = xv.dtype.kind
    op = str(rng.choice(AUG.get(kind, AUG["f"])))
    part, ui, where = "", [], "whole"
    if _is_array(xv) and xv.ndim and xv.size and rng.random() < 0.55:
        idx, ui, where = _write_index(g, x, repeats_ok=True, traced_mask=False)
        part = f"[{idx}]"
    sub = _sub(g, x, part[1:-1]) if part else np.asarray(xv)
    if sub is None:
        return None
    if op == "**=":
        rhs, uv = "2", []
    elif op in ("<<=", ">>="):
        rhs, uv = str(int(rng.integers(0, 3))), []
    else:
        rhs, uv = _value(g, sub.shape, xv.dtype)
    if op in ("//=", "%=") and rhs.lstrip("-").isdigit() and int(rhs) == 0:
        rhs = "3"
    return [f"{x}{part} {op} {rhs}"], [x] + ui + uv, \
        [f"mut:aug:{op}", f"mut:aug:{where}", "write"], x


def inplace_fn(g):
    """NumPy's in-place functions and ufuncs with ``out=`` (``where=`` too)."""
    rng = g.rng
    x = g.pick(lambda v: _writable(v) and v.size)
    if x is None:
        return None
    xv = g.env[x]
    s, kind = xv.shape, xv.dtype.kind
    k = int(rng.integers(8))
    src, us = _value(g, s, xv.dtype)
    mask = f"np.array({(rng.random(s) < 0.5).tolist()}, dtype=bool)"
    if rng.random() < 0.3 and kind in "fi":
        mask = f"{x} > 0"
    if k == 0:
        where = f", where={mask}" if rng.random() < 0.3 else ""
        line = f"np.copyto({x}, {src}{where})"
    elif k == 1:
        ids = _int_index(g, xv.size, unique=True)
        vals, us = _value(g, (len(ids),), xv.dtype)
        line = rng.choice([f"np.put({x}, {ids}, {vals})", f"{x}.put({ids}, {vals})"])
    elif k == 2:
        lit = "True" if kind == "b" else _lit(rng, kind)
        s0 = g.pick(lambda v: isinstance(v, np.generic) and v.dtype.kind in "fi")
        line = f"{x}.fill({s0 if s0 and kind in 'fc' and rng.random() < 0.5 else lit})"
        us = [s0] if s0 and s0 in line else []
    elif k == 3 and xv.ndim >= 2 and len(set(s)) == 1 or k == 3 and xv.ndim == 2:
        v, us = (_value(g, (min(s),), xv.dtype) if rng.random() < 0.5 else (_lit(rng, kind), []))
        wrap = ", wrap=True" if rng.random() < 0.3 else ""
        line = f"np.fill_diagonal({x}, {v}{wrap})"
    elif k == 4:
        line = f"np.putmask({x}, {mask}, {src})"
    elif k == 5:
        n = int(rng.integers(1, 4))
        vals, us = _value(g, (n,), xv.dtype)
        line = f"np.place({x}, np.array({(rng.random(s) < 0.5).tolist()}, dtype=bool), " \
               f"{vals if vals.isidentifier() or '(' in vals else f'[{vals}]'})"
    else:
        y = g.pick(lambda v: _fits(v.shape, s))
        if y is None:
            return None
        fn = str(rng.choice(["add", "subtract", "multiply", "maximum", "negative", "sin",
                             "abs", "square"]))
        unary = fn in ("negative", "sin", "abs", "square")
        ins = y if unary else f"{y}, {src if rng.random() < 0.5 else x}"
        where = f", where={mask}" if rng.random() < 0.3 else ""
        line = f"np.{fn}({ins}, out={x}{where})"
        us = us + [y]
    return [line], [x] + us + ([x] if f"{x} >" in line else []), \
        ["mut:fn:" + line.split("(")[0].replace(x, "x"), "write"], x


def loop(g):
    """A Python ``for`` loop writing into arrays: a stencil, a recurrence, an accumulation,
    an iteration over rows (views)."""
    rng = g.rng
    a = g.pick(lambda v: _writable(v) and v.ndim >= 1 and v.shape[0] >= 3 and
               v.dtype.kind in "fc")
    if a is None:
        return None
    av = g.env[a]
    k = int(rng.integers(5))
    T = int(rng.integers(1, 4))
    if k == 0:
        b = g.pick(lambda v: _writable(v) and v.shape == av.shape and v is not av and
                   not np.shares_memory(v, av) and v.dtype.kind == av.dtype.kind)
        new = [] if b is not None else \
            ["{t} = " + rng.choice([f"np.zeros_like({a})", f"np.copy({a})", f"{a} * 1.0"])]
        c = rng.choice(["0.33", "0.25", "0.5"])
        lines = new + [f"for _ in range({T}):",
                       f"    {b or '{t}'}[1:-1] = {c} * ({a}[:-2] + {a}[1:-1] + {a}[2:])",
                       f"    {a}[1:-1] = {b or '{t}'}[1:-1]" if rng.random() < 0.5 else
                       f"    {a}[1:-1] = {c} * ({b or '{t}'}[:-2] + {b or '{t}'}[1:-1] + "
                       f"{b or '{t}'}[2:])"]
        if new:                                  # defines the partner array: a new variable
            return lines, [a], ["mut:loop:stencil"]
        return lines, [a, b], ["mut:loop:stencil", "write"], a
    n = av.shape[0]
    if k == 1:
        c = rng.choice(["0.5", "-0.25", "0.9"])
        op = rng.choice(["+=", "-="]) if rng.random() < 0.5 else "="
        rhs = f"{c} * {a}[i - 1]" if op != "=" else f"{a}[i] + {c} * {a}[i - 1]"
        return [f"for i in range(1, {n}):", f"    {a}[i] {op} {rhs}"], [a], \
            ["mut:loop:recurrence", "write"], a
    if k == 2:
        return ["{t} = np.zeros_like(" + a + "[0])", f"for i in range({n}):",
                "    {t} += " + a + "[i]" + rng.choice(["", " * i", " ** 2"])], [a], \
            ["mut:loop:accumulate"]
    if k == 3:
        return ["{t} = " + a + "[0].sum()", f"for i in range(1, {n}):",
                "    {t} += " + a + "[i].sum() * " + _lit(rng, "f")], [a], \
            ["mut:loop:scalar_accumulate"]
    body = rng.choice(["row += 1", "row *= 0.5", "row[...] = row[::-1]", "row[0] = row.sum()"
                       if av.ndim >= 2 else "row += 2"])
    if av.ndim < 2:
        return None
    return [f"for row in {a}:", f"    {body}"], [a], ["mut:loop:rows", "write"], a


def scalar(g):
    """A NumPy scalar from a reduction or integer indexing, or ``s += v`` on one (a rebind,
    with NumPy's scalar promotion)."""
    rng = g.rng
    s = g.pick(lambda v: isinstance(v, np.generic))
    if s is not None and rng.random() < 0.5:
        rhs, uv = _value(g, (), g.env[s].dtype) if rng.random() < 0.5 else (_lit(rng, "f"), [])
        op = rng.choice(["+=", "*=", "-="])
        return [f"{s} {op} {rhs}"], [s] + uv, ["mut:scalar:aug", "write"], s
    x = g.pick(lambda v: _is_array(v) and v.size)
    if x is None:
        return None
    xv = g.val(x)
    idx = ", ".join(str(int(rng.integers(-d, d))) for d in xv.shape)
    body = rng.choice([f"{x}.sum()", f"np.max({x})" if xv.dtype.kind != "c" else f"{x}.sum()",
                       f"{x}.mean()", f"{x}.astype(np.int64).sum()", f"{x}[{idx}]"])
    tag = "index" if body.startswith(f"{x}[") else body.split("(")[0].replace(x, "x")
    return body, [x], ["mut:scalar:" + tag]


def alias(g):
    """``y = x`` (the same array), or ``x = x * 2`` (a rebind: later writes no longer reach the
    old array)."""
    x = g.pick(_is_array)
    if x is None:
        return None
    if g.rng.random() < 0.5:
        return x, [x], ["mut:alias"]
    return [f"{x} = {x} {g.rng.choice(['* 2', '+ 1', '- 0.5'])}"], [x], \
        ["mut:rebind", "write"], x


def compute(g):
    """An ordinary value statement (ops.py families) feeding the writes."""
    fams = [ops.unary, ops.binary, ops.binary, ops.reduce, ops.where, ops.astype,
            ops_typed.npscalar, ops_typed.narrow_pyint, ops_typed.reduce_dtype]
    return fams[int(g.rng.integers(len(fams)))](g)


def raising(g):
    """A last statement NumPy rejects: tracejit must raise too."""
    rng, (x, xv) = g.rng, _array_operand(g)
    if x is None:
        return None
    s = xv.shape
    lines = [f"np.broadcast_to({x}, {(2,) + s})[...] = 1",
             f"np.diagonal({x})[...] = 0" if xv.ndim >= 2 else f"{x}[{s[0] if s else 1}] = 0",
             f"{x} /= 2" if xv.dtype.kind in "ib" else f"{x} += 1j",
             f"{x}[{s[0] if s else 0}:] = np.ones({(s[0] if s else 0) + 2})",
             f"{x}[{s[0] if s else 1}] = 1",
             f"np.copyto({x}, {x} * 0.5)" if xv.dtype.kind in "ib" else
             f"np.copyto({x}, {x} * 1j)",
             f"{x}.reshape({xv.size + 1})",
             f"np.put({x}, [{xv.size + 1}], 0)"]
    ro = g.pick(lambda v: _is_array(v) and not v.flags.writeable)
    if ro is not None:
        lines.append(f"{ro}[...] = 0")
    line = lines[int(rng.integers(len(lines)))]
    return [line], [x], ["mut:raise", "write"], x


FAMILIES = [(create, 10), (view, 16), (setitem, 16), (augassign, 14), (inplace_fn, 9),
            (loop, 6), (scalar, 5), (alias, 3), (compute, 14)]


def candidate(g):
    w = np.array([f[1] for f in FAMILIES], float)
    return FAMILIES[g.rng.choice(len(FAMILIES), p=w / w.sum())][0](g)


def generate(seed: int, draw=candidate) -> Program:
    """The mutating program for ``seed`` (deterministic); ``draw(g)`` proposes statements."""
    g = MutGen(seed, big=False)
    g.make_args()
    if all(a.kind != "array" or not a.shape for a in g.args) and g.rng.random() < 0.75:
        g.args, g.env = [], {}                   # all 0-d: rarer than in plain programs
        g.make_args()
    if not any(a.kind == "array" for a in g.args):
        g.args[0] = gen.Arg("a0", "array", "float64", (4,))
        g.env["a0"] = gen.make_arg(g.args[0], seed)
    n_stmts = int(g.rng.integers(3, 12))
    tries = 0
    while len(g.stmts) < n_stmts and tries < 80:
        tries += 1
        with warnings.catch_warnings():          # the families' own NumPy look-aheads
            warnings.simplefilter("ignore")
            g.try_add(draw(g))
    if g.rng.random() < 0.08:
        for _ in range(5):
            if g.try_add(raising(g), must_raise=True):
                break
    return Program(seed, g.args, g.stmts, pick_outputs(g), [], False, mutating=True)


def pick_outputs(g) -> list:
    """0-3 variables (arrays, views, scalars, arguments themselves) to return."""
    rng = g.rng
    names = [n for n in g.env if hasattr(g.env[n], "dtype") or not n.startswith("a")]
    if not names or rng.random() < 0.05:
        return []
    k = min(len(names), int(rng.integers(1, 4)))
    w = np.arange(1, len(names) + 1, dtype=float)
    return [str(n) for n in rng.choice(names, k, replace=False, p=w / w.sum())]


def make_program(seed: int, kind: str = "plain") -> Program:
    """Program ``seed`` of a campaign of ``kind``: plain, mutating, control (gen_control.py),
    selecting (selecting.py), or mixed (10% control, the others half plain, half mutating: a separate draw, so that
    the plain and mutating programs of a mixed seed are those they were before control)."""
    if kind == "mixed":
        kind = "mutating" if np.random.default_rng([seed, 11]).random() < 0.5 else "plain"
        if np.random.default_rng([seed, 12]).random() < 0.1:
            kind = "control"
    if kind == "control":
        from .gen_control import generate as generate_control
        return generate_control(seed)
    if kind == "selecting":
        from . import selecting
        return selecting.generate(seed)
    return generate(seed) if kind == "mutating" else gen.generate(seed)
