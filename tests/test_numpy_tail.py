"""NumPy's long tail on tracers (tracejit/numpy/tail.py, einsum.py) against NumPy itself, and
issue-18 fixes: custom_vjp with a Python-number argument, einsum broadcasting, the hint for a
NumPy array indexed by a traced array."""
import warnings

import numpy as np
import pytest

import tracejit as tj

rng = np.random.default_rng(1)
A = rng.standard_normal((4, 5))
v = rng.standard_normal(4)
w = rng.standard_normal(3)
I = np.arange(6)
B = np.array([True, False, False, True])
cases = {
 "meshgrid": (lambda a, b: np.meshgrid(a, b), (v, w)),
 "meshgrid ij sparse": (lambda a, b: np.meshgrid(a, b, indexing="ij", sparse=True), (v, w)),
 "meshgrid 3": (lambda a, b, c: np.meshgrid(a, b, c), (v, w, v)),
 "diag1": (lambda a: np.diag(a), (v,)), "diag1k": (lambda a: np.diag(a, -2), (v,)), "diag2": (lambda a: np.diag(a, 1), (A,)),
 "diagflat": (lambda a: np.diagflat(a, 1), (A[:2, :2],)),
 "rot90": (lambda a: np.rot90(a), (A,)), "rot90 3": (lambda a: np.rot90(a, 3), (A,)), "rot90 2": (lambda a: np.rot90(a, 2), (A,)),
 "rot90 -1 ax": (lambda a: np.rot90(a, -1, axes=(1, 0)), (A,)),
 "vander": (lambda a: np.vander(a), (v,)), "vander int": (lambda a: np.vander(a, 3, increasing=True), (I,)),
 "diff": (lambda a: np.diff(a), (A,)), "diff2 ax0": (lambda a: np.diff(a, 2, axis=0), (A,)), "diff bool": (lambda a: np.diff(a), (B,)),
 "diff prepend": (lambda a: np.diff(a, prepend=0, append=[9.0]), (v,)), "diff int": (lambda a: np.diff(a), (I,)),
 "ediff1d": (lambda a: np.ediff1d(a, to_end=[1, 2], to_begin=-1), (v,)),
 "gradient": (lambda a: np.gradient(a), (v,)), "gradient2d": (lambda a: np.gradient(a, 0.5), (A,)), "gradient e2": (lambda a: np.gradient(a, edge_order=2, axis=1), (A,)),
 "gradient int": (lambda a: np.gradient(a), (I,)),
 "trapezoid": (lambda a: np.trapezoid(a), (A,)), "trapezoid x": (lambda a, x: np.trapezoid(a, x), (v, np.cumsum(np.abs(v)))),
 "polyval": (lambda p, x: np.polyval(p, x), (w, v)),
 "append": (lambda a, b: np.append(a, b), (A, v)), "append ax": (lambda a, b: np.append(a, b, axis=0), (A, A[:1])),
 "hsplit": (lambda a: np.hsplit(a, [2]), (A,)), "vsplit": (lambda a: np.vsplit(a, 2), (A,)),
 "cov": (lambda a: np.cov(a), (A,)), "cov T": (lambda a: np.cov(a, rowvar=False, bias=True), (A,)), "cov y": (lambda a, b: np.cov(a, b), (v, v * 2 + 1)),
 "cov 1d": (lambda a: np.cov(a), (v,)), "corrcoef": (lambda a: np.corrcoef(a), (A,)), "corrcoef 1d": (lambda a: np.corrcoef(a), (v,)),
 "allclose": (lambda a, b: np.allclose(a, b), (v, v + 1e-9)), "iscomplexobj": (lambda a: a * np.iscomplexobj(a), (v,)),
 "result_type": (lambda a, k: a.astype(np.result_type(a, k, np.float32)), (I, 2)),
}


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("name", sorted(cases))
def test_tail_function_matches_numpy(name, backend):
    f, args = cases[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = _flat(f(*args))
        got = _flat(tj.trace(f, backend=backend)(*args))
    assert len(got) == len(want)
    for g, x in zip(got, want):
        assert np.shape(g) == np.shape(x) and np.asarray(g).dtype == np.asarray(x).dtype
        np.testing.assert_allclose(g, x, rtol=1e-12, atol=1e-14)


def test_write_through_rot90_reaches_the_argument():
    def g(a):
        r = np.rot90(a)
        r[0, 0] = 100.0
        return a
    x1, x2 = A.copy(), A.copy()
    np.testing.assert_array_equal(g(x1), tj.trace(g)(x2))
    np.testing.assert_array_equal(x1, x2)


EINSUM = [("mnd,mdo->mno", (1, 2, 3), (4, 3, 5)), ("ij,jk", (2, 3), (3, 4)),
          ("...ij,...jk->...ik", (2, 1, 3, 4), (5, 4, 2)), ("i...->...", (3, 4, 5)),
          ("...,...", (3, 1), (1, 4)), ("ij,ij->ij", (1, 3), (4, 3)), ("ii->i", (3, 3)),
          ("ij,kj", (1, 3), (4, 1)), ("b...i,b...i->b...", (2, 3, 4), (2, 1, 4)), ("...", (2, 3)),
          ("i,i", (1,), (5,))]


@pytest.mark.parametrize("spec_shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_broadcasting_and_ellipsis(spec_shapes):
    spec, *shapes = spec_shapes
    ops = [rng.standard_normal(s) for s in shapes]
    want = np.einsum(spec, *ops)
    got = tj.trace(lambda *a: np.einsum(spec, *a))(*ops)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_einsum_sublist_form():
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    f = tj.trace(lambda a, b: np.einsum(a, [0, 1], b, [1, 2]))
    np.testing.assert_allclose(f(a, b), np.einsum(a, [0, 1], b, [1, 2]))
    f = tj.trace(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [2, 0]))
    np.testing.assert_allclose(f(a, b), (a @ b).T)
    f = tj.trace(lambda a: np.einsum(a, [Ellipsis, 1], [1]))
    np.testing.assert_allclose(f(a), a.sum(0))
    with pytest.raises(tj.errors.ShapeError, match="broadcast"):
        tj.trace(lambda a, b: np.einsum("ij,ij->ij", a, b))(np.ones((2, 3)), np.ones((3, 3)))


def test_custom_rules_see_python_numbers():
    @tj.custom_vjp
    def f(x, s):
        return x * s

    def f_fwd(x, s):
        assert isinstance(s, float)
        return f(x, s), (x, s)

    def f_bwd(res, g):
        x, s = res
        return g * s, (g * x).sum()
    f.defvjp(f_fwd, f_bwd)
    np.testing.assert_array_equal(tj.grad(lambda x: f(x, 2.0).sum())(np.ones(3)), 2.0)

    @tj.custom_jvp
    def h(x, s):
        return x * s

    @h.defjvp
    def h_jvp(p, t):
        assert isinstance(p[1], float)
        return h(*p), t[0] * p[1]
    np.testing.assert_array_equal(tj.grad(lambda x: h(x, 3.0).sum())(np.ones(2)), 3.0)


def test_numpy_array_indexed_by_traced_array():
    C = np.arange(10.0)
    # (converted code reads the NumPy array through a traced copy: autograph.getitem)
    np.testing.assert_array_equal(tj.trace(lambda i: C[i])(np.array([1, 3])), [1, 3])
    np.testing.assert_array_equal(tj.trace(lambda i: np.array(C)[i])(np.array([1, 3])), [1, 3])
    np.testing.assert_array_equal(tj.trace(lambda i: tj.numpy.take(C, i))(np.array([1, 3])),
                                  [1, 3])
