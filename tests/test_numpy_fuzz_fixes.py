"""Regressions from the differential fuzzer in the NumPy layer, each against plain NumPy on both
backends (and under grad/vmap where that is where the bug lived), and a sweep of every ufunc
tracejit.numpy provides over every dtype pair.

The sweep (``test_ufunc_sweep_*``): operands are bool/int32/int64/float32/float64/complex64/
complex128 arrays (1-d with NaN, infinities and signed zeros, and 0-d) and Python bool/int/float/
complex scalars, passed as arguments (weakly typed tracers) or closed over (literals). Results
must have NumPy's dtype and shape and its values (exact for bools and ints, a few ulps for
floats, NaN in the same real/imaginary positions); where NumPy raises, tracejit must raise a
TracerError or NumPy's exception type. Known, documented differences are listed in ``KNOWN``
with the reason; each has its own test below.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import tracejit as tj
import tracejit.numpy as tnp

BACKENDS = ("interpret", "llvm")
nan, inf = np.nan, np.inf


def _quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def _run(f, backend, *args):
    return _quiet(tj.jit(f, backend=backend), *args)


def _parts(x):
    x = np.asarray(x)
    return (x.real, x.imag) if x.dtype.kind == "c" else (x,)


def assert_numpy(got, expected, rtol=0.0, what=""):
    """dtype, shape and values of NumPy's result (NaNs per real/imaginary part; ``rtol`` 0:
    bit-exact up to the sign of zero)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, NumPy {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, NumPy {expected.shape}"
    if expected.dtype.kind in "bi":
        assert np.array_equal(got, expected), f"{what}: {got} != NumPy {expected}"
        return
    for g, e in zip(_parts(got), _parts(expected)):
        assert np.array_equal(np.isnan(g), np.isnan(e)), f"{what}: NaNs {got} vs NumPy {expected}"
        m = ~np.isnan(e)
        assert np.array_equal(np.isinf(g[m]), np.isinf(e[m])), f"{what}: {got} vs {expected}"
        assert np.allclose(g[m], e[m], rtol=rtol, atol=0), f"{what}: {got} != NumPy {expected}"


# ---------------------------------------------------------------------------------------------
# 1. maximum/minimum/fmax/fmin of complex operands mixed with Python scalars (isnan of a literal
#    raised TypeError); NumPy's lexicographic order and NaN rules, fmax of two NaNs is x1

Z = np.array([0.6 - 0.47j, complex(nan, 1), complex(1, nan), 1 + 1j, 2 + 0j, complex(nan, nan),
              1 + 2j, complex(0.6, -0.5), -3 + 0j, complex(-3, 1)])
Z2 = np.array([complex(1, nan), complex(nan, 1), complex(nan, 0), 2 - 1j, 0j, 1 + 2j, 1 + 2j,
               complex(0.6, -0.47), -3 + 0j, complex(-3, -1)])
EXTREMES = ("maximum", "minimum", "fmax", "fmin")
SCALARS = (0.60 - 0.47j, -3, 2.5, True, complex(nan, 0), np.float32(0.6), np.complex64(1 + 2j))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", EXTREMES)
def test_complex_extremes_with_scalars(name, backend):
    fn = getattr(np, name)
    for s in SCALARS:
        for z in (Z, Z.astype(np.complex64), Z[3], np.asarray(Z[1])):
            for f in (lambda a: fn(s, a), lambda a: fn(a, s)):       # s closed over: a literal
                assert_numpy(_run(f, backend, z), _quiet(f, z), what=f"{name} {s!r} {z!r}")
            if isinstance(s, (int, float, complex)):                  # s an argument: weak tracer
                got = _run(lambda a, b: fn(b, a), backend, z, s)
                assert_numpy(got, _quiet(fn, s, z), what=f"{name}({s!r}, z)")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", EXTREMES)
def test_complex_extremes_nan_rules(name, backend):
    fn = getattr(np, name)
    for a, b in ((Z, Z2), (Z2, Z), (Z, Z2.real), (Z.real, Z2), (Z.astype(np.complex64), Z2)):
        assert_numpy(_run(fn, backend, a, b), _quiet(fn, a, b), what=f"{name}")
    # NumPy's fmax/fmin of two NaNs returns the first operand
    a, b = np.array([complex(nan, 1)]), np.array([complex(1, nan)])
    got = _run(fn, backend, a, b)
    assert np.array_equal(np.isnan(got.real), np.isnan(_quiet(fn, a, b).real))


@pytest.mark.parametrize("backend", BACKENDS)
def test_extremes_of_complex_under_grad(backend):
    x = np.array([0.3, 0.7, -1.2, 0.9])
    w = np.array([1.0, -2.0, 0.5, 3.0])

    def f(x):
        z = x + 0.2j
        return np.sum(w * np.abs(np.fmax((0.60 - 0.47j), z)) ** 2 +
                      np.real(np.minimum(0.5, z)) ** 2 + np.imag(np.maximum(-3, z * 1j)))

    def fd(x, h=1e-6):
        return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])

    g = tj.jit(tj.grad(f), backend=backend)(x)
    np.testing.assert_allclose(g, fd(x), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# 2. vmap keeps Python scalars weakly typed (in_axes None); also through grad and jvp

@pytest.mark.parametrize("scalar", [3, 2.5, True, 1 - 2j])
def test_vmap_keeps_python_scalars_weak(scalar):
    a2 = np.ones((3, 1), np.float32)
    fns = [lambda a1, a2: np.minimum(a2, a1), lambda a1, a2: a2 * a1, lambda a1, a2: a1 + a2]
    for f in fns:
        if isinstance(scalar, complex) and f is fns[0]:
            continue
        got = tj.vmap(f, in_axes=(None, 0))(scalar, a2)
        expected = np.stack([f(scalar, row) for row in a2])
        assert_numpy(got, expected, rtol=1e-6, what=f"vmap {scalar!r}")
        assert tj.jit(f)(scalar, a2[0]).dtype == expected.dtype      # the unbatched function


def test_vmap_of_grad_and_jvp_keep_python_scalars_weak():
    x = np.array([[1.0, 5.0], [2.0, -1.0], [4.0, 3.5]], np.float32)

    def loss(x, a):
        return np.sum(np.minimum(x, a) * a)

    g = tj.vmap(tj.grad(loss), in_axes=(0, None))(x, 3)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.where(x < 3, 3.0, 0.0))
    t = tj.vmap(lambda x, a: tj.jvp(lambda x: x * a, (x,), (x,))[1], in_axes=(0, None))(x, 2.0)
    assert t.dtype == np.float32
    np.testing.assert_allclose(t, 2 * x)
    h = tj.vmap(lambda a, x: np.minimum(x, a), in_axes=(None, 0))
    assert tj.vmap(h, in_axes=(None, 0))(1, x[None]).dtype == np.float32   # nested


# ---------------------------------------------------------------------------------------------
# 3. reductions of bool and int arrays: NumPy's dtypes (var/std compute in float64)

REDUCTIONS = {
    "mean": np.mean, "var": np.var, "std": np.std, "average": np.average, "cumsum": np.cumsum,
    "prod": np.prod, "sum": np.sum, "cumprod": np.cumprod, "ptp_int": np.ptp,
    "var_ddof": lambda a: np.var(a, axis=0, ddof=1), "std_keep": lambda a: np.std(a, axis=1,
                                                                                   keepdims=True),
    "var_f32": lambda a: np.var(a, dtype=np.float32), "std_f32": lambda a: np.std(a, axis=0,
                                                                                  dtype=np.float32),
    "mean_f32": lambda a: np.mean(a, dtype=np.float32), "method_var": lambda a: a.var(),
    "average_w": lambda a: np.average(a, axis=0, weights=np.array([1.0, 3.0])),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
def test_reductions_of_bool_and_int(name, dtype, backend):
    if name == "ptp_int" and dtype == "bool":
        pytest.skip("NumPy raises for ptp of bools (tested below)")
    x = np.array([[True, False, True], [False, False, True]]).astype(dtype)
    if dtype != "bool":
        x = x * np.array([[3, -7, 2]], dtype)
    f = REDUCTIONS[name]
    assert_numpy(_run(f, backend, x), _quiet(f, x), rtol=1e-6, what=name)
    assert_numpy(_run(f, backend, x[0]), _quiet(f, x[0]), rtol=1e-6, what=name) \
        if name not in ("std_keep", "average_w") else None


def test_ptp_of_bool_raises_like_numpy():
    x = np.array([True, False])
    with pytest.raises(TypeError):
        np.ptp(x)
    with pytest.raises(TypeError):
        tj.jit(np.ptp, backend="interpret")(x)


def test_var_of_bool_under_vmap_and_grad():
    b = np.array([[True, False, True], [False, False, True]])
    assert_numpy(tj.vmap(np.var)(b), np.array([np.var(r) for r in b]), rtol=1e-12)
    x = np.array([1.0, -2.0, 3.0])
    g = tj.grad(lambda x: np.sum(x * np.std(x > 0)))(x)
    np.testing.assert_allclose(g, np.full(3, np.std(x > 0)))


# ---------------------------------------------------------------------------------------------
# 4. astype(bool) of complex is x != 0; complex -> real/int stays a clear error

ZB = np.array([0j, 1j, 2 + 0j, complex(nan, 0), complex(-0.0, 0), complex(0, -0.0), 3.7 - 2j])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_to_bool_conversion(dtype, backend):
    z = ZB.astype(dtype)
    truth = z != 0
    set0 = truth.copy()
    set0[0] = True
    for f, expected in ((lambda a: tnp.array(a, dtype=bool), truth),
                        (lambda a: tnp.asarray(a[1], dtype=np.bool_), truth[1]),
                        (lambda a: tnp.array(a, dtype=bool).at[0].set(True), set0)):
        assert_numpy(_run(f, backend, z), expected)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_astype_bool(dtype):
    z = ZB.astype(dtype)
    for backend in BACKENDS:
        for f in (lambda a: a.astype(bool), lambda a: a[1].astype(np.bool_)):
            assert_numpy(_run(f, backend, z), f(z))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_complex_astype_real_is_a_clear_error(dtype):
    with pytest.raises(TypeError, match="imaginary"):
        tj.jit(lambda a: a.astype(dtype), backend="interpret")(ZB)


# ---------------------------------------------------------------------------------------------
# 5. isnan/isinf/isfinite of ints and bools (and *_like of a tracer) are traced values

PREDICATES = ("isnan", "isinf", "isfinite", "iscomplex", "isreal")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", PREDICATES)
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float64", "complex128"])
def test_predicates_are_traced(name, dtype, backend):
    fn = getattr(np, name)
    x = np.array([1, 0, 3, 2]).astype(dtype)
    assert_numpy(_run(fn, backend, x), fn(x), what=name)
    assert_numpy(_run(fn, backend, x[0]), fn(x[0]), what=name)

    def update(a):
        return fn(a).at[1].set(True)

    def write(a):
        m = fn(a)
        m[2] = a[0] > 0
        return m

    for f in (update, write):
        expected = fn(x).copy()
        expected[1 if f is update else 2] = True
        assert_numpy(_run(f, backend, x), expected, what=f"{name} {f.__name__}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_like_functions_of_a_tracer_are_traced(backend):
    x = np.array([4, 5, 6])

    def f(a):
        z = np.zeros_like(a)
        z[0] = a[2]
        o = np.ones_like(a, dtype=float).at[1].add(a[0])
        g = np.full_like(a, 2.5)
        g[1] = a[1]
        return z, o, g, np.empty_like(a, shape=(2,)).at[0].set(7)

    for got, expected in zip(_run(f, backend, x), ([6, 0, 0], [1.0, 5.0, 1.0], [2, 5, 2],
                                                   [7, 0])):
        assert_numpy(got, np.array(expected))


# ---------------------------------------------------------------------------------------------
# 6. siblings found by the sweep

@pytest.mark.parametrize("backend", BACKENDS)
def test_bool_operands_of_conj_round_and_shifts(backend):
    b = np.array([True, False, True])
    # NumPy's int8 results are int8, its float16 ones float16
    assert_numpy(_run(np.conj, backend, b), np.conj(b))
    assert_numpy(_run(np.round, backend, b), np.round(b))
    assert_numpy(_run(np.left_shift, backend, b, b), np.left_shift(b, b))
    assert_numpy(_run(lambda a: a >> True, backend, b), b >> True)
    assert_numpy(_run(lambda a: np.left_shift(a, 3), backend, b), np.left_shift(b, 3))
    with pytest.raises(TypeError):
        tj.jit(lambda a: np.round(a, 2), backend="interpret")(b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_reciprocal_of_zero(backend):
    z = np.array([0j, complex(-0.0, 0), 1 + 2j, -2.5 - 1j])
    assert_numpy(_run(np.reciprocal, backend, z), _quiet(np.reciprocal, z), rtol=1e-15)


@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "radians", "degrees", "logaddexp"])
def test_complex_operands_numpy_refuses(name):
    fn = getattr(np, name)
    args = (ZB,) * (2 if name == "logaddexp" else 1)
    with pytest.raises(TypeError):
        fn(*args)
    with pytest.raises(TypeError):
        tj.jit(fn, backend="interpret")(*args)
    with pytest.raises(TypeError):
        tj.jit(lambda a: fn(a, 1j) if name == "logaddexp" else fn(a * 1j),
               backend="interpret")(np.ones(2))


# ---------------------------------------------------------------------------------------------
# the sweep

_VALS = {
    "b": [True, False, True, True, False, False, True, False],
    "i": [0, 1, -2, 3, 7, -5, 2, 5],
    "f": [0., -0., 1.5, -2.5, nan, inf, -inf, 3.0],
    "c": [0j, complex(-0., 0), 1 + 2j, -2.5 - 1j, complex(nan, 1), complex(1, nan),
          complex(inf, 0), 3 - 3j],
}
_ZERO_D = {"b": True, "i": 3, "f": -1.5, "c": 1 - 2j}
OPERANDS = {}
for _dt in ("bool", "int32", "int64", "float32", "float64", "complex64", "complex128"):
    OPERANDS[f"{_dt}[8]"] = np.array(_VALS[np.dtype(_dt).kind], _dt)
    OPERANDS[f"{_dt}[]"] = np.array(_ZERO_D[np.dtype(_dt).kind], _dt)
OPERANDS.update({"py_bool": True, "py_int": 3, "py_int0": 0, "py_float": 0.6, "py_nan": nan,
                 "py_complex": 0.6 - 0.47j})

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "sin", "cos",
         "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
         "arctanh", "negative", "positive", "sign", "absolute", "floor", "ceil", "rint", "round",
         "real", "imag", "conj", "angle", "square", "reciprocal", "isnan", "isinf", "isfinite",
         "iscomplex", "isreal", "invert", "logical_not", "deg2rad", "rad2deg", "sinc"]
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power",
          "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
          "right_shift"]

def _known(name, combo, backend):
    """Documented differences (each pinned by a test below): None or the reason."""
    kinds = {np.asarray(OPERANDS[c]).dtype.kind for c in combo}
    if name == "rint" and "c" in kinds:
        return "rint of complex raises DTypeError (NumPy rounds both parts)"
    if name == "reciprocal" and kinds <= {"b", "i"}:
        return "integer reciprocal raises DTypeError (NumPy truncates; 1/0 is platform-defined)"
    if name == "round" and "c" in kinds:
        return "round of complex: NaN/-0.0 parts (no primitive builds a complex from its parts)"
    if name == "multiply" and "c" in kinds and ("py_bool" in combo):
        return "simplification drops x * (1+0j) for complex x (passes._identity)"
    if backend == "llvm" and "c" in kinds and name in ("power", "tan"):
        return "llvm: complex power/tan of non-finite values (backend)"
    return None


def _numpy(name, combo):
    try:
        out = np.asarray(_quiet(getattr(np, name), *[OPERANDS[c] for c in combo]))
    except Exception as e:                                     # noqa: BLE001 - NumPy decides
        return None, e
    return out, None


def _traced(name, combo, mode):
    """(function, args): every operand an argument ('arg'), or Python scalars closed over."""
    fn = getattr(np, name)
    if mode == "arg":
        return (lambda *xs: fn(*xs)), [OPERANDS[c] for c in combo]
    idx = [i for i, c in enumerate(combo) if not c.startswith("py")]

    def f(*xs):
        ops = [OPERANDS[c] for c in combo]
        for i, x in zip(idx, xs):
            ops[i] = x
        return fn(*ops)
    return f, [OPERANDS[combo[i]] for i in idx]


_INT_BASES = ("bool[8]", "int32[8]", "int64[8]", "int64[]", "py_int", "py_bool")
_INT_EXPONENTS = ("bool[]", "int32[]", "int64[8]", "py_int", "py_int0", "py_bool")


def _cases(name):
    arity = 1 if name in UNARY else 2
    for combo in itertools.product(OPERANDS, repeat=arity):
        if all(c.startswith("py") for c in combo):
            continue
        if name == "power" and all(np.asarray(OPERANDS[c]).dtype.kind in "bi" for c in combo):
            if np.any(np.asarray(OPERANDS[combo[1]]) < 0):
                continue          # NumPy raises for negative integer powers, value-dependently
            if combo[0] not in _INT_BASES or combo[1] not in _INT_EXPONENTS:
                continue          # integer power graphs are long: a representative subset
        for mode in ("arg", "const") if any(c.startswith("py") for c in combo) else ("arg",):
            yield combo, mode


def _compare(name, combo, got, expected):
    if expected.dtype == np.float16:
        rtol = 2e-3
    else:
        single = any(np.asarray(OPERANDS[c]).dtype in (np.float32, np.complex64) for c in combo)
        rtol = 1e-6 if single else 1e-12
    got = np.asarray(got)
    if expected.dtype.kind == "c" and got.dtype == expected.dtype:
        # complex: NaN positions per part, then the error relative to |z|
        for g, e in zip(_parts(got), _parts(expected)):
            assert np.array_equal(np.isnan(g), np.isnan(e)), f"NaNs {got} vs NumPy {expected}"
        fin = np.isfinite(expected)
        assert np.array_equal(got[~fin & ~np.isnan(expected)], expected[~fin & ~np.isnan(
            expected)]), f"{got} != NumPy {expected}"
        assert np.all(np.abs(got[fin] - expected[fin]) <= rtol * np.abs(expected[fin])), \
            f"{got} != NumPy {expected}"
        return
    assert_numpy(got, expected, rtol=rtol)


def _batched(name, todo, backend):
    """One traced function computing ``name`` on every (combo, mode) of ``todo``."""
    keys = list(OPERANDS)
    fn = getattr(np, name)

    def f(*xs):
        env = dict(zip(keys, xs))
        return tuple(fn(*[OPERANDS[c] if mode == "const" and c.startswith("py") else env[c]
                          for c in combo]) for combo, mode in todo)

    return _run(f, backend, *[OPERANDS[k] for k in keys])


# the native backend sees 1-d operands and Python scalars (0-d ones run the same kernels and are
# covered by the interpreter), and integer powers only against int64 (their graphs are long)
def _native(name, combo):
    if any(c.endswith("[]") for c in combo):
        return False
    return not (name == "power" and all(np.asarray(OPERANDS[c]).dtype.kind in "bi"
                                        for c in combo) and "int64[8]" not in combo)


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_ufunc_sweep(name):
    failures, accepted = [], []
    for combo, mode in _cases(name):
        expected, err = _numpy(name, combo)
        f, args = _traced(name, combo, mode)
        what = f"{name}{combo} ({mode})"
        try:
            tj.jit(f, backend="interpret").ir(*args, optimize=False)   # type errors: at trace time
            got_err = None
        except Exception as e:                                 # noqa: BLE001
            got_err = e
        if err is not None:
            if got_err is None:
                failures.append(f"{what}: NumPy raises {err!r}, tracejit does not")
            elif not isinstance(got_err, (tj.TracerError, type(err))):
                failures.append(f"{what}: NumPy raises {err!r}, tracejit {got_err!r}")
        elif got_err is not None:
            if not _known(name, combo, "interpret"):
                failures.append(f"{what}: tracejit raises {got_err!r}")
        else:
            accepted.append((combo, mode, expected))
    for backend in BACKENDS:
        todo = [(c, m, e) for c, m, e in accepted if not _known(name, c, backend) and
                (backend == "interpret" or _native(name, c))]
        outs = _batched(name, [(c, m) for c, m, _ in todo], backend)
        for (combo, mode, expected), got in zip(todo, outs):
            try:
                _compare(name, combo, got, expected)
            except AssertionError as e:
                failures.append(f"{name}{combo} ({mode}, {backend}): {e}")
    assert not failures, "\n".join(failures[:20])


# ---------------------------------------------------------------------------------------------
# known differences, pinned (strict xfail: a fix elsewhere makes them pass and must update KNOWN)

def test_known_rint_of_complex_is_a_clear_error():
    with pytest.raises(tj.DTypeError):
        tj.jit(np.rint, backend="interpret")(ZB)


def test_known_integer_reciprocal_is_a_clear_error():
    with pytest.raises(tj.DTypeError):
        tj.jit(np.reciprocal, backend="interpret")(np.array([1, 2]))


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
def test_round_of_complex_keeps_nan_and_signed_zero_parts(backend):
    """round of a complex array builds it from its rounded parts exactly (complex_p; it was
    re + 1j * im: a NaN imaginary part made the real part NaN, -0.0 became +0.0)."""
    z = np.array([complex(1, nan), complex(-0.0, 1)])
    got = tj.jit(np.round, backend=backend)(z)
    assert np.array_equal(got, np.round(z), equal_nan=True)
    assert np.signbit(got.real[1])


def test_known_complex_times_literal_one():
    z = np.array([complex(nan, 1)])
    got = tj.jit(lambda a: a * 1, backend="interpret")(z)
    assert np.isnan(got.imag[0])


@pytest.mark.xfail(strict=True, reason="llvm complex power of an infinite base is nan+nanj; "
                   "NumPy gives inf+nanj")
def test_known_llvm_complex_power_of_inf():
    z = np.array([complex(inf, 0)])
    got = _run(lambda a: a ** (0.6 - 0.47j), "llvm", z)
    assert np.isinf(got.real[0])
