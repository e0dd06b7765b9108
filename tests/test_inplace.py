"""In-place updates on the llvm backend (``backend/plan/inplace.py``).

A value born where its operand dies takes over the operand's buffer: scatters (``x.at[i]``,
index writes), element-aligned loop stores (the ``select`` of a slice write), loop carries the
body updates that way or returns unchanged. Each test shows the decision through the printed
plan (``stage="fused"``) or ``memory_analysis()`` (never timings) and checks the values
against the interpreter, including the hazards where the old value is still needed and the
plan must copy. The plan verifier (on under pytest) checks every in-place write.
"""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.plan import buffers, partition
from tracejit.backend.plan.verify import PlanError, verify_in_place


def jit(fun):
    return tj.jit(fun, backend="llvm")


def same_as_interpreter(fun, *args):
    """Run ``fun`` natively and on the interpreter (fresh argument copies each); the results
    must agree (to rounding: native sums and math functions are not NumPy's, bit for bit).
    Returns the native ``Traced``."""
    f = jit(fun)
    got = f(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    want = tj.jit(fun, backend="interpret")(*[np.copy(a) if isinstance(a, np.ndarray) else a
                                              for a in args])
    for g, w in zip(tj.tree.tree_leaves(got), tj.tree.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    return f


def plan_of(f, *args):
    return f.ir(*args, stage="fused")


def memory(f, *args):
    return f.memory_analysis(*args)


X = np.random.default_rng(0).standard_normal(50)
M = np.random.default_rng(1).standard_normal((40, 30))


# ---------------------------------------------------------------------------------------------
# 1. one update in place of a dead operand

def test_scatter_chain_on_a_temporary_is_in_place():
    def f(x, i, v):
        y = x * 2
        y = y.at[i].set(v)
        return y.at[i + 1].add(v)
    f_ = same_as_interpreter(f, X, 3, 1.5)
    text = plan_of(f_, X, 3, 1.5)
    assert text.count("(in place of") == 2, text
    assert memory(f_, X, 3, 1.5)["in_place_updates"] == 2


def test_old_value_read_after_the_update_is_copied():
    def f(x, i, v):
        y = x * 2
        z = y.at[i].set(v)
        return z * y                  # y's old value is read after z is written
    f_ = same_as_interpreter(f, X, 3, 1.5)
    assert "scatter" in plan_of(f_, X, 3, 1.5)
    assert "in place of" not in plan_of(f_, X, 3, 1.5).split("scatter", 1)[1].splitlines()[0]


def test_a_view_of_the_operand_read_later_keeps_it_alive():
    def f(x, i, v):
        y = x * 2
        t = y[1:4]                    # a view of y, read after the scatter by the sum
        z = y.at[i].set(v)
        return z, np.sum(t * 3.0), y.reshape(5, 10)
    f_ = same_as_interpreter(f, X, 2, 9.0)
    line = [s for s in plan_of(f_, X, 2, 9.0).splitlines() if "scatter" in s][0]
    assert "in place of" not in line


def test_indices_or_updates_reading_the_operand_are_not_in_place():
    def f(x, i):
        y = x * 2
        return y.at[i].set(y[::-1][:3])      # the updates read the buffer being written
    f_ = same_as_interpreter(f, X, np.array([0, 1, 2]))
    line = [s for s in plan_of(f_, X, np.array([0, 1, 2])).splitlines() if "scatter" in s][0]
    assert "in place of" not in line


def test_slice_write_into_a_created_array_is_in_place():
    def f(x):
        out = np.zeros_like(x)
        out[1:-1] = x[:-2] + x[2:]
        out[0] = x[0]
        y = out * 1.5
        y[2:5] = 0.0
        return y
    f_ = same_as_interpreter(f, X)
    assert "(in place of" in plan_of(f_, X)


def test_an_input_is_never_written_without_donation():
    def f(x, i):
        return x.at[i].set(0.0)
    x = X.copy()
    f_ = same_as_interpreter(f, x, 4)
    f_(x, 4)
    np.testing.assert_array_equal(x, X)
    assert "in place of" not in plan_of(f_, x, 4)


def test_graph_output_is_computed_in_its_output_buffer():
    def f(x, i):
        y = np.sin(x)
        return y.at[i].set(1.0).reshape(5, 10)
    f_ = same_as_interpreter(f, X, 7)
    assert memory(f_, X, 7)["temp_bytes"] < X.nbytes     # sin(x) went straight to the output
    assert "(in place of" in plan_of(f_, X, 7)


def test_verifier_rejects_a_read_after_an_in_place_write():
    def f(x, i, v):
        y = x * 2
        z = y.at[i].set(v)
        return z, y[::-1] + 1.0          # y read (reversed) after z is written
    graph = tj.make_ir(f)(X, 3, 1.5)
    plan = partition.partition(graph, 32)
    bp = buffers.plan_buffers(plan)
    scatter = [s for s in plan.steps if s.kind == "scatter"][0]
    y, z = plan.view_of(scatter.eqn.invars[0]).base, scatter.eqn.outvars[0]
    assert not bp.in_place
    bp.in_place[id(z)] = y                          # force the unsafe decision
    bp.slot_index[id(z)] = bp.slot_index[id(y)]
    with pytest.raises(PlanError, match="old value"):
        verify_in_place(plan, bp)


# ---------------------------------------------------------------------------------------------
# 2. loop carries

def test_fori_loop_carry_updated_by_one_element_stays_in_one_buffer():
    def f(a, n):
        def body(i, a):
            return a.at[i, 0].set(a[i, 1] * 2.0 + i)
        return tj.fori_loop(0, n, body, a)
    f_ = same_as_interpreter(f, M, 30)          # while (traced bound)
    mem = memory(f_, M, 30)
    assert mem["carries_in_place"] == 2 and mem["loop_scratch_bytes"] < M.nbytes, mem
    assert "carried in place" in plan_of(f_, M, 30)

    exe = f_.lower(M, 30).executable
    if exe.tier_up():                           # the hot tier plans the loop's buffers again
        np.testing.assert_array_equal(f_(M, 30), tj.jit(f, backend="interpret")(M, 30))

    def g(a):
        return f(a, 30)
    g_ = same_as_interpreter(g, M)              # scan (static bound)
    assert memory(g_, M)["loop_scratch_bytes"] < M.nbytes
    assert memory(g_, M)["carries_in_place"] >= 1


def test_unchanged_carry_is_not_copied():
    def f(a, n):
        def body(i, c):
            a, s = c
            return a, s + a[i % 40, i % 30]
        return tj.fori_loop(0, n, body, (a, 0.0))
    f_ = same_as_interpreter(f, M, 100)
    mem = memory(f_, M, 100)
    assert mem["carries_in_place"] == 3 and mem["loop_scratch_bytes"] < M.nbytes, mem
    assert "2 steps" in plan_of(f_, M, 100)     # no copy step for the unchanged carry


def test_update_whose_old_carry_is_also_returned_double_buffers():
    def f(a, n):
        def body(i, c):
            a, prev = c
            return a.at[i].set(a[i] + 1.0), a  # the old carry survives the update
        return tj.fori_loop(0, n, body, (a, a * 0))
    f_ = same_as_interpreter(f, X, 20)
    assert memory(f_, X, 20)["loop_scratch_bytes"] >= 2 * X.nbytes


def test_old_carry_read_after_the_update_double_buffers():
    def f(a, n):
        def body(i, a):
            b = a.at[i].set(0.0)
            return b + a[::-1]            # reads the old a after b is written
        return tj.fori_loop(0, n, body, a)
    f_ = same_as_interpreter(f, X, 7)
    assert memory(f_, X, 7)["loop_scratch_bytes"] >= X.nbytes


def test_swapped_carries_are_copied():
    def f(a, b, n):
        return tj.fori_loop(0, n, lambda i, c: (c[1].at[i].add(1.0), c[0]), (a, b))
    same_as_interpreter(f, X, X[::-1].copy(), 9)


def test_while_loop_and_scan_carries_in_place():
    def w(a):
        def cond(c):
            return c[0] < 25
        def body(c):
            i, a = c
            return i + 1, a.at[i].set(a[i - 1] * 0.5 + 1.0)
        return tj.while_loop(cond, body, (1, a))
    w_ = same_as_interpreter(w, X)
    assert memory(w_, X)["carries_in_place"] == 2

    def s(a, xs):
        def step(a, x):
            a = a.at[0].add(x[0])
            return a, a[:3] * x[1]        # ys written row by row into the stacked output
        return tj.scan(step, a, xs)
    xs = np.random.default_rng(2).standard_normal((12, 2))
    s_ = same_as_interpreter(s, X, xs)
    assert memory(s_, X, xs)["carries_in_place"] == 1


def cholesky(a):
    """Element-wise Cholesky (lower): a fori_loop over rows around a while loop (traced bound)
    over the row's columns, each writing one element with .at[]."""
    n = a.shape[0]
    idx = np.arange(n)

    def row(i, low):
        def entry(j, low):
            s = np.dot(low[i], np.where(idx < j, low[j], 0.0))
            diag = np.sqrt(np.abs(a[i, i] - s))
            return low.at[i, j].set(np.where(i == j, diag, (a[i, j] - s) / low[j, j]))
        return tj.fori_loop(0, i + 1, entry, low)
    return tj.fori_loop(0, n, row, np.zeros_like(a))


def test_elementwise_cholesky_in_place():
    r = np.random.default_rng(3).standard_normal((12, 12))
    a = r @ r.T + 12 * np.eye(12)
    f = jit(cholesky)
    np.testing.assert_allclose(f(a), np.linalg.cholesky(a), rtol=1e-12, atol=1e-12)
    same_as_interpreter(cholesky, a)
    mem = memory(f, a)
    assert mem["carries_in_place"] >= 2 and mem["loop_scratch_bytes"] < a.nbytes, mem


def test_carry_in_place_after_an_error_in_the_body():
    def f(a, idx):
        def body(i, a):
            return a.at[idx[i]].set(1.0)
        return tj.fori_loop(0, 3, body, a)
    f_ = jit(f)
    with pytest.raises(IndexError):
        f_(X, np.array([0, 1, 99]))
    same_as_interpreter(f, X, np.array([0, 1, 2]))


# ---------------------------------------------------------------------------------------------
# 3. arguments the function writes into

def stencil(a, b):
    for _ in range(3):
        b[1:-1] = 0.33 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33 * (b[:-2] + b[1:-1] + b[2:])


def run_numpy(fun, *args):
    args = [np.copy(a) for a in args]
    out = fun(*args)
    return out, args


def test_stencil_writes_its_arguments_in_place():
    a, b = np.random.default_rng(4).random((2, 200))
    f = jit(stencil)
    want_out, (wa, wb) = run_numpy(stencil, a, b)
    ga, gb = a.copy(), b.copy()
    assert f(ga, gb) is None
    np.testing.assert_allclose(ga, wa, rtol=1e-14)
    np.testing.assert_allclose(gb, wb, rtol=1e-14)
    exe = f.lower(a, b).executable
    assert exe.buffers.out_in_place == {0: 0, 1: 1}
    text = plan_of(f, a, b)
    assert "(in place of a)" in text and "(in place of b)" in text, text
    xa, xb = a.copy(), b.copy()                    # the kernel itself writes the arguments
    outs = exe([xa, xb])
    assert outs[0] is xa and outs[1] is xb
    np.testing.assert_allclose(xa, wa, rtol=1e-14)


def test_written_argument_returned_is_the_callers_array():
    def f(x, i):
        x[i] = 7.0
        x *= 2
        return x, x.sum()
    x = X.copy()
    out, s = jit(f)(x, 3)
    want, (wx, _) = run_numpy(f, X, 3)
    assert out is x
    np.testing.assert_array_equal(x, wx)
    np.testing.assert_allclose(s, want[1], rtol=1e-13)


def test_error_after_a_write_leaves_the_argument_untouched():
    def f(a, b, idx):
        a[1:-1] = a[:-2] * 2.0              # NumPy writes a, then fails on b[idx]
        return b[idx]
    f_ = jit(f)
    a = X.copy()
    assert f_.lower(a, X, 3).executable.buffers.out_in_place == {}   # copied back after
    with pytest.raises(IndexError):
        f_(a, X, 99)
    np.testing.assert_array_equal(a, X)     # (NumPy would have written it: never more)
    out = f_(a, X, 3)
    _, (wa, _, _) = run_numpy(f, X, X, 3)
    np.testing.assert_array_equal(a, wa)
    assert out == X[3]


def test_error_before_any_write_leaves_the_argument_untouched():
    def f(a, idx):
        v = a[idx]                          # checked before a is written in place
        a[0] = 5.0
        a[1:] *= 3.0
        return v
    f_ = jit(f)
    a = X.copy()
    assert f_.lower(a, 3).executable.buffers.out_in_place == {1: 0}   # output 1: new a
    with pytest.raises(IndexError):
        f_(a, 99)
    np.testing.assert_array_equal(a, X)
    assert f_(a, 3) == X[3]
    _, (wa, _) = run_numpy(f, X, 3)
    np.testing.assert_array_equal(a, wa)


def test_all_written_arguments_in_place_or_none():
    def f(a, b, n):
        a *= 2.0                                     # could be in place...
        b += tj.fori_loop(0, n, lambda i, s: s + a, np.zeros_like(b))   # ...but a loop can stop
        return None
    f_ = jit(f)
    a, b = X.copy(), X.copy()
    exe = f_.lower(a, b, 3).executable
    assert exe.buffers.out_in_place == {} and not any(s.atomic for s in exe.plan.steps)
    f_(a, b, 3)
    _, (wa, wb, _) = run_numpy(f, X, X, 3)
    np.testing.assert_array_equal(a, wa)
    np.testing.assert_allclose(b, wb, rtol=1e-14)


def test_steps_after_an_argument_write_never_stop_halfway():
    def f(a):
        a[1:-1] = a[:-2] + a[2:]
        a *= 0.5
    f_ = jit(f)
    exe = f_.lower(X).executable
    assert exe.buffers.out_in_place == {0: 0}
    first = min(k for k, s in enumerate(exe.plan.steps) if s.atomic)
    assert all(s.atomic for s in exe.plan.steps[first:])


def test_non_contiguous_or_converted_written_argument_is_copied_back():
    def f(a):
        a[0] = -1.0
        a *= 3.0
    big = np.arange(40.0)
    view = big[::2]                                 # the kernel writes a contiguous copy
    jit(f)(view)
    want = np.arange(40.0)
    want[::2][0] = -1.0
    want[::2] *= 3.0
    np.testing.assert_array_equal(big, want)


def test_unchanged_carry_reads_its_argument_without_a_copy():
    def f(a, n):
        return tj.fori_loop(0, n, lambda i, c: (c[0], c[1] + c[0][i % 40, 0]), (a, 0.0))[1]
    f_ = same_as_interpreter(f, M, 50)
    mem = memory(f_, M, 50)
    assert mem["temp_bytes"] + mem["loop_scratch_bytes"] < M.nbytes, mem   # a's buffer, read

    def g(a, n):                    # the same carry, then written: it needs a copy of a
        b = tj.fori_loop(0, n, lambda i, c: (c[0], c[1] + c[0][i % 40, 0]), (a, 0.0))[0]
        return b.at[0, 0].set(1.0)
    a = M.copy()
    same_as_interpreter(g, a, 50)
    jit(g)(a, 50)
    np.testing.assert_array_equal(a, M)
