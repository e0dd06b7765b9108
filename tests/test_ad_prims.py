"""Registry-driven AD tests: every primitive has a JVP rule (linear ones a transpose rule) or a
reason why not, and check_grads passes at order 2 in both modes for every differentiable
primitive on hypothesis-drawn shapes and values inside each primitive's domain."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracejit
from tracejit.core import REGISTRY
from tracejit.test_util import check_grads

pytestmark = pytest.mark.usefixtures("interpret_backend")
P = REGISTRY


def test_registry_rules():
    missing = [n for n, p in sorted(P.items())
               if p.jvp is None and not p.props.get("nondiff")]
    assert not missing, f"primitives without a jvp rule (and no 'nondiff' reason): {missing}"
    no_t = [n for n, p in sorted(P.items()) if p.props.get("linear") and p.transpose is None]
    assert not no_t, f"linear primitives without a transpose rule: {no_t}"
    for n, p in P.items():
        reason = p.props.get("nondiff")
        assert reason is None or (isinstance(reason, str) and reason), n


def _pos(shape, rng, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, shape)


def _any(shape, rng):
    return rng.uniform(-2, 2, shape)


def _unit(shape, rng):
    return rng.uniform(-0.8, 0.8, shape)


def _away(shape, rng):          # away from 0 and from kinks
    return rng.choice([-1, 1], shape) * rng.uniform(0.3, 2, shape)


def _cplx(shape, rng):
    return rng.uniform(0.3, 1.5, shape) + 1j * rng.uniform(0.3, 1.5, shape)


def un(name):
    return lambda x: P[name].bind(x)


def bin_(name):
    return lambda x, y: P[name].bind(x, y)


# name -> (function, list of value generators, supports complex)
CASES = {
    "neg": (un("neg"), [_any]), "abs": (un("abs"), [_away]), "exp": (un("exp"), [_any]),
    "exp2": (un("exp2"), [_any]), "expm1": (un("expm1"), [_any]), "log": (un("log"), [_pos]),
    "log2": (un("log2"), [_pos]), "log10": (un("log10"), [_pos]),
    "log1p": (un("log1p"), [_pos]), "sqrt": (un("sqrt"), [_pos]), "cbrt": (un("cbrt"), [_pos]),
    "sin": (un("sin"), [_any]), "cos": (un("cos"), [_any]), "tan": (un("tan"), [_unit]),
    "sinh": (un("sinh"), [_any]), "cosh": (un("cosh"), [_any]), "tanh": (un("tanh"), [_any]),
    "arcsin": (un("arcsin"), [_unit]), "arccos": (un("arccos"), [_unit]),
    "arctan": (un("arctan"), [_any]), "arcsinh": (un("arcsinh"), [_any]),
    "arccosh": (un("arccosh"), [lambda s, r: _pos(s, r, 1.2, 3)]),
    "arctanh": (un("arctanh"), [_unit]),
    "real": (un("real"), [_cplx]), "imag": (un("imag"), [_cplx]), "conj": (un("conj"), [_cplx]),
    "complex": (bin_("complex"), [_any, _any]),
    "add": (bin_("add"), [_any, _any]), "sub": (bin_("sub"), [_any, _any]),
    "mul": (bin_("mul"), [_any, _any]), "div": (bin_("div"), [_any, _away]),
    "rem": (bin_("rem"), [lambda s, r: r.uniform(0.2, 0.8, s), lambda s, r: r.uniform(1, 2, s)]),
    "pow": (bin_("pow"), [_pos, _any]), "max": (bin_("max"), [_any, _any]),
    "min": (bin_("min"), [_any, _any]), "atan2": (bin_("atan2"), [_away, _away]),
    "hypot": (bin_("hypot"), [_away, _away]),
    "integer_pow": (lambda x: P["integer_pow"].bind(x, n=3), [_any]),
    "select": (lambda x, y: P["select"].bind(P["gt"].bind(x, y), x * y, x - y), [_any, _any]),
    "convert": (lambda x: P["convert"].bind(x, dtype=np.dtype(np.complex128)) * (1 + 2j),
                [_any]),
    "reduce_sum": (lambda x: P["reduce_sum"].bind(x, axes=tuple(range(x.ndim))), [_any]),
    "reduce_prod": (lambda x: P["reduce_prod"].bind(x, axes=tuple(range(x.ndim))), [_away]),
    "reduce_max": (lambda x: P["reduce_max"].bind(x, axes=tuple(range(x.ndim))), [_any]),
    "reduce_min": (lambda x: P["reduce_min"].bind(x, axes=tuple(range(x.ndim))), [_any]),
    "cumsum": (lambda x: P["cumsum"].bind(x, axis=x.ndim - 1, reverse=False), [_any]),
    "cumprod": (lambda x: P["cumprod"].bind(x, axis=x.ndim - 1, reverse=True), [_away]),
    "broadcast_in_dim": (lambda x: P["broadcast_in_dim"].bind(
        x, shape=(2,) + x.shape, dims=tuple(range(1, x.ndim + 1))), [_any]),
    "reshape": (lambda x: P["reshape"].bind(x, shape=(x.size,)), [_any]),
    "transpose": (lambda x: P["transpose"].bind(x, perm=tuple(range(x.ndim))[::-1]), [_any]),
    "slice": (lambda x: P["slice"].bind(x, start=(0,) * x.ndim, limit=x.shape,
                                        step=(2,) * x.ndim), [_any]),
    "concatenate": (lambda x, y: P["concatenate"].bind(x, y, axis=0), [_any, _any]),
    "pad": (lambda x, v: P["pad"].bind(x, v, lo=(1,) * x.ndim, hi=(2,) * x.ndim), [_any, _any]),
    "rev": (lambda x: P["rev"].bind(x, axes=tuple(range(x.ndim))), [_any]),
    "take": (lambda x: P["take"].bind(x, np.array([0, 2, 2, -1]), axis=0), [_any]),
    "scatter": (lambda x, u: P["scatter"].bind(x, np.array([1, 0, 1]), u, axis=0, mode="set"),
                [_any, _any]),
    "dot_general": (lambda x, y: P["dot_general"].bind(x, y, contract=((x.ndim - 1,), (0,)),
                                                       batch=((), ())), [_any, _any]),
}
COMPLEX_OK = {"neg", "exp", "log", "sqrt", "sin", "cos", "tanh", "add", "sub", "mul", "div",
              "integer_pow", "reduce_sum", "dot_general", "reshape", "transpose", "abs",
              "cumsum", "broadcast_in_dim", "take"}
SHAPE_FIXED = {"pad": "same_rank_scalar", "scatter": "scatter", "take": "take",
               "dot_general": "dot", "concatenate": "same"}


def _args(name, gens, shape, rng, dtype):
    if name == "pad":
        return [gens[0](shape or (3,), rng), gens[1]((), rng)]
    if name == "scatter":
        return [gens[0]((3,) + shape, rng), gens[1]((3,) + shape, rng)]
    if name == "take":
        return [gens[0]((3,) + shape, rng)]
    if name == "dot_general":
        return [gens[0](shape + (3,), rng), gens[1]((3, 2), rng)]
    if name in ("reshape", "transpose", "slice", "rev", "cumsum", "cumprod", "concatenate"):
        shape = shape or (3,)
    out = [g(shape, rng) for g in gens]
    if dtype is np.complex128:
        out = [o + 1j * rng.uniform(-0.5, 0.5, o.shape) if name not in ("pow",) else o
               for o in out]
    return [np.asarray(o, dtype) if np.iscomplexobj(o) == (dtype is np.complex128) else
            np.asarray(o) for o in out]


def test_every_differentiable_primitive_has_a_case():
    ours = {"stop_gradient", "custom_jvp_call", "custom_vjp_call", "custom_vjp_lin",
            # control flow and checkpoint: covered by tests/test_control_ad.py
            "cond", "while", "while_record", "scan", "remat",
            "check",       # the identity with a run-time check: tests/test_runtime_checks.py
            "fft", "rfft", "irfft",      # tests/test_fft.py (their shapes: transformed axes)
            # host code (no derivative; custom rules give one) and a print (no results):
            # tests/test_callbacks.py
            "pure_callback", "debug_print",
            "numpy_draw",  # no operands: tests/test_autograph_programs.py
            # linear algebra (matrices of special structure): tests/test_linalg.py
            "cholesky", "triangular_solve", "solve", "slogdet", "eigh", "svd", "qr", "eig"}
    todo = [n for n, p in P.items() if n not in CASES and n not in ours and
            not p.props.get("nondiff") and not p.props.get("zero_derivative")]
    assert not todo, f"no check_grads case for {todo}"


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=3, deadline=None)
@given(shape=st.sampled_from([(), (3,), (2, 3)]), seed=st.integers(0, 2**16))
def test_check_grads_primitive(name, shape, seed):
    fn, gens = CASES[name]
    rng = np.random.default_rng(seed)
    check_grads(fn, _args(name, gens, shape, rng, np.float64), order=2)


@pytest.mark.parametrize("name", sorted(CASES))
def test_check_grads_primitive_on_llvm(name):
    """The derivative graphs compiled by the llvm backend (one fixed case per primitive)."""
    fn, gens = CASES[name]
    saved = tracejit.config.backend
    tracejit.config.backend = "llvm"
    try:
        check_grads(fn, _args(name, gens, (2, 3), np.random.default_rng(0), np.float64),
                    order=2)
    finally:
        tracejit.config.backend = saved


@pytest.mark.parametrize("name", sorted(COMPLEX_OK))
def test_check_grads_complex(name):
    fn, gens = CASES[name]
    rng = np.random.default_rng(1)
    args = _args(name, [_cplx] * len(gens), (3,), rng, np.complex128)
    check_grads(fn, args, order=2)


@pytest.mark.parametrize("name", ["sin", "mul", "dot_general", "reduce_max", "cumprod"])
def test_check_grads_float32(name):
    fn, gens = CASES[name]
    rng = np.random.default_rng(2)
    args = [np.asarray(a, np.float32) for a in _args(name, gens, (3,), rng, np.float64)]
    check_grads(fn, args, order=1)
