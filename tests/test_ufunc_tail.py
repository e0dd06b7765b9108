"""NumPy's remaining ufuncs on tracers (numpy/ufunc_tail.py): fmod, modf, divmod, gcd, lcm,
bitwise_count, bit for bit against NumPy on random operands of every integer and float dtype
(the extremes, zero divisors, INT_MIN, signed zeros, infinities and NaN included), both
backends; derivatives of fmod/modf/divmod against finite differences (order 2, both modes)."""
import warnings

import numpy as np
import pytest

import tracejit as tj
from tracejit.test_util import check_grads

BACKENDS = ["llvm", "interpret"]
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
FLOATS = [np.float16, np.float32, np.float64]
rng = np.random.default_rng(2026)


def _numpy(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def _same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        u = f"u{want.itemsize}"
        ok = (got.view(u) == want.view(u)) | (np.isnan(got) & np.isnan(want))
    else:
        ok = got == want
    assert ok.all(), (what, got[~ok][:4], want[~ok][:4])


def _ints(dt, n=400):
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    b[: n // 3] %= 50                                   # small divisors: nontrivial gcds
    a[-40:] = info.max
    b[-40:] = info.max - rng.integers(0, 5, 40).astype(dt)
    a[:5] = [info.min, 0, info.max, info.min, 7]
    b[:5] = [0, 0, info.min, (-1 if info.min else 0), 0]
    return a, b


def _floats(dt, n=400):
    a = (rng.standard_normal(n) * 10).astype(dt)
    b = (rng.standard_normal(n) * 3).astype(dt)
    a[:8] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 5, -6, 1e-3]
    b[:8] = [1, 0, 1, 2, -2, np.inf, -np.inf, 0]
    return a, b


INT_FNS = {"fmod": np.fmod, "gcd": np.gcd, "lcm": np.lcm, "bitwise_count": lambda x, y:
           np.bitwise_count(x), "divmod": np.divmod, "modf": lambda x, y: np.modf(x)}
FLOAT_FNS = {"fmod": np.fmod, "divmod": np.divmod, "modf": lambda x, y: np.modf(x)}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS + FLOATS, ids=lambda d: np.dtype(d).name)
def test_against_numpy(backend, dt):
    ints = np.dtype(dt).kind in "iu"
    a, b = _ints(dt) if ints else _floats(dt)
    fns = INT_FNS if ints else FLOAT_FNS
    if ints and np.dtype(dt).itemsize > 2:
        fns = {k: v for k, v in fns.items() if k != "modf"}     # float64 results: tested above
    got = tj.jit(lambda x, y: tuple(f(x, y) for f in fns.values()), backend=backend)(a, b)
    for (name, fn), g in zip(fns.items(), got):
        want = _numpy(fn, a, b)
        for k, (gp, wp) in enumerate(zip(g, want) if isinstance(want, tuple) else [(g, want)]):
            _same(gp, wp, f"{name}[{k}] {np.dtype(dt).name}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_operand_kinds(backend):
    """Bools go to int8 (modf: float16), Python scalars are weak, mixed widths promote; the
    integer-only ufuncs refuse floats as NumPy does."""
    b = np.array([True, False, True])
    i = np.array([12, -18, 7], np.int16)
    cases = [lambda p, q: np.fmod(p, p), lambda p, q: np.gcd(q, 8),
             lambda p, q: np.lcm(q, np.int8(6)), lambda p, q: np.modf(p),
             lambda p, q: np.fmod(q, 5), lambda p, q: np.fmod(2.5, q),
             lambda p, q: np.bitwise_count(p), lambda p, q: np.divmod(q, 4)]
    for k, case in enumerate(cases):
        got, want = tj.jit(case, backend=backend)(b, i), _numpy(case, b, i)
        for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
            _same(g, w, k)
    for fn in (np.gcd, np.lcm):
        with pytest.raises(TypeError):
            tj.jit(fn, backend=backend)(np.ones(2), np.ones(2))


def test_derivatives():
    x = np.array([5.3, -2.7, 7.9, -0.4])
    y = np.array([2.1, 1.3, -3.3, 0.9])
    check_grads(np.fmod, (x, y), order=2, modes=("fwd", "rev"))
    check_grads(lambda a, b: np.divmod(a, b)[1] * np.divmod(a, b)[0], (x, y), order=2,
                modes=("fwd", "rev"))
    check_grads(lambda a: np.modf(a)[0] * np.modf(a)[1] + np.modf(a)[0] ** 2, (x,), order=2,
                modes=("fwd", "rev"))
    g = tj.grad(lambda a, b: np.sum(np.fmod(a, b)), argnums=1)(x, y)
    np.testing.assert_allclose(g, -np.trunc(x / y))
