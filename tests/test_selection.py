"""x[mask] with a traced mask and x[a:b] with traced bounds (numpy/selection.py): NumPy's results
for the shape-free uses (elementwise, reductions, stores, x[mask] op= v, CSR-style slices), on
both backends, and a clear ConcretizationError for the uses that need the data-dependent length.
"""
import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import ConcretizationError

BACKENDS = ("llvm", "interpret")
RNG = np.random.default_rng(7)


def agree(fn, *args, rtol=1e-12):
    """``fn`` traced (each backend) against NumPy on copies of ``args``: the results and the
    arguments' final contents."""
    want_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*want_args)
    for backend in BACKENDS:
        got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        got = tj.trace(fn, backend=backend)(*got_args)
        for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
            assert np.asarray(g).dtype == np.asarray(w).dtype, (backend, g, w)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0, err_msg=backend)
        for g, w in zip(got_args, want_args):
            if isinstance(w, np.ndarray):        # (x ** -1.5: the backends' pow, to an ulp)
                assert g.dtype == w.dtype
                np.testing.assert_allclose(g, w, rtol=rtol, atol=0, err_msg=backend)


def masked_update(x, m):
    x[m > 0.5] += 1.5
    x[m < 0.2] *= -2
    return x.sum()


def masked_map(x):
    x[x > 0] = x[x > 0] ** -1.5            # the mask computed twice: the same value
    return x


def masked_stats(d, r):
    sel = d[np.logical_and(r > 0.25, r <= 0.75)]
    return sel.mean(), sel.sum(), sel.max(), sel.min(), np.prod(sel + 1.0), sel.any(), \
        np.count_nonzero(sel > 0.5), (sel * 2 + 1).mean()


def rows_of_mask(a, m):
    rows = a[m > 0]                         # (count, 3): whole rows
    a[m > 0] = rows * 2 - a[m > 0].max(axis=0)
    return rows.sum(axis=0), rows.sum(axis=1).max(), np.mean(rows, axis=0)


def iterate_in_place(z, c):
    for _ in range(6):
        inside = np.abs(z) < 2.0
        z[inside] = z[inside] ** 2 + c[inside]
    return z


def csr_rows(indptr, indices, data, x):
    y = np.empty(indptr.size - 1, data.dtype)
    for i in range(indptr.size - 1):
        cols = indices[indptr[i]:indptr[i + 1]]
        y[i] = data[indptr[i]:indptr[i + 1]] @ x[cols]
    return y


def traced_slice_update(x, lo, hi):
    x[lo[0]:hi[0]] = 0.0
    x[lo[1]:] += x[lo[1]:].sum()
    return x[:hi[1]].mean()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_masked_update_and_map(dtype):
    x = (RNG.standard_normal(12) * 4).astype(dtype)
    m = RNG.random(12)
    if dtype == np.int32:
        with pytest.raises(TypeError, match="same_kind"):     # NumPy's cast error, as NumPy
            tj.trace(masked_update)(x, m)
        return
    agree(masked_update, x, m, rtol=1e-6 if dtype == np.float32 else 1e-12)
    agree(masked_map, RNG.standard_normal((4, 5)).astype(dtype), rtol=1e-6)


def test_reductions_of_a_selection():
    agree(masked_stats, RNG.random(40), RNG.random(40))
    agree(rows_of_mask, RNG.standard_normal((7, 3)), RNG.standard_normal(7))


def test_complex_iteration_and_csr_rows():
    agree(iterate_in_place, np.zeros((5, 6), np.complex128),
          RNG.random((5, 6)) * 2 - 1.5 + 1j * (RNG.random((5, 6)) * 2 - 1))
    import scipy.sparse as sp
    a = sp.random(9, 9, density=0.3, format="csr", random_state=3)
    agree(csr_rows, a.indptr.astype(np.uint32), a.indices.astype(np.uint32), a.data,
          RNG.random(9))
    # an empty row, negative and out-of-range bounds follow Python's slice rules
    agree(traced_slice_update, RNG.random(10), np.array([2, -3]), np.array([20, -1]))


def test_empty_selection():
    def f(x):
        s = x[x > 10]
        return s.sum(), s.mean(), s.any(), s.all()
    with np.errstate(invalid="ignore"):
        agree(f, RNG.random(5))

    def g(x):
        return x[x > 10].max()
    for backend in BACKENDS:
        with pytest.raises(ValueError, match="zero-size array"):
            tj.trace(g, backend=backend)(RNG.random(5))
        assert tj.trace(g, backend=backend)(np.array([11.0, 3.0])) == 11.0


@pytest.mark.parametrize("use, what", [
    (lambda x, m: len(x[m > 0]), "len"),
    (lambda x, m: x[m > 0].shape, "shape"),
    (lambda x, m: x[m > 0][0], "indexing into"),
    (lambda x, m: x[m > 0] + x, "operand of shape"),
    (lambda x, m: x[m > 0] + x[m < 0], "another mask"),
    (lambda x, m: np.sort(x[m > 0]), "numpy.sort"),
    (lambda x, m: np.asarray(x[m > 0]), "NumPy array"),
])
def test_uses_that_need_the_length_are_clear_errors(use, what):
    with pytest.raises(ConcretizationError, match=what):
        tj.trace(use)(RNG.random(6), RNG.standard_normal(6))


def test_writes_that_cannot_be_expressed_are_clear_errors():
    def other_mask(x, m):
        x[m > 0] = x[m < 0]
        return x

    def into_whole_array(x, m):
        x += x[m > 0]
        return x
    for fn, what in ((other_mask, "another mask"), (into_whole_array, r"x \+= y\[mask\]")):
        with pytest.raises(ConcretizationError, match=what):
            tj.trace(fn)(RNG.random(6), RNG.standard_normal(6))
