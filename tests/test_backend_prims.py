"""Every primitive on the llvm backend against the interpreter, for every dtype it accepts.

Cases are driven by the primitive registry: a primitive without a case here fails
``test_every_primitive_has_cases``. Graphs are built directly from ``prim.bind`` (no NumPy
layer), compiled with ``tracejit.backend.compile_graph`` and compared with ``interpret.run``.
Arithmetic (+ - * /, comparisons, converts, selects, structural ops) must match bit for bit;
transcendentals within a few ulp (mathlib), float reductions within the tolerance of a different
summation order.
"""
import numpy as np
import pytest

from tracejit import dtypes, interpret
from tracejit.backend import compile_graph
from tracejit.core import REGISTRY, make_graph
from tracejit.ir import Type

ALL = dtypes.SUPPORTED
INEXACT_OPS = {"exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "cbrt", "sin", "cos",
               "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
               "arctanh", "pow", "atan2", "hypot", "integer_pow", "reduce_sum", "reduce_prod",
               "dot_general", "custom_jvp_call", "custom_vjp_lin", "remat"}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 3, 17)]


def _data(ty, rng, special=True):
    dt, shape = ty.dtype, ty.shape
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        # small values (negative ones wrap to large unsigned values), plus the extremes
        x = rng.integers(-9, 10, size=shape).astype(dt)
        if special and x.size >= 7:
            info = np.iinfo(dt)
            x.reshape(-1)[:3] = [info.min, info.max, info.max - 1]
        return x
    x = (rng.standard_normal(shape) * 3).astype(dt)
    if dt.kind == "c":
        x = x + 1j * (rng.standard_normal(shape) * 3).astype(dt)
    if special and x.size >= 7:
        flat = x.reshape(-1)
        flat[:5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    return np.asarray(x, dtype=dt)


def _accepts(prim, types, **params):
    try:
        prim.abstract_eval(types, **params)
        return True
    except Exception:  # noqa: BLE001 - the shape rule says no
        return False


def run_both(fn, in_types, args, name=""):
    graph, _ = make_graph(fn, in_types)
    expected = interpret.run(graph, args)
    exe = compile_graph(graph)
    got = exe([np.asarray(a) for a in args])
    return expected, got, exe


def _close(name, exp, got, dt):
    exp, got = np.asarray(exp), np.asarray(got)
    assert exp.shape == got.shape and exp.dtype == got.dtype, (name, exp.shape, got.shape)
    # complex sqrt is a transcendental formula (libm's csqrt is not correctly rounded either)
    if (name in INEXACT_OPS or (name == "sqrt" and dt.kind == "c")) and dt.kind in "fc":
        tol = 1e-5 if dt in (dtypes.float32, dtypes.complex64) else 1e-12
        np.testing.assert_allclose(got, exp, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, exp, err_msg=name)


def check(name, fn, in_types, seed=0, special=True, args=None):
    rng = np.random.default_rng(seed)
    args = args if args is not None else [_data(t, rng, special) for t in in_types]
    exp, got, _ = run_both(fn, in_types, args)
    for e, g in zip(exp, got):
        _close(name, e, g, np.asarray(e).dtype)


ELEMENTWISE = sorted(n for n, p in REGISTRY.items() if p.kind == "elementwise"
                     and n not in ("select", "convert", "bitcast_convert", "integer_pow"))
# every (primitive, dtype) pair the shape rule accepts
ELEMENTWISE_CASES = [(n, dt) for n in ELEMENTWISE for dt in ALL
                     if _accepts(REGISTRY[n], [Type(dt, (3,))] * REGISTRY[n].props["nargs"])]


@pytest.mark.parametrize("name,dt", ELEMENTWISE_CASES, ids=lambda v: str(v))
def test_elementwise(name, dt):
    prim = REGISTRY[name]
    n = prim.props["nargs"]
    for shape in SHAPES:
        check(name, lambda *xs: [prim.bind(*xs)], [Type(dt, shape)] * n)
    if n == 2:
        check(name, lambda x, y: [prim.bind(x, y)], [Type(dt, (4, 5)), Type(dt, ())])
        check(name, lambda y: [prim.bind(y, y)], [Type(dt, ())])


@pytest.mark.parametrize("name", ["convert", "bitcast_convert"])
@pytest.mark.parametrize("src", ALL, ids=str)
def test_convert(src, name):
    prim = REGISTRY[name]
    for dst in ALL:
        if _accepts(prim, [Type(src, (9,))], dtype=dst):
            check(name, lambda x: [prim.bind(x, dtype=dst)], [Type(src, (3, 9))])


def test_select():
    prim = REGISTRY["select"]
    for dt in ALL:
        check("select", lambda p, a, b: [prim.bind(p, a, b)],
              [Type(dtypes.bool_, (33,)), Type(dt, (33,)), Type(dt, (33,))])
        check("select", lambda p, a, b: [prim.bind(p, a, b)],
              [Type(dtypes.bool_, ()), Type(dt, (5,)), Type(dt, ())])


@pytest.mark.parametrize("dt", [d for d in ALL if d.kind != "b"], ids=str)
def test_integer_pow(dt):
    prim = REGISTRY["integer_pow"]
    for n in (-2, 0, 1, 2, 3, 5):
        if dt.kind in "iu" and n < 0:
            continue
        check("integer_pow", lambda x: [prim.bind(x, n=n)], [Type(dt, (19,))], special=False)


REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")
AXES = [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize("name,dt", [(n, dt) for n in REDUCTIONS for dt in ALL
                                     if _accepts(REGISTRY[n], [Type(dt, (3,))], axes=(0,))],
                         ids=lambda v: str(v))
def test_reductions(name, dt):
    prim = REGISTRY[name]
    for shape in ((3, 4, 37), (2, 1, 5), (5, 0, 3)):
        for axes in AXES:
            if _accepts(prim, [Type(dt, shape)], axes=axes):
                check(name, lambda x: [prim.bind(x, axes=axes)], [Type(dt, shape)], special=False)
    check(name, lambda x: [prim.bind(x, axes=(0,))], [Type(dt, (1000,))])
    check(name, lambda x: [prim.bind(prim.bind(x, axes=(1,)), axes=(0,))], [Type(dt, (64, 70))])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions(name):
    prim = REGISTRY[name]
    for dt in (dtypes.bool_, *dtypes.INTEGERS, dtypes.float32, dtypes.float64):
        for axis in (0, 1):
            check(name, lambda x: [prim.bind(x, axis=axis)], [Type(dt, (6, 41))])


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans(name):
    prim = REGISTRY[name]
    for dt in (*dtypes.INTEGERS, dtypes.float32, dtypes.float64, dtypes.complex128):
        for axis in (0, 1):
            for reverse in (False, True):
                check(name, lambda x: [prim.bind(x, axis=axis, reverse=reverse)],
                      [Type(dt, (4, 9))], special=False)


def _structural_cases():
    P = REGISTRY
    yield "broadcast_in_dim", lambda x: [P["broadcast_in_dim"].bind(x, shape=(2, 3, 4),
                                                                    dims=(1, 2))], [(3, 1)]
    yield "broadcast_in_dim", lambda x: [P["broadcast_in_dim"].bind(x, shape=(5, 3),
                                                                    dims=())], [()]
    yield "reshape", lambda x: [P["reshape"].bind(x, shape=(6, 4))], [(2, 3, 4)]
    yield "reshape", lambda x: [P["reshape"].bind(P["transpose"].bind(x, perm=(1, 0)),
                                                  shape=(15,))], [(3, 5)]
    yield "transpose", lambda x: [P["transpose"].bind(x, perm=(2, 0, 1))], [(2, 3, 19)]
    yield "slice", lambda x: [P["slice"].bind(x, start=(1, 2), limit=(4, 17),
                                              step=(2, 3))], [(5, 19)]
    yield "slice", lambda x: [P["slice"].bind(x, start=(1,), limit=(1,), step=(1,))], [(4,)]
    yield "rev", lambda x: [P["rev"].bind(x, axes=(0, 1))], [(3, 21)]
    yield "concatenate", lambda x, y: [P["concatenate"].bind(x, y, x, axis=1)], [(2, 3), (2, 5)]
    yield "concatenate", lambda x, y: [P["concatenate"].bind(x, y, axis=0)], [(2, 3), (0, 3)]
    yield "iota", lambda x: [P["iota"].bind(dtype=x.dtype, shape=(3, 4), axis=1)], [(1,)]


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_structural(dt):
    for name, fn, shapes in _structural_cases():
        types = [Type(dt, s) for s in shapes]
        if name == "iota" and dt.kind in "bc":
            continue
        check(name, fn, types)
    pad = REGISTRY["pad"]
    if dt.kind != "b":
        check("pad", lambda x, v: [pad.bind(x, v, lo=(1, 0), hi=(2, 3))],
              [Type(dt, (3, 4)), Type(dt, ())])


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_take_scatter(dt):
    take, scatter = REGISTRY["take"], REGISTRY["scatter"]
    idx = np.array([0, -1, 2, 2], np.int64)
    rng = np.random.default_rng(1)
    x = _data(Type(dt, (3, 5)), rng)
    check("take", lambda a, i: [take.bind(a, i, axis=1)],
          [Type(dt, (3, 5)), Type(dtypes.int64, (4,))], args=[x, idx])
    if dt.kind == "b":
        return
    upd = _data(Type(dt, (3, 4)), rng, special=False)
    for mode in ("set", "add", "mul", "min", "max"):
        if dt.kind == "c" and mode in ("min", "max"):
            continue
        check("scatter", lambda a, i, u: [scatter.bind(a, i, u, axis=1, mode=mode)],
              [Type(dt, (3, 5)), Type(dtypes.int64, (4,)), Type(dt, (3, 4))],
              args=[x, np.array([0, 1, 3, 1]), upd])


@pytest.mark.parametrize("dt", [d for d in ALL if d.kind != "b"], ids=str)
def test_dot_general(dt):
    dot = REGISTRY["dot_general"]
    cases = [((4, 5), (5, 3), ((1,), (0,)), ((), ())),
             ((5, 4), (5, 3), ((0,), (0,)), ((), ())),
             ((4, 5), (3, 5), ((1,), (1,)), ((), ())),
             ((5,), (5, 3), ((0,), (0,)), ((), ())),
             ((4, 5), (5,), ((1,), (0,)), ((), ())),
             ((7,), (7,), ((0,), (0,)), ((), ())),
             ((2, 4, 5), (2, 5, 3), ((2,), (1,)), ((0,), (0,))),
             ((2, 3, 4, 5), (2, 3, 5, 6), ((3,), (2,)), ((0, 1), (0, 1))),
             ((3, 0), (0, 2), ((1,), (0,)), ((), ())),
             ((3, 4), (5,), ((), ()), ((), ()))]
    for ls, rs, contract, batch in cases:
        types = [Type(dt, ls), Type(dt, rs)]
        check("dot_general", lambda a, b: [dot.bind(a, b, contract=contract, batch=batch)],
              types, special=False)


def test_call_primitives_fall_back_when_not_inlined():
    import tracejit as tj

    @tj.custom_jvp
    def f(x):
        return np.sin(x) * 2.0

    f.defjvp(lambda p, t: (f(p[0]), np.cos(p[0]) * 2.0 * t[0]))

    @tj.custom_vjp
    def g(x):
        return x * 3.0

    g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct * 3.0,))
    check("custom_jvp_call", lambda x: [f(x) + g(x)], [Type(dtypes.float64, (5,))])
    check("custom_vjp_lin", lambda x: [tj.grad(lambda v: np.sum(g(v) * f(v)))(x)],
          [Type(dtypes.float64, (5,))])
    check("remat", lambda x: [tj.checkpoint(lambda v: np.sin(v) * v)(x)],
          [Type(dtypes.float64, (5,))])


# control flow is exercised through the NumPy layer in test_backend_programs.py (while_record,
# the taped forward pass of a while loop's gradient, in test_backend_stacks.py)
CONTROL = {"cond", "while", "while_record", "scan", "custom_jvp_call", "custom_vjp_call",
           "custom_vjp_lin", "remat"}
TESTED = CONTROL | set(ELEMENTWISE) | {"select", "convert", "bitcast_convert", "integer_pow",
                                       *REDUCTIONS, "argmax", "argmin",
                             "cumsum", "cumprod", "take", "scatter", "dot_general", "pad"} | \
    {name for name, _, _ in _structural_cases()} | \
    {"cholesky", "triangular_solve", "solve", "slogdet", "eigh", "svd", "qr",  # test_linalg.py
     "eig"} | \
    {"argsort", "searchsorted",              # both backends against NumPy: test_sorting.py
     "fft", "rfft", "irfft",                 # test_fft.py
     "pure_callback", "debug_print",          # test_callbacks.py
     "numpy_draw"}                            # test_autograph_programs.py


def test_every_primitive_has_cases():
    missing = sorted(set(REGISTRY) - TESTED)
    assert not missing, f"primitives without llvm-vs-interpreter cases: {missing}"
