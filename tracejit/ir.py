"""The IR: types, variables, literals, equations, graphs; the printer and the verifier.

Invariants:
- A ``Var`` is identified by object identity; it has no name. The printer picks names, so printing
  is deterministic and independent of how a graph was built.
- A ``Literal`` is a constant scalar (weakly typed when it came from a Python scalar); a large
  captured array is a named constant: a ``constvars`` entry with its value in ``constvals``.
- Equations are in a valid order (every operand defined before use); every var is defined once.
- Control-flow primitives carry sub-graphs as params; sub-graphs are closed (no free variables).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes


@dataclass(frozen=True)
class Type:
    """An abstract value: dtype and static shape; ``weak`` marks a Python-scalar origin.

    One exception to static shapes: a *stack* (``shape[0] is None``, printed ``f64[?,3]``) has
    a leading dimension known only at run time. Stacks are the per-step records of a
    ``while_record`` and the xs/ys of a scan of run-time length (``scan[length=None]``); they
    exist inside derivative graphs (a while loop's reverse-mode tape) and at the boundary
    between a vjp's forward and backward graphs, never in a user's function."""
    dtype: np.dtype
    shape: tuple = ()
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dynamic(self) -> bool:
        """True for a stack (leading dimension known only at run time)."""
        return bool(self.shape) and self.shape[0] is None

    @property
    def size(self) -> int:
        if self.dynamic:
            raise TypeError(f"the size of a stack {self} is known only at run time")
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def row(self) -> "Type":
        """The type of one step of a stack."""
        return Type(self.dtype, self.shape[1:], self.weak)

    def strong(self) -> "Type":
        return Type(self.dtype, self.shape) if self.weak else self

    def with_shape(self, shape) -> "Type":
        return Type(self.dtype, tuple(shape), self.weak)

    def with_dtype(self, dtype) -> "Type":
        return Type(np.dtype(dtype), self.shape, self.weak)

    def __str__(self):
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{dtypes.SHORT[self.dtype]}[{dims}]"      # weak types print like strong ones


class Var:
    """A typed SSA variable. Identity is the name; the printer assigns readable names."""
    __slots__ = ("ty", "hint")

    def __init__(self, ty: Type, hint: str | None = None):
        self.ty = ty
        self.hint = hint

    def __repr__(self):
        return f"Var({self.ty})"


class Literal:
    """A constant scalar operand printed inline."""
    __slots__ = ("value", "ty")

    def __init__(self, value, ty: Type):
        assert ty.shape == ()
        self.value = np.asarray(value, dtype=ty.dtype)[()]
        self.ty = ty

    def __repr__(self):
        return f"Literal({self.value!r}, {self.ty})"

    def __str__(self):
        v = self.value
        if self.ty.dtype == dtypes.bool_:
            return "True" if v else "False"
        if dtypes.is_complex(self.ty.dtype):
            text = repr(complex(v))
        elif dtypes.is_float(self.ty.dtype):
            text = repr(float(v))
        else:
            text = repr(int(v))
        return text if self.ty.dtype in (dtypes.float64, dtypes.int64, dtypes.bool_) \
            or self.ty.weak else f"{text}:{dtypes.SHORT[self.ty.dtype]}"


Atom = Any  # Var | Literal

# Every primitive by name (core.Primitive registers itself): what a graph's equations print
# and what a serialised graph names (serialize.py reads graphs back through it).
PRIMITIVES: dict = {}


@dataclass(eq=False)
class Eqn:
    """``outvars = prim[params] invars``; ``source`` is the user's 'file.py:line' if known."""
    prim: Any
    invars: tuple
    outvars: tuple
    params: dict = field(default_factory=dict)
    source: str | None = None


@dataclass(eq=False)
class Graph:
    """A closed graph: inputs, constants, equations in order, outputs (vars or literals)."""
    invars: tuple
    outvars: tuple
    eqns: list
    constvars: tuple = ()
    constvals: tuple = ()
    # (input index, output index): the traced function writes that output back into that
    # argument (NumPy mutation of the caller's array); set on a traced function's graph only
    writes: tuple = ()

    @property
    def in_types(self):
        return tuple(v.ty for v in self.invars)

    @property
    def out_types(self):
        return tuple(v.ty for v in self.outvars)

    def __str__(self):
        return print_graph(self)

    def replace(self, **changes) -> "Graph":
        fields = dict(invars=self.invars, outvars=self.outvars, eqns=self.eqns,
                      constvars=self.constvars, constvals=self.constvals, writes=self.writes)
        fields.update(changes)
        return Graph(**fields)


# ---------------------------------------------------------------------------------------------
# printer

class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.count = 0

    def _fresh(self) -> str:
        n, s = self.count, ""
        self.count += 1
        while True:
            s = chr(ord("a") + n % 26) + s
            n = n // 26 - 1
            if n < 0:
                break
        return s if s not in ("if", "in", "is", "or", "as") else s + "_"

    def __call__(self, atom) -> str:
        if isinstance(atom, Literal):
            return str(atom)
        key = id(atom)
        if key not in self.names:
            self.names[key] = self._fresh()
        return self.names[key]

    def bind(self, var) -> str:
        return f"{self(var)}:{var.ty}"


def _format_param(value, namer, indent) -> str:
    if isinstance(value, Graph):
        return "\n" + _print_graph(value, namer, indent + 4)
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, Graph) for v in value):
        return "(" + ",".join("\n" + _print_graph(g, namer, indent + 4) for g in value) + ")"
    if isinstance(value, Type):
        return str(value)
    if isinstance(value, np.dtype):
        return dtypes.SHORT.get(value, str(value))
    if isinstance(value, tuple):
        return "(" + ",".join(_format_param(v, namer, indent) for v in value) + \
            ("," if len(value) == 1 else "") + ")"
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return repr(value)


def _print_graph(g: Graph, namer: _Namer, indent: int, provenance=False) -> str:
    pad = " " * indent
    ins = " ".join(namer.bind(v) for v in g.invars)
    consts = " ".join(namer.bind(v) for v in g.constvars)
    head = f"{pad}{{ {ins}" + (f" ; consts {consts}" if consts else "") + " ->"
    lines = [head.replace("{  ", "{ ")]
    for eqn in g.eqns:
        outs = " ".join(namer.bind(v) for v in eqn.outvars)
        params = " ".join(f"{k}={_format_param(v, namer, indent)}"
                          for k, v in sorted(eqn.params.items()))
        args = " ".join(namer(a) for a in eqn.invars)
        text = f"{pad}    {outs + ' = ' if outs else ''}{eqn.prim.name}" + \
            (f"[{params}]" if params else "")
        text += f" {args}" if args else ""
        if provenance and eqn.source:
            text += f"    # {eqn.source}"
        lines.append(text)
    ret = f"{pad}  return {' '.join(namer(v) for v in g.outvars)}"
    if g.writes:
        ret += " ; write " + ", ".join(f"{namer(g.invars[i])} <- {namer(g.outvars[k])}"
                                       for i, k in g.writes)
    lines.append(ret + " }")
    return "\n".join(lines)


def print_graph(g: Graph, provenance: bool = False) -> str:
    """The compact, deterministic text form of a graph (names a, b, c, ... in order of binding)."""
    return _print_graph(g, _Namer(), 0, provenance)


# ---------------------------------------------------------------------------------------------
# verifier

class IRError(Exception):
    """A malformed graph: a bug in a transform or pass, never a user error."""


def verify(g: Graph, where: str = "") -> None:
    """Check SSA, definition-before-use and every equation's types against its shape rule."""
    defined: set[int] = set()
    ctx = f" (after {where})" if where else ""

    def define(v):
        if not isinstance(v, Var):
            raise IRError(f"binder {v!r} is not a Var{ctx}")
        if id(v) in defined:
            raise IRError(f"{v!r} defined twice{ctx}")
        defined.add(id(v))

    def use(a, eqn_text):
        if isinstance(a, Literal):
            return
        if not isinstance(a, Var) or id(a) not in defined:
            raise IRError(f"{a!r} used before definition in {eqn_text}{ctx}\n{print_graph(g)}")

    if len(g.constvars) != len(g.constvals):
        raise IRError("constvars and constvals differ in length")
    for v in (*g.invars, *g.constvars):
        define(v)
    for c, val in zip(g.constvars, g.constvals):
        shape = np.shape(val)[:1] + c.ty.shape[1:] if c.ty.dynamic else c.ty.shape
        if np.shape(val) != shape or np.asarray(val).dtype != c.ty.dtype:
            raise IRError(f"constant value {np.shape(val)} {np.asarray(val).dtype} does not match "
                          f"{c.ty}{ctx}")
    for eqn in g.eqns:
        for a in eqn.invars:
            use(a, eqn.prim.name)
        try:
            expected = eqn.prim.abstract_eval([a.ty for a in eqn.invars], **eqn.params)
        except Exception as e:  # noqa: BLE001 - reported as an IR error with context
            raise IRError(f"shape rule of {eqn.prim.name} failed{ctx}: {e}") from e
        got = [v.ty for v in eqn.outvars]
        if [t.strong() for t in expected] != [t.strong() for t in got]:
            raise IRError(f"{eqn.prim.name}: outputs typed {list(map(str, got))} but the shape rule "
                          f"gives {list(map(str, expected))}{ctx}")
        for v in eqn.outvars:
            define(v)
    for a in g.outvars:
        use(a, "return")
