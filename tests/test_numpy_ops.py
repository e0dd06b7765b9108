"""The NumPy surface, traced vs NumPy: elementwise functions, operators and reductions from tables.

One table row per function: (name, domain sampler(s), dtypes, ulps). Each row is checked through
``tracejit.numpy.<name>`` and through plain ``numpy.<name>`` on a tracer (``__array_ufunc__`` /
``__array_function__`` dispatch), on hypothesis-drawn shapes (size-0 and size-1 dims, broadcasting
pairs), dtypes and values; dtype, shape and values must match NumPy. A second call with other
values of the same signature must not retrace and must still be right (the result was traced,
not constant-folded). A function missing from tracejit.numpy fails its row.
"""
import operator

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
import tracejit.numpy as tnp
from np_support import (ALL, ANY, B, C, F, FC, GE1, I, INTS, NONZERO, POS, REAL, SMALL, UNIT,
                        assert_same, broadcast_pair, check, domain, numpy_result, sample, seeds,
                        shapes, traced)

# name, domain, dtypes, ulps (0 = exact)

pytestmark = pytest.mark.usefixtures("interpret_backend")
UNARY = [
    ("exp", REAL, FC + I, 0), ("exp2", REAL, FC + I, 0), ("expm1", REAL, FC + I, 0),
    ("log", ANY, FC + I, 0), ("log2", ANY, FC + I, 0), ("log10", ANY, FC + I, 0),
    ("log1p", ANY, FC + I, 0), ("sqrt", ANY, FC + I, 0), ("cbrt", ANY, F + I, 0),
    ("square", REAL, FC + I, 0), ("reciprocal", NONZERO, FC, 2),
    ("sin", REAL, FC + I, 0), ("cos", REAL, FC + I, 0), ("tan", REAL, FC + I, 0),
    ("arcsin", UNIT, FC + I, 0), ("arccos", UNIT, FC + I, 0), ("arctan", REAL, FC + I, 0),
    ("sinh", REAL, FC + I, 0), ("cosh", REAL, FC + I, 0), ("tanh", REAL, FC + I, 0),
    ("arcsinh", REAL, FC + I, 0), ("arccosh", GE1, FC + I, 0), ("arctanh", UNIT, FC + I, 0),
    ("abs", REAL, ALL, 0), ("absolute", REAL, ALL, 0), ("sign", REAL, FC + I, 0),
    ("negative", REAL, FC + I, 0), ("positive", REAL, FC + I, 0),
    ("floor", REAL, F + I + B, 0), ("ceil", REAL, F + I + B, 0), ("rint", REAL, F + I, 0),
    ("round", REAL, FC + I, 0), ("real", REAL, ALL, 0), ("imag", REAL, ALL, 0),
    ("conj", REAL, FC + I, 0), ("conjugate", REAL, FC + I, 0), ("angle", REAL, ALL, 0),
    ("isnan", ANY, ALL, 0), ("isinf", ANY, ALL, 0), ("isfinite", ANY, ALL, 0),
    ("logical_not", REAL, ALL, 0), ("deg2rad", REAL, F, 0), ("rad2deg", REAL, F, 0),
]

# name, (domain1, domain2), dtypes, ulps
BINARY = [
    ("add", (REAL, REAL), ALL, 0), ("subtract", (REAL, REAL), I + FC, 0),
    ("multiply", (REAL, REAL), ALL, 0), ("true_divide", (REAL, REAL), ALL, 0),
    ("divide", (REAL, REAL), I + FC, 0), ("floor_divide", (REAL, REAL), I + F, 0),
    ("remainder", (REAL, REAL), I + F, 0), ("mod", (INTS, INTS), I + F, 0),
    ("power", (POS, SMALL), FC, 0), ("power", (INTS, domain(0, 5)), I, 0),
    ("maximum", (REAL, REAL), ALL, 0), ("minimum", (REAL, REAL), ALL, 0),
    ("fmax", (REAL, REAL), I + FC, 0), ("fmin", (REAL, REAL), I + FC, 0),
    ("arctan2", (REAL, REAL), F + I, 0), ("hypot", (REAL, REAL), F + I, 0),
    ("logaddexp", (ANY, ANY), F + I, 4),
    ("equal", (INTS, INTS), ALL, 0), ("not_equal", (INTS, INTS), ALL, 0),
    ("less", (INTS, INTS), ALL, 0), ("less_equal", (INTS, INTS), ALL, 0),
    ("greater", (INTS, INTS), ALL, 0), ("greater_equal", (INTS, INTS), ALL, 0),
    ("logical_and", (SMALL, SMALL), ALL, 0), ("logical_or", (SMALL, SMALL), ALL, 0),
    ("logical_xor", (SMALL, SMALL), ALL, 0),
]

OPERATORS = [
    ("+", operator.add, ALL), ("-", operator.sub, I + FC), ("*", operator.mul, ALL),
    ("/", operator.truediv, ALL), ("//", operator.floordiv, I + F), ("%", operator.mod, I + F),
    ("==", operator.eq, ALL), ("!=", operator.ne, ALL), ("<", operator.lt, ALL),
    ("<=", operator.le, ALL), (">", operator.gt, ALL), (">=", operator.ge, ALL),
]

REQUIRED = """exp exp2 log log2 log10 log1p expm1 sqrt cbrt square reciprocal sin cos tan arcsin
arccos arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh abs sign floor ceil round clip maximum minimum
fmax fmin power hypot logaddexp where equal not_equal less less_equal greater greater_equal
logical_and logical_or logical_xor logical_not isnan isinf isfinite sum prod mean var std max min
argmax argmin all any cumsum cumprod dot matmul vdot inner outer tensordot einsum trace diagonal
reshape ravel transpose swapaxes moveaxis expand_dims squeeze broadcast_to concatenate stack hstack
vstack split tile repeat flip roll pad take take_along_axis zeros ones full eye arange linspace
zeros_like ones_like full_like real imag conj angle add subtract multiply divide true_divide
floor_divide remainder negative absolute""".split()


@pytest.mark.parametrize("name", REQUIRED)
def test_namespace_has(name):
    assert callable(getattr(tnp, name, None)), f"tracejit.numpy.{name} is missing"


def _params(table, col=2):
    return [pytest.param(row, dt, id=f"{row[0]}-{dt}") for row in table for dt in row[col]]


def _rng(seed):
    return np.random.default_rng(seed)


@pytest.mark.parametrize("row,dtype", _params(UNARY))
@settings(max_examples=8)
@given(shape=shapes, seed=seeds)
def test_unary(row, dtype, shape, seed):
    name, dom, _, ulps = row
    rng = _rng(seed)
    x, x2 = sample(rng, shape, dtype, dom), sample(rng, shape, dtype, dom)
    np_fn = getattr(np, name)
    tj_fn = getattr(tnp, name)
    check(("tnp", name), lambda a: tj_fn(a), x, npfn=np_fn, ulps=ulps, others=[(x2,)])
    check(("np", name), lambda a: np_fn(a), x, npfn=np_fn, ulps=ulps, others=[(x2,)])


@st.composite
def _binary_args(draw, dtypes, doms):
    """Two operands: arrays of (possibly different) dtypes and broadcastable shapes, or one
    Python scalar (weakly typed)."""
    s1, s2 = draw(broadcast_pair())
    d1, d2 = draw(st.sampled_from(dtypes)), draw(st.sampled_from(dtypes))
    seed = draw(seeds)
    rng = _rng(seed)
    kind = draw(st.sampled_from(["arrays", "arrays", "scalar_right", "scalar_left"]))
    a = [sample(rng, s1, d1, doms[0]), sample(rng, s2, d2, doms[1])]
    b = [sample(rng, s1, d1, doms[0]), sample(rng, s2, d2, doms[1])]
    if kind != "arrays":
        k = 1 if kind == "scalar_right" else 0
        pytype = {"b": bool, "i": int, "f": float, "c": complex}[np.dtype((d1, d2)[k]).kind]
        a[k] = pytype(sample(rng, (), (d1, d2)[k], doms[k]))
        b[k] = pytype(sample(rng, (), (d1, d2)[k], doms[k]))
    return a, b


def _check_or_raises(key, fn, args, others, ulps):
    """Compare with NumPy; where NumPy raises, tracejit must raise the same kind of error."""
    try:
        numpy_result(fn, *args)
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        with pytest.raises(type(e)):
            traced(key + ("raises", repr(args)), fn)(*args)
        return
    ok_others = []
    for o in others:
        try:
            numpy_result(fn, *o)
            ok_others.append(o)
        except Exception:  # noqa: BLE001
            pass
    check(key, fn, *args, ulps=ulps, others=ok_others)


@pytest.mark.parametrize("row,dtype", [pytest.param(r, None, id=f"{r[0]}-{'/'.join(r[2])}")
                                       for r in BINARY])
@settings(max_examples=15)
@given(data=st.data())
def test_binary(row, dtype, data):
    name, doms, dts, ulps = row
    a, b = data.draw(_binary_args(dts, doms))
    np_fn = getattr(np, name)
    tj_fn = getattr(tnp, name)
    _check_or_raises(("tnp2", name, doms), lambda x, y: tj_fn(x, y), a, [b], ulps)
    # plain NumPy names dispatch only when a tracer is an operand; the NumPy side runs np_fn
    key = ("np2", name, doms)
    fn = traced(key, lambda x, y: np_fn(x, y))
    try:
        expected = numpy_result(np_fn, *a)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(*a)
        return
    assert_same(fn(*a), expected, ulps=ulps, what=f"np.{name}")


@pytest.mark.parametrize("sym,op,dts", [pytest.param(*r, id=r[0]) for r in OPERATORS])
@settings(max_examples=15)
@given(data=st.data())
def test_operators(sym, op, dts, data):
    a, b = data.draw(_binary_args(dts, (REAL, REAL)))
    _check_or_raises(("op", sym), op, a, [b], 0)


@settings(max_examples=15)
@given(data=st.data())
def test_power_operator(data):
    a, b = data.draw(_binary_args(FC, (POS, SMALL)))
    _check_or_raises(("op", "**"), operator.pow, a, [b], 0)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_power_python_int_exponent(dtype, n):
    x = sample(_rng(n + 10), (3, 4), dtype, INTS if dtype in I else REAL)
    if dtype in I + B and n < 0:
        with pytest.raises(ValueError):
            tracejit.trace(lambda a: a ** n)(x)
        return
    if dtype == "bool":
        pytest.skip("NumPy gives int8 for bool ** int; tracejit has no int8 (gives int64)")
    check(("pow", n), lambda a: a ** n, x, ulps=2, others=[(x[::-1].copy(),)])


@pytest.mark.parametrize("dtype", I)
def test_integer_power_traced_exponent(dtype):
    x = np.array([[0, 1, -1, 2, -3, 7, 2, -2]], dtype)
    e = np.array([[3, 0, 5, 10, 3, 2, 62, 63]], dtype)
    check(("ipow", dtype), lambda a, b: a ** b, x, e, others=[(e, x % 4)])
    check(("ipow_r", dtype), lambda b: 3 ** b, e[:, :5])


def test_integer_power_negative_traced_exponent_raises():
    # NumPy's ValueError, raised at run time (more cases: tests/test_runtime_checks.py)
    f = tracejit.trace(lambda a, b: a ** b)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([1, -1, -1, 2, 0, 5]), np.array([-3, -3, -2, -1, -1, -2]))


UNARY_OPS = [("neg", operator.neg, I + FC), ("abs", abs, ALL), ("pos", operator.pos, I + FC),
             ("invert", operator.invert, I + B)]


@pytest.mark.parametrize("name,op,dts", [pytest.param(*r, id=r[0]) for r in UNARY_OPS])
@settings(max_examples=10)
@given(shape=shapes, seed=seeds, data=st.data())
def test_unary_operators(name, op, dts, shape, seed, data):
    dtype = data.draw(st.sampled_from(dts))
    rng = _rng(seed)
    x, x2 = sample(rng, shape, dtype), sample(rng, shape, dtype)
    check(("uop", name), op, x, others=[(x2,)])


def test_bool_negative_and_subtract_raise_like_numpy():
    b = np.array([True, False])
    for fn in (operator.neg, operator.pos, lambda a: a - a, np.negative, np.sign):
        with pytest.raises(TypeError):
            fn(b)
        with pytest.raises(TypeError):
            tracejit.trace(fn)(b)


BITWISE = [operator.and_, operator.or_, operator.xor, np.bitwise_and, np.bitwise_or,
           np.bitwise_xor]
SHIFTS = [operator.lshift, operator.rshift, np.left_shift, np.right_shift]


@pytest.mark.parametrize("fn", BITWISE + SHIFTS, ids=lambda f: getattr(f, "__name__", str(f)))
@settings(max_examples=10)
@given(shape=shapes, seed=seeds, data=st.data())
def test_bitwise_and_shift_operators(fn, shape, seed, data):
    """Integers (and bools for & | ^) bit for bit as NumPy, shifts by any amount included:
    amounts >= the bit width or negative give 0 (left) or the sign (right), as NumPy."""
    dtype = data.draw(st.sampled_from(I + (B if fn in BITWISE else ())))
    rng = _rng(seed)
    big = np.iinfo(np.int64).max if dtype == "int64" else 2 ** 31 - 1
    if fn in SHIFTS:
        x = rng.integers(-big, big, size=shape).astype(dtype)
        amount = rng.integers(-3, 70, size=shape).astype(dtype)
        others = [(x[::-1].copy() if shape else x, amount)]
        check(("shift", fn.__name__, dtype), fn, x, amount, others=others)
        check(("shift_scalar", fn.__name__, dtype), lambda a: fn(a, 3), x)
        return
    x, y = sample(rng, shape, dtype), sample(rng, shape, dtype)
    if dtype != "bool":
        x = rng.integers(-big, big, size=shape).astype(dtype)
    check(("bit", fn.__name__, dtype), fn, x, y, others=[(y, x)])
    check(("bit_scalar", fn.__name__, dtype), lambda a: fn(a, 6) if dtype != "bool" else
          fn(a, True), x)


def test_bitwise_on_floats_raises_like_numpy():
    x = np.ones(3)
    for fn in BITWISE + SHIFTS + [operator.invert]:
        with pytest.raises(TypeError):
            tracejit.trace(lambda a, fn=fn: fn(a, a) if fn is not operator.invert else ~a)(x)


def test_matmul_operator_and_bool_products():
    a = np.arange(12.).reshape(3, 4)
    check("matmul_op", lambda x, y: x @ y, a, a.T.copy(), others=[(a + 1, a.T * 2)])
    m = np.array([[True, False], [False, False]])
    for fn in (np.matmul, np.dot, np.inner):
        check(("boolprod", fn.__name__), lambda x, fn=fn: fn(x, x), m, others=[(~m,)])


# ---------------------------------------------------------------------------------------------
# reductions

# name, dtypes, kind: 'keep' (axis + keepdims), 'arg' (one axis), 'scan' (cumulative)
REDUCTIONS = [
    ("sum", ALL, "keep", 0), ("prod", ALL, "keep", 0), ("mean", ALL, "keep", 0),
    ("var", ALL, "keep", 0), ("std", ALL, "keep", 0), ("max", B + I + F, "keep", 0),
    ("min", B + I + F, "keep", 0), ("all", ALL, "keep", 0), ("any", ALL, "keep", 0),
    ("argmax", B + I + F, "arg", 0), ("argmin", B + I + F, "arg", 0),
    ("cumsum", ALL, "scan", 0), ("cumprod", ALL, "scan", 0),
    ("amax", I + F, "keep", 0), ("amin", I + F, "keep", 0),
]


@st.composite
def _axis(draw, ndim, kind):
    if kind == "keep":
        choice = draw(st.sampled_from(["none", "int", "tuple"]))
        if choice == "none" or ndim == 0:
            return None
        if choice == "int":
            return draw(st.integers(-ndim, ndim - 1))
        axes = draw(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim))
        return tuple(a - ndim if draw(st.booleans()) else a for a in axes)
    if ndim == 0 or draw(st.booleans()):
        return None
    return draw(st.integers(-ndim, ndim - 1))


@pytest.mark.parametrize("row,dtype", _params(REDUCTIONS, 1))
@settings(max_examples=10)
@given(shape=shapes, seed=seeds, data=st.data())
def test_reductions(row, dtype, shape, seed, data):
    name, _, kind, ulps = row
    axis = data.draw(_axis(len(shape), kind))
    keepdims = data.draw(st.booleans()) if kind in ("keep", "arg") else None
    kw = {"axis": axis}
    if keepdims:
        kw["keepdims"] = True
    if name in ("var", "std") and data.draw(st.booleans()):
        kw["ddof"] = data.draw(st.integers(0, 2))
    rng = _rng(seed)
    dom = INTS if dtype in I else REAL
    x, x2 = sample(rng, shape, dtype, dom), sample(rng, shape, dtype, dom)
    np_fn, tj_fn = getattr(np, name), getattr(tnp, name)
    key = (name, tuple(sorted(kw.items(), key=str)))
    try:
        numpy_result(lambda a: np_fn(a, **kw), x)
    except ValueError:              # empty reduction without identity: tracejit raises too
        with pytest.raises(ValueError):
            tracejit.trace(lambda a: tj_fn(a, **kw))(x)
        return
    check(("red_tnp",) + key, lambda a: tj_fn(a, **kw), x, npfn=lambda a: np_fn(a, **kw),
          ulps=ulps, others=[(x2,)])
    check(("red_np",) + key, lambda a: np_fn(a, **kw), x, ulps=ulps, others=[(x2,)])
    if name in ("sum", "prod", "mean", "max", "min", "all", "any", "var", "std", "argmax",
                "argmin", "cumsum", "cumprod"):
        check(("red_meth",) + key, lambda a: getattr(a, name)(**kw), x,
              npfn=lambda a: getattr(a, name)(**kw), ulps=ulps, others=[(x2,)])


def test_reduction_dtypes_numpy2():
    i32 = np.array([1, 2, 3], np.int32)
    b = np.array([True, True, False])
    cases = [("sum_b", np.sum, b), ("sum_i32", np.sum, i32), ("prod_i32", np.prod, i32),
             ("cumsum_b", np.cumsum, b), ("cumsum_i32", np.cumsum, i32),
             ("mean_i32", np.mean, i32), ("mean_b", np.mean, b), ("var_i32", np.var, i32)]
    for key, fn, x in cases:
        got = check(("rdt", key), fn, x)
        assert got.dtype == numpy_result(fn, x).dtype
    assert check("sum_b_dt", np.sum, b).dtype == np.int64
    assert check("mean_i_dt", np.mean, i32).dtype == np.float64


def test_reductions_dtype_argument():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    check("sum_f32", lambda a: np.sum(a, axis=1, dtype=np.float32), x)
    check("mean_f32", lambda a: np.mean(a, dtype=np.float32), x)
    check("cumsum_f64", lambda a: np.cumsum(a, axis=0, dtype=np.float64), x)


def test_ufunc_methods():
    x = np.arange(12.).reshape(3, 4)
    check("add.reduce", lambda a: np.add.reduce(a, axis=1), x, others=[(x * 2,)])
    check("mul.acc", lambda a: np.multiply.accumulate(a, axis=1), x + 1)
    check("mul.outer", lambda a: np.multiply.outer(a[0], a[1]), x)
    check("max.reduce", lambda a: np.maximum.reduce(a, axis=0), x)


@pytest.mark.parametrize("dtype", F + C)
def test_var_std_complex_and_ddof(dtype):
    x = sample(_rng(1), (4, 5), dtype)
    x = np.where(np.isfinite(x), x, 1).astype(dtype)
    for ddof in (0, 1, 2):
        for axis in (None, 0, 1, (0, 1)):
            check(("var", dtype, ddof, axis), lambda a: np.var(a, axis=axis, ddof=ddof), x,
                  others=[(x * 2,)])
            check(("std", dtype, ddof, axis), lambda a: a.std(axis=axis, ddof=ddof), x)


def test_argmax_ties_and_nan():
    x = np.array([[3.0, 1.0, 3.0], [np.nan, 2.0, np.nan], [1.0, 1.0, 1.0]])
    for fn in (np.argmax, np.argmin):
        for axis in (None, 0, 1):
            check(("argtie", fn.__name__, axis), lambda a: fn(a, axis=axis), x)


# ---------------------------------------------------------------------------------------------
# where, clip, round(decimals)

@settings(max_examples=15)
@given(data=st.data())
def test_where_broadcast_and_promotion(data):
    s1, s2 = data.draw(broadcast_pair())
    s3 = data.draw(st.sampled_from([(), s1, s2]))
    d1, d2 = data.draw(st.sampled_from(ALL)), data.draw(st.sampled_from(ALL))
    rng = _rng(data.draw(seeds))
    c = rng.random(s3) < 0.5
    x, y = sample(rng, s1, d1), sample(rng, s2, d2)
    # (a NumPy scalar and a 0-d array are different signatures: keep each argument's kind)
    def like(v, ref):
        return np.asarray(v) if isinstance(ref, np.ndarray) else np.asarray(v)[()]
    nc = like(~c, c)
    for key, fn in [("np", np.where), ("tnp", tnp.where)]:
        check(("where", key), lambda p, a, b: fn(p, a, b), c, x, y, npfn=np.where,
              others=[(nc, like(y.astype(d1), x) if y.shape == s1 else x, y)])
    check(("where_scalar",), lambda p, a: np.where(p, a, 0.5), c, x, others=[(nc, x)])
    check(("where_int_cond",), lambda p, a: np.where(p, a, 1), c.astype(np.int32), x)


@settings(max_examples=15)
@given(shape=shapes, dtype=st.sampled_from(I + F), seed=seeds, data=st.data())
def test_clip(shape, dtype, seed, data):
    rng = _rng(seed)
    x, x2 = sample(rng, shape, dtype), sample(rng, shape, dtype)
    lo = data.draw(st.sampled_from([None, -1, -2.5, 0]))
    hi = data.draw(st.sampled_from([None, 2, 3.5]))
    if lo is None and hi is None:
        hi = 1
    for key, fn in [("np", np.clip), ("tnp", tnp.clip)]:
        check(("clip", key, lo, hi), lambda a: fn(a, lo, hi), x, npfn=lambda a: np.clip(a, lo, hi),
              others=[(x2,)])
    check(("clip_kw", lo, hi), lambda a: a.clip(min=lo, max=hi), x, others=[(x2,)])
    check(("clip_arr",), lambda a, b: np.clip(a, b, 3), x, x2, others=[(x2, x)])


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", F + C + I)
def test_round_decimals(decimals, dtype):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1.234567, -1.25, 15, 25, -35, 150, 1e10, 0.125,
                  np.nan, np.inf])
    if np.dtype(dtype).kind == "i":
        x = np.array([15, 25, -35, -25, 5, 0, 149, 150, 250, 7, -1, 10**12 + 50])
    elif np.dtype(dtype).kind == "c":
        x = x[:-2] + 1j * x[::-1][:-2]
    x = x.astype(dtype)
    check(("round", decimals, dtype), lambda a: np.round(a, decimals), x,
          others=[(x * 3,)])
    check(("around", decimals, dtype), lambda a: tnp.around(a, decimals), x,
          npfn=lambda a: np.around(a, decimals))
    check(("round_m", decimals, dtype), lambda a: a.round(decimals), x)
