"""Host callbacks: ``pure_callback`` and ``debug.print`` on both backends, under vmap, grad
(through custom_jvp/custom_vjp), inside compiled loops, and with the on-disk object cache."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tracejit as tj
from tracejit.errors import ShapeError, UnsupportedError

sp = pytest.importorskip("scipy.special", reason="SciPy is the host code these tests call")
rng = np.random.default_rng(18)


def _erf_twice(x):
    return sp.erf(2.0 * x)


@tj.jit
def erf_model(x):
    return np.sin(tj.pure_callback(_erf_twice, x, x + 1.0)) * x


@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pure_callback_matches_numpy(backend, shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    got = erf_model(x)
    want = np.sin(sp.erf(2.0 * (x + dtype(1.0)))) * x
    assert np.asarray(got).dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-14)


def test_pytrees_in_and_out_and_eager_call(backend):
    def host(d, k):
        return {"s": d["a"] * k, "n": np.array([d["b"].size], np.int64)}

    spec = {"s": np.empty(3), "n": np.empty(1, np.int64)}

    def f(a, b):
        return tj.pure_callback(host, spec, {"a": a, "b": b}, k=3.0)

    a, b = rng.standard_normal(3), rng.standard_normal((2, 2))
    for fn in (f, tj.jit(f)):                  # outside a trace the callback runs at once
        out = fn(a, b)
        np.testing.assert_allclose(out["s"], 3.0 * a)
        np.testing.assert_array_equal(out["n"], [4])


def test_wrong_result_shape_dtype_or_structure_names_the_callback(backend):
    def bad_shape(x):
        return np.zeros(4)

    def bad_dtype(x):
        return x.astype(np.float32)

    def bad_tree(x):
        return (x, x)

    x = np.ones(3)
    for cb, words in ((bad_shape, "float64[4]"), (bad_dtype, "float32[3]"),
                      (bad_tree, "structure")):
        f = tj.jit(lambda v, cb=cb: tj.pure_callback(cb, v, v) * 2.0)
        with pytest.raises(ShapeError, match=cb.__name__) as info:
            f(x)
        assert words in str(info.value)


def test_callback_cannot_write_its_arguments(backend):
    def writes(x):
        x[0] = 1.0
        return x

    with pytest.raises(ValueError, match="read-only"):
        tj.jit(lambda v: tj.pure_callback(writes, v, v * 2.0))(np.zeros(3))


def test_vmap_sequential_and_vectorized(backend):
    calls = []

    def host(x, y):
        calls.append(x.shape)
        return np.tanh(x) + y

    B, x, y = 4, rng.standard_normal((4, 3)), rng.standard_normal(3)
    for vectorized, want_calls in ((False, [(3,)] * B), (True, [(B, 3)])):
        calls.clear()
        f = tj.jit(tj.vmap(lambda a, b: tj.pure_callback(host, b, a, b, vectorized=vectorized),
                           in_axes=(0, None)))
        np.testing.assert_allclose(f(x, y), np.tanh(x) + y, rtol=1e-14)
        assert calls == want_calls


def test_grad_of_a_callback_is_a_clear_error():
    f = tj.jit(tj.grad(lambda x: np.sum(tj.pure_callback(np.sin, x, x))))
    with pytest.raises(UnsupportedError, match="custom_jvp or tracejit.custom_vjp"):
        f(np.ones(3))


@tj.custom_jvp
def host_erf(x):
    return tj.pure_callback(sp.erf, x, x)


@host_erf.defjvp
def _host_erf_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return host_erf(x), 2.0 / np.sqrt(np.pi) * np.exp(-x * x) * t


@tj.custom_vjp
def host_expit(x):
    return tj.pure_callback(sp.expit, x, x)


def _expit_fwd(x):
    y = host_expit(x)
    return y, y


def _expit_bwd(y, ct):
    return (ct * y * (1.0 - y),)


host_expit.defvjp(_expit_fwd, _expit_bwd)


def test_custom_rules_make_callbacks_differentiable(backend):
    x = rng.standard_normal(5)
    tj.test_util.check_grads(lambda v: np.sum(np.sin(host_erf(v))), (x,), order=1,
                             modes=("fwd", "rev"))
    tj.test_util.check_grads(lambda v: np.sum(host_expit(v) ** 2), (x,), order=1,
                             modes=("rev",))
    np.testing.assert_allclose(tj.jit(tj.grad(lambda v: np.sum(host_erf(v))))(x),
                               2.0 / np.sqrt(np.pi) * np.exp(-x * x), rtol=1e-14)


def test_callbacks_and_prints_inside_compiled_loops(backend, capsys):
    def f(x):
        def body(i, c):
            tj.debug.print("step {} carry {c:.3f}", i, c=c)
            return tj.pure_callback(np.cos, c, c)

        def cond(c):
            return c < 10.0

        y = tj.fori_loop(0, 3, body, x)
        return tj.while_loop(cond, lambda c: tj.pure_callback(lambda v: v * 2.0, c, c), y)

    x = np.array(0.5)
    want = np.cos(np.cos(np.cos(0.5)))
    while want < 10.0:
        want *= 2.0
    np.testing.assert_allclose(tj.jit(f)(x), want, rtol=1e-15)
    c = 0.5
    lines = []
    for i in range(3):
        lines.append(f"step {i} carry {c:.3f}")
        c = np.cos(c)
    assert capsys.readouterr().out.splitlines() == lines


def test_prints_run_in_order_are_kept_and_not_merged(backend, capsys):
    @tj.jit
    def f(x, y):
        tj.debug.print("first {}", y)
        z = np.exp(x)                            # computed before, printed after
        tj.debug.print("x={x} z={}", np.sum(z), x=x)
        tj.debug.print("first {}", y)            # equal to the first: printed again
        unused = np.log(x)
        tj.debug.print("last {}", unused[0])     # a print keeps what it prints
        return y * 2.0

    x, y = np.array([1.0, 2.0]), np.array(3.0)
    np.testing.assert_allclose(f(x, y), 6.0)
    want = ["first 3.0", f"x={x} z={np.sum(np.exp(x))}", "first 3.0", "last 0.0"]
    assert capsys.readouterr().out.splitlines() == want
    f(x, y)                                      # every run prints (not only the trace)
    assert capsys.readouterr().out.splitlines() == want


def test_print_in_a_loop_whose_result_is_unused(backend, capsys):
    def f(x):
        tj.fori_loop(0, 2, lambda i, c: (tj.debug.print("i={}", i), c)[1], x)
        return x + 1.0

    tj.jit(f)(np.array(1.0))
    assert capsys.readouterr().out.splitlines() == ["i=0", "i=1"]


def test_print_under_grad_and_vmap(backend, capsys):
    def f(x):
        tj.debug.print("x = {}", x)
        return np.sum(np.sin(x))

    x = np.array([0.25, 0.5])
    np.testing.assert_allclose(tj.jit(tj.grad(f))(x), np.cos(x))
    assert capsys.readouterr().out.splitlines() == [f"x = {x}"]     # the primal, once
    xs = np.stack([x, 2 * x])
    tj.jit(tj.vmap(f))(xs)
    assert capsys.readouterr().out.strip() == f"x = {xs}"          # the batch, in one print


SCRIPT = r"""
import json, sys
import numpy as np
import tracejit as tj
from tracejit.backend.engine import jit
tj.config.cache_dir = sys.argv[1]
shift = float(sys.argv[2])

def cb(a):
    return a + shift

def f(x):
    y = tj.pure_callback(cb, x, np.exp(x) * 2.0)
    tj.debug.print("y={}", y[0])
    return np.sin(y) * 3.0

base = dict(jit.stats)
x = np.arange(4.0)
out = tj.jit(f)(x)
print(json.dumps({"ok": bool(np.allclose(out, np.sin(np.exp(x) * 2.0 + shift) * 3.0)),
                  "compiled": jit.stats["compiled"] - base["compiled"],
                  "loaded": jit.stats["loaded"] - base["loaded"]}))
"""


def test_disk_cache_keeps_native_parts_and_calls_the_right_callback(tmp_path):
    """The callable lives in the equation, not in the LLVM IR: a second process loads the
    native steps from the disk cache and still calls its own callback."""
    def run(shift):
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), str(shift)],
                             capture_output=True, text=True, check=True,
                             env=dict(os.environ, TRACEJIT_BACKEND="llvm"))
        lines = out.stdout.strip().splitlines()
        return lines[0], json.loads(lines[-1])

    first = run(1.0)
    assert first == ("y=3.0", {"ok": True, "compiled": first[1]["compiled"], "loaded": 0})
    assert first[1]["compiled"] >= 1
    second = run(2.0)
    assert second == ("y=4.0", {"ok": True, "compiled": 0, "loaded": first[1]["compiled"]})


def test_artifacts_refuse_a_callback_and_keep_a_print():
    """A Python callable has no data form: exporting a graph that calls one is refused (or
    left out when not strict); a print (a format string and a pytree structure) is data."""
    from tracejit.artifact import ArtifactError

    calls = tj.jit(lambda v: tj.pure_callback(np.tanh, v, v) * 2.0)
    prints = tj.jit(lambda v: (tj.debug.print("v={}", v), v * 2.0)[1])
    x = np.ones(2)
    calls(x)
    prints(x)
    with pytest.raises(ArtifactError, match="pure_callback"):
        calls.export_artifact(strict=True)
    assert "0 signature" in repr(calls.export_artifact(strict=False))
    assert "1 signature" in repr(prints.export_artifact(strict=True))
