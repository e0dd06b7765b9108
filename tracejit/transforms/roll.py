"""Rolling: a chain of identical copies of one body (an unrolled Python loop) becomes a ``scan``.

A Python ``for`` loop unrolls while tracing, so a 1000-step RNN is 1000 copies of one body, and
its gradient 1000 more: every backend stage then pays for every copy. ``roll`` finds such chains
and rewrites each into one ``scan`` whose body is a single copy, so the compile time stops
growing with the trip count. It runs last in ``passes.simplify`` (``config.roll_loops``).

What is a chain: ``k >= MIN_STEPS`` consecutive runs of ``p`` equations (copy ``c`` is
``eqns[start + c*p : start + (c+1)*p]``) equal position by position in primitive, params and
types, where every operand of copy ``c`` (at a given position and operand index) is, the same
way in every copy,
- *internal*: a result of an earlier equation of copy ``c``;
- *carried*: a result of copy ``c-1`` (copy 0 reads an outside value there: the initial carry);
- *invariant*: the same outside value (or the same literal) in every copy (a scan const);
- *per step*: a different outside value (or literal) per copy (stacked into a scan xs).
A ``slice`` whose bounds change from copy to copy, of an invariant operand (``xs[t]`` in the
loop), is taken out of the body: its rows are one strided slice of the operand, an xs.
Values of copy ``c`` used after the chain become the scan's final carry (last copy) or stacked
ys, read back with ``slice`` + ``reshape``; a later round then rolls a chain that reads those
rows (the backward chain of a gradient reads the forward chain's residuals, in reverse order:
a reverse scan over the same stack).

Invariants:
- exact: the scan runs the same equations on the same values in the same order as the copies
  did; stacking and reading rows move data only. So results are bit-identical.
- meaning kept: equations with an effect (a print, a callback), run-time checks and gathers or
  scatters of computed indices never enter a chain (they keep their order and their errors);
  nor do equations with sub-graphs (whose identity cannot be compared cheaply).
- linear time: equations are hashed by structure; candidate periods at a position are the
  distances to the next few equations of the same hash (``CANDIDATES``); a chain found is
  skipped over whole; and the comparisons are capped at ``BUDGET`` per equation, past which
  the rest of the graph is left as it is.
Imports only ``ir`` (primitives are looked up by name) so that it stays out of the front end's
import circles.
"""
from __future__ import annotations

import numpy as np

from ..ir import Eqn, Graph, Literal, Var
from .roll_rewrite import rewrite

MIN_STEPS = 8         # fewer copies stay unrolled: a scan step costs a call per iteration
MIN_EQNS = 48         # ... and so does a chain of fewer equations in all
# An elementwise-only body is one fused pass over memory when unrolled (on all cores) but a
# pass per step when rolled (measured 2.6x slower at 10 steps of 4 ops on 10^5 elements; a
# random sampler's polynomial became a scan and a second loop): such chains roll only when
# long enough for their compile time to dominate.
MIN_EQNS_ELEMENTWISE = 512
CANDIDATES = 16       # periods tried at one position: next occurrences of its first equation
BUDGET = 64           # operand comparisons per equation of the graph, at most
_NO_ROLL = ("check", "pure_callback")


def roll(graph: Graph) -> Graph:
    """``graph`` with every chain of repeated copies rolled into a ``scan`` (the same object
    when none is found). One round: chains that read the stacked results of a chain rolled in
    this round are found by the next round (``passes.simplify`` runs rounds to a fixed point)."""
    return _Roller(graph).run()


# ---------------------------------------------------------------------------------------------
# structural hash

def _param_key(value):
    if isinstance(value, (tuple, list)):
        return tuple(_param_key(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _param_key(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


def _bounds(eqn: Eqn):
    return eqn.params["start"], eqn.params["limit"]


def _lit_key(a: Literal):
    return (a.ty, a.value.tobytes())


def _rollable(eqn: Eqn) -> bool:
    p = eqn.prim
    if p.props.get("effect") or p.props.get("inline") or p.name in _NO_ROLL or \
            p.kind == "control":
        return False
    if p.name in ("take", "scatter") and isinstance(eqn.invars[1], Var):
        return False                     # may raise at run time: its error keeps its place
    return not any(isinstance(v, Graph) for v in eqn.params.values())


def _min_eqns(body) -> int:
    """The fewest equations a chain of copies of ``body`` needs to be rolled."""
    if all(e.prim.kind == "elementwise" for e in body):
        return MIN_EQNS_ELEMENTWISE
    return MIN_EQNS


def _shape_key(eqn: Eqn):
    """Primitive, params (a slice's bounds left out: they may step from copy to copy) and
    types; None for an equation that never joins a chain."""
    if not _rollable(eqn) or any(a.ty.dynamic for a in (*eqn.invars, *eqn.outvars)):
        return None
    params = eqn.params
    if eqn.prim.name == "slice":
        params = {"step": params["step"]}
    return (eqn.prim.name, _param_key(params) if params else (),
            tuple((isinstance(a, Literal), a.ty) for a in eqn.invars),
            tuple(v.ty for v in eqn.outvars))


# ---------------------------------------------------------------------------------------------
# finding chains

class _Chain:
    """A matched chain: ``k`` copies of ``p`` equations from ``start``, and per operand slot
    (position, operand index) its kind: ("in", pos, out) internal, ("carry", pos, out),
    ("inv", atom), ("step",) per step (the atoms per copy in ``steps[slot]``); ``hoisted``:
    positions of per-step slices (their params per copy in ``bounds[pos]``)."""

    def __init__(self, start, p):
        self.start, self.p, self.k = start, p, 0
        self.slots: dict = {}
        self.steps: dict = {}
        self.hoisted: set = set()
        self.bounds: dict = {}
        self.init: dict = {}


class _Roller:
    def __init__(self, graph: Graph):
        self.graph = graph
        eqns = self.eqns = graph.eqns
        self.n = len(eqns)
        self.budget = BUDGET * max(1, self.n)
        self.defs: dict = {}              # id(var) -> (equation index, output index)
        self.last_use: dict = {}          # id(var) -> index of its last use (n: an output)
        ids: dict = {}
        self.sig = []
        for i, e in enumerate(eqns):
            key = _shape_key(e)
            self.sig.append(-1 - i if key is None else ids.setdefault(key, len(ids)))
            for a in e.invars:
                if isinstance(a, Var):
                    self.last_use[id(a)] = i
            for o, v in enumerate(e.outvars):
                self.defs[id(v)] = (i, o)
        for a in graph.outvars:
            if isinstance(a, Var):
                self.last_use[id(a)] = self.n
        self.next_same = [0] * self.n      # index of the next equation of the same hash
        seen: dict = {}
        for i in range(self.n - 1, -1, -1):
            self.next_same[i] = seen.get(self.sig[i], self.n)
            seen[self.sig[i]] = i
        self.consts: list = []             # (var, value) added for stacked literals
        self.made: dict = {}               # id(var) -> Eqn: rows read back after a scan
        self.runs: dict = {}               # period -> (start, run length) last measured

    def run(self) -> Graph:
        out, i, changed = [], 0, False
        while i < self.n:
            chain = self._find(i) if self.budget > 0 else None
            if chain is None:
                out.append(self.eqns[i])
                i += 1
                continue
            out.extend(rewrite(chain, self.defs, self.eqns, self.last_use, self.consts,
                                   self.made))
            i = chain.start + chain.k * chain.p
            changed = True
        if not changed:
            return self.graph
        return self.graph.replace(
            eqns=out, constvars=self.graph.constvars + tuple(c for c, _ in self.consts),
            constvals=self.graph.constvals + tuple(v for _, v in self.consts))

    def _find(self, start):
        """The longest chain starting at ``start`` over the first candidate period that gives
        one, or None."""
        sig, n = self.sig, self.n
        if sig[start] < 0:
            return None
        q = start
        for _ in range(CANDIDATES):
            q = self.next_same[q]
            p = q - start
            if q >= n or p * MIN_STEPS > n - start:
                return None
            # equations m >= start with sig[m] == sig[m + p]: what is left of the run found
            # at an earlier start for this period, extended (each equation is compared once
            # per period however many starts look at it)
            prev, run = self.runs.get(p, (start, 0))
            run = max(0, prev + run - start)
            while start + run + p < n and sig[start + run] == sig[start + run + p] and \
                    sig[start + run] >= 0:
                run += 1
                self.budget -= 1
            self.runs[p] = (start, run)
            self.budget -= 1
            copies = run // p + 1
            if copies < MIN_STEPS or copies * p < MIN_EQNS:
                continue
            chain = self._match(start, p, copies)
            if chain is not None:
                return chain
        return None

    # matching operands ----------------------------------------------------------------------
    def _where(self, a, chain):
        """(copy, position, output index) of a var defined in the chain, else None."""
        d = self.defs.get(id(a))
        if d is None or d[0] < chain.start:
            return None
        c, pos = divmod(d[0] - chain.start, chain.p)
        return c, pos, d[1]

    def _outside(self, a, chain) -> bool:
        return isinstance(a, Literal) or self._where(a, chain) is None

    def _classify(self, chain, pos, q, a, b, elementwise):
        """The kind of slot (pos, q) from its operand ``a`` in copy 1 and ``b`` in copy 0."""
        if isinstance(a, Literal):
            if isinstance(b, Literal) and _lit_key(a) == _lit_key(b):
                return ("inv", a)
            return ("step",) if isinstance(b, Literal) and elementwise else None
        w = self._where(a, chain)
        if w is None:
            if a is b:
                return ("inv", a)
            return ("step",) if self._outside(b, chain) and isinstance(b, Var) else None
        c, p2, o = w
        if c == 1 and self._where(b, chain) == (0, p2, o):
            return ("in", p2, o)
        if c == 0 and self._outside(b, chain):
            # (b is a var: the hash has the same operand kinds in copies 0 and 1)
            return ("carry", p2, o) if chain.init.setdefault((p2, o), b) is b else None
        return None

    def _match(self, start, p, copies):
        chain = _Chain(start, p)
        eqns = self.eqns
        for pos in range(p):
            e0, e1 = eqns[start + pos], eqns[start + p + pos]
            self.budget -= len(e1.invars) + 1
            elementwise = e1.prim.kind == "elementwise"
            for q, (a, b) in enumerate(zip(e1.invars, e0.invars)):
                kind = self._classify(chain, pos, q, a, b, elementwise)
                if kind is None:
                    return None
                chain.slots[(pos, q)] = kind
                if kind[0] == "step":
                    chain.steps[(pos, q)] = [b]
            # the hash compared all other params; a slice's bounds may step
            if e1.prim.name == "slice" and _bounds(e1) != _bounds(e0) and \
                    not self._hoistable(chain, pos, e0, e1):
                return None
        for pos in chain.hoisted:
            chain.bounds[pos] = [eqns[start + pos].params]
        # a carried value must come from a copy's own results (not a hoisted slice's)
        if any(k[0] == "carry" and k[1] in chain.hoisted for k in chain.slots.values()):
            return None
        # copies that only move data (the rows of a stack read back one by one) gain
        # nothing as a scan: what reads them is rolled instead
        if all(eqns[start + pos].prim.kind == "structural" for pos in range(p)):
            return None
        chain.k = 1
        for c in range(1, copies):
            if not self._copy_matches(chain, c):
                break
            chain.k = c + 1
        if chain.k < MIN_STEPS or chain.k * p < _min_eqns(eqns[start:start + p]):
            return None
        for series in (*chain.steps.values(), *chain.bounds.values()):
            del series[chain.k:]
        return chain

    def _hoistable(self, chain, pos, e0, e1) -> bool:
        """A slice of an invariant operand whose bounds differ between copies."""
        if chain.slots[(pos, 0)][0] != "inv":
            return False
        chain.hoisted.add(pos)
        return True

    def _copy_matches(self, chain, c) -> bool:
        """Whether copy ``c`` (>= 1) has the chain's pattern; records its per-step operands."""
        base, p, eqns = chain.start + c * chain.p, chain.p, self.eqns
        for pos in range(p):
            e, t = eqns[base + pos], eqns[chain.start + p + pos]
            self.budget -= len(e.invars) + 1
            if e.prim.name == "slice" and pos not in chain.hoisted and _bounds(e) != _bounds(t):
                return False
            for q, a in enumerate(e.invars):
                kind = chain.slots[(pos, q)]
                tag = kind[0]
                if tag == "inv":
                    ok = a is kind[1] or (isinstance(a, Literal) and isinstance(kind[1], Literal)
                                          and _lit_key(a) == _lit_key(kind[1]))
                elif tag == "step":
                    ok = self._outside(a, chain) and \
                        isinstance(a, Literal) == isinstance(chain.steps[(pos, q)][0], Literal)
                else:
                    want = (c if tag == "in" else c - 1, kind[1], kind[2])
                    ok = isinstance(a, Var) and self._where(a, chain) == want
                if not ok:
                    return False
        for (pos, q), series in chain.steps.items():
            if len(series) == c:
                series.append(None)
            series[c] = eqns[base + pos].invars[q]
        for pos in chain.hoisted:
            chain.bounds[pos].append(eqns[base + pos].params)
        return True
