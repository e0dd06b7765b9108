"""Forward mode: the JVP transform of a graph.

``jvp_eval(graph, primals, tangents)`` walks the equations with two environments (primal values
and tangents) and applies each primitive's ``jvp`` rule. Rules call tracejit ops, so on tracers
the walk emits IR into the current trace (primal and tangent equations interleaved) and on arrays
it computes; applying it to a graph that is itself a derivative gives higher derivatives.

Invariants:
- A tangent known to be zero is ``Zero`` and costs nothing: an equation whose operands all have
  Zero tangents is evaluated as is and its results get Zero tangents (no rule is called).
- Integer and bool values never carry a tangent.
- Every equation emitted for equation E carries E's source line, tagged ``[jvp of prim]``, so
  ``debug_nans`` and the provenance printer point at the user's line.
"""
from __future__ import annotations

from ..ad_util import Zero, differentiable, instantiate, is_zero, tangent_type
from ..core import current_builder, make_graph
from ..errors import UnsupportedError
from ..ir import Graph, Literal


def _tag(source, what):
    if not source:
        return what
    return source if "[" in source else f"{source} [{what}]"


class _SourceTagger:
    """Sets the source of equations emitted into the current builder during one rule."""

    def __init__(self, eqn, what):
        self.eqn, self.what = eqn, what

    def __enter__(self):
        self.builder = current_builder()
        self.start = len(self.builder.eqns) if self.builder is not None else 0
        self.src = _tag(self.eqn.source, self.what)
        if self.builder is not None:
            self.saved, self.builder.source = self.builder.source, self.src
        return self

    def __exit__(self, *exc):
        if self.builder is not None:
            self.builder.source = self.saved
            for e in self.builder.eqns[self.start:]:      # also those of nested rules
                e.source = self.src
        return False


def jvp_eval(graph: Graph, primals, tangents):
    """(primal outputs, output tangents) of ``graph``; tangents may be ``Zero``."""
    penv, tenv = {}, {}

    def read(a):
        return (a, Zero(tangent_type(a.ty))) if isinstance(a, Literal) else \
            (penv[id(a)], tenv[id(a)])

    for v, x, t in zip(graph.invars, primals, tangents):
        penv[id(v)] = x
        tenv[id(v)] = t if differentiable(v.ty) and t is not None else Zero(tangent_type(v.ty))
    for v, x in zip(graph.constvars, graph.constvals):
        penv[id(v)], tenv[id(v)] = x, Zero(tangent_type(v.ty))
    for eqn in graph.eqns:
        ps, ts = zip(*[read(a) for a in eqn.invars]) if eqn.invars else ((), ())
        prim = eqn.prim
        if all(is_zero(t) for t in ts):
            outs = prim.bind(*ps, **eqn.params)
            outs = outs if prim.multiple_results else [outs]
            touts = [Zero(tangent_type(v.ty)) for v in eqn.outvars]
        else:
            if prim.jvp is None:
                raise UnsupportedError(f"differentiating {prim.name!r} is not supported (it has "
                                       f"no JVP rule){_at(eqn)}")
            with _SourceTagger(eqn, f"jvp of {prim.name}"):
                outs, touts = prim.jvp(list(ps), list(ts), **eqn.params)
            if not prim.multiple_results:
                outs, touts = [outs], [touts]
        for v, x, t in zip(eqn.outvars, outs, touts):
            penv[id(v)] = x
            tenv[id(v)] = t if differentiable(v.ty) else Zero(tangent_type(v.ty))
    outs = [read(a) for a in graph.outvars]
    return [p for p, _ in outs], [t for _, t in outs]


def _at(eqn):
    return f" (at {eqn.source})" if eqn.source else ""


def jvp_graph(graph: Graph, diff: list[bool]):
    """The JVP of ``graph`` as a graph.

    Inputs: all of ``graph``'s inputs, then one tangent per input with ``diff[i]`` set.
    Outputs: the primal outputs, then one tangent per output (zeros instantiated).
    Also returns which output tangents are symbolically zero.
    """
    in_types = list(graph.in_types) + [tangent_type(v.ty) for v, d in zip(graph.invars, diff)
                                       if d]
    zero_out = []

    def fn(*args):
        n = len(graph.invars)
        primals, rest = list(args[:n]), iter(args[n:])
        tangents = [next(rest) if d else None for d in diff]
        outs, touts = jvp_eval(graph, primals, tangents)
        zero_out[:] = [is_zero(t) for t in touts]
        return outs + [instantiate(t) for t in touts]

    jgraph, captured = make_graph(fn, in_types)
    assert not captured
    return jgraph, zero_out
