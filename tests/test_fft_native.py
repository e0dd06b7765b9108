"""The native FFT (backend/emit/fftlib.py, emit/fft.py): values against NumPy and an exact
(long double) DFT for every length 1..64, primes and powers of two, both precisions; each
transform kind planned with no NumPy fallback (several axes, strided operands, an axis in the
middle); derivatives through the native path against the interpreter and finite differences.

Each table of lengths is one traced function returning every transform, so a test compiles
once per (dtype, kind) signature."""
import numpy as np
import pytest

import tracejit as tj
from tests.test_fft import _data
from tracejit.test_util import check_grads, using_backend

SMALL = list(range(1, 65))       # native: the powers of two; NumPy's pocketfft: the others
LARGE = [1024, 1031, 2 * 1031, 4093, 4097, 2 ** 14]     # all native (Bluestein: 1031...4097)


def _exact(fn, x, **kw):
    """``fn`` in long double (pocketfft's long double path: far below float64 rounding)."""
    wide = x.astype(np.clongdouble if x.dtype.kind == "c" else np.longdouble)
    return fn(wide, **kw)


def _error(got, exact):
    """Largest error relative to the largest magnitude of the exact result."""
    return float(np.abs(got - exact).max() / max(np.abs(exact).max(), 1e-300))


def _native(f, *args):
    exe = f.lower(*args).executable
    assert exe.native, exe.describe()
    assert "native FFT" in exe.describe()
    return exe


KINDS = {"fft": (np.fft.fft, "c"), "ifft": (np.fft.ifft, "c"), "rfft": (np.fft.rfft, "f"),
         "irfft": (np.fft.irfft, "c")}


def _input(kind, n, dtype):
    """A (2, n) operand, or for irfft the (2, n//2 + 1) half spectrum of n points."""
    return _data((2, n // 2 + 1 if kind == "irfft" else n), dtype, seed=n)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("precision", ["single", "double"])
@pytest.mark.parametrize("lengths", ["small", "large"])
def test_every_length_within_a_small_multiple_of_pocketffts_error(kind, precision, lengths):
    fn, domain = KINDS[kind]
    dtype = {("c", "single"): np.complex64, ("c", "double"): np.complex128,
             ("f", "single"): np.float32, ("f", "double"): np.float64}[domain, precision]
    ns = SMALL if lengths == "small" else LARGE
    xs = tuple(_input(kind, n, dtype) for n in ns)
    f = tj.jit(lambda *a: tuple(fn(x, n) for x, n in zip(a, ns)), backend="llvm")
    if lengths == "large":
        _native(f, *xs)
    else:
        pow2 = [k for k, n in enumerate(ns) if n & (n - 1) == 0]
        _native(tj.jit(lambda *a: tuple(fn(x, ns[k]) for k, x in zip(pow2, a)), backend="llvm"),
                *(xs[k] for k in pow2))
    got = f(*xs)
    for n, x, g in zip(ns, xs, got):
        want = fn(x, n)
        assert g.dtype == want.dtype and g.shape == want.shape, (kind, n)
        exact = _exact(fn, x, n=n)
        ours, theirs = _error(g, exact), _error(want, exact)
        eps = np.finfo(np.float32 if precision == "single" else np.float64).eps
        # pocketfft's own error is a few eps; ours may differ by the algorithm (Bluestein for
        # lengths pocketfft factors) but stays within a small multiple of it
        assert ours <= max(4 * theirs, 8 * eps), (kind, n, ours, theirs)


@pytest.mark.parametrize("n", [2 ** 16])     # 2^20: measured (bench/fft_bench.py), slow here
def test_long_powers_of_two(n):
    x = _data(n, np.complex128, seed=1)
    f = tj.jit(lambda a: (np.fft.fft(a), np.fft.rfft(a.real), np.fft.irfft(a[: n // 2 + 1], n)),
               backend="llvm")
    _native(f, x)
    for g, fn, arg in zip(f(x), (np.fft.fft, np.fft.rfft, np.fft.irfft),
                          (x, x.real, x[: n // 2 + 1])):
        exact = _exact(fn, arg) if fn is not np.fft.irfft else _exact(fn, arg, n=n)
        want = fn(arg) if fn is not np.fft.irfft else fn(arg, n)
        assert _error(g, exact) <= max(4 * _error(want, exact), 8e-16), fn.__name__


MULTI = [
    ("fftn axes (0, 2)", lambda a: np.fft.fftn(a, axes=(0, 2))),
    ("ifft middle axis", lambda a: np.fft.ifft(a, axis=1, norm="ortho")),
    ("fft2 of a transpose", lambda a: np.fft.fft2(a.transpose(2, 0, 1))),
    ("rfftn", lambda a: np.fft.rfftn(a.real)),
    ("rfft axis 0", lambda a: np.fft.rfft(a.real, axis=0)),
    ("irfftn", lambda a: np.fft.irfftn(a, s=(4, 2, 16), axes=(0, 1, 2))),
    ("irfft2", lambda a: np.fft.irfft2(a[0], s=(8, 8))),
    ("irfft middle", lambda a: np.fft.irfft(a, n=8, axis=1)),
    ("hfft", lambda a: np.fft.hfft(a, n=16)),
]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_several_axes_and_layouts_native_and_matching_the_interpreter(dtype):
    x = _data((4, 8, 16), dtype)
    f = tj.jit(lambda a: tuple(g(a) for _, g in MULTI), backend="llvm")
    ref = tj.jit(lambda a: tuple(g(a) for _, g in MULTI), backend="interpret")(x)
    _native(f, x)
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    for (label, g), got, want in zip(MULTI, f(x), ref):
        assert got.dtype == want.dtype and got.shape == want.shape, label
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1, np.abs(want).max()),
                                   err_msg=label)
        np.testing.assert_allclose(got, g(x), rtol=0, atol=tol * max(1, np.abs(want).max()),
                                   err_msg=label)


def test_batched_rows_and_empty_batches():
    x = _data((1000, 256), np.complex128)
    f = tj.jit(lambda a: (np.fft.fft(a), np.fft.rfft(a.real)), backend="llvm")
    _native(f, x)
    got = f(x)
    np.testing.assert_allclose(got[0], np.fft.fft(x), rtol=0, atol=1e-12 * 256)
    np.testing.assert_allclose(got[1], np.fft.rfft(x.real), rtol=0, atol=1e-12 * 256)
    e = np.zeros((0, 8), np.complex128)
    assert f(e)[0].shape == (0, 8) and f(e)[1].shape == (0, 5)


def _spectral(a):
    k = np.fft.rfft(a)
    return np.sum(np.fft.irfft(k * k, n=a.shape[-1]) ** 2)


def _complex_mix(z):
    return np.sum(np.abs(np.fft.ifft2(np.fft.fft(z, axis=0) * z)) ** 2)


@pytest.mark.parametrize("f, dtype", [(_spectral, np.float64), (_complex_mix, np.complex128)])
def test_derivatives_through_the_native_path(f, dtype):
    x = _data((4, 8), dtype, seed=3)
    g = tj.jit(tj.grad(f), backend="llvm")
    _native(g, x)
    want = tj.jit(tj.grad(f), backend="interpret")(x)
    np.testing.assert_allclose(g(x), want, rtol=1e-10, atol=1e-10)
    with using_backend("llvm"):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_long_smooth_lengths_fall_back_and_stay_correct():
    """Lengths > FFT_SMOOTH_NATIVE_MAX with prime factors <= 7 run NumPy (Bluestein is slower
    than pocketfft's radix passes there); a long length with a large prime factor is native."""
    smooth, rough = _data((2, 3 * 2 ** 12), np.complex128), _data((2, 2 * 4099), np.complex128)
    f = tj.jit(np.fft.fft, backend="llvm")
    assert not f.lower(smooth).executable.native
    _native(f, rough)
    for x in (smooth, rough):
        np.testing.assert_allclose(f(x), np.fft.fft(x), rtol=0, atol=1e-12 * x.shape[-1])
