"""Fusion planning grows linearly with the graph (issue 14 item 1).

``partition`` runs on the gradient of a tanh RNN written as a Python loop (matmuls with tanh
epilogues, matrix-vector pairs for row fusion, long dependency chains for the join checks) of
``SMALL`` and ``4 * SMALL`` steps; four times the matmul steps may take at most eight times the
CPU time (the least of three runs each, the garbage collector off). Planning that scans the whole
plan once per matmul (the readers of a product, the users of a step) takes sixteen times.
"""
import numpy as np

import tracejit as tj
from tracejit.backend.plan.partition import partition
from tracejit.backend.plan.steps import MatmulStep
from tracejit.config import config
from tracejit.core import make_graph
from tracejit.ir import Type
from tracejit.passes import simplify
from tests.test_compile_scaling import _cpu   # CPU seconds, the garbage collector off

H = 16
SMALL = 40


def _rnn_grad(steps):
    """The simplified graph of the gradient of a ``steps``-step RNN's loss."""
    def loss(W, U, b, xs):
        h = np.zeros(H)
        total = 0.0
        for t in range(steps):
            h = np.tanh(W @ h + U @ xs[t] + b)
            total = total + np.sum(h * h)
        return total

    f64 = np.dtype(np.float64)
    types = [Type(f64, (H, H)), Type(f64, (H, H)), Type(f64, (H,)), Type(f64, (steps, H))]
    g = tj.grad(loss, argnums=(0, 1, 2))
    return simplify(make_graph(lambda *a: list(g(*a)), types)[0])


def test_partition_is_linear(monkeypatch):
    monkeypatch.setattr(config, "check_ir", False)      # the verifiers are not planning
    monkeypatch.setattr(config, "roll_loops", False)    # the long graph, not one scan of it
    graphs = {n: _rnn_grad(n) for n in (SMALL, 4 * SMALL)}
    small = partition(graphs[SMALL], 32)
    large = partition(graphs[4 * SMALL], 32)
    mm = [sum(isinstance(s, MatmulStep) for s in p.steps) for p in (small, large)]
    assert mm[0] >= SMALL and mm[1] >= 3.5 * mm[0], mm     # the graphs are what they claim
    best = {n: min(_cpu(lambda: partition(g, 32)) for _ in range(3)) for n, g in graphs.items()}
    ratio = best[4 * SMALL] / max(best[SMALL], 1e-4)
    assert ratio <= 8, f"planning {4 * SMALL} steps took {ratio:.1f}x the time of {SMALL} " \
                       f"({best[SMALL]:.3f} s -> {best[4 * SMALL]:.3f} s): quadratic again?"
