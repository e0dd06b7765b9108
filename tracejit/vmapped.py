"""vmap: the public face of the batching transform (transforms/batching.py).

``vmap(f, in_axes, out_axes)`` traces ``f`` for one example, batches its graph with
``batch_eval`` (no Python loop) and returns a ``Vmapped``: on arrays a cached ``trace`` of the
batched function, on tracers inlined into the enclosing trace. It sits above api.py (it caches
and pickles through ``trace``), the transform itself below it: batching rules never import
this module.
"""
from __future__ import annotations

import numpy as np

from . import autograph, dtypes, pickling, tree
from .api import _artifact_bytes, trace
from .artifact import Artifact
from .bugreport import compiler_stage
from .core import Tracer, current_builder, make_graph, note_argument_writes, type_of
from .errors import InputError
from .ir import Type
from .transforms.batching import batch_eval, move_batch, to_batched


def _axes_for_leaves(in_axes, args):
    """One axis (int or None) per leaf of ``args``, from a pytree prefix ``in_axes``."""
    if isinstance(in_axes, (int, type(None))):
        return [in_axes] * len(tree.flatten(args)[0])
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not isinstance(in_axes, tuple) or len(in_axes) != len(args):
        raise InputError(f"vmap in_axes {in_axes!r} must be an int, None, or a tuple with one "
                         f"entry per positional argument ({len(args)})")
    out = []
    for ax, a in zip(in_axes, args):
        if isinstance(ax, (int, type(None))):
            out += [ax] * len(tree.flatten(a)[0])
        else:
            ax_leaves, ax_tree = tree.flatten(ax, is_leaf=lambda x: x is None)
            a_leaves, a_tree = tree.flatten(a)
            if len(ax_leaves) != len(a_leaves):
                raise InputError(f"vmap in_axes {ax!r} does not match the argument structure "
                                 f"{a_tree}")
            out += ax_leaves
    return out


def vmap(f, in_axes=0, out_axes=0):
    """Vectorise ``f`` over a batch axis of its arguments (``in_axes``: int, None or a pytree
    prefix per positional argument; ``out_axes`` likewise for the outputs).

    The per-example function is traced once and its graph batched (no Python loop); the result
    composes with grad/jvp/vjp/trace in any order. Called on concrete arrays it compiles and
    caches like ``trace``; called on tracers it inlines.
    """
    def run(*args):
        leaves, treedef = tree.flatten(args)
        paths = tree.leaf_paths(treedef, "args")
        axes = _axes_for_leaves(in_axes, args)
        sizes = {}
        norm = []
        for x, ax, path in zip(leaves, axes, paths):
            if ax is None:
                norm.append(None)
                continue
            nd = len(type_of(x).shape)
            if not -nd <= ax < nd:
                raise InputError(f"vmap: in_axes {ax} is out of range for {path} of shape "
                                 f"{type_of(x).shape}")
            ax %= nd
            norm.append(ax)
            sizes.setdefault(type_of(x).shape[ax], []).append(path)
        if not sizes:
            raise InputError("vmap needs at least one argument with a batch axis (in_axes all None)")
        if len(sizes) > 1:
            detail = "; ".join(f"size {n}: {', '.join(p)}" for n, p in sizes.items())
            raise InputError(f"vmap: arguments have different batch sizes ({detail})")
        B = next(iter(sizes))
        values = [x if ax is None else move_batch(_as_value(x), ax, 0)
                  for x, ax in zip(leaves, norm)]
        # a Python scalar (or a weak tracer of an enclosing trace) stays weakly typed per example
        types = [Type(type_of(v).dtype, type_of(v).shape[1:] if ax is not None
                      else type_of(v).shape, type_of(v).weak) for v, ax in zip(values, norm)]
        box = []

        def per_example(*xs):
            before = [t.irvar for t in xs]
            out = autograph.call(f, *tree.unflatten(treedef, list(xs)))
            note_argument_writes(xs, before)
            out_leaves, out_tree = tree.flatten(out)
            box.append(out_tree)
            return out_leaves

        graph, captured = make_graph(per_example, types)
        dims = [None if ax is None else 0 for ax in norm] + [None] * len(captured)
        with compiler_stage("vmap (batching rules)", graph):
            outs, odims = batch_eval(graph, values + captured, dims, B)
        out_tree = box[0]
        o_axes = _axes_for_leaves(out_axes, (tree.unflatten(out_tree, outs),))[:len(outs)] \
            if not isinstance(out_axes, (int, type(None))) else [out_axes] * len(outs)
        final = []
        for o, d, oa in zip(outs, odims, o_axes):
            if oa is None:
                if d is not None:
                    raise InputError("vmap: out_axes=None for an output that depends on the "
                                     "batch")
                final.append(o)
                continue
            o = to_batched(o, d, B)
            final.append(move_batch(o, 0, oa % len(type_of(o).shape)))
        return tree.unflatten(out_tree, final)

    return Vmapped(f, in_axes, out_axes, run)


class Vmapped:
    """``vmap(f, in_axes, out_axes)``: on arrays a cached trace of the batched function, on
    tracers inlined. Pickles as ``vmap`` of ``f`` (with the artifact of its compiled
    signatures when ``f`` is not importable: see pickling.py)."""

    def __init__(self, f, in_axes, out_axes, run):
        self.__wrapped__ = f
        self.__name__ = f"vmap({getattr(f, '__name__', 'f')})"
        self._options = (in_axes, out_axes)
        self._run = run
        self._compiled = trace(run)

    def __call__(self, *args):
        if current_builder() is not None or \
                any(isinstance(x, Tracer) for x in tree.flatten(args)[0]):
            return self._run(*args)                # inside a trace: inline
        return self._compiled(*args)

    def cache_info(self):
        """The cache counters of the batched function's trace (``Traced.cache_info``)."""
        return self._compiled.cache_info()

    def export_artifact(self, strict: bool = True):
        """The compiled signatures as an ``Artifact`` (see ``Traced.export_artifact``)."""
        return self._compiled.export_artifact(strict)

    def load_artifact(self, artifact) -> int:
        """Make an artifact's signatures known (see ``Traced.load_artifact``)."""
        return self._compiled.load_artifact(artifact)

    def __reduce__(self):
        f, art = self.__wrapped__, None
        if not pickling.user_importable(f):
            f = pickling.by_value(f)
            art = _artifact_bytes(self._compiled._artifact_entries(None, strict=False),
                                  self.__name__)
        return _restore_vmap, (f, *self._options, art)

    def __repr__(self):
        return f"<tracejit {self.__name__}>"


def _restore_vmap(f, in_axes, out_axes, artifact):
    """Unpickle ``vmap(f, in_axes, out_axes)`` knowing the artifact's signatures."""
    out = vmap(f, in_axes, out_axes)
    if artifact is not None:
        out.load_artifact(Artifact.from_bytes(artifact))
    return out


def _as_value(x):
    if isinstance(x, Tracer):
        return x
    arr = np.asarray(x)
    return arr.astype(dtypes.canonical(arr.dtype), copy=False)
