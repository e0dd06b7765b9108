"""logspace, resize, choose and poly on tracers (numpy/tail_index.py) against NumPy on seeded
random inputs on both backends; derivatives against finite differences; the errors for what a
trace cannot know."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

rng = np.random.default_rng(161)
A = rng.standard_normal((3, 4))
IDX = rng.integers(0, 3, (3, 4))
ROOTS = rng.standard_normal(4)

CASES = [
    ("logspace", lambda a, i, r: np.logspace(a[0, 0], a[1, 1], 7)),
    ("logspace base array", lambda a, i, r: np.logspace(a[0], a[1], 5, base=np.e, axis=1)),
    ("logspace no endpoint", lambda a, i, r: np.logspace(0.0, a[2, 3], 4, endpoint=False,
                                                         base=2.0)),
    ("resize larger", lambda a, i, r: np.resize(a, (5, 7))),
    ("resize smaller", lambda a, i, r: np.resize(a, 5)),
    ("resize empty", lambda a, i, r: np.resize(a, (0, 3))),
    ("choose wrap", lambda a, i, r: np.choose(i + 2, [a, 2 * a, a[0]], mode="wrap")),
    ("choose clip", lambda a, i, r: np.choose(i - 1, [a, -a, a ** 2], mode="clip")),
    ("poly", lambda a, i, r: np.poly(r)),
    ("poly one root", lambda a, i, r: np.poly(r[:1])),
]


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
def test_match_numpy(backend):
    f = tj.jit(lambda a, i, r: tuple(fn(a, i, r) for _, fn in CASES), backend=backend)
    for (label, fn), got in zip(CASES, f(A, IDX, ROOTS)):
        want = fn(A, IDX, ROOTS)
        assert got.shape == want.shape and got.dtype == want.dtype, label
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=label)


def test_choose_with_concrete_indices_checks_them_and_derivatives():
    f = tj.jit(lambda a: np.choose(IDX, [a, 2 * a, a ** 2]))
    np.testing.assert_allclose(f(A), np.choose(IDX, [A, 2 * A, A ** 2]))
    with pytest.raises(ValueError, match="invalid entry"):
        tj.jit(lambda a: np.choose(IDX + 1, [a, a, a]))(A)
    with pytest.raises(tj.UnsupportedError, match="mode='clip'"):
        tj.jit(lambda a, i: np.choose(i, [a, a]))(A, IDX)
    check_grads(tj.jit(lambda a: np.sum(np.choose(IDX, [a, 2 * a, a ** 2]) ** 2)), (A,),
                order=2, modes=("fwd", "rev"))
    check_grads(tj.jit(lambda r: np.sum(np.poly(r) ** 2) + np.sum(np.resize(r, 7) ** 3)),
                (ROOTS,), order=2, modes=("fwd", "rev"))
    check_grads(tj.jit(lambda a: np.sum(np.logspace(a[0], a[1], 5))), (A[:2, :2] * 0.3,),
                order=2, modes=("fwd", "rev"))
