"""Structural, product and creation functions, traced vs NumPy (exact: these move data or sum
in NumPy's own order in the interpreter). Shapes and parameters are drawn by hypothesis; each
check calls the cached trace a second time with other values (no retrace, still right)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tracejit
import tracejit.numpy as tnp
from np_support import ALL, FC, F, I, INTS, assert_same, check, sample, seeds, shapes

SET = settings(max_examples=15)

pytestmark = pytest.mark.usefixtures("interpret_backend")
DTS = st.sampled_from(ALL)


def _two(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return sample(rng, shape, dtype, INTS), sample(rng, shape, dtype, INTS)


def both(key, fn, x, x2, **kw):
    """Check ``fn`` through tracejit.numpy and plain NumPy dispatch (fn takes the namespace)."""
    check(("tnp",) + key, lambda a: fn(tnp, a), x, npfn=lambda a: fn(np, a), others=[(x2,)], **kw)
    check(("np",) + key, lambda a: fn(np, a), x, others=[(x2,)], **kw)


@SET
@given(shape=shapes, dtype=DTS, seed=seeds, data=st.data())
def test_reshape_ravel_transpose(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    both(("reshape", shape), lambda m, a: m.reshape(a, (-1,)), x, x2)
    both(("reshape2", shape), lambda m, a: m.reshape(a, (1,) + shape + (1,)), x, x2)
    both(("ravel", shape), lambda m, a: m.ravel(a), x, x2)
    both(("transpose", perm), lambda m, a: m.transpose(a, perm), x, x2)
    both(("transpose_default",), lambda m, a: m.transpose(a), x, x2)
    check(("T",), lambda a: a.T, x, others=[(x2,)])
    check(("method_transpose", perm), lambda a: a.transpose(*perm) if perm else a.transpose(),
          x, others=[(x2,)])
    check(("method_reshape", shape), lambda a: a.reshape(-1), x, others=[(x2,)])
    check(("props", shape), lambda a: (a.shape, a.ndim, a.size), x,
          npfn=lambda a: (a.shape, a.ndim, a.size))
    check(("dtype_prop", shape, dtype), lambda a: a.dtype == np.dtype(dtype), x,
          npfn=lambda a: True)


@SET
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=3), dtype=DTS,
       seed=seeds, data=st.data())
def test_axes_shuffles(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    nd = len(shape)
    i, j = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    both(("swapaxes", i, j), lambda m, a: m.swapaxes(a, i, j), x, x2)
    both(("moveaxis", i, j), lambda m, a: m.moveaxis(a, i, j), x, x2)
    k = data.draw(st.integers(-nd - 1, nd))
    both(("expand_dims", k), lambda m, a: m.expand_dims(a, k), x, x2)
    both(("flip", i), lambda m, a: m.flip(a, i), x, x2)
    both(("flip_all",), lambda m, a: m.flip(a), x, x2)
    sh = data.draw(st.integers(-7, 7))
    both(("roll", sh, i), lambda m, a: m.roll(a, sh, axis=i), x, x2)
    both(("roll_flat", sh), lambda m, a: m.roll(a, sh), x, x2)
    both(("squeeze",), lambda m, a: m.squeeze(m.expand_dims(a, (0, -1))), x, x2)
    check(("squeeze_axis", shape), lambda a: a.reshape((1,) + shape).squeeze(axis=0), x,
          others=[(x2,)])


@SET
@given(shape=shapes, dtype=DTS, seed=seeds, data=st.data())
def test_broadcast_to_and_tile(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    target = (2,) + tuple(3 if d == 1 and data.draw(st.booleans()) else d for d in shape)
    both(("broadcast_to", target), lambda m, a: m.broadcast_to(a, target), x, x2)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4)))
    both(("tile", reps), lambda m, a: m.tile(a, reps), x, x2)
    both(("tile_int",), lambda m, a: m.tile(a, 2), x, x2)


@SET
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4), dtype=DTS,
       seed=seeds, data=st.data())
def test_repeat(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    axis = data.draw(st.integers(0, len(shape) - 1))
    r = data.draw(st.integers(0, 3))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=shape[axis],
                                    max_size=shape[axis])))
    both(("repeat", r, axis), lambda m, a: m.repeat(a, r, axis=axis), x, x2)
    both(("repeat_arr", reps, axis), lambda m, a: m.repeat(a, reps, axis=axis), x, x2)
    both(("repeat_flat", r), lambda m, a: m.repeat(a, r), x, x2)
    check(("repeat_method", reps, axis), lambda a: a.repeat(np.array(reps), axis=axis), x,
          others=[(x2,)])


@SET
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
       d1=DTS, d2=DTS, seed=seeds, data=st.data())
def test_concatenate_stack_split(shape, d1, d2, seed, data):
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    other = list(shape)
    other[axis] = data.draw(st.integers(0, 3))
    rng = np.random.default_rng(seed)
    x, y = sample(rng, shape, d1, INTS), sample(rng, tuple(other), d2, INTS)
    x2, y2 = sample(rng, shape, d1, INTS), sample(rng, tuple(other), d2, INTS)
    check(("concat", axis), lambda a, b: np.concatenate([a, b, a], axis=axis), x, y,
          others=[(x2, y2)])
    check(("tconcat", axis), lambda a, b: tnp.concatenate((a, b), axis), x, y,
          npfn=lambda a, b: np.concatenate((a, b), axis), others=[(x2, y2)])
    check(("concat_none",), lambda a, b: np.concatenate([a, b], axis=None), x, y)
    check(("concat_const", axis, shape), lambda a: np.concatenate([a, np.zeros(shape, np.int32)],
                                                            axis=axis), x, others=[(x2,)])
    s = data.draw(st.integers(-nd - 1, nd))
    check(("stack", s), lambda a, b: np.stack([a, b.astype(a.dtype)], axis=s), x, x.copy(),
          others=[(x2, x)])
    check(("hstack",), lambda a: np.hstack([a, a]), x, others=[(x2,)])
    check(("vstack",), lambda a: np.vstack([a, a]), x, others=[(x2,)])
    n = shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(-1, n + 1), max_size=3)))
    check(("split_idx", tuple(cuts), axis), lambda a: np.split(a, cuts, axis=axis), x,
          others=[(x2,)])
    k = data.draw(st.sampled_from([d for d in range(1, 5) if n % d == 0] or [1]))
    if n % k == 0:
        check(("split_k", k, axis), lambda a: tnp.split(a, k, axis=axis), x,
              npfn=lambda a: np.split(a, k, axis=axis), others=[(x2,)])


@SET
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), dtype=DTS,
       seed=seeds, data=st.data())
def test_pad(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    nd = len(shape)
    widths = tuple((data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5)))
                   for _ in range(nd))
    mode = data.draw(st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]))
    both(("pad", widths, mode), lambda m, a: m.pad(a, widths, mode=mode), x, x2)
    both(("pad_int", mode), lambda m, a: m.pad(a, 2, mode=mode), x, x2)
    if dtype != "bool":
        cv = tuple((data.draw(st.integers(-3, 3)), data.draw(st.integers(-3, 3)))
                   for _ in range(nd))
        both(("pad_cv", widths, cv), lambda m, a: m.pad(a, widths, constant_values=cv), x, x2)
        both(("pad_cv1", widths), lambda m, a: m.pad(a, widths, constant_values=7), x, x2)


def test_pad_traced_value_and_unsupported_mode():
    x = np.arange(6.).reshape(2, 3)
    check("pad_tv", lambda a, v: tnp.pad(a, 1, constant_values=v), x, 2.5,
          npfn=lambda a, v: np.pad(a, 1, constant_values=v), others=[(x * 2, -1.0)])
    with pytest.raises(tracejit.UnsupportedError, match="median"):
        tracejit.trace(lambda a: np.pad(a, 1, mode="median"))(x)


@SET
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), dtype=DTS,
       seed=seeds, data=st.data())
def test_take_and_take_along_axis(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    n = shape[axis]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=5)), dtype=np.int64)
    both(("take", axis, idx.tobytes()), lambda m, a: m.take(a, idx, axis=axis), x, x2)
    flat = idx % x.size
    both(("take_flat", flat.tobytes()), lambda m, a: m.take(a, flat), x, x2)
    check(("take_traced", axis), lambda a, i: tnp.take(a, i, axis=axis), x, idx,
          npfn=lambda a, i: np.take(a, i, axis=axis), others=[(x2, idx[::-1].copy())])
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(0, 4))
    ishape = [d if k == axis % nd or not data.draw(st.booleans()) else 1
              for k, d in enumerate(ishape)]
    rng = np.random.default_rng(seed)
    ind = rng.integers(-n, n, size=ishape)
    both(("tal", axis, ind.tobytes(), tuple(ishape)),
         lambda m, a: m.take_along_axis(a, ind, axis=axis), x, x2)
    check(("tal_traced", axis), lambda a, i: np.take_along_axis(a, i, axis=axis), x, ind,
          others=[(x2, rng.integers(-n, n, size=ishape))])
    check(("tal_none",), lambda a, i: np.take_along_axis(a, i, axis=None), x,
          np.array([0, x.size - 1]))


# ---------------------------------------------------------------------------------------------
# products

PROD_DTS = st.sampled_from(I + FC)


@SET
@given(d1=PROD_DTS, d2=PROD_DTS, seed=seeds, data=st.data())
def test_matmul_dot_family(d1, d2, seed, data):
    n, k, m = (data.draw(st.integers(0, 4)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    rng = np.random.default_rng(seed)
    a_shape = data.draw(st.sampled_from([(k,), batch.input_shapes[0] + (n, k)]))
    b_shape = data.draw(st.sampled_from([(k,), batch.input_shapes[1] + (k, m)]))
    a, b = sample(rng, a_shape, d1, INTS), sample(rng, b_shape, d2, INTS)
    a2, b2 = sample(rng, a_shape, d1, INTS), sample(rng, b_shape, d2, INTS)
    ulps = 4          # BLAS and einsum sum in other orders (with FMA): bound the error by
    eps = max(np.finfo(np.result_type(d1, d2, np.float32)).eps, 1e-16)   # k * eps * |a||b|
    atol = 4 * max(k, 1) * eps * 20 * 20 if np.result_type(d1, d2).kind in "fc" else 0
    check(("matmul",), lambda p, q: p @ q, a, b, others=[(a2, b2)], ulps=ulps, atol=atol)
    check(("np.matmul",), lambda p, q: np.matmul(p, q), a, b, ulps=ulps, atol=atol)
    check(("tnp.matmul",), lambda p, q: tnp.matmul(p, q), a, b, npfn=np.matmul, ulps=ulps,
          atol=atol)
    if len(a_shape) <= 2 and len(b_shape) <= 2:
        check(("dot",), lambda p, q: np.dot(p, q), a, b, others=[(a2, b2)], ulps=ulps, atol=atol)
    if len(b_shape) >= 2:
        bt = np.swapaxes(b, -1, -2).copy()
        check(("inner",), lambda p, q: np.inner(p, q), a, bt, ulps=ulps, atol=atol)
    check(("outer",), lambda p, q: np.outer(p, q), a, b, others=[(a2, b2)], ulps=ulps, atol=atol)
    check(("vdot",), lambda p, q: np.vdot(p, q), a.ravel()[:3].copy(), b.ravel()[:3].copy(),
          ulps=ulps, atol=atol)
    check(("tensordot",), lambda p, q: np.tensordot(p, q, axes=([-1], [-2 if q.ndim > 1
                                                                        else 0])),
          a, b, ulps=ulps, atol=atol)
    check(("tensordot0",), lambda p, q: np.tensordot(p, q, 0), a, b, ulps=ulps, atol=atol)


def test_dot_nd_and_tensordot_int_axes():
    x = np.arange(24.).reshape(2, 3, 4)
    y = np.arange(40.).reshape(5, 4, 2)
    check("dot_nd", np.dot, x, y, others=[(x + 1, y * 2)])
    check("tensordot2", lambda p, q: np.tensordot(p, q, 2), x, x.transpose(1, 2, 0).copy())
    check("tensordot_pairs", lambda p, q: np.tensordot(p, q, axes=([0, 2], [2, 1])), x, y)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ba", [(2, 3)]),
    ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("iij->j", [(3, 3, 2)]), ("iji->ij", [(2, 3, 2)]),
    ("i,j,k->ijk", [(2,), (3,), (2,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("i,i", [(4,), (4,)]), ("i,i->i", [(4,), (4,)]), ("ij,ij->", [(2, 3), (2, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("ij->", [(2, 3)]), ("ijk->kji", [(2, 3, 4)]),
    ("ij,kl->ijkl", [(2, 3), (1, 2)]), ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),
    ("ij,i->j", [(0, 3), (0,)]), ("ii,ij->j", [(3, 3), (3, 2)]), (" i j , j k ", [(2, 3), (3, 4)]),
    ("ij,ji", [(2, 3), (3, 2)]), ("i,i,i->", [(3,), (3,), (3,)]),
]


@pytest.mark.parametrize("spec,shapes_", EINSUM, ids=[e[0] for e in EINSUM])
@pytest.mark.parametrize("dtype", ["float64", "complex64", "int32"])
def test_einsum(spec, shapes_, dtype):
    rng = np.random.default_rng(0)
    ops = [sample(rng, s, dtype, INTS) for s in shapes_]
    ops2 = [sample(rng, s, dtype, INTS) for s in shapes_]
    check(("einsum", spec, dtype), lambda *a: np.einsum(spec, *a), *ops, others=[ops2], ulps=4)
    check(("tnp.einsum", spec, dtype), lambda *a: tnp.einsum(spec, *a), *ops,
          npfn=lambda *a: np.einsum(spec, *a), ulps=4)


def test_einsum_mixed_dtypes():
    check("einsum_mixed", lambda a, b: np.einsum("i,i", a, b), np.ones(3, np.float32),
          np.arange(3, dtype=np.int32))


@SET
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=4),
       dtype=st.sampled_from(I + FC), seed=seeds, data=st.data())
def test_diagonal_trace(shape, dtype, seed, data):
    x, x2 = _two(shape, dtype, seed)
    nd = len(shape)
    off = data.draw(st.integers(-4, 4))
    a1, a2 = data.draw(st.permutations(range(nd)))[:2]
    both(("diagonal", off, a1, a2), lambda m, a: m.diagonal(a, off, a1, a2), x, x2)
    both(("trace", off, a1, a2), lambda m, a: m.trace(a, off, a1, a2), x, x2)
    check(("diag_method", off), lambda a: a.diagonal(off), x, others=[(x2,)])


# ---------------------------------------------------------------------------------------------
# creation and astype

def test_creation_inside_trace():
    x = np.arange(12.).reshape(3, 4)
    xf = x.astype(np.float32)
    cases = [
        ("zeros", lambda a: a + np.zeros(4)), ("zeros_i", lambda a: tnp.zeros((3, 4), int) + a),
        ("ones", lambda a: a * tnp.ones(4, np.complex64)), ("eye", lambda a: np.eye(3, 4) * a),
        ("eye_k", lambda a: tnp.eye(3, 4, k=-1, dtype=np.float32) * a),
        ("arange", lambda a: np.arange(4) * a), ("arange_f", lambda a: tnp.arange(0.5, 4) * a),
        ("zeros_like", np.zeros_like), ("ones_like", lambda a: np.ones_like(a, dtype=np.int32)),
        ("full_like", lambda a: np.full_like(a, 2.5)),
        ("full_like_t", lambda a: np.full_like(a, a[0, 0])),
        ("tzeros_like", tnp.zeros_like), ("tones_like", tnp.ones_like),
        ("tfull_like", lambda a: tnp.full_like(a, 3, dtype=np.int32)),
        ("tfull", lambda a: tnp.full((2, 2), a[1, 1])),
        ("tfull_dt", lambda a: tnp.full((2,), a[1, 1], dtype=np.complex128)),
        ("linspace", lambda a: np.linspace(0, 1, 4) * a),
    ]
    for key, fn in cases:
        for arr in (x, xf):
            npfn = {"tfull": lambda a: np.full((2, 2), a[1, 1]),
                    "tfull_dt": lambda a: np.full((2,), a[1, 1], dtype=np.complex128)}.get(
                key, fn)
            check(("create", key), fn, arr, npfn=npfn, others=[(arr * 2 + 1,)])


LINSPACE = [
    dict(num=5), dict(num=1), dict(num=0), dict(num=4, endpoint=False), dict(num=7, axis=-1),
    dict(num=3, retstep=True), dict(num=6, dtype=np.int64), dict(num=5, dtype=np.float32),
    dict(num=1, endpoint=False),
]


@pytest.mark.parametrize("kw", LINSPACE, ids=[str(k) for k in LINSPACE])
@pytest.mark.parametrize("dtype", F)
def test_linspace(kw, dtype):
    lo, hi = np.asarray(-1.5, dtype), np.asarray(4.25, dtype)
    check(("linspace", str(kw), dtype), lambda a, b: np.linspace(a, b, **kw), lo, hi,
          others=[(np.asarray(3, dtype), np.asarray(3, dtype))])
    check(("linspace_scalar_start", str(kw), dtype), lambda b: tnp.linspace(0.5, b, **kw), hi,
          npfn=lambda b: np.linspace(0.5, b, **kw))
    los, his = np.array([0, 1, 2], dtype), np.array([[5], [-1]], dtype)
    check(("linspace_arr", str(kw), dtype), lambda a, b: np.linspace(a, b, **kw), los, his,
          others=[(his.ravel()[:1] + los, his)])


ASTYPE = ["bool", "int32", "int64", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("src", ASTYPE)
@pytest.mark.parametrize("dst", ASTYPE)
def test_astype(src, dst):
    rng = np.random.default_rng(3)
    x = sample(rng, (2, 5), src, INTS)
    if np.dtype(src).kind == "c" and np.dtype(dst).kind in "if":
        with pytest.raises(TypeError, match="imaginary"):
            tracejit.trace(lambda a: a.astype(dst))(x)
        return
    check(("astype", src, dst), lambda a: a.astype(dst), x, others=[(x[::-1].copy(),)])


def test_float_to_int_conversion_is_defined():
    # documented in ops/elementwise.py convert: NaN -> 0, out of range saturates (NumPy leaves
    # these undefined and gives INT_MIN on x86)
    x = np.array([np.nan, np.inf, -np.inf, 2.7, -2.7, 3e9, -3e9, 1e19])
    got = tracejit.trace(lambda a: (a.astype(np.int32), a.astype(np.int64)))(x)
    assert_same(got[0], np.array([0, 2**31 - 1, -2**31, 2, -2, 2**31 - 1, -2**31, 2**31 - 1],
                                 np.int32))
    assert_same(got[1], np.array([0, 2**63 - 1, -2**63, 2, -2, 3 * 10**9, -3 * 10**9,
                                  2**63 - 1], np.int64))
