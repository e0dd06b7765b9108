"""The functions checked for one program: ``f`` itself and its transform layers.

Every case is a function of *all* of the program's arguments (so it is one jit signature with
the same inputs as ``f``) plus its two input sets; derivatives are taken with respect to the
float arguments only (``argnums``), of ``loss = sum_k sum(real(out_k) * w_k)`` over the
float/complex outputs with fixed random weights ``w_k``, or of ``fout`` (those outputs) for
jvp/vjp/jacobians. Finite differences (``fd_check``) run on the interpreter in float64 only
and only for programs without ``nofd`` ops; a point where two step sizes disagree is a kink
and is skipped rather than reported.
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np

import tracejit as tj

from . import gen

BATCH = 3
DIFF = ("float32", "float64", "complex64", "complex128")
FORWARD = ("jvp", "linearize", "jacfwd", "hessian", "jacfwd_holo")     # need forward mode


@dataclasses.dataclass
class Case:
    label: str
    fun: object
    in1: list
    in2: list
    reference: object = None          # callable(exp1, tol) raising Finding, or None
    fd_check: object = None           # callable() raising Finding, or None
    kwnames: tuple = ()               # the last len(kwnames) inputs are passed by keyword
    jit_kw: dict = dataclasses.field(default_factory=dict)     # e.g. static_argnums

    def call(self, fun, inputs):
        """``fun(*inputs)`` with the trailing ``kwnames`` inputs as keyword arguments."""
        k = len(self.kwnames)
        pos = inputs[:len(inputs) - k]
        return fun(*pos, **dict(zip(self.kwnames, inputs[len(inputs) - k:])))


def _like(rng, x):
    """A random tangent/cotangent of the type of ``x``."""
    if isinstance(x, float):
        return float(rng.normal())
    if isinstance(x, complex):
        return complex(rng.normal(), rng.normal())
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return (rng.normal(size=x.shape) + 1j * rng.normal(size=x.shape)).astype(x.dtype)
    return rng.normal(size=x.shape).astype(x.dtype)


def build_cases(prog: gen.Program, f) -> list:
    from .oracle import Finding, leaves
    in1, in2 = gen.make_inputs(prog, 0), gen.make_inputs(prog, 1)
    cases = [Case("f", f, in1, in2)]
    layers = list(prog.transforms)
    if not layers:
        return cases
    rng = np.random.default_rng([prog.seed, 11])
    # complex arguments are differentiated too where tracejit allows it (grad/jvp/vjp of a
    # real loss or of the outputs); jacobians take the float ones only
    diff = tuple(i for i, a in enumerate(prog.args) if a.dtype in DIFF)
    real_only = layers[0] in ("jacfwd", "jacrev", "hessian", "jacrev_grad")
    if real_only:
        diff = tuple(i for i in diff if prog.args[i].dtype in gen.FLOATS)
    holo = layers[0] in ("jacfwd_holo", "jacrev_holo")
    if holo:             # holomorphic=True: complex arguments only (an InputError otherwise)
        diff = tuple(i for i in diff if prog.args[i].dtype.startswith("complex"))
    outs = leaves(gen.eval_numpy(prog, in1))
    fo = [k for k, o in enumerate(outs) if o.dtype.kind in "fc"]
    weights = [rng.normal(size=outs[k].shape).astype(
        np.float32 if outs[k].dtype in (np.float32, np.complex64) else np.float64) for k in fo]

    def fout(*args):
        r = f(*args)
        return tuple(r[k] for k in fo)

    def loss(*args):
        r = fout(*args)
        return sum(np.sum(np.real(o) * w) for o, w in zip(r, weights))

    def with_diff(args, d):
        args = list(args)
        for i, v in zip(diff, d):
            args[i] = v
        return args

    tangents = [_like(rng, in1[i]) for i in diff]
    cts = tuple(_like(rng, outs[k]) for k in fo)
    # finite differences need float64 all the way: through a float32 value the steps are
    # quantised (a relative error of ~eps32/h, e.g. 1e-3), a difference of the fuzzer's making
    narrow = any(s.dtype in ("float32", "complex64") or "float32" in ln or "complex64" in ln
                 for s in prog.stmts for ln in s.lines)
    smooth = "nofd" not in prog.tags() and not narrow and all(
        prog.args[i].dtype in ("float64", "complex128") for i in diff)
    name = ",".join(layers)

    if all(a.kind != "array" for a in prog.args):
        layers = [t for t in layers if not t.startswith("vmap")]      # nothing to batch
    if not layers:
        return cases
    if layers[0] == "vmap":
        return cases + [_vmap_case(prog, f, name)]
    if layers[0] == "vmap_axes":
        return cases + [_vmap_case(prog, f, name, rng)]
    if layers == ["pytree"]:
        return cases + [_pytree_case(prog, f, name, rng, None)]
    if not diff or not fo or {"update:mul", "update:min", "update:max"} & prog.tags():
        return cases       # differentiating x.at[i].mul/min/max is documented as unsupported
    if "custom_vjp" in prog.tags() and layers[0] in FORWARD:
        return cases       # forward mode of a custom_vjp function: UnsupportedError, by design
    if real_only and any(outs[k].dtype.kind == "c" for k in fo):
        return cases       # jacobians of complex outputs need holomorphic=True
    if holo and any(outs[k].dtype.kind != "c" for k in fo):
        return cases       # holomorphic jacobians of real outputs: not defined
    grad = tj.grad(loss, argnums=diff)

    def on_diff(fn):
        """``fn`` as a function of the differentiated arguments, the others fixed."""
        return lambda args: (lambda *d: fn(*with_diff(args, d)))

    def primals(args):
        return [args[i] for i in diff]

    def jvp_f(*args):
        return tj.jvp(on_diff(fout)(args), tuple(primals(args)), tuple(tangents))

    def lin_f(*args):
        out, f_jvp = tj.linearize(on_diff(fout)(args), *primals(args))
        return out, f_jvp(*tangents)

    def vjp_f(*args):
        out, fn = tj.vjp(on_diff(fout)(args), *primals(args))
        return out, fn(cts)

    def vg_f(*args):
        return tj.value_and_grad(loss, argnums=diff)(*args)

    def jac(kind, holomorphic=False):
        # holomorphic=True on any program: the backends must agree on the (complex) Jacobian
        # tracejit computes whether or not the function really is holomorphic
        def j(*args):
            t = tj.jacfwd if kind == "jacfwd" else tj.jacrev
            return t(on_diff(fout)(args), argnums=tuple(range(len(diff))),
                     holomorphic=holomorphic)(*primals(args))
        return j

    def hess(*args):
        return tj.hessian(on_diff(loss)(args), argnums=tuple(range(len(diff))))(*primals(args))

    def jacrev_grad(*args):              # reverse over reverse
        g = tj.grad(on_diff(loss)(args), argnums=tuple(range(len(diff))))
        return tj.jacrev(g, argnums=tuple(range(len(diff))))(*primals(args))

    def hvp(*args):
        return tj.jvp(on_diff(grad)(args), tuple(primals(args)), tuple(tangents))

    first = layers[0]
    if layers == ["grad", "vmap"]:
        return cases + [_vmap_case(prog, grad, name)]
    if layers == ["vmap", "grad"]:
        return cases + [_grad_of_vmap_case(prog, loss, grad, diff, name)]
    if layers == ["pytree", "grad"]:
        return cases + [_pytree_case(prog, loss, name, rng, diff)]
    fun = {"grad": grad, "jvp": jvp_f, "vjp": vjp_f, "jacfwd": jac("jacfwd"),
           "jacrev": jac("jacrev"), "hessian": hess, "linearize": lin_f,
           "value_and_grad": vg_f, "jacrev_grad": jacrev_grad,
           "jacfwd_holo": jac("jacfwd", True), "jacrev_holo": jac("jacrev", True)}[first]
    if layers == ["grad", "jvp"]:
        fun = hvp
    case = Case(name, fun, in1, in2)
    if smooth and first in ("grad", "jvp", "linearize", "value_and_grad") and len(layers) == 1:
        kind = "grad" if first in ("grad", "value_and_grad") else "jvp"
        ad_fun = {"grad": grad, "value_and_grad": lambda *a: vg_f(*a)[1], "jvp": jvp_f,
                  "linearize": lin_f}[first]
        case.fd_check = lambda: _fd_check(prog, kind, loss, fout, ad_fun, diff, tangents, in1,
                                          with_diff, Finding, first)
    return cases + [case]


def _batched_axes(prog, rng):
    """Per-argument in_axes: 0 for arrays and None for Python scalars, or with ``rng`` a random
    valid axis (0, 1, -1 or None; at least one array batched) for each array."""
    axes = [0 if a.kind == "array" else None for a in prog.args]
    if rng is None:
        return axes
    for k, a in enumerate(prog.args):
        if a.kind == "array":
            choices = [0, -1, None] + ([1] if len(a.shape) >= 1 else [])
            axes[k] = choices[rng.integers(len(choices))]
    if all(ax is None for ax in axes):
        axes[next(k for k, a in enumerate(prog.args) if a.kind == "array")] = -1
    return axes


def _insert(shape, ax):
    shape = list(shape)
    shape.insert(len(shape) + 1 + ax if ax < 0 else ax, BATCH)
    return tuple(shape)


def _batched_inputs(prog, axes):
    """Inputs with a batch of BATCH inserted at each argument's axis (calls 2 and 3)."""
    args = [dataclasses.replace(a, shape=_insert(a.shape, ax)) if ax is not None else a
            for a, ax in zip(prog.args, axes)]
    bprog = dataclasses.replace(prog, args=args)
    return gen.make_inputs(bprog, 2), gen.make_inputs(bprog, 3)


def _element(in1, axes, b):
    return [np.take(x, b, axis=ax) if ax is not None else x for x, ax in zip(in1, axes)]


def _as_vmap_mismatch(check):
    from .oracle import Finding
    try:
        check()
    except Finding as e:
        e.record["cls"] = "vmap-mismatch"
        raise


def _vmap_case(prog, fun, name, rng=None):
    """vmap over a batch axis of the array arguments (a leading one, or with ``rng`` random
    in_axes and out_axes); the reference is the interpreter applied to each batch element in
    turn, the results stacked along out_axes."""
    from .oracle import compare, leaves
    axes = _batched_axes(prog, rng)
    in1, in2 = _batched_inputs(prog, axes)
    fi = tj.jit(fun, backend="interpret")
    out_ax = 0
    if rng is not None:
        # out_axes must be valid for every output leaf (per-example rank + 1)
        try:
            per0 = leaves(fi(*_element(in1, axes, 0)))
        except Exception:          # noqa: BLE001 - refused programs are reported by case "f"
            per0 = []
        rank = min(p.ndim for p in per0) if per0 else 0
        out_ax = int(rng.choice([0, -1] + ([1] if rank >= 1 else [])))
    vf = tj.vmap(fun, in_axes=tuple(axes), out_axes=out_ax)

    def reference(exp1, tol, mag=0.0):
        per = [leaves(fi(*_element(in1, axes, b))) for b in range(BATCH)]
        stacked = [np.stack([p[k] for p in per], axis=out_ax) for k in range(len(per[0]))]
        _as_vmap_mismatch(lambda: compare(leaves(exp1), stacked, f"{name}: vmap vs loop",
                                          tol=tol, mag=mag))
    label = name if rng is None else f"{name}(in_axes={tuple(axes)}, out_axes={out_ax})"
    return Case(label, vf, in1, in2, reference=reference)


def _grad_of_vmap_case(prog, loss, grad, diff, name):
    """grad of the batch sum of vmap(loss): per batched argument the per-example gradients,
    stacked; per unbatched (scalar) argument their sum."""
    from .oracle import compare, leaves
    axes = _batched_axes(prog, None)
    in1, in2 = _batched_inputs(prog, axes)
    vloss = tj.vmap(loss, in_axes=tuple(axes))
    fun = tj.grad(lambda *a: np.sum(vloss(*a)), argnums=diff)
    gi = tj.jit(grad, backend="interpret")

    def reference(exp1, tol, mag=0.0):
        per = [leaves(gi(*_element(in1, axes, b))) for b in range(BATCH)]
        want = [np.stack([p[k] for p in per]) if axes[i] is not None else
                np.sum([p[k] for p in per], axis=0).astype(per[0][k].dtype)
                for k, i in enumerate(diff)]
        _as_vmap_mismatch(lambda: compare(leaves(exp1), want, f"{name}: vs loop of grads",
                                          tol=tol, mag=mag))
    return Case(name, fun, in1, in2, reference=reference)


class Box:
    """A user container registered as a pytree node (``tj.register_pytree_node``)."""

    def __init__(self, items):
        self.items = tuple(items)


tj.register_pytree_node(Box, lambda b: (b.items, None), lambda aux, children: Box(children))


def _container(rng, k):
    """A random sequence container for ``k`` leaves: tuple, list, namedtuple or Box."""
    kind = ["tuple", "list", "namedtuple", "box"][rng.integers(4)]
    if kind == "namedtuple":
        nt = collections.namedtuple(f"Fields{k}", [f"f{i}" for i in range(k)])
        return kind, lambda items: nt(*items)
    return kind, {"tuple": tuple, "list": list, "box": Box}[kind]


def _items(c):
    return c.items if isinstance(c, Box) else tuple(c)


def _pytree_case(prog, fun, name, rng, diff):
    """``fun`` called with its arguments regrouped: a pytree first (a dict holding a tuple,
    list, namedtuple or registered ``Box``, a nested dict and a None), Python int/bool scalars
    as static arguments (by position, ``static_argnums``, or by keyword, ``static_argnames``),
    other arrays as keyword arguments. With ``diff``, the pytree holds exactly the
    differentiated arguments and the case is ``grad(fun)`` w.r.t. the whole pytree."""
    n = len(prog.args)
    # a static int makes what is computed from it concrete NumPy, which has no x.at[...]:
    # such programs pass their ints as (traced) keyword arguments instead
    static = [i for i, a in enumerate(prog.args) if a.kind in ("int", "bool")
              and ".at[" not in prog.source()]
    static_kw = [i for i in static if rng.random() < 0.5]
    static_pos = [i for i in static if i not in static_kw]
    rest = [i for i in range(n) if i not in static]
    if diff is None:
        order = [int(i) for i in rng.permutation(rest)]
        cut = int(rng.integers(0, len(order) + 1))
        in_tree, kw = order[:cut], order[cut:]
    else:
        in_tree, kw = list(diff), [i for i in rest if i not in diff]
    half = len(in_tree) // 2
    seq_part, dict_part = in_tree[:half], in_tree[half:]
    kind, make = _container(rng, len(seq_part))

    def regroup(args):
        t = {"t": make([args[i] for i in seq_part]), "d": {f"k{i}": args[i] for i in dict_part},
             "none": None}
        return [t] + [args[i] for i in static_pos] + [args[i] for i in kw + static_kw]

    def call(t, *rest_args, **kws):
        args = [None] * n
        for i, v in zip(seq_part, _items(t["t"])):
            args[i] = v
        for i in dict_part:
            args[i] = t["d"][f"k{i}"]
        for i, v in zip(static_pos, rest_args):
            args[i] = v
        for i in kw + static_kw:
            args[i] = kws[f"a{i}"]
        return fun(*args)

    packed = call if diff is None else tj.grad(call, argnums=0)
    in1, in2 = gen.make_inputs(prog, 0), gen.make_inputs(prog, 1)
    case = Case(f"{name}({kind}, static={tuple(static_pos)}, static_kw={tuple(static_kw)}, "
                f"kw={tuple(kw)})", packed, regroup(in1), regroup(in2))
    case.kwnames = tuple(f"a{i}" for i in kw + static_kw)
    case.jit_kw = {"static_argnums": tuple(range(1, 1 + len(static_pos))),
                   "static_argnames": tuple(f"a{i}" for i in static_kw)}
    return case


def _fd_check(prog, kind, loss, fout, ad_fun, diff, tangents, in1, with_diff, Finding,
              label):
    """Central differences of the interpreter along ``tangents`` at two step sizes; for a
    complex argument z, the directional derivative of a real loss along t is Re(sum(g * t))
    (JAX's convention: g = df/dx - i df/dy)."""
    fi = tj.jit(loss if kind == "grad" else fout, backend="interpret")
    x = [in1[i] for i in diff]

    def value(d):
        r = fi(*with_diff(in1, d))
        return [np.atleast_1d(np.asarray(o, np.complex128)) for o in
                ([r] if kind == "grad" else r)]

    def along(h):
        plus = value([xi + h * t for xi, t in zip(x, tangents)])
        minus = value([xi - h * t for xi, t in zip(x, tangents)])
        return [(p - m) / (2 * h) for p, m in zip(plus, minus)]

    fd1, fd2 = along(1e-5), along(1e-6)
    if kind == "grad":
        g = tj.jit(ad_fun, backend="interpret")(*in1)
        ad = [np.atleast_1d(np.asarray(np.real(sum(np.sum(np.asarray(gi) * t) for gi, t in
                                                   zip(g, tangents))), np.complex128))]
    else:
        ad = [np.atleast_1d(np.asarray(o, np.complex128)) for o in
              tj.jit(ad_fun, backend="interpret")(*in1)[1]]
    for k, (a, p, q) in enumerate(zip(ad, fd1, fd2)):
        scale = 1e-6 * (1 + np.max(np.abs(p), initial=0))
        kink = np.abs(p - q) > scale
        bad = ~kink & (np.abs(a - p) > 1e-4 * (1 + np.abs(p))) & np.isfinite(p)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            raise Finding("deriv-mismatch", f"{label}: finite differences",
                          f"output {k}: AD {a[i]!r} vs central differences {p[i]!r} "
                          f"(h=1e-6: {q[i]!r})", f"{label}: vs finite differences")
