"""Control flow that cannot run natively: the loop driven from Python, sub-graphs compiled.

``compiled_impl(eqn, compile_graph)`` replaces a control primitive's NumPy impl in a hybrid
program (see ``executable.py``, which passes its ``compile_graph``: this module imports no
compiler) when ``plan/partition.py``'s ``plan_subgraphs`` refused the equation (a sub-graph with
a NumPy fallback, a stack carried or returned by a sub-graph, an operand that is a strided
view...). Each sub-graph is compiled on first use (``compile_graph``) and called once per
iteration, so the semantics are the interpreter's (``ops/control.py``), including
``config.max_while_iterations`` and the stacks of ``while_record`` and of a scan of run-time
length (NumPy arrays here).
"""
from __future__ import annotations

import numpy as np

from ...config import config
from ...ops.control import stack_length


class _Lazy:
    def __init__(self, graph, compile_graph):
        self.graph, self.compile_graph, self.exe = graph, compile_graph, None

    def __call__(self, args):
        if self.exe is None:
            self.exe = self.compile_graph(self.graph)
        return self.exe([np.asarray(a, dtype=v.ty.dtype)
                         for a, v in zip(args, self.graph.invars)])


def _count_step(count):
    limit = config.max_while_iterations
    if limit is not None and count > limit:
        raise RuntimeError(f"while_loop exceeded config.max_while_iterations = {limit}")


def compiled_impl(eqn, compile_graph):
    """A replacement for ``eqn.prim.impl`` with sub-graphs compiled on first use by
    ``compile_graph`` (the caller's: ``Executable`` passes its own), or None."""
    name, p = eqn.prim.name, eqn.params
    if name == "cond":
        branches = [_Lazy(g, compile_graph) for g in p["branches"]]

        def run_cond(index, *ops, **_):
            i = int(np.clip(int(index), 0, len(branches) - 1))
            return branches[i](list(ops))
        return run_cond
    if name in ("while", "while_record"):
        return _while_impl(eqn, compile_graph)
    if name == "scan":
        return _scan_impl(eqn, compile_graph)
    return None


def _while_impl(eqn, compile_graph):
    p = eqn.params
    cond, body = _Lazy(p["cond"], compile_graph), _Lazy(p["body"], compile_graph)
    ncc, nbc = p["n_cond_consts"], p["n_body_consts"]
    record = eqn.prim.name == "while_record"
    nc = p["n_carry"] if record else len(p["body"].outvars)
    y_types = p["body"].out_types[nc:]

    def run_while(*args, **_):
        cc, bc, carry = list(args[:ncc]), list(args[ncc:ncc + nbc]), list(args[ncc + nbc:])
        rows = [[] for _ in y_types]
        count = 0
        while bool(cond(cc + carry)[0]):
            count += 1
            _count_step(count)
            outs = body(bc + carry)
            carry = outs[:nc]
            for r, y in zip(rows, outs[nc:]):
                r.append(y)
        carry = [np.asarray(c) for c in carry]
        if not record:
            return carry
        ys = [np.stack(r) if r else np.empty((0,) + t.shape, t.dtype)
              for r, t in zip(rows, y_types)]
        return carry + [np.ones(count, dtype=bool)] + ys
    return run_while


def _scan_impl(eqn, compile_graph):
    p = eqn.params
    body = _Lazy(p["body"], compile_graph)
    length, reverse, nc, ncarry = p["length"], p["reverse"], p["n_consts"], p["n_carry"]
    out_types = p["body"].out_types

    def run_scan(*args, **_):
        consts, carry = list(args[:nc]), list(args[nc:nc + ncarry])
        xs = [np.asarray(x) for x in args[nc + ncarry:]]
        n = stack_length(xs) if length is None else length
        ys = [np.empty((n,) + t.shape, dtype=t.dtype) for t in out_types[ncarry:]]
        for step in range(n):
            i = n - 1 - step if reverse else step
            outs = body(consts + carry + [x[i] for x in xs])
            carry = outs[:ncarry]
            for y, o in zip(ys, outs[ncarry:]):
                y[i] = o
        return carry + ys
    return run_scan
