"""Reuse of dead output arrays by the native entries (``backend/runtime/pyabi_reuse.py``).

An entry hands out a cached output again only when nothing but its cache refers to it and it is
unchanged; these tests check that no Python code can tell: values are those of fresh arrays,
arrays the user still holds (directly, through views, buffers or weak references) are never
overwritten, arrays changed in place are never handed out again, and the cache survives
kernel errors, threads and table eviction without leaks. Structural checks use refcounts and
data addresses (never timings). Outputs here are at least ``REUSE_MIN_BYTES``, unless a test
says otherwise.
"""
import gc
import sys
import threading
import weakref

import numpy as np
import pytest
from llvmlite import ir

import tracejit as tj
from tracejit.backend.engine import jit
from tracejit.backend.runtime import pyabi, pyabi_reuse, pyobj
from tracejit.backend.runtime import pyabi_dispatch as pd

N = 20_000                     # 160 KB of f64, 80 KB of f32: above REUSE_MIN_BYTES
i32, i64, f64, ptr = ir.IntType(32), ir.IntType(64), ir.DoubleType(), ir.PointerType()

pytestmark = pytest.mark.skipif(not pyobj.NATIVE_OK, reason="native entries disabled")


def rng(seed):
    return np.random.default_rng(seed)


def warm(f, *args):
    """Call twice: the first call compiles, the second builds the native entry (later calls
    go through it)."""
    f(*args)
    f(*args)


def close(a, b):
    """Equal up to the last bits of the vector math library vs NumPy's libm."""
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


def cached_refcount(r):
    """References to ``r`` outside this helper: for a result bound to one name, 2 when the
    entry's cache holds it too, 1 when not."""
    return sys.getrefcount(r) - 2       # minus this frame's parameter and getrefcount's own


@pytest.fixture(autouse=True)
def reuse_on():
    """Every test here starts with reuse on (whatever TRACEJIT_REUSE_OUTPUTS says)."""
    saved = tj.config.reuse_outputs
    tj.config.reuse_outputs = True
    yield
    tj.config.reuse_outputs = saved


@pytest.fixture
def reuse_off(reuse_on):
    """Turn reuse off for the body of a test (restored afterwards)."""
    pyabi_reuse.set_reuse_outputs(False)
    yield
    pyabi_reuse.set_reuse_outputs(True)


def expr(x, y):
    return np.tanh(x) * np.exp(-0.5 * y * y) + x * y / (1 + x * x)


# ---------------------------------------------------------------------------------------------
# Structure: reuse happens, only for large outputs, and can be turned off

def test_discarded_results_come_back_at_the_same_address():
    f = tj.trace(lambda x: np.sin(x) * 2.0)
    x = rng(0).standard_normal(N)
    warm(f, x)
    r = f(x)
    assert cached_refcount(r) == 2           # the caller's name and the entry's cache
    addr = r.ctypes.data
    del r
    blocker = np.empty_like(x)               # would take the freed block if there were no cache
    for _ in range(5):
        r = f(x)
        assert r.ctypes.data == addr and blocker.ctypes.data != addr
        close(r, np.sin(x) * 2.0)
        del r


def test_small_outputs_are_not_cached():
    f = tj.trace(lambda x: x * 2.0 + 1.0)
    x = np.arange(100.0)
    warm(f, x)
    r = f(x)
    assert cached_refcount(r) == 1
    assert pyabi_reuse.cached_outputs(pyabi.EntrySpec(
        inputs=(), outputs=(("float64", (100,)), ("float64", (N,)), ("float64", ())),
        return_tuple=True).normalized()) == [1]


def test_reuse_can_be_turned_off(reuse_off):
    f = tj.trace(lambda x: x * 2.0)
    x = np.arange(float(N))
    warm(f, x)
    r = f(x)
    assert cached_refcount(r) == 1
    np.testing.assert_array_equal(r, x * 2.0)


def test_config_switch():
    f = tj.trace(lambda x: x * 3.0)
    x = np.arange(float(N))
    warm(f, x)
    try:
        tj.config.reuse_outputs = False
        assert cached_refcount(f(x)) == 1
    finally:
        tj.config.reuse_outputs = True
    r = f(x)
    assert cached_refcount(r) == 2


# ---------------------------------------------------------------------------------------------
# Values: identical to fresh allocation; results the user holds are never touched

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_values_as_fresh_outputs(dtype):
    f = tj.trace(expr)
    xs = [rng(k).standard_normal(N).astype(dtype) for k in range(12)]
    pyabi_reuse.set_reuse_outputs(False)
    try:
        fresh = [f(xs[k], xs[k + 1]) for k in range(11)]
    finally:
        pyabi_reuse.set_reuse_outputs(True)
    for _ in range(3):                        # discarding: every call after the first reuses
        for k in range(11):
            r = f(xs[k], xs[k + 1])
            assert r.dtype == np.dtype(dtype) and r.shape == (N,)
            np.testing.assert_array_equal(r, fresh[k])


def test_held_result_is_never_overwritten():
    f = tj.trace(lambda x: np.cos(x) + x)
    x1, x2 = rng(1).standard_normal(N), rng(2).standard_normal(N)
    warm(f, x1)
    held = f(x1)
    copy = held.copy()
    for _ in range(5):
        other = f(x2)
        assert not np.shares_memory(other, held)
        close(other, np.cos(x2) + x2)
        del other
    np.testing.assert_array_equal(held, copy)


@pytest.mark.parametrize("keep", ["slice", "asarray", "memoryview", "ctypes", "weakref",
                                  "list", "tuple_result"])
def test_references_keep_a_result_alive_and_unmodified(keep):
    f = tj.trace(lambda x: x * 2.0 - 1.0)
    x1, x2 = rng(3).standard_normal(N), rng(4).standard_normal(N)
    warm(f, x1)
    r = f(x1)
    expect = x1 * 2.0 - 1.0
    holder = {"slice": lambda: r[::2], "asarray": lambda: np.asarray(r),
              "memoryview": lambda: memoryview(r), "ctypes": lambda: np.ctypeslib.as_ctypes(r),
              "weakref": lambda: weakref.ref(r), "list": lambda: [r],
              "tuple_result": lambda: (r,)}[keep]()
    addr = r.ctypes.data
    del r
    for _ in range(4):
        out = f(x2)
        assert out.ctypes.data != addr
        np.testing.assert_array_equal(out, x2 * 2.0 - 1.0)
        del out
    if keep == "slice":
        np.testing.assert_array_equal(holder, expect[::2])
    elif keep == "weakref":
        alive = holder()                     # the cache may keep it alive, but unchanged
        if alive is not None:
            np.testing.assert_array_equal(alive, expect)
    elif keep == "ctypes":
        np.testing.assert_array_equal(np.ctypeslib.as_array(holder), expect)
    elif keep in ("list", "tuple_result"):
        np.testing.assert_array_equal(holder[0], expect)
    else:
        np.testing.assert_array_equal(np.asarray(holder), expect)


@pytest.mark.filterwarnings("ignore:Setting the strides:DeprecationWarning")
@pytest.mark.parametrize("change", ["shape", "resize", "strides", "dtype", "readonly"])
def test_result_changed_in_place_is_not_reused(change):
    f = tj.trace(lambda x: x + 1.0)
    x = np.arange(float(N))
    warm(f, x)
    for _ in range(3):
        r = f(x)
        if change == "shape":
            r.shape = (N // 4, 4)
        elif change == "resize":
            r.resize((N // 2,), refcheck=False)
        elif change == "strides":
            r.strides = (0,)
        elif change == "dtype":
            r.dtype = np.int64
        else:
            r.flags.writeable = False
        del r
        out = f(x)
        assert type(out) is np.ndarray and out.shape == (N,) and out.dtype == np.float64
        assert out.strides == (8,) and out.flags.writeable and out.flags.owndata
        np.testing.assert_array_equal(out, x + 1.0)
        del out


def test_multiple_outputs():
    f = tj.trace(lambda x, y: (x * y, np.sin(x), x.sum(), y[:10] * 2.0))
    x, y = rng(5).standard_normal(N), rng(6).standard_normal(N)
    warm(f, x, y)
    a, b, s, small = f(x, y)
    addr_a, addr_b = a.ctypes.data, b.ctypes.data
    del a
    for _ in range(3):                        # b held: only a's slot is free
        a2, b2, s2, small2 = f(x, y)
        assert a2.ctypes.data == addr_a and b2.ctypes.data != addr_b
        np.testing.assert_array_equal(a2, x * y)
        close(b2, np.sin(x))
        assert type(s2) is np.float64 and cached_refcount(small2) == 1
        del a2, b2, s2, small2
    close(b, np.sin(x))


def test_outputs_that_alias_inputs_constants_or_each_other():
    c = np.linspace(0, 1, N)

    def g(x, y):
        z = x * 2.0
        return x, z, z, c, x[::-1], y.reshape(100, -1).T

    f = tj.trace(g)
    x, y = rng(7).standard_normal(N), rng(8).standard_normal(N)
    warm(f, x, y)
    for k in range(4):
        outs = f(x, y)
        for o in outs:
            o[...] = np.nan                  # poison: the next call must rewrite everything
        del o, outs
        outs = f(x, y)
        for got, want in zip(outs, (x, x * 2.0, x * 2.0, c, x[::-1], y.reshape(100, -1).T)):
            np.testing.assert_array_equal(got, want)
        assert outs[1] is not outs[2] and not np.shares_memory(outs[0], x)
        del outs


def test_loop_rebinding_the_result():
    def step(w):
        return w - 0.1 * np.sin(w) * np.cos(w) + 0.01 * w * w

    f = tj.trace(step)
    w0 = rng(9).standard_normal(N) * 0.1
    pyabi_reuse.set_reuse_outputs(False)
    try:
        fresh = tj.trace(step)
        ref = w0
        for _ in range(30):
            ref = fresh(ref)
    finally:
        pyabi_reuse.set_reuse_outputs(True)
    w, addrs = w0, set()
    for _ in range(30):
        w = f(w)
        addrs.add(w.ctypes.data)
    np.testing.assert_array_equal(w, ref)
    assert len(addrs) <= 4                    # two alternating arrays after the warm-up calls


@pytest.mark.parametrize("via", ["grad", "trace_of_grad"])
def test_gradients(via):
    def loss(x, y):
        return np.sum(expr(x, y))

    g = tj.grad(loss, argnums=(0, 1))
    g = tj.trace(g) if via == "trace_of_grad" else g
    # (tj.grad(loss) again would be g itself, sharing its outputs: the reference is another)
    other = tj.grad(lambda a, b: loss(a, b), argnums=(0, 1))
    x, y = rng(10).standard_normal(N), rng(11).standard_normal(N)
    ref = other(x, y)
    warm(g, x, y)
    gx, gy = g(x, y)
    addrs = (gx.ctypes.data, gy.ctypes.data)
    held = gy
    del gx, gy
    for k in range(4):
        xk, yk = rng(20 + k).standard_normal(N), rng(30 + k).standard_normal(N)
        gx, gy = g(xk, yk)
        assert gx.ctypes.data == addrs[0] and gy.ctypes.data != addrs[1]
        want = other(xk, yk)
        np.testing.assert_allclose(gx, want[0], rtol=1e-12)
        np.testing.assert_allclose(gy, want[1], rtol=1e-12)
        del gx, gy
    np.testing.assert_allclose(held, ref[1], rtol=1e-12)


def test_kernel_errors_leave_the_cache_sound():
    f = tj.trace(lambda x, i: np.exp(x)[i] * 2.0)
    x = np.linspace(-1, 1, 100)
    good = np.arange(N) % 100
    bad = good.copy()
    bad[-1] = 100
    warm(f, x, good)
    rx, ri = sys.getrefcount(x), sys.getrefcount(good)
    held = f(x, good)
    for _ in range(50):
        with pytest.raises(IndexError):
            f(x, bad)
        r = f(x, good)
        np.testing.assert_array_equal(r, held)
        assert not np.shares_memory(r, held)
        del r
    close(held, np.exp(x)[good] * 2.0)
    assert (sys.getrefcount(x), sys.getrefcount(good)) == (rx, ri)
    assert cached_refcount(held) == 2


# ---------------------------------------------------------------------------------------------
# The cache and the dispatch table: hand-written kernel, out = x*y + 1 over f64[n]

def fma_entry(n, fail_when_negative=False):
    """(entry address, spec) of out = x*y + 1; optionally returns 5 if x[0] < 0 (after
    writing the output)."""
    m = ir.Module("reuse_kern")
    fn = ir.Function(m, ir.FunctionType(i32, [ptr]), jit.unique_name("kern"))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    x, y, out = (b.load(b.gep(fn.args[0], [ir.Constant(i64, k)], source_etype=ptr), typ=ptr)
                 for k in range(3))
    pre, loop, done = b.block, fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.branch(loop)
    b = ir.IRBuilder(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), pre)
    xv = b.load(b.gep(x, [i], source_etype=f64), typ=f64)
    yv = b.load(b.gep(y, [i], source_etype=f64), typ=f64)
    b.store(b.fadd(b.fmul(xv, yv), ir.Constant(f64, 1.0)), b.gep(out, [i], source_etype=f64))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, ir.Constant(i64, n)), loop, done)
    b = ir.IRBuilder(done)
    code = ir.Constant(i32, 0)
    if fail_when_negative:
        neg = b.fcmp_ordered("<", b.load(x, typ=f64), ir.Constant(f64, 0.0))
        code = b.select(neg, ir.Constant(i32, 5), code)
    b.ret(code)

    def on_error(code):
        raise ValueError(f"negative input (code {code})")

    leaf = ("array", "float64", (n,))
    spec = pyabi.EntrySpec(inputs=(leaf, leaf), outputs=(("float64", (n,)),),
                           release_gil=True, on_error=on_error)
    return pyabi.build_entry(m, fn, spec), spec


def dispatch(n, **kw):
    entry, spec = fma_entry(n, **kw)
    f = pd.FastDispatch(lambda *a: "fallback")
    f.add_specialization(entry, spec)
    return f


def test_cache_length_is_registered():
    entry, spec = fma_entry(N)
    assert pyabi_reuse.cache_length(entry) == pyabi_reuse.reuse_slots(spec) == \
        pyabi_reuse.REUSE_SLOTS
    small, _ = fma_entry(10)
    assert pyabi_reuse.cache_length(small) == 0


def test_clear_evict_and_dealloc_release_cached_arrays():
    x = np.arange(float(N))
    f = dispatch(N)
    r = f(x, x)
    assert cached_refcount(r) == 2
    f.clear_specializations()
    assert cached_refcount(r) == 1

    f = dispatch(N)
    r = f(x, x)
    for k in range(pd.MAX_SPECIALIZATIONS):  # push the first entry out of the table
        entry, spec = fma_entry(N + 1 + k)
        f.add_specialization(entry, spec)
    assert cached_refcount(r) == 1 and f(x, x) == "fallback"

    f = dispatch(N)
    r = f(x, x)
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None and cached_refcount(r) == 1


def test_kernel_error_with_reused_output():
    f = dispatch(N, fail_when_negative=True)
    x, y = np.arange(1.0, N + 1.0), np.full(N, 0.5)
    f(x, y)                                   # cached, then dead
    for _ in range(100):
        with pytest.raises(ValueError, match="code 5"):
            f(-x, y)
        r = f(x, y)
        np.testing.assert_array_equal(r, x * y + 1)
        assert cached_refcount(r) == 2
        del r


def test_threads_calling_one_function():
    n = 100_000                               # release_gil: kernels of threads overlap
    f = dispatch(n)
    y = np.full(n, 0.5)
    errors, kept = [], []

    def work(seed):
        x = np.random.default_rng(seed).standard_normal(n)
        want = x * y + 1
        for k in range(40):
            r = f(x, y)
            if not np.array_equal(r, want):
                errors.append(seed)
            if k % 7 == 0:
                kept.append((r, want))        # held: must never change afterwards

    ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors
    for r, want in kept:
        np.testing.assert_array_equal(r, want)
    assert len({id(r) for r, _ in kept}) == len(kept)
