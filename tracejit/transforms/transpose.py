"""Reverse mode: transposing a linear graph.

``transpose_eval(lin, residuals, cts)`` walks the linear graph (from partial evaluation)
backwards. Each equation's output cotangent is handed to its primitive's ``transpose`` rule with
``UndefinedPrimal`` standing for the linear operands; the cotangents it returns are *summed* into
those operands (a value used on several paths gets the sum of its paths). No Jacobian is built:
every rule emits ordinary primitives (a dot_general transposes to another dot_general, a take to
a scatter-add, a broadcast to a sum, ...). Cotangents known to be zero are ``Zero`` and skip
their equations entirely.

Strong zeros (``config.strong_zero_where``, on by default). In ``where(x > 0, sqrt(x), 0.)`` the
unpicked branch gets a zero cotangent, but the backward pass of ``sqrt`` multiplies it by
``0.5 / sqrt(x)``, which is inf at 0 (and NaN below), and ``0 * inf`` is NaN: JAX, PyTorch,
TensorFlow and autograd all return NaN there. Here the cotangents that ``select`` produces are
*masked*, and so is every cotangent computed from a masked one. Transposing ``mul``/``div`` with
a masked cotangent emits ``select(ct == 0, 0, ct * y)`` instead of ``ct * y``, so a masked zero
stays exactly zero through the unpicked branch and the gradient above is 0. Genuine NaNs of the
picked branch still surface (there ``ct != 0``). The tracking is per cotangent and costs nothing
for graphs without ``select`` (max/min/clip/reduce_max also use select in their JVPs). Turning
the option off restores plain IEEE propagation. Not covered: a masked cotangent that flows into
a dot_general (the sum over products is taken as is).
"""
from __future__ import annotations

from .. import ad_util as ad
from ..ad_util import UndefinedPrimal, Zero, is_zero
from ..core import make_graph
from ..errors import UnsupportedError
from ..ir import Graph, Literal, Var
from .jvp import _SourceTagger


def transpose_eval(lin: Graph, n_res: int, residuals, cts):
    """Cotangents of the linear inputs of ``lin`` given those of its outputs (``Zero`` allowed)."""
    env: dict[int, object] = {}
    for v, x in zip(lin.invars[:n_res], residuals):
        env[id(v)] = x
    for v, x in zip(lin.constvars, lin.constvals):
        env[id(v)] = x
    linear = {id(v) for v in lin.invars[n_res:]}
    for eqn in lin.eqns:
        if any(isinstance(a, Var) and id(a) in linear for a in eqn.invars):
            linear.update(id(v) for v in eqn.outvars)
        else:   # a residual recomputed in the linear graph (partial_eval): evaluate it
            outs = eqn.prim.bind(*[a if isinstance(a, Literal) else env[id(a)]
                                   for a in eqn.invars], **eqn.params)
            for v, x in zip(eqn.outvars, outs if eqn.prim.multiple_results else [outs]):
                env[id(v)] = x

    ct_env: dict[int, object] = {}
    masked: set[int] = set()

    def add_ct(v, ct, is_masked):
        if ct is None or is_zero(ct):
            return
        prev = ct_env.get(id(v))
        ct_env[id(v)] = ct if prev is None else ad.add(prev, ct)
        if is_masked:
            masked.add(id(v))

    def read(a):
        if isinstance(a, Literal):
            return a
        return UndefinedPrimal(a.ty) if id(a) in linear else env[id(a)]

    for v, ct in zip(lin.outvars, cts):
        if isinstance(v, Var) and id(v) in linear:
            add_ct(v, ct, False)
    for eqn in reversed(lin.eqns):
        prim = eqn.prim
        cts_out = [ct_env.pop(id(v), None) for v in eqn.outvars]
        if all(c is None for c in cts_out):
            continue
        ct = [Zero(ad.tangent_type(v.ty)) if c is None else c
              for c, v in zip(cts_out, eqn.outvars)] if prim.multiple_results else cts_out[0]
        if prim.transpose is None:
            raise UnsupportedError(
                f"reverse-mode differentiation through {prim.name!r} is not supported (no "
                f"transpose rule){' (at ' + eqn.source + ')' if eqn.source else ''}; "
                f"forward mode (jvp, jacfwd) may work")
        is_masked = any(id(v) in masked for v in eqn.outvars)
        token = ad.set_ct_masked(is_masked)
        try:
            with _SourceTagger(eqn, f"transpose of {prim.name}"):
                cts_in = prim.transpose(ct, *[read(a) for a in eqn.invars], **eqn.params)
        finally:
            ad.reset_ct_masked(token)
        out_masked = is_masked or bool(prim.props.get("masks_cotangent"))
        for a, c in zip(eqn.invars, cts_in):
            if isinstance(a, Var) and id(a) in linear:
                add_ct(a, c, out_masked)
    return [ct_env.get(id(v), Zero(ad.tangent_type(v.ty))) for v in lin.invars[n_res:]]


def transpose_graph(lin: Graph, n_res: int, ct_types):
    """The backward graph: (residuals, output cotangents) -> input cotangents (zeros
    instantiated)."""
    in_types = [v.ty for v in lin.invars[:n_res]] + list(ct_types)

    def fn(*args):
        cts = transpose_eval(lin, n_res, list(args[:n_res]), list(args[n_res:]))
        return [ad.instantiate(c) for c in cts]

    bwd, captured = make_graph(fn, in_types)
    assert not captured
    return bwd
