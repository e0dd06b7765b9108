"""The native sort (backend/emit/sortlib.py, emit/sort.py): the stable argsort of every keyed
dtype against NumPy's ``kind="stable"`` to the index (ties, NaN, -0.0/0.0, infinities; lengths
around the insertion-sort limit and long radix-sorted rows; any axis, strided operands), NumPy's
binary search step for step (sorted and unsorted arrays, both sides), each planned with no NumPy
fallback; the composites that now sort stably (sort of ints, partition, median) against NumPy;
vmap; derivatives through the native path against finite differences.

Each table of lengths is one traced function, so a test compiles once per dtype."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

FLOATS = [np.float64, np.float32]
INTS = [np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8,
        np.bool_]
LENGTHS = [0, 1, 2, 15, 16, 17, 100, 1000, 4099]


def _native(f, *args):
    exe = f.lower(*args).executable
    text = exe.describe()
    assert exe.native and "native sort" in text and "fallback" not in text, text
    return exe


def _data(n, dtype, seed):
    """``n`` values of ``dtype`` with many ties and, for floats, NaN, -0.0, 0.0 and infinities
    (so the order of ties and NumPy's NaN-last rule are exercised)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = np.round(rng.standard_normal(n) * 4) / 2            # ties
        x[rng.random(n) < 0.3] = rng.standard_normal(n)[:1] * 1e3 if n else 0.0
        special = np.array([np.nan, -np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5])
        pick = rng.random(n) < 0.3
        x[pick] = rng.choice(special, pick.sum())
        return x.astype(dt)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    info = np.iinfo(dt)
    wide = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    few = rng.integers(0, 5, n).astype(dt)                    # ties
    return np.where(rng.random(n) < 0.5, wide, few).astype(dt)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: np.dtype(d).name)
def test_stable_argsort_is_numpys_to_the_index(dtype):
    xs = tuple(_data(n, dtype, seed=n) for n in LENGTHS)
    f = tj.jit(lambda *a: tuple(np.argsort(x, kind="stable") for x in a), backend="llvm")
    _native(f, *xs)
    for n, x, got in zip(LENGTHS, xs, f(*xs)):
        want = np.argsort(x, kind="stable")
        assert got.dtype == np.int64 and np.array_equal(got, want), (dtype, n)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_every_axis_strided_operands_and_batched_rows(dtype):
    x = _data(4 * 33 * 6, dtype, seed=5).reshape(4, 33, 6)
    cases = [lambda a: np.argsort(a, axis=0, kind="stable"),
             lambda a: np.argsort(a, axis=1, kind="stable"),
             lambda a: np.argsort(a, axis=-1, kind="stable"),
             lambda a: np.argsort(a.transpose(2, 0, 1), axis=2, kind="stable"),
             lambda a: np.argsort(a[:, ::2, 1:], kind="stable", axis=1),
             lambda a: np.sort(a, axis=1, kind="stable"),
             lambda a: np.argsort(a, axis=None, kind="stable")]
    f = tj.jit(lambda a: tuple(c(a) for c in cases), backend="llvm")
    _native(f, x)
    for k, (c, got) in enumerate(zip(cases, f(x))):
        want = c(x)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), k


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int8, np.uint16])
def test_searchsorted_is_numpys_binary_search(dtype):
    rng = np.random.default_rng(7)
    a = np.sort(_data(300, dtype, seed=1))
    unsorted = _data(50, dtype, seed=2)                    # NumPy's answer, step for step
    v = _data(400, dtype, seed=3).reshape(20, 20)
    v_sorted = np.sort(v.ravel())                           # the bounds kept between keys
    empty = a[:0]

    def fn(a, u, v, vs, e):
        return (np.searchsorted(a, v), np.searchsorted(a, v, side="right"),
                np.searchsorted(u, v), np.searchsorted(u, vs, side="right"),
                np.searchsorted(a, vs), np.searchsorted(e, v), np.searchsorted(a, v[:0]),
                np.searchsorted(a, v[3, 4]))
    args = (a, unsorted, v, v_sorted, empty)
    f = tj.jit(fn, backend="llvm")
    _native(f, *args)
    for k, (got, want) in enumerate(zip(f(*args), fn(*args))):
        assert got.shape == np.shape(want) and np.array_equal(got, want), (dtype, k)
    assert rng is not None


def test_composites_that_sort_stably_run_natively():
    rng = np.random.default_rng(3)
    xi = rng.integers(-50, 50, (6, 300)).astype(np.int32)
    xf = rng.standard_normal((6, 301))
    xf[2, 7] = np.nan

    def fn(i, x):
        return (np.sort(i), np.sort(i, axis=0), np.partition(x, 5, axis=1)[:, 5],
                np.median(x, axis=1), np.percentile(x, [10, 90], axis=1),
                np.sort(x, kind="stable"), np.lexsort((i[0], i[1])))
    f = tj.jit(fn, backend="llvm")
    _native(f, xi, xf)
    for k, (got, want) in enumerate(zip(f(xi, xf), fn(xi, xf))):
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), k


def test_vmap_of_the_native_argsort_and_searchsorted():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 9, (5, 40)).astype(np.float64)
    a = np.sort(rng.standard_normal(30))
    f = tj.jit(tj.vmap(lambda r: (np.argsort(r, kind="stable"), np.searchsorted(a, r))),
               backend="llvm")
    _native(f, x)
    got = f(x)
    assert np.array_equal(got[0], np.argsort(x, axis=1, kind="stable"))
    assert np.array_equal(got[1], np.searchsorted(a, x))


def _sorted_weights(x):
    w = np.arange(x.shape[-1], dtype=x.dtype)
    return np.sum(np.sort(x, kind="stable") ** 2 * w) + np.sum(np.median(x, axis=-1) ** 3)


def test_derivatives_through_the_native_sort():
    x = np.random.default_rng(5).standard_normal((3, 40))
    g = tj.jit(tj.grad(_sorted_weights), backend="llvm")
    _native(g, x)
    np.testing.assert_allclose(g(x), tj.jit(tj.grad(_sorted_weights), backend="interpret")(x),
                               rtol=1e-13, atol=1e-13)
    check_grads(tj.jit(_sorted_weights, backend="llvm"), (x,), order=2, modes=("fwd", "rev"))


def test_default_kind_argsort_keeps_numpys_order_of_ties_and_sort_is_stable():
    x = np.array([0.0, -0.0, 1.0, 0.0] * 20)
    f = tj.jit(lambda a: np.argsort(a), backend="llvm")
    assert "native sort" not in f.lower(x).executable.describe()
    assert np.array_equal(f(x), np.argsort(x))
    s = tj.jit(lambda a: np.sort(a), backend="llvm")
    _native(s, x)
    assert np.array_equal(np.signbit(s(x)), np.signbit(x[np.argsort(x, kind="stable")]))
