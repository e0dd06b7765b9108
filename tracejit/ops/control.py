"""Control-flow primitives with sub-graphs as params: cond, while, scan.

- ``cond[branches] index *operands``: runs ``branches[index]`` (index clamped to the valid range,
  as lax.switch) on the operands; every branch has the same output types.
- ``while[cond, body, n_cond_consts, n_body_consts] *cond_consts *body_consts *carry``: repeats
  ``carry = body(*body_consts, *carry)`` while ``cond(*cond_consts, *carry)``.
- ``scan[body, length, reverse, n_consts, n_carry] *consts *carry *xs``: ``body(*consts, *carry,
  *x_i) -> (*carry, *y_i)`` over the leading axis of the xs; returns the final carry and the
  stacked ys. ``length=None``: a scan of run-time length over *stacks* (xs typed ``T[?,...]``,
  at least one; their common leading dimension is the trip count); the ys are stacks too.
- ``while_record[cond, body, n_cond_consts, n_body_consts, n_carry] *cond_consts *body_consts
  *carry``: a while loop whose ``body(*body_consts, *carry) -> (*carry, *y)`` also returns
  per-step records; returns the final carry, ``live: bool[?]`` (one entry per step that ran:
  all True, except under vmap, where a lane that finished early has False for the steps the
  other lanes still ran) and the stacked ys (``T[?,...]``, one row per step). It is the forward
  pass of a while loop's reverse mode: the ys are the residuals (its tape), grown as the loop
  runs, and the backward pass is a reverse ``scan[length=None]`` over them.
Sub-graphs are closed: values they capture from the enclosing trace are explicit const operands.
"""
from __future__ import annotations

import numpy as np

from ..config import config
from ..core import Primitive, eval_graph, literal_value
from ..errors import ShapeError
from ..ir import Type


def attach_control_rules(prim, name, module="control_ad"):
    """Attach the differentiation rules ``{name}_jvp``, ``{name}_transpose`` and
    ``{name}_partial_eval`` of ``transforms/<module>.py`` (imported when first used, because
    they build on the AD transforms, which sit above ops in the layering)."""
    def lazy(kind):
        resolved = []

        def rule(*args, **kwargs):
            if not resolved:
                import importlib
                rules = importlib.import_module(f"..transforms.{module}", __package__)
                resolved.append(getattr(rules, f"{name}_{kind}"))
            return resolved[0](*args, **kwargs)
        return rule
    prim.jvp = lazy("jvp")
    prim.transpose = lazy("transpose")
    prim.props["partial_eval"] = lazy("partial_eval")


def _types_text(types):
    return "(" + ", ".join(str(t) for t in types) + ")"


def _strong(types):
    return [t.strong() for t in types]


def _cond_shape(index, *ops, branches):
    if index.shape != () or index.dtype.kind != "i":
        raise ShapeError(f"cond: the branch index must be an integer scalar, got {index}")
    outs = _strong(branches[0].out_types)
    for g in branches[1:]:
        if _strong(g.out_types) != outs:
            raise ShapeError(f"cond: branches return different types {_types_text(outs)} and "
                             f"{_types_text(g.out_types)}")
    return outs


def _cond_impl(index, *ops, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return [np.asarray(literal_value(o), dtype=t.dtype)
            for o, t in zip(eval_graph(branches[i], list(ops)), branches[i].out_types)]


cond_p = Primitive("cond", "control", _cond_shape, _cond_impl, multiple_results=True)
attach_control_rules(cond_p, "cond")


def _while_shape(*args, cond, body, n_cond_consts, n_body_consts):
    carry = args[n_cond_consts + n_body_consts:]
    if _strong(body.out_types) != _strong(carry):
        raise ShapeError(f"while_loop: the body returns {_types_text(body.out_types)} but the "
                         f"carry is {_types_text(carry)}; they must match exactly")
    if len(cond.out_types) != 1 or cond.out_types[0].strong() != Type(np.dtype(bool), ()):
        raise ShapeError(f"while_loop: cond_fun must return a bool scalar, got "
                         f"{_types_text(cond.out_types)}")
    return _strong(carry)


def _while_impl(*args, cond, body, n_cond_consts, n_body_consts):
    cc = list(args[:n_cond_consts])
    bc = list(args[n_cond_consts:n_cond_consts + n_body_consts])
    carry = list(args[n_cond_consts + n_body_consts:])
    limit = config.max_while_iterations
    count = 0
    while bool(literal_value(eval_graph(cond, cc + carry)[0])):
        count += 1
        if limit is not None and count > limit:
            raise RuntimeError(f"while_loop exceeded config.max_while_iterations = {limit}")
        carry = [np.asarray(literal_value(c), dtype=t.dtype)
                 for c, t in zip(eval_graph(body, bc + carry), body.out_types)]
    return [np.asarray(c) for c in carry]


while_p = Primitive("while", "control", _while_shape, _while_impl, multiple_results=True)
attach_control_rules(while_p, "while", "while_ad")


def _scan_shape(*args, body, length, reverse, n_consts, n_carry):
    carry = args[n_consts:n_consts + n_carry]
    xs = args[n_consts + n_carry:]
    if length is None and not xs:
        raise ShapeError("scan of run-time length (length=None) needs at least one stack in xs")
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            want = "a stack T[?,...]" if length is None else f"leading dimension {length}"
            raise ShapeError(f"scan: every xs leaf needs {want}, got {x}")
    outs = body.out_types
    if _strong(outs[:n_carry]) != _strong(carry):
        raise ShapeError(f"scan: the body returns carry {_types_text(outs[:n_carry])} but the "
                         f"initial carry is {_types_text(carry)}; they must match exactly")
    ys = [Type(t.dtype, (length,) + t.shape) for t in outs[n_carry:]]
    return _strong(carry) + ys


def stack_length(xs) -> int:
    """The common run-time length of the stacks ``xs`` (a ValueError if they differ)."""
    lengths = {int(np.shape(x)[0]) for x in xs}
    if len(lengths) != 1:
        raise ValueError(f"scan: stacks of different lengths {sorted(lengths)}")
    return lengths.pop()


def _scan_impl(*args, body, length, reverse, n_consts, n_carry):
    consts = list(args[:n_consts])
    carry = list(args[n_consts:n_consts + n_carry])
    xs = [np.asarray(x) for x in args[n_consts + n_carry:]]
    if length is None:
        length = stack_length(xs)
    out_types = body.out_types
    ys = [np.empty((length,) + t.shape, dtype=t.dtype) for t in out_types[n_carry:]]
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = eval_graph(body, consts + carry + [x[i] for x in xs])
        outs = [np.asarray(literal_value(o), dtype=t.dtype) for o, t in zip(outs, out_types)]
        carry = outs[:n_carry]
        for y, o in zip(ys, outs[n_carry:]):
            y[i] = o
    return carry + ys


scan_p = Primitive("scan", "control", _scan_shape, _scan_impl, multiple_results=True)
attach_control_rules(scan_p, "scan")


def _while_record_shape(*args, cond, body, n_cond_consts, n_body_consts, n_carry):
    carry = args[n_cond_consts + n_body_consts:]
    if len(carry) != n_carry:
        raise ShapeError(f"while_record: {len(carry)} carries but n_carry={n_carry}")
    outs = body.out_types
    _while_shape(*args, cond=cond, body=body.replace(outvars=body.outvars[:n_carry]),
                 n_cond_consts=n_cond_consts, n_body_consts=n_body_consts)
    ys = [Type(t.dtype, (None,) + t.shape) for t in outs[n_carry:]]
    return _strong(carry) + [Type(np.dtype(bool), (None,))] + ys


def _while_record_impl(*args, cond, body, n_cond_consts, n_body_consts, n_carry):
    cc = list(args[:n_cond_consts])
    bc = list(args[n_cond_consts:n_cond_consts + n_body_consts])
    carry = list(args[n_cond_consts + n_body_consts:])
    out_types = body.out_types
    rows = [[] for _ in out_types[n_carry:]]
    limit, count = config.max_while_iterations, 0
    while bool(literal_value(eval_graph(cond, cc + carry)[0])):
        count += 1
        if limit is not None and count > limit:
            raise RuntimeError(f"while_loop exceeded config.max_while_iterations = {limit}")
        outs = [np.asarray(literal_value(o), dtype=t.dtype)
                for o, t in zip(eval_graph(body, bc + carry), out_types)]
        carry = outs[:n_carry]
        for r, y in zip(rows, outs[n_carry:]):
            r.append(y)
    ys = [np.stack(r) if r else np.empty((0,) + t.shape, t.dtype)
          for r, t in zip(rows, out_types[n_carry:])]
    return [np.asarray(c) for c in carry] + [np.ones(count, dtype=bool)] + ys


while_record_p = Primitive("while_record", "control", _while_record_shape, _while_record_impl,
                           multiple_results=True)
attach_control_rules(while_record_p, "while_record", "while_ad")
