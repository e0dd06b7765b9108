"""Rematerialisation: ``checkpoint(f)`` recomputes ``f``'s intermediates in the backward pass
instead of storing them (``derivatives.residual_bytes`` reports what a gradient keeps alive).

In the IR a checkpointed region is one ``remat[call=<graph>]`` equation. Forward evaluation and
compilation see its graph inlined (``simplify`` expands it); reverse-mode AD keeps only the
region's inputs as residuals and re-runs the region inside the backward pass (see
``transforms/control_ad.py``). ``scan(..., checkpoint_every=k)`` builds on it: only every k-th
carry is stored, so a 10,000-step scan with k = 100 keeps ~100 carries plus one segment's
residuals instead of 10,000 steps' worth (the √n scheme with k ≈ √n).
"""
from __future__ import annotations

import functools

import numpy as np

from . import tree
from .signature import leaf_type
from .core import Primitive, eval_graph, literal_value, make_graph
from .ops.control import attach_control_rules


def _shape(*in_types, call, policy):
    return list(call.out_types)


def _impl(*args, call, policy):
    return [np.asarray(literal_value(o), dtype=t.dtype)
            for o, t in zip(eval_graph(call, list(args)), call.out_types)]


remat_p = Primitive("remat", "control", _shape, _impl, multiple_results=True, inline=True)
attach_control_rules(remat_p, "remat")

POLICIES = (None, "nothing_saveable")


def checkpoint(fun, policy=None):
    """``fun`` with its intermediates recomputed during the backward pass (rematerialisation).

    Values are identical with and without it; reverse-mode memory drops to the region's inputs,
    at the cost of running ``fun`` twice. ``policy``: None / "nothing_saveable" (recompute
    everything; the only policy so far). Works on any pytree arguments and results.
    """
    if policy not in POLICIES:
        raise ValueError(f"checkpoint policy {policy!r} is not supported; use one of {POLICIES}")

    @functools.wraps(fun)
    def wrapped(*args):
        leaves, in_tree = tree.flatten(args)
        types = [leaf_type(x, f"argument {i}").strong() for i, x in enumerate(leaves)]
        box = []

        def flat(*xs):
            out = fun(*tree.unflatten(in_tree, list(xs)))
            out_leaves, out_tree = tree.flatten(out)
            box.append(out_tree)
            return out_leaves

        graph, captured = make_graph(flat, types)
        values = [x if hasattr(x, "irvar") else np.asarray(x, dtype=t.dtype)
                  for x, t in zip(leaves, types)]
        outs = remat_p.bind(*values, *captured, call=graph, policy=policy)
        return tree.unflatten(box[0], outs)

    return wrapped


remat = checkpoint
