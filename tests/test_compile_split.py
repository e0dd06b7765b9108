"""Bounded LLVM work per kernel (issue 14 item 2): a large plan becomes bounded functions.

- one matmul kernel per distinct product in a module (an unrolled loop's steps share it; under
  ``check_ir``, i.e. in these tests, every reuse is emitted again and compared);
- a long segment runs its steps in parts of ``SEGMENT_STEPS`` (each its own function) and a
  kernel with many slots sets them in parts of ``KERNEL_SLOTS``, so no function grows with the
  graph;
- the LLVM stage (pipeline and code generation of the module) of a graph 4x as large takes at
  most 6x the CPU time (the least of three runs, sizes interleaved). At these sizes this is a
  guard against new superlinear costs; the superlinear forms fixed here showed at larger sizes
  (a kernel setting 500 -> 1000 slots in one block: 0.58 -> 3.85 s), which the structural tests
  above catch at any size;
- results are bit for bit those of an unsplit build (parts of 1-3 steps and slots), including
  errors set in a later part, loops, stacks and both thread counts.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.emit import segment
from tracejit.backend.engine import jit, threads

H = 8


@pytest.fixture(scope="module", autouse=True)
def _unrolled():
    """These graphs are unrolled loops, which the roll pass would make one scan each: what is
    tested here is how the backend bounds the work of a long graph, so it stays long."""
    tj.config.roll_loops = False
    yield
    tj.config.roll_loops = True


def _chain(T):
    """T dependent products with a tanh epilogue: T matmul steps, T temporaries."""
    def f(W, h):
        for _ in range(T):
            h = np.tanh(W @ h) + h * 0.5
        return h
    return f


def _rnn_grad(T):
    def loss(W, U, xs):
        h = np.zeros(H)
        total = 0.0
        for t in range(T):
            h = np.tanh(W @ h + U @ xs[t])
            total = total + np.sum(h * h)
        return total
    return tj.grad(loss, argnums=(0, 1))


def _args_chain():
    rng = np.random.default_rng(0)
    return rng.standard_normal((H, H)) * 0.3, rng.standard_normal(H)


def _args_rnn(T):
    rng = np.random.default_rng(1)
    return (rng.standard_normal((H, H)) * 0.3, rng.standard_normal((H, H)) * 0.3,
            rng.standard_normal((T, H)))


def _functions(text):
    """{function name: number of IR lines} of a module's text."""
    sizes, name = {}, None
    for line in text.splitlines():
        m = re.match(r'define [^@]*@"?([^"(]+)"?\(', line)
        if m:
            name = m.group(1)
            sizes[name] = 0
        elif name is not None:
            sizes[name] += 1
            if line == "}":
                name = None
    return sizes


# the chain's sizes: one step per product (its tanh and add are the product's epilogue), so
# the small one fills exactly one part of SEGMENT_STEPS steps and the large one four
CHAIN = (segment.SEGMENT_STEPS, 4 * segment.SEGMENT_STEPS)


@pytest.fixture(scope="module")
def modules():
    """LLVM IR text of the chain and the RNN gradient at two sizes each."""
    W, h = _args_chain()
    out = {}
    for T in CHAIN:
        out["chain", T] = tj.jit(_chain(T)).inspect_llvm(W, h)
    for T in (4, 16):
        out["rnn", T] = _rnn_grad(T).inspect_llvm(*_args_rnn(T))
    return out


def test_one_kernel_per_distinct_product(modules):
    for (case, T), text in modules.items():
        kernels = [n for n in _functions(text) if re.search(r"_mm\d+(_chunk|_b)?$", n)]
        # the chain has one product; the RNN gradient a handful (forward, backward, outer)
        assert len(kernels) <= (1 if case == "chain" else 6), (case, T, kernels)


def test_functions_stay_bounded(modules):
    for case, small, large in (("chain", *CHAIN), ("rnn", 4, 16)):
        a, b = _functions(modules[case, small]), _functions(modules[case, large])
        # the largest function of the large graph is at most a little larger than that of the
        # small one (a fused loop of the RNN's backward pass does grow: planning, not LLVM)
        limit = 1.3 * max(a.values()) if case == "chain" else 4.5 * max(a.values())
        assert max(b.values()) <= limit, (case, max(a.values()), max(b.values()))
    parts = [n for n in _functions(modules["chain", CHAIN[1]]) if re.search(r"_part\d+$", n)]
    assert len(parts) >= CHAIN[1] // segment.SEGMENT_STEPS


def _llvm_cpu(text, opt=1):
    t0 = time.process_time()
    jit.emit_assembly(text, opt=opt)
    return time.process_time() - t0


def test_llvm_stage_near_linear(modules):
    for case, small, large in (("chain", *CHAIN), ("rnn", 4, 16)):
        best = [np.inf, np.inf]
        for _ in range(3):
            best[0] = min(best[0], _llvm_cpu(modules[case, small]))
            best[1] = min(best[1], _llvm_cpu(modules[case, large]))
        assert best[1] <= 6 * best[0] + 0.02, (case, best)


# ---------------------------------------------------------------------------------------------
# bit-identical with tiny parts

def _programs():
    """(name, function, args): products, a loop, a stack (while loop's tape), an error."""
    W, h = _args_chain()
    rng = np.random.default_rng(2)
    x = rng.standard_normal(40)

    def loop(x):
        def body(i, c):
            return np.sin(c) * 0.9 + x[i % 40]
        return tj.fori_loop(0, 30, body, x)

    def tape(x):
        def cond(c):
            return c[1] < 5.0
        def body(c):
            return np.cos(c[0]) + 0.1 * c[0], c[1] + 1.0
        return np.sum(tj.while_loop(cond, body, (x, 0.0))[0] ** 2)

    return [("chain", tj.jit(_chain(40)), (W, h)),
            ("rnn", _rnn_grad(12), _args_rnn(12)),
            ("loop", tj.jit(lambda x: np.exp(loop(x)).sum() + loop(x * 2)[3]), (x,)),
            ("tape", tj.grad(tape), (x,))]


def _run_all():
    out = {}
    saved = threads.get_num_threads()
    try:
        for name, f, args in _programs():
            for n in (1, 2):
                threads.set_num_threads(n)
                r = f(*args)
                out[name, n] = [np.asarray(a) for a in (r if isinstance(r, tuple) else (r,))]
    finally:
        threads.set_num_threads(saved)
    return out


def test_tiny_parts_bit_identical(monkeypatch):
    whole = _run_all()
    monkeypatch.setattr(segment, "SEGMENT_STEPS", 2)
    monkeypatch.setattr(segment, "KERNEL_SLOTS", 3)
    parts = _run_all()
    for key, ref in whole.items():
        for a, b in zip(ref, parts[key]):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), key


def test_error_in_a_later_part_stops_the_call(monkeypatch):
    monkeypatch.setattr(segment, "SEGMENT_STEPS", 1)
    monkeypatch.setattr(segment, "KERNEL_SLOTS", 2)

    @tj.jit
    def f(x, i, e):
        y = np.sin(x) * 2.0
        z = y[i] + np.cos(y)                 # a gather: IndexError when i is out of range
        return np.sum(z * z), (np.arange(3) ** e).sum()   # a failed check: ValueError

    x = np.linspace(0, 1, 9)
    ok = f(x, 3, 2)
    assert np.allclose(ok[0], np.sum((np.sin(x)[3] * 2 + np.cos(np.sin(x) * 2)) ** 2))
    with pytest.raises(IndexError):
        f(x, 9, 2)
    with pytest.raises(ValueError, match="negative integer powers"):
        f(x, 3, -1)
    assert f(x, 3, 2)[1] == ok[1]


# ---------------------------------------------------------------------------------------------
# a large plan's loops are emitted once, not unrolled (loops.UNROLL_EQNS)

def _elementwise_programs():
    """(function, args): tails under lane masks, broadcast and strided operands, f32, ints,
    complex, a gather, reductions over kept and reduced inner dims."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 37))
    y32 = rng.standard_normal((5, 13)).astype(np.float32)
    row = rng.standard_normal(13).astype(np.float32)
    ints = rng.integers(-50, 50, (4, 19)).astype(np.int32)
    z = rng.standard_normal(23) + 1j * rng.standard_normal(23)
    idx = rng.integers(0, 37, 29)

    def chain(x):
        y = x
        for k in range(6):
            y = np.tanh(y) * 0.75 + np.exp(-y * y) - 0.125 * k
        return y, y.T * 2.0 + 1.0, np.where(y > 0.1, y, np.sin(y))

    return [(chain, (x,)),
            (lambda a, r: (np.cos(a * r) + a.T.T / (1.5 + r * r), np.maximum(a, r)), (y32, row)),
            (lambda a: (a * 3 - (a >> 1) + a % 7, np.abs(a) ^ 5), (ints,)),
            (lambda c: (c * np.conj(c) + 2j * c, np.exp(c) * 0.5), (z,)),
            (lambda x, i: np.sin(x[0][i]) * x[1][i] + 1.0, (x, idx)),
            (lambda x: (np.sum(np.sin(x), axis=0), np.max(x * x, axis=0), np.sum(x, axis=1)),
             (x,))]


def _results():
    out = []
    for f, args in _elementwise_programs():
        r = tj.jit(f)(*args)
        out.append([np.asarray(a) for a in (r if isinstance(r, tuple) else (r,))])
    return out


def test_large_plan_loops_not_unrolled_bit_identical(monkeypatch):
    from tracejit.backend.emit import loops
    f, (x,) = _elementwise_programs()[0]
    assert " x4" in tj.jit(f).lower(x).executable.describe()
    unrolled = _results()
    monkeypatch.setattr(loops, "UNROLL_EQNS", 0)       # every plan counts as large
    described = tj.jit(f).lower(x).executable.describe()
    assert " x4" not in described and " x1" in described, described
    once = _results()
    for (f, args), ref, got in zip(_elementwise_programs(), unrolled, once):
        for a, b in zip(ref, got):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.tobytes() == b.tobytes(), f
    # and the results are NumPy's (the programs are not all the same by construction)
    for (f, args), got in zip(_elementwise_programs(), once):
        ref = f(*args)
        for a, b in zip(ref if isinstance(ref, tuple) else (ref,), got):
            np.testing.assert_allclose(b, a, rtol=2e-6 if b.dtype == np.float32 else 1e-12,
                                       atol=1e-6 if b.dtype == np.float32 else 1e-12)
