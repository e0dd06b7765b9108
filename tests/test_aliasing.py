"""Arguments that share memory with a written argument (numpy/aliases.py): the call is traced
for its alias pattern, each group of arguments as views of one root, so a write through one
name is seen through the others as in NumPy; both backends, against NumPy on the same aliasing.
Also: an output that is a written argument is the caller's array, with no copy computed.
"""
import numpy as np
import pytest

import tracejit as tj

BACKENDS = ("llvm", "interpret")


def run_both(fn, make, calls=2):
    """``fn(*make(buf))`` on a fresh buffer with NumPy and traced (each backend, ``calls``
    times: the cached path too): the whole buffer must agree exactly, the results too (sums to
    rounding: the llvm backend adds in its own order)."""
    want_buf, want = _fresh(make, fn)
    for backend in BACKENDS:
        traced = tj.trace(fn, backend=backend)
        for _ in range(calls):
            buf = _buffer()
            got = traced(*make(buf))
            np.testing.assert_array_equal(buf, want_buf, err_msg=backend)
            assert (got is None) == (want is None)
            for g, w in zip(got if isinstance(got, tuple) else (got,) if got is not None else (),
                            want if isinstance(want, tuple) else (want,)):
                np.testing.assert_allclose(g, w, rtol=1e-14, err_msg=backend)
        assert traced.cache_info().traces <= 2      # the plain signature, the aliased one


def _buffer():
    return np.arange(24.0).reshape(4, 6) * 0.5 - 3


def _fresh(make, fn):
    buf = _buffer()
    return buf, fn(*make(buf))


# NPBench-style kernels, called on views of one array ---------------------------------------

def jacobi_shift(TSTEPS, A, B):
    """Two half steps of a 1-D stencil, A and B overlapping views of one row."""
    for _ in range(TSTEPS):
        B[1:-1] = 0.5 * (A[:-2] + A[2:])
        A[1:-1] += 0.25 * B[1:-1]
    return A.sum(), B


def axpy(alpha, x, y):
    y += alpha * x
    return y


def swap_rows(a, b):
    t = a.copy()
    a[...] = b
    b[...] = t


def transpose_update(a, at):
    a[0, 1:] = 7.0
    return at[1:, 0] * 1.0


@pytest.mark.parametrize("name, fn, make", [
    ("stencil on overlapping rows", jacobi_shift,
     lambda buf: (3, buf.ravel()[2:14], buf.ravel()[5:17])),
    ("the same array twice", axpy, lambda buf: (2.0, buf[1], buf[1])),
    ("reversed overlap", axpy, lambda buf: (-1.0, buf[2, ::-1], buf[2])),
    ("rows of one 2-D array", swap_rows, lambda buf: (buf[0:2], buf[1:3])),
    ("an array and its transpose", transpose_update, lambda buf: (buf[:3, :3], buf[:3, :3].T)),
    ("strided interleave", axpy, lambda buf: (3.0, buf.ravel()[::2][:6], buf.ravel()[2:8])),
])
def test_aliasing_follows_numpy(name, fn, make):
    run_both(fn, make)


def test_disjoint_views_and_reads_need_no_pattern():
    g = tj.trace(axpy)
    buf = _buffer()
    g(2.0, buf[0], buf[1])                         # views of one buffer that do not overlap
    g(2.0, buf[2], buf[3])
    assert g.cache_info().traces == 1

    def reads(a, b):
        return a @ b
    h = tj.trace(reads)
    x = np.arange(9.0).reshape(3, 3)
    np.testing.assert_array_equal(h(x, x.T), x @ x.T)


def test_returned_member_is_the_callers_array():
    buf = _buffer()
    a, b = buf[0], buf[0]
    for backend in BACKENDS:
        out = tj.trace(axpy, backend=backend)(1.0, a, b)
        assert out is b


def test_patterns_that_cannot_be_traced_are_clear_errors():
    buf = _buffer()
    with pytest.raises(tj.InputError, match="different dtypes"):
        tj.trace(axpy)(1.0, buf[0].view(np.int64), buf[0])
    raw = np.zeros(40, np.uint8)
    x = np.ndarray((2,), np.float64, raw.data, offset=1)     # not element-aligned with y
    y = np.ndarray((2,), np.float64, raw.data, offset=8)
    with pytest.raises(tj.InputError, match="whole number of elements"):
        tj.trace(axpy)(1.0, x, y)
    ro = _buffer()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tj.trace(axpy)(1.0, ro[0], ro[0])


def test_written_argument_returned_costs_no_copy():
    def inc(x):
        x += 1
        return x
    f = tj.trace(inc)
    x = np.zeros(1000)
    graph = f.lower(x).graph
    # the output that is the argument itself is a 0-d placeholder, not a second array
    assert graph.outvars[0].ty.shape == () and graph.outvars[1].ty.shape == (1000,)
    for _ in range(3):                                     # Python path, then native
        assert f(x) is x
    np.testing.assert_array_equal(x, 3.0)


def test_inspection_shows_the_aliased_signature():
    def shift(x, y):
        x[1:] += 2.0 * x[:-1]
        return (y * y).sum()
    a = np.arange(5.0)
    f = tj.trace(shift)
    aliased, plain = str(f.ir(a, a)), str(f.ir(a, a.copy()))
    # the aliased trace has the root of the shared memory as a third input, and writes it back
    assert len(f.lower(a, a).graph.invars) == 3 and len(f.lower(a, a.copy()).graph.invars) == 2
    assert "write c <-" in aliased and "write a <-" in plain and aliased != plain
    assert "take" not in aliased        # a member that is a block of the root is a slice of it
    b = a.copy()
    want = shift(b, b)
    assert f.lower(a, a) is f.lower(a, a)          # cached: the entry the call then uses
    assert f(a, a) == want and f.cache_info().traces == 2
    np.testing.assert_array_equal(a, b)


def _writes_first(x, y):
    x[1:] += 2.0 * x[:-1]
    return (y * y).sum()


def _reads_both(x, y):
    return (x * np.sin(y)).sum()


TRANSFORMS = {
    "grad": lambda f, x, y: tj.grad(f, argnums=(0, 1))(x, y),
    "value_and_grad": lambda f, x, y: tj.value_and_grad(f)(x, y)[0],
    "jvp": lambda f, x, y: tj.jvp(f, (x, y), (np.ones_like(x), np.ones_like(y)))[0],
    "vjp": lambda f, x, y: tj.vjp(f, x, y)[0],
    "vmap": lambda f, x, y: tj.vmap(f)(x[None], y[None])[0],
    "traced grad": lambda f, x, y: tj.trace(tj.grad(f))(x, y),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_of_a_writer_refuses_shared_memory(backend, name):
    """A transform runs the function on its own copies of the arguments: with arguments that
    share memory and a function that writes into one, NumPy's answer (the write seen through
    the other) is not what the copies give, so the call is refused (regression: it silently
    returned f(a.copy(), a.copy())). Disjoint arguments, and readers, are unaffected."""
    run = TRANSFORMS[name]
    with _backend(backend):
        a = np.linspace(0.5, 1.5, 5)
        for _ in range(2):                      # the cached (maybe native) path too
            buf = a.copy()
            with pytest.raises(tj.InputError, match="share memory"):
                run(_writes_first, buf, buf)
            np.testing.assert_array_equal(buf, a)        # nothing ran
        x, y = a.copy(), a.copy()
        run(_writes_first, x, y)                          # disjoint: fine
        buf = a.copy()
        got = run(_reads_both, buf, buf)                  # a reader of shared memory: fine
        want = run(_reads_both, a.copy(), a.copy())
        for g, w in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                        np.atleast_1d(want) if not isinstance(want, tuple) else want):
            np.testing.assert_allclose(g, w, rtol=1e-14)


class _backend:
    def __init__(self, backend):
        self.backend, self.saved = backend, None

    def __enter__(self):
        self.saved, tj.config.backend = tj.config.backend, self.backend

    def __exit__(self, *exc):
        tj.config.backend = self.saved
