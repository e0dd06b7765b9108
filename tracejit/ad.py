"""Automatic differentiation, JAX's API: jvp, linearize, vjp here; grad, value_and_grad, jacfwd,
jacrev, hessian in tracejit.derivatives (built on these); stop_gradient, custom_jvp, custom_vjp
in tracejit.custom.

Every function is an IR transform. ``f`` is traced into a graph, and then:
- forward mode (``jvp``): the JVP transform (tracejit.transforms.jvp) emits primal and tangent
  equations;
- reverse mode (``vjp``, ``grad``): the JVP graph is partially evaluated into a forward graph
  (outputs + residuals) and a linear graph, and the linear graph is transposed
  (tracejit.transforms.partial_eval / transpose) into a backward graph.
The results are ordinary graphs, so they print, simplify, compile and transform again: grad of
grad, jacfwd of jacrev, jvp of grad, trace of grad and grad of trace all work, to any depth.

Speed. ``grad(f)`` (likewise value_and_grad, jacfwd, jacrev, hessian) returns a function that,
on arrays, runs a cached ``trace`` of the whole derivative computation: one trace per input
signature, simplified and compiled with the default backend. On tracers (inside another trace or
transform) it inlines. ``vjp`` on arrays compiles its forward and backward graphs once per
signature; ``vjp_fn`` runs only the backward graph, as often as you like.

Arguments: ``argnums`` selects the differentiated positional arguments (int or tuple); those must
be float or complex pytrees (an int/bool argument is an error). Other arguments are passed
through: Python ints, bools, strings and other hashable non-arrays among them are static (part
of the trace's cache key, concrete inside ``f``); arrays and Python floats are traced.

Complex numbers follow JAX. Cotangents pair with tangents through ``Re(sum(ct * t))`` (no
conjugation), so for a real-valued ``f`` of a complex ``z = x + iy``::

    grad(f)(z) = df/dx - i df/dy        (the conjugate of the steepest-ascent direction)

Worked example: ``f(z) = abs(z)**2 = x**2 + y**2`` at ``z = 3+4j`` gives ``df/dx = 6``,
``df/dy = 8``, so ``grad(f)(3+4j) == 6-8j == 2*conj(z)``; gradient descent on ``z`` steps along
``-conj(grad(f)(z))``. For holomorphic ``f`` pass ``holomorphic=True``: ``grad`` then returns
``f'(z)`` (e.g. ``grad(lambda z: z**2, holomorphic=True)(3+4j) == 6+8j``). Differentiating a
complex *output* without ``holomorphic=True`` is an error in ``grad``/``jacrev``; ``jacfwd``
requires real inputs unless ``holomorphic=True``.

Numerics (documented conventions, tested): |x|' = 0 and relu' = maximum(x, 0)' = 0 at 0;
maximum/minimum pass the tangent of the first operand only where it wins strictly (ties go to the
second operand); reduce_max/min split the cotangent equally among tied extremes; sqrt'(0) = inf;
integer and bool values have no derivative. ``config.strong_zero_where`` makes
``grad(lambda x: where(x > 0, sqrt(x), 0.))`` 0 (not NaN) for x <= 0: see
tracejit.transforms.transpose. ``config.debug_nans`` names the primitive and the user's source
line (tagged ``[jvp of prim]``) of the first derivative equation that produces a NaN.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import autograph, tree
from .ad_util import differentiable, instantiate, is_zero, tangent_type
from .api import _compile
from .signature import leaf_type
from .bugreport import compiler_stage
from .config import config
from .core import Tracer, current_builder, eval_graph, literal_value, make_graph, \
    note_argument_writes, refuse_shared_memory
from .errors import ConcretizationError, InputError
from .ir import Type
from .passes import rolled_primal, simplify
from .transforms.jvp import jvp_eval, jvp_graph
from .transforms.partial_eval import eval_linear, partial_eval
from .transforms.transpose import transpose_graph

__all__ = ["jvp", "linearize", "vjp"]      # grad & co.: tracejit.derivatives


# ---------------------------------------------------------------------------------------------
# staging a function: graph + derived graphs, cached per signature at top level

class _Staged:
    """``fun`` traced for one flat signature, with its derivative graphs built on demand."""

    def __init__(self, fun, leaves, in_tree, has_aux=False):
        self.in_types = [leaf_type(x, f"argument {i}") for i, x in enumerate(leaves)]
        self.writes_arguments = False
        box = []

        def flat(*tracers):
            before = [t.irvar for t in tracers]
            out = autograph.call(fun, *tree.unflatten(in_tree, list(tracers)))
            if note_argument_writes(tracers, before):
                self.writes_arguments = True
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise InputError("has_aux=True requires the function to return a pair "
                                     "(output, aux)")
                out, aux = out
            else:
                aux = None
            out_leaves, out_tree = tree.flatten(out)
            aux_leaves, aux_tree = tree.flatten(aux)
            box.append((out_tree, aux_tree, len(out_leaves)))
            return list(out_leaves) + list(aux_leaves)

        try:
            self.graph, self.captured = make_graph(flat, self.in_types)
        except ConcretizationError as exc:
            # Python branched on a traced value: trace again with the control flow converted
            # (as api.Traced does); inside a conversion already, the error stands
            if not (getattr(exc, "control_flow", False) and config.autograph) or \
                    autograph.active():
                raise
            box.clear()
            with autograph.enabled():
                self.graph, self.captured = make_graph(flat, self.in_types)
        self.out_tree, self.aux_tree, self.n_out = box[0]
        self.n_in = len(leaves)
        self.diff = [differentiable(t) for t in self.in_types] + [False] * len(self.captured)
        self._lin = self._bwd = None
        self._exec = {}

    @property
    def out_types(self):
        return self.graph.out_types

    def linearized(self):
        """(forward graph, linear graph, n_res): fwd(args) -> outs + residuals;
        lin(residuals, tangents of the differentiable inputs) -> output tangents.

        The forward and backward graphs are not simplified here: inlined into a trace they are
        simplified with it (once, with the rest of that graph), and ``run`` simplifies what it
        compiles."""
        if self._lin is None:
            primal = rolled_primal(self.graph)
            with compiler_stage("the JVP transform", primal):
                jg, _ = jvp_graph(primal, self.diff)
            jg = simplify(jg, inline=False)
            with compiler_stage("partial evaluation (reverse mode)", jg):
                self._lin = partial_eval(jg, len(self.graph.invars), len(self.graph.outvars),
                                         recompute=True)
        return self._lin

    def backward(self):
        """The backward graph: (residuals, cotangents of the main outputs) -> input cotangents."""
        if self._bwd is None:
            fwd, lin, n_res = self.linearized()
            lin_main = lin.replace(outvars=lin.outvars[:self.n_out])
            with compiler_stage("the transpose (reverse mode)", lin_main):
                self._bwd = transpose_graph(lin_main, n_res, [tangent_type(t) for t in
                                                              self.out_types[:self.n_out]])
        return self._bwd

    def run(self, name, graph, args):
        """Evaluate a graph: inline on tracers, else simplified and compiled (cached per name)
        with the default backend."""
        if any(isinstance(a, Tracer) for a in args):
            return _inline(graph, args)
        key = (name, config.backend)
        exe = self._exec.get(key)
        if exe is None:
            exe = self._exec[key] = _compile(simplify(graph), config.backend)
        return exe([np.asarray(literal_value(a), dtype=v.ty.dtype)
                    for a, v in zip(args, graph.invars)])


def _inline(graph, args):
    """eval_graph into the current trace, keeping each equation's source (with its
    ``[jvp of ...]`` tag) rather than the line that called the transform."""
    return eval_graph(graph, list(args), keep_source=True)


_STAGED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _stage(fun, args, has_aux=False):
    """A _Staged for ``fun(*args)``, cached per signature when called outside any trace."""
    leaves, in_tree = tree.flatten(tuple(args))
    top = current_builder() is None and not any(isinstance(x, Tracer) for x in leaves)
    if not top:
        return _Staged(fun, leaves, in_tree, has_aux), leaves
    types = tuple(leaf_type(x, f"argument {i}") for i, x in enumerate(leaves))
    key = (in_tree, types, has_aux, config.strong_zero_where)
    try:
        per_fun = _STAGED.setdefault(fun, {})
    except TypeError:                       # not weak-referenceable: no cache
        return _Staged(fun, leaves, in_tree, has_aux), leaves
    staged = per_fun.get(key)
    if staged is None:
        staged = per_fun[key] = _Staged(fun, leaves, in_tree, has_aux)
        if staged.captured:
            del per_fun[key]
    if staged.writes_arguments:
        refuse_shared_memory(leaves)
    return staged, leaves


def _value(x, ty: Type):
    if isinstance(x, Tracer):
        return x
    return np.asarray(literal_value(x), dtype=ty.dtype)


def _materialize(t, ty: Type):
    return _value(instantiate(t, tangent_type(ty)) if is_zero(t) else t, ty)


# ---------------------------------------------------------------------------------------------
# forward mode

def jvp(fun, primals, tangents, has_aux=False):
    """``(fun(*primals), J·tangents)``: the Jacobian-vector product, by forward mode.

    ``primals`` and ``tangents`` are tuples (or lists) of pytrees with equal structure, shapes and
    dtypes. Tangents of integer/bool primals are ignored (their output tangents are zeros).
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise InputError("jvp(f, primals, tangents): primals and tangents must be tuples or "
                         "lists of arguments")
    p_leaves, p_tree = tree.flatten(tuple(primals))
    t_leaves, t_tree = tree.flatten(tuple(tangents))
    if p_tree != t_tree:
        raise InputError(f"jvp: primals have structure {p_tree} but tangents have {t_tree}")
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        pt, tt = leaf_type(p, f"primal {i}"), leaf_type(t, f"tangent {i}")
        if pt.shape != tt.shape or (differentiable(pt) and pt.dtype != tt.dtype):
            raise InputError(f"jvp: tangent {i} is {tt} but its primal is {pt}; they must have "
                             f"the same shape and dtype")
    staged, leaves = _stage(fun, primals, has_aux)
    args = leaves + staged.captured
    # a tangent has its primal's tangent type (a Python scalar tangent of a complex128 primal
    # is complex128, not a weak float or complex literal)
    t_leaves = [t if isinstance(t, Tracer) else
                np.asarray(t, dtype=tangent_type(ty).dtype) if differentiable(ty) else t
                for t, ty in zip(t_leaves, staged.in_types)]
    tans = [t if d else None for t, d in zip(t_leaves, staged.diff)]
    if current_builder() is None and not any(isinstance(a, Tracer) for a in args + t_leaves):
        # on arrays: run the JVP graph (built and compiled once per signature)
        jg = staged.__dict__.get("_jg")
        if jg is None:
            with compiler_stage("the JVP transform", staged.graph):
                jg = staged._jg = jvp_graph(staged.graph, staged.diff)[0]     # run simplifies
        outs = staged.run("jvp", jg, args + [t for t, d in zip(t_leaves, staged.diff) if d])
        n = len(staged.graph.outvars)
        outs, touts = outs[:n], outs[n:]
    else:
        with compiler_stage("the JVP transform", staged.graph):
            outs, touts = jvp_eval(staged.graph, args, tans + [None] * len(staged.captured))
    types = staged.out_types
    outs = [_value(o, t) for o, t in zip(outs, types)]
    touts = [_materialize(t, ty) for t, ty in zip(touts, types)]
    return _unpack(staged, outs, touts, has_aux)


def _unpack(staged, outs, touts, has_aux):
    n = staged.n_out
    out = tree.unflatten(staged.out_tree, outs[:n])
    tout = tree.unflatten(staged.out_tree, touts[:n])
    if has_aux:
        return out, tout, tree.unflatten(staged.aux_tree, outs[n:])
    return out, tout


def linearize(fun, *primals):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` evaluates the linear graph only
    (the forward pass and the coefficients it needs are computed once, here)."""
    staged, leaves = _stage(fun, primals)
    fwd, lin, n_res = staged.linearized()
    outs = staged.run("fwd", fwd, leaves + staged.captured)
    n = len(staged.graph.outvars)
    outs, res = outs[:n], outs[n:]
    types = staged.out_types
    outs = [_value(o, t) for o, t in zip(outs, types)]

    def f_jvp(*tangents):
        t_leaves, t_tree = tree.flatten(tuple(tangents))
        if len(t_leaves) != staged.n_in:
            raise InputError(f"f_jvp takes tangents for {staged.n_in} primal leaves, got "
                             f"{len(t_leaves)}")
        tans = [t for t, d in zip(t_leaves, staged.diff) if d]
        if any(isinstance(x, Tracer) for x in list(res) + tans) or current_builder() is not None:
            res_t = _traceable(res, fwd, n_res, leaves, staged)
            with compiler_stage("evaluating a linearized graph", lin):
                touts = eval_linear(lin, n_res, res_t, tans)
        else:
            touts = staged.run("lin", lin, list(res) + tans)
        touts = [_materialize(t, ty) for t, ty in zip(touts, types)]
        return tree.unflatten(staged.out_tree, touts[:staged.n_out])

    return tree.unflatten(staged.out_tree, outs[:staged.n_out]), f_jvp


# ---------------------------------------------------------------------------------------------
# reverse mode

def vjp(fun, *primals, has_aux=False):
    """``(fun(*primals), vjp_fn)`` (plus ``aux`` with ``has_aux=True``); ``vjp_fn(ct)`` returns
    one cotangent per primal: ``ctᵀ·J``, by reverse mode.

    The forward pass runs once, here; ``vjp_fn`` evaluates only the backward graph (on arrays:
    compiled once per signature) and can be called any number of times.
    """
    staged, leaves = _stage(fun, primals, has_aux)
    fwd, _, n_res = staged.linearized()
    bwd = staged.backward()
    outs = staged.run("fwd", fwd, leaves + staged.captured)
    n = len(staged.graph.outvars)
    outs, res = outs[:n], outs[n:]
    types = staged.out_types
    outs = [_value(o, t) for o, t in zip(outs, types)]
    out = tree.unflatten(staged.out_tree, outs[:staged.n_out])
    _, in_tree = tree.flatten(tuple(primals))

    def vjp_fn(ct):
        c_leaves, c_tree = tree.flatten(ct)
        if c_tree != staged.out_tree:
            raise InputError(f"vjp_fn: the cotangent has structure {c_tree} but the output "
                             f"has {staged.out_tree}")
        for i, (c, t) in enumerate(zip(c_leaves, types)):
            ct_ty = leaf_type(c, f"cotangent {i}")
            if ct_ty.shape != t.shape:
                raise InputError(f"vjp_fn: cotangent {i} has shape {ct_ty.shape} but the output "
                                 f"has shape {t.shape}")
        c_leaves = [c if isinstance(c, Tracer) else _lift_seed(np.asarray(c, dtype=t.dtype))
                    for c, t in zip(c_leaves, types)]
        cts = staged.run("bwd", bwd, _traceable(res, fwd, n_res, leaves, staged) +
                         c_leaves)
        cts = [_value(c, t) for c, t in zip(cts, staged.in_types)]
        full, it = [], iter(cts)
        for t, d in zip(staged.in_types, staged.diff):
            full.append(next(it) if d else np.zeros(t.shape, t.dtype))
        return tree.unflatten(in_tree, full)

    if has_aux:
        return out, vjp_fn, tree.unflatten(staged.aux_tree, outs[staged.n_out:])
    return out, vjp_fn


def _traceable(res, fwd, n_res, leaves, staged):
    """The residuals for a backward (linear) graph about to be traced. A while loop's tape
    computed earlier on arrays has a concrete length, but the traced graph needs it as a stack
    (run-time length): then the forward pass is traced again to recompute it."""
    builder = current_builder()
    stacks = any(v.ty.dynamic for v in fwd.outvars[len(fwd.outvars) - n_res:])
    if builder is None or not stacks or any(isinstance(r, Tracer) for r in res):
        return list(res)
    args = [x if isinstance(x, Tracer) else Tracer(builder, builder.atom(x))
            for x in list(leaves) + list(staged.captured)]
    return list(_inline(fwd, args)[len(fwd.outvars) - n_res:])


def _lift_seed(c):
    """A concrete 0-d cotangent seed used inside a trace, as a tracer of a literal: the
    backward graph's broadcasts of it (e.g. ``sum``'s transpose) are then recorded as cheap
    broadcast views instead of being evaluated now into large captured constant arrays."""
    builder = current_builder()
    if builder is None or np.ndim(c) != 0:
        return c
    return Tracer(builder, builder.atom(c))
