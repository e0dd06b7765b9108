"""Automatic differentiation, JAX's API: jvp, linearize, vjp, grad, value_and_grad, jacfwd,
jacrev, hessian (plus stop_gradient, custom_jvp, custom_vjp in tracejit.custom).

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

import functools
import weakref

import numpy as np

from . import tree
from .ad_util import Zero, differentiable, instantiate, is_zero, tangent_type
from .api import _compile, leaf_type, trace
from .config import config
from .core import Tracer, current_builder, eval_graph, literal_value, make_graph
from .errors import InputError
from .ir import Literal, Type
from .passes import simplify
from .transforms.jvp import jvp_eval, jvp_graph
from .transforms.partial_eval import eval_linear, partial_eval
from .transforms.transpose import transpose_graph

__all__ = ["jvp", "linearize", "vjp", "grad", "value_and_grad", "jacfwd", "jacrev", "hessian"]


# ---------------------------------------------------------------------------------------------
# staging a function: graph + derived graphs, cached per signature at top level

class _Staged:
    """``fun`` traced for one flat signature, with its derivative graphs built on demand."""

    def __init__(self, fun, leaves, in_tree, has_aux=False):
        self.in_types = [leaf_type(x, f"argument {i}") for i, x in enumerate(leaves)]
        box = []

        def flat(*tracers):
            out = fun(*tree.unflatten(in_tree, list(tracers)))
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
            jg, _ = jvp_graph(self.graph, self.diff)
            n_args = len(self.graph.invars)
            self._lin = partial_eval(simplify(jg, inline=False), n_args,
                                     len(self.graph.outvars), recompute=True)
        return self._lin

    def backward(self):
        """The backward graph: (residuals, cotangents of the main outputs) -> input cotangents."""
        if self._bwd is None:
            fwd, lin, n_res = self.linearized()
            lin_main = lin.replace(outvars=lin.outvars[:self.n_out])
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
    tans = [t if d else None for t, d in zip(t_leaves, staged.diff)]
    if current_builder() is None and not any(isinstance(a, Tracer) for a in args + t_leaves):
        # on arrays: run the JVP graph (built and compiled once per signature)
        jg = staged.__dict__.get("_jg")
        if jg is None:
            jg = staged._jg = jvp_graph(staged.graph, staged.diff)[0]     # run simplifies
        outs = staged.run("jvp", jg, args + [t for t, d in zip(t_leaves, staged.diff) if d])
        n = len(staged.graph.outvars)
        outs, touts = outs[:n], outs[n:]
    else:
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
            touts = eval_linear(lin, n_res, _traceable(res, fwd, n_res, leaves, staged),
                                tans)
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


# ---------------------------------------------------------------------------------------------
# derivative functions: grad, value_and_grad, jacfwd, jacrev, hessian

def _is_static(a) -> bool:
    leaves = tree.flatten(a)[0]
    if any(isinstance(x, (Tracer, np.ndarray, np.generic, float, complex)) and
           not isinstance(x, bool) for x in leaves):
        return False
    try:
        hash(a)
    except TypeError:
        return False
    return True


class Derivative:
    """A derivative function made by grad/value_and_grad/jacfwd/jacrev/hessian.

    On arrays it runs a cached trace of itself (one trace and compile per input signature); on
    tracers it inlines. ``ir(*args)``, ``lower`` and ``cache_info`` inspect that trace.
    """

    _tj_traced = True

    def __init__(self, body, fun, kind, argnums):
        from .backend.pyabi_dispatch import DispatchMethods, PyDispatch
        base = PyDispatch if isinstance(self, PyDispatch) else DispatchMethods
        base.__init__(self, self._python_call)
        for attr in ("__module__", "__doc__"):
            if hasattr(fun, attr):
                setattr(self, attr, getattr(fun, attr))
        self.__wrapped__ = fun
        self.__name__ = f"{kind}({getattr(fun, '__name__', 'f')})"
        self.__qualname__ = self.__name__
        body = functools.wraps(fun)(body)
        body.__name__ = self.__name__
        self._body = body
        self._argnums = argnums
        self._traced: dict = {}
        self._last = None

    def _traced_for(self, args, kwargs):
        nums = _as_tuple(self._argnums)
        static = tuple(i for i, a in enumerate(args) if i not in nums and _is_static(a))
        names = tuple(sorted(k for k, v in kwargs.items() if _is_static(v)))
        key = (static, names, config.strong_zero_where)
        t = self._traced.get(key)
        if t is None:
            t = self._traced[key] = trace(self._body, static_argnums=static,
                                          static_argnames=names)
            if not static and not names:
                t._owners.append(self)      # same arguments: its native entries serve us too
        self._last = t
        return t

    def _python_call(self, *args, **kwargs):
        if current_builder() is not None:       # inside a trace (maybe closing over tracers)
            return self._body(*args, **kwargs)
        return self._traced_for(args, kwargs)._python_call(*args, **kwargs)

    def ir(self, *args, **kwargs):
        """The (simplified) IR of this derivative for these arguments."""
        return self._traced_for(args, kwargs).ir(*args, **kwargs)

    def lower(self, *args, **kwargs):
        return self._traced_for(args, kwargs).lower(*args, **kwargs)

    def inspect_llvm(self, *args, **kwargs) -> str:
        """The LLVM IR compiled for this derivative and these arguments' signature."""
        return self._traced_for(args, kwargs).inspect_llvm(*args, **kwargs)

    def inspect_asm(self, *args, **kwargs) -> str:
        """The host assembly compiled for this derivative and these arguments' signature."""
        return self._traced_for(args, kwargs).inspect_asm(*args, **kwargs)

    def memory_analysis(self, *args, **kwargs):
        """Argument, output and temporary bytes of the compiled derivative."""
        return self._traced_for(args, kwargs).memory_analysis(*args, **kwargs)

    def cache_info(self):
        return self._last.cache_info() if self._last is not None else None

    def __repr__(self):
        return f"<tracejit {self.__name__}>"


_derivative_type = None


def _make_derivative(body, fun, kind, argnums):
    """A Derivative as an instance of its native dispatch type (see api.Traced)."""
    global _derivative_type
    if _derivative_type is None:
        from .backend.pyabi_dispatch import make_dispatch_type
        _derivative_type = make_dispatch_type("Derivative", Derivative, doc=Derivative.__doc__)
    return _derivative_type(body, fun, kind, argnums)


def _as_tuple(x):
    return (x,) if isinstance(x, int) else tuple(x)


def _check_argnums(kind, argnums, args):
    single = isinstance(argnums, int)
    nums = _as_tuple(argnums)
    if not nums:
        raise InputError(f"{kind}: argnums is empty")
    for i in nums:
        if not isinstance(i, int) or not -len(args) <= i < len(args):
            raise InputError(f"{kind}: argnums {argnums} out of range for {len(args)} "
                             f"positional argument(s)")
    return tuple(i % len(args) for i in nums), single


def _check_inputs(kind, args, nums, holomorphic, allow_complex):
    for i in nums:
        for path, x in zip(tree.leaf_paths(tree.flatten(args[i])[1]), tree.flatten(args[i])[0]):
            t = leaf_type(x, f"argument {i}{path}")
            where = f"argument {i}{path}"
            if t.dtype.kind in "bi":
                raise InputError(
                    f"{kind}: {where} has dtype {t.dtype}; only float (and complex) arguments "
                    f"can be differentiated. Convert it with .astype(float), or leave it out of "
                    f"argnums (argnums={nums if len(nums) > 1 else nums[0]}).")
            if holomorphic and t.dtype.kind != "c":
                raise InputError(f"{kind} with holomorphic=True requires complex inputs, but "
                                 f"{where} has dtype {t.dtype}")
            if not holomorphic and not allow_complex and t.dtype.kind == "c":
                raise InputError(f"{kind} requires real inputs, but {where} has dtype "
                                 f"{t.dtype}. For holomorphic differentiation pass "
                                 f"holomorphic=True.")


def _partial(fun, args, kwargs, nums):
    def f_part(*dargs):
        full = list(args)
        for i, d in zip(nums, dargs):
            full[i] = d
        return fun(*full, **kwargs)
    return f_part


def _value_and_grad_body(fun, argnums, has_aux, holomorphic, kind):
    def body(*args, **kwargs):
        nums, single = _check_argnums(kind, argnums, args)
        _check_inputs(kind, args, nums, holomorphic, allow_complex=True)
        res = vjp(_partial(fun, args, kwargs, nums), *[args[i] for i in nums], has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        leaves = tree.flatten(out)[0]
        t = leaf_type(leaves[0], "output") if len(leaves) == 1 else None
        if t is None or t.shape != ():
            got = "a pytree" if t is None else f"shape {t.shape}"
            raise InputError(f"{kind} requires a scalar output, got {got}; use tracejit.vjp for "
                             f"a vector-Jacobian product or tracejit.jacrev for the Jacobian")
        if t.dtype.kind == "c" and not holomorphic:
            raise InputError(f"{kind} requires a real-valued output, got {t.dtype}. For "
                             f"holomorphic functions pass holomorphic=True; for a real loss of "
                             f"complex values take .real or abs() first.")
        if t.dtype.kind in "bi":
            raise InputError(f"{kind} requires a float output, got {t.dtype}")
        g = vjp_fn(np.ones((), t.dtype))
        g = g[0] if single else tuple(g)
        return ((out, res[2]) if has_aux else out), g
    return body


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """``value_and_grad(f)(*args) -> (f(*args), grad(f)(*args))`` (``((value, aux), grad)``
    with ``has_aux``). See :func:`grad`."""
    body = _value_and_grad_body(fun, argnums, has_aux, holomorphic, "value_and_grad")
    return _make_derivative(body, fun, "value_and_grad", argnums)


def grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums``.

    Returns a function with ``fun``'s signature giving one gradient per selected argument (a
    tuple if ``argnums`` is a tuple), each with that argument's pytree structure; with
    ``has_aux=True`` ``fun`` returns ``(value, aux)`` and the result is ``(grad, aux)``. Reverse
    mode: the backward graph is built by transposing the linearized graph. For complex inputs see
    the module docstring (JAX's convention); ``holomorphic=True`` for complex outputs.
    """
    vg = _value_and_grad_body(fun, argnums, has_aux, holomorphic, "grad")

    def body(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return _make_derivative(body, fun, "grad", argnums)


def _basis(t: Type):
    """The identity as a batch of one-hot tangents: shape (t.size,) + t.shape.

    Inside a trace it is ``iota == iota`` rather than a constant array, so the slices and
    products the batched JVP/VJP applies to it fuse into loops instead of reading (and
    constant-folding) n² stored values."""
    n = t.size
    if current_builder() is None:
        return np.eye(n, dtype=t.dtype).reshape((n,) + tuple(t.shape))
    from .ops.elementwise import convert_p, eq_p
    from .ops.structural import iota_p, reshape_p
    b = current_builder()                    # iota has no operands: record it explicitly
    rows, = b.add_eqn(iota_p, [], dict(dtype=np.dtype(np.int64), shape=(n, n), axis=0))
    cols, = b.add_eqn(iota_p, [], dict(dtype=np.dtype(np.int64), shape=(n, n), axis=1))
    eye = convert_p.bind(eq_p.bind(rows, cols), dtype=t.dtype)
    return reshape_p.bind(eye, shape=(n,) + tuple(t.shape)) if t.shape != (n,) else eye


def _jacobian_block(batched, n_basis, basis_shape, other_shape, basis_last):
    """A vmapped result of shape (n_basis,) + other_shape as the Jacobian block
    other_shape + basis_shape (basis_last) or basis_shape + other_shape."""
    import tracejit.numpy as tnp
    if basis_last:
        moved = tnp.moveaxis(batched, 0, -1) if len(other_shape) else batched
        return tnp.reshape(moved, tuple(other_shape) + tuple(basis_shape))
    return tnp.reshape(batched, tuple(basis_shape) + tuple(other_shape))


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by forward mode: the linearized graph pushes the whole basis of each input
    leaf as one batched (vmapped) JVP.

    ``jacfwd(f)(x)[o]`` has shape ``out.shape + x.shape`` for every output leaf ``o`` (a tuple
    over argnums when ``argnums`` is a tuple).
    """
    def body(*args, **kwargs):
        nums, single = _check_argnums("jacfwd", argnums, args)
        _check_inputs("jacfwd", args, nums, holomorphic, allow_complex=False)
        f_part = _partial(fun, args, kwargs, nums)
        dargs = [args[i] for i in nums]
        staged, leaves = _stage(f_part, dargs, has_aux)
        fwd, lin, n_res = staged.linearized()
        outs = staged.run("fwd", fwd, leaves + staged.captured)
        n = len(staged.graph.outvars)
        outs, res = outs[:n], outs[n:]
        in_types = staged.in_types
        out_types = staged.out_types[:staged.n_out]
        from .transforms.batching import vmap
        _, args_tree = tree.flatten(tuple(dargs))
        blocks = [[None] * len(in_types) for _ in out_types]      # blocks[o][l]
        for l, it in enumerate(in_types):
            def push(e, l=l):
                tans = [e if m == l else Zero(tangent_type(mt)) for m, mt in enumerate(in_types)]
                touts = eval_linear(lin, n_res, res, tans)
                return [_materialize(t, ot) for t, ot in zip(touts, out_types)]
            if it.size == 0:
                cols = [np.zeros((0,) + ot.shape, ot.dtype) for ot in out_types]
            else:
                cols = vmap(push)(_basis(it))                     # one batched JVP per leaf
            for o, ot in enumerate(out_types):
                blocks[o][l] = _jacobian_block(cols[o], it.size, it.shape, ot.shape, True)
        jac = []
        for o in range(len(out_types)):
            j = tree.unflatten(args_tree, blocks[o])
            jac.append(j[0] if single else tuple(j))
        result = tree.unflatten(staged.out_tree, jac)
        if has_aux:
            aux = [_value(a, t) for a, t in
                   zip(outs[staged.n_out:], staged.out_types[staged.n_out:])]
            return result, tree.unflatten(staged.aux_tree, aux)
        return result
    return _make_derivative(body, fun, "jacfwd", argnums)


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Jacobian by reverse mode: the forward pass runs once and the backward graph pulls the
    whole basis of each output leaf as one batched (vmapped) VJP. Same layout as :func:`jacfwd`."""
    def body(*args, **kwargs):
        nums, single = _check_argnums("jacrev", argnums, args)
        _check_inputs("jacrev", args, nums, holomorphic, allow_complex=True)
        f_part = _partial(fun, args, kwargs, nums)
        dargs = [args[i] for i in nums]
        res = vjp(f_part, *dargs, has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        o_leaves, o_tree = tree.flatten(out)
        o_types = [leaf_type(x, "output") for x in o_leaves]
        for t in o_types:
            if t.dtype.kind == "c" and not holomorphic:
                raise InputError(f"jacrev requires real-valued outputs, got {t.dtype}. For "
                                 f"holomorphic differentiation pass holomorphic=True.")
        in_leaves, args_tree = tree.flatten(tuple(dargs))
        in_types = [leaf_type(x, "argument") for x in in_leaves]
        from .transforms.batching import vmap
        blocks = [[None] * len(in_types) for _ in o_types]        # blocks[o][l]
        for o, ot in enumerate(o_types):
            def pull(e, o=o):
                cts = [e if m == o else np.zeros(mt.shape, mt.dtype)
                       for m, mt in enumerate(o_types)]
                return tree.flatten(vjp_fn(tree.unflatten(o_tree, cts)))[0]
            if ot.size == 0:
                rows = [np.zeros((0,) + it.shape, it.dtype) for it in in_types]
            else:
                rows = vmap(pull)(_basis(ot))                     # one batched VJP per leaf
            for l, it in enumerate(in_types):
                blocks[o][l] = _jacobian_block(rows[l], ot.size, ot.shape, it.shape, False)
        jac = []
        for o in range(len(o_types)):
            j = tree.unflatten(args_tree, blocks[o])
            jac.append(j[0] if single else tuple(j))
        result = tree.unflatten(o_tree, jac)
        return (result, res[2]) if has_aux else result
    return _make_derivative(body, fun, "jacrev", argnums)


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (forward-over-reverse)."""
    inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
    outer = jacfwd(inner, argnums, has_aux=has_aux, holomorphic=holomorphic)
    outer.__name__ = f"hessian({getattr(fun, '__name__', 'f')})"
    return outer
