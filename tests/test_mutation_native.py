"""Functions that write into their arguments, called through the native entry (``pyabi``): random
mutating programs agree with NumPy on the returned values *and* the arguments' final contents,
on both backends, and the llvm calls after the second take the native entry (they no longer go
through ``Traced._python_call``: ``cache_info().hits`` stops counting). Arguments that cannot
take the write natively (read-only, overlapping another argument, not C-contiguous, a subclass)
go to the Python path, which writes them or raises exactly as before."""
import random

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.runtime import pyabi, pyabi_dispatch as pd

# Statements over the arguments a: f64[6], b: f64[3, 4], s: float (a Python float).
_STATEMENTS = [
    "a[{i}] = a[{j}] * s + 1.0",
    "a[{i}:{k}] += s",
    "b[{r}, :] = b[{q}, :] * 0.5",
    "b[:, {c}] -= a[{i}:{i} + 3]",
    "v = a[{i}:{k}]\n    v *= 2.0",
    "w = b[{r}]\n    b[{q}, {c}] = 7.0\n    a[{i}] += w.sum()",
    "a *= s",
    "b[b > 0.5] = 0.25",
    "a[:] = a[::-1]",
    "np.add(a, 1.0, out=a)",
    "a[{i}] = b.sum()",
    "b.T[{c}] += 1.0",
    "for t in range(2):\n        a[t + 1] += a[t] * 0.5",
    "b += a[:4]",
    "u = np.exp(a[{i}:{k}])",
]
_RETURNS = ["", "return a", "return a, b.sum()", "return b[{r}] * 2", "return (b,)",
            "return u.sum() if False else b", "return s * a[{j}]", "return a[{i}]"]


def _program(seed):
    """Source of a random mutating function ``f(a, b, s)`` (seeded)."""
    rnd = random.Random(seed)

    def fill(text):
        i = rnd.randrange(0, 3)
        return text.format(i=i, j=rnd.randrange(6), k=rnd.randrange(i + 1, 6),
                           r=rnd.randrange(3), q=rnd.randrange(3), c=rnd.randrange(4))
    body = [fill(rnd.choice(_STATEMENTS[:-1]))]           # (the last one writes nothing)
    body += [fill(rnd.choice(_STATEMENTS)) for _ in range(rnd.randrange(0, 4))]
    body.append(fill(rnd.choice(_RETURNS)))
    return "def f(a, b, s):\n    u = a\n    " + "\n    ".join(body) + "\n"


def _inputs(seed):
    r = np.random.default_rng(seed)
    return r.standard_normal(6), r.standard_normal((3, 4)), float(r.uniform(0.5, 2.0))


def _close(got, want, what):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for g, w in zip(got, want):
            _close(g, w, what)
        return
    if want is None:
        assert got is None, what
        return
    assert type(got) is type(want), (what, type(got), type(want))
    assert np.asarray(got).dtype == np.asarray(want).dtype, what
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13, err_msg=what)


def _run(fn, backend, seed, calls):
    """Calls ``trace(fn)`` ``calls`` times on fresh copies and compares with NumPy; returns
    the traced function."""
    g = tj.trace(fn, backend=backend)
    for call in range(calls):
        a, b, s = _inputs(seed + call)
        want_a, want_b = a.copy(), b.copy()
        want = fn(want_a, want_b, s)
        got = g(a, b, s)
        what = f"{backend} call {call}"
        _close(got, want, what + ": result")
        np.testing.assert_allclose(a, want_a, rtol=1e-13, atol=1e-13, err_msg=what + ": a")
        np.testing.assert_allclose(b, want_b, rtol=1e-13, atol=1e-13, err_msg=what + ": b")
        writes = g.lower(a, b, s).writes       # (an unwritten argument returned is a copy)
        written = [(w, x) for k, (w, x) in enumerate(((want_a, a), (want_b, b)))
                   if writes and k in writes.leaves]
        for w, x in written:
            if want is w:
                assert got is x, what + ": the caller's array"
    return g


def _native_calls(g, *args):
    """Whether a call of ``g`` took the native entry (it does not reach the Python path)."""
    hits = g.cache_info().hits
    g(*args)
    return g.cache_info().hits == hits


@pytest.mark.parametrize("seed", range(24))
def test_random_mutating_programs_match_numpy(seed):
    namespace = {"np": np}
    exec(_program(seed), namespace)
    fn = namespace["f"]
    _run(fn, "interpret", 100 * seed, calls=2)
    g = _run(fn, "llvm", 100 * seed, calls=4)
    assert g._tj_nspec == 1, _program(seed)
    assert _native_calls(g, *_inputs(seed)), _program(seed)


def add_first(x, v):
    x[0] += v


def scale(x, y):
    x *= 2.0
    y[1:] += x[:-1]
    return x, y.sum(), y


def test_call_path_is_native_and_returns_what_the_python_path_returns():
    g = tj.trace(add_first)
    x = np.zeros(4)
    assert g(x, 1.0) is None and g(x, 1.0) is None         # 2nd call builds the entry
    assert _native_calls(g, x, 1.0) and g(x, 2.0) is None
    np.testing.assert_array_equal(x, [5.0, 0, 0, 0])
    h = tj.trace(scale)
    for _ in range(2):
        h(np.ones(3), np.ones(3))
    x, y = np.ones(3), np.arange(3.0)
    assert _native_calls(h, x, y)
    r = h(x, y)
    assert r[0] is x and r[2] is y and type(r[1]) is np.float64
    np.testing.assert_array_equal(x, [4.0, 4, 4])
    np.testing.assert_array_equal(y, [0.0, 7, 8])
    assert r[1] == 15.0


def test_written_zero_d_argument_and_a_loop_copy_back():
    def inc(n, v):
        n += v
        return n

    def loop(x):
        def body(i, c):
            return c * 0.5 + i
        x[:] = tj.fori_loop(0, 3, body, x)

    g, h = tj.trace(inc), tj.trace(loop)
    for _ in range(2):
        g(np.array(1.0), 1.5)
        h(np.ones(70_000))           # an output over the reuse threshold (pyabi_reuse)
    n = np.array(1.0)
    assert _native_calls(g, n, 1.5) and g(n, 1.5) is n and n == 4.0
    for _ in range(3):
        x = np.linspace(0, 1, 70_000)
        want = x.copy()
        loop_ref = want
        for i in range(3):
            loop_ref = loop_ref * 0.5 + i
        assert _native_calls(h, x)
        np.testing.assert_allclose(x, loop_ref, rtol=1e-15)


def test_arguments_that_cannot_take_the_write_natively_go_to_the_python_path():
    g = tj.trace(scale)
    for _ in range(2):
        g(np.ones(3), np.ones(3))
    # the same array twice, overlapping views: NumPy's aliasing, on the Python path (more in
    # tests/test_aliasing.py)
    for pick in (lambda b: (b[:3], b[:3]), lambda b: (b[:3], b[2:5])):
        got, want = np.arange(6.0), np.arange(6.0)
        r, w = g(*pick(got)), scale(*pick(want))
        np.testing.assert_array_equal(got, want)
        assert r[1] == w[1] and r[0].base is got
    base = np.ones(6)
    r = g(base[:3], base[3:])                     # views of one buffer, apart: native
    np.testing.assert_array_equal(base, [2.0, 2, 2, 1, 3, 3])
    assert r[0].base is base and _native_calls(g, base[:3], base[3:])
    ro = np.ones(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        g(ro, np.ones(3))
    assert _native_calls(g, np.ones(3), np.ones(3))
    strided = np.ones(6)
    got = g(strided[::2], np.ones(3))             # not C-contiguous: the Python path writes it
    np.testing.assert_array_equal(strided, [2.0, 1, 2, 1, 2, 1])
    assert got[0].base is strided


def test_python_entry_matches_the_native_entry():
    g = tj.trace(scale)
    x, y = np.ones(3), np.arange(3.0)
    compiled = g.lower(x, y)
    spec = compiled.entry_spec(g._signature((x, y), {})[1])
    assert spec.writes and spec.aliases
    native = pd.FastDispatch(lambda *a: "fallback")
    native.add_specialization(compiled.executable.native_entry(spec), compiled)
    slow = type("PyJit", (pd.PyDispatch, pd.DispatchMethods), {})(lambda *a: "fallback")
    slow.add_specialization(pyabi.python_entry(compiled.executable.kernel_address, spec))
    results = []
    for f in (native, slow):
        x, y = np.ones(3), np.arange(3.0)
        r = f(x, y)
        assert r[0] is x and r[2] is y
        results.append((x, y, r[1]))
        assert f(x, x) == "fallback"
        ro = np.ones(3)
        ro.flags.writeable = False
        assert f(ro, y) == "fallback"
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# x[mask] = values with a traced mask: the k-th True position gets values[k] -------------------

def _with_count(rng, shape, count, dtype, full=False):
    """An array of ``shape`` with exactly ``count`` positive elements (``full``) or rows (its
    first column), the others negative."""
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    lead = x.reshape(-1) if full or x.ndim == 1 else x[:, 0]
    lead[:] = -np.abs(lead) - 1
    lead[rng.choice(lead.size, count, replace=False)] *= -1
    return x


def _set_masked(x, v):
    x[x > 0] = v
    return x.sum()


def _set_masked_rows(x, v):
    x[x[:, 0] > 0] = v


def _add_masked_rows(x, v):
    return x.at[x[:, 0] > 0].add(v)


def _add_masked_rows_numpy(x, v):
    y = x.copy()
    y[x[:, 0] > 0] += v
    return y


@pytest.mark.parametrize("backend", ["interpret", "llvm"])
@pytest.mark.parametrize("fn, shape, vshape, dtype", [
    (_set_masked, (9,), (4,), np.float64),
    (_set_masked, (9,), (4,), np.int32),
    (_set_masked, (3, 4), (4,), np.float32),
    (_set_masked, (9,), (1,), np.float64),
    (_set_masked_rows, (6, 3), (4, 3), np.float64),
    (_set_masked_rows, (6, 3), (4, 1), np.int64),
    (_set_masked_rows, (6, 3), (1, 3), np.float64),
    (_add_masked_rows, (6, 3), (4, 3), np.float64),
])
def test_mask_assignment_of_many_values_matches_numpy(backend, fn, shape, vshape, dtype):
    rng = np.random.default_rng(7)
    g = tj.trace(fn, backend=backend)
    count, full = vshape[0] if vshape[0] > 1 else 4, fn is _set_masked
    for _ in range(3):
        x = _with_count(rng, shape, count, dtype, full)
        v = (rng.standard_normal(vshape) * 10).astype(dtype)
        want_x = x.copy()
        want = (_add_masked_rows_numpy if fn is _add_masked_rows else fn)(want_x, v)
        got = g(x, v)
        np.testing.assert_array_equal(x, want_x)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6)
    if vshape[0] > 1:
        x = _with_count(rng, shape, count - 1, dtype, full)
        before = x.copy()
        with pytest.raises(ValueError, match="boolean array indexing assignment"):
            g(x, v)
        np.testing.assert_array_equal(x, before)        # NumPy raises before writing too


def test_mask_assignment_errors_that_do_not_depend_on_the_data():
    with pytest.raises(TypeError, match="0 or 1-dimensional input, input has 2"):
        tj.trace(_set_masked)(np.ones(4), np.ones((2, 2)))
    with pytest.raises(ValueError, match="shape mismatch"):
        tj.trace(_set_masked_rows)(np.ones((4, 3)), np.ones((2, 2, 3)))


def test_mask_assignment_derivatives_and_vmap():
    from tracejit.test_util import check_grads

    def f(x, v):
        y = x * 1.0
        y[x[:, 0] > 0] = v * y[:2]
        return y
    rng = np.random.default_rng(3)
    x, v = _with_count(rng, (5, 3), 2, np.float64), rng.standard_normal((2, 3))
    check_grads(f, (x, v), order=2, modes=("fwd", "rev"))
    xs = np.stack([_with_count(rng, (5, 3), 2, np.float64) for _ in range(4)])
    vs = rng.standard_normal((4, 2, 3))
    want = np.stack([f(a, b) for a, b in zip(xs, vs)])
    for backend in ("interpret", "llvm"):
        vf = tj.trace(tj.vmap(f), backend=backend)
        np.testing.assert_allclose(vf(xs, vs), want, rtol=1e-13)
        xs[1] = _with_count(rng, (5, 3), 3, np.float64)   # one example with 3 selected rows
        with pytest.raises(ValueError, match="boolean array indexing assignment"):
            vf(xs, vs)
        xs[1] = _with_count(rng, (5, 3), 2, np.float64)
        want[1] = f(xs[1], vs[1])


# loops that write an argument: in place when nothing can stop the call -----------------------

def _jacobi(A, B):
    def body(t, c):
        A, B = c
        B = B.copy()
        B[1:-1] = 0.33 * (A[:-2] + A[1:-1] + A[2:])
        A = A.copy()
        A[1:-1] = 0.33 * (B[:-2] + B[1:-1] + B[2:])
        return A, B
    A[:], B[:] = tj.fori_loop(0, 5, body, (A, B))


def _jacobi_numpy(A, B):
    for _ in range(5):
        B[1:-1] = 0.33 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33 * (B[:-2] + B[1:-1] + B[2:])


def _gathering_loop(x, i):
    x[:] = tj.fori_loop(0, 3, lambda k, c: c + c[i], x)    # a gather: its index is checked


def test_loops_write_arguments_in_place_when_nothing_can_stop_them(monkeypatch):
    from tracejit.backend.plan import inplace
    rng = np.random.default_rng(5)
    for backend in ("interpret", "llvm"):
        g = tj.trace(_jacobi, backend=backend)
        for _ in range(3):
            A, B = rng.standard_normal(12), rng.standard_normal(12)
            want_A, want_B = A.copy(), B.copy()
            _jacobi_numpy(want_A, want_B)
            assert g(A, B) is None
            np.testing.assert_allclose(A, want_A, rtol=1e-14)
            np.testing.assert_allclose(B, want_B, rtol=1e-14)
    assert _native_calls(g, A, B)
    assert dict(g.lower(A, B).executable._in_place_outs) == {0: 0, 1: 1}
    # a gather in the body can stop the call (IndexError): the loop works on a copy
    h = tj.trace(_gathering_loop)
    x = np.arange(4.0)
    h(x, 1)
    np.testing.assert_array_equal(x, [7.0, 8, 9, 10])      # c + c[1], three times
    assert h.lower(x, 1).executable._in_place_outs == ()
    # a long loop keeps its Ctrl-C polls, so it copies too
    monkeypatch.setattr(inplace, "ATOMIC_LOOP_ELEMENTS", 20)
    g = tj.trace(_jacobi)
    A, B = np.ones(12), np.zeros(12)
    g(A, B)
    assert g.lower(A, B).executable._in_place_outs == ()
