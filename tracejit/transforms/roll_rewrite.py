"""The rewrite half of rolling (``roll.py`` finds the chains): one matched chain becomes
``[equations stacking the per-step inputs] scan [rows of the ys read back]``.

Invariants:
- the body is copy 0 of the chain with fresh vars; its inputs are the invariant values (scan
  consts), the carried values (initial carry: what copy 0 read) and the per-step values (xs);
- per-step values are stacked by data movement only: rows of one array in order (``xs[t]``,
  the ys of a chain rolled before) are one ``slice`` of it (with ``transpose``/``reshape`` when
  the rows run along another axis, ``rev`` when against the scan's direction); literals become
  a constant; anything else a ``concatenate`` of the values;
- the scan runs in reverse (``reverse=True``) when the first per-step input read in order runs
  backwards (the backward chain of a gradient reads the forward chain's rows from the last);
  copy ``c`` is then step ``k - 1 - c``;
- a value of copy ``c`` used after the chain is defined again under its own var: the final
  carry for the last copy's carried values, else ``reshape(slice(ys))`` at the copy's row; a
  hoisted slice used after the chain is emitted again as it was.
"""
from __future__ import annotations

import numpy as np

from ..ir import PRIMITIVES, Eqn, Graph, Literal, Type, Var


def _bind(out: list, name, ins, ty, **params):
    """Append ``name[params] ins`` with one result of type ``ty``; return its var."""
    v = Var(ty)
    out.append(Eqn(PRIMITIVES[name], tuple(ins), (v,), params))
    return v


def _slice(out, x, start, limit, step=None):
    shape = tuple(-(-(l - s) // st) for s, l, st in zip(start, limit, step or [1] * len(start)))
    return _bind(out, "slice", (x,), x.ty.with_shape(shape), start=tuple(start),
                 limit=tuple(limit), step=tuple(step or (1,) * len(start)))


def _reshape(out, x, shape):
    if tuple(shape) == x.ty.shape:
        return x
    return _bind(out, "reshape", (x,), x.ty.with_shape(shape), shape=tuple(shape))


class _Stacker:
    """Plans the xs of one chain. ``series``/``hoisted`` return ``(direction, build)``:
    direction +1 when the stack is naturally in copy order, -1 when in reverse copy order, 0
    when it can be built either way; ``build(reverse)`` emits the stack for a scan of that
    direction (row i of the stack is what step i reads)."""

    def __init__(self, k, defs, eqns, pre, consts, made):
        self.k, self.defs, self.eqns, self.pre, self.consts = k, defs, eqns, pre, consts
        self.made = made

    def _producer(self, a, name):
        e = self.made.get(id(a))
        if e is None:
            d = self.defs.get(id(a)) if isinstance(a, Var) else None
            e = self.eqns[d[0]] if d is not None else None
        return e if e is not None and e.prim.name == name else None

    def _row(self, a):
        """(Y, r) when ``a`` is ``reshape(slice(Y))`` taking row r of Y along axis 0."""
        r = self._producer(a, "reshape")
        s = r and self._producer(r.invars[0], "slice")
        if s is None or not isinstance(s.invars[0], Var):
            return None
        y, p = s.invars[0], s.params
        if any(st != 1 for st in p["step"]) or p["limit"][0] != p["start"][0] + 1 or \
                tuple(p["start"][1:]) != (0,) * (y.ty.ndim - 1) or \
                tuple(p["limit"][1:]) != y.ty.shape[1:] or a.ty.shape != y.ty.shape[1:]:
            return None
        return y, p["start"][0]

    def _oriented(self, x, direction):
        """``build`` for a stack ``x`` whose rows run in ``direction``."""
        def build(reverse):
            if (direction < 0) == reverse:
                return x
            return _bind(self.pre, "rev", (x,), x.ty, axes=(0,))
        return build

    def series(self, atoms):
        """Plan the stack of the per-copy values ``atoms``."""
        if all(isinstance(a, Literal) for a in atoms):
            ty = atoms[0].ty

            def literals(reverse):
                var = Var(Type(ty.dtype, (self.k,), ty.weak))
                values = [a.value for a in (atoms[::-1] if reverse else atoms)]
                self.consts.append((var, np.array(values, dtype=ty.dtype)))
                return var
            return 0, literals
        runs = self._runs(atoms)
        longest = max(runs, key=lambda r: r[1] - r[0])
        direction = longest[4] if longest[2] is not None else 0

        def build(reverse):
            pieces = [self._piece(run, atoms, reverse) for run in (runs[::-1] if reverse
                                                                 else runs)]
            if len(pieces) == 1:
                return pieces[0]
            ty = atoms[0].ty
            return _bind(self.pre, "concatenate", pieces,
                         Type(ty.dtype, (self.k,) + ty.shape), axis=0)
        return direction, build

    def _runs(self, atoms):
        """Maximal runs ``(c0, c1, Y, r0, step)`` of copies ``c0..c1`` reading consecutive rows
        ``r0, r0 + step, ...`` of one array ``Y`` (step +1 or -1); ``Y`` is None for a value
        that is no such row (a run of one copy)."""
        rows = [self._row(a) for a in atoms]
        runs, c = [], 0
        while c < self.k:
            if rows[c] is None:
                runs.append((c, c, None, None, 0))
                c += 1
                continue
            y, r0 = rows[c]
            step, e = 0, c
            nxt = rows[c + 1] if c + 1 < self.k else None
            if nxt is not None and nxt[0] is y and nxt[1] - r0 in (1, -1):
                step = nxt[1] - r0
                while e + 1 < self.k and rows[e + 1] is not None and rows[e + 1][0] is y \
                        and rows[e + 1][1] == rows[e][1] + step:
                    e += 1
            runs.append((c, e, y, r0, step))
            c = e + 1
        return runs

    def _piece(self, run, atoms, reverse):
        """The rows of one run, in the scan's order."""
        c0, c1, y, r0, step = run
        if y is None or c0 == c1:
            return _reshape(self.pre, atoms[c0], (1,) + atoms[c0].ty.shape)
        n = c1 - c0 + 1
        lo = min(r0, r0 + (n - 1) * step)
        x = y if lo == 0 and n == y.ty.shape[0] else \
            _slice(self.pre, y, (lo,) + (0,) * (y.ty.ndim - 1), (lo + n,) + y.ty.shape[1:])
        return self._oriented(x, step)(reverse)

    def _concat(self, atoms):
        ty = atoms[0].ty
        parts = [_reshape(self.pre, a, (1,) + ty.shape) for a in atoms]
        return _bind(self.pre, "concatenate", parts, Type(ty.dtype, (self.k,) + ty.shape),
                     axis=0)

    def hoisted(self, y, eqns):
        """Plan the stack of the outputs of the slices ``eqns`` of ``y`` (one per copy): one
        strided slice when their bounds step along one axis of extent 1."""
        ps = [e.params for e in eqns]
        row = eqns[0].outvars[0].ty.shape
        start0, start1 = ps[0]["start"], ps[1]["start"]
        axes = [a for a in range(len(row)) if start0[a] != start1[a]]
        if len(axes) == 1 and row[axes[0]] == 1:
            a = axes[0]
            d = start1[a] - start0[a]
            fixed = [(p["start"][:a] + p["start"][a + 1:], p["limit"][:a] + p["limit"][a + 1:])
                     for p in ps]
            if all(f == fixed[0] for f in fixed) and all(
                    p["start"][a] == start0[a] + c * d for c, p in enumerate(ps)):
                lo = min(start0[a], ps[-1]["start"][a])
                start, limit, step = list(start0), list(ps[0]["limit"]), list(ps[0]["step"])
                start[a], limit[a], step[a] = lo, lo + (self.k - 1) * abs(d) + 1, abs(d)
                whole = start == [0] * len(row) and tuple(limit) == y.ty.shape and \
                    step == [1] * len(row)
                x = y if whole else _slice(self.pre, y, start, limit, step)
                if a:
                    perm = (a,) + tuple(i for i in range(len(row)) if i != a)
                    x = _bind(self.pre, "transpose", (x,),
                              x.ty.with_shape(tuple(x.ty.shape[i] for i in perm)), perm=perm)
                x = _reshape(self.pre, x, (self.k,) + row)
                return (1 if d > 0 else -1), self._oriented(x, d)

        def sliced(reverse):                   # bounds without a pattern: slice, then stack
            self.pre.extend(eqns)
            return self._concat([e.outvars[0] for e in (eqns[::-1] if reverse else eqns)])
        return 0, sliced


def rewrite(chain, defs, eqns, last_use, consts, made) -> list:
    """The equations replacing ``chain`` (see the module docstring); ``consts`` receives the
    (var, value) pairs of stacked literals, ``made`` the equations defining vars read back
    after the scan (id(var) -> Eqn: a later chain of the same round stacks those rows)."""
    start, p, k = chain.start, chain.p, chain.k
    end = start + k * p
    pre, post = [], []
    stacker = _Stacker(k, defs, eqns, pre, consts, made)

    def copy_var(c, pos, o):
        return eqns[start + c * p + pos].outvars[o]

    # per-step inputs: their body vars and stacks (the scan's direction: the first stack's
    # that has one)
    xs_body, plans = [], []
    step_var, by_series = {}, {}
    for slot, atoms in chain.steps.items():
        key = tuple(id(a) if isinstance(a, Var) else ("lit",) + _lit(a) for a in atoms)
        if key not in by_series:
            by_series[key] = Var(atoms[0].ty)
            xs_body.append(by_series[key])
            plans.append(stacker.series(atoms))
        step_var[slot] = by_series[key]
    env = {}
    for pos in sorted(chain.hoisted):
        y = chain.slots[(pos, 0)][1]
        env[(pos, 0)] = Var(eqns[start + pos].outvars[0].ty)
        xs_body.append(env[(pos, 0)])
        plans.append(stacker.hoisted(y, [eqns[start + c * p + pos] for c in range(k)]))
    reverse = next((d for d, _ in plans if d), 1) < 0
    xs_outer = [build(reverse) for _, build in plans]

    # the body: copy 0 with fresh vars
    carry_keys = sorted({kind[1:] for kind in chain.slots.values() if kind[0] == "carry"})
    carry_in = {key: Var(copy_var(0, *key).ty) for key in carry_keys}
    const_outer, const_body, const_of = [], [], {}
    body_eqns = []
    for pos in range(p):
        if pos in chain.hoisted:
            continue
        e = eqns[start + pos]
        ins = []
        for q in range(len(e.invars)):
            kind = chain.slots[(pos, q)]
            tag = kind[0]
            if tag == "in":
                ins.append(env[kind[1:]])
            elif tag == "carry":
                ins.append(carry_in[kind[1:]])
            elif tag == "step":
                ins.append(step_var[(pos, q)])
            elif isinstance(kind[1], Literal):
                ins.append(kind[1])
            else:
                a = kind[1]
                if id(a) not in const_of:
                    const_of[id(a)] = Var(a.ty)
                    const_outer.append(a)
                    const_body.append(const_of[id(a)])
                ins.append(const_of[id(a)])
        outs = tuple(Var(v.ty) for v in e.outvars)
        for o, v in enumerate(outs):
            env[(pos, o)] = v
        body_eqns.append(Eqn(e.prim, tuple(ins), outs, e.params, e.source))

    # values used after the chain
    ys_keys, ys_copies = [], []
    for pos in range(p):
        for o in range(len(eqns[start + pos].outvars)):
            used = [c for c in range(k) if last_use.get(id(copy_var(c, pos, o)), -1) >= end]
            if (pos, o) in carry_in and used and used[-1] == k - 1:
                used.pop()                     # the final carry
            if not used:
                continue
            if pos in chain.hoisted:           # a row of an outside array: slice it again
                post.extend(eqns[start + c * p + pos] for c in used)
                continue
            ys_keys.append((pos, o))
            ys_copies.append(used)
    body = Graph(invars=tuple(const_body) + tuple(carry_in.values()) + tuple(xs_body),
                 outvars=tuple(env[key] for key in carry_keys) +
                 tuple(env[key] for key in ys_keys), eqns=body_eqns)
    ys_outer = [Var(Type(env[key].ty.dtype, (k,) + env[key].ty.shape)) for key in ys_keys]
    scan = Eqn(PRIMITIVES["scan"],
               tuple(const_outer) + tuple(chain.init[key] for key in carry_keys) +
               tuple(xs_outer),
               tuple(copy_var(k - 1, *key) for key in carry_keys) + tuple(ys_outer),
               dict(body=body, length=k, reverse=reverse, n_consts=len(const_outer),
                    n_carry=len(carry_keys)), eqns[start].source)
    for ys, key, used in zip(ys_outer, ys_keys, ys_copies):
        shape = ys.ty.shape
        for c in used:
            r = k - 1 - c if reverse else c
            row = _slice(post, ys, (r,) + (0,) * (len(shape) - 1), (r + 1,) + shape[1:])
            post.append(Eqn(PRIMITIVES["reshape"], (row,), (copy_var(c, *key),),
                            {"shape": shape[1:]}))
            made[id(row)], made[id(copy_var(c, *key))] = post[-2], post[-1]
    return pre + [scan] + post


def _lit(a: Literal):
    return (a.ty, a.value.tobytes())
