"""Shared helpers of the NumPy-surface tests: traced-vs-NumPy comparison, value samplers,
hypothesis strategies for shapes and dtypes, and a module-level cache of traced functions.

Every comparison checks dtype, shape and values. Tolerances: exact for bool/int results and for
structural ops; float results may differ by a few ulps (``ULPS``) because some functions are
composites whose rounding order differs from NumPy's C loops.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracejit


F = ("float32", "float64")
C = ("complex64", "complex128")
FC = F + C
I = ("int32", "int64")
B = ("bool",)
ALL = B + I + FC

# ---------------------------------------------------------------------------------------------
# traced-function cache: one Traced per key, so repeated signatures do not retrace

_TRACED: dict = {}


def traced(key, fn, **kw):
    """The ``tracejit.trace`` of ``fn``, cached under ``key`` for the whole session."""
    t = _TRACED.get(key)
    if t is None:
        t = _TRACED[key] = tracejit.trace(fn, **kw)
    return t


# ---------------------------------------------------------------------------------------------
# comparison

def _eps(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        dt = np.dtype(np.float32) if dt == np.complex64 else np.dtype(np.float64)
    return float(np.finfo(dt).eps) if dt.kind == "f" else 0.0


def assert_same(got, expected, *, ulps=0, atol=0.0, what=""):
    """``got`` equals NumPy's ``expected``: same type structure, dtype, shape, values.

    ``ulps``: allowed relative error in units of the dtype's epsilon (0 = exact; NaNs must match
    NaNs, and for exact comparisons signed zeros are not distinguished).
    """
    if isinstance(expected, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(expected), \
            f"{what}: got {type(got).__name__} of {len(got)}, expected {len(expected)}"
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, ulps=ulps, atol=atol, what=f"{what}[{k}]")
        return
    expected = np.asarray(expected)
    got_arr = np.asarray(got)
    if expected.dtype.kind == "c" and ulps == 0:
        # NumPy's own complex loops (SIMD with FMA vs scalar, chosen by layout and casting)
        # differ by an ulp of |z|; complex results are compared to 2 ulps of the modulus
        ulps = 2
    assert got_arr.dtype == expected.dtype, \
        f"{what}: dtype {got_arr.dtype}, NumPy gives {expected.dtype}"
    assert got_arr.shape == expected.shape, \
        f"{what}: shape {got_arr.shape}, NumPy gives {expected.shape}"
    if expected.dtype.kind in "biu" or (ulps == 0 and atol == 0):
        if expected.dtype.kind in "fc":
            ok = np.array_equal(got_arr, expected, equal_nan=True)
        else:
            ok = np.array_equal(got_arr, expected)
        if not ok:
            bad = _first_bad(got_arr, expected)
            raise AssertionError(f"{what}: values differ (exact), e.g. at {bad}: got "
                                 f"{got_arr[bad]!r}, NumPy {expected[bad]!r}")
        return
    rtol = ulps * _eps(expected.dtype)
    if expected.dtype.kind == "c":
        finite = np.isfinite(expected)
        assert np.array_equal(got_arr[~finite], expected[~finite], equal_nan=True), \
            f"{what}: non-finite values differ: {got_arr[~finite]} vs {expected[~finite]}"
        with np.errstate(all="ignore"):
            err = np.abs(got_arr[finite] - expected[finite])
            bound = rtol * np.abs(expected[finite]) + atol
        assert np.all(err <= bound), f"{what}: complex values differ by more than {ulps} ulps" \
            f" of |z|: got {got_arr[finite][err > bound][:3]}, " \
            f"NumPy {expected[finite][err > bound][:3]}"
        return
    for part in ((np.real, np.imag) if expected.dtype.kind == "c" else (lambda a: a,)):
        g, e = part(got_arr), part(expected)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=what)


def _first_bad(got, expected):
    with np.errstate(all="ignore"):
        neq = ~((got == expected) | ((got != got) & (expected != expected)))
    idx = np.argwhere(np.atleast_1d(neq))
    if got.ndim == 0:
        return ()
    return tuple(int(i) for i in idx[0]) if len(idx) else ()


def numpy_result(fn, *args):
    """``fn(*args)`` on NumPy (warnings off), or the exception it raises."""
    with np.errstate(all="ignore"):
        return fn(*args)


def check(key, fn, *args, npfn=None, ulps=0, atol=0.0, others=(), static_argnums=()):
    """Trace ``fn`` (cached under ``key``) and compare with NumPy on ``args``; then, for each
    argument tuple in ``others`` (same shapes and dtypes, other values), check the cached trace
    is reused (no retrace) and still right — the result was traced, not constant-folded."""
    npfn = npfn or fn
    t = traced(key, fn, static_argnums=static_argnums)
    try:
        expected = numpy_result(npfn, *args)
    except Exception as e:  # noqa: BLE001 - where NumPy raises, tracejit raises the same kind
        try:
            t(*args)
        except type(e):
            return None
        raise AssertionError(f"{key}: NumPy raises {type(e).__name__}: {e}; tracejit does not")
    got = t(*args)
    assert_same(got, expected, ulps=ulps, atol=atol, what=str(key))
    traces = t.cache_info().traces
    for other in others:
        got2 = t(*other)
        assert t.cache_info().traces == traces, f"{key}: retraced for same-signature arguments"
        assert_same(got2, numpy_result(npfn, *other), ulps=ulps, atol=atol,
                    what=f"{key} (second call)")
    return got


# ---------------------------------------------------------------------------------------------
# value samplers by domain: sampler(rng, shape, dtype) -> ndarray

SPECIAL = {"f": [0.0, -0.0, np.inf, -np.inf, np.nan]}


def _real_values(rng, shape, lo, hi, dtype, specials=(), integer_ok=True):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind == "i":
        lo_i, hi_i = int(np.ceil(lo)), int(np.floor(hi))
        return rng.integers(lo_i, hi_i + 1, size=shape).astype(dt)
    real_dt = np.float32 if dt in (np.complex64, np.float32) else np.float64
    x = rng.uniform(lo, hi, size=shape).astype(real_dt)
    if specials and x.size:
        mask = rng.random(shape) < 0.15
        x = np.where(mask, rng.choice(np.asarray(specials, real_dt), size=shape), x)
    if dt.kind == "c":
        y = rng.uniform(lo, hi, size=shape).astype(real_dt)
        x = (x + 1j * y).astype(dt)
    return np.asarray(x, dtype=dt)


def domain(lo, hi, specials=()):
    """Values uniform in [lo, hi] (complex: both parts), with some ``specials`` mixed in."""
    def sample(rng, shape, dtype):
        return _real_values(rng, shape, lo, hi, dtype, specials)
    return sample


REAL = domain(-5, 5, (0.0, -0.0, np.inf, -np.inf, np.nan))
SMALL = domain(-3, 3, (0.0, -0.0, np.nan))
POS = domain(0.01, 10, (np.inf, np.nan))
UNIT = domain(-1, 1, (0.0, -0.0, 1.0, -1.0, np.nan))
GE1 = domain(1, 10, (1.0, np.inf, np.nan))
NONZERO = domain(0.5, 5, (np.inf,))
INTS = domain(-20, 20)
ANY = domain(-1e3, 1e3, (0.0, -0.0, np.inf, -np.inf, np.nan))


def sample(rng, shape, dtype, dom=REAL):
    return dom(rng, tuple(shape), dtype)


# ---------------------------------------------------------------------------------------------
# hypothesis strategies

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)
seeds = st.integers(0, 2**32 - 1)


def broadcast_pair(max_dims=3):
    """Two mutually broadcastable shapes (size-0 and size-1 dims included)."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                             min_side=0, max_side=4).map(lambda r: r.input_shapes)
