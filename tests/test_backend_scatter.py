"""Native scatter on the llvm backend against the interpreter: every mode and dtype, any axis,
repeated indices (accumulate; last wins for set), negative indices, literal operands, and
out-of-range indices raising IndexError."""
import numpy as np
import pytest

import tracejit as tj
from tracejit import interpret
from tracejit.backend import compile_graph
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.ops.structural import scatter_p

CASES = [(0, (5,), np.array([0, 2, 2, -1, 4])),
         (1, (3, 4, 2), np.array([[1, 1], [0, -4]])),
         (0, (4, 3), np.array(2)),
         (2, (2, 3, 4), np.array([3, 3, 3], dtype=np.int32))]


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int32, np.int64, np.bool_,
                                np.complex128, np.complex64])
@pytest.mark.parametrize("mode", ["set", "add", "mul", "min", "max"])
def test_scatter_matches_interpreter(dt, mode):
    if np.dtype(dt).kind == "c" and mode in ("min", "max"):
        pytest.skip("complex min/max scatter stays a NumPy fallback")
    rng = np.random.default_rng(0)
    for axis, shape, idx in CASES:
        ushape = shape[:axis] + idx.shape + shape[axis + 1:]
        types = [Type(np.dtype(dt), shape), Type(idx.dtype, idx.shape),
                 Type(np.dtype(dt), ushape)]
        graph, _ = make_graph(lambda x, i, u: scatter_p.bind(x, i, u, axis=axis, mode=mode),
                              types)
        x = (rng.standard_normal(shape) * 3).astype(dt)
        u = (rng.standard_normal(ushape) * 3).astype(dt)
        if np.dtype(dt).kind == "f":
            x.reshape(-1)[0] = np.nan
        exe = compile_graph(graph)
        assert exe.native and "scatter" in exe.describe()
        with np.errstate(invalid="ignore"):
            want = interpret.run(graph, [x, idx, u])[0]
        np.testing.assert_array_equal(exe([x, idx, u])[0], want)
        for bad in (shape[axis], -shape[axis] - 1):
            with pytest.raises(IndexError):
                exe([x, np.full(idx.shape, bad, idx.dtype), u])


def test_gather_gradient_is_a_native_scatter_add():
    g = tj.jit(tj.grad(lambda x, i: np.sum(x[i] ** 2)), backend="llvm")
    x, i = np.arange(5.0), np.array([1, 1, 3, -1])
    np.testing.assert_array_equal(g(x, i), [0.0, 4.0, 0.0, 6.0, 8.0])
    exe = g.lower(x, i).executable
    assert exe.native and "scatter[add" in exe.describe()


def test_scatter_with_literal_updates():
    def f(x, i):
        return scatter_p.bind(x, i, np.float64(7.0) * np.ones((2,)), axis=0, mode="set")
    x, i = np.zeros(4), np.array([3, 0])
    got = tj.jit(f, backend="llvm")(x, i)
    np.testing.assert_array_equal(got, [7.0, 0.0, 0.0, 7.0])
