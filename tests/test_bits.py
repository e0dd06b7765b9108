"""NumPy's float-bit functions on tracers (signbit, copysign, nextafter, spacing, frexp, ldexp,
x.view(dtype)) over the bitcast_convert primitive: bit for bit against NumPy on random data
mixed with the special values (signed zeros and NaNs, subnormals, infinities, the largest
finite values), float32 and float64, several shapes, both backends; integer operands, Python
scalars, vmap, and derivatives against finite differences (order 2, both modes)."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

rng = np.random.default_rng(1617)
SPECIAL64 = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1e-310, -3e-320,
             2.2250738585072014e-308, np.finfo(np.float64).max, -np.finfo(np.float64).max, 1.0,
             -1.0, 0.5]


def _data(dt, shape):
    """Random magnitudes over the whole exponent range, both signs, with the special values."""
    info = np.finfo(dt)
    e = rng.uniform(np.log2(info.smallest_subnormal), info.maxexp, shape)
    x = (np.sign(rng.normal(size=shape)) * 2.0 ** e).astype(dt)
    special = np.array(SPECIAL64, dtype=np.float64)
    with np.errstate(over="ignore"):
        special = special.astype(dt)
    flat = x.reshape(-1)
    k = min(flat.size, special.size)
    flat[:k] = special[:k]
    return x


def _bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    assert got.tobytes() == want.tobytes(), (got, want)


def _all(x, y, n):
    return (np.signbit(x), np.copysign(x, y), np.nextafter(x, y), np.spacing(x), *np.frexp(x),
            np.ldexp(x, n), np.ldexp(y, -n))


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: d.__name__)
def test_bit_exact_against_numpy(backend, dt):
    f = tj.trace(_all, backend=backend)
    for shape in [(), (40,), (3, 17)]:
        x, y = _data(dt, shape), _data(dt, shape)
        if shape:
            y.reshape(-1)[::3] = x.reshape(-1)[::3]          # equal pairs: nextafter gives y
        n = rng.integers(-2 * 1100, 2 * 1100, shape) if dt == np.float64 else \
            rng.integers(-300, 300, shape)
        with np.errstate(all="ignore"):
            want = _all(x, y, n)
        for g, w in zip(f(x, y, n), want):
            _bits_equal(g, w)
        # a NaN's sign bit and -0.0 through x.view(dtype) (the bit cast itself)
        it = np.int32 if dt == np.float32 else np.int64
        _bits_equal(tj.trace(lambda v: v.view(it), backend=backend)(x), x.view(it))
        _bits_equal(tj.trace(lambda v: v.view(dt), backend=backend)(x.view(it)), x)


@pytest.mark.parametrize("backend", ["llvm", "interpret"])
def test_mixed_operands(backend):
    """Integer operands promote as NumPy's loops (frexp/spacing of int32 arrays: float64),
    Python scalars stay weak (copysign of a float32 array and -1.0 is float32), bools."""
    ints = np.array([-3, 0, 7, 1 << 20], dtype=np.int32)
    f32 = np.array([1.5, -0.0, np.nan, 3e38], dtype=np.float32)
    cases = [lambda a, b: np.copysign(b, -1.0), lambda a, b: np.spacing(a),
             lambda a, b: np.frexp(a), lambda a, b: np.ldexp(b, a), lambda a, b: np.ldexp(a, 3),
             lambda a, b: np.signbit(a), lambda a, b: np.signbit(a > 0),
             lambda a, b: np.nextafter(b, 0.0), lambda a, b: np.ldexp(b, np.int64(-140))]
    for fn in cases:
        with np.errstate(all="ignore"):
            want = fn(ints, f32)
            got = tj.trace(fn, backend=backend)(ints, f32)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _bits_equal(g, w)


def test_vmap_and_refusals():
    x = _data(np.float64, (4, 5))
    m, e = tj.vmap(np.frexp)(x)
    _bits_equal(m, np.frexp(x)[0])
    _bits_equal(e, np.frexp(x)[1])
    with pytest.raises(TypeError, match="ldexp"):
        tj.trace(lambda v: np.ldexp(v, 1.5))(x)
    with pytest.raises(Exception, match="view"):
        tj.trace(lambda v: v.view(np.int32))(x)                # another width


def test_derivatives(interpret_backend):
    x = np.array([0.3, -1.7, 2.5, -40.0])
    for f in (lambda v: np.copysign(v, np.array([1.0, 1.0, -1.0, -0.0])),
              lambda v: np.ldexp(v, np.array([3, -2, 0, 5])), lambda v: np.frexp(v)[0],
              lambda v: np.nextafter(v, 5.0), lambda v: np.spacing(v) + v):
        check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    # the exponent and signbit: no derivative (integer and bool results)
    np.testing.assert_array_equal(tj.grad(lambda v: np.sum(np.frexp(v)[0] * 2.0 ** 3))(x),
                                  2.0 ** 3 * 2.0 ** -np.frexp(x)[1])
