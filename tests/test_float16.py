"""float16 as a storage type, bit for bit against NumPy on both backends.

NumPy computes a float16 ufunc in float32 and rounds each result to float16; the llvm backend
does the same per operation (backend/plan/half.py) in native, vectorised loops. Exhaustive over
all 65536 float16 values for the unary functions, random pairs (special values included) for
the binary ones, conversions from every dtype (float64 values next to float16 rounding
boundaries included), promotion, reductions, random programs, the Python call paths, and
derivatives (llvm against the interpreter bit for bit, and against the float64 derivative to
float16 accuracy: finite differences in float16 would measure nothing).

The only differences from NumPy: on llvm, transcendentals (float32 functions rounded to
float16, as NumPy's) differ where our float32 library and NumPy's differ by an ulp next to a
float16 rounding boundary; the counts are pinned below (at most 1 float16 ulp each).
"""
import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit import dtypes

BACKENDS = ["llvm", "interpret"]
H = np.float16
ALL = np.arange(65536, dtype=np.uint16).view(H)       # every float16, NaNs and infinities too
rng = np.random.default_rng(16)
A, B = rng.choice(ALL, 30000), rng.choice(ALL, 30000)

EXACT_UNARY = ["sqrt", "floor", "ceil", "rint", "trunc", "absolute", "negative", "positive",
               "sign", "square", "reciprocal", "isnan", "isinf", "isfinite", "signbit",
               "spacing", "deg2rad", "rad2deg", "fabs"]
# llvm: float16 results differing from NumPy's (of 65536), from float32 library differences
TRANSCENDENTAL = {"exp": 0, "exp2": 0, "expm1": 0, "log": 0, "log2": 0, "log10": 0,
                  "log1p": 0, "sin": 2, "cos": 0, "tan": 0, "sinh": 2, "cosh": 0, "tanh": 0,
                  "arcsin": 2, "arccos": 0, "arctan": 4, "arcsinh": 4, "arccosh": 0,
                  "arctanh": 0, "cbrt": 20}
EXACT_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder",
                "maximum", "minimum", "fmax", "fmin", "copysign", "nextafter", "less",
                "less_equal", "equal", "not_equal", "greater", "heaviside"]
# (llvm, interpret) differences of 30000 random pairs: float32 functions, or for logaddexp(2)
# composites of them (NumPy's loop is one float32 function), rounded to float16
BINARY_MATH = {"power": (0, 0), "arctan2": (6, 0), "hypot": (1, 0), "logaddexp": (2, 2),
               "logaddexp2": (2, 2)}


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def _differ(got, want):
    """Elements whose bits differ (any NaN equals any NaN); dtypes and shapes must agree."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                got.shape, want.shape)
    if want.dtype.kind == "c":
        return _differ(got.real, want.real) | _differ(got.imag, want.imag)
    if want.dtype.kind != "f":
        return got != want
    nan = np.isnan(want) & np.isnan(got)
    return ~nan & (got.view(f"u{want.itemsize}") != want.view(f"u{want.itemsize}"))


def _ulps(got, want):
    """Distance in float16 steps (both finite, same sign)."""
    g, w = got.view(np.int16).astype(np.int32), want.view(np.int16).astype(np.int32)
    return np.abs(g - w)


def _run(fn, backend, *args):
    return tj.jit(fn, backend=backend)(*args)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_unary_exhaustive(backend):
    names = EXACT_UNARY + ["frexp"]
    fns = [getattr(np, n) for n in names]
    got = _run(lambda x: tuple(f(x) for f in fns), backend, ALL)
    for name, fn, g in zip(names, fns, got):
        want = _numpy(fn, ALL)
        for k, (gp, wp) in enumerate(zip(g, want) if name == "frexp" else [(g, want)]):
            bad = _differ(gp, wp)
            assert not bad.any(), (name, k, ALL[bad][:5], gp[bad][:5], wp[bad][:5])


@pytest.mark.parametrize("backend", BACKENDS)
def test_transcendentals_exhaustive(backend):
    names = list(TRANSCENDENTAL)
    fns = [getattr(np, n) for n in names]
    got = _run(lambda x: tuple(f(x) for f in fns), backend, ALL)
    for name, fn, g in zip(names, fns, got):
        want = _numpy(fn, ALL)
        bad = _differ(g, want)
        assert bad.sum() <= (TRANSCENDENTAL[name] if backend == "llvm" else 0), \
            (name, bad.sum(), ALL[bad][:5], g[bad][:5], want[bad][:5])
        assert (_ulps(g[bad], want[bad]) <= 1).all(), name


@pytest.mark.parametrize("backend", BACKENDS)
def test_binary_random_pairs(backend):
    names = EXACT_BINARY + list(BINARY_MATH)
    fns = [getattr(np, n) for n in names]
    got = _run(lambda x, y: tuple(f(x, y) for f in fns), backend, A, B)
    for name, fn, g in zip(names, fns, got):
        want = _numpy(fn, A, B)
        bad = _differ(g, want)
        allowed = BINARY_MATH.get(name, (0, 0))[BACKENDS.index(backend)]
        assert bad.sum() <= allowed, (name, bad.sum(), A[bad][:4], B[bad][:4], g[bad][:4],
                                      want[bad][:4])
        if bad.any():
            assert (_ulps(g[bad], want[bad]) <= 1).all(), name


def _near_boundaries(n):
    """float64 values at, just below and just above float16 rounding midpoints (ties to even,
    the double-rounding traps), over the whole float16 range and beyond it."""
    h = rng.choice(ALL[np.isfinite(ALL)], n).astype(np.float64)
    step = np.spacing(np.abs(h).astype(H)).astype(np.float64)
    mid = h + step / 2
    tiny = np.abs(mid) * 2.0 ** -40
    wide = rng.standard_normal(n) * 2.0 ** rng.uniform(-30, 20, n)
    return np.concatenate([mid, mid - tiny, mid + tiny, wide, [65519.99, 65520.0, np.inf,
                                                               -np.inf, np.nan, -0.0]])


@pytest.mark.parametrize("backend", BACKENDS)
def test_conversions(backend):
    d = _near_boundaries(3000)
    for src in (np.float64, np.float32):
        x = d.astype(src)
        assert not _differ(_run(lambda v: v.astype(H), backend, x), _numpy(
            lambda v: v.astype(H), x)).any(), src
    for it in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint64):
        info = np.iinfo(it)
        x = rng.integers(max(info.min, -2 ** 20), min(info.max, 2 ** 20), 5000).astype(it)
        assert not _differ(_run(lambda v: v.astype(H), backend, x), x.astype(H)).any(), it
        # float16 -> int within the target's range (outside it NumPy is platform-defined)
        fin = ALL[np.isfinite(ALL) & (ALL > info.min) & (ALL < min(info.max, 65504))]
        assert not _differ(_run(lambda v: v.astype(it), backend, fin), fin.astype(it)).any()
    for dst in (np.float32, np.float64, np.bool_, np.complex64):
        assert not _differ(_run(lambda v: v.astype(dst), backend, ALL), ALL.astype(dst)).any()


def test_promotion_is_numpys():
    for other in dtypes.SUPPORTED:
        for a, b in ((H, other), (other, H)):
            assert dtypes.promote((np.dtype(a), False), (np.dtype(b), False)) == \
                (np.result_type(a, b), False), (a, b)
    for scalar in (True, 1, 2.5, 1j):
        assert dtypes.promote((np.dtype(H), False), (dtypes.WEAK_DEFAULT[type(scalar)], True))[0] \
            == np.result_type(np.ones(1, H), scalar)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_dtypes_and_scalars(backend):
    x = A[:64].reshape(8, 8)
    cases = [
        lambda a: a + np.arange(8, dtype=np.int8),          # float16
        lambda a: a * np.arange(8, dtype=np.int16),         # float32
        lambda a: a - np.ones(8, np.float32),
        lambda a: a / 3 + 2.5 * a - True,
        lambda a: np.sin(np.arange(8, dtype=np.uint8)) + a,  # NumPy's sin of uint8: float16
        lambda a: np.exp(a > 0),                              # of bool: float16
        lambda a: np.where(a > 1, a, np.float16(0.1)),
        lambda a: np.clip(a, -2, 2) ** 2 + np.abs(a) ** 3,
        lambda a: (a * 1j).imag,
        lambda a: np.round(a, 1),
    ]
    for k, fn in enumerate(cases):
        assert not _differ(_run(fn, backend, x), _numpy(fn, x)).any(), k


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions(backend):
    x = (rng.standard_normal((37, 300)) * 4).astype(H)
    cases = {
        "sum": np.sum, "sum0": lambda a: a.sum(0), "sum1": lambda a: a.sum(1),
        "mean": np.mean, "mean0": lambda a: a.mean(0), "mean1k": lambda a: a.mean(1, keepdims=1),
        "var": np.var, "std1": lambda a: a.std(1), "max": lambda a: a.max(1),
        "min0": lambda a: a.min(0), "prod": lambda a: a[:, :4].prod(1),
        "cumsum": lambda a: np.cumsum(a, 1), "argmax": lambda a: a.argmax(1),
        "matmul": lambda a: a[:8] @ a[:8].T, "sort": lambda a: np.sort(a, 1),
        "norm": lambda a: np.linalg.norm(a, axis=1),
    }
    got = _run(lambda a: tuple(f(a) for f in cases.values()), backend, x)
    for (name, fn), g in zip(cases.items(), got):
        assert not _differ(g, _numpy(fn, x)).any(), name


def _random_program(seed):
    """A random chain of exactly rounded float16 operations on two arrays and an int8 array."""
    r = np.random.default_rng(seed)
    steps = [(r.integers(0, 12), r.integers(0, 3), r.integers(0, 3)) for _ in range(10)]

    def f(a, b, i8):
        vals = [a, b, a * i8]
        for op, j, k in steps:
            x, y = vals[j % len(vals)], vals[k % len(vals)]
            v = [x + y, x - y, x * y, x / (np.abs(y) + 1), np.sqrt(np.abs(x)), np.maximum(x, y),
                 np.where(x > y, x, -y), np.floor(x) + 0.5, x * 0.1 + y, np.minimum(x, 3) ** 2,
                 x.astype(np.float32) * y, np.abs(x - y).astype(np.float16)][op]
            vals.append(v.astype(H) if v.dtype != H else v)
        return vals[-1], vals[-3]
    return f


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_programs(backend):
    a, b = (rng.standard_normal((3, 50)) * 3).astype(H), (rng.standard_normal(50) * 3).astype(H)
    i8 = rng.integers(-5, 5, 50).astype(np.int8)
    for seed in range(12):
        f = _random_program(seed)
        for g, w in zip(_run(f, backend, a, b, i8), _numpy(f, a, b, i8)):
            assert not _differ(g, w).any(), seed


def test_native_and_vectorised():
    """An elementwise float16 chain is one native vector loop (no NumPy step), loading and
    storing float16 and converting in registers."""
    x = A[:256].copy()
    f = tj.jit(lambda a, b: np.sqrt(np.abs(a * b + 1)) - a)
    plan = str(f.ir(x, x, stage="fused"))
    assert "one native kernel" in plan and "vl=8" in plan, plan
    asm = f.inspect_asm(x, x)
    if "vcvtph2ps" not in asm:
        pytest.skip("the host CPU has no F16C: LLVM converts float16 with integer code")
    assert "vcvtps2ph" in asm


@pytest.mark.parametrize("backend", BACKENDS)
def test_call_paths(backend):
    """NumPy float16 scalars, 0-d arrays, Python scalars; in-place writes into float16."""
    f = tj.jit(lambda a, b: a * b + 1, backend=backend)
    for args in [(H(1.5), H(2.25)), (np.array(1.5, H), 2.0), (H(1.5), 3), (A[:5], H(0.1)),
                 (H(0.1), 0.1)]:
        for _ in range(3):                                      # the native entry too
            assert not _differ(f(*args), _numpy(lambda p, q: p * q + 1, *args)).any(), args

    def g(x):
        x[0] += 1.5
        x[1:] *= H(3)
        return x.max()
    x = np.arange(5, dtype=H)
    y = x.copy()
    gj = tj.jit(g, backend=backend)
    for _ in range(2):
        assert not _differ(gj(x), g(y)).any()
        assert not _differ(x, y).any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivatives(backend):
    def f(a):
        return np.sum(np.tanh(a) * a + np.exp(-a * a) / (1 + a * a))
    x = (rng.standard_normal(64)).astype(H)
    g = tj.jit(tj.grad(f), backend=backend)(x)
    assert g.dtype == H
    assert not _differ(g, tj.jit(tj.grad(f), backend="interpret")(x)).any()
    # against the float64 derivative at the same points: float16 rounding of a few terms
    g64 = tj.grad(f)(x.astype(np.float64))
    assert np.all(np.abs(g - g64) <= 8 * np.finfo(H).eps * (1 + np.abs(g64))), (g, g64)
    h = tj.jit(tj.hessian(lambda a: np.sum(np.sin(a) ** 3)), backend=backend)(x[:4])
    h64 = tj.hessian(lambda a: np.sum(np.sin(a) ** 3))(x[:4].astype(np.float64))
    assert h.dtype == H and np.allclose(h, h64, atol=8e-3, rtol=8e-3)
    v = tj.jit(tj.vmap(lambda a: a * np.cos(a)), backend=backend)(A[:60].reshape(6, 10))
    assert not _differ(v, _numpy(lambda a: a * np.cos(a), A[:60].reshape(6, 10))).any()


def test_bfloat16_is_refused_with_what_to_do():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays need ml_dtypes, "
                                                        "which tracejit does not depend on")
    x = np.ones(3, dtype=ml_dtypes.bfloat16)
    with pytest.raises(tj.InputError, match="bfloat16.*float32"):
        tj.jit(lambda a: a * 2)(x)
    with pytest.raises(tj.DTypeError, match="bfloat16.*float32"):
        tj.jit(lambda a: a.astype(ml_dtypes.bfloat16))(np.ones(3, np.float32))
