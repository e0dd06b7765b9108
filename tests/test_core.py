"""Core: printed IR, the signature cache, retrace logging, pytrees, static arguments, side
effects at trace time only, simplification passes, and errors that point at the user's line."""
import logging
import re
from collections import namedtuple

import numpy as np
import pytest

import tracejit as tj
from tracejit import ir
from tracejit.errors import ConcretizationError, InputError

pytestmark = pytest.mark.usefixtures("interpret")


@pytest.fixture
def interpret():
    saved = tj.config.backend
    tj.config.backend = "interpret"
    yield
    tj.config.backend = saved


def seed(a, b, c):
    u = a * b
    v = u + c
    return v ** 2


SEED_IR = """\
{ a:f64[] b:f64[] c:f64[] ->
    d:f64[] = mul a b
    e:f64[] = add d c
    f:f64[] = integer_pow[n=2] e
  return f }"""


def test_seed_forward_values_and_golden_ir():
    f = tj.trace(seed)
    assert float(f(2.0, 3.0, 1.0)) == 49.0
    assert str(f.ir(2.0, 3.0, 1.0)) == SEED_IR
    assert str(tj.make_ir(seed)(2.0, 3.0, 1.0)) == SEED_IR
    inter = tj.trace(lambda a, b, c: (a * b, a * b + c))
    u, v = inter(2.0, 3.0, 1.0)
    assert (float(u), float(v)) == (6.0, 7.0)
    micro = tj.trace(lambda x: (x + 2) * 3)
    assert float(micro(1.0)) == 9.0
    assert "mul" in str(micro.ir(1.0)) and "add" in str(micro.ir(1.0))


def test_printer_is_deterministic_and_shows_consts_and_literals():
    k = np.arange(3.0)
    f = tj.trace(lambda x: x * k + 2.5)
    text = str(f.ir(np.ones(3, np.float32)))
    assert text == str(f.ir(np.ones(3, np.float32)))
    assert "consts b:f64[3]" in text and "add d 2.5" in text and "convert[dtype=f64]" in text


def test_graph_verifier_catches_bad_ir():
    g = tj.trace(seed).ir(2.0, 3.0, 1.0)
    bad = g.replace(eqns=list(reversed(g.eqns)))
    with pytest.raises(ir.IRError, match="used before definition"):
        ir.verify(bad)
    eqn = g.eqns[0]
    wrong = ir.Eqn(eqn.prim, eqn.invars, (ir.Var(ir.Type(np.dtype("f4"), ())),), eqn.params)
    with pytest.raises(ir.IRError, match="shape rule"):
        ir.verify(g.replace(eqns=[wrong] + g.eqns[1:]))


def test_cache_counts_repeated_shape_dtype_weak_static():
    calls = []

    def fn(x, n):
        calls.append(1)                       # a side effect: runs at trace time only
        return x * n

    f = tj.trace(fn, static_argnums=1)
    x = np.ones(3)
    f(x, 2)
    f(x + 1, 2)
    assert f.cache_info().traces == 1 and f.cache_info().hits == 1 and len(calls) == 1
    f(np.ones(4), 2)                          # new shape
    f(np.ones(4, np.float32), 2)              # new dtype
    f(np.ones(4, np.float32), 3)              # new static value
    assert f.cache_info().traces == 4 and len(calls) == 4
    g = tj.trace(lambda x, y: x * y)
    g(np.ones(2), 2.0)                        # weak scalar
    g(np.ones(2), np.float64(2.0))            # strong scalar: another signature
    g(np.ones(2), 3.0)                        # weak again: cached
    assert g.cache_info().traces == 2 and g.cache_info().hits == 1


def test_python_scalars_are_traced_not_baked_in():
    f = tj.trace(lambda x, s: x * s)
    assert np.allclose(f(np.ones(2), 2.0), 2.0)
    assert np.allclose(f(np.ones(2), 5.0), 5.0)
    assert f.cache_info().traces == 1
    assert f(np.ones(2, np.float32), 2.0).dtype == np.float32     # weak scalar keeps f32


def test_lru_bound_and_clear_cache():
    saved = tj.config.cache_size
    tj.config.cache_size = 2
    try:
        f = tj.trace(lambda x: x + 1)
        for n in (1, 2, 3):
            f(np.ones(n))
        assert f.cache_info().currsize == 2
        f(np.ones(1))                          # evicted: traced again
        assert f.cache_info().traces == 4
        f.clear_cache()
        assert f.cache_info().currsize == 0
    finally:
        tj.config.cache_size = saved


def test_retrace_log_names_the_changed_path(caplog):
    tj.config.log_retraces = True
    try:
        f = tj.trace(lambda p: p["w"] * p["b"])
        f({"w": np.ones(3), "b": 1.0})
        with caplog.at_level(logging.WARNING, logger="tracejit"):
            f({"w": np.ones(4), "b": 1.0})
        assert re.search(r"args\[0\]\['w'\] changed from f64\[3\] to f64\[4\]", caplog.text)
    finally:
        tj.config.log_retraces = False


def test_pytrees_in_and_out():
    Point = namedtuple("Point", "x y")
    f = tj.trace(lambda p, d: {"s": p.x + p.y, "t": [d["a"] * 2, None]})
    out = f(Point(np.ones(2), np.ones(2)), {"a": 3.0})
    assert np.allclose(out["s"], 2.0) and float(out["t"][0]) == 6.0 and out["t"][1] is None

    class Box:
        def __init__(self, v):
            self.v = v

    tj.register_pytree_node(Box, lambda b: ((b.v,), None), lambda aux, ch: Box(ch[0]))
    g = tj.trace(lambda b: Box(b.v * 2))
    assert np.allclose(g(Box(np.ones(2))).v, 2.0)


def test_static_argnames_and_kwargs():
    f = tj.trace(lambda x, *, mode: x * 2 if mode == "double" else x, static_argnames="mode")
    assert np.allclose(f(np.ones(2), mode="double"), 2.0)
    assert np.allclose(f(np.ones(2), mode="same"), 1.0)
    assert f.cache_info().traces == 2


def test_nested_trace_inlines():
    inner = tj.trace(lambda x: x * 3)
    outer = tj.trace(lambda x: inner(x) + 1)
    assert np.allclose(outer(np.ones(2)), 4.0)
    assert "mul" in str(outer.ir(np.ones(2)))


def test_passes_dce_cse_fold_visible():
    def fn(x):
        unused = np.sin(x) * 2          # dead
        a = np.exp(x)
        b = np.exp(x)                   # common subexpression
        c = (2.0 * 3.0) + 1.0           # Python folds; a literal-only subgraph below
        return a + b * 1.0 + c
    f = tj.trace(fn)
    raw = str(f.ir(np.ones(3), optimize=False))
    opt = str(f.ir(np.ones(3)))
    assert "sin" in raw and "sin" not in opt
    assert raw.count("exp") == 2 and opt.count("exp") == 1
    assert "mul" not in opt                              # x * 1.0 removed
    assert np.allclose(f(np.ones(3)), 2 * np.e + 7.0)


def test_negative_zero_addition_is_kept():
    f = tj.trace(lambda x: x + 0.0)
    assert "add" in str(f.ir(np.ones(2)))                 # -0.0 + 0.0 = +0.0, not -0.0
    assert not np.signbit(f(np.array([-0.0]))[0])
    g = tj.trace(lambda x: x - 0.0)
    assert "sub" not in str(g.ir(np.ones(2)))


def test_literal_folding():
    f = tj.trace(lambda x: x * (np.float64(2.0) * 3.0))
    text = str(f.ir(np.ones(2)))
    assert "6.0" in text and text.count("mul") == 1


def test_cse_matches_commuted_operands():
    f = tj.trace(lambda x, y: x * 0.5 + 0.5 * x + (x + y) * (y + x))
    assert str(f.ir(np.ones(2), np.ones(2))).count("mul") == 2
    g = tj.trace(lambda x, y: np.maximum(x, y) + np.maximum(y, x))   # not commutative: +-0
    assert str(g.ir(np.ones(2), np.ones(2))).count("max") == 2
    assert np.array_equal(np.signbit(g(np.array([0.0]), np.array([-0.0]))), [False])


SPECIAL = np.array([0.0, -0.0, 1.5, -2.0, 3.0, np.inf, -np.inf])


@pytest.mark.parametrize("rule", [
    lambda x, y: y + (-x) * y, lambda x, y: y - x / (-y), lambda x, y: x + (-y),
    lambda x, y: (-x) + y, lambda x, y: x - (-y), lambda x, y: (-x) - (-y),
    lambda x, y: (-x) + (-y), lambda x, y: (-x) - y, lambda x, y: y + -(-x) * (-y),
    lambda x, y: np.sin(-x) + (-x) * (-y)])
def test_negations_sink_exactly(rule):
    x, y = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL))
    f = tj.trace(rule)
    got, want = f(x, y), rule(x, y)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)          # the sign of a NaN is not kept
    assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))   # zeros too


def test_reverse_mode_negations_vanish():
    def g(x):
        for _ in range(3):
            x = x - 0.1 * np.sin(x) * np.cos(x) + 0.01 * x * x
        return np.sum(x)
    text = str(tj.trace(tj.grad(g)).ir(np.ones(4)))
    assert " = neg " not in text and "sin" in text


def test_concretization_errors_name_user_line():
    def branchy(x):
        if x > 0:                                       # the offending line
            return x
        return -x
    line = branchy.__code__.co_firstlineno + 1
    assert tj.trace(branchy)(-1.0) == 1.0               # converted (tracejit.autograph)
    old, tj.config.autograph = tj.config.autograph, False
    try:
        with pytest.raises(ConcretizationError) as e:
            tj.trace(branchy)(1.0)
    finally:
        tj.config.autograph = old
    assert f"test_core.py:{line}" in str(e.value) and "where" in str(e.value)
    with pytest.raises(ConcretizationError, match="float"):
        tj.trace(lambda x: float(x))(1.0)
    # (a Python int is specialised on when its value is needed; a NumPy integer is data)
    with pytest.raises(ConcretizationError, match="static"):
        tj.trace(lambda x, n: tj.numpy.zeros(n))(1.0, np.int64(3))
    with pytest.raises(ConcretizationError, match="static"):
        tj.trace(lambda x, n: x.reshape(n))(np.ones(3), np.int64(3))


def test_non_array_argument_names_its_path():
    with pytest.raises(InputError, match=r"args\[1\]\['k'\].*str"):
        tj.trace(lambda x, d: x)(1.0, {"k": "text"})
    with pytest.raises(Exception, match="longdouble|float128"):
        tj.trace(lambda x: x)(np.ones(2, np.longdouble))


def test_leaked_tracer_is_an_error():
    box = []
    tj.trace(lambda x: box.append(x) or x)(1.0)
    with pytest.raises(tj.TracerError, match="leaked|escaped|outside"):
        tj.trace(lambda y: y + box[0])(2.0)
