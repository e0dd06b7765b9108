"""Testing helpers: ``check_grads`` compares AD with central finite differences.

- forward mode: ``jvp(f, x, v)`` against ``(f(x + eps v) - f(x - eps v)) / 2 eps`` along a random
  direction ``v``;
- reverse mode: ``Re<vjp(u), v>`` against ``Re<u, J v>`` (``J v`` by finite differences) for a
  random output cotangent ``u`` (``Re<a, b> = Re(sum(a * b))``, JAX's unconjugated pairing);
- higher orders recurse on the derivative functions (``x -> jvp(f, x, v)[1]`` and
  ``x -> vjp(f, x)[1](u)``), so order 2 checks second derivatives of both modes.
Finite differences are taken in float64 (complex128) whatever the arguments' dtype; AD runs at the
arguments' own dtype. Complex arguments get complex directions.
"""
from __future__ import annotations

import contextlib

import numpy as np

from . import tree

_TOL = {np.dtype(np.float32): 2e-2, np.dtype(np.complex64): 2e-2,
        np.dtype(np.float64): 1e-5, np.dtype(np.complex128): 1e-5}


def _rand_like(rng, x):
    x = np.asarray(x)
    v = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(x.shape)
    return v.astype(x.dtype) if x.dtype.kind in "fc" else np.zeros(x.shape, x.dtype)


def _inner(a_leaves, b_leaves) -> float:
    return float(sum(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128)))
                     for a, b in zip(a_leaves, b_leaves)))


def _dtype(x):
    return np.dtype(getattr(x, "dtype", None) or np.asarray(x).dtype)


def _name(f):
    return getattr(f, "__name__", repr(f))


def _fd(f, args, v, eps):
    """Central difference of f along v, in float64/complex128."""
    def shifted(s):
        out = []
        for x, d in zip(args, v):
            x = np.asarray(x)
            if x.dtype.kind not in "fc":
                out.append(x)
                continue
            wide = np.complex128 if x.dtype.kind == "c" else np.float64
            out.append(np.asarray(x, wide) + s * eps * np.asarray(d, wide))
        return out
    hi = tree.flatten(f(*shifted(+1)))[0]
    lo = tree.flatten(f(*shifted(-1)))[0]
    return [(np.asarray(h, np.complex128) - np.asarray(l, np.complex128)) / (2 * eps)
            for h, l in zip(hi, lo)]


def _close(a, b, atol, rtol):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


def check_grads(f, args, order=2, modes=("fwd", "rev"), eps=None, atol=None, rtol=None,
                seed=0):
    """Check the derivatives of ``f`` at ``args`` (a tuple of arrays) up to ``order``.

    Raises AssertionError naming the function, the mode and order, the argument and both numbers.
    """
    from .ad import jvp, vjp
    args = tuple(np.asarray(a) for a in args)
    rng = np.random.default_rng(seed)
    dts = [a.dtype for a in args if a.dtype.kind in "fc"]
    tol = max((_TOL.get(d, 1e-5) for d in dts), default=1e-5)
    atol = tol if atol is None else atol
    rtol = tol if rtol is None else rtol
    eps = (1e-3 if tol > 1e-4 else 1e-5) if eps is None else eps
    name = _name(f)

    def check(fun, xs, k, label):
        v = tuple(_rand_like(rng, x) for x in xs)
        expected = _fd(fun, xs, v, eps)
        if "fwd" in modes:
            _, t_out = jvp(fun, xs, v)
            got = tree.flatten(t_out)[0]
            for i, (g, e) in enumerate(zip(got, expected)):
                if not _close(np.asarray(g, np.complex128), e, atol, rtol):
                    raise AssertionError(
                        f"check_grads({name}): forward mode, order {k}{label}: output {i}: "
                        f"jvp gives {np.asarray(g)!r}, finite differences give {e!r} "
                        f"(direction {v!r}, at {xs!r})")
        if "rev" in modes:
            out, vjp_fn = vjp(fun, *xs)
            u = tree.tree_map(lambda o: _rand_like(rng, o), out)
            cts = vjp_fn(u)
            lhs = _inner(tree.flatten(cts)[0], v)
            rhs = _inner(tree.flatten(u)[0], expected)
            if not _close(lhs, rhs, atol * max(1, len(v)), rtol):
                per_arg = [_inner([c], [d]) for c, d in zip(cts, v)]
                raise AssertionError(
                    f"check_grads({name}): reverse mode, order {k}{label}: <vjp(u), v> = {lhs!r} "
                    f"(per argument {per_arg}) but <u, J v> by finite differences = {rhs!r} "
                    f"(at {xs!r})")
        if k < order:
            if "fwd" in modes:
                vv = v

                def f_jvp(*ys):
                    return jvp(fun, ys, tuple(np.asarray(t, _dtype(y)) if _dtype(y).kind in "fc"
                                              else t for t, y in zip(vv, ys)))[1]
                f_jvp.__name__ = f"jvp({_name(fun)})"
                check(f_jvp, xs, k + 1, label + " of jvp")
            if "rev" in modes:
                out = vjp(fun, *xs)[0]
                uu = tree.tree_map(lambda o: _rand_like(rng, o), out)

                def f_vjp(*ys):
                    o, fn = vjp(fun, *ys)
                    return fn(tree.tree_map(lambda c, oo: np.asarray(c, oo.dtype), uu, o))
                f_vjp.__name__ = f"vjp({_name(fun)})"
                check(f_vjp, xs, k + 1, label + " of vjp")

    check(f, args, 1, "")


@contextlib.contextmanager
def using_config(**settings):
    """``tracejit.config`` settings (``roll_loops=False``, ...) inside the block, restored after
    it."""
    from .config import config
    saved = {name: getattr(config, name) for name in settings}
    try:
        for name, value in settings.items():
            setattr(config, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def using_backend(name: str):
    """``tracejit.config.backend`` set to ``name`` inside the block, restored after it."""
    return using_config(backend=name)
