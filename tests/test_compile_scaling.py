"""The front end's work grows linearly with the graph (issue 14 item 1).

Each stage (tracing, JVP, simplification, partial evaluation, transposition, batching) runs on
a graph of ~700 and one of ~2800 equations; four times the equations may take at most eight
times the CPU time (the least of three runs each, sizes interleaved, the garbage collector off):
a stage that rescans the graph per equation takes sixteen times. bench/compile_scaling.py
measures the whole pipeline.
"""
import gc
import time

import numpy as np
import pytest

import tracejit as tj
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.passes import simplify
from tracejit.transforms.batching import batch_eval
from tracejit.transforms.jvp import jvp_graph
from tracejit.transforms.partial_eval import partial_eval
from tracejit.transforms.transpose import transpose_graph

X = Type(np.dtype(np.float64), (4,))
SMALL, LARGE = 50, 200            # loop steps: ~14 equations each


def _chain(steps):
    """A graph with work for every pass: negations to sink, x * 1, duplicates, dead code."""
    def f(x):
        y = x
        for _ in range(steps):
            a = -np.sin(y) * 1.0
            c, d = np.cos(y) * 2.0, np.cos(y) * 2.0
            np.exp(y)
            y = a + c - d * 0.5 - (-y)
        return [np.sum(y)]
    return make_graph(f, [X])[0]


def _stages(steps):
    """{stage: a function running it} on the chain of ``steps`` steps."""
    raw = _chain(steps)
    jg = simplify(jvp_graph(raw, [True])[0], inline=False)
    _, lin, n_res = partial_eval(jg, 1, 1, recompute=True)
    return {
        "trace": lambda: _chain(steps),
        "jvp": lambda: jvp_graph(raw, [True]),
        "simplify": lambda: simplify(jg, inline=False),
        "partial_eval": lambda: partial_eval(jg, 1, 1, recompute=True),
        "transpose": lambda: transpose_graph(lin, n_res, [Type(np.dtype(np.float64), ())]),
        "vmap": lambda: make_graph(lambda xb: batch_eval(raw, [xb], [0], 3)[0],
                                   [Type(np.dtype(np.float64), (3, 4))]),
    }


def _cpu(fn) -> float:
    """CPU seconds of ``fn()``, without the garbage collector (a full collection of the test
    session's heap inside one run would dwarf the stage)."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    finally:
        gc.enable()


@pytest.fixture(scope="module")
def timings():
    # the session's heap is frozen first: the collection before each run then scans only what
    # the stages made (a full collection of a long test session's heap took seconds each time)
    gc.collect()
    gc.freeze()
    try:
        small, large = _stages(SMALL), _stages(LARGE)
        best = {name: [np.inf, np.inf] for name in small}
        for _ in range(3):
            for name in small:
                best[name][0] = min(best[name][0], _cpu(small[name]))
                best[name][1] = min(best[name][1], _cpu(large[name]))
    finally:
        gc.unfreeze()
    return best


@pytest.mark.parametrize("stage", ["trace", "jvp", "simplify", "partial_eval", "transpose",
                                   "vmap"])
def test_stage_is_linear(timings, stage):
    small, large = timings[stage]
    assert len(_chain(LARGE).eqns) >= 3.9 * len(_chain(SMALL).eqns)
    # (a floor for a stage too quick to time at the small size)
    assert large <= 8 * max(small, 2e-3), \
        f"{stage}: {small:.4f} s at {SMALL} steps, {large:.4f} s at {LARGE} (x{large / small:.1f})"


def test_full_collections_deferred_while_tracing():
    before = gc.get_threshold()
    seen = []

    def f(x):
        seen.append(gc.get_threshold())
        return tj.grad(lambda y: np.sum(np.sin(y)))(x)

    tj.trace(f)(np.ones(3))
    assert seen[0][:2] == before[:2] and seen[0][2] > before[2]
    assert gc.get_threshold() == before

    def fails(x):
        raise ValueError("in the trace")

    with pytest.raises(ValueError):
        tj.trace(fails)(np.ones(3))
    assert gc.get_threshold() == before
