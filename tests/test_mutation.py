"""NumPy's mutation semantics in traced functions: writes into arguments (written back into the
caller's arrays), views that see writes and write through, arrays created with NumPy inside the
trace, in-place NumPy functions; compared with plain NumPy on the returned values *and* the
arguments' final contents, on both backends."""
import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp

BACKENDS = ["interpret", "llvm"]


def same_as_numpy(fn, *args, static_argnums=(), calls=2):
    """Run ``fn`` on copies of ``args`` with NumPy and traced (each backend, ``calls`` times so
    the cached path runs too); returns and final argument contents must agree exactly."""
    want_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    want = fn(*want_args)
    for backend in BACKENDS:
        traced = tj.trace(fn, static_argnums=static_argnums, backend=backend)
        for _ in range(calls):
            got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            got = traced(*got_args)
            _equal(got, want, f"{backend}: result", exact=False)
            for k, (g, w) in enumerate(zip(got_args, want_args)):
                _equal(g, w, f"{backend}: argument {k} after the call")
    return want


def _equal(got, want, what, exact=True):
    """Equal dtypes and values; the returned values (``exact=False``) may hold float sums,
    which the llvm backend adds in its own vectorised order (not NumPy's pairwise one): those
    agree to a few ulps of the terms' magnitude instead of bit for bit."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), what
        for g, w in zip(got, want):
            _equal(g, w, what, exact)
        return
    assert np.asarray(got).dtype == np.asarray(want).dtype, (what, got, want)
    if exact or np.asarray(want).dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=what)


rng = np.random.default_rng(0)
X = rng.standard_normal((4, 5))
V = rng.standard_normal(7)


# writes into arguments --------------------------------------------------------------------------

def test_setitem_and_augmented_assignment_on_arguments_reach_the_caller():
    def f(a, b):
        a[0] = 1.0
        a[1:, 2] += b[:3]
        b *= 2
        a[a > 0.5] = 0.5            # a traced mask: a select
        return a.sum() + b.sum()
    same_as_numpy(lambda a, b: (f(a, b),), X, V[:5])


def test_augmented_operators_write_every_dtype():
    def f(x, i):
        x += 1.5
        x -= 0.25
        x *= 3
        x /= 2
        x **= 2
        i //= 2
        i %= 5
        i <<= 1
        i >>= 1
        i &= 6
        i |= 1
        i ^= 3
        return x, i
    same_as_numpy(f, V.copy(), np.arange(-5, 5, dtype=np.int64))


def test_return_of_a_written_argument_is_the_callers_array():
    def f(x):
        x += 1
        return x
    for backend in BACKENDS:
        x = np.zeros(3)
        out = tj.trace(f, backend=backend)(x)
        assert out is x and np.array_equal(x, [1, 1, 1])


def test_write_back_is_shown_in_the_ir():
    def f(x):
        x[0] = 5.0
        return x.sum()
    text = str(tj.trace(f).ir(np.zeros(3)))
    assert "; write a <- " in text, text


def test_jacobi_stencil_on_its_arguments():
    def jacobi(A, B, T):
        for _ in range(T):
            B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
            A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
        return A, B
    same_as_numpy(jacobi, rng.random(40), rng.random(40), 6, static_argnums=(2,))

    def jacobi_2d(A, B, T):
        for _ in range(T):
            B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1]
                                   + A[:-2, 1:-1])
            A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1]
                                   + B[:-2, 1:-1])
    same_as_numpy(lambda A, B: jacobi_2d(A, B, 3), rng.random((9, 8)), rng.random((9, 8)))


def test_cholesky_written_in_place():
    def cholesky(A):
        n = A.shape[0]
        for i in range(n):
            for j in range(i):
                A[i, j] -= np.dot(A[i, :j], A[j, :j])
                A[i, j] /= A[j, j]
            A[i, i] -= np.dot(A[i, :i], A[i, :i])
            A[i, i] = np.sqrt(A[i, i])
        for i in range(n):
            A[i, i + 1:] = 0.0
    M = rng.random((7, 7))
    M = M @ M.T + 7 * np.eye(7)
    want = M.copy()
    cholesky(want)
    for backend in BACKENDS:
        got = M.copy()
        tj.trace(cholesky, backend=backend)(got)
        # np.dot sums in its own order: agreement to rounding, and a true factor
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(got @ got.T, M, rtol=1e-12)


def test_argument_write_errors_are_clear():
    def f(x, y):
        x[0] = 1.0
        return y * 2
    a = np.zeros(4)
    with pytest.raises(tj.InputError, match="share memory with different dtypes"):
        tj.trace(f)(a, a.view(np.int64)[1:])      # (NumPy's aliasing: tests/test_aliasing.py)
    ro = np.zeros(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tj.trace(f)(ro, np.zeros(2))
    assert not ro.any()

    def g(x):
        r = x.reshape(-1)
        r[0] = 9.0
        return r
    same_as_numpy(g, X.copy())
    with pytest.raises(tj.InputError, match="C-contiguous"):
        tj.trace(g)(np.asfortranarray(X))


def test_scalar_arguments_are_immutable():
    def f(x, s):
        s += 0.5                    # a Python scalar rebinds
        x += s
        return x, s
    same_as_numpy(f, V.copy(), 2)

    def g(x, n):
        n += 1                      # NumPy rebinds a NumPy scalar, writes into a 0-d array
        x += n
        return n, x
    same_as_numpy(g, V.copy(), np.int64(3))     # retraced with the scalar immutable
    same_as_numpy(g, V.copy(), np.array(3))


def test_reduction_results_are_scalars():
    def f(x):
        s = x.astype(np.int64).sum()
        s += 0.5                    # NumPy: np.int64 + 0.5 -> np.float64 (a rebind)
        return s
    same_as_numpy(f, np.arange(5.0))


# views -------------------------------------------------------------------------------------------

def test_views_see_writes_and_write_through():
    def f(x):
        y = x * 1.0
        v = y[1:3]
        t = y.T
        r = y.reshape(-1)
        p, q = np.split(y, 2)
        fl = np.flip(y, 1)
        row = y[2]
        y[0, 0] += 10
        v[0, 1] = -5
        r[7] = 7
        q[0, 0] = 99
        fl[0, 0] = 42
        row *= 2
        t[4, 3] = -1
        e = np.expand_dims(y, 0)
        e[0, 3, 3] = 11
        return y, v + 0, t + 0, r + 0, p + 0, fl + 0, row + 0, e + 0
    same_as_numpy(f, X)


def test_views_of_views_and_views_of_arguments():
    def f(x):
        v = x[1:, ::2]
        w = v[::-1].T
        w[0, 0] = 100.0
        x[1, 0] = -100.0
        s = np.swapaxes(x, 0, 1)[2:]
        s[0] += 1
        m = np.moveaxis(x[None], 0, 2)
        m[0, 0, 0] = 3.0
        return v + 0, w + 0, s + 0
    same_as_numpy(f, X)


def test_reshape_copy_is_not_a_view():
    def f(x):
        y = x * 1
        c = y.T.reshape(-1)         # NumPy copies: writes stay in c
        c[0] = 50.0
        y[0, 1] = 60.0
        return y, c
    same_as_numpy(f, X)


def test_read_only_views():
    def f(x):
        b = np.broadcast_to(x[0], (3, 5))
        d = np.diagonal(x)
        x[0, 0] = 8.0               # seen by both
        return b + 0, d + 0
    same_as_numpy(f, X)
    for view in (lambda x: np.broadcast_to(x[0], (2, 5)), lambda x: np.diagonal(x)):
        def g(x, view=view):
            v = view(x)
            v[0] = 1.0
        with pytest.raises(ValueError, match="read-only"):
            view(X.copy())[0] = 1.0             # NumPy refuses too
        with pytest.raises(ValueError, match="read-only"):
            tj.trace(g)(X.copy())


def test_temporary_views_in_augmented_assignment():
    def f(x):
        y = x * 1
        y[1:] += 2                  # Python: tmp = y[1:]; tmp += 2; y[1:] = tmp
        y[::2] *= 3
        y[[0, 0, 1]] += 1           # NumPy: no accumulation for repeated indices
        y[0] -= 5
        return y
    same_as_numpy(f, V)


# arrays created inside the trace -------------------------------------------------------------------

def test_arrays_created_with_numpy_take_traced_writes():
    def f(x):
        out = np.empty_like(x)
        out[0] = x[0] * 2
        out[1:] = x[1:] + 1
        R = np.eye(3)
        R[0, 1] = np.sin(x[0])
        z = np.zeros(len(x))
        z += x
        o = np.ones((2, 2), dtype=np.float32)
        o[1] = x[:2]                # float64 into float32: cast as NumPy's setitem
        a = np.array([x[0], x[1]])
        a[0] = 5
        f = np.full(3, x[2])
        f[1] = 0
        g = np.array(x)             # a copy
        g[0] = -1
        h = np.asarray(x)           # the same array
        h[1] = -2
        k = np.arange(4.0)
        k[2:] = x[:2]
        return out, R, z, o, a, f, g, h, k
    same_as_numpy(f, V)


def test_known_values_of_created_arrays_stay_concrete():
    def f(x):
        idx = np.arange(3)
        n = int(idx[2])                     # concrete: NumPy's value
        m = np.linspace(0, 1, 5)
        if m[1] > 0.2:                      # Python control flow on a known value
            x = x * 2
        mask = m > 0.3
        total = 0.0
        for i in np.arange(2):              # iterating a created array
            total += x[i]
        return x[idx] + n, m[mask], total, x[np.array([0, 2])]
    same_as_numpy(f, V)


def test_creation_is_intercepted_only_while_tracing():
    zeros = np.zeros
    tj.trace(lambda x: np.zeros(3) + x)(1.0)
    assert np.zeros is zeros and type(np.zeros(2)) is np.ndarray


def test_in_place_numpy_functions():
    def f(x):
        a = np.empty(5)
        a.fill(2.0)
        np.copyto(a, x[:5])
        b = np.zeros((3, 3))
        np.fill_diagonal(b, x[:3])
        c = np.zeros(6)
        c.put([0, 2], x[:2])
        d = np.ones(6)
        np.putmask(d, x[:6] > 0.5, x[:6] * 10)
        e = np.zeros(6)
        np.add(x[:6], 1, out=e)
        g = np.zeros(6)
        np.multiply(x[:6], 2, out=g, where=x[:6] > 0.3)
        h = np.zeros(4)
        np.place(h, np.array([True, False, True, True]), x[:2])
        np.multiply(x, 3, out=x)    # into an argument
        return a, b, c, d, e, g, h
    same_as_numpy(f, V)


def test_writing_traced_values_into_a_numpy_array_is_refused():
    G = np.zeros(3)

    def f(x):
        np.copyto(G, x)
    with pytest.raises(tj.TracerError, match="only traced arrays"):
        tj.trace(f)(np.ones(3))


# nonzero with size= -------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
def test_nonzero_with_size(shape):
    x = rng.standard_normal(shape)
    for size in (0, 2, x.size, x.size + 3):
        want = np.nonzero(x > 0.3)
        want = tuple(np.concatenate([w[:size], np.full(max(0, size - len(w)), -1)])
                     for w in want)
        for backend in BACKENDS:
            got = tj.trace(lambda x: tnp.nonzero(x > 0.3, size=size, fill_value=-1),
                           backend=backend)(x)
            _equal(tuple(got), want, f"nonzero {backend}")
        _equal(tnp.nonzero(x > 0.3, size=size, fill_value=-1), want, "concrete")
    first = tuple(np.concatenate([w[:2], np.zeros(max(0, 2 - len(w)), np.int64)])
                  for w in np.nonzero(x > 0.3))
    np.testing.assert_array_equal(tj.trace(lambda x: x[tnp.nonzero(x > 0.3, size=2)])(x),
                                  x[first])
    np.testing.assert_array_equal(tj.trace(lambda x: tnp.argwhere(x > 0.3, size=2))(x),
                                  np.stack(first, axis=-1))
    assert tj.trace(lambda x: tnp.count_nonzero(x > 0))(x) == np.count_nonzero(x > 0)


def test_data_dependent_masks_and_nonzero_say_what_to_do():
    with pytest.raises(tj.ConcretizationError, match="nonzero.*size=k"):
        tj.trace(lambda x: x[x > 0])(V)
    with pytest.raises(tj.ConcretizationError, match="size=k"):
        tj.trace(lambda x: np.nonzero(x))(V)


def test_in_place_results_keep_the_arrays_dtype():
    def int_plus_float(x):
        z = x.astype(np.int64)
        z += 1.5                      # NumPy: UFuncTypeError (a TypeError)
        return z
    with pytest.raises(TypeError):
        int_plus_float(np.ones(3))
    with pytest.raises(TypeError, match="same_kind"):
        tj.jit(int_plus_float)(np.ones(3))

    def f32(x):
        w = x.astype(np.float32)
        w += x                        # same_kind cast back to float32, as NumPy
        return w
    same_as_numpy(f32, V)


# minimised fuzz findings (tests/fuzz --programs mutating, seeds 731 and 741) ------------------

def test_zero_d_arrays_numpy_returns_as_arrays_are_writable():
    def astype(x):
        v = x.astype(np.int32)
        v[...] = -1
        return v
    same_as_numpy(astype, np.array(2.0))

    def like(x):
        v = np.zeros_like(x[0])
        for i in range(4):
            v += x[i]
        v[()] = -v
        w = np.empty_like(np.asarray(x[1]))
        w.fill(3)
        return v, w
    same_as_numpy(like, np.arange(4.0))

    def of_a_python_float(s):
        v = np.asarray(s)
        np.sin(v, out=v)
        w = np.transpose(s, ())
        np.putmask(w, np.array(True), w * 2)
        return v, w
    want = of_a_python_float(2.0)
    for backend in BACKENDS:
        got = tj.trace(of_a_python_float, backend=backend)(2.0)
        assert all(isinstance(g, np.ndarray) and g.shape == () for g in got)
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-15)


def test_written_zero_d_argument_is_returned_as_the_callers_array():
    def f(x):
        x.fill(-2.5)
        return (x,)
    x = np.array(1.0)
    out = tj.trace(f)(x)
    assert out[0] is x and x == -2.5


def test_concrete_masks_over_leading_axes():
    def f(x, y, z):
        x[np.array([True, False, True])] *= 2
        y[np.array([False, True, True])] = -2.0
        z[np.array([[True, False]])] = 4
        return ()
    same_as_numpy(f, np.arange(3.0), np.zeros((3, 3)), np.zeros((1, 2, 2), np.int32))

    def traced_mask_rows(x, row):
        x[x[:, 0] > 0] = row        # one value per selected row: NumPy broadcasts it
        return ()
    same_as_numpy(traced_mask_rows, X.copy(), np.arange(5.0))


def test_identity_valued_ops_are_new_arrays():
    def f(x, i):
        v = np.positive(x)
        v += 1
        w = np.conj(x)
        c = np.ceil(i)
        c[0] = 7
        r = +x
        r[1] = 5
        x[0] = 9
        return v, w, c, r
    same_as_numpy(f, np.arange(3.0), np.arange(3))


def test_ravel_of_a_non_contiguous_view_is_a_copy():
    def f(x, y):
        x[::2].ravel()[0] = 9
        y[:, 0].ravel()[0] = 9
        b = np.broadcast_to(x[0], (2,)).ravel()
        b[0] = 1.5
        return b
    same_as_numpy(f, np.arange(6.0), np.arange(6.0).reshape(3, 2))


def test_computed_arrays_keep_a_transposed_arguments_layout():
    def f(a0, a1):
        v0 = a1.astype(np.float32)        # F-ordered in NumPy when a1 is
        np.copyto(v0.ravel(), a0 * 1)     # so ravel copies and v0 is unchanged
        return (v0,)
    same_as_numpy(f, np.array(5.0), np.arange(4.0).reshape(2, 2))
    with pytest.raises(tj.InputError, match="C-contiguous"):
        tj.trace(f)(np.array(5.0), np.arange(4.0).reshape(2, 2).T)


def test_numpy_scalar_arguments_rebind_and_zero_d_arrays_are_written():
    def g(x, n):
        n += 1
        x += n
        return n

    def h(n):
        n *= 0.5                    # NumPy: np.int64 rebinds to float64; a 0-d int array raises
        return n
    fg, fh = tj.trace(g), tj.trace(h)
    for _ in range(3):              # the third call would take a native entry if there were one
        a = np.zeros(2)
        r = fg(a, np.int64(3))
        assert type(r) is np.int64 and r == 4 and a[0] == 4
        b = np.array(3)
        assert fg(np.zeros(2), b) is b and b == 4
        assert fh(np.int64(3)) == h(np.int64(3)) == 1.5
    with pytest.raises(TypeError):
        h(np.array(3))
    with pytest.raises(TypeError, match="same_kind"):
        fh(np.array(3))


def test_real_and_imag_of_numpy_scalars_are_new_scalars():
    # fuzz 811 #759: np.imag of a reduction result (a NumPy scalar) is a new scalar, so an
    # in-place operator on it rebinds (it was refused as a write into a read-only view)
    def f(a, c):
        v = np.imag(np.sum(a))
        v **= 2
        r = np.real(np.sum(c))
        r += 1
        return v, r

    for backend in ("llvm", "interpret"):
        got = tj.trace(f, backend=backend)(1.5, np.array([1 + 2j]))
        assert got == f(1.5, np.array([1 + 2j]))


def test_mask_assignment_from_an_overlapping_view_is_refused():
    # fuzz 821 #121: NumPy's x[mask] = v does not buffer v (every other write does), so with v
    # sharing memory with x its result depends on the copy order: refused, not guessed
    def f(a):
        v = a[::-1]
        v[np.array([True, True, True])] = a
        return v

    with pytest.raises(tj.errors.UnsupportedError, match="shares memory"):
        tj.trace(f)(np.arange(3.0))

    def g(A):                           # views of one array without common elements: fine
        A[0][np.array([True, False, True])] = A[1][:2]
        A[1][A[1] > 3] = A[0][1:2]
        return A

    x1, x2 = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(tj.trace(g)(x1), g(x2))
    np.testing.assert_array_equal(x1, x2)


def test_read_only_destination_fails_before_the_index_is_checked():
    # fuzz 811 #618: NumPy raises ValueError (read-only) even for an out-of-range index
    def f(a):
        v = np.broadcast_to(a.astype(np.int32), (2, 1))
        v[2] = 1

    with pytest.raises(ValueError, match="read-only"):
        f(np.zeros(1))
    for backend in ("llvm", "interpret"):
        with pytest.raises(ValueError, match="read-only"):
            tj.trace(f, backend=backend)(np.zeros(1))


def test_shape_assignment_reshapes_in_place():
    # npbench mandelbrot2 writes Xi.shape = n
    def f(x):
        y = x * 2
        y.shape = 2, 3
        z = np.zeros(6)
        z.shape = (3, 2)
        return y, z

    for got, want in zip(tj.trace(f)(np.arange(6.0)), f(np.arange(6.0))):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="cannot reshape"):
        tj.trace(lambda x: setattr(x * 1, "shape", (4,)))(np.ones(6))
    with pytest.raises(tj.errors.UnsupportedError, match="reshape"):
        tj.trace(lambda x: setattr(x, "shape", (2, 3)))(np.ones(6))


def test_adding_length_one_axes_is_a_view_in_any_layout():
    # npbench floyd_warshall on a Fortran-ordered argument was refused ("reshapes it"):
    # np.add.outer reshapes a column to (n, 1), a view whatever the layout
    def f(P):
        P[:] = np.minimum(P, np.add.outer(P[:, 0], P[0, :]))
        col = P[:, 1].reshape(-1, 1)
        col[0, 0] = -1.0                 # a view: the write reaches P
        return P

    x1 = np.asfortranarray(np.arange(9.0).reshape(3, 3))
    x2 = x1.copy(order="F")
    np.testing.assert_array_equal(tj.trace(f)(x1), f(x2))
    np.testing.assert_array_equal(x1, x2)


def test_copyto_into_a_read_only_view_fails_as_read_only_first():
    # fuzz 841 #2: NumPy reports the read-only destination before the cast
    def f(a):
        v = np.broadcast_to(np.arctan2(a, 1), (2, 1, 3))
        np.copyto(v, v * 1j)

    with pytest.raises(ValueError, match="read-only"):
        f(np.ones((1, 1), np.int64))
    with pytest.raises(ValueError, match="read-only"):
        tj.trace(f)(np.ones((1, 1), np.int64))


def test_mask_assignment_of_an_array_into_itself_is_the_identity():
    # fuzz 841 #46: x[mask] = x copies each element onto itself in either order
    def f(a):
        a[np.array([True])] = a
        return a

    x1, x2 = np.array([True]), np.array([True])
    np.testing.assert_array_equal(tj.trace(f)(x1), f(x2))


def test_writes_through_real_and_imag_views():
    """x.real / x.imag of a complex array are writable views, as in NumPy (setitem, augmented
    operators, assignment to the attribute, through a view of x), built exactly with complex_p:
    infinities, NaNs and signed zeros in the other part are kept."""
    z = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    z[1] = complex(-0.0, np.inf)

    def f(z, v):
        z.real[1:3] = v[:2]
        z.imag *= -1
        r = z.real
        r += 1.0
        w = z[::2]
        w.imag[...] = -0.0
        return z.real.copy(), np.abs(z)

    def g(z):
        z.real = np.inf
        z.imag[0] = np.nan
        return z
    same_as_numpy(f, z, V[:3])
    same_as_numpy(g, z)
    for backend in BACKENDS:
        got = tj.trace(g, backend=backend)(z.copy())
        assert np.array_equal(np.signbit(got.imag), np.signbit(g(z.copy()).imag))
