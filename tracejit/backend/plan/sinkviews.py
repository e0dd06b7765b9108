"""Sink structural ops of computed values into their producers (Graph -> Graph, backend only).

A slice, rev, transpose, unit-dim reshape or pad of an *elementwise* result is rewritten as the
elementwise equation applied to the transformed operands, recursively, until the transforms
reach leaves (inputs, constants, iota, broadcasts of smaller values, anything not
elementwise). Leaves are views in the fused plan, so a chain such as a batched Jacobian's
``transpose(reshape(pad(f(...)) + pad(g(...))))`` becomes one loop that writes the output
once, instead of storing every intermediate and copying it around.

- ``pad(x, v)`` becomes ``select(lo <= iota < lo + n on every padded axis, pad_any(x), v)``,
  where ``pad_any`` is a pad whose fill values are never read: through an elementwise op it
  pads the operands, through ``slice`` it widens the slice when the source has room, through
  ``iota`` it is a larger iota minus ``lo``, through ``broadcast_in_dim`` it pads only the
  operand's non-stretched axes. At any other leaf it is a real pad (a copy of that leaf).
- Transforms pass through ``broadcast_in_dim`` onto its (smaller) operand; broadcasts
  themselves are never sunk (that would multiply work). The transpose of a 2-D product used
  nowhere else is the product with its operands swapped.
- An elementwise producer with other users is recomputed only when it is cheap (no
  transcendental); otherwise the transform stays where it is (the value is stored once and
  read through a view, as before).
Values are unchanged bit for bit: the same scalar operations run on the same elements.
Graph inputs, outputs and constants keep their identity.
"""
from __future__ import annotations

import numpy as np

from ...ir import Eqn, Literal, Type, Var
from ...passes import cse, dce
from ...ops import elementwise as ew
from ...ops import structural as st

PUSHED = ("slice", "rev", "transpose", "reshape", "pad")
CHEAP = frozenset(("add", "sub", "mul", "neg", "convert", "select", "eq", "ne", "lt", "le",
                   "gt", "ge", "and", "or", "not", "xor", "shl", "shr", "max", "min", "abs", "sign",
                   "integer_pow", "real", "imag", "conj"))
MAX_RECOMPUTE = 4             # elementwise ops recomputed for a value with other users
# views sunk through at most this many producers (each a few Python frames of recursion: a view
# of a chain of thousands of operations, an HMM's forward recursion, stops sinking there)
MAX_SINK_DEPTH = 64


def _unit_reshape(src, dst):
    """Whether a reshape only inserts or removes size-1 axes."""
    return tuple(d for d in src if d != 1) == tuple(d for d in dst if d != 1)


def _lit(value, dtype):
    return Literal(value, Type(np.dtype(dtype), ()))


class _Sinker:
    def __init__(self, graph):
        self.graph = graph
        self.eqns: list = []
        self.producer: dict = {}
        self.memo: dict = {}
        self.depth = 0                # producers the current sink has gone through
        self.uses: dict = {}
        for e in graph.eqns:
            for a in e.invars:
                if isinstance(a, Var):
                    self.uses[id(a)] = self.uses.get(id(a), 0) + 1
        for a in graph.outvars:
            if isinstance(a, Var):
                self.uses[id(a)] = self.uses.get(id(a), 0) + 2
        self.users: dict = {}                    # id(var) -> eqns reading it (original graph)
        for e in graph.eqns:
            for a in e.invars:
                if isinstance(a, Var):
                    self.users.setdefault(id(a), []).append(e)
        for a in graph.outvars:
            if isinstance(a, Var):
                self.users[id(a)] = None           # an output is stored anyway
        self.changed = False

    # emitting ---------------------------------------------------------------------------------
    def emit(self, prim, ins, params, source=None):
        if prim is st.broadcast_in_dim_p and isinstance(ins[0], Var):
            x = ins[0]
            if tuple(params["shape"]) == x.ty.shape and \
                    tuple(params["dims"]) == tuple(range(x.ty.ndim)):
                return x                             # an identity broadcast
        out_ty, = prim.abstract_eval([a.ty for a in ins], **params)
        out = Var(out_ty)
        eqn = Eqn(prim, tuple(ins), (out,), dict(params), source)
        self.eqns.append(eqn)
        self.producer[id(out)] = eqn
        return out

    def plain(self, kind, params, x):
        """The transform as an equation on ``x`` (no sinking)."""
        if kind == "pad_any":
            zero = _lit(False if x.ty.dtype == np.bool_ else 0, x.ty.dtype)
            return self.emit(st.pad_p, [x, zero], params)
        prim = {"slice": st.slice_p, "rev": st.rev_p, "transpose": st.transpose_p,
                "reshape": st.reshape_p}[kind]
        return self.emit(prim, [x], params)

    def apply(self, kind, params, x):
        r = self.sink(kind, params, x)
        return r if r is not None else self.plain(kind, params, x)

    # sinking ----------------------------------------------------------------------------------
    def sink(self, kind, params, x):
        """``kind[params] x`` expressed without a stored intermediate, or None."""
        if not isinstance(x, Var):
            return None
        key = (kind, _key(params), id(x))
        if key in self.memo:
            return self.memo[key]
        if self.depth >= MAX_SINK_DEPTH:
            return None          # (a long chain: the view is taken of the stored value there)
        self.depth += 1
        try:
            r = self._sink(kind, params, x)
        finally:
            self.depth -= 1
        self.memo[key] = r
        return r

    def only_views(self, x, depth=16):
        """Whether every use of ``x`` ends (through cheap elementwise ops) in a transform that
        is sunk too: then recomputing ``x`` per transform replaces it instead of adding work
        next to a stored copy."""
        users = self.users.get(id(x))
        if users is None or depth < 0:
            return False
        for e in users:
            if e.prim.name in PUSHED:
                continue
            through = e.prim.name == "broadcast_in_dim" or \
                (e.prim.kind == "elementwise" and e.prim.name in CHEAP)
            if not through or not self.only_views(e.outvars[0], depth - 1):
                return False
        return True

    def cheap(self, x, budget=None):
        """Whether recomputing ``x`` is cheap: at most MAX_RECOMPUTE elementwise ops without a
        transcendental between it and its leaves (inputs, iota, broadcasts, stored values)."""
        top = budget is None
        budget = budget if budget is not None else [MAX_RECOMPUTE]
        p = self.producer.get(id(x))
        if p is None or p.prim.kind != "elementwise":
            return True
        if p.prim.name not in CHEAP or budget[0] <= 0:
            return False
        budget[0] -= 1
        ok = all(self.cheap(a, budget) for a in p.invars if isinstance(a, Var))
        return ok if top else ok

    def _sink(self, kind, params, x):
        p = self.producer.get(id(x))
        if p is None or p.prim.multiple_results:
            return None
        name = p.prim.name
        if p.prim.kind == "elementwise":
            if self.uses.get(id(x), 0) > 1 and not (self.cheap(x) and self.only_views(x)):
                return None
            if any(isinstance(a, Var) and a.ty.shape not in (x.ty.shape, ()) for a in p.invars):
                return None
            full = [isinstance(a, Var) and a.ty.shape == x.ty.shape and a.ty.shape != ()
                    for a in p.invars]
            if kind == "pad_any":
                # a full-size operand that cannot be sunk would need a padded copy of its own:
                # then pad the stored result instead (one copy, not one per operand)
                ins = [self.sink(kind, params, a) if f else a for a, f in zip(p.invars, full)]
                if any(r is None for r in ins):
                    return None
            else:
                ins = [self.apply(kind, params, a) if f else a for a, f in zip(p.invars, full)]
            return self.emit(p.prim, ins, p.params, p.source)
        if name == "dot_general" and kind == "transpose":
            return self._swap_product(params, x, p)
        if name == "broadcast_in_dim":
            return self._through_bcast(kind, params, x, p)
        if name == "iota":
            return self._through_iota(kind, params, x, p)
        if name == "slice" and kind == "pad_any":
            return self._widen_slice(params, x, p)
        return None

    def _through_bcast(self, kind, params, x, p):
        y = p.invars[0]
        if not isinstance(y, Var):
            return None
        dims, shape, ys = p.params["dims"], x.ty.shape, y.ty.shape
        # y axis j sits at x axis dims[j]; it is "real" when not stretched
        real = {dims[j]: j for j in range(len(ys)) if ys[j] == shape[dims[j]]}
        if kind == "slice":
            start, limit, step = params["start"], params["limit"], params["step"]
            new_shape = st.slice_p.abstract_eval([x.ty], **params)[0].shape
            ysl = dict(start=[0] * len(ys), limit=list(ys), step=[1] * len(ys))
            for k, j in real.items():
                ysl["start"][j], ysl["limit"][j], ysl["step"][j] = start[k], limit[k], step[k]
            ysl = {k: tuple(v) for k, v in ysl.items()}
            y2 = y if ysl["start"] == (0,) * len(ys) and ysl["limit"] == ys and \
                ysl["step"] == (1,) * len(ys) else self.apply("slice", ysl, y)
            fixed = [1 if ys[j] == 1 and shape[dims[j]] != 1 else new_shape[dims[j]]
                     for j in range(len(ys))]
            if tuple(fixed) != y2.ty.shape:          # a stretched unit axis sliced to size 0
                return None
            return self.emit(st.broadcast_in_dim_p, [y2], dict(shape=new_shape, dims=dims))
        if kind == "rev":
            axes = tuple(real[k] for k in params["axes"] if k in real and shape[k] > 1)
            y2 = self.apply("rev", dict(axes=axes), y) if axes else y
            return self.emit(st.broadcast_in_dim_p, [y2], dict(shape=shape, dims=dims))
        if kind == "transpose":
            perm = params["perm"]
            inv = [0] * len(perm)
            for i, q in enumerate(perm):
                inv[q] = i
            pos = [inv[d] for d in dims]                  # new position of y axis j
            order = tuple(sorted(range(len(ys)), key=lambda j: pos[j]))
            y2 = y if order == tuple(range(len(ys))) else \
                self.apply("transpose", dict(perm=order), y)
            new_shape = tuple(shape[q] for q in perm)
            return self.emit(st.broadcast_in_dim_p, [y2],
                             dict(shape=new_shape, dims=tuple(sorted(pos))))
        if kind == "reshape":
            new_shape = tuple(params["shape"])
            if not _unit_reshape(shape, new_shape):
                return None
            src = [k for k in range(len(shape)) if shape[k] != 1]
            dst = [k for k in range(len(new_shape)) if new_shape[k] != 1]
            where = dict(zip(src, dst))
            keep = [j for j in range(len(ys)) if shape[dims[j]] != 1]
            if len(keep) != len(ys):
                y2 = self.apply("reshape", dict(shape=tuple(ys[j] for j in keep)), y)
            else:
                y2 = y
            return self.emit(st.broadcast_in_dim_p, [y2],
                             dict(shape=new_shape, dims=tuple(where[dims[j]] for j in keep)))
        if kind == "pad_any":
            lo, hi = params["lo"], params["hi"]
            ylo = [0] * len(ys)
            yhi = [0] * len(ys)
            for k, j in real.items():
                ylo[j], yhi[j] = lo[k], hi[k]
            y2 = self.apply("pad_any", dict(lo=tuple(ylo), hi=tuple(yhi)), y) \
                if any(ylo) or any(yhi) else y
            new_shape = tuple(d + a + b for d, a, b in zip(shape, lo, hi))
            return self.emit(st.broadcast_in_dim_p, [y2], dict(shape=new_shape, dims=dims))
        return None

    def _swap_product(self, params, x, p):
        """(A @ B).T as B.T @ A.T: the product with its operands swapped writes the transposed
        result directly (the kernel reads either operand through strides)."""
        (lc, rc), (lb, rb) = p.params["contract"], p.params["batch"]
        lhs, rhs = p.invars
        if lb or rb or lhs.ty.ndim != 2 or rhs.ty.ndim != 2 or len(lc) != 1 or \
                tuple(params["perm"]) != (1, 0) or self.uses.get(id(x), 0) != 1:
            return None
        return self.emit(p.prim, [rhs, lhs], dict(p.params, contract=(rc, lc)), p.source)

    def _through_iota(self, kind, params, x, p):
        ip = p.params
        shape, axis = x.ty.shape, ip["axis"]
        if kind == "reshape":
            new_shape = tuple(params["shape"])
            if not _unit_reshape(shape, new_shape) or shape[axis] == 1:
                return None
            src = [k for k in range(len(shape)) if shape[k] != 1]
            dst = [k for k in range(len(new_shape)) if new_shape[k] != 1]
            return self.emit(st.iota_p, [], dict(ip, shape=new_shape,
                                                 axis=dict(zip(src, dst))[axis]))
        if kind == "pad_any":
            lo, hi = params["lo"], params["hi"]
            new_shape = tuple(d + a + b for d, a, b in zip(shape, lo, hi))
            big = self.emit(st.iota_p, [], dict(ip, shape=new_shape))
            if not lo[axis]:
                return big
            return self.emit(ew.sub_p, [big, _lit(lo[axis], x.ty.dtype)], {})
        if kind == "transpose":
            perm = params["perm"]
            return self.emit(st.iota_p, [], dict(ip, shape=tuple(shape[q] for q in perm),
                                                 axis=list(perm).index(axis)))
        if kind == "slice":                          # start + step * iota: pads then see iota
            new_shape = st.slice_p.abstract_eval([x.ty], **params)[0].shape
            r = self.emit(st.iota_p, [], dict(ip, shape=new_shape))
            if params["step"][axis] != 1:
                r = self.emit(ew.mul_p, [r, _lit(params["step"][axis], x.ty.dtype)], {})
            if params["start"][axis]:
                r = self.emit(ew.add_p, [r, _lit(params["start"][axis], x.ty.dtype)], {})
            return r
        return None                  # a rev of iota is a view already

    def _widen_slice(self, params, x, p):
        """pad_any of a step-1 slice: a wider slice when the source has room on every side."""
        y = p.invars[0]
        sp = p.params
        lo, hi = params["lo"], params["hi"]
        start, limit = list(sp["start"]), list(sp["limit"])
        for k in range(len(lo)):
            if not (lo[k] or hi[k]):
                continue
            if sp["step"][k] != 1 or start[k] - lo[k] < 0 or \
                    start[k] + x.ty.shape[k] + hi[k] > y.ty.shape[k]:
                return None
            limit[k] = start[k] + x.ty.shape[k] + hi[k]
            start[k] -= lo[k]
        new = dict(start=tuple(start), limit=tuple(limit), step=tuple(sp["step"]))
        if new["start"] == (0,) * len(start) and new["limit"] == y.ty.shape and \
                new["step"] == (1,) * len(start):
            return y
        return self.apply("slice", new, y)

    def pad(self, x, value, lo, hi, out_ty):
        inner = self.sink("pad_any", dict(lo=lo, hi=hi), x)
        if inner is None:
            return None
        mask = None
        for k, (a, b) in enumerate(zip(lo, hi)):
            if not (a or b):
                continue
            idx = self.emit(st.iota_p, [], dict(dtype=np.dtype(np.int64), shape=out_ty.shape,
                                                axis=k))
            conds = []
            if a:
                conds.append(self.emit(ew.ge_p, [idx, _lit(a, np.int64)], {}))
            if b:
                conds.append(self.emit(ew.lt_p, [idx, _lit(a + x.ty.shape[k], np.int64)], {}))
            for c in conds:
                mask = c if mask is None else self.emit(ew.and_p, [mask, c], {})
        if mask is None:
            return inner
        return self.emit(ew.select_p, [mask, inner, value], {})

    # the walk ---------------------------------------------------------------------------------
    def run(self):
        subst: dict = {}

        def read(a):
            while isinstance(a, Var) and id(a) in subst:
                a = subst[id(a)]
            return a

        for eqn in self.graph.eqns:
            ins = [read(a) for a in eqn.invars]
            out = eqn.outvars[0] if eqn.outvars else None
            name = eqn.prim.name
            r = None
            if name in PUSHED and isinstance(ins[0], Var) and \
                    self.producer.get(id(ins[0])) is not None:
                if name == "pad":
                    if isinstance(ins[1], Literal):
                        r = self.pad(ins[0], ins[1], tuple(eqn.params["lo"]),
                                     tuple(eqn.params["hi"]), out.ty)
                elif name != "reshape" or _unit_reshape(ins[0].ty.shape, out.ty.shape):
                    r = self.sink(name, eqn.params, ins[0])
            if r is not None and r.ty.shape == out.ty.shape and r.ty.dtype == out.ty.dtype:
                subst[id(out)] = r
                self.uses[id(r)] = self.uses.get(id(r), 0) + self.uses.get(id(out), 0)
                if id(r) not in self.users or self.users[id(r)] is not None:
                    more = self.users.get(id(out), [])
                    self.users[id(r)] = None if more is None else \
                        (self.users.get(id(r)) or []) + more
                self.changed = True
                continue
            new = Eqn(eqn.prim, tuple(ins), eqn.outvars, eqn.params, eqn.source)
            self.eqns.append(new)
            for v in eqn.outvars:
                self.producer[id(v)] = new
        # graph outputs keep their vars: the equation producing a substitute is renamed
        outs = list(self.graph.outvars)
        rename = {}
        for a in outs:
            if isinstance(a, Var) and id(a) in subst:
                r = read(a)
                if isinstance(r, Var) and id(r) not in rename and \
                        id(r) in self.producer and \
                        not any(r is o for o in outs):
                    rename[id(r)] = a
                else:
                    return None                      # rare: keep the original graph
        eqns = []
        for e in self.eqns:
            ins = tuple(rename.get(id(a), a) if isinstance(a, Var) else a for a in e.invars)
            outv = tuple(rename.get(id(v), v) for v in e.outvars)
            eqns.append(Eqn(e.prim, ins, outv, e.params, e.source))
        return dce(self.graph.replace(eqns=eqns))


def _key(params):
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v)
                        for k, v in params.items()))


def sink_views(graph):
    """``graph`` with structural ops of computed values sunk into their producers (see the
    module docstring); the graph itself when nothing applies."""
    if not any(e.prim.name in PUSHED for e in graph.eqns):
        return graph
    s = _Sinker(graph)
    new = s.run()
    if new is None or not s.changed:
        return graph
    merged = cse(new)                        # sunk copies of one value (iota == iota, ...)
    if all(a is b for a, b in zip(merged.outvars, new.outvars)):
        new = dce(merged)
    return new
