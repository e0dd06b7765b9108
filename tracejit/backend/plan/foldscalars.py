"""Scalars out of products (Graph -> Graph, backend only): ``(s * A) @ B`` becomes ``(A @ B) * s``.

A ``dot_general`` operand that is a scalar multiple of another array (``s * X``, ``X * s``,
``X / s``, ``-X``, nested, with ``s`` a literal or any rank-0 value, traced or constant, or a
broadcast of one) is replaced by ``X``, and the scalars are applied to the product instead, in
the order they were peeled (the left operand's innermost factor first). The planner then fuses
those equations, with whatever else consumes the product (``+ beta * C``, a bias), into the
matmul kernel's epilogue (``epilogue.py``): the scaled copy of an operand is never materialised
(when nothing else reads it, ``dce`` drops it) and the scaling costs one multiply per output
element, in registers.

Which products: real floating-point ``dot_general`` without batch axes and with at most one
free axis per side (2-D and matrix-vector products), i.e. those whose consumers the epilogue
planner can take. Integer products are left alone (no epilogue for them), as are complex ones
(the scaling would then cost a pass over the product instead of one over the operand).

Rounding contract: ``s * (A @ B)`` is ``(s * A) @ B`` up to rounding, the tolerance a product
already has (the kernel's summation order differs from NumPy's BLAS anyway); negation is exact.
Beyond rounding, the two differ only where the scaled terms are not finite: a product whose
unscaled value overflows (or underflows) where the scaled one would not, or the reverse, and a
traced scalar that is itself infinite or NaN, or a traced divisor that is zero (every element
of ``(inf * A) @ B`` is inf or NaN, but which ones differs from ``inf * (A @ B)``). Literal
scalars are moved only when that cannot happen (finite; a divisor nonzero). The interpreter
computes the graph as written; this rewrite runs only when the llvm backend plans a graph,
after any differentiation, so derivatives are the derivatives of the function as written.

Invariant: graph inputs, outputs and constants keep their identity; every new equation has the
type its primitive's shape rule gives.
"""
from __future__ import annotations

import numpy as np

from ...ir import Eqn, Literal, Var
from ...ops import elementwise as ew
from ...passes import dce

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _scalar(atom, producer, dtype):
    """The rank-0 atom behind ``atom`` if it is a scalar of ``dtype`` (a literal, a rank-0 var
    or a broadcast of one), else None."""
    if isinstance(atom, Var) and atom.ty.ndim:
        e = producer.get(id(atom))
        if e is None or e.prim.name != "broadcast_in_dim" or e.invars[0].ty.ndim:
            return None
        atom = e.invars[0]
    if np.dtype(atom.ty.dtype) != dtype or atom.ty.ndim:
        return None
    return atom


def _exact(prim, s) -> bool:
    """Whether moving ``prim`` by ``s`` onto the product changes at most rounding: a literal
    must be finite (a divisor nonzero too); a traced scalar is taken (module docstring)."""
    if not isinstance(s, Literal):
        return True
    v = complex(s.value.item())
    return np.isfinite(v) and (prim.name != "div" or v != 0)


def _peel(x, producer):
    """(X, factors): ``x`` is ``X`` scaled by ``factors`` [(prim, scalar or None)], innermost
    last; ``(x, [])`` when ``x`` is no scalar multiple."""
    factors = []
    while isinstance(x, Var) and id(x) in producer:
        e = producer[id(x)]
        name, ins = e.prim.name, e.invars
        dt = np.dtype(x.ty.dtype)
        if name == "neg":
            factors.append((ew.neg_p, None))
            x = ins[0]
            continue
        if name in ("mul", "div"):
            order = ((0, 1), (1, 0)) if name == "mul" else ((0, 1),)
            for i, j in order:
                s = _scalar(ins[j], producer, dt)
                if s is not None and isinstance(ins[i], Var) and ins[i].ty == x.ty and \
                        _exact(e.prim, s):
                    factors.append((e.prim, s))
                    x = ins[i]
                    break
            else:
                return x, factors
            continue
        return x, factors
    return x, factors


def _candidate(eqn) -> bool:
    if eqn.prim.name != "dot_general":
        return False
    (lc, rc), (lb, rb) = eqn.params["contract"], eqn.params["batch"]
    lhs, rhs = eqn.invars
    out = eqn.outvars[0]
    return (np.dtype(out.ty.dtype) in _FLOATS and not lb and not rb and
            lhs.ty.ndim - len(lc) <= 1 and rhs.ty.ndim - len(rc) <= 1 and
            all(isinstance(a, Var) for a in eqn.invars))


def fold_scalars(graph):
    """``graph`` with scalar factors of product operands moved onto the products (module
    docstring); the graph itself when no product has one."""
    producer = {id(e.outvars[0]): e for e in graph.eqns if len(e.outvars) == 1}
    eqns, changed = [], False
    for eqn in graph.eqns:
        if not _candidate(eqn):
            eqns.append(eqn)
            continue
        (a, fa), (b, fb) = (_peel(x, producer) for x in eqn.invars)
        factors = fa[::-1] + fb[::-1]
        if not factors:
            eqns.append(eqn)
            continue
        out = eqn.outvars[0]
        if any(prim.abstract_eval([out.ty] if s is None else [out.ty, s.ty]) != [out.ty]
               for prim, s in factors):
            eqns.append(eqn)                   # a scalar that would change the type: keep
            continue
        changed = True
        p = Var(out.ty)
        eqns.append(Eqn(eqn.prim, (a, b), (p,), eqn.params, eqn.source))
        for k, (prim, s) in enumerate(factors):
            q = out if k == len(factors) - 1 else Var(out.ty)
            eqns.append(Eqn(prim, (p,) if s is None else (p, s), (q,), {}, eqn.source))
            p = q
    if not changed:
        return graph
    return dce(graph.replace(eqns=eqns))
