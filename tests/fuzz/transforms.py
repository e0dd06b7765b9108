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

import dataclasses

import numpy as np

import tracejit as tj

from . import gen

BATCH = 3


@dataclasses.dataclass
class Case:
    label: str
    fun: object
    in1: list
    in2: list
    reference: object = None          # callable(exp1) raising Finding, or None
    fd_check: object = None           # callable() raising Finding, or None


def _like(rng, x):
    """A random tangent/cotangent of the type of ``x``."""
    if isinstance(x, float):
        return float(rng.normal())
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return (rng.normal(size=x.shape) + 1j * rng.normal(size=x.shape)).astype(x.dtype)
    return rng.normal(size=x.shape).astype(x.dtype)


def build_cases(prog: gen.Program, f) -> list:
    from .oracle import Finding, compare, leaves
    in1, in2 = gen.make_inputs(prog, 0), gen.make_inputs(prog, 1)
    cases = [Case("f", f, in1, in2)]
    layers = list(prog.transforms)
    if not layers:
        return cases
    rng = np.random.default_rng([prog.seed, 11])
    diff = tuple(i for i, a in enumerate(prog.args) if a.dtype in gen.FLOATS)
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
    smooth = "nofd" not in prog.tags() and all(prog.args[i].dtype == "float64" for i in diff)
    name = ",".join(layers)

    if all(a.kind != "array" for a in prog.args):
        layers = [t for t in layers if t != "vmap"]         # nothing to batch
    if not layers:
        return cases
    if layers[0] == "vmap":
        return cases + [_vmap_case(prog, f, name)]
    if not diff or not fo or {"update:mul", "update:min", "update:max"} & prog.tags():
        return cases       # differentiating x.at[i].mul/min/max is documented as unsupported
    if layers[0] in ("jacfwd", "jacrev", "hessian") and any(outs[k].dtype.kind == "c"
                                                            for k in fo):
        return cases       # jacobians of complex outputs need holomorphic=True
    grad = tj.grad(loss, argnums=diff)

    def jvp_f(*args):
        return tj.jvp(lambda *d: fout(*with_diff(args, d)), tuple(args[i] for i in diff),
                      tuple(tangents))

    def vjp_f(*args):
        out, fn = tj.vjp(lambda *d: fout(*with_diff(args, d)), *[args[i] for i in diff])
        return out, fn(cts)

    def jac(kind):
        def j(*args):
            t = tj.jacfwd if kind == "jacfwd" else tj.jacrev
            return t(lambda *d: fout(*with_diff(args, d)), argnums=tuple(range(len(diff))))(
                *[args[i] for i in diff])
        return j

    def hess(*args):
        return tj.hessian(lambda *d: loss(*with_diff(args, d)),
                          argnums=tuple(range(len(diff))))(*[args[i] for i in diff])

    def hvp(*args):
        return tj.jvp(lambda *d: grad(*with_diff(args, d)), tuple(args[i] for i in diff),
                      tuple(tangents))

    first = layers[0]
    if layers == ["grad", "vmap"]:
        return cases + [_vmap_case(prog, grad, name)]
    fun = {"grad": grad, "jvp": jvp_f, "vjp": vjp_f, "jacfwd": jac("jacfwd"),
           "jacrev": jac("jacrev"), "hessian": hess}[first]
    if layers == ["grad", "jvp"]:
        fun = hvp
    case = Case(name, fun, in1, in2)
    if smooth and first in ("grad", "jvp") and len(layers) == 1:
        case.fd_check = lambda: _fd_check(prog, first, loss, fout, grad, jvp_f, diff,
                                          tangents, in1, with_diff, Finding)
    return cases + [case]


def _vmap_case(prog, fun, name):
    """vmap over a leading batch axis of every array argument; the reference is the
    interpreter applied to each batch element in turn."""
    from .oracle import compare, leaves
    batched = [dataclasses.replace(a, shape=(BATCH,) + tuple(a.shape)) if a.kind == "array"
               else a for a in prog.args]
    bprog = dataclasses.replace(prog, args=batched)
    in1, in2 = gen.make_inputs(bprog, 2), gen.make_inputs(bprog, 3)
    axes = tuple(0 if a.kind == "array" else None for a in prog.args)
    vf = tj.vmap(fun, in_axes=axes)
    fi = tj.jit(fun, backend="interpret")

    def reference(exp1):
        per = [leaves(fi(*[x[b] if ax == 0 else x for x, ax in zip(in1, axes)]))
               for b in range(BATCH)]
        stacked = [np.stack([p[k] for p in per]) for k in range(len(per[0]))]
        try:
            compare(leaves(exp1), stacked, f"{name}: vmap vs loop")
        except Exception as e:
            if hasattr(e, "record"):
                e.record["cls"] = "vmap-mismatch"
            raise
    return Case(name, vf, in1, in2, reference=reference)


def _fd_check(prog, kind, loss, fout, grad, jvp_f, diff, tangents, in1, with_diff, Finding):
    """Central differences of the interpreter along ``tangents`` at two step sizes."""
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
        g = tj.jit(grad, backend="interpret")(*in1)
        ad = [np.atleast_1d(np.asarray(sum(np.sum(np.asarray(gi) * t) for gi, t in
                                           zip(g, tangents)), np.complex128))]
    else:
        ad = [np.atleast_1d(np.asarray(o, np.complex128)) for o in
              tj.jit(jvp_f, backend="interpret")(*in1)[1]]
    for k, (a, p, q) in enumerate(zip(ad, fd1, fd2)):
        scale = 1e-6 * (1 + np.max(np.abs(p), initial=0))
        kink = np.abs(p - q) > scale
        bad = ~kink & (np.abs(a - p) > 1e-4 * (1 + np.abs(p))) & np.isfinite(p)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            raise Finding("deriv-mismatch", f"{kind}: finite differences",
                          f"output {k}: AD {a[i]!r} vs central differences {p[i]!r} "
                          f"(h=1e-6: {q[i]!r})", f"{kind}: vs finite differences")

