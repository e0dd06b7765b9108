"""Control flow on the llvm backend: sub-graphs compiled natively, the loop driven from Python.

``cond``, ``while`` and ``scan`` equations run as fallback steps, but instead of interpreting
their sub-graphs with NumPy (the primitive's reference impl) each sub-graph is compiled once,
lazily on first use, with ``compile_graph``; the loop itself costs one native call per iteration
(a few microseconds). Native loops (the loop inside the kernel) are future work.
"""
from __future__ import annotations

import numpy as np

from ..config import config


class _Lazy:
    def __init__(self, graph):
        self.graph, self.exe = graph, None

    def __call__(self, args):
        if self.exe is None:
            from .executable import compile_graph
            self.exe = compile_graph(self.graph)
        return self.exe([np.asarray(a, dtype=v.ty.dtype)
                         for a, v in zip(args, self.graph.invars)])


def compiled_impl(eqn):
    """A replacement for ``eqn.prim.impl`` with compiled sub-graphs, or None."""
    name, p = eqn.prim.name, eqn.params
    if name == "cond":
        branches = [_Lazy(g) for g in p["branches"]]

        def run_cond(index, *ops, **_):
            i = int(np.clip(int(index), 0, len(branches) - 1))
            return branches[i](list(ops))
        return run_cond
    if name == "while":
        cond, body = _Lazy(p["cond"]), _Lazy(p["body"])
        ncc, nbc = p["n_cond_consts"], p["n_body_consts"]

        def run_while(*args, **_):
            cc, bc, carry = list(args[:ncc]), list(args[ncc:ncc + nbc]), list(args[ncc + nbc:])
            limit, count = config.max_while_iterations, 0
            while bool(cond(cc + carry)[0]):
                count += 1
                if limit is not None and count > limit:
                    raise RuntimeError(f"while_loop exceeded config.max_while_iterations = "
                                       f"{limit}")
                carry = body(bc + carry)
            return [np.asarray(c) for c in carry]
        return run_while
    if name == "scan":
        body = _Lazy(p["body"])
        length, reverse, nc, ncarry = p["length"], p["reverse"], p["n_consts"], p["n_carry"]
        out_types = p["body"].out_types

        def run_scan(*args, **_):
            consts, carry = list(args[:nc]), list(args[nc:nc + ncarry])
            xs = [np.asarray(x) for x in args[nc + ncarry:]]
            ys = [np.empty((length,) + t.shape, dtype=t.dtype) for t in out_types[ncarry:]]
            for step in range(length):
                i = length - 1 - step if reverse else step
                outs = body(consts + carry + [x[i] for x in xs])
                carry = outs[:ncarry]
                for y, o in zip(ys, outs[ncarry:]):
                    y[i] = o
            return carry + ys
        return run_scan
    return None
