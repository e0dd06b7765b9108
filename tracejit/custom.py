"""User-defined derivatives: ``stop_gradient``, ``custom_jvp`` and ``custom_vjp`` (JAX's API).

In the IR they are call primitives: ``custom_jvp_call[call=<graph> jvp=<rule>]`` and
``custom_vjp_call[call=<graph> fwd=... bwd=...]`` carry the traced primal function as a sub-graph
and the user's rule as a param, so the AD transforms use the rule while every other consumer
sees the primal graph. ``simplify`` inlines them (props ``inline``) before compilation, and erases
``stop_gradient`` (props ``erase``), so compiled code is unaffected.

- ``custom_jvp``: ``f.defjvp(rule)`` with ``rule(primals, tangents) -> (out, tangent_out)``
  (tuples of arguments; tangents of non-differentiated arguments are zeros). Reverse mode works
  too, by transposing the linear part of the rule's tangent computation.
- ``custom_vjp``: ``f.defvjp(fwd, bwd)`` with ``fwd(*args) -> (out, residuals)`` and
  ``bwd(residuals, ct) -> tuple of one cotangent per argument``. Reverse mode only (forward mode
  raises, as in JAX). Under ``grad``, ``fwd`` runs in the forward pass and ``bwd`` becomes part of
  the backward graph.
The decorated functions must not close over traced values: pass them as arguments.
"""
from __future__ import annotations

import functools

import numpy as np

from . import ad_util as ad
from . import tree
from .core import Primitive, Tracer, current_builder, eval_graph, literal_value, make_graph
from .errors import InputError, UnsupportedError
from .ir import Literal
from .signature import leaf_type

__all__ = ["stop_gradient", "custom_jvp", "custom_vjp"]


# ---------------------------------------------------------------------------------------------
# stop_gradient

stop_gradient_p = Primitive("stop_gradient", "elementwise", lambda x: x,
                            lambda x: np.asarray(x), nargs=1, erase=True)
ad.defjvp_zero(stop_gradient_p, "the identity whose derivative is defined as zero")


def stop_gradient(x):
    """``x`` unchanged, but with zero derivative (applies to every leaf of a pytree)."""
    def one(v):
        if isinstance(v, Tracer) and ad.differentiable(v.ty):
            return stop_gradient_p.bind(v)
        return v
    return tree.tree_map(one, x)


# ---------------------------------------------------------------------------------------------
# the call primitives

def _call_shape(*in_types, call, **_):
    return list(call.out_types)


def _call_impl(*args, call, **_):
    return [np.asarray(literal_value(o), dtype=t.dtype)
            for o, t in zip(eval_graph(call, list(args)), call.out_types)]


custom_jvp_call_p = Primitive("custom_jvp_call", "control", _call_shape, _call_impl,
                              multiple_results=True, inline=True)
custom_vjp_call_p = Primitive("custom_vjp_call", "control", _call_shape, _call_impl,
                              multiple_results=True, inline=True)


def _lin_shape(*in_types, out_types, **_):
    return list(out_types)


def _lin_impl(*args, **_):
    raise UnsupportedError("forward-mode differentiation (jvp, jacfwd, linearize) of a "
                           "custom_vjp function is not supported; use reverse mode (grad, vjp, "
                           "jacrev) or custom_jvp")


# custom_vjp_lin[bwd, ...] *residuals *tangents: the linear map whose transpose is bwd
custom_vjp_lin_p = Primitive("custom_vjp_lin", "control", _lin_shape, _lin_impl,
                             multiple_results=True)


def _trace_call(fun, args, what, cache=None):
    """(graph, leaves, in_tree, out_tree) of ``fun(*args)``; ``cache``: a dict keeping the
    graph per argument structure and types, for functions known to be pure (the primal
    graph of such a function is the same at every call with those types)."""
    leaves, in_tree = tree.flatten(tuple(args))
    types = [leaf_type(x, f"argument {i}") for i, x in enumerate(leaves)]
    if cache is not None:
        key = (in_tree, tuple(t.strong() for t in types))
        if key not in cache:
            if len(cache) >= 256:                 # bounded: one entry per shape seen
                cache.clear()
            cache[key] = _trace_call(fun, args, what)[::3]        # (graph, out_tree)
        graph, out_tree = cache[key]
        return graph, leaves, in_tree, out_tree
    box = []

    def flat(*tracers):
        out = fun(*tree.unflatten(in_tree, list(tracers)))
        out_leaves, out_tree = tree.flatten(out)
        box.append(out_tree)
        return out_leaves

    graph, captured = make_graph(flat, [t.strong() for t in types])
    if captured:
        raise InputError(f"a {what} function closed over {len(captured)} traced value(s); pass "
                         f"them as arguments instead")
    return graph, leaves, in_tree, box[0]


def _needs_trace(leaves):
    return current_builder() is not None or any(isinstance(x, Tracer) for x in leaves)


class custom_jvp:
    """Decorator: a function with a user-defined JVP rule (``@f.defjvp``)."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.jvp_rule = None
        # tracejit's own pure functions (tracejit.numpy.special) set a dict here: their graph
        # is traced once per argument types instead of at every call
        self.trace_cache = None

    def defjvp(self, rule):
        """Set ``rule(primals, tangents) -> (primal_out, tangent_out)``; returns ``rule``."""
        self.jvp_rule = rule
        return rule

    def __call__(self, *args):
        if self.jvp_rule is None:
            raise InputError(f"custom_jvp function {self.__name__} has no rule; define one with "
                             f"@{self.__name__}.defjvp")
        leaves = tree.flatten(tuple(args))[0]
        if not _needs_trace(leaves):
            return self.fun(*args)
        graph, leaves, in_tree, out_tree = _trace_call(self.fun, args, "custom_jvp",
                                                       self.trace_cache)
        rule = _jvp_rule_adapter(self.jvp_rule, in_tree, out_tree)
        outs = custom_jvp_call_p.bind(*leaves, call=graph, jvp=rule)
        return tree.unflatten(out_tree, outs)


def _jvp_rule_adapter(rule, in_tree, out_tree):
    def jvp(primals, tangents):
        tangents = [ad.instantiate(t) for t in tangents]
        p = tree.unflatten(in_tree, _user_values(primals))
        t = tree.unflatten(in_tree, tangents)
        out, t_out = rule(tuple(p), tuple(t))
        outs, o_tree = tree.flatten(out)
        touts, t_tree = tree.flatten(t_out)
        if o_tree != out_tree or t_tree != out_tree:
            raise InputError(f"custom_jvp rule {getattr(rule, '__name__', rule)} returned "
                             f"structures {o_tree} / {t_tree}; the function returns {out_tree}")
        return list(outs), list(touts)
    jvp.__name__ = getattr(rule, "__name__", "jvp_rule")
    return jvp


def _custom_jvp_call_jvp(primals, tangents, *, call, jvp):
    outs, touts = jvp(primals, tangents)
    outs = [ad.convert(o, t.dtype) if ad.ty(o).dtype != t.dtype else o
            for o, t in zip(outs, call.out_types)]
    touts = [ad.Zero(ad.tangent_type(t)) if not ad.differentiable(t) else
             (ad.convert(d, t.dtype) if ad.ty(d).dtype != t.dtype else d)
             for d, t in zip(touts, call.out_types)]
    return outs, touts


custom_jvp_call_p.jvp = _custom_jvp_call_jvp


class custom_vjp:
    """Decorator: a function with a user-defined VJP (``f.defvjp(fwd, bwd)``)."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd):
        """``fwd(*args) -> (out, residuals)``; ``bwd(residuals, ct) -> cotangents per arg``."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        if self.fwd is None:
            raise InputError(f"custom_vjp function {self.__name__} has no rules; call "
                             f"{self.__name__}.defvjp(fwd, bwd)")
        leaves = tree.flatten(tuple(args))[0]
        if not _needs_trace(leaves):
            return self.fun(*args)
        graph, leaves, in_tree, out_tree = _trace_call(self.fun, args, "custom_vjp")
        fwd = _named(functools.partial(_run_fwd, self.fwd, in_tree, out_tree), self.fwd)
        bwd = _named(functools.partial(_run_bwd, self.bwd, in_tree, out_tree), self.bwd)
        outs = custom_vjp_call_p.bind(*leaves, call=graph, fwd=fwd, bwd=bwd)
        return tree.unflatten(out_tree, outs)


def _named(fn, like):
    fn.__name__ = getattr(like, "__name__", "rule")
    return fn


def _user_values(values):
    """Operands as the user's rules see them: a literal operand (a Python number the function
    was called with) as that number again, not an IR Literal."""
    return [(v.value.item() if v.ty.weak else v.value) if isinstance(v, Literal) else v
            for v in values]


def _run_fwd(fwd, in_tree, out_tree, primals):
    out, res = fwd(*tree.unflatten(in_tree, _user_values(primals)))
    outs, o_tree = tree.flatten(out)
    if o_tree != out_tree:
        raise InputError(f"custom_vjp fwd returned {o_tree}; the function returns {out_tree}")
    res_leaves, res_tree = tree.flatten(res)
    return list(outs), res_leaves, res_tree


def _run_bwd(bwd, in_tree, out_tree, res, cts):
    cts_in = bwd(res, tree.unflatten(out_tree, list(cts)))
    if not isinstance(cts_in, (tuple, list)):
        raise InputError("custom_vjp bwd must return a tuple with one cotangent per argument")
    leaves, c_tree = tree.flatten(tuple(cts_in))
    if c_tree != in_tree:
        raise InputError(f"custom_vjp bwd returned {c_tree}; the arguments are {in_tree}")
    return leaves


def _custom_vjp_call_jvp(primals, tangents, *, call, fwd, bwd):
    outs, res_leaves, res_tree = fwd(primals)
    outs = [ad.convert(o, t.dtype) for o, t in zip(outs, call.out_types)]
    res_leaves = [r if isinstance(r, Tracer) else np.asarray(literal_value(r))
                  for r in res_leaves]
    tans = [ad.instantiate(t, ad.tangent_type(ad.ty(p))) for t, p in zip(tangents, primals)]
    out_types = tuple(ad.tangent_type(t) for t in call.out_types)
    in_types = tuple(ad.tangent_type(ad.ty(p)) for p in primals)
    touts = custom_vjp_lin_p.bind(*res_leaves, *tans, bwd=bwd, res_tree=res_tree,
                                  n_res=len(res_leaves), out_types=out_types, arg_types=in_types)
    return outs, touts


def _custom_vjp_lin_transpose(cts, *args, bwd, res_tree, n_res, out_types, arg_types):
    # a residual that was a literal operand reaches bwd as the user's value, as in fwd
    res = tree.unflatten(res_tree, _user_values(args[:n_res]))
    cts = [ad.instantiate(c, t) for c, t in zip(cts, out_types)]
    cts_in = bwd(res, cts)
    out = [None] * n_res
    for c, t in zip(cts_in, arg_types):
        if c is None:
            out.append(None)
        elif ad.ty(c).shape != t.shape:
            raise InputError(f"custom_vjp bwd returned a cotangent of shape {ad.ty(c).shape} "
                             f"for an argument of shape {t.shape}")
        else:
            out.append(ad.convert(c, t.dtype))
    return out


custom_vjp_call_p.jvp = _custom_vjp_call_jvp
custom_vjp_lin_p.transpose = _custom_vjp_lin_transpose
custom_vjp_lin_p.props["nondiff"] = "an internal linear map; only transposed (its jvp is itself)"


def _custom_vjp_lin_jvp(primals, tangents, **params):
    raise UnsupportedError("differentiating the backward pass of a custom_vjp function "
                           "(higher-order reverse mode) is not supported; use custom_jvp")


custom_vjp_lin_p.jvp = _custom_vjp_lin_jvp
