"""vmap: every batching rule against a Python loop over the batch, in_axes/out_axes variations,
nesting, control flow, errors. The table covers each primitive kind (elementwise defaults,
reductions, structural, contraction, gather/scatter, control flow)."""
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.core import REGISTRY
from tracejit.errors import InputError

rng = np.random.default_rng(0)
B = 4
W = rng.standard_normal((3, 2))

# name -> (per-example function, example shapes); each argument is batched along axis 0
CASES = {
    "elementwise": (lambda a, b: np.tanh(a) * np.exp(-b * b) + a / (1 + b * b), [(3,), (3,)]),
    "scalar_mix": (lambda a, s: a * s + np.sin(s), [(3,), ()]),
    "select": (lambda a, b: np.where(a > b, a, b), [(2, 3), (2, 3)]),
    "compare_logic": (lambda a, b: np.logical_and(a > 0, b < 0).astype(np.float64), [(3,), (3,)]),
    "convert": (lambda a: (a * 10).astype(np.int32) + 1, [(3,)]),
    "integer_pow": (lambda a: a ** 3, [(3,)]),
    "reduce_sum": (lambda a: a.sum(axis=1), [(2, 3)]),
    "reduce_max": (lambda a: np.max(a, axis=0), [(2, 3)]),
    "reduce_min_prod": (lambda a: np.min(a) + np.prod(a, axis=1).sum(), [(2, 3)]),
    "argmax": (lambda a: np.argmax(a, axis=1), [(2, 3)]),
    "cumsum": (lambda a: np.cumsum(a, axis=0) + np.cumprod(a, axis=1), [(2, 3)]),
    "broadcast": (lambda a: np.broadcast_to(a, (2, 3)) + 1, [(3,)]),
    "reshape_transpose": (lambda a: a.reshape(3, 2).T, [(2, 3)]),
    "slice_rev": (lambda a: a[::-2, 1:], [(5, 3)]),
    "concatenate": (lambda a, b: np.concatenate([a, b, a], axis=0), [(2,), (3,)]),
    "pad": (lambda a: np.pad(a, (1, 2)), [(3,)]),
    "take": (lambda a: a[np.array([2, 0, 2])], [(3,)]),
    "take_traced": (lambda a, i: a[(i * 0).astype(np.int64) + 1], [(3,), (2,)]),
    "gather_2d": (lambda a: a[:, np.array([1, 0])], [(2, 3)]),
    "scatter_add": (lambda a: a.at[np.array([0, 0, 2])].add(1.0), [(3,)]),
    "scatter_set_traced": (lambda a, v: a.at[1].set(v), [(3,), ()]),
    "dot_vec": (lambda a: a @ W, [(3,)]),
    "dot_both": (lambda a, b: np.dot(a, b), [(3,), (3,)]),
    "matmul_batch": (lambda a, b: a @ b, [(2, 3), (3, 4)]),
    "einsum": (lambda a, b: np.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    "complex": (lambda a: np.abs(np.exp(1j * a)) + np.real(a * (1 + 2j)), [(3,)]),
    "cond": (lambda p, a: tj.cond(p > 0, lambda x: x * 2, lambda x: -x, a), [(), (3,)]),
    "while": (lambda a: tj.while_loop(lambda c: c[0] < 5.0, lambda c: (c[0] * 2 + 1, c[1] + 1),
                                      (np.abs(a), 0)), [()]),
    "fori": (lambda a: tj.fori_loop(0, 3, lambda i, c: c * a + i, a), [(3,)]),
    "scan": (lambda a: tj.scan(lambda c, x: (c + x * a, c * x), 0.0, np.arange(3.0))[1], [()]),
}


def _loop(fn, args):
    outs = [fn(*[a[i] for a in args]) for i in range(B)]
    return tj.tree.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_matches_loop(name, backend):
    saved = tj.config.backend
    tj.config.backend = backend
    try:
        fn, shapes = CASES[name]
        args = [rng.standard_normal((B,) + s) for s in shapes]
        got = tj.vmap(fn)(*args)
        want = _loop(tj.trace(fn), args)
        for g, w in zip(tj.tree.tree_leaves(got), tj.tree.tree_leaves(want)):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    finally:
        tj.config.backend = saved


def test_every_primitive_has_a_batching_path():
    from tracejit.transforms import batching
    missing = [p.name for p in REGISTRY.values()
               if p.batch is None and p not in batching._RULES
               and p.kind not in ("elementwise", "reduction", "structural")
               and p.name != "custom_vjp_lin"]        # only ever transposed, never batched
    assert not missing, f"no batching rule: {missing}"


def test_in_axes_none_and_nonzero_and_out_axes():
    x = rng.standard_normal((3, B))
    y = rng.standard_normal(3)
    f = tj.vmap(lambda a, b: a * b + 1, in_axes=(1, None), out_axes=1)
    np.testing.assert_allclose(f(x, y), x * y[:, None] + 1)
    g = tj.vmap(lambda d: d["a"] * d["b"], in_axes=({"a": 0, "b": None},))
    np.testing.assert_allclose(g({"a": x.T, "b": y}), x.T * y)


def test_nested_vmap_and_composition_with_trace():
    x = rng.standard_normal((B, 5, 3))
    f = tj.vmap(tj.vmap(lambda a: np.sum(a * a)))
    np.testing.assert_allclose(f(x), np.sum(x * x, axis=-1))
    g = tj.trace(lambda a: tj.vmap(lambda r: r @ W)(a))
    np.testing.assert_allclose(g(x[0]), x[0] @ W)


def test_while_with_batched_predicate_stops_each_lane():
    v = np.array([1.0, 3.0, 20.0, 0.5])
    out = tj.vmap(lambda a: tj.while_loop(lambda c: c < 10.0, lambda c: c * 2, a))(v)
    want = []
    for a in v:
        while a < 10.0:
            a *= 2
        want.append(a)
    np.testing.assert_array_equal(out, want)


def test_errors_name_the_argument():
    with pytest.raises(InputError, match=r"different batch sizes.*args\[0\].*args\[1\]"):
        tj.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(InputError, match=r"out of range for args\[0\]"):
        tj.vmap(lambda a: a, in_axes=2)(np.ones((3, 2)))
