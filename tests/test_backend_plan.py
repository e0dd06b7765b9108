"""The plan as a value: ``stage="fused"`` prints it, and the plan verifier (backend/plan/verify.py)
accepts the planner's plans and rejects plans that break its invariants."""
import numpy as np
import pytest

import tracejit as tj
from tracejit.backend.plan import buffers, partition
from tracejit.backend.plan.steps import LoopGroup, MatmulStep
from tracejit.backend.plan.verify import PlanError, verify_buffers, verify_plan


def _graph(fn, *args):
    from tracejit.api import leaf_type
    from tracejit.core import make_graph
    from tracejit.passes import simplify

    def flat(*xs):
        out = fn(*xs)
        return list(out) if isinstance(out, tuple) else [out]
    graph, _ = make_graph(flat, [leaf_type(a, "arg") for a in args])
    return simplify(graph)


def _mlp(x, w, b):
    return np.tanh(x @ w + b)


ARGS = (np.ones((8, 5)), np.ones((5, 6)), np.ones(6))


def test_checks_are_on_under_pytest():
    assert tj.config.check_ir


def test_fused_stage_prints_the_plan():
    text = tj.jit(_mlp).ir(*ARGS, stage="fused")
    assert text.startswith("fused plan:") and "matmul" in text and "epilogue" in text


def test_the_planners_plans_verify():
    plan = partition.partition(_graph(_mlp, *ARGS), 64)
    verify_plan(plan)
    verify_buffers(plan, buffers.plan_buffers(plan))
    assert any(isinstance(s, MatmulStep) and s.epilogue for s in plan.steps)


def test_a_step_before_what_it_reads_is_refused():
    plan = partition.partition(_graph(lambda x: np.sum(np.sin(x)) * x, np.ones(7)), 64)
    assert len(plan.steps) >= 2
    plan.steps.reverse()
    with pytest.raises(PlanError, match="runs before|no earlier step"):
        verify_plan(plan)


def test_a_value_without_its_producer_is_refused():
    plan = partition.partition(_graph(lambda x: np.sum(np.sin(x)) * x, np.ones(7)), 64)
    vid = next(iter(plan.producer))
    del plan.producer[vid]
    with pytest.raises(PlanError):
        verify_plan(plan)


def test_an_output_never_written_is_refused():
    plan = partition.partition(_graph(lambda x: x + 1.0, np.ones(3)), 64)
    plan.out_aliases.clear()
    with pytest.raises(PlanError, match="output 0 is never written"):
        verify_plan(plan)


def test_two_live_temporaries_in_one_block_are_refused():
    def f(x):
        a = np.sum(np.sin(x), axis=0)          # two temporaries, both live until the last step
        b = np.sum(np.cos(x), axis=0)
        return np.outer(a, b) + np.outer(b, a)
    plan = partition.partition(_graph(f, np.ones((4, 3))), 64)
    bp = buffers.plan_buffers(plan)
    temps = [s for s in bp.slots if s.kind == "temp"]
    assert len(temps) >= 2 and len({s.index for s in temps}) == len(temps)
    temps[1].index = temps[0].index
    with pytest.raises(PlanError, match="share"):
        verify_buffers(plan, bp)


def test_a_member_read_by_another_loop_must_be_stored():
    plan = partition.partition(_graph(lambda x: np.sum(np.sin(x)) * x, np.ones(7)), 64)
    group = next(s for s in plan.steps if isinstance(s, LoopGroup) and s.stores)
    stored, _ = group.stores[0]
    group.stores.clear()
    group.writes.remove(stored)
    with pytest.raises(PlanError):
        verify_plan(plan)
