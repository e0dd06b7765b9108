"""Errors of the NumPy layer name the operation, the shapes/dtypes involved, the user's
file:line (this file), and what to do instead."""
import inspect
import os

import numpy as np
import pytest

import tracejit
import tracejit.numpy as tnp
from np_support import ALL  # noqa: F401

HERE = os.path.basename(__file__)


def _line_of(fn, text):
    """The line number in this file of the line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return start + k
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def _raises(exc, fn, *args, marker, must=()):
    """Trace ``fn`` on ``args``; it must raise ``exc`` naming this file at ``marker``'s line."""
    with pytest.raises(exc) as info:
        tracejit.trace(fn)(*args)
    msg = str(info.value)
    line = _line_of(fn, marker)
    assert f"{HERE}:{line}" in msg, f"message does not name {HERE}:{line}:\n{msg}"
    for text in must:
        assert text in msg, f"{text!r} missing from:\n{msg}"
    return msg


A = np.ones((3, 4))

pytestmark = pytest.mark.usefixtures("interpret_backend")
B = np.ones((4, 3))


def test_broadcast_mismatch():
    def f(a, b):
        return a + b  # HERE
    _raises(tracejit.ShapeError, f, A, B, marker="# HERE", must=("add", "(3, 4)", "(4, 3)"))

    def g(a, b):
        return np.where(a > 0, a, b)  # HERE
    _raises(ValueError, g, A, B, marker="# HERE", must=("where", "(3, 4)", "(4, 3)"))


def test_matmul_mismatch():
    def f(a):
        return a @ a  # HERE
    _raises(tracejit.ShapeError, f, A, marker="# HERE", must=("matmul", "(3, 4)"))

    def g(a, b):
        return np.dot(a, b.T)  # HERE
    _raises(tracejit.ShapeError, g, A, B, marker="# HERE", must=("dot", "(3, 4)", "(3, 4)"))

    def h(a, b):
        return np.matmul(a[None], b[:3, :2][None])  # HERE
    _raises(tracejit.ShapeError, h, A, B, marker="# HERE", must=("matmul", "(1, 3, 4)",
                                                                 "(1, 3, 2)"))


def test_concatenate_mismatch():
    def f(a, b):
        return np.concatenate([a, b])  # HERE
    _raises(tracejit.ShapeError, f, A, B, marker="# HERE", must=("concatenate", "(3, 4)",
                                                                 "(4, 3)"))

    def g(a, b):
        return np.stack([a, b])  # HERE
    _raises(tracejit.ShapeError, g, A, B, marker="# HERE", must=("stack", "(3, 4)", "(4, 3)"))

    def h(a):
        return a.reshape(5, 2)  # HERE
    _raises(tracejit.ShapeError, h, A, marker="# HERE", must=("reshape", "(3, 4)", "(5, 2)"))


@pytest.mark.parametrize("name,call", [
    ("numpy.histogram2d", lambda a: np.histogram2d(a[0], a[1])),  # HERE
    ("numpy.lib.stride_tricks.sliding_window_view",
     lambda a: np.lib.stride_tricks.sliding_window_view(a, 2)),  # HERE
    ("numpy.trim_zeros", lambda a: np.trim_zeros(a[0])),  # HERE
])
def test_unsupported_numpy_function(name, call):
    with pytest.raises(tracejit.UnsupportedError) as info:
        tracejit.trace(call)(A)
    msg = str(info.value)
    assert name in msg and "not supported" in msg, msg
    assert HERE in msg, msg


def test_unsupported_ufunc_and_out_argument():
    def f(a):
        return np.divmod(a, 2.0, out=(a, a))  # HERE
    _raises(tracejit.UnsupportedError, f, A, marker="# HERE", must=("divmod", "out"))

    def g(a):
        return np.add.at(a, [0], 1.0)  # HERE
    _raises(tracejit.UnsupportedError, g, A, marker="# HERE", must=("add.at",))

    identity = np.frompyfunc(lambda v: v, 1, 1)    # a ufunc tracejit cannot know

    def h(a):
        return identity(a)  # HERE
    _raises(tracejit.UnsupportedError, h, A, marker="# HERE", must=("ufunc", "not supported"))


@pytest.mark.parametrize("dtype", [np.longdouble, object, str, "datetime64[D]"])
def test_unsupported_dtypes(dtype):
    def astype(a):
        return a.astype(dtype)  # HERE
    msg = _raises(tracejit.DTypeError, astype, A, marker="# HERE",
                  must=("does not support dtype", "supported dtypes are", "float32"))
    assert str(np.dtype(dtype)) in msg or np.dtype(dtype).kind in "OU", msg

    arg = np.zeros(2, dtype=dtype)
    with pytest.raises(tracejit.InputError) as info:
        tracejit.trace(lambda a: a)(arg)
    msg = str(info.value)
    assert "args[0]" in msg and ("does not support dtype" in msg or "not an array" in msg)
    assert HERE in msg


def test_unsupported_dtype_constant():
    wide = np.ones(4, np.longdouble)

    def f(a):
        return a + wide  # HERE
    _raises(tracejit.DTypeError, f, np.ones(4), marker="# HERE",
            must=(str(wide.dtype), "supported dtypes are", ".astype"))


ADVICE = ("tracejit.numpy.where", "tracejit.cond", "static_argnums")


@pytest.fixture
def no_autograph():
    old = tracejit.config.autograph
    tracejit.config.autograph = False        # the error a conversion would otherwise avoid
    yield
    tracejit.config.autograph = old


def test_if_on_tracer(no_autograph):
    def f(a):
        if a[0, 0] > 0:  # HERE
            return a
        return -a
    _raises(tracejit.ConcretizationError, f, A, marker="# HERE", must=ADVICE + ("bool[]",))

    def g(a):
        return a if (a > 0).all() else -a  # HERE
    _raises(tracejit.ConcretizationError, g, A, marker="# HERE", must=ADVICE)

    def h(a):
        while a.sum() > 0:  # HERE
            a = a - 1
        return a
    _raises(tracejit.ConcretizationError, h, A, marker="# HERE", must=("while_loop",))


def test_if_on_tracer_converted_or_named():
    # with conversion (the default) these trace; what cannot be converted names the line
    def f(a):
        if a[0, 0] > 0:
            return a
        return -a
    np.testing.assert_array_equal(tracejit.trace(f)(A), f(A))

    def k(a):
        while True:
            try:                     # (a loop with a try stays as written)
                if a.sum() > 0:  # HERE
                    break
            finally:
                pass
        return a
    _raises(tracejit.ConcretizationError, k, A, marker="# HERE", must=("try",))


def test_float_int_of_tracer():
    def f(a):
        return float(a[0, 0])  # HERE
    _raises(tracejit.ConcretizationError, f, A, marker="# HERE",
            must=("float()", "static argument"))

    def g(a):
        return int(a.sum())  # HERE
    _raises(tracejit.ConcretizationError, g, A, marker="# HERE", must=("int()",))

    def h(a):
        return a.item()  # HERE
    _raises(tracejit.ConcretizationError, h, A, marker="# HERE", must=(".item()",))


def test_tracer_as_shape():
    # (a NumPy integer is data, traced like an array)
    def f(a, n):
        return tnp.zeros(n)  # HERE
    _raises(tracejit.ConcretizationError, f, A, np.int64(3), marker="# HERE", must=("static_argnums",))

    def g(a, n):
        return a.reshape(n, -1)  # HERE
    _raises(tracejit.ConcretizationError, g, A, np.int64(3), marker="# HERE", must=("static",))

    def h(a, n):
        return tnp.arange(n) * 1.0  # HERE
    _raises(tracejit.ConcretizationError, h, A, np.int64(3), marker="# HERE", must=("static_argnums",))

    def h2(a, n):
        return np.arange(n) * 1.0  # HERE  (C function without dispatch: core's __array__ error)
    _raises(tracejit.ConcretizationError, h2, A, np.int64(3), marker="# HERE", must=("concrete",))

    def k(a, n):
        return [a for _ in range(n)]  # HERE
    _raises(tracejit.ConcretizationError, k, A, np.int64(3), marker="# HERE", must=("static_argnums",))

    # the fix the message suggests works; a Python int is specialised on without it
    out = tracejit.trace(lambda a, n: a.reshape(n, -1), static_argnums=1)(A, 3)
    assert out.shape == (3, 4)
    for fn in (f, g, h, h2):
        assert tracejit.trace(fn)(A, 3).shape == fn(A, 3).shape


def test_traced_boolean_mask_index():
    def f(a):
        return a[a > 0]  # HERE
    _raises(tracejit.ConcretizationError, f, A, marker="# HERE",
            must=("boolean mask", "where", "bool[3,4]"))

    def g(a):
        return np.where(a > 0)  # HERE
    _raises(tracejit.UnsupportedError, g, A, marker="# HERE", must=("three-argument",))


def test_bool_arithmetic_errors_like_numpy():
    b = np.array([True, False])

    def f(a):
        return a - a  # HERE
    _raises(TypeError, f, b, marker="# HERE", must=("boolean subtract", "logical_xor"))

    def g(a):
        return -a  # HERE
    _raises(TypeError, g, b, marker="# HERE", must=("bool", "logical_not"))


def test_complex_to_real_astype_error():
    def f(a):
        return (a + 1j).astype(np.float64)  # HERE
    with pytest.raises(TypeError, match="imaginary part"):
        tracejit.trace(f)(A)
