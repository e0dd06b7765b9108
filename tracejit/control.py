"""Structured control flow that stays control flow in the IR: cond, switch, while_loop,
fori_loop, scan. Python loops unroll while tracing (right for short fixed loops); these keep one
copy of the body however many times it runs. Carried values are pytrees; the body's output types
must match the carry exactly (a mismatch is an error naming both)."""
from __future__ import annotations

import numpy as np

from . import dtypes, tree
from .core import Tracer, make_graph, type_of
from .errors import ShapeError
from .ir import Type
from .checkpoint import checkpoint
from .ops import control as cf
from .ops import elementwise as ew
from .ops.structural import concatenate_p, reshape_p


def _index(x, dtype):
    """A traced predicate, branch index or loop bound as a ``dtype`` scalar (a convert when its
    dtype differs; control flow needs no NumPy promotion, so this stays below the NumPy layer)."""
    return x if x.dtype == dtype else ew.convert_p.bind(x, dtype=dtype)


def _leaf_types(leaves):
    """Carried values are strongly typed (a weak Python scalar becomes its default dtype)."""
    return [Type(type_of(x).dtype, type_of(x).shape) for x in leaves]


def _trace_sub(fn, in_tree, in_types, star=False):
    """Trace ``fn`` on a pytree argument of ``in_types`` (``star``: a tuple spread as *args).

    Returns (graph, consts, out_tree); the graph takes the consts first."""
    box = []

    def flat(*tracers):
        arg = tree.unflatten(in_tree, list(tracers))
        out = fn(*arg) if star else fn(arg)
        leaves, out_tree = tree.flatten(out)
        box.append(out_tree)
        return leaves

    graph, captured = make_graph(flat, in_types)
    n = len(in_types)
    consts = captured
    # captured values are trailing inputs of the graph; move them to the front (const operands)
    graph = graph.replace(invars=graph.invars[n:] + graph.invars[:n])
    return graph, consts, box[0]


def _carry_leaves(init):
    leaves, treedef = tree.flatten(init)
    leaves = [x if isinstance(x, Tracer) else _strong_array(x) for x in leaves]
    return leaves, treedef


def _strong_array(x):
    t = type_of(x)
    return np.asarray(getattr(x, "value", x), dtype=t.dtype)     # arrays, scalars, Literals


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``; only one branch runs.

    ``pred`` must be a bool scalar. Both branches must return the same pytree of types.
    """
    pt = type_of(pred)
    if pt.shape != () or pt.dtype != dtypes.bool_:
        raise ShapeError(f"cond: the predicate must be a bool scalar, got {pt}; use "
                         f"numpy.where for elementwise selection or compare to get a bool")
    index = _index(pred, dtypes.int32) if isinstance(pred, Tracer) else np.int32(bool(pred))
    return switch(index, [false_fun, true_fun], *operands)


def switch(index, branches, *operands):
    """``branches[index](*operands)``, index clamped to [0, len(branches) - 1]."""
    leaves, in_tree = _carry_leaves(operands)
    types = _leaf_types(leaves)
    graphs, consts, out_trees = [], [], []
    for fn in branches:
        g, c, ot = _trace_sub(fn, in_tree, types, star=True)
        graphs.append(g)
        consts.append(c)
        out_trees.append(ot)
    if any(ot != out_trees[0] for ot in out_trees):
        raise ShapeError(f"switch/cond: branches return different structures "
                         f"{' vs '.join(map(str, out_trees))}")
    # every branch takes all branches' consts, then the operands
    all_consts = [c for cs in consts for c in cs]
    closed = []
    offset = 0
    for g, cs in zip(graphs, consts):
        from .ir import Var
        pre = [Var(type_of(c)) for c in all_consts[:offset]]
        post = [Var(type_of(c)) for c in all_consts[offset + len(cs):]]
        ncs = len(cs)
        closed.append(g.replace(invars=tuple(pre) + g.invars[:ncs] + tuple(post) +
                                g.invars[ncs:]))
        offset += ncs
    idx = _index(index, dtypes.int32) if isinstance(index, Tracer) else \
        np.int32(np.clip(int(index), 0, len(branches) - 1))
    outs = cf.cond_p.bind(idx, *all_consts, *leaves, branches=tuple(closed))
    return tree.unflatten(out_trees[0], outs)


def while_loop(cond_fun, body_fun, init_val, *, weak_leaves=()):
    """``while cond_fun(val): val = body_fun(val)``; returns the final ``val`` (a pytree).

    ``tracejit.config.max_while_iterations`` (when set) makes a runaway loop raise.
    ``weak_leaves``: positions of flat carry leaves that ``cond_fun``/``body_fun`` see weakly
    typed, as Python scalars (NumPy's promotion then leaves the other operand's dtype alone:
    autograph passes a converted ``for`` loop's integer this way); the results are strong.
    """
    leaves, treedef = _carry_leaves(init_val)
    types = [Type(t.dtype, t.shape, True) if i in weak_leaves else t
             for i, t in enumerate(_leaf_types(leaves))]
    cg, cc, cot = _trace_sub(cond_fun, treedef, types)
    if cot != tree.LEAF or cg.out_types[0].shape != () or cg.out_types[0].dtype != dtypes.bool_:
        raise ShapeError(f"while_loop: cond_fun must return a bool scalar, got "
                         f"{[str(t) for t in cg.out_types]}")
    bg, bc, bot = _trace_sub(body_fun, treedef, types)
    if bot != treedef:
        raise ShapeError(f"while_loop: body_fun returns structure {bot} but the carry is "
                         f"{treedef}")
    outs = cf.while_p.bind(*cc, *bc, *leaves, cond=cg, body=bg, n_cond_consts=len(cc),
                           n_body_consts=len(bc))
    return tree.unflatten(treedef, outs)


def scan(f, init, xs=None, length=None, reverse=False, checkpoint_every=None):
    """``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns (carry, stacked ys).

    ``xs`` may be None with ``length`` given. ``reverse=True`` runs from the end.
    ``checkpoint_every=k``: reverse mode stores the carry every k steps only and recomputes the
    steps in between (``"sqrt"``: k = ceil(sqrt(length))), trading time for O(length/k + k)
    residual memory instead of O(length).
    """
    if checkpoint_every is not None:
        return _scan_checkpointed(f, init, xs, length, reverse, checkpoint_every)
    x_leaves, x_tree = tree.flatten(xs)
    x_leaves = [x if isinstance(x, Tracer) else _strong_array(x) for x in x_leaves]
    lengths = {type_of(x).shape[0] if type_of(x).shape else None for x in x_leaves}
    if None in lengths:
        raise ShapeError("scan: every xs leaf needs a leading axis to scan over")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) != 1:
        raise ShapeError(f"scan: xs leaves (and length=) disagree on the leading dimension: "
                         f"{sorted(lengths)}")
    n = lengths.pop()
    c_leaves, c_tree = _carry_leaves(init)
    c_types = _leaf_types(c_leaves)
    x_types = [Type(type_of(x).dtype, type_of(x).shape[1:]) for x in x_leaves]
    box = []

    def body(*tracers):
        carry = tree.unflatten(c_tree, list(tracers[:len(c_types)]))
        x = tree.unflatten(x_tree, list(tracers[len(c_types):]))
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise ShapeError("scan: f must return a pair (carry, y)")
        new_c, y = out
        c_l, ct = tree.flatten(new_c)
        if ct != c_tree:
            raise ShapeError(f"scan: f returns carry structure {ct} but init is {c_tree}")
        y_l, yt = tree.flatten(y)
        box.append(yt)
        return c_l + y_l

    graph, captured = make_graph(body, c_types + x_types)
    k = len(c_types) + len(x_types)
    graph = graph.replace(invars=graph.invars[k:] + graph.invars[:k])
    outs = cf.scan_p.bind(*captured, *c_leaves, *x_leaves, body=graph, length=n,
                          reverse=bool(reverse), n_consts=len(captured), n_carry=len(c_types))
    carry = tree.unflatten(c_tree, outs[:len(c_types)])
    ys = tree.unflatten(box[0], outs[len(c_types):])
    return carry, ys


def fori_loop(lower, upper, body_fun, init_val):
    """``for i in range(lower, upper): val = body_fun(i, val)``.

    Concrete bounds give a ``scan`` (reverse-mode differentiable with stacked residuals);
    traced bounds give a ``while_loop``.
    """
    if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
        lo, hi = int(lower), int(upper)

        def step(carry, _):
            i, val = carry
            return (i + 1, body_fun(i, val)), None

        (_, val), _ = scan(step, (np.int64(lo), init_val), None, length=max(0, hi - lo))
        return val

    def cond_fun(c):
        return c[0] < upper

    def body(c):
        i, val = c
        return i + 1, body_fun(i, val)

    lo = _index(lower, dtypes.int64) if isinstance(lower, Tracer) else np.int64(lower)
    return while_loop(cond_fun, body, (lo, init_val))[1]


def _scan_checkpointed(f, init, xs, length, reverse, every):
    """A scan of segments of ``every`` steps, each segment a checkpointed inner scan."""
    x_leaves, x_tree = tree.flatten(xs)
    n = length if length is not None else type_of(x_leaves[0]).shape[0]
    k = int(np.ceil(np.sqrt(n))) if every == "sqrt" else int(every)
    if k <= 0:
        raise ValueError(f"scan: checkpoint_every must be positive, got {every!r}")
    n_seg, rem = divmod(n, k)
    if n_seg <= 1:
        return scan(f, init, xs, length=length, reverse=reverse)

    def part(lo, hi):
        return tree.unflatten(x_tree, [x[lo:hi] for x in x_leaves]) if x_leaves else None

    def segmented(lo, count):
        def seg_xs(x):
            return reshape_p.bind(x, shape=(count, k) + type_of(x).shape[1:])
        seg = tree.unflatten(x_tree, [seg_xs(x[lo:lo + count * k]) for x in x_leaves]) \
            if x_leaves else None

        @checkpoint
        def segment(c, sx):
            return scan(f, c, sx, length=k, reverse=reverse)

        return seg, segment

    seg_xs, segment = segmented(rem if reverse else 0, n_seg)
    rest_lo, rest_hi = (0, rem) if reverse else (n_seg * k, n)

    def run_segments(c):
        c, ys = scan(lambda c, sx: segment(c, sx), c, seg_xs, length=n_seg, reverse=reverse)
        return c, tree.tree_map(
            lambda y: reshape_p.bind(y, shape=(n_seg * k,) + type_of(y).shape[2:]), ys)

    def run_rest(c):
        return scan(f, c, part(rest_lo, rest_hi), length=rem, reverse=reverse)

    if reverse:          # the segments hold the end of xs, which a reverse scan visits first
        carry, ys_seg = run_segments(init)
        if rem:
            carry, ys_rest = run_rest(carry)
            ys = tree.tree_map(lambda a, b: concatenate_p.bind(a, b, axis=0), ys_rest, ys_seg)
        else:
            ys = ys_seg
    else:
        carry, ys_seg = run_segments(init)
        if rem:
            carry, ys_rest = run_rest(carry)
            ys = tree.tree_map(lambda a, b: concatenate_p.bind(a, b, axis=0), ys_seg, ys_rest)
        else:
            ys = ys_seg
    return carry, ys
