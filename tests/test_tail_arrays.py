"""numpy/tail_arrays.py against NumPy on random inputs, both backends: delete, insert (every
position form, NumPy's own broadcasting of values), block, dstack, rollaxis, piecewise,
array_equiv, sort_complex, polyadd/polysub/polymul/polyder/polyint, np.i0; derivatives against
finite differences (order 2, both modes); traced positions are refused with advice."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ["llvm", "interpret"]
rng = np.random.default_rng(1616)
X = rng.standard_normal((4, 5))
V = rng.standard_normal(5)
P, Q = rng.standard_normal(4), rng.standard_normal(3)
I = rng.integers(-9, 9, (4, 5))

CASES = {
    "delete0": (lambda a: np.delete(a, 1, axis=0), (X,)),
    "delete_flat": (lambda a: np.delete(a, [0, 3, 7]), (X,)),
    "delete_slice": (lambda a: np.delete(a, slice(1, None, 2), axis=1), (X,)),
    "delete_mask": (lambda a: np.delete(a, np.array([True, False, True, False, False]), axis=1),
                    (X,)),
    "delete_int": (lambda a: np.delete(a, -1, axis=1), (I,)),
    "insert_scalar": (lambda a: np.insert(a, 2, 9.5, axis=1), (X,)),
    "insert_row": (lambda a, b: np.insert(a, 1, b, axis=0), (X, V)),
    "insert_many": (lambda a: np.insert(a, [1, 1, 3], [7, 8, 9], axis=1), (X,)),
    "insert_flat": (lambda a, b: np.insert(a, [2, 5], b[:2]), (X, V)),
    "insert_col": (lambda a, b: np.insert(a, 0, b[:4], axis=1), (X, V)),
    "insert_2d": (lambda a, b: np.insert(a, [1], b[:4].reshape(4, 1), axis=1), (X, V)),
    "insert_slice": (lambda a, b: np.insert(a, slice(0, 4, 2), b[:2], axis=1),
                     (X, V)),
    "insert_int_cast": (lambda a, b: np.insert(a, 1, b[:5], axis=0), (I, V)),
    "block": (lambda a, b: np.block([[a, a[:, :2]], [b.reshape(1, 5), np.ones((1, 2))]]),
              (X, V)),
    "block1": (lambda a, b: np.block([b, b, 1.0]), (X, V)),
    "block3": (lambda a, b: np.block([[[a]], [[a]]]), (X, V)),
    "dstack": (lambda a, b: np.dstack([a, a]), (X, V)),
    "dstack1": (lambda a, b: np.dstack([b, b]), (X, V)),
    "rollaxis": (lambda a: np.rollaxis(a.reshape(2, 2, 5), 2), (X,)),
    "rollaxis2": (lambda a: np.rollaxis(a.reshape(2, 2, 5), 0, 3), (X,)),
    "rollaxis3": (lambda a: np.rollaxis(a.reshape(2, 2, 5), -1, -2), (X,)),
    "piecewise": (lambda a: np.piecewise(a, [a < -0.5, a > 0.5],
                                         [lambda t: t ** 2, lambda t: -t, 0.25]), (X,)),
    "piecewise2": (lambda a: np.piecewise(a, [a < 0, a >= 0], [lambda t: -t, lambda t: t]),
                   (X,)),
    "piecewise1": (lambda a: np.piecewise(a[0], a[0] > 0, [np.sin]), (X,)),
    "piecewise_stacked": (lambda a: np.piecewise(a, np.stack([a < 0, a > 1]), [np.sin, np.cos]),
                          (X,)),
    "piecewise_int": (lambda a: np.piecewise(a, [a < 0], [lambda t: t * 2, 7]), (I,)),
    "equiv": (lambda a, b: np.array_equiv(a, a[:1]), (X, V)),
    "equiv2": (lambda a, b: np.array_equiv(a[:1] * 0 + b, b), (X, V)),
    "sort_complex": (lambda a: np.sort_complex(a[0]), (X,)),
    "sort_complex32": (lambda a: np.sort_complex(a[0].astype(np.float32)), (X,)),
    "sort_complex_int": (lambda a: np.sort_complex(a[0]), (I,)),
    "polyadd": (np.polyadd, (P, Q)),
    "polysub": (lambda a, b: np.polysub(b, a), (P, Q)),
    "polymul": (np.polymul, (P, Q)),
    "polyder": (lambda a, b: np.polyder(a, 2), (P, Q)),
    "polyder_int": (lambda a: np.polyder(a[0]), (I,)),
    "polyint": (lambda a, b: np.polyint(a, 2, k=[1, 2]), (P, Q)),
    "polyint1": (lambda a, b: np.polyint(a), (P, Q)),
    "polyint_k": (lambda a, b: np.polyint(a, 3, k=0.5), (P, Q)),
    "i0": (lambda a: np.i0(a * 3), (X,)),
    "i0_int": (lambda a: np.i0(a), (I,)),
    "ix": (lambda a: a[np.ix_(np.array([3, 0]), np.array([True, False, True, False, True]))],
           (X,)),
    "ix_traced": (lambda a, b: np.ix_(b.astype(np.int64) % 4, np.arange(2))[0] * 1, (X, I[0])),
    "tril_from": (lambda a: a[np.tril_indices_from(a, -1)], (X,)),
    "triu_from": (lambda a: a[np.triu_indices_from(a[:, :4])], (X,)),
    "diag_from": (lambda a: a[:, :4][np.diag_indices_from(a[:, :4])], (X,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_against_numpy(backend):
    for name, (fn, args) in CASES.items():
        want = np.asarray(fn(*args))
        got = np.asarray(tj.jit(fn, backend=backend)(*args))
        assert got.dtype == want.dtype and got.shape == want.shape, (name, got.dtype, want.dtype,
                                                                    got.shape, want.shape)
        # i0: Cephes' series evaluated in another order than NumPy's Python loop; polymul:
        # the convolution sums its products in another order
        rtol = 4e-15 if name.startswith("i0") or name == "polymul" else 0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=name)


def test_derivatives():
    modes = ("fwd", "rev")
    check_grads(lambda a, b: np.insert(a, [1, 3], b[:2] ** 2, axis=1), (X, V), order=2,
                modes=modes)
    check_grads(lambda a: np.delete(a, [0, 2], axis=1) ** 2, (X,), order=2, modes=modes)
    check_grads(lambda a, b: np.block([[a, a ** 2], [b.reshape(1, 5), b.reshape(1, 5)]]),
                (X, V), order=2, modes=modes)
    check_grads(lambda a: np.piecewise(a, [a < -0.5, a > 0.5], [lambda t: t ** 3, np.sin,
                                                                 0.25]), (X,), order=2,
                modes=modes)
    check_grads(lambda a, b: np.polyint(np.polymul(a, b), 1, k=2.0), (P, Q), order=2,
                modes=modes)
    check_grads(lambda a: np.polyder(a ** 2, 1), (P,), order=2, modes=modes)
    check_grads(lambda a: np.i0(a), (V,), order=2, modes=modes)


def test_dtype_functions():
    """can_cast/common_type read a tracer's dtype (at trace time, as NumPy reads an array's)."""
    seen = []

    def f(a, i):
        return (np.can_cast(a, np.float32), np.can_cast(i, np.float64),
                np.can_cast(i, np.int8, casting="same_kind"), np.common_type(a, i),
                np.common_type(i.astype(np.float16)))
    want = f(X, I)
    tj.jit(lambda a, i: seen.append(f(a, i)) or a)(X, I)
    assert seen == [want]


def test_traced_positions_refused():
    with pytest.raises(tj.UnsupportedError, match="concrete"):
        tj.jit(lambda a, k: np.delete(a, k))(V, np.array([1, 2]))
    with pytest.raises(tj.UnsupportedError, match="concrete"):
        tj.jit(lambda a, k: np.insert(a, k, 0.0))(V, np.array([1]))
