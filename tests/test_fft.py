"""numpy.fft on tracers: every function against NumPy (odd, even and prime lengths, n/s padding
and truncation, every norm, float32/float64/complex64/complex128, both backends), derivatives
against finite differences (order 2, both modes), vmap against a Python loop, and errors.

Each (dtype, shape, backend) traces *one* function returning every case's result, so the whole
table costs one compile per signature."""
import warnings

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp
from tracejit.errors import DTypeError, ShapeError
from tracejit.ir import Type
from tracejit.ops import fft as ops
from tracejit.test_util import check_grads, using_backend

NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_INPUT = {"rfft", "ihfft", "rfft2", "rfftn"}        # NumPy refuses complex input to these


def _cases(ndim, length):
    """(label, numpy function, kwargs) for an input of rank ``ndim`` whose last axis has
    ``length`` points."""
    out = []
    for name in ONE_D:
        for norm in NORMS:
            out.append((name, dict(norm=norm)))
        out += [(name, dict(n=length - 2)), (name, dict(n=length + 3, norm="ortho")),
                (name, dict(n=1)), (name, dict(axis=0, norm="forward"))]
    out.append(("fftn", {}))
    out.append(("ifftn", dict(norm="ortho")))
    out.append(("rfftn", dict(norm="forward")))
    out.append(("irfftn", {}))
    if ndim >= 2:
        for name in ["fft2", "ifft2", "rfft2", "irfft2"]:
            for norm in NORMS:
                out.append((name, dict(norm=norm)))
            out.append((name, dict(s=(3, length + 1))))
            out.append((name, dict(s=(-1, 4), axes=(1, 0), norm="ortho")))
        for name in ["fftn", "ifftn", "rfftn", "irfftn"]:
            out.append((name, dict(axes=(0,))))
            out.append((name, dict(s=(2, 5), axes=(-1, 0), norm="forward")))
            out.append((name, dict(axes=(0, -1, 0), s=(3, 4, 6))))        # a repeated axis
    if ndim >= 3:
        out += [("fftn", dict(axes=(2, 0), norm="ortho")), ("rfftn", dict(axes=(0, 2, 1))),
                ("irfftn", dict(s=(4, 3, 7), axes=(1, 2, 0)))]
    for name in ["fftshift", "ifftshift"]:
        out += [(name, {}), (name, dict(axes=0)), (name, dict(axes=(-1,)))]
    return [(f"{name}({kw})", getattr(np.fft, name), kw) for name, kw in out]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64)) else 1e-12


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   np.int32])
@pytest.mark.parametrize("shape", [(13,), (3, 8), (2, 4, 7)])
def test_every_function_matches_numpy(shape, dtype, backend):
    cases = [c for c in _cases(len(shape), shape[-1])
             if not (np.dtype(dtype).kind == "c" and c[1].__name__ in REAL_INPUT)]
    x = _data(shape, dtype) if dtype is not np.int32 else \
        np.random.default_rng(0).integers(-9, 9, shape).astype(dtype)
    f = tj.jit(lambda a: tuple(fn(a, **kw) for _, fn, kw in cases), backend=backend)
    got = f(x)
    assert len(got) == len(cases)
    for (label, fn, kw), g in zip(cases, got):
        want = fn(x, **kw)
        assert g.dtype == want.dtype and g.shape == want.shape, (label, g.dtype, want.dtype,
                                                                 g.shape, want.shape)
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(g, want, rtol=0, atol=_tol(want.dtype) * scale,
                                   err_msg=label)


@pytest.mark.parametrize("name", sorted(REAL_INPUT))
def test_real_input_functions_refuse_complex_like_numpy(name):
    z = _data((2, 6), np.complex128)
    with pytest.raises(TypeError):
        getattr(np.fft, name)(z)
    with pytest.raises(TypeError, match="must be real"):
        tj.jit(getattr(np.fft, name), backend="interpret")(z)


def test_tracejit_numpy_fft_namespace_and_freqs():
    x = _data((5, 6), np.float64)
    for name in tnp.fft.__all__:
        assert callable(getattr(tnp.fft, name)), name
    np.testing.assert_array_equal(tnp.fft.rfft2(x), np.fft.rfft2(x))     # NumPy on arrays
    np.testing.assert_array_equal(tnp.fft.fftfreq(7, 0.5), np.fft.fftfreq(7, 0.5))
    np.testing.assert_array_equal(tnp.fft.rfftfreq(8), np.fft.rfftfreq(8))
    got = tj.jit(lambda a, d: tnp.fft.fft(a) * tnp.fft.fftfreq(6, d), backend="interpret")(x, 0.3)
    np.testing.assert_allclose(got, np.fft.fft(x) * np.fft.fftfreq(6, 0.3), rtol=1e-13)
    got = tj.jit(lambda d: np.fft.rfftfreq(9, d))(0.25)           # a traced spacing
    np.testing.assert_allclose(got, np.fft.rfftfreq(9, 0.25), rtol=1e-15)


def test_edge_forms():
    x = _data((3, 4), np.float64)
    f = tj.jit(lambda a: np.fft.fftn(a, axes=()), backend="interpret")
    np.testing.assert_array_equal(f(x), np.fft.fftn(x, axes=()))     # NumPy: the input itself
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = np.fft.fftn(x, s=(2, -1))                              # axes=None with s
        with pytest.warns(DeprecationWarning):
            got = tj.jit(lambda a: np.fft.fftn(a, s=(2, -1)), backend="interpret")(x)
    np.testing.assert_allclose(got, want, atol=1e-13)
    out = tj.jit(lambda a: _fft_into(a), backend="interpret")(x)
    np.testing.assert_allclose(out, np.fft.fft(x, n=4), atol=1e-13)


def _fft_into(a):
    o = np.zeros((3, 4), np.complex128)
    r = np.fft.fft(a, out=o)
    return o + 0 * r


# ---------------------------------------------------------------------------------------------
# derivatives

_rng = np.random.default_rng(3)
_X = _rng.standard_normal((3, 6))
_X5 = _rng.standard_normal((2, 5))
_Z = _X + 1j * _rng.standard_normal((3, 6))
_Z5 = _X5 + 1j * _rng.standard_normal((2, 5))
_X3 = _rng.standard_normal((2, 3, 4))

GRAD_CASES = {
    "fft_real_in": (lambda a: np.fft.fft(a, n=7), _X),
    "fft_ortho": (lambda a: np.fft.fft(a, n=4, norm="ortho"), _Z),
    "ifft_axis0_pad": (lambda a: np.fft.ifft(a, n=5, axis=0), _Z),
    "rfft_even": (lambda a: np.fft.rfft(a, norm="forward"), _X),
    "rfft_odd": (lambda a: np.fft.rfft(a), _X5),
    "irfft_even": (lambda a: np.fft.irfft(a), _Z),
    "irfft_odd": (lambda a: np.fft.irfft(a, n=9, norm="ortho"), _Z5),
    "hfft": (lambda a: np.fft.hfft(a, norm="ortho"), _Z),
    "ihfft": (lambda a: np.fft.ihfft(a, n=6), _X5),
    "fft2": (lambda a: np.fft.fft2(a, s=(2, 7)), _Z),
    "ifftn_repeated_axis": (lambda a: np.fft.ifftn(a, axes=(1, 0, 1)), _Z5),
    "rfftn_3d": (lambda a: np.fft.rfftn(a, axes=(2, 0, 1)), _X3),
    "rfft2": (lambda a: np.fft.rfft2(a), _X),
    "irfft2": (lambda a: np.fft.irfft2(a, s=(3, 5)), _Z),
    "irfftn_odd": (lambda a: np.fft.irfftn(a, norm="forward"), _Z5),
    "ifft2_real_in": (lambda a: np.fft.ifft2(a, norm="forward"), _X),
    "fftn_complex": (lambda a: np.fft.fftn(a, s=(4, 3), axes=(1, 0)), _Z),
    "hfft_real_in": (lambda a: np.fft.hfft(a, n=7), _X5),
    "irfft_real_in": (lambda a: np.fft.irfft(a, axis=0), _X),
    "fftshift": (lambda a: np.fft.fftshift(np.fft.fft(a)), _X5),
    "ifftshift": (lambda a: np.fft.ifftshift(a, axes=0) * 2.0, _Z),
    # real-valued losses of complex intermediates
    "power_fft": (lambda a: np.sum(np.abs(np.fft.fft(a)) ** 2), _X),
    "power_rfft": (lambda a: np.sum(np.abs(np.fft.rfft(a, axis=0)) ** 3), _X),
    "power_complex": (lambda a: np.sum(np.abs(np.fft.ifft2(a, norm="ortho")) ** 2), _Z),
    "roundtrip_sin": (lambda a: np.sin(np.fft.irfft(np.fft.rfft(a) * 0.5, n=6)), _X),
    "convolution": (lambda a: np.fft.irfft(np.fft.rfft(a) ** 2, n=5), _X5),
}


LLVM_GRADS = {"irfft_odd", "rfftn_3d", "power_complex", "convolution"}


@pytest.mark.parametrize("name,backend", [(n, "interpret") for n in sorted(GRAD_CASES)] +
                         [(n, "llvm") for n in sorted(LLVM_GRADS)])
def test_check_grads(name, backend):
    f, x = GRAD_CASES[name]
    with using_backend(backend):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_check_grads_single_precision():
    with using_backend("interpret"):
        check_grads(lambda a: np.fft.irfft(np.fft.fft(a)[..., :4], n=6),
                    (_X.astype(np.float32),), order=2)
        check_grads(lambda a: np.fft.rfft2(a.real) * a[:, :4], (_Z.astype(np.complex64),),
                    order=1)


def test_complex_convention_parseval():
    """sum |fft(z)|^2 = n sum |z|^2, whose gradient in the project's (JAX's) convention is
    2 n conj(z), as grad(|z|^2) = 2 conj(z)."""
    g = tj.grad(lambda a: np.sum(np.abs(np.fft.fft(a)) ** 2))(_Z)
    np.testing.assert_allclose(g, 2 * 6 * np.conj(_Z), rtol=1e-12)
    g = tj.grad(lambda a: np.sum(np.abs(np.fft.fft(a, norm="ortho")) ** 2))(_X)
    np.testing.assert_allclose(g, 2 * _X, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# vmap

VMAP_CASES = [
    (lambda a: np.fft.fft(a, n=5), _Z),
    (lambda a: np.fft.rfftn(a, s=(2, 5), axes=(0, 1)), _X3),
    (lambda a: np.fft.irfft2(a, s=(2, 3), axes=(1, 0)), _X3.astype(np.complex128)),
    (lambda a: np.fft.fftshift(np.fft.ihfft(a)), _X3),
]


@pytest.mark.parametrize("k", range(len(VMAP_CASES)))
@pytest.mark.parametrize("in_axis", [0, 1])
def test_vmap_matches_loop(k, in_axis):
    f, x = VMAP_CASES[k]
    want = np.stack([f(np.take(x, i, axis=in_axis)) for i in range(x.shape[in_axis])])
    got = tj.vmap(f, in_axes=in_axis)(x)
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("n", [5, 6])
def test_hessian_matches_explicit_dft_matrix(n):
    """jacfwd(jacrev(.)) (a batched jvp of the transposed rfft) against the same loss written
    with the DFT matrix (only matmul rules involved)."""
    k = np.arange(n)
    W = np.exp(-2j * np.pi * np.outer(k, k[: n // 2 + 1]) / n)
    x = _rng.standard_normal(n)
    h_fft = tj.jacfwd(tj.jacrev(lambda a: np.sum(np.abs(np.fft.rfft(a)) ** 2 * k[: n // 2 + 1])))
    h_mat = tj.jacfwd(tj.jacrev(lambda a: np.sum(np.abs(a @ W) ** 2 * k[: n // 2 + 1])))
    np.testing.assert_allclose(h_fft(x), h_mat(x), atol=1e-11)


# ---------------------------------------------------------------------------------------------
# errors

def _raises(exc, match, fn, *args):
    with pytest.raises(exc, match=match):
        tj.jit(fn, backend="interpret")(*args)


def test_errors_name_the_function_and_the_problem():
    x = _data((3, 4), np.float64)
    _raises(np.exceptions.AxisError, r"fft\.fft: axis 2 is out of bounds", lambda a:
            np.fft.fft(a, axis=2), x)
    _raises(IndexError, r"fft\.fftn: axis -3", lambda a: np.fft.fftn(a, axes=(0, -3)), x)
    _raises(IndexError, r"fft\.fft2: axis -2 .* dimension 1", lambda a: np.fft.fft2(a), x[0])
    _raises(IndexError, "0-d", lambda a: np.fft.fft(a), 2.0)
    _raises(ValueError, r"rfft: Invalid number of FFT data points \(0\)",
            lambda a: np.fft.rfft(a, n=0), x)
    _raises(ValueError, r"irfft: Invalid number of FFT data points \(0\)",
            lambda a: np.fft.irfft(a[:, :1]), x)
    _raises(ValueError, r"fftn: Invalid number of FFT data points \(-2\)",
            lambda a: np.fft.fftn(a, s=(2, -2), axes=(0, 1)), x)
    _raises(ValueError, "Invalid norm value 'ORTHO'|Invalid norm value ORTHO",
            lambda a: np.fft.ifft(a, norm="ORTHO"), x)
    _raises(ValueError, "Shape and axes have different lengths",
            lambda a: np.fft.rfftn(a, s=(2, 2, 2), axes=(0, 1)), x)
    _raises(IndexError, "at least one axis", lambda a: np.fft.irfftn(a, axes=()), x)
    _raises(TypeError, "integer", lambda a: np.fft.fft(a, n=2.5), x)
    _raises(ValueError, "wrong shape", lambda a: np.fft.fft(a, out=np.zeros((3, 5)) + a[0, 0]),
            x)


def test_primitive_shape_rules():
    with pytest.raises(DTypeError, match="fft: the operand must be complex"):
        ops.fft_p.abstract_eval([Type(np.dtype(np.float64), (4,))], axes=(0,),
                                inverse=False)
    with pytest.raises(DTypeError, match="rfft: the operand must be float"):
        ops.rfft_p.abstract_eval([Type(np.dtype(np.complex64), (4,))], axes=(0,))
    with pytest.raises(ShapeError, match="needs 3 input bins"):
        ops.irfft_p.abstract_eval([Type(np.dtype(np.complex128), (4,))], axes=(0,), n=5)
    with pytest.raises(ShapeError, match="distinct axes"):
        ops.fft_p.abstract_eval([Type(np.dtype(np.complex128), (4, 2))], axes=(0, 0),
                                inverse=False)
    with pytest.raises(ShapeError, match="length 0"):
        ops.rfft_p.abstract_eval([Type(np.dtype(np.float64), (0, 2))], axes=(0,))
    t = ops.irfft_p.abstract_eval([Type(np.dtype(np.complex64), (2, 4))], axes=(0, 1),
                                  n=7)[0]
    assert t.shape == (2, 7) and t.dtype == np.float32


def test_random_signatures_match_numpy():
    """Seeded random ranks, lengths (1 included), axes (negative, repeated), s (padding,
    truncation, -1) and norms for every n-d function, on the interpreter: NumPy's values, or
    NumPy's exception type."""
    rng = np.random.default_rng(7)
    names = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"] + ONE_D
    for trial in range(120):
        name = names[trial % len(names)]
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 8, ndim))
        dtype = [np.float32, np.float64, np.complex64, np.complex128][int(rng.integers(4))]
        if name in REAL_INPUT and np.dtype(dtype).kind == "c":
            dtype = np.float64
        kw = dict(norm=NORMS[int(rng.integers(4))])
        if name in ONE_D:
            kw["axis"] = int(rng.integers(-ndim, ndim))
            if rng.random() < 0.5:
                kw["n"] = int(rng.integers(1, 10))
        else:
            k = int(rng.integers(1, ndim + 2))
            kw["axes"] = tuple(int(a) for a in rng.integers(-ndim, ndim, k))
            if rng.random() < 0.6:
                kw["s"] = tuple(int(v) for v in rng.choice([-1, 1, 2, 3, 5, 8], k))
        x = _data(shape, dtype, seed=trial)
        fn = getattr(np.fft, name)
        try:
            want = fn(x, **kw)
        except (ValueError, IndexError, TypeError) as e:
            with pytest.raises(type(e)):
                tj.jit(lambda a: fn(a, **kw), backend="interpret")(x)
            continue
        got = tj.jit(lambda a: fn(a, **kw), backend="interpret")(x)
        label = f"{name}{shape} {np.dtype(dtype)} {kw}"
        assert got.dtype == want.dtype and got.shape == want.shape, label
        np.testing.assert_allclose(got, want, rtol=0, err_msg=label,
                                   atol=_tol(want.dtype) * max(1.0, float(np.abs(want).max())))


def test_loops_with_transforms_both_backends():
    """A spectral heat step in fori_loop (compiled loop with the transforms inside), its
    gradient at order 2, and vmap of the loop."""
    k = np.fft.rfftfreq(16)
    x = _rng.standard_normal(16)

    def heat(u):
        def body(i, u):
            return np.fft.irfft(np.fft.rfft(u) * np.exp(-k ** 2), n=16) + 0.01 * np.sin(u)
        return tj.fori_loop(0, 4, body, u)

    want = x
    for _ in range(4):
        want = np.fft.irfft(np.fft.rfft(want) * np.exp(-k ** 2), n=16) + 0.01 * np.sin(want)
    for backend in ("interpret", "llvm"):
        with using_backend(backend):
            np.testing.assert_allclose(tj.jit(heat)(x), want, atol=1e-13)
            check_grads(lambda u: np.sum(heat(u) ** 2), (x,), order=2)
            got = tj.jit(tj.vmap(heat))(np.stack([x, x]))
            np.testing.assert_allclose(got, np.stack([want, want]), atol=1e-13)
