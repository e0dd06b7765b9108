"""np.lexsort and tracejit.numpy.top_k on tracers: indices equal to NumPy's lexsort (and to a
plain Python sort for top_k: largest first, ties in index order, NaN first) for several
shapes, dtypes and axes, with ties and NaNs, both backends; vmap; top_k's derivative (a
permutation of cotangents) against finite differences, order 2."""
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.test_util import check_grads

rng = np.random.default_rng(1618)


def _keys(shape, dt):
    k = rng.integers(0, 3, shape)                      # many ties
    if np.dtype(dt).kind == "f":
        k = k.astype(dt)
        k.reshape(-1)[::7] = np.nan
    return k.astype(dt)


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
def test_lexsort_matches_numpy(backend):
    for shape in [(1,), (11,), (4, 9), (2, 3, 5)]:
        a, b, c = _keys(shape, np.float64), _keys(shape, np.int32), _keys(shape, np.float32)
        for axis in range(-1, len(shape) - 1):
            got = tj.trace(lambda a, b, c: np.lexsort((a, b, c), axis=axis), backend=backend)(
                a, b, c)
            np.testing.assert_array_equal(got, np.lexsort((a, b, c), axis=axis))
        stacked = np.stack([a, a * 2 - 1])
        got = tj.trace(lambda k: np.lexsort(k), backend=backend)(stacked)
        np.testing.assert_array_equal(got, np.lexsort(stacked))


def test_lexsort_errors():
    with pytest.raises(ValueError, match="same shape"):
        tj.trace(lambda a, b: np.lexsort((a, b)))(np.ones(3), np.ones(4))


def _top_k_reference(x, k):
    """Per row: sorted by (NaN first, value descending, index ascending)."""
    rows = x.reshape(-1, x.shape[-1])
    idx = np.array([sorted(range(len(r)), key=lambda j: (not np.isnan(r[j]),
                                                          -r[j] if not np.isnan(r[j]) else 0,
                                                          j))[:k] for r in rows], np.int64)
    idx = idx.reshape(x.shape[:-1] + (k,))
    return np.take_along_axis(x, idx, -1), idx


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32])
def test_top_k(backend, dt):
    for shape, k in [((6,), 3), ((4, 9), 9), ((2, 3, 5), 0), ((3, 1), 1)]:
        x = _keys(shape, dt) if dt != np.float64 else rng.normal(size=shape).round(1)
        v, i = tj.trace(lambda x: tnp.top_k(x, k), backend=backend)(x)
        rv, ri = _top_k_reference(x, k)
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_array_equal(v, rv)
        assert v.dtype == x.dtype and i.dtype == np.int64
    v, i = tnp.top_k(np.array([1.0, np.nan, 3.0, 3.0]), 3)         # ndarrays: NumPy
    np.testing.assert_array_equal(i, [1, 2, 3])


def test_top_k_vmap_grad_and_errors(interpret_backend):
    x = rng.normal(size=(3, 7))
    v = tj.vmap(lambda r: tnp.top_k(r, 2)[0])(x)
    np.testing.assert_array_equal(v, _top_k_reference(x, 2)[0])
    check_grads(lambda x: tnp.top_k(x, 3)[0], (x,), order=2, modes=("fwd", "rev"))
    with pytest.raises(ValueError, match="outside"):
        tnp.top_k(x, 8)
