"""Indexing, traced vs NumPy: ints, slices (any step, negative too), None, ..., integer arrays
(concrete and traced, negative, broadcasting, non-adjacent → dims first), concrete boolean
masks; out-of-range → IndexError; ``x.at[idx]`` updates; ``x[idx] = v`` rebinding rules."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tracejit
from np_support import ALL, INTS, assert_same, check, sample, seeds

SHAPES = hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5)


def _idx_key(idx):
    parts = idx if isinstance(idx, tuple) else (idx,)
    return tuple(("arr", p.tobytes(), p.shape, str(p.dtype)) if isinstance(p, np.ndarray)
                 else repr(p) for p in parts)


pytestmark = pytest.mark.usefixtures("interpret_backend")


@st.composite
def basic_index(draw, shape):
    """A basic index: ints, slices (any step), None and at most one Ellipsis."""
    parts = []
    dims = list(shape)
    k = draw(st.integers(0, len(dims)))
    for n in dims[:k]:
        kind = draw(st.sampled_from(["int", "slice", "slice", "none"]))
        if kind == "int" and n > 0:
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "none":
            parts.append(None)
            parts.append(slice(None))
        else:
            opt = st.none() | st.integers(-n - 2, n + 2)
            step = draw(st.none() | st.integers(-3, 3).filter(lambda s: s != 0))
            parts.append(slice(draw(opt), draw(opt), step))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    if draw(st.booleans()):
        parts.append(None)
    return tuple(parts) if len(parts) != 1 or draw(st.booleans()) else parts[0]


@settings(max_examples=40)
@given(shape=SHAPES, dtype=st.sampled_from(ALL), seed=seeds, data=st.data())
def test_basic_indexing(shape, dtype, seed, data):
    rng = np.random.default_rng(seed)
    x, x2 = sample(rng, shape, dtype, INTS), sample(rng, shape, dtype, INTS)
    idx = data.draw(basic_index(shape))
    check(("basic", _idx_key(idx)), lambda a: a[idx], x, others=[(x2,)])


@st.composite
def advanced_index(draw, shape):
    """A mix of integer arrays (broadcastable, negative too), ints, slices and None; arrays
    may be separated by slices (non-adjacent advanced indices put their dims first)."""
    nd = len(shape)
    k = draw(st.integers(1, nd))
    bshape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    parts = []
    n_adv = 0
    for n in shape[:k]:
        kind = draw(st.sampled_from(["arr", "arr", "slice", "int", "none"]))
        if kind in ("arr", "int") and n == 0:
            kind = "slice"
        if kind == "arr":
            sub = bshape[draw(st.integers(0, len(bshape))):]
            parts.append(np.asarray(draw(hnp.arrays(np.int64, sub,
                                                    elements=st.integers(-n, n - 1)))))
            n_adv += 1
        elif kind == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif kind == "none":
            parts += [None, slice(None)]
        else:
            step = draw(st.sampled_from([1, 2, -1, -2]))
            parts.append(slice(None, None, step))
    if n_adv == 0:
        n = shape[0]
        if n == 0:
            return (np.zeros((0,), np.int64),)
        parts[0] = np.asarray(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)))
    return tuple(parts)


@settings(max_examples=40)
@given(shape=SHAPES, dtype=st.sampled_from(ALL), seed=seeds, data=st.data())
def test_advanced_indexing(shape, dtype, seed, data):
    rng = np.random.default_rng(seed)
    x, x2 = sample(rng, shape, dtype, INTS), sample(rng, shape, dtype, INTS)
    idx = data.draw(advanced_index(shape))
    check(("adv", _idx_key(idx)), lambda a: a[idx], x, others=[(x2,)])
    # the same index with its integer arrays traced
    arrays = [p for p in idx if isinstance(p, np.ndarray)]
    pos = [k for k, p in enumerate(idx) if isinstance(p, np.ndarray)]

    def with_traced(a, *ts):
        full = list(idx)
        for k, t in zip(pos, ts):
            full[k] = t
        return a[tuple(full)]

    def on_numpy(a, *ts):
        return with_traced(a, *ts)
    others = [(x2,) + tuple(arr[::-1].copy() if arr.ndim else arr for arr in arrays)]
    check(("adv_traced", _idx_key(idx)), with_traced, x, *arrays, npfn=on_numpy,
          others=others)


@settings(max_examples=25)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4),
       seed=seeds, data=st.data())
def test_boolean_mask(shape, seed, data):
    rng = np.random.default_rng(seed)
    x, x2 = sample(rng, shape, "float64"), sample(rng, shape, "float64")
    k = data.draw(st.integers(1, len(shape)))
    mask = rng.random(shape[:k]) < 0.5
    check(("mask", mask.tobytes(), mask.shape), lambda a: a[mask], x, others=[(x2,)])
    if len(shape) > k:
        check(("mask_tail", mask.tobytes(), mask.shape), lambda a: a[mask, ...], x)


FIXED = [
    (np.s_[::-1], (5,)), (np.s_[::-2], (5,)), (np.s_[3:0:-1], (5,)), (np.s_[-1:-6:-2], (5,)),
    (np.s_[None, ..., 1], (3, 4)), (np.s_[..., None], (3, 4)), (np.s_[()], (3, 4)),
    (np.s_[...], (3, 4)), (np.s_[1, 2], (3, 4)), (np.s_[-1], (3, 4)),
    (np.s_[[0, 1], :, [1, 2]], (3, 4, 5)), (np.s_[:, [0, 1], [1, 2]], (3, 4, 5)),
    (np.s_[[0, 1], 1:3, 2], (3, 4, 5)), (np.s_[1, :, [0, -1]], (3, 4, 5)),
    (np.s_[[[0], [2]], [1, 3]], (3, 4)), (np.s_[:, None, [0, 2]], (3, 4)),
    (np.s_[[True, False, True]], (3, 4)), (np.s_[1:, [0, 2]], (3, 4)),
    (np.s_[[-1, -3]], (3,)), (np.s_[np.array([], np.int64)], (3, 2)),
]


@pytest.mark.parametrize("idx,shape", FIXED, ids=[str(k) for k in range(len(FIXED))])
def test_indexing_cases(idx, shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    check(("fixed", _idx_key(idx), shape), lambda a: a[idx], x, others=[(x * 3,)])


def test_out_of_range_raises_index_error():
    x = np.arange(12.).reshape(3, 4)
    for idx in (3, -4, (0, 4), [5], (slice(None), [0, 4]), [[-4]]):
        with pytest.raises(IndexError):
            x[idx]
        with pytest.raises(IndexError, match="out of bounds"):
            tracejit.trace(lambda a: a[idx])(x)
    f = tracejit.trace(lambda a, i: a[i])
    assert_same(f(x, np.array([2, -3])), x[[2, -3]])
    for bad in ([3], [-4], [0, 7]):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
            f(x, np.array(bad))
    with pytest.raises(IndexError):
        tracejit.trace(lambda a: a[1, 2, 3])(x)
    with pytest.raises(IndexError):
        tracejit.trace(lambda a, i: a[i])(x, np.array([1.0]))


def test_traced_index_into_2d_and_take_along_axis():
    x = np.arange(20.).reshape(4, 5)
    check("tr2d", lambda a, i, j: a[i, j], x, np.array([[0], [3]]), np.array([1, -1, 4]),
          others=[(x + 1, np.array([[2], [1]]), np.array([0, 0, 0]))])
    check("tr_int_scalar", lambda a, i: a[i], x, np.array(2), others=[(x, np.array(-1))])
    check("tr_slice_mix", lambda a, i: a[1:, i], x, np.array([4, 0]))
    check("tr_nonadj", lambda a, i: a.reshape(2, 2, 5)[i, :, i], x, np.array([1, 0]))


# ---------------------------------------------------------------------------------------------
# functional updates

def _np_at(x, idx, v, mode):
    y = np.array(x, copy=True)
    if mode == "set":
        y[idx] = v
    else:
        ufunc = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}[mode]
        ufunc.at(y, idx, v)
    return y


AT = [np.s_[0], np.s_[1:], np.s_[::-2], np.s_[[0, 0, 2]], np.s_[[-1, 1, -1]],
      np.s_[np.array([True, False, True, False])], np.s_[..., 1], np.s_[[0, 1], [2, 2]],
      np.s_[:, [1, 1]]]


@pytest.mark.parametrize("mode", ["set", "add", "mul", "min", "max"])
@pytest.mark.parametrize("idx", AT, ids=[str(k) for k in range(len(AT))])
def test_at_updates(mode, idx):
    x = np.arange(12.).reshape(4, 3) - 5
    if isinstance(idx, np.ndarray) and idx.dtype == bool:
        idx = (idx,)
    shape = x[idx].shape
    v = np.arange(1, 1 + int(np.prod(shape))).reshape(shape) * 1.5
    method = "multiply" if mode == "mul" else mode
    if mode == "set" and isinstance(idx, list):
        pass
    check(("at", mode, _idx_key(idx)), lambda a, b: getattr(a.at[idx], method)(b), x, v,
          npfn=lambda a, b: _np_at(a, idx, b, mode), others=[(x * 2, v - 1)])
    check(("at_scalar", mode, _idx_key(idx)), lambda a: getattr(a.at[idx], method)(2.0), x,
          npfn=lambda a: _np_at(a, idx, 2.0, mode), others=[(x + 1,)])


def test_at_repeated_add_accumulates_and_traced_indices():
    x = np.zeros(4)
    f = tracejit.trace(lambda a, i, v: a.at[i].add(v))
    assert_same(f(x, np.array([1, 1, 1, 3]), np.array([1., 2., 3., 4.])),
                np.array([0., 6., 0., 4.]))
    assert_same(f(x, np.array([0, 0, 0, 0]), np.array([1., 2., 3., 4.])),
                np.array([10., 0., 0., 0.]))
    assert f.cache_info().traces == 1
    g = tracejit.trace(lambda a, m: a.at[m].set(7.0))
    assert_same(g(x, x > -1), np.full(4, 7.0))
    check("at_get", lambda a: a.at[1:3].get(), x + 1, npfn=lambda a: a[1:3])


def test_setitem_rebinds_on_arrays_created_in_the_trace():
    def f(a):
        y = a * 2
        y[0] = 100.0
        y[1:3] += 1.0
        return y

    def g(a):
        z = tracejit.numpy.zeros(3) + 0 * a
        z[[0, 0, 2]] = a
        return z

    x = np.array([1.0, 2.0, 3.0, 4.0])
    check("setitem", f, x, others=[(x * 5,)])
    assert_same(x, np.array([1.0, 2.0, 3.0, 4.0]))     # the input is not mutated
    check("setitem_adv", g, x[:3].copy(), others=[(x[1:].copy(),)])


