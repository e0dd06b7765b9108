"""Every NumPy integer width (int8..int64, uint8..uint64) against NumPy 2 itself.

Operands hold each dtype's extremes (min, max, 0, 1, -1, max - 1, min + 1, ...) paired so that
every overflowing case occurs (min // -1, max + 1, -min, min * -1, shifts by >= the width);
results must have NumPy's dtype and NumPy's bits, on the interpreter and on llvm (called three
times: the Python path, then the native entry). Float results are exact where IEEE arithmetic is
(division, sqrt, conversions) and within a few ulps for transcendentals. Out-of-range float ->
int casts are undefined in NumPy and not tested.

Speed: the ops of one operand signature are one traced function returning a tuple (one compile
per signature), shared by the tests through ``_traced``.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracejit as tj
from tracejit import dtypes

BACKENDS = ("interpret", "llvm")
INTS = [d.name for d in dtypes.INTEGERS]
NARROW = [d for d in INTS if d != "int64"]
OTHERS = ["bool", "float32", "float64"]
N = 40                                # operands are (N,) and (4, 10): vector bodies and tails
_TRACED: dict = {}


def _traced(key, fn, backend):
    """``tj.jit(fn, backend=backend)`` made once per ``key`` for the whole module."""
    t = _TRACED.get((key, backend))
    if t is None:
        t = _TRACED[(key, backend)] = tj.jit(fn, backend=backend)
    return t


def extremes(dt, n=N, shift=0):
    """``n`` values of ``dt`` led by its extremes and the values next to them (``shift``
    rotates them, so that a second operand pairs every extreme with every other one)."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.arange(n) % 3 == 0
    if dt.kind == "f":
        return np.roll(np.linspace(-130.0, 300.0, n).astype(dt), shift)
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    vals = [lo, hi, 0, 1, hi - 1, lo + 1, 2, 3, 7, hi // 2, hi // 2 + 1, 100, 13]
    if lo < 0:
        vals += [-1, -2, -3, -7, lo // 2, -100, -13]
    vals += [(k * 37 + 5) % 100 for k in range(n)]
    return np.roll(np.array(vals[:n], dtype=dt), shift)


def mild(dt, n=N):
    """Small values (sums and float rounding are exact; no out-of-range float results)."""
    x = np.arange(n) % 23 - (0 if np.dtype(dt).kind == "u" else 11)
    return x.astype(dt)


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def assert_same(got, expected, what="", ulps=0):
    """Same dtype and bits (NaN positions included); ``ulps`` for float results."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), what
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{what}[{k}]", ulps)
        return
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, NumPy {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, NumPy {expected.shape}"
    if ulps and got.dtype.kind in "fc":
        eps = np.finfo(got.dtype).eps
        np.testing.assert_allclose(got, expected, rtol=ulps * eps, atol=ulps * eps,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)


def check(key, fns, args, backend, ulps=0, calls=3):
    """The tuple of ``fns`` applied to ``args``, traced once under ``key``, against NumPy."""
    names = list(fns)

    def f(*xs):
        return tuple(fns[n](*xs) for n in names)
    expected = _numpy(f, *args)
    t = _traced(key, f, backend)
    for _ in range(calls):
        got = t(*args)
        for n, g, e in zip(names, got, expected):
            assert_same(g, e, f"{key} {n} ({backend})", ulps)


def _accepted(fns, *args):
    """The ops NumPy computes for these operands (the others: it raises, checked apart)."""
    ok, refused = {}, {}
    for name, fn in fns.items():
        try:
            _numpy(fn, *args)
            ok[name] = fn
        except (TypeError, ValueError, OverflowError) as e:
            refused[name] = type(e)
    return ok, refused


# ---------------------------------------------------------------------------------------------
# promotion (NEP 50)

SCALARS = (True, 1, 1.0, 1j)


def test_promotion_table_is_numpys():
    for a in dtypes.SUPPORTED:
        for b in dtypes.SUPPORTED:
            assert dtypes.promote((a, False), (b, False)) == (np.result_type(a, b), False), (a, b)
        for s in SCALARS:
            weak = (dtypes.WEAK_DEFAULT[type(s)], True)
            assert dtypes.promote((a, False), weak) == (np.result_type(a, s), False), (a, s)
            assert dtypes.promote(weak, (a, False)) == (np.result_type(s, a), False), (s, a)


@pytest.mark.parametrize("a", INTS)
def test_traced_promotion_with_every_dtype_and_scalar(a):
    x = extremes(a, 4)
    for b in dtypes.SUPPORTED:
        y = np.ones(4, b)
        got = tj.jit(lambda u, v: u * v, backend="interpret")(x, y)
        assert got.dtype == (x * y).dtype, (a, b)
    for s in SCALARS:
        for f in (lambda u: u * s, lambda u: s * u, lambda u: u + (s, 2)[1]):
            assert_same(tj.jit(f, backend="interpret")(x), _numpy(f, x), f"{a} {s!r}")


def test_result_dtypes_of_the_examples():
    i8, i16, u8 = (np.zeros(2, d) for d in ("int8", "int16", "uint8"))
    u64, i64, u32, i32 = (np.zeros(2, d) for d in ("uint64", "int64", "uint32", "int32"))
    f = tj.jit(lambda *a: (a[0] + a[1], a[2] + a[0], a[3] + a[4], a[5] + a[6], a[2] + 1,
                           np.ones(2, bool) + a[2], a[2] + np.ones(2, np.float32)))
    got = f(i8, i16, u8, u64, i64, u32, i32)
    assert [g.dtype.name for g in got] == ["int16", "int16", "float64", "int64", "uint8",
                                           "uint8", "float32"]


# ---------------------------------------------------------------------------------------------
# elementwise

BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "mod": operator.mod, "truediv": operator.truediv,
    "pow": lambda a, b: a ** (b % 5), "maximum": np.maximum, "minimum": np.minimum,
    "fmax": np.fmax, "fmin": np.fmin, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge, "and": operator.and_,
    "or": operator.or_, "xor": operator.xor, "shl": operator.lshift, "shr": operator.rshift,
    "where": lambda a, b: np.where(a > b, a, b), "logical_and": np.logical_and,
    "clip": lambda a, b: np.clip(a, b, np.maximum(a, b)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_binary_same_dtype(dt, backend):
    x, y = extremes(dt), extremes(dt, shift=7)
    y[:2] = [-1 if np.dtype(dt).kind == "i" else 1, 0]        # min // -1 and x // 0
    x[:2] = x[0], x[1]
    check(("bin", dt), BINARY, (x, y), backend)
    # 2-D and a rank-0 operand
    check(("bin2d", dt), {"add": operator.add, "floordiv": operator.floordiv,
                          "lt": operator.lt, "shr": operator.rshift},
          (x.reshape(4, 10), y[3:4].reshape(())), backend)


def _pairs():
    for a in INTS:
        for b in INTS + OTHERS:
            if a != b:
                yield a, b


MIXED = {name: BINARY[name] for name in ("add", "sub", "mul", "floordiv", "mod", "truediv",
                                         "maximum", "lt", "eq", "and", "shl", "where")}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a,b", list(_pairs()), ids=lambda v: str(v))
def test_binary_mixed_dtypes(a, b, backend):
    x, y = extremes(a), extremes(b, shift=5)
    for args in ((x, y), (y, x)) if b in OTHERS else ((x, y),):
        ok, refused = _accepted(MIXED, *args)
        key = ("mixed", args[0].dtype.name, args[1].dtype.name)
        check(key, ok, args, backend, calls=2)
        for name, exc in refused.items():          # NumPy's TypeError: bitwise on floats
            with pytest.raises(exc):
                tj.jit(MIXED[name], backend="interpret")(*args)


def _unary(dt):
    signed = np.dtype(dt).kind == "i"
    ops = {
        "neg": np.negative, "abs": np.abs, "sign": np.sign, "invert": np.invert,
        "square": np.square, "positive": np.positive, "cube": lambda a: a ** 3,
        "pow0": lambda a: a ** 0, "floor": np.floor, "ceil": np.ceil, "isnan": np.isnan,
        "isfinite": np.isfinite, "not": np.logical_not, "conj": np.conj,
        "bool": lambda a: a.astype(bool), "f32": lambda a: a.astype(np.float32),
        "f64": lambda a: a.astype(np.float64), "c64": lambda a: a.astype(np.complex64),
        "plus1": lambda a: a + 1, "max_int": lambda a: a * int(np.iinfo(dt).max),
        "lt300": lambda a: a < 300, "eq_m1": lambda a: a == -1, "gt_big": lambda a: a > 2**40,
        "ge_neg": lambda a: a >= -2**40, "true": lambda a: a + True, "half": lambda a: a * 2.5,
        "cplx": lambda a: a + 1j, "clip": lambda a: np.clip(a, 1, 100),
        "clip_wide": lambda a: np.clip(a, -10**6, 10**6),      # both bounds beyond int8
        "div3": lambda a: a // 3, "mod7": lambda a: a % 7, "div0": lambda a: a // 0,
        "shl9": lambda a: a << 9, "shr3": lambda a: a >> 3, "rdiv": lambda a: 100 // (a | 1),
    }
    for other in INTS:
        ops[f"to_{other}"] = lambda a, o=other: a.astype(o)
    if signed:
        ops["times_m1"] = lambda a: a * -1
        ops["minus_max"] = lambda a: a - int(np.iinfo(dt).min)
    return ops


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_unary_and_weak_scalars(dt, backend):
    ops, refused = _accepted(_unary(dt), extremes(dt))
    assert not refused or set(refused) <= {"max_int", "minus_max"}, refused
    check(("un", dt), ops, (extremes(dt),), backend)
    check(("un2d", dt), {"neg": np.negative, "sign": np.sign, "abs": np.abs},
          (extremes(dt).reshape(4, 10),), backend)


@pytest.mark.parametrize("dt", INTS)
def test_python_int_out_of_range_raises_numpys_overflow_error(dt):
    info = np.iinfo(dt)
    x = extremes(dt, 8)
    for k in (int(info.max) + 1, int(info.min) - 1):
        if not -2**63 <= k < 2**63:
            continue
        for f in (lambda a: a + k, lambda a: k * a, lambda a: a // k, lambda a: a & k,
                  lambda a: np.maximum(a, k)):
            with pytest.raises(OverflowError):
                _numpy(f, x)
            with pytest.raises(OverflowError, match=f"out of bounds for {dt}"):
                tj.jit(f, backend="interpret")(x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", NARROW)
def test_traced_python_int_arguments(dt, backend):
    """A traced Python int: exact comparisons for any value, arithmetic raises when it does not
    fit; ints of one range class share a trace."""
    info = np.iinfo(dt)
    x = extremes(dt, 8)
    cmp = {"lt": operator.lt, "ge": operator.ge, "eq": operator.eq, "rgt": lambda a, k: k > a}
    arith = {"add": operator.add, "mul": operator.mul, "max": np.maximum,
             "clip": lambda a, k: np.clip(a, 0, k)}
    values = [3, 5, int(info.max), int(info.min), int(info.max) + 1, int(info.min) - 1, -1,
              2**40, -2**40, 2**63 - 1]
    for k in [v for v in values if -2**63 <= v < 2**63]:     # traced ints are int64 values
        check(("pyint_cmp", dt), cmp, (x, k), backend, calls=1)
        if info.min <= k <= info.max:
            check(("pyint_arith", dt), arith, (x, k), backend, calls=1)
        else:
            with pytest.raises(OverflowError):
                _numpy(operator.add, x, k)
            with pytest.raises(OverflowError, match=f"out of bounds for {dt}"):
                _traced(("pyint_add", dt), operator.add, backend)(x, k)
    f = tj.jit(lambda a, k: a + k, backend=backend)
    for k in (1, 2, 3):
        f(x, k)
    assert f.cache_info().traces == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_numpy_scalar_arguments(dt, backend):
    x = extremes(dt, 8)
    for s in (np.uint8(200), np.int8(-5), np.uint64(2**64 - 1), np.int16(300), np.float32(1.5),
              np.bool_(True)):
        fns = {"add": operator.add, "lt": operator.lt, "div": operator.floordiv}
        ok, _ = _accepted(fns, x, s)
        check(("npscalar", dt, type(s).__name__), ok, (x, s), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_float_ufuncs(dt, backend):
    x = mild(dt) + np.array(1, dt)
    fns = {"sqrt": np.sqrt, "sin": np.sin, "exp": np.exp, "log1p": np.log1p, "rint": np.rint,
           "arctan2": lambda a: np.arctan2(a, a + a), "hypot": lambda a: np.hypot(a, a),
           "deg2rad": np.deg2rad, "sinc": np.sinc, "angle": np.angle}
    if np.dtype(dt).itemsize == 1:
        # NumPy computes these in float16 (as float32 rounded once): tracejit too
        assert _numpy(fns["sin"], x).dtype == np.float16
    check(("float", dt), fns, (x,), backend, ulps=4)


# ---------------------------------------------------------------------------------------------
# reductions

REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "cumsum": np.cumsum, "cumprod": np.cumprod, "max": np.max,
    "min": np.min, "argmax": np.argmax, "argmin": np.argmin, "ptp": np.ptp, "any": np.any,
    "all": np.all, "count": np.count_nonzero, "sum0": lambda a: np.sum(a, axis=0),
    "sum1": lambda a: a.sum(axis=1), "max0": lambda a: a.max(axis=0),
    "min1": lambda a: np.min(a, axis=1, keepdims=True), "argmax1": lambda a: a.argmax(axis=1),
    "argmin0": lambda a: np.argmin(a, axis=0), "prod1": lambda a: a.prod(axis=1),
    "cumsum1": lambda a: np.cumsum(a, axis=1), "cumprod0": lambda a: np.cumprod(a, axis=0),
    "sum_own": lambda a: a.sum(dtype=a.dtype), "cumsum_own": lambda a: a.cumsum(dtype=a.dtype),
    "prod_own": lambda a: a.prod(axis=0, dtype=a.dtype),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_reductions(dt, backend):
    check(("red", dt), REDUCTIONS, (extremes(dt).reshape(4, 10),), backend)
    # means and variances in float64: exact sums of small values (the order differs)
    check(("mean", dt), {"mean": np.mean, "mean1": lambda a: a.mean(axis=1), "var": np.var,
                         "std0": lambda a: np.std(a, axis=0), "average": np.average,
                         "sum_f32": lambda a: a.sum(dtype="f4")},
          (mild(dt).reshape(4, 10),), backend, ulps=8)


@pytest.mark.parametrize("dt", ["int8", "uint8", "uint16"])
def test_large_reductions_use_threads_and_wrap(dt):
    x = np.resize(extremes(dt), 300_001)
    check(("bigred", dt), {"sum": np.sum, "own": lambda a: a.sum(dtype=a.dtype),
                           "max": np.max, "argmin": np.argmin, "add": lambda a: a + a},
          (x,), "llvm", calls=2)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("dt", INTS)
def test_random_values(dt, data):
    """Random bits of ``dt`` (one trace per dtype: only the values change)."""
    arrays = hnp.arrays(np.dtype(dt), (2, 9))
    x, y = data.draw(arrays), data.draw(arrays)
    fns = {n: BINARY[n] for n in ("add", "mul", "floordiv", "mod", "lt", "shr", "maximum")}
    fns["sum"] = lambda a, b: np.sum(a * b, axis=1)
    check(("random", dt), fns, (x, y), "llvm", calls=1)


@pytest.mark.parametrize("dt", NARROW)
def test_native_entry_takes_narrow_arrays(dt):
    """The third call of a signature runs on the native entry (``hits`` counts Python-path
    hits only), with NumPy's results; a NumPy scalar argument takes the Python path."""
    x, y = extremes(dt), extremes(dt, shift=3)
    f = tj.jit(lambda a, b: (a * b, a < b, np.sum(a)))
    for _ in range(4):
        assert_same(f(x, y), _numpy(lambda a, b: (a * b, a < b, np.sum(a)), x, y), dt)
    assert f.cache_info().hits == 1
    s = np.dtype(dt).type(3)
    for _ in range(3):
        assert_same(f(x, s), _numpy(lambda a, b: (a * b, a < b, np.sum(a)), x, s), dt)


# ---------------------------------------------------------------------------------------------
# products, indexing, updates, control flow, derivatives

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_products_wrap(dt, backend):
    rng = np.random.default_rng(5)
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, (5, 7), dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, (7, 9), dtype=dt, endpoint=True)
    fns = {"matmul": operator.matmul, "tmatmul": lambda a, b: a.T.T @ b[:, ::-1],
           "matvec": lambda a, b: a @ b[:, 0], "dot": lambda a, b: np.dot(a[0], b[:, 1]),
           "einsum": lambda a, b: np.einsum("ij,jk->ik", a, b),
           "batched": lambda a, b: np.stack([a, a]) @ np.stack([b, b]),
           "outer": lambda a, b: np.outer(a[0], b[0])}
    check(("prod", dt), fns, (a, b), backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS)
def test_index_arrays_and_scatter_add(dt, backend):
    data = extremes("int8", 10).astype(dt)
    idx = np.array([0, 3, 3, 9, 1, 1, 1], dt)
    if np.dtype(dt).kind == "i":
        idx[-1] = -2
    fns = {"gather": lambda x, i: x[i], "concrete": lambda x, i: x[np.array([2, 5], dt)],
           "take": lambda x, i: np.take(x, i), "add_at": lambda x, i: x.at[i].add(x[i] * 3),
           "set_at": lambda x, i: x.at[i % 4].set(7), "max_at": lambda x, i: x.at[i].max(x[1])}

    def numpy_at(x, i):                     # NumPy's in-place ufunc.at, functionally
        out = [x[i], x[np.array([2, 5], dt)], np.take(x, i)]
        for mode, vals, where in (("add", x[i] * 3, i), ("set", 7, i % 4), ("max", x[1], i)):
            y = x.copy()
            if mode == "set":
                y[where] = vals
            else:
                getattr(np, {"add": "add", "max": "maximum"}[mode]).at(y, where, vals)
            out.append(y)
        return tuple(out)
    got = _traced(("index", dt), lambda x, i: tuple(f(x, i) for f in fns.values()),
                  backend)(data, idx)
    assert_same(got, _numpy(numpy_at, data, idx), f"index {dt}")


@pytest.mark.parametrize("dt", ["int8", "uint8", "uint32"])
def test_loops_carry_narrow_ints(dt):
    x = extremes(dt, 8)

    def f(a):
        y = tj.fori_loop(0, 9, lambda i, c: c * np.array(3, dt) + np.array(1, dt), a)
        return tj.scan(lambda c, r: (c + r, c ^ r), a[0], a)[1], y

    expected = [x]
    c = x.copy()
    with np.errstate(all="ignore"):
        for _ in range(9):
            c = c * np.array(3, dt) + np.array(1, dt)
        acc, ys = x[0], []
        for r in x:
            ys.append(acc ^ r)
            acc = acc + r
    expected = (np.array(ys, dt), c)
    for backend in BACKENDS:
        assert_same(tj.jit(f, backend=backend)(x), expected, f"loops {dt} {backend}")


@pytest.mark.parametrize("dt", INTS)
def test_integer_inputs_are_not_differentiable(dt):
    w, k = np.array([0.5, -1.5, 2.0]), extremes(dt, 3)
    g = tj.grad(lambda w, k: np.sum(w * k))(w, k)
    assert_same(g, k.astype(np.float64), dt)
    with pytest.raises(tj.InputError, match=f"dtype {dt}"):
        tj.grad(lambda k: np.sum(k * 1.0))(k)


def test_ir_prints_narrow_dtypes():
    text = str(tj.jit(lambda a, b: (a + b) * np.uint8(3)).ir(np.ones(2, np.uint8),
                                                             np.ones(2, np.int8)))
    assert "a:u8[2] b:i8[2]" in text and ":i16[2] = convert" in text and "3:i16" in text


# leftovers found by the mutating fuzzer (seeds 761, 771) ------------------------------------

def test_bool_array_to_the_python_int_2_is_square():
    # ndarray.__pow__ makes x ** 2 np.square(x), int8 for booleans; np.power(b, 2) is int64
    b = np.array([True, False])
    for k in (2, 3):
        want = b ** k
        for got in (tj.trace(lambda x: x ** k)(b), tj.trace(lambda x, e: x ** e)(b, k)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    assert tj.trace(lambda x: np.power(x, 2))(b).dtype == np.power(b, 2).dtype


@pytest.mark.parametrize("write", ["setitem", "slice", "fill", "copyto"])
def test_out_of_range_python_int_argument_written_into_small_ints(write):
    def f(x, v):
        if write == "setitem":
            x[0] = v
        elif write == "slice":
            x[1:] = v
        elif write == "fill":
            x.fill(v)
        else:
            np.copyto(x, v)
        return x

    for v in (300, -1):
        x = np.zeros(3, np.uint8)
        with pytest.raises(OverflowError, match=f"Python integer {v} out of bounds for uint8"):
            f(x.copy(), v)
        with pytest.raises(OverflowError, match=f"Python integer {v} out of bounds for uint8"):
            tj.trace(f)(x, v)
    np.testing.assert_array_equal(tj.trace(f)(np.zeros(3, np.uint8), 200),
                                  f(np.zeros(3, np.uint8), 200))


def test_python_int_beyond_int64_argument():
    f = tj.trace(lambda x, k: x + k)
    x = np.array([1, 2], np.uint64)
    for k in (2**63, 2**64 - 3, 5):
        got = f(x, k)
        assert got.dtype == np.uint64
        np.testing.assert_array_equal(got, x + k)
    with pytest.raises(OverflowError):
        f(np.array([1], np.int64), 2**63)
