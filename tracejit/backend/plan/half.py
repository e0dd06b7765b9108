"""float16 arithmetic in float32 registers (Graph -> Graph, backend only).

float16 is a storage type: NumPy's float16 ufunc loops convert each operand to float32,
compute in float32 and round the result to float16 (``HALF_add``: ``npy_float_to_half(
npy_half_to_float(a) + npy_half_to_float(b))``), once per operation. This pass writes that
into the graph the llvm backend plans: every elementwise equation (and ``reduce_max``/``min``)
with a float16 operand or result becomes ``convert`` of its float16 operands to float32, the same
primitive on float32, and a ``convert`` of each float16 result back to float16. The native
code then needs float16 only in loads, stores and ``convert`` (``emit/ops.py``:
``fpext``/``fptrunc``, F16C's ``vcvtph2ps``/``vcvtps2ph`` on x86), and every float16 value
is rounded exactly where NumPy rounds it, so fused chains stay bit for bit NumPy's: + - * /,
sqrt, comparisons, rounding, min/max and conversions are exact (a float32 result rounded to
float16 is the correctly rounded float16 result, 24 >= 2 * 11 + 2 bits); transcendentals and
``power`` are float32 functions rounded once, as NumPy's, and can differ from NumPy's where
the two float32 libraries differ by an ulp next to a float16 rounding boundary (counted in
tests/test_float16.py). float16 sums and products stay NumPy's (a fallback step): NumPy
accumulates a contiguous axis pairwise in float32 and rounds once, but rounds after every row
when it reduces across rows, so no one native loop reproduces it.

Invariant: graph inputs, outputs and constants keep their identity and type; equations without
float16 values are untouched; every new equation has the type its shape rule gives. The
interpreter never sees this rewrite (it evaluates float16 with NumPy, the oracle).
"""
from __future__ import annotations

import numpy as np

from ...ir import Eqn, Literal, Type, Var
from ...ops import elementwise as ew
from .lowering import ELEMENTWISE

HALF = np.dtype(np.float16)
_WIDE = np.dtype(np.float32)
_KEEP = ("convert", "bitcast_convert")       # native float16 rules (emit/ops.py)
_EXACT_REDUCTIONS = ("reduce_max", "reduce_min")


def _widens(eqn) -> bool:
    name = eqn.prim.name
    if name in _KEEP or (name not in ELEMENTWISE and name not in _EXACT_REDUCTIONS):
        return False
    return any(np.dtype(a.ty.dtype) == HALF for a in (*eqn.invars, *eqn.outvars))


def _wide(atom, eqns, source):
    """``atom`` as float32: a literal directly (exact), a var through a ``convert``."""
    if np.dtype(atom.ty.dtype) != HALF:
        return atom
    ty = Type(_WIDE, atom.ty.shape, atom.ty.weak)
    if isinstance(atom, Literal):
        return Literal(np.float32(atom.value), ty)
    out = Var(ty)
    eqns.append(Eqn(ew.convert_p, (atom,), (out,), {"dtype": _WIDE}, source))
    return out


def widen_half(graph):
    """``graph`` with float16 arithmetic done in float32 and rounded per operation (module
    docstring); the graph itself when nothing computes in float16."""
    if not any(_widens(e) for e in graph.eqns):
        return graph
    eqns = []
    for eqn in graph.eqns:
        if not _widens(eqn):
            eqns.append(eqn)
            continue
        ins = tuple(_wide(a, eqns, eqn.source) for a in eqn.invars)
        outs = tuple(Var(Type(_WIDE, v.ty.shape, v.ty.weak)) if np.dtype(v.ty.dtype) == HALF
                     else v for v in eqn.outvars)
        eqns.append(Eqn(eqn.prim, ins, outs, eqn.params, eqn.source))
        for wide, v in zip(outs, eqn.outvars):
            if wide is not v:
                eqns.append(Eqn(ew.convert_p, (wide,), (v,), {"dtype": HALF}, eqn.source))
    return graph.replace(eqns=eqns)
