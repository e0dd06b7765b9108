"""The reference interpreter: evaluate a graph with NumPy, one primitive at a time.

It is the oracle every other backend and every transform is tested against. Under
``config.debug_nans`` it raises at the first equation whose result contains a NaN that none of
its inputs had, naming the primitive and the user's source line.
"""
from __future__ import annotations

import numpy as np

from .config import config
from .core import eval_graph, literal_value, outside_trace
from .errors import NaNError
from .ir import Graph, Literal, print_graph


def _has_nan(x) -> bool:
    x = np.asarray(x)
    return x.dtype.kind in "fc" and bool(np.isnan(x).any())


def _check_nans(eqn, outs, env_in):
    if any(_has_nan(o) for o in outs) and not any(_has_nan(literal_value(a)) for a in env_in):
        where = f" (from {eqn.source})" if eqn.source else ""
        raise NaNError(f"debug_nans: the primitive {eqn.prim.name!r}{where} produced a NaN from "
                       f"inputs without NaN")


def run(graph: Graph, args) -> list[np.ndarray]:
    """Evaluate ``graph`` on arrays (already converted to the graph's input dtypes)."""
    if config.debug_nans:
        with outside_trace():                # concrete evaluation, even inside a trace
            return _run_checked(graph, args)
    outs = eval_graph(graph, list(args))
    return [np.asarray(literal_value(o), dtype=v.ty.dtype) for o, v in zip(outs, graph.outvars)]


def _run_checked(graph, args):
    env = {}
    for v, x in zip(graph.invars, args):
        env[id(v)] = x
    for v, x in zip(graph.constvars, graph.constvals):
        env[id(v)] = x

    def read(a):
        return a.value if isinstance(a, Literal) else env[id(a)]

    for eqn in graph.eqns:
        ins = [read(a) for a in eqn.invars]
        outs = eqn.prim.bind(*ins, **eqn.params)
        outs = outs if eqn.prim.multiple_results else [outs]
        _check_nans(eqn, outs, ins)
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [np.asarray(read(a), dtype=a.ty.dtype) for a in graph.outvars]


__all__ = ["run", "print_graph"]
