"""Python loops with break/continue/return and `for` over ranges with traced bounds, converted
to while_loop/cond (tracejit/autograph_rewrite.py, autograph_control.py): results agree with plain
Python/NumPy on both backends, derivatives with finite differences, vmap with a Python loop per
lane, and what cannot be converted raises an error naming the variable and the line."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import autograph
from tracejit.errors import ConcretizationError, ShapeError
from tracejit.test_util import check_grads, using_backend

BACKENDS = ["llvm", "interpret"]


def sin_taylor(x):
    s, term = 0.0, x
    for k in range(1, 100):                  # a concrete range, a break on a traced value
        s = s + term
        term = -term * x * x / ((2 * k) * (2 * k + 1))
        if np.abs(term) < 1e-16:
            break
    return s


def newton_sqrt(a):
    x = a
    for _ in range(100):
        dx = (x * x - a) / (2 * x)
        x = x - dx
        if np.abs(dx) < 1e-14:
            break
    return x


def bisect_cbrt(c):
    lo, hi = 0.0, 4.0
    while True:
        mid = 0.5 * (lo + hi)
        if hi - lo < 1e-12:
            break
        if mid ** 3 > c:
            hi = mid
        else:
            lo = mid
    return mid


def skip_and_stop(x):
    # nested ifs with continue and break: positives summed, those in (1, 2] doubled, stop at >3
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        if x[i] > 1:
            if x[i] > 3:
                break
            if x[i] <= 2:
                s = s + 2 * x[i]
                continue
        s = s + x[i]
    return s


def grow_until(x):
    for i in range(20):
        x = x * 1.5
        if x.sum() > 10:
            return x - i                     # an early return inside the loop
    return x + 100


def count_down(x, n):
    total = x
    i = -1                                   # the loop variable's value when the range is empty
    for i in range(n, 0, -2):                # a traced bound: a while_loop
        total = total * 0.5 + i
    return total, i


def partial_sums(a):
    s = 0.0
    for row in a:                            # a traced array: its rows, unrolled...
        s = s + row.sum()
        if s > 5:                            # ...until the break depends on traced data
            break
    return s


def nested_return(x):
    for i in range(4):
        for j in range(3):
            x = x + 0.25
            if x.sum() > 5:
                return x * (i + 1), j        # leaves both loops
    return x, -1


def else_clauses(x):
    n = 0
    while n < 5:
        n += 1
        x = x * 1.5
        if x[0] > 2:
            break
    else:
        x = -x
    for v in [1.0, 2.0, 3.0]:
        x = x + v
        if x[1] > 4:
            break
    else:
        x = x * 10
    return x, n


def enumerated(x):
    s = x[0] * 0
    for k, v in enumerate([1.0, 2.0, 3.0, 4.0]):    # items taken by a traced index
        s = s + v * x[0]
        if s > 3:
            break
    return s, k


def inner_function(x):
    for i in range(3):
        def g(v):                            # its loop and return are its own
            for j in range(4):
                if v.sum() > 4:
                    return v
                v = v * 2
            return -v
        x = g(x) + 1
        if x.sum() > 20:
            break
    return x


def triangle(x):
    for i in range(4):
        for j in range(i, 2):                # empty from i = 2 on: j keeps its last value
            x = x + j
        if x.sum() > 100:
            x = -x
    return x, j


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(18)


@pytest.mark.parametrize("backend", BACKENDS)
def test_taylor_series_with_break_values_derivative_and_ir(backend, rng):
    f = tj.trace(sin_taylor, backend=backend)
    df = tj.grad(sin_taylor)
    for x in rng.uniform(-3, 3, size=4):
        assert f(x) == sin_taylor(x)
        np.testing.assert_allclose(f(x), np.sin(x), rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(df(x), np.cos(x), rtol=1e-12, atol=1e-13)
    text = str(tj.trace(sin_taylor).ir(0.5))
    assert "while[" in text and "cond[" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_newton_and_bisection_with_break(backend, rng):
    a = rng.uniform(0.5, 9.0, size=3)
    for v in a:
        assert tj.trace(newton_sqrt, backend=backend)(v) == newton_sqrt(v)
        assert tj.trace(bisect_cbrt, backend=backend)(v) == bisect_cbrt(v)
    np.testing.assert_allclose([tj.grad(newton_sqrt)(v) for v in a], 0.5 / np.sqrt(a),
                               rtol=1e-12)
    # bisection's result is piecewise constant in c: the gradient through the loop is 0
    assert [tj.grad(bisect_cbrt)(v) for v in a] == [0.0] * 3
    with autograph.enabled(), using_backend(backend):
        check_grads(newton_sqrt, (a[0],), order=2, modes=("fwd", "rev"))
        # per-lane trip counts, differentiated
        np.testing.assert_allclose(tj.vmap(tj.grad(newton_sqrt))(a), 0.5 / np.sqrt(a),
                                   rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_ifs_with_continue_and_break_vmap(backend, rng):
    xs = rng.uniform(-1, 4, size=(6, 7))
    f = tj.trace(skip_and_stop, backend=backend)
    want = [skip_and_stop(x) for x in xs]
    np.testing.assert_array_equal([f(x) for x in xs], want)
    with using_backend(backend):
        np.testing.assert_array_equal(tj.vmap(skip_and_stop)(xs), want)
        # lanes break at different iterations
        got = tj.vmap(sin_taylor)(xs[:, 0])
    np.testing.assert_array_equal(got, [sin_taylor(x) for x in xs[:, 0]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_early_return_inside_a_loop(backend, rng):
    xs = rng.uniform(0.05, 2, size=(6, 3))
    f = tj.trace(grow_until, backend=backend)
    for x in xs:
        np.testing.assert_array_equal(f(x), grow_until(x))
    with using_backend(backend):
        np.testing.assert_array_equal(tj.vmap(grow_until)(xs), [grow_until(x) for x in xs])
        with autograph.enabled():
            check_grads(grow_until, (xs[0],), order=2, modes=("fwd", "rev"))
    assert "while[" in str(tj.trace(grow_until).ir(xs[0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_range_with_a_traced_bound_and_the_loop_variable_after_it(backend):
    f = tj.trace(count_down, backend=backend)
    for n in (7, 6, 1, 0, -3):
        got, want = f(1.5, np.int64(n)), count_down(1.5, n)
        assert got[0] == want[0] and got[1] == want[1], (n, got, want)
    assert f.cache_info().traces == 1
    assert "while[" in str(f.ir(1.5, np.int64(3)))
    g = tj.trace(lambda x, n: count_down(x, n)[0], backend=backend)
    ns = np.array([5, 0, 8, -1], np.int64)
    with using_backend(backend):
        np.testing.assert_allclose(tj.grad(g)(1.5, np.int64(5)), 0.5 ** 3)
        got = tj.vmap(count_down, in_axes=(None, 0))(1.5, ns)   # a bound per lane
    want = [count_down(1.5, int(n)) for n in ns]
    np.testing.assert_array_equal(got[0], [w[0] for w in want])
    np.testing.assert_array_equal(got[1], [w[1] for w in want])


@pytest.mark.parametrize("backend", BACKENDS)
def test_for_over_a_traced_array(backend, rng):
    a = rng.integers(0, 3, size=(5, 3)).astype(float)    # (exact sums in any order)
    f = tj.trace(partial_sums, backend=backend)
    for scale in (0.125, 0.5, 2.0):
        assert f(a * scale) == partial_sums(a * scale)
    assert "while[" in str(f.ir(a))

    def total(a):                            # no data-dependent exit: unrolled, as before
        s = a[0] * 0
        for row in a:
            s = s + row
        if s.sum() > 0:
            s = -s
        return s

    assert "while[" not in str(tj.trace(total).ir(a))
    np.testing.assert_array_equal(tj.trace(total, backend=backend)(a), total(a))


def test_concrete_loops_unroll_to_the_same_graph():
    def converted(x):
        for i in range(3):
            x = x * 2.0 + i
        if x.sum() > 0:                      # (makes tracejit convert the function)
            x = -x
        return x

    def by_hand(x):
        x = x * 2.0 + 0
        x = x * 2.0 + 1
        x = x * 2.0 + 2
        if x.sum() > 0:
            x = -x
        return x

    a = np.ones(3)
    assert str(tj.trace(converted).ir(a)) == str(tj.trace(by_hand).ir(a))


def test_while_with_break_and_continue(rng):
    def doubling(x):
        n = 0
        while True:
            x = x * 2
            n += 1
            if n % 2 == 1:
                continue
            if x.sum() > 10:
                break
        return x, n

    for x in rng.uniform(0.01, 1, size=(3, 2)):
        got, want = tj.trace(doubling)(x), doubling(x.copy())
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1] == want[1]


def test_what_cannot_be_converted_names_the_variable_and_the_line():
    def local_after(x, n):
        for i in range(n):
            y = x * i
        return y

    with pytest.raises(UnboundLocalError, match="'y' is first assigned inside the `for` loop at "
                                                "test_autograph_loops.py"):
        tj.trace(local_after)(np.ones(2), np.int64(3))

    def changes_dtype(x, n):
        k = 0
        for i in range(n):
            k = k + 0.5 * x
        return k

    with pytest.raises(ConcretizationError, match=r"'k' changes from int64\[\] to float64\[2\]"
                                                  r".*test_autograph_loops.py:\d+"):
        tj.trace(changes_dtype)(np.ones(2), np.int64(3))

    def returns_differ(x, n):
        for i in range(n):
            if x.sum() > 3:
                return x[:1]
            x = x * 2
        return x

    with pytest.raises(ShapeError, match="values returned on its paths"):
        tj.trace(returns_differ)(np.ones(2), np.int64(3))

    def traced_shape(x, n):
        for i in range(n):
            x = x + np.zeros(i + 1).sum()
        return x

    with pytest.raises(ConcretizationError, match=r"in the `for` loop at test_autograph_loops"
                                                  r".py:\d+, which became a while_loop"):
        tj.trace(traced_shape)(np.ones(2), np.int64(3))

    def appends(x, n):
        out = []
        for i in range(n):
            out.append(x)
            x = x * 2
        return x, out

    with pytest.raises(ConcretizationError, match="list 'out' is changed in place"):
        tj.trace(appends)(np.ones(2), np.int64(3))


@pytest.mark.parametrize("f", [nested_return, else_clauses, enumerated, inner_function,
                               triangle])
def test_nested_loops_else_clauses_and_enumerate_agree_with_python(f, rng):
    for x in rng.uniform(0.05, 3, size=(5, 2)):
        got, want = tj.trace(f)(x), f(x.copy())
        if not isinstance(want, tuple):
            got, want = (got,), (want,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
