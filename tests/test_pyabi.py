"""Tests of the CPython-ABI entry points (pyabi) and the native dispatch type (pyabi_dispatch).

The "compiled graph" is a small hand-written kernel: ``out = x*y + 1`` elementwise (``x & y``
for bool), with scalar inputs broadcast from their stack slot.
"""
import gc
import sys
import threading
import tracemalloc

import numpy as np
import pytest
from llvmlite import ir

from tracejit.backend.engine import jit
from tracejit.backend.runtime import pyabi, pyobj
from tracejit.backend.runtime import pyabi_dispatch as pd

i32, i64, ptr = ir.IntType(32), ir.IntType(64), ir.PointerType()
f32, f64 = ir.FloatType(), ir.DoubleType()
DTYPES = ["float32", "float64", "complex64", "complex128", "int32", "int64", "bool"]


def _elem_type(dt):
    dt = np.dtype(dt)
    if dt.kind == "c":
        return f32 if dt.itemsize == 8 else f64
    if dt.kind == "f":
        return {4: f32, 8: f64}[dt.itemsize]
    return ir.IntType(8 * dt.itemsize)


def fma_kernel(dtype, size, scalar=(False, False), n_out=1, fail_code=0):
    """``i32 kern(ptr bufs)``: each output = x*y + 1 (x & y for bool); inputs flagged in
    ``scalar`` are read at index 0. Returns ``fail_code`` (after computing) if nonzero."""
    dt = np.dtype(dtype)
    el = _elem_type(dt)
    cplx = dt.kind == "c"
    m = ir.Module("kern")
    fn = ir.Function(m, ir.FunctionType(i32, [ptr]), jit.unique_name("kern"))
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    bufs = [b.load(b.gep(fn.args[0], [ir.Constant(i64, k)], source_etype=ptr), typ=ptr)
            for k in range(2 + n_out)]
    pre = b.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.cbranch(b.icmp_signed(">", ir.Constant(i64, size), ir.Constant(i64, 0)), loop, done)
    b = ir.IRBuilder(loop)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), pre)
    lanes = 2 if cplx else 1

    def load(k, lane):
        idx = ir.Constant(i64, lane) if scalar[k] else b.add(b.mul(i, ir.Constant(i64, lanes)),
                                                              ir.Constant(i64, lane))
        return b.load(b.gep(bufs[k], [idx], source_etype=el), typ=el)

    if cplx:
        xr, xi, yr, yi = load(0, 0), load(0, 1), load(1, 0), load(1, 1)
        re = b.fadd(b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)), ir.Constant(el, 1.0))
        im = b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))
        vals = [re, im]
    elif dt.kind == "f":
        vals = [b.fadd(b.fmul(load(0, 0), load(1, 0)), ir.Constant(el, 1.0))]
    elif dt.kind == "b":
        vals = [b.and_(load(0, 0), load(1, 0))]
    else:
        vals = [b.add(b.mul(load(0, 0), load(1, 0)), ir.Constant(el, 1))]
    for k in range(n_out):
        for lane, v in enumerate(vals):
            idx = b.add(b.mul(i, ir.Constant(i64, lanes)), ir.Constant(i64, lane))
            b.store(v, b.gep(bufs[2 + k], [idx], source_etype=el))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, ir.Constant(i64, size)), loop, done)
    ir.IRBuilder(done).ret(ir.Constant(i32, fail_code))
    return m, fn


def assert_same(out, ref):
    """Exact, except complex products (NumPy's complex multiply may fuse or reorder)."""
    ref = np.asarray(ref)
    if ref.dtype.kind == "c":
        np.testing.assert_allclose(out, ref, rtol=1e-6 if ref.dtype.itemsize == 8 else 1e-14)
    else:
        np.testing.assert_array_equal(out, ref)


def reference(dtype, x, y):
    if np.dtype(dtype).kind == "b":
        return np.asarray(np.logical_and(x, y))
    return np.asarray(np.asarray(x, dtype) * np.asarray(y, dtype) + np.asarray(1, dtype))


class Recorder:
    """A fallback that records its calls and returns a marker."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "fallback"


def make(spec, kernel, fallback=None):
    """Compile ``kernel`` with an entry for ``spec``; return (dispatch object, fallback)."""
    m, fn = kernel
    entry = pyabi.build_entry(m, fn, spec)
    fb = fallback or Recorder()
    f = pd.FastDispatch(fb)
    f.add_specialization(entry, spec)
    return f, fb


def arr_spec(dtype, shape, n_out=1, **kw):
    leaf = ("array", np.dtype(dtype), shape)
    outs = tuple((np.dtype(dtype), shape) for _ in range(n_out))
    return pyabi.EntrySpec(inputs=(leaf, leaf), outputs=outs, return_tuple=n_out != 1, **kw)


def sample(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        v = rng.random(shape) < 0.5
    elif dt.kind == "c":
        v = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    elif dt.kind == "i":
        v = rng.integers(-1000, 1000, shape)
    else:
        v = rng.standard_normal(shape)
    return np.asarray(v, dtype=dt)       # an ndarray even for shape ()


def test_native_path_enabled():
    assert pyobj.NATIVE_OK, pyobj.NATIVE_DISABLED_REASON


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (2, 3), (), (0,), (3, 0, 2)])
def test_arrays_every_dtype_and_shape(dtype, shape):
    f, fb = make(arr_spec(dtype, shape), fma_kernel(dtype, int(np.prod(shape))))
    x, y = sample(dtype, shape, 1), sample(dtype, shape, 2)
    out = f(x, y)
    ref = reference(dtype, x, y)
    if shape == ():
        assert isinstance(out, np.generic) and out.dtype == np.dtype(dtype)
        assert_same(out, ref)
    else:
        assert type(out) is np.ndarray and out.dtype == np.dtype(dtype) and out.shape == shape
        assert out.flags.c_contiguous and out.flags.writeable and out.base is None
        assert_same(out, ref)
    assert fb.calls == []


def test_zero_d_as_array_when_asked():
    f, _ = make(arr_spec("float64", (), scalar_0d=False), fma_kernel("float64", 1))
    out = f(np.array(2.0), np.array(3.0))
    assert type(out) is np.ndarray and out.shape == () and out[()] == 7.0


@pytest.mark.parametrize("pytype,value,dtype", [
    (float, 2.5, "float64"), (float, 2.5, "float32"), (float, -1.5, "complex128"),
    (int, -7, "int64"), (int, 123, "int32"), (int, 3, "float64"),
    (complex, 1.5 - 2j, "complex128"), (complex, 0.5 + 1j, "complex64"),
    (bool, True, "bool"), (bool, True, "float64"), (bool, False, "int64"),
])
def test_scalar_argument(pytype, value, dtype):
    spec = pyabi.EntrySpec(inputs=(("array", dtype, (5,)), ("pyscalar", pytype, dtype)),
                           outputs=((dtype, (5,)),))
    f, fb = make(spec, fma_kernel(dtype, 5, scalar=(False, True)))
    x = sample(dtype, (5,), 3)
    assert_same(f(x, value), reference(dtype, x, np.asarray(value, dtype)))
    assert fb.calls == []


def test_two_float_scalars_give_numpy_scalar():
    spec = pyabi.EntrySpec(inputs=(("pyscalar", float, "float64"),) * 2,
                           outputs=(("float64", ()),))
    f, fb = make(spec, fma_kernel("float64", 1, scalar=(True, True)))
    out = f(1.5, 2.5)
    assert type(out) is np.float64 and out == 1.5 * 2.5 + 1.0
    assert f(np.float64(1.5), 2.5) == "fallback"          # a float subclass is not exact
    assert f(1, 2.5) == "fallback" and f(True, 2.5) == "fallback"


@pytest.mark.parametrize("value", [2 ** 31, -(2 ** 31) - 1, 2 ** 63, -(2 ** 64), True])
def test_int_out_of_range_goes_to_fallback(value):
    spec = pyabi.EntrySpec(inputs=(("array", "int32", (2,)), ("pyscalar", int, "int32")),
                           outputs=(("int32", (2,)),))
    f, fb = make(spec, fma_kernel("int32", 2, scalar=(False, True)))
    x = np.arange(2, dtype=np.int32)
    assert f(x, value) == "fallback"
    assert fb.calls[0][0][1] is value


def test_int64_limits():
    spec = pyabi.EntrySpec(inputs=(("array", "int64", (1,)), ("pyscalar", int, "int64")),
                           outputs=(("int64", (1,)),))
    f, _ = make(spec, fma_kernel("int64", 1, scalar=(False, True)))
    assert f(np.array([1]), 2 ** 63 - 2)[0] == 2 ** 63 - 1
    assert f(np.array([0]), -(2 ** 63))[0] == 1
    assert f(np.array([1]), 2 ** 63) == "fallback"


class Sub(np.ndarray):
    pass


def test_fallback_on_every_mismatch():
    f, fb = make(arr_spec("float64", (4,)), fma_kernel("float64", 4))
    x, y = np.arange(4.0), np.ones(4)
    wide = np.arange(8.0)
    cases = [
        ((x.astype(np.float32), y), {}),                 # dtype
        ((np.arange(5.0), np.ones(5)), {}),              # shape
        ((x.reshape(2, 2), y), {}),                      # ndim
        ((wide[::2], y), {}),                            # non-contiguous
        ((x.view(Sub), y), {}),                          # subclass
        ((x.astype(">f8"), y), {}),                      # non-canonical descr
        ((x, y), {"z": 1}),                              # kwargs
        ((x,), {}),                                      # too few
        ((x, y, y), {}),                                 # too many
        ((x, 1.0), {}),                                  # scalar for array
        ((list(x), y), {}),                              # not an array
    ]
    for args, kwargs in cases:
        assert f(*args, **kwargs) == "fallback"
    assert len(fb.calls) == len(cases)
    for (args, kwargs), (got_args, got_kwargs) in zip(cases, fb.calls):
        assert got_kwargs == kwargs and len(got_args) == len(args)
        assert all(a is b for a, b in zip(args, got_args))
    assert f() == "fallback" and fb.calls[-1] == ((), {})


def test_unaligned_input_goes_to_fallback():
    f, fb = make(arr_spec("float64", (2,)), fma_kernel("float64", 2))
    raw = np.zeros(17, np.uint8)
    bad = np.frombuffer(raw.data, dtype=np.float64, count=2, offset=1)
    assert not bad.flags.aligned
    assert f(bad, np.ones(2)) == "fallback"


def test_tuple_outputs():
    f, _ = make(arr_spec("float64", (3,), n_out=2), fma_kernel("float64", 3, n_out=2))
    x, y = np.arange(3.0), np.full(3, 2.0)
    out = f(x, y)
    assert type(out) is tuple and len(out) == 2 and out[0] is not out[1]
    for o in out:
        np.testing.assert_array_equal(o, x * y + 1)
    f0, _ = make(arr_spec("float64", (), n_out=2), fma_kernel("float64", 1, n_out=2))
    a, b = f0(np.array(2.0), np.array(3.0))
    assert type(a) is np.float64 and a == b == 7.0


def test_error_code_raises_and_frees_outputs():
    seen = []

    def on_error(code):
        seen.append(code)
        raise ValueError(f"gather index out of range (code {code})")

    spec = pyabi.EntrySpec(inputs=arr_spec("float64", (3,)).inputs,
                           outputs=(("float64", (3,)), ("float64", ())), return_tuple=True,
                           on_error=on_error)
    f, _ = make(spec, fma_kernel("float64", 3, n_out=2, fail_code=7))
    x, y = np.arange(3.0), np.ones(3)
    rx = sys.getrefcount(x)
    for _ in range(1000):
        with pytest.raises(ValueError, match="code 7"):
            f(x, y)
    assert seen == [7] * 1000 and sys.getrefcount(x) == rx


def test_on_error_that_returns_still_raises():
    spec = arr_spec("float64", (2,), on_error=lambda code: None)
    f, _ = make(spec, fma_kernel("float64", 2, fail_code=3))
    with pytest.raises(RuntimeError, match="did not raise"):
        f(np.ones(2), np.ones(2))
    g, _ = make(arr_spec("float64", (2,)), fma_kernel("float64", 2, fail_code=-4))
    with pytest.raises(RuntimeError, match="error code -4"):
        g(np.ones(2), np.ones(2))


def test_release_gil_from_threads():
    n = 100_000
    f, fb = make(arr_spec("float64", (n,), release_gil=True), fma_kernel("float64", n))
    x, y = np.arange(float(n)), np.full(n, 0.5)
    results = []

    def work():
        for _ in range(20):
            results.append(f(x, y))

    ts = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert len(results) == 80 and not fb.calls
    for r in results:
        np.testing.assert_array_equal(r, x * y + 1)


def test_no_leaks_fast_path_and_fallback():
    f, fb = make(arr_spec("float64", (1,)), fma_kernel("float64", 1))
    s, _ = make(pyabi.EntrySpec(inputs=(("pyscalar", float, "float64"),) * 2,
                                outputs=(("float64", ()),)),
                fma_kernel("float64", 1, scalar=(True, True)))
    x, y, xf = np.ones(1), np.ones(1), np.ones(1, np.float32)
    descr = np.dtype(np.float64)
    before = [sys.getrefcount(o) for o in (x, y, xf, descr, f, fb)]
    tracemalloc.start()
    for _ in range(2000):      # a traced warm-up round: free lists, the recorder's list
        f(x, y), s(1.0, 2.0), f(xf, y)
    fb.calls.clear()
    m0 = tracemalloc.get_traced_memory()[0]
    for _ in range(100_000):
        r = f(x, y)
        s(1.0, 2.0)
    for _ in range(2000):
        f(xf, y)
    fb.calls.clear()
    m1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert sys.getrefcount(r) == 2
    del r                               # it holds a reference to the float64 descr
    assert [sys.getrefcount(o) for o in (x, y, xf, descr, f, fb)] == before
    assert m1 - m0 < 64 * 1024, m1 - m0


def test_table_order_eviction_and_clear():
    fb = Recorder()
    f = pd.FastDispatch(fb)
    entries = []
    for k in range(pd.MAX_SPECIALIZATIONS + 2):
        spec = arr_spec("float64", (k + 1,))
        entries.append(pyabi.build_entry(*fma_kernel("float64", k + 1), spec))
        f.add_specialization(entries[-1], spec)
    assert f._tj_nspec == pd.MAX_SPECIALIZATIONS
    assert [s.inputs[0][2] for s in f.specializations()] == [(k,) for k in range(10, 2, -1)]
    assert f(np.ones(1), np.ones(1)) == "fallback"          # evicted (oldest)
    assert f(np.ones(10), np.ones(10))[0] == 2.0
    assert f(np.ones(3), np.ones(3))[0] == 2.0
    f.clear_specializations()
    assert f._tj_nspec == 0 and f(np.ones(3), np.ones(3)) == "fallback"
    with pytest.raises(TypeError):
        f.add_specialization(0, None)


class JitMethods:
    """A jitted function."""

    def ir(self):
        return f"ir of {self.__name__}"

    def cache_info(self):
        return {"specializations": self._tj_nspec}

    def __repr__(self):
        return f"<jit {self.__name__}>"


def test_mixin_methods_attributes_weakref_and_gc():
    T = pd.make_dispatch_type("JitFunction", JitMethods)
    assert T.__flags__ & (1 << 11)          # Py_TPFLAGS_HAVE_VECTORCALL

    class Owner:
        def compile_and_call(self, *args, **kwargs):
            return "compiled"

    owner = Owner()
    f = T(owner.compile_and_call)
    owner.f = f                               # cycle: f -> bound method -> owner -> f
    f.__name__ = "g"
    f.__wrapped__ = owner.compile_and_call
    assert f.ir() == "ir of g" and repr(f) == "<jit g>" and f.cache_info()["specializations"] == 0
    assert T.__doc__ == "A jitted function." and f(1, k=2) == "compiled"
    import weakref
    gc.collect()
    ref = weakref.ref(f)
    del f, owner
    gc.collect()
    assert ref() is None


def test_python_subclass_still_works():
    class Sub(pd.FastDispatch):
        def extra(self):
            return 42

    f = Sub(Recorder())
    f.add_specialization(pyabi.build_entry(*fma_kernel("float64", 2), arr_spec("float64", (2,))))
    assert f.extra() == 42 and f(np.ones(2), np.ones(2))[1] == 2.0 and f(1) == "fallback"
    del f
    gc.collect()


def test_fallback_can_be_replaced_or_missing():
    f = pd.FastDispatch(Recorder())
    f._tj_fallback = lambda *a: len(a)
    assert f(1, 2, 3) == 3
    del f._tj_fallback
    with pytest.raises(TypeError, match="no fallback"):
        f(1)


def test_python_entry_matches_native():
    spec = pyabi.EntrySpec(inputs=(("array", "complex128", (4,)), ("pyscalar", complex, "complex128")),
                           outputs=(("complex128", (4,)), ("complex128", (4,))), return_tuple=True)
    m, fn = fma_kernel("complex128", 4, scalar=(False, True), n_out=2)
    native = pyabi.build_entry(m, fn, spec)
    py_entry = pyabi.python_entry(jit.function_address(fn.name), spec)
    PyT = type("PyJit", (pd.PyDispatch, pd.DispatchMethods), {})
    g = PyT(Recorder())
    g.add_specialization(py_entry, spec)
    f = pd.FastDispatch(Recorder())
    f.add_specialization(native, spec)
    x = sample("complex128", (4,), 5)
    for a, b in zip(f(x, 1 - 2j), g(x, 1 - 2j)):
        np.testing.assert_array_equal(a, b)
    assert g(x, 1.0) == "fallback" and f(x, 1.0) == "fallback"


def test_bad_specs_are_rejected():
    with pytest.raises(ValueError):
        arr_spec("float64", (2,), n_out=2).__class__(
            inputs=(), outputs=(("float64", ()),) * 2).normalized()
    m, fn = fma_kernel("float64", 1)
    with pytest.raises(TypeError):
        pyabi.emit_entry(m, fn, pyabi.EntrySpec(inputs=(("pyscalar", complex, "float64"),),
                                                outputs=(("float64", ()),)))


def test_methods_refuse_foreign_objects():
    class Plain:
        pass

    with pytest.raises(TypeError, match="not a native dispatch"):
        pd.DispatchMethods.add_specialization(Plain(), 12345)
    with pytest.raises(TypeError, match="not a native dispatch"):
        pd.DispatchMethods.clear_specializations(Plain())


def test_disabled_native_path_uses_python_entries(monkeypatch):
    monkeypatch.setattr(pyobj, "NATIVE_OK", False)
    T = pd.make_dispatch_type("SlowJit", JitMethods)
    assert not T.__flags__ & (1 << 11)
    spec = arr_spec("float64", (3,), n_out=2)
    entry = pyabi.build_entry(*fma_kernel("float64", 3, n_out=2), spec)
    assert callable(entry)
    fb = Recorder()
    f = T(fb)
    f.__name__ = "slow"
    f.add_specialization(entry, spec)
    x = np.arange(3.0)
    for o in f(x, x):
        np.testing.assert_array_equal(o, x * x + 1)
    assert f(x, x[::-1].copy().astype(np.float32)) == "fallback" and f.ir() == "ir of slow"
    f.clear_specializations()
    assert f(x, x) == "fallback"
