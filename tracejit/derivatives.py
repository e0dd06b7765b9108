"""The derivative functions: grad, value_and_grad, jacfwd, jacrev, hessian.

Each returns a ``Derivative``: on arrays it runs a cached ``trace`` of the whole derivative
computation (one trace and compile per input signature); on tracers it inlines. Made again for
a function that behaves the same (same code, closure contents, defaults: tracejit.funkey) with
the same options, they return the same object, so ``tj.grad(f)(x)`` in a loop compiles once
per signature. Non-differentiated Python ints and bools are traced, as in ``trace``. They build on
jvp/vjp (tracejit.ad, whose docstring has the conventions: argnums, static arguments, complex
numbers, numerics). jacfwd/jacrev/hessian push the whole basis through one vmapped jvp/vjp.
"""
from __future__ import annotations

import functools

import numpy as np

from . import autograph, pickling, tree
from .ad import _materialize, _stage, _value, vjp
from .ad_util import Zero, tangent_type
from .api import _artifact_bytes, _producer, is_traced, trace
from .artifact import Artifact
from .config import config
from .core import Tracer, current_builder
from .errors import InputError
from .funkey import Memo
from .ir import Type
from .signature import leaf_type
from .transforms.partial_eval import eval_linear


def _is_static(a) -> bool:
    """Whether a non-differentiated argument is passed as a static (hashable) value: not when it
    is made of numbers and arrays only (Python ints and bools are traced as in ``trace``, and
    specialised on only where their values are needed: see core.Builder.know_input)."""
    leaves = tree.flatten(a)[0]
    if all(isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex))
           for x in leaves):
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
        from .backend.runtime.pyabi_dispatch import DispatchMethods, PyDispatch
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
        self._remake = None      # (kind, fun, argnums, has_aux, holomorphic): see _memoized

    def _traced_for(self, args, kwargs):
        nums = _as_tuple(self._argnums)
        static = tuple(i for i, a in enumerate(args) if i not in nums and _is_static(a))
        names = tuple(sorted(k for k, v in kwargs.items() if _is_static(v)))
        self._last = t = self._traced_of((static, names, config.strong_zero_where))
        return t

    def _traced_of(self, key):
        """The trace of the body for (static argnums, static argnames, strong_zero_where)."""
        t = self._traced.get(key)
        if t is None:
            static, names, _ = key
            t = self._traced[key] = trace(self._body, static_argnums=static,
                                          static_argnames=names)
            if not static and not names:
                t._owners.append(self)      # same arguments: its native entries serve us too
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

    def export_artifact(self, strict: bool = True) -> Artifact:
        """The compiled signatures of this derivative as an ``Artifact`` (see
        ``Traced.export_artifact``; each entry's ``variant`` names the trace it belongs to)."""
        return Artifact(self._artifact_entries(strict), self.__name__, _producer())

    def _artifact_entries(self, strict: bool) -> list:
        return [e for key, t in list(self._traced.items())
                for e in t._artifact_entries(key, strict)]

    def load_artifact(self, artifact: Artifact) -> int:
        """Make an artifact's signatures known (see ``Traced.load_artifact``)."""
        added = 0
        for e in artifact.entries:
            static, names, strong = e.variant
            t = self._traced_of((tuple(static), tuple(names), bool(strong)))
            added += t._restore_later(e)
        return added

    def __reduce__(self):
        """As the derivative of the user's function (by reference when it is importable;
        else by value, with the artifact of the compiled signatures): see pickling.py."""
        if self._remake is None:
            raise TypeError(f"cannot pickle {self.__name__}: made outside tracejit's "
                            f"derivative functions")
        kind, fun, argnums, has_aux, holomorphic = self._remake
        art = None
        if not pickling.user_importable(fun):
            fun = pickling.by_value(fun)
            art = _artifact_bytes(self._artifact_entries(strict=False), self.__name__)
        return _restore_derivative, (kind, fun, argnums, has_aux, holomorphic, art)

    def __repr__(self):
        return f"<tracejit {self.__name__}>"


def _restore_derivative(kind, fun, argnums, has_aux, holomorphic, artifact):
    """Unpickle a derivative object: ``kind(fun, ...)`` knowing the artifact's signatures."""
    d = _MAKERS[kind](fun, argnums, has_aux, holomorphic)
    if artifact is not None:
        d.load_artifact(Artifact.from_bytes(artifact))
    return d


_derivative_type = None


def _make_derivative(body, fun, kind, argnums):
    """A Derivative as an instance of its native dispatch type (see api.Traced)."""
    global _derivative_type
    if _derivative_type is None:
        from .backend.runtime.pyabi_dispatch import make_dispatch_type
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
            if t.dtype.kind in "biu":
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
        return autograph.call(fun, *full, **kwargs)      # (converted when the trace says so)
    return f_part


def residual_bytes(fun, *args, argnums=0) -> int:
    """Bytes of the residuals reverse mode keeps between the forward and backward pass of
    ``fun(*args)`` w.r.t. ``argnums`` (the outputs of the forward graph beyond ``fun``'s own).

    A while loop's tape (its per-step residuals) grows with the trip count, which only a run
    tells: when there is one, the forward pass runs once on ``args`` and the bytes it actually
    recorded are counted."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    diff_args = [args[i] for i in nums]
    staged, leaves = _stage(_partial(fun, args, {}, nums), diff_args)
    fwd, _, n_res = staged.linearized()
    res = fwd.outvars[len(fwd.outvars) - n_res:]
    if any(v.ty.dynamic for v in res):
        values = staged.run("fwd", fwd, list(leaves) + list(staged.captured))
        return int(sum(np.asarray(r).nbytes for r in values[len(values) - n_res:]))
    return int(sum(v.ty.size * v.ty.dtype.itemsize for v in res))


def _value_and_grad_body(fun, argnums, has_aux, holomorphic, kind):
    def body(*args, **kwargs):
        nums, single = _check_argnums(kind, argnums, args)
        _check_inputs(kind, args, nums, holomorphic, allow_complex=True)
        res = vjp(_partial(fun, args, kwargs, nums), *[args[i] for i in nums], has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        leaves = tree.flatten(out)[0]
        t = leaf_type(leaves[0], "output") if len(leaves) == 1 else None
        if t is None or t.size != 1:         # (one element of any shape, as autograd)
            got = "a pytree" if t is None else f"shape {t.shape}"
            raise InputError(f"{kind} requires a scalar output, got {got}; use tracejit.vjp for "
                             f"a vector-Jacobian product or tracejit.jacrev for the Jacobian")
        if t.dtype.kind == "c" and not holomorphic:
            raise InputError(f"{kind} requires a real-valued output, got {t.dtype}. For "
                             f"holomorphic functions pass holomorphic=True; for a real loss of "
                             f"complex values take .real or abs() first.")
        if t.dtype.kind in "biu":
            raise InputError(f"{kind} requires a float output, got {t.dtype}")
        g = vjp_fn(np.ones(t.shape, t.dtype))
        g = g[0] if single else tuple(g)
        return ((out, res[2]) if has_aux else out), g
    return body


# Derivative objects by function behaviour and options: ``tj.grad(f)(x)`` written in a loop
# finds the object (and its compiled signatures) the previous iteration made
_memo = Memo()


def _memoized(kind):
    def wrap(make):
        @functools.wraps(make)
        def cached(fun, argnums=0, has_aux=False, holomorphic=False):
            nums = argnums if isinstance(argnums, int) else tuple(argnums)
            def build():
                made = make(fun, argnums, has_aux, holomorphic)
                made._remake = (kind, fun, nums, bool(has_aux), bool(holomorphic))
                return made
            return _memo.get(fun, (kind, nums, bool(has_aux), bool(holomorphic)), build)
        cached.__name__ = cached.__qualname__ = kind
        return cached
    return wrap


@_memoized("value_and_grad")
def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """``value_and_grad(f)(*args) -> (f(*args), grad(f)(*args))`` (``((value, aux), grad)``
    with ``has_aux``). See :func:`grad`."""
    body = _value_and_grad_body(fun, argnums, has_aux, holomorphic, "value_and_grad")
    return _make_derivative(body, fun, "value_and_grad", argnums)


@_memoized("grad")
def grad(fun, argnums=0, has_aux=False, holomorphic=False):
    """The gradient of a scalar-valued ``fun`` with respect to argument(s) ``argnums`` (an
    output of one element of any shape, e.g. ``(1,)``, counts as a scalar, as in autograd).

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


def _over_basis(fn, t: Type, result_types):
    """``fn`` vmapped over the basis of a leaf of type ``t`` (one result per ``result_types``,
    batched along axis 0); an empty leaf has an empty basis."""
    if t.size == 0:
        return [np.zeros((0,) + r.shape, r.dtype) for r in result_types]
    from .vmapped import vmap
    return vmap(fn)(_basis(t))


def _assemble(blocks, args_tree, out_tree, single):
    """The Jacobian pytree from ``blocks[o][l]`` (output leaf o, argument leaf l): the output's
    structure, each leaf holding the arguments' structure (the argument itself if ``single``)."""
    jac = []
    for row in blocks:
        j = tree.unflatten(args_tree, row)
        jac.append(j[0] if single else tuple(j))
    return tree.unflatten(out_tree, jac)


def _jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
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
        _, args_tree = tree.flatten(tuple(dargs))
        blocks = [[None] * len(in_types) for _ in out_types]      # blocks[o][l]
        for l, it in enumerate(in_types):
            def push(e, l=l):
                tans = [e if m == l else Zero(tangent_type(mt)) for m, mt in enumerate(in_types)]
                touts = eval_linear(lin, n_res, res, tans)
                return [_materialize(t, ot) for t, ot in zip(touts, out_types)]
            cols = _over_basis(push, it, out_types)              # one batched JVP per leaf
            for o, ot in enumerate(out_types):
                blocks[o][l] = _jacobian_block(cols[o], it.size, it.shape, ot.shape, True)
        result = _assemble(blocks, args_tree, staged.out_tree, single)
        if has_aux:
            aux = [_value(a, t) for a, t in
                   zip(outs[staged.n_out:], staged.out_types[staged.n_out:])]
            return result, tree.unflatten(staged.aux_tree, aux)
        return result
    return _make_derivative(body, fun, "jacfwd", argnums)


jacfwd = _memoized("jacfwd")(_jacfwd)


@_memoized("jacrev")
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
        blocks = [[None] * len(in_types) for _ in o_types]        # blocks[o][l]
        for o, ot in enumerate(o_types):
            def pull(e, o=o):
                cts = [e if m == o else np.zeros(mt.shape, mt.dtype)
                       for m, mt in enumerate(o_types)]
                return tree.flatten(vjp_fn(tree.unflatten(o_tree, cts)))[0]
            rows = _over_basis(pull, ot, in_types)               # one batched VJP per leaf
            for l, it in enumerate(in_types):
                blocks[o][l] = _jacobian_block(rows[l], ot.size, ot.shape, it.shape, False)
        result = _assemble(blocks, args_tree, o_tree, single)
        return (result, res[2]) if has_aux else result
    return _make_derivative(body, fun, "jacrev", argnums)


@_memoized("hessian")
def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    """The Hessian of a scalar ``fun``: ``jacfwd(jacrev(fun))`` (forward-over-reverse)."""
    inner = jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic)
    outer = _jacfwd(inner, argnums, has_aux=has_aux, holomorphic=holomorphic)
    outer.__name__ = f"hessian({getattr(fun, '__name__', 'f')})"
    return outer


_MAKERS = {"grad": grad, "value_and_grad": value_and_grad, "jacfwd": jacfwd, "jacrev": jacrev,
           "hessian": hessian}


def export(fun, *example_args, name: str = "model", derivatives=(), directory: str = "."):
    """Write ``<directory>/<name>.so`` and ``<name>.h``: C functions for ``fun`` and each
    requested derivative (``"grad"``, ``"value_and_grad"``, ``"jacfwd"``, ``"jacrev"``,
    ``"hessian"``, of argument 0) at the signature of ``example_args``.

    ``int32_t <name>(const T *a0, ..., T *out0, ...)`` (and ``<name>_grad``, ...): pointers to
    C-contiguous arrays of the example's shapes (a scalar is a pointer to one element), the
    inputs then the outputs in pytree order; returns 0 or error bits (listed in the header).
    The library needs libc, libm and libpthread only (``backend/runtime/aot.py``). Returns
    the paths of the library and the header."""
    from .backend.runtime import aot
    if not name.isidentifier():
        raise InputError(f"export: name {name!r} is not a C identifier")
    made = [(name, fun if is_traced(fun) else trace(fun), "the function")]
    for kind in derivatives:
        if kind not in _MAKERS:
            raise InputError(f"export: unknown derivative {kind!r}; use one of {list(_MAKERS)}")
        made.append((f"{name}_{kind}", _MAKERS[kind](fun), f"{kind} with respect to a0"))
    leaves, treedef = tree.flatten(example_args)
    if any(c.kind is not None for c in treedef.children):
        raise InputError("export: pass the example arguments as arrays and numbers (pytrees "
                         "are not flattened into C parameters)")
    ins = [(f"a{i}", leaf_type(x, f"argument {i}").dtype, np.shape(x))
           for i, x in enumerate(leaves)]
    functions = []
    for c_name, obj, what in made:
        if getattr(obj, "static_argnums", ()):
            raise InputError(f"export: {c_name} has static arguments; export a function of its "
                             f"array arguments only (close over the static values)")
        compiled = obj.lower(*example_args)
        if compiled.backend != "llvm" or compiled.writes:
            raise InputError(f"export: {c_name} must be a function compiled by the llvm backend "
                             f"that does not write into its arguments")
        if compiled.value_leaves or compiled.range_facts:
            raise InputError(f"export: the trace of {c_name} depends on the value (or range) "
                             f"of a Python int argument, which a C parameter cannot keep; "
                             f"close over it instead")
        outs = [(v.ty.dtype, v.ty.shape) for v in compiled.graph.outvars]
        functions.append((c_name, compiled.executable, ins, outs,
                          f"{c_name}: {what} ({getattr(fun, '__name__', 'f')})"))
    return aot.write_library(functions, directory, name)
