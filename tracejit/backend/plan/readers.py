"""Who reads what while steps are merged: the index the fusion passes share (``rowfuse.py``,
``epilogue.py``), so that finding the readers of a value or the users of a step costs its
answer, not a scan of the whole plan (issue 14: planning linear in the graph).

:class:`FuseIndex` is built once by ``partition._finish`` after stores are decided and lives in
``plan.fuse_index`` until the execution order is fixed. It holds

- ``direct``: id(var) -> the steps whose reads (loop group: operands of members and sinks and
  stored atoms; any other step: its equation's operands; a matmul's epilogue leaves are not
  counted) name the var itself, each in creation order (``Step.index``);
- ``views_of``: id(base) -> ids of the vars that are views of it (``plan.views`` does not change
  during fusion), and the ids of the graph outputs;
- ``users``: step -> the steps listing it in their ``preds`` (steps are keys by identity).

Invariant: a pass that changes what a step reads calls :meth:`FuseIndex.reindex`, one that adds
or removes steps or preds calls :meth:`add_step` / :meth:`drop_step` / :meth:`add_preds` /
:meth:`drop_pred`; :meth:`check` (run when ``config.check_ir`` is on) rebuilds the index from
the plan and compares.
"""
from __future__ import annotations

from ...ir import Var
from .steps import LoopGroup


def _read_ids(step):
    """ids of the vars ``step`` reads, as :func:`rowfuse.readers_of` counts them."""
    if isinstance(step, LoopGroup):
        atoms = [a for e in (*step.eqns, *step.sinks) for a in e.invars]
        atoms.extend(a for a, _ in step.stores)
    else:
        atoms = step.eqn.invars
    return {id(a) for a in atoms if isinstance(a, Var)}


class FuseIndex:
    """Readers of vars and users of steps for one plan (see the module docstring)."""

    def __init__(self, plan):
        self.direct: dict = {}
        self.reads: dict = {}           # step -> the var ids it is listed under in ``direct``
        self.users: dict = {}
        self.views_of: dict = {}
        for vid, view in plan.views.items():
            if isinstance(view.base, Var):
                self.views_of.setdefault(id(view.base), []).append(vid)
        self.outputs = {id(a) for a in plan.graph.outvars if isinstance(a, Var)}
        for step in plan.steps:
            self.add_step(step)

    # readers -------------------------------------------------------------------------------------
    def readers(self, var):
        """(steps reading ``var`` directly or through a view, in plan order; whether a graph
        output is ``var`` or a view of it exists)."""
        vid = id(var)
        found = dict.fromkeys(self.direct.get(vid, ()))
        for w in self.views_of.get(vid, ()):
            found.update(dict.fromkeys(self.direct.get(w, ())))
        steps = sorted(found, key=lambda s: s.index)
        return steps, vid in self.outputs or vid in self.views_of

    def reindex(self, step):
        """Record what ``step`` reads now (after its equations or stores changed)."""
        for vid in self.reads.pop(step, ()):
            self.direct[vid].pop(step, None)
        ids = _read_ids(step)
        self.reads[step] = ids
        for vid in ids:
            self.direct.setdefault(vid, {})[step] = None

    # steps and preds -----------------------------------------------------------------------------
    def add_step(self, step):
        self.reindex(step)
        self.users.setdefault(step, {})
        self.add_preds(step, step.preds)

    def drop_step(self, step):
        """Forget ``step`` (its reads and its own preds; its users are the caller's business)."""
        for vid in self.reads.pop(step, ()):
            self.direct[vid].pop(step, None)
        for p in step.preds:
            self.users.get(p, {}).pop(step, None)

    def add_preds(self, step, preds):
        for p in preds:
            self.users.setdefault(p, {})[step] = None

    def drop_pred(self, step, pred):
        self.users.get(pred, {}).pop(step, None)

    def users_of(self, step) -> list:
        """Steps listing ``step`` in their preds."""
        return list(self.users.get(step, ()))

    def check(self, plan):
        """Raise AssertionError unless the index matches one rebuilt from ``plan``."""
        fresh = FuseIndex(plan)
        mine = {k: set(map(id, v)) for k, v in self.direct.items() if v}
        theirs = {k: set(map(id, v)) for k, v in fresh.direct.items() if v}
        assert mine == theirs, "tracejit: fusion reader index out of date"
        live = set(plan.steps)
        mine = {id(k): {id(s) for s in v} for k, v in self.users.items() if k in live}
        theirs = {id(k): {id(s) for s in v} for k, v in fresh.users.items() if v}
        mine = {k: v for k, v in mine.items() if v}
        assert mine == theirs, "tracejit: fusion user index out of date"
