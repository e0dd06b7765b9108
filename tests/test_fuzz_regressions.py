"""Minimised programs the differential fuzzer (tests/fuzz) or users found wrong on the llvm
backend or under a transform, kept as exact regression tests against the interpreter and
finite differences. Each test names the root cause that was fixed."""
import numpy as np
import pytest

import tracejit as tj


def agree(f, *args, rtol=1e-12, calls=2):
    """llvm (first call: Python path; later calls: native entry) equals the interpreter."""
    want = tj.jit(f, backend="interpret")(*args)
    jf = tj.jit(f, backend="llvm")
    for _ in range(calls):
        got = jf(*args)
        for g, w in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                        np.atleast_1d(want) if not isinstance(want, tuple) else want):
            assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


# take() of a value computed in the same loop group read elements not yet computed (a KeyError
# in buffers.slot_of when the operand had no slot, wrong values when it had one): a gathered
# operand must be stored by an earlier step (plan/partition.py, _can_join)

def test_take_of_a_member_of_its_own_loop():
    def f(x, y):
        v1 = np.clip(y, -0.81, 2.17)[1]
        v2 = x * v1
        v6 = np.cumsum(v2.reshape((10,)).max(axis=0))
        v8 = ((v2 + v2) - v6).reshape(1, 10, 1)
        v11 = np.sqrt(np.abs(np.clip(v8, -16.54, 2.98)) + 0.1)
        return v11[np.array([-1]), 0:]
    rng = np.random.default_rng(0)
    agree(f, rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal(5), rtol=1e-6)


def test_take_of_a_member_gives_right_values_on_every_call():
    def g(s, x, y, z):
        v0 = np.where(x < z, y, x)
        v1 = np.reciprocal(2.0 + np.cos(v0))
        v2 = np.sum(v1, keepdims=True)
        v3 = v1.max(axis=1)
        v5 = np.sin(v3)
        v6 = np.moveaxis(-v2, 0, 1)
        v7 = v6[np.array([0])]
        v8 = v7[0, -1]
        v9 = np.where(v5 <= v6, v5, v6)
        v10 = np.dot(v9, v3)
        v13 = np.cos(np.floor(v10 @ v10))
        v18 = v0 @ v1
        return v18 * 0.75 + np.floor(y) - 0.5 * v8.reshape(1, 1) - 0.5 * (z / v13)
    rng = np.random.default_rng(1)
    agree(g, -1.752, rng.standard_normal((4, 4)), np.array(0.3), np.array(-0.2), calls=3)


def test_take_of_a_member_minimal():
    agree(lambda x: (-x)[np.array([1, 0])], np.array([1.5, 2.0]))            # KeyError

    def stored(x):                         # -x has a slot (an output): read before written
        y = -x
        return y, y[np.array([3, 2, 1, 0])]
    agree(stored, np.arange(4.0), calls=3)


# x[i] = v on a copy of a closed-over (outer) tracer rebound only the Var, not the builder, and
# the trace captured the mutable Tracer object: the derivative through the written values was
# silently 0, and vmap(grad) raised KeyError (core.Builder._capture, methods._setitem)

def _copy_then_write(w, s):
    s2 = s.copy()
    s2[0] = s[0] * w
    return np.sum(s2)


W, S = np.array([.5, .25, 2.]), np.arange(1., 7.).reshape(2, 3)


def test_grad_through_a_write_into_a_copy():
    for backend in ("interpret", "llvm"):
        g = tj.jit(tj.grad(_copy_then_write), backend=backend)
        np.testing.assert_array_equal(g(W, S), S[0])
    np.testing.assert_array_equal(tj.grad(_copy_then_write)(W, S), S[0])


def test_vmap_grad_through_a_write_into_a_copy():
    got = tj.vmap(tj.grad(_copy_then_write), in_axes=(0, None))(np.stack([W, 2 * W]), S)
    np.testing.assert_array_equal(got, np.stack([S[0], S[0]]))


def test_np_copy_and_astype_copy_as_numpy_does():
    def f(x):
        y = np.copy(x)
        y[0] = 5.0
        z = x.astype(x.dtype)
        z[1] = 7.0
        return x, y, z
    x = np.arange(3.0)
    for got, want in zip(tj.jit(f)(x), f(x.copy())):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, np.arange(3.0))


# an internal failure is a CompilerError naming stage and primitive, with the graph saved

def test_internal_failure_is_a_compiler_error_with_a_saved_graph(monkeypatch, tmp_path):
    import pytest
    from tracejit.backend.plan import partition
    monkeypatch.setattr(tj.config, "bug_report_dir", str(tmp_path))
    monkeypatch.setattr(partition, "_can_join", lambda plan, group, eqn, operands: True)  # old bug
    with pytest.raises(tj.CompilerError) as info:
        tj.jit(lambda x: (-x)[np.array([1, 0])])(np.array([1.5, 2.0]))
    msg = str(info.value)
    # the plan verifier (on under pytest) catches it while planning; without it, emission
    # failed later with a KeyError in slot_of
    assert "fusion planning" in msg and "primitive 'take'" in msg and "PlanError" in msg
    path = msg.split("are in ")[1].split(" ")[0]
    assert path.startswith(str(tmp_path))
    text = open(path).read()
    assert "take[axis=0]" in text and "Traceback" in text


def test_user_errors_are_not_compiler_errors():
    import pytest

    @tj.custom_jvp
    def f(x):
        return np.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        raise KeyError("the user's own bug")
    with pytest.raises(KeyError, match="the user's own bug"):
        tj.jvp(f, (1.0,), (1.0,))
    with pytest.raises(tj.ShapeError):
        tj.jit(lambda x: x + np.ones(3))(np.ones(4))


# a graph output that is a reshape of a NumPy fallback's result (a scatter with repeated
# indices under jacfwd): planning decided "return the fallback's array", the run looked at the
# output var's own producer (none: it is a view) and returned the uninitialised output buffer
# (1.5e-323 on one call, 0 on another). The run now reads the plan's decision (plan.py_outputs).

def test_output_viewing_a_fallback_result_is_returned():
    def f(a0):
        v1 = np.cumprod(a0)
        return v1.at[np.array([-1, -1, -1])].add(v1)
    jf = tj.jit(tj.jacfwd(f))
    for x in (0.7, 0.3, -2.0):
        for _ in range(2):
            np.testing.assert_array_equal(jf(np.array(x)), [4.0])


# sinc's derivative through sin(pi x)/(pi x) cancels near 0: float32 gradients were off by 30%
# there (and differed between backends). A series near 0 has a stable derivative.

def test_sinc_gradient_is_accurate_near_zero_in_float32():
    x = np.linspace(-1e-3, 1e-3, 2001).astype(np.float32)
    want = tj.grad(lambda a: np.sum(np.sinc(a)))(x.astype(np.float64))
    for backend in ("interpret", "llvm"):
        got = tj.jit(tj.grad(lambda a: np.sum(np.sinc(a))), backend=backend)(x)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(tj.jit(np.sinc)(x), np.sinc(x), rtol=2e-7)


# cumprod's JVP was a dense O(n²) construction for every length (a 10^5-element gradient ran
# for minutes, a fuzz "hang"); long axes use the product rule's recurrence as a scan

def test_cumprod_gradient_is_linear_in_length_and_exact_with_zeros():
    from tracejit.test_util import check_grads
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, (3, 40))
    x[1, 3] = x[2, 0] = x[2, 9] = 0.0
    check_grads(lambda a: np.cumprod(a, axis=1), (x,), order=2)
    check_grads(lambda a: np.prod(a, axis=1), (x,), order=2)
    big = rng.uniform(0.999, 1.001, 200_000)
    g = tj.jit(tj.grad(lambda a: np.sum(np.cumprod(a))))(big)
    c = np.cumprod(big)
    want = np.cumsum(c[::-1])[::-1] / big                  # no zeros here: d/dx_j = sum_i c_i/x_j
    np.testing.assert_allclose(g, want, rtol=1e-9)


# matmul layout: free axes (0, 3, 4) of a (4, 1, 2, 1, 2) operand were merged into one strided
# dim because the size-1 axis between them skipped the stride check (wrong jacrev of np.inner,
# fuzz seed 101 #457); unit axes are now dropped before checking

def test_matmul_does_not_merge_free_axes_across_a_unit_axis():
    rng = np.random.default_rng(0)
    e, a = rng.normal(size=(4, 1, 2, 1, 2)), rng.normal(size=(1, 2, 1))
    agree(lambda e, a: np.tensordot(e, a, axes=([1, 2], [0, 1])), e, a)
    a0 = rng.normal(size=(1, 2, 1))
    want = tj.jit(tj.jacfwd(lambda a: np.inner(a, a)), backend="interpret")(a0)
    np.testing.assert_allclose(tj.jit(tj.jacrev(lambda a: np.inner(a, a)))(a0), want,
                               rtol=1e-14)


# take from a broadcast literal (np.cross with an all-zero operand): the gather needs a slot
# and a literal has none (KeyError in slot_of, fuzz seed 101 #443)

def test_take_from_a_broadcast_literal():
    agree(lambda a: np.cross(a, np.imag(a)), np.array([0.3, -1.2, 0.7]))
    agree(lambda a: np.broadcast_to(a[0], (5, 2))[np.array([0, 4])] + a[1], np.arange(3.0))


# select's JVP with a NumPy complex scalar tangent: np.complex128 counted as a Python scalar
# when choosing the literal dtype (float64), then 0.82+0.59j failed to become a float literal

def test_select_jvp_with_a_complex_scalar_tangent():
    def f(a, b):
        return np.where(a > 0.0, a, (0.82 + 0.59j)) * b
    out, t = tj.jvp(f, (np.complex128(0.3 + 0.1j), np.ones(2)), (np.complex128(1.0), np.ones(2)))
    np.testing.assert_allclose(t, [1.3 + 0.1j] * 2)


# cumsum/cumprod of a value that is a broadcast constant (np.imag of a real input, zeros_like):
# the scan kernel reads a slot and a literal has none (KeyError in slot_of, fuzz 503 #500)

def test_cumulative_of_a_constant():
    agree(lambda a: np.cumsum(np.zeros_like(a).reshape(1)), np.float64(0.3))
    agree(lambda a: np.cumprod(np.imag(a).reshape(1, -1), axis=1) + a, np.ones(3))


# a Python complex tangent of a complex128 primal was broadcast as a float64 literal in a JVP
# rule (CompilerError under jit, fuzz 503 #1240): tangents take their primal's tangent type

def test_python_scalar_tangent_takes_the_primals_type():
    f = tj.jit(lambda z: tj.jvp(lambda z: z + np.arange(-1.0, 2.25, 0.5), (z,), (1.0 + 0.5j,)))
    out, t = f(np.complex128(0.3 + 0.2j))
    np.testing.assert_array_equal(t, np.full(7, 1.0 + 0.5j))


# all/any over a zero-length axis returned a NumPy array inside a trace (no .at; fuzz 508 #1035)

def test_all_over_an_empty_axis_is_traced():
    agree(lambda a: np.all(a, axis=2).at[0].set(False), np.zeros((3, 1, 0)))


# products of bool arrays are bool in NumPy (any of the ands); vdot (conj of a bool is int) and
# einsum returned int64 counts: a silently different result (found by a fuzz sweep over bools)

def test_bool_products_are_bool():
    b = np.array([[True, False, True], [False, False, True]])
    for f in (lambda a: np.vdot(a, a), lambda a: np.einsum("ij,ij->i", a, a),
              lambda a: np.einsum("ij,kj->ik", a, a), lambda a: np.einsum("ii", a[:, :2])):
        want = f(b)
        for backend in ("interpret", "llvm"):
            got = tj.jit(f, backend=backend)(b)
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(got, want)


# Hessians through a while_loop (fuzz 302 #3554, 305 #1159): the batched linear pass
# instantiated a symbolic-zero tangent of the loop's tape, a stack of run-time length, as a
# broadcast to shape (None, ...) (a CompilerError). A zero stack now takes its length from
# another stack the scan reads (ad_util.zeros_like_stack).

def test_hessian_through_a_while_loop_with_a_cond():
    def f(a1, a2):
        v0 = tj.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, tj.cond(
            c[1] > 0.5, lambda z: z * 0.9, lambda z: z * 0.5 + np.sin(z), c[1])), (0, a2))[1]
        return np.sum(np.power(np.abs(v0) + 0.5, a1))
    args = (np.array([0.3]), 0.7)
    for backend in ("interpret", "llvm"):
        h = tj.jit(tj.hessian(f, argnums=(0, 1)), backend=backend)(*args)
        fwd = tj.jit(tj.jacfwd(tj.jacfwd(f, argnums=(0, 1)), argnums=(0, 1)),
                     backend=backend)(*args)
        for a, b in zip(tj.tree.flatten(h)[0], tj.tree.flatten(fwd)[0]):
            np.testing.assert_allclose(np.ravel(a), np.ravel(b), rtol=1e-10)


# complex sin/cos/cosh with a zero imaginary part: the result's zero imaginary part kept the
# input's sign instead of the product's (cos(2 + 0j) is -0.416 - 0j in NumPy); np.angle then
# gave +pi for -pi (fuzz 401 #107)

def test_complex_trig_zero_imaginary_signs():
    z = np.array([2 + 0j, complex(2, -0.0), -1 + 0j, complex(-1, -0.0), 0.5 + 0j,
                  complex(np.inf, 0), complex(800, 0), complex(-800, -0.0), complex(np.nan, 0),
                  complex(-0.0, 0), complex(3, -0.0)])
    fs = (np.cos, np.sin, np.cosh, np.sinh, np.exp, np.tanh)
    with np.errstate(all="ignore"):
        want = [f(z) for f in fs]
    got = tj.jit(lambda z: tuple(f(z) for f in fs), backend="llvm")(z)
    for g, w in zip(got, want):
        for a, b in ((g.real, w.real), (g.imag, w.imag)):
            same = (a == b) & (np.signbit(a) == np.signbit(b)) | np.isnan(a) & np.isnan(b) | \
                (np.isclose(a, b, rtol=1e-14, atol=0) & (b != 0))
            assert same.all(), (z[~same], a[~same], b[~same])
    agree(lambda z: np.angle(np.cos(z)), np.array([2 + 0j, 2.5 + 0j]))


def test_isclose_makes_its_second_operand_inexact_as_numpy():
    """fuzz 771 #2385: isclose(1, uint64 2**64-5) was True (1 - b wrapped in uint64); bools
    raised 'boolean subtract'; an infinite b must be equal to be close."""
    cases = [(1, np.array(2**64 - 5, np.uint64)), (np.array([True, False]), np.array([True, True])),
             (np.array([1.0, np.inf, np.nan]), np.array([1.0, np.inf, np.nan])), (np.arange(3), 1),
             (np.array([3], np.int8), np.array([3], np.uint8))]
    for a, b in cases:
        for equal_nan in (False, True):
            want = np.isclose(a, b, equal_nan=equal_nan)
            for backend in ("interpret", "llvm"):
                got = tj.trace(lambda a, b: np.isclose(a, b, equal_nan=equal_nan),
                               backend=backend)(a, b)
                np.testing.assert_array_equal(got, want)


# NumPy scalars take no fast power path (np.True_ ** 2 is int64; bool *arrays* square to int8),
# and a ufunc of Python numbers gives a strongly typed NumPy scalar (np.abs(2.0) is an
# np.float64, so a float32 divided by it is float64): fuzz 9501 #113, #178

def test_numpy_scalar_powers_and_ufuncs_of_python_numbers():
    def f(k, x, a):
        b = np.abs(k).any(keepdims=True)          # a NumPy bool scalar
        m = np.max(x)                              # a float32 NumPy scalar
        m /= m * -0.75
        m /= np.abs(a)                             # np.abs of a Python float: np.float64
        return b ** 2, m, (x > 0) ** 2, np.add(k, 1) + np.ones(2, np.uint8)
    for backend in ("interpret", "llvm"):
        x = np.array([1.5, -2.0], np.float32)
        want, got = f(3, x, -2.0), tj.jit(f, backend=backend)(3, x, -2.0)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)


def test_numpy_functions_of_python_numbers_are_strongly_typed():
    """np.reshape / np.asarray of a Python float give float64 arrays, which promote a float32
    array to float64 (fuzz 9521 #534, #882: they stayed weak, so the result was float32)."""
    def f(x, a):
        v = np.reshape(a, (-1,))
        w = np.asarray(a) + 1
        return v + x, w - x[0]
    for backend in ("interpret", "llvm"):
        x = np.array([1.5, -2.0], np.float32)
        for g, w in zip(tj.jit(f, backend=backend)(x, 0.25), f(x, 0.25)):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)


def test_put_into_a_read_only_view_fails_as_read_only_first():
    """np.put into a read-only view with an out-of-range index: NumPy's ValueError (read-only)
    comes before the IndexError, as for x[i] = v (fuzz 9521 #931)."""
    def f(a):
        np.put(np.diagonal(a, -1), [2], 0)
        return a
    with pytest.raises(ValueError):
        f(np.ones((4, 1)))
    for backend in ("interpret", "llvm"):
        with pytest.raises(ValueError, match="read-only"):
            tj.jit(f, backend=backend)(np.ones((4, 1)))


def test_augmented_write_into_a_read_only_view_fails_as_read_only_first():
    """v += 1j on a read-only view of a float array: NumPy's ValueError (read-only) comes before
    the casting TypeError (fuzz 9541 #58)."""
    def f(a):
        v = np.diagonal(a, -1)
        v += 1j
        return a
    with pytest.raises(ValueError):
        f(np.ones((3, 3)))
    for backend in ("interpret", "llvm"):
        with pytest.raises(ValueError, match="read-only"):
            tj.jit(f, backend=backend)(np.ones((3, 3)))


def _raises_like_numpy(f, *args):
    """f raises on every backend the exception class NumPy raises (args copied per call)."""
    fresh = lambda: [a.copy() if isinstance(a, np.ndarray) else a for a in args]  # noqa: E731
    with pytest.raises(Exception) as info:
        f(*fresh())
    for backend in ("interpret", "llvm"):
        with pytest.raises(info.type):
            tj.jit(f, backend=backend)(*fresh())


def test_numpy_scalar_in_a_list_of_values_is_stored_through_int():
    """np.place(v, mask, [s]) with s a computed int64 NumPy scalar out of int8's range: NumPy
    converts the list with np.array(values, int8), which stores each scalar through int()
    (OverflowError); it was cast, wrapping (fuzz 9521 #43)."""
    def f(a0):
        v0 = a0.astype(np.int64).sum()
        v1 = np.empty_like(a0)
        np.copyto(v1, a0)
        np.place(v1, np.array([[False], [True], [False], [False]]), [v0 * 2])
        return v1
    _raises_like_numpy(f, np.full((4, 1), 100, np.int8))
    ok = np.array([[1], [2], [3], [-4]], np.int8)
    for backend in ("interpret", "llvm"):
        np.testing.assert_array_equal(tj.jit(f, backend=backend)(ok), f(ok))


def test_computed_python_int_next_to_a_narrower_array_is_range_checked():
    """a0 -= a1 * 2 with a0 uint16 and a1 a Python int: a1 * 2 is a Python int, which NumPy
    converts to uint16 (OverflowError when it does not fit); only argument ints carried a
    range, so a computed one wrapped (fuzz 9541 #153, #489)."""
    def f(a0, a1):
        a0 -= a1 * 2
        return a0
    for k in (40000, -1):
        _raises_like_numpy(f, np.array(5, np.uint16), k)
    for backend in ("interpret", "llvm"):
        got = tj.jit(f, backend=backend)(np.array(50000, np.uint16), 30000)
        assert got.dtype == np.uint16 and got == f(np.array(50000, np.uint16), 30000)


def test_python_int_arithmetic_is_exact_or_raises():
    """Python ints computed from Python ints are unbounded in Python; traced, they are int64:
    what fits is exact (and stored into int8 as NumPy stores it), // and % by zero raise
    ZeroDivisionError and a negative shift ValueError, as Python, and a result beyond int64
    raises OverflowError where Python would go on with a big int (never a wrapped value)."""
    as_python = [(lambda a, k: (a.__setitem__(0, k * 2), a)[1], 100),     # 200: out of int8
                 (lambda a, k: a + k // (k - k), 3), (lambda a, k: a + k % (k - k), 3),
                 (lambda a, k: a + (k << (k - 4)), 3)]
    for f, k in as_python:
        _raises_like_numpy(f, np.zeros(2, np.int8), k)
    beyond_int64 = [(lambda a, k: a + (k * k) % 7, 2**62),
                    (lambda a, k: a + (k + k) // 2**62, 2**62),
                    (lambda a, k: a + (-k - k) // 2**62, 2**62 + 1),
                    (lambda a, k: a + (k << 2) % 3, 2**62),
                    (lambda a, k: a + k ** 3 % 5, 2**21 + 1),
                    (lambda a, k: a + k ** (k % 5 + 20) % 5, 9),
                    (lambda a, k: a + abs(-k - 1) % 3, 2**63 - 1)]
    for f, k in beyond_int64:
        f(np.zeros(2, np.int8), k)                       # Python: a big int, then in range
        for backend in ("interpret", "llvm"):
            with pytest.raises(OverflowError, match="does not fit int64"):
                tj.jit(f, backend=backend)(np.zeros(2, np.int8), k)
    fits = [(lambda a, k: a + (k * k) % 7, 2**31), (lambda a, k: a + k ** 3 % 5, 2**20),
            (lambda a, k: a + k ** (k % 5 + 18) % 5, 5), (lambda a, k: a + (-k) // 3, 7),
            (lambda a, k: a + abs(k) % 100, -2**63 + 1), (lambda a, k: a + (k << 61) % 9, 3)]
    for f, k in fits:
        want = f(np.zeros(2, np.int8), k)
        for backend in ("interpret", "llvm"):
            got = tj.jit(f, backend=backend)(np.zeros(2, np.int8), k)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_an_array_written_with_a_python_number_keeps_its_strong_type():
    """a1[-1] = py_float over the whole of a1 made a1 weakly typed (the written value's type),
    so np.asarray(a1) became a new array, writes through it missed a1, and a1 + float32 array
    was float32 (fuzz 9603 #609)."""
    def f(a0, a1):
        a1[-1] = a0 + 2.0
        v3 = np.asarray(a1)
        v3[np.array([-1])] = v3 - v3.mean()
        return a1
    writes = [lambda a, k, b: (a.__setitem__(Ellipsis, k), a + b)[1],
              lambda a, k, b: (a.fill(k), a + b)[1],
              lambda a, k, b: (np.copyto(a, k), a + b)[1]]
    for backend in ("interpret", "llvm"):
        a, b = np.array([0.5]), np.array([0.5])
        np.testing.assert_array_equal(tj.jit(f, backend=backend)(1.0, a), f(1.0, b))
        np.testing.assert_array_equal(a, b)
        for g in writes:
            want = g(np.array([0.5]), 1.5, np.ones(1, np.float32))
            got = tj.jit(g, backend=backend)(np.array([0.5]), 1.5, np.ones(1, np.float32))
            assert got.dtype == want.dtype == np.float64 and got == want


def test_broadcast_view_of_a_python_scalar_is_read_only():
    """np.broadcast_to(k, (2,))[...] = 1 with k a Python number: NumPy's ValueError (a
    read-only view); making the weak result strongly typed dropped the view link, so the write
    went into a fresh array (fuzz 9605 #233)."""
    def f(k):
        np.broadcast_to(k, (2,))[...] = 1
        return k
    for k in (3, 2.5):
        _raises_like_numpy(f, k)


_STORE_INDICES = [0, (0,), np.array(0), slice(0, 2), Ellipsis, np.array([True, True, False]),
                  [0, 1], np.array([0, 1])]       # (a bare True: refused, UnsupportedError)


def test_numpy_scalar_through_an_advanced_index_is_cast_as_an_array():
    """a1[mask] = a0 * 2 with a0 a 0-d uint64 array (a0 * 2 is an np.uint64 scalar) and a1
    int64: NumPy stores a NumPy scalar through an advanced index (an array or list, any
    boolean) as a 0-d array, with a C cast that wraps, and only through a basic index (ints,
    a 0-d int array, slices, ...) through int(), which raises OverflowError; tracejit raised
    for every index (fuzz 9711 #858). Python ints go through int() for every index."""
    values = [lambda a0: a0 * 2,                              # np.uint64 (traced)
              lambda a0: np.uint64(2**63 + 5),                # np.uint64 (constant)
              lambda a0: a0[...] * np.ones((), np.uint64),    # 0-d array: always cast
              lambda a0: 2**63 + 5]                           # Python int: always int()
    for make in values:
        for dtype in (np.int64, np.int8, np.uint8):
            for idx in _STORE_INDICES:
                def f(a0, a1, make=make, idx=idx):
                    a1[idx] = make(a0)
                    return a1
                args = lambda: (np.array(2**62 + 3, np.uint64), np.zeros(3, dtype))  # noqa: E731
                try:
                    want = f(*args())
                except OverflowError:
                    _raises_like_numpy(f, *args())
                    continue
                for backend in ("interpret", "llvm"):
                    got = tj.jit(f, backend=backend)(*args())
                    assert got.dtype == want.dtype
                    np.testing.assert_array_equal(got, want, err_msg=f"{idx!r} {backend}")


def _and_raising(a0):
    v2 = 0.0                                    # a Python float: v2.sum() raises AttributeError
    if (a0[0] >= 0.0) and (v2.sum() >= 1.0):
        return a0 * 2
    return a0 - 1


def _or_raising(a0):
    v2 = 0.0
    if (a0[0] >= 0.0) or (v2.sum() >= 1.0):
        return a0 * 2
    return a0 - 1


@pytest.mark.parametrize("f", [_and_raising, _or_raising])
def test_an_and_or_operand_that_raises_raises_only_when_python_evaluates_it(f):
    """c1 and v2.sum() >= t with c1 traced and v2 a Python float: Python short-circuits when c1
    is false, tracejit evaluated the right operand and raised the AttributeError for every input
    (fuzz 9711 #399, #1129). The error is now raised when the compiled function runs, only for
    inputs where Python evaluates the operand (same type and message); vmap raises when any
    example would."""
    for backend in ("interpret", "llvm"):
        jf = tj.jit(f, backend=backend)
        for x in (np.array([-1.0, 2.0]), np.array([1.0, 2.0]), np.array([-3.0, 0.5])):
            try:
                want = f(x)
            except AttributeError as e:
                with pytest.raises(AttributeError, match=str(e)):
                    jf(x)
                continue
            np.testing.assert_array_equal(jf(x), want)
    fine = np.array([[-1.0, 2.0], [-2.0, 3.0]]) * (1 if f is _and_raising else -1)
    np.testing.assert_array_equal(tj.vmap(tj.jit(f))(fine), np.stack([f(r) for r in fine]))
    with pytest.raises(AttributeError):
        tj.vmap(tj.jit(f))(np.array([[-1.0, 2.0], [2.0, 3.0]]))


def _like_numpy(f, *args, rtol=1e-12):
    """f on both backends: NumPy's values and dtypes, or an exception of NumPy's class."""
    try:
        want = f(*args)
    except Exception as e:                       # noqa: BLE001 - NumPy's error is the oracle
        for backend in ("interpret", "llvm"):
            with pytest.raises(type(e)):
                tj.jit(f, backend=backend)(*args)
        return
    for backend in ("interpret", "llvm"):
        got = tj.jit(f, backend=backend)(*args)
        assert np.asarray(got).dtype == np.asarray(want).dtype, backend
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True)


_RED_X = np.random.default_rng(11).standard_normal((3, 4))
_RED_ROW = np.array([True, False, True, True])


@pytest.mark.parametrize("f", [
    lambda x: np.sum(x, initial=2.5), lambda x: np.max(x, initial=-5.5),
    lambda x: np.min(x, axis=0, initial=-1.5), lambda x: np.prod(x, initial=-1),
    lambda x: np.max(x, initial=300), lambda x: np.max(x, initial=np.array(300)),
    lambda x: np.max(x, initial=np.int64(300))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8, np.uint8, np.bool_])
def test_reduction_initial_is_stored_in_the_result_dtype(f, dtype):
    """np.sum(int8_x, initial=2.5): NumPy stores initial into the reduction's dtype as
    x[()] = v does (int(): adds 2; 300 into int8 raises OverflowError; a 0-d array wraps);
    tracejit combined it as a Python float, giving a float64 result and a wrong value (found
    while extending the fuzz generator)."""
    x = _RED_X * 3 if dtype != np.bool_ else _RED_X > 0
    _like_numpy(f, x.astype(dtype), rtol=1e-6)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(x, where=x > 0), lambda x: np.sum(x, axis=0, where=_RED_ROW),
    lambda x: x.sum(axis=1, keepdims=True, where=x < 0.5), lambda x: np.sum(x, where=False),
    lambda x: np.prod(x, axis=1, where=x > 0), lambda x: np.max(x, where=x > 0, initial=-5.0),
    lambda x: np.min(x, axis=0, where=_RED_ROW, initial=9.0), lambda x: np.max(x, where=x > 0),
    lambda x: np.mean(x, where=x > 0), lambda x: np.mean(x, axis=1, where=_RED_ROW),
    lambda x: np.all(x > 0, axis=1, where=_RED_ROW), lambda x: np.any(x > 1, where=x < 0),
    lambda x: np.sum(x, where=_RED_ROW, dtype=np.int16),
    lambda x: np.sum(x, where=np.array([1, 0, 1, 1])), lambda x: np.sum(x, where=x[:2] > 0)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int8])
def test_reductions_with_where_follow_numpy(f, dtype):
    """where= of sum/prod/max/min/mean/all/any (was refused): the masked-out elements take the
    identity (max/min: initial, which NumPy requires), mean divides by the selected count; a
    non-bool or non-broadcasting mask raises NumPy's error class."""
    _like_numpy(f, (_RED_X * 3).astype(dtype), rtol=1e-6)


def test_grad_of_a_masked_sum_and_mean():
    """The derivative of sum(where=m) is m, of mean(where=m) m / count."""
    x = _RED_X
    tj.test_util.check_grads(lambda x: np.sum(np.sin(x), where=x > 0), (x,), order=2,
                             modes=("fwd", "rev"))
    tj.test_util.check_grads(lambda x: np.mean(x * x, axis=0, where=_RED_ROW[:3, None]), (x,),
                             order=2, modes=("fwd", "rev"))


def test_a_masked_write_of_one_element_of_the_same_array_is_not_refused():
    """v[v > c] = a0 with v = np.ravel(a0) for a 0-d (or one-element) a0: NumPy's unbuffered
    element-by-element copy reads the one source element, which is only ever overwritten with
    itself, so the result is the buffered one; tracejit refused every overlapping masked write
    (UnsupportedError), here where NumPy raised IndexError on the next line (fuzz 12002 #468)."""
    def f(a0):
        v1 = np.reshape(np.ravel(a0), (-1,))
        v1[v1 > -0.25] = a0
        return v1 * 2, a0

    def g(a0):
        a0[a0 > 0] = a0[1:2]
        return a0
    for backend in ("interpret", "llvm"):
        for x in (np.array(0.5, np.float32), np.array(-1.5, np.float32)):
            got, want = tj.jit(f, backend=backend)(x.copy()), f(x.copy())
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
        x = np.array([0.5, -2.0, 3.0])
        np.testing.assert_array_equal(tj.jit(g, backend=backend)(x.copy()), g(x.copy()))


def _writes(v, k):
    v[k] = -k                                    # a basic index: NumPy checks it first


def _writes_column(v, k):
    v[0, k] = -1.0e30 * k                        # a traced float into uint64, a basic index


def _writes_literal(v, k):
    v[0, k] = -1                                 # a literal NumPy refuses, a traced index


def _writes_fancy(v, k):
    v[np.array([k])] = -k                        # an advanced index: the value comes first


@pytest.mark.parametrize("write", [_writes, _writes_column, _writes_literal, _writes_fancy])
@pytest.mark.parametrize("k", [5, -5, 1, -1, 0, 3])
def test_an_out_of_range_index_and_value_raise_numpys_error(write, k):
    """v[k] = -k into uint64 with k out of range: NumPy checks a basic index before it converts
    the value (IndexError), an advanced index after (OverflowError); tracejit raised the value's
    OverflowError first on both backends (fuzz 12101 #176: the value check ran before the
    scatter's bounds check). The value's run-time checks now hold only where the index is in
    bounds."""
    def f(v, k):
        write(v, k)
        return v
    want = None
    try:
        f(np.zeros((1, 4), np.uint64), k)
    except (IndexError, OverflowError) as e:
        want = type(e)
    for backend in ("interpret", "llvm"):
        v = np.zeros((1, 4), np.uint64)
        if want is None:
            np.testing.assert_array_equal(tj.jit(f, backend=backend)(v.copy(), k),
                                          f(v.copy(), k))
        else:
            with pytest.raises(want):
                tj.jit(f, backend=backend)(v, k)


@pytest.mark.parametrize("shape, axis", [((40,), 0), ((3, 37), 1), ((33, 2), 0), ((5, 64, 2), 1)])
@pytest.mark.parametrize("reverse", [False, True])
def test_derivative_of_a_long_cumprod_is_an_associative_scan(shape, axis, reverse):
    """cumprod's JVP over an axis longer than 16 was a sequential scan that the interpreter (the
    oracle) ran step by step in Python: 72 s for grad of cumprod then cbrt over 10^5 elements
    (fuzz 12004 #410). It is now a log-depth associative scan; exact with zeros (x[3] = 0)."""
    from tracejit.ops.reductions import cumprod_p
    rng = np.random.default_rng(7)
    x = rng.uniform(0.5, 1.5, shape)
    x.flat[3] = 0.0

    def f(x):
        return cumprod_p.bind(x, axis=axis, reverse=reverse)
    want = np.flip(np.cumprod(np.flip(x, axis), axis), axis) if reverse else np.cumprod(x, axis)
    np.testing.assert_allclose(tj.jit(f, backend="interpret")(x), want, rtol=1e-12)
    tj.test_util.check_grads(f, (x,), order=2, modes=("fwd", "rev"))
    t = rng.standard_normal(shape)
    for backend in ("interpret", "llvm"):
        _, dy = tj.jit(lambda x, t: tj.jvp(f, (x,), (t,)), backend=backend)(x, t)
        fd = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
        np.testing.assert_allclose(dy, fd, rtol=1e-6, atol=1e-8)


def test_grad_of_cumprod_over_a_long_axis_is_fast_in_the_interpreter():
    """The fuzz 12004 #410 program: one grad call in the interpreter took ~4 s of CPU (0.42 s
    at 10^4 elements, linear); now ~0.03 s (the bound leaves room for a loaded machine)."""
    import time

    def f(x):
        return np.sum(np.abs(np.cbrt(np.cumprod(x))))
    x = np.random.default_rng(0).uniform(0.5, 1.5, 100_000)
    g = tj.jit(tj.grad(f), backend="interpret")
    g(x)
    t = time.process_time()
    got = g(x)
    assert time.process_time() - t < 1.5
    np.testing.assert_allclose(got, tj.jit(tj.grad(f), backend="llvm")(x), rtol=1e-9)


def test_grad_of_a_while_loop_inside_a_fori_loop_compiles():
    """value_and_grad of fori_loop(while_loop(...)): the in-place planner sized the while's
    tape (a stack of run-time length) while asking whether the fori_loop may write its carry in
    place, a CompilerError (fuzz 12400 #1060); a body that may stop is now ruled out first."""
    def f(a):
        return np.sum(tj.fori_loop(0, 3, lambda i, u: tj.while_loop(
            lambda c: c[0] < 1, lambda c: (c[0] + 1, c[1] * 0.9), (0, u))[1], a))
    x = np.array([[0.5, -1.5]])
    want = tj.jit(tj.value_and_grad(f), backend="interpret")(x)
    got = tj.jit(tj.value_and_grad(f), backend="llvm")(x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(want[1], np.full_like(x, 0.9 ** 3), rtol=1e-12)


def test_x_to_the_power_one_is_a_new_array():
    """v = a ** 1 returned the argument itself (integer_pow's n == 1 shortcut), so
    np.fill_diagonal(v, 0.1) wrote into the caller's array (fuzz 12401 #508, both backends)."""
    def f(a):
        v = a ** 1
        np.fill_diagonal(v, 0.1)
        return np.cumsum(v, dtype=np.float64)
    for backend in ("interpret", "llvm"):
        a = np.arange(9, dtype=np.float32).reshape(3, 3)
        got = tj.jit(f, backend=backend)(a)
        np.testing.assert_array_equal(a, np.arange(9, dtype=np.float32).reshape(3, 3))
        np.testing.assert_array_equal(got, f(a.copy()))


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.bool_])
@pytest.mark.parametrize("e", [1, 2, np.int64(1), np.int64(2), np.int8(2), np.int32(3)])
def test_power_by_a_numpy_integer_promotes_the_base(dtype, e):
    """x ** np.int64(2) of a float32 (int8) array is float64 (int64) in NumPy: a NumPy scalar
    exponent is strong; the integer_pow shortcut kept the base's dtype."""
    x = (np.arange(6) % 3).astype(dtype)
    want = x ** e
    for backend in ("interpret", "llvm"):
        got = tj.jit(lambda x: x ** e, backend=backend)(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.float32, np.bool_, np.int64])
def test_dot_of_two_selections_keeps_the_dtype(dtype):
    """np.dot(x[m], y[m]) of int8 selections is int8 in NumPy (dot keeps the dtype); tracejit
    summed the products with sum's promotion to int64 (fuzz 12406 #184, #243)."""
    def f(x, y):
        return np.dot(x[x > 1], y[x > 1]), x[x > 1] @ y[x > 1]
    x, y = np.array([3, 1, 2, 0, 5], dtype), np.array([1, 2, 3, 4, 5], dtype)
    want = f(x, y)
    for backend in ("interpret", "llvm"):
        for g, w in zip(tj.jit(f, backend=backend)(x, y), want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)


def test_matmul_epilogue_of_a_flattened_scalar_product_reads_its_operand_contiguously():
    """jacrev(grad) of dot(cumprod(a), a) on llvm: a product of a [4, 4] matrix with the scalar
    1.0 (from the transposes) runs as a [16, 1] kernel; its epilogue `+ at` read the [4, 4]
    operand with the matrix's row stride 4 instead of 1 (fuzz 12409 #868: wrong values, reads
    past the operand)."""
    f = lambda a: np.dot(np.cumprod(a), a)      # noqa: E731
    a = np.array([0.3, 0.7, 0.1, 0.9])
    outs = {}
    for backend in ("interpret", "llvm"):
        saved, tj.config.backend = tj.config.backend, backend
        try:
            outs[backend] = tj.jacrev(tj.grad(f))(a)
        finally:
            tj.config.backend = saved
    np.testing.assert_allclose(outs["llvm"], outs["interpret"], rtol=1e-13, atol=1e-15)
    g, eps = tj.grad(f), 1e-6
    fd = np.array([(g(a + eps * e) - g(a - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(outs["llvm"], fd, rtol=1e-6, atol=1e-8)
