"""Loop-heavy code on the llvm backend against the interpreter (the oracle) and NumPy.

Covers the code paths issue 19's loop rows run through: fused loops whose inner extent is not
a multiple of the vector step (an unmasked main loop, then a masked tail: ``emit/loops.py``),
rows picked by a loop scalar (a gather whose index is the same in every lane: one bounds check
and a vector load, ``emit/memory.py``), and the bench's kernels (a Jacobi stencil time loop, an
element-wise Cholesky, a Thomas solve, a first-order recurrence) at several sizes, with carries
read after they are overwritten and nested loops. Values only; speed is bench/run.py's W11/W13.
"""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.emit import loops as emit_loops

RNG = np.random.default_rng(19)


def both(fun, *args, rtol=1e-12, atol=1e-13, static_argnums=()):
    """``fun`` natively and on the interpreter (fresh argument copies each): the results must
    agree (to rounding: native sums add in another order than NumPy's). Returns the native
    results."""
    def run(backend):
        f = tj.trace(fun, backend=backend, static_argnums=static_argnums)
        return f(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    got, want = run("llvm"), run("interpret")
    for g, w in zip(tj.tree.tree_leaves(got), tj.tree.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return got


# ---------------------------------------------------------------------------------------------
# the tail of a fused loop: every size around the vector step, short and long bodies

SIZES = (1, 3, 7, 15, 16, 17, 31, 33, 63, 65, 1001)


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_and_reductions_at_every_tail(n):
    x, y = RNG.standard_normal(n), RNG.standard_normal(n)

    def f(x, y):
        z = x * 0.33 + y
        return z, z.sum(), np.maximum(x, y).max(), (x > y).sum()
    got = both(f, x, y)
    want = f(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 7), (3, 33), (17, 1), (4, 18)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_two_dimensional_tails_and_row_sums(shape, dtype):
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    # a float32 row sum in another order: error bound n * eps * sum |x|
    bound = shape[1] * np.finfo(np.float32).eps * np.abs(x).sum(1).max()
    both(lambda x: (x * 2 + 1, x.sum(1), x[:, 1:] - x[:, :-1]), x, rtol=1e-6, atol=bound)


def test_split_tail_is_bit_identical_to_the_masked_loop(monkeypatch):
    x = RNG.standard_normal((7, 45)).astype(np.float32)

    def f(x):
        return x * 1.7 - 0.1, x.sum(1), (x * x).sum(), np.argmax(x, 1)
    split = tj.trace(f, backend="llvm")(x)
    monkeypatch.setattr(emit_loops, "SPLIT_TAIL_EQNS", -1)
    masked = tj.trace(f, backend="llvm")(x)
    for a, b in zip(split, masked):
        np.testing.assert_array_equal(a, b)


def test_long_body_stays_one_masked_loop_and_agrees():
    # longer than SPLIT_TAIL_EQNS: the base tier emits it once, every vector masked
    def f(x):
        for k in range(emit_loops.SPLIT_TAIL_EQNS + 4):
            x = x * 0.5 + k
        return x
    x = RNG.standard_normal(37)
    np.testing.assert_allclose(both(f, x), f(x), rtol=1e-12)


def test_in_place_update_with_a_tail():
    def f(x):
        return tj.fori_loop(0, 5, lambda i, x: x * 2.0 + i, x)
    x = RNG.standard_normal(19)
    np.testing.assert_allclose(both(f, x), f(x), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# rows picked by a loop scalar (uniform gathers)

@pytest.mark.parametrize("n", (4, 13, 40))
def test_rows_picked_by_the_loop_index(n):
    a = RNG.standard_normal((n, n + 3))

    def f(a):
        def body(i, acc):
            return acc + a[i] * a[n - 1 - i] + a[i - n]       # a negative index wraps
        return tj.fori_loop(0, n, body, np.zeros(n + 3))
    want = sum(a[i] * a[n - 1 - i] + a[i - n] for i in range(n))
    np.testing.assert_allclose(both(f, a), want, rtol=1e-12)


def test_uniform_row_index_out_of_bounds_raises():
    a = RNG.standard_normal((6, 21))

    def f(a, k):
        return tj.fori_loop(0, 3, lambda i, acc: acc + a[i + k], np.zeros(21))
    g = tj.trace(f, backend="llvm")
    np.testing.assert_allclose(g(a, 1), a[1] + a[2] + a[3])
    with pytest.raises(IndexError):
        g(a, 5)
    with pytest.raises(IndexError):
        g(a, -9)


# ---------------------------------------------------------------------------------------------
# the bench's loop kernels (bench/run.py W11, W13), several sizes

def jacobi_fori(a, b, steps):
    def body(_, ab):
        a, b = ab
        b = b.at[1:-1].set(0.33 * (a[:-2] + a[1:-1] + a[2:]))
        return a.at[1:-1].set(0.33 * (b[:-2] + b[1:-1] + b[2:])), b
    return tj.fori_loop(0, steps, body, (a, b))


def jacobi_numpy(a, b, steps):
    a, b = a.copy(), b.copy()
    for _ in range(steps):
        b[1:-1] = 0.33 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33 * (b[:-2] + b[1:-1] + b[2:])
    return a, b


@pytest.mark.parametrize("n", (5, 18, 33, 130))
def test_jacobi_stencil_loop(n):
    a, b = RNG.random(n), RNG.random(n)
    got = both(jacobi_fori, a, b, 7, static_argnums=(2,))
    for g, w in zip(got, jacobi_numpy(a, b, 7)):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def cholesky_fori(a):
    n = a.shape[0]

    def row(i, low):
        def col(j, low):
            s = np.sum(np.where(np.arange(n) < j, low[i] * low[j], 0.0))
            v = np.where(i == j, np.sqrt(np.abs(a[i, i] - s)), (a[i, j] - s) / low[j, j])
            return low.at[i, j].set(np.where(j <= i, v, 0.0))
        return tj.fori_loop(0, n, col, low)
    return tj.fori_loop(0, n, row, np.zeros_like(a))


@pytest.mark.parametrize("n", (1, 6, 17, 40))
def test_elementwise_cholesky(n):
    m = RNG.standard_normal((n, n))
    spd = m @ m.T + n * np.eye(n)
    np.testing.assert_allclose(both(cholesky_fori, spd, rtol=1e-10), np.linalg.cholesky(spd),
                               rtol=1e-10)


def thomas_fori(lo, di, up, rhs):
    n = di.shape[0]

    def fwd(i, cd):
        c, d = cd
        m = 1.0 / (di[i] - lo[i] * c[i - 1])
        return c.at[i].set(up[i] * m), d.at[i].set((rhs[i] - lo[i] * d[i - 1]) * m)
    c, d = tj.fori_loop(1, n, fwd, (np.zeros_like(di).at[0].set(up[0] / di[0]),
                                    np.zeros_like(di).at[0].set(rhs[0] / di[0])))
    return tj.fori_loop(0, n - 1, lambda k, x: x.at[n - 2 - k].set(
        d[n - 2 - k] - c[n - 2 - k] * x[n - 1 - k]), d)


@pytest.mark.parametrize("n", (2, 9, 100))
def test_thomas_solve(n):
    lo, di, up, rhs = RNG.random(n), 4.0 + RNG.random(n), RNG.random(n), RNG.random(n)
    dense = np.diag(di) + np.diag(lo[1:], -1) + np.diag(up[:-1], 1)
    np.testing.assert_allclose(both(thomas_fori, lo, di, up, rhs, rtol=1e-10),
                               np.linalg.solve(dense, rhs), rtol=1e-10)


@pytest.mark.parametrize("n", (2, 17, 200))
def test_first_order_recurrence(n):
    x, b = RNG.random(n), RNG.random(n)

    def f(x, a, b):
        return tj.fori_loop(1, x.shape[0], lambda i, x: x.at[i].set(a * x[i - 1] + b[i]), x)
    want = x.copy()
    for i in range(1, n):
        want[i] = 0.9 * want[i - 1] + b[i]
    np.testing.assert_allclose(both(f, x, 0.9, b), want, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# hazards: a carry read after it is overwritten in the same iteration; nested loops

@pytest.mark.parametrize("n", (3, 21))
def test_carry_read_after_its_update_is_double_buffered(n):
    x = RNG.standard_normal(n)

    def f(x):
        def body(i, c):
            a, s = c
            new = a.at[i % n].set(a[(i + 1) % n] * 2.0)
            return new, s + a.sum() - new[::-1].sum() + a[i % n]     # old a read after new
        return tj.fori_loop(0, 2 * n, body, (x, 0.0))

    def ref(x):
        a, s = x.copy(), 0.0
        for i in range(2 * n):
            new = a.copy()
            new[i % n] = a[(i + 1) % n] * 2.0
            s = s + a.sum() - new[::-1].sum() + a[i % n]
            a = new
        return a, s
    for g, w in zip(both(f, x), ref(x)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (6, 19)])
def test_nested_loops_update_one_carry(shape):
    m = RNG.standard_normal(shape)

    def f(m):
        r, c = m.shape

        def outer(i, a):
            def inner(j, a):
                return a.at[i, j].set(a[i, j - 1] * 0.5 + a[i - 1, j])
            return tj.fori_loop(1, c, inner, a)
        return tj.fori_loop(1, r, outer, m)
    want = m.copy()
    for i in range(1, shape[0]):
        for j in range(1, shape[1]):
            want[i, j] = want[i, j - 1] * 0.5 + want[i - 1, j]
    np.testing.assert_allclose(both(f, m), want, rtol=1e-12)
