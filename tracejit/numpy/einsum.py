"""numpy.einsum on tracers: every subscript form NumPy takes, contracted with dot_general.

Subscripts are normalised first (``_parse``): the sublist form ``einsum(a, [0, 1], b, [1, 2])``
becomes letters, ``...`` becomes letters of its own (right-aligned across operands, as NumPy
broadcasts them), an implicit output is the ellipsis then the letters seen once, sorted. Then
the operands are contracted pairwise left to right; a letter of size 1 in one operand and larger
in another is squeezed out of the first (NumPy broadcasts it; its only value multiplies every
term), indices seen only in one operand and not in the output are summed first, and repeated
indices in one operand take the diagonal.
"""
from __future__ import annotations

import string

import numpy as np

from ..core import type_of
from ..errors import ShapeError
from ._base import as_traceable, implements
from .products import _dot_general, diagonal

__all__ = ["einsum"]

_LETTERS = string.ascii_letters


def _sublist_letters(sub):
    out = ""
    for s in sub:
        if s is Ellipsis:
            out += "..."
        elif isinstance(s, (int, np.integer)) and 0 <= int(s) < len(_LETTERS):
            out += _LETTERS[int(s)]
        else:
            raise ValueError(f"einsum: a sublist holds ints in [0, 52) or Ellipsis, got {s!r}")
    return out


def _from_sublists(args):
    """(subscripts, operands) of ``einsum(op0, sub0, op1, sub1, ..., [sub_out])``."""
    ops, terms = list(args[0::2]), [_sublist_letters(s) for s in args[1::2]]
    out = None
    if len(terms) < len(ops):            # an odd count: the last item is the output sublist
        out = _sublist_letters(ops.pop())
    spec = ",".join(terms) + ("" if out is None else "->" + out)
    return spec, ops


def _parse(subscripts, shapes):
    """(input terms, output term) with ellipses spelled out in letters of their own."""
    subscripts = subscripts.replace(" ", "")
    ins, arrow, out = subscripts.partition("->")
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} subscripts but {len(shapes)} operands")
    used = set(subscripts) - set(".,->")
    spare = [c for c in _LETTERS if c not in used]
    n_ell = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
    if n_ell > len(spare):
        raise ValueError("einsum: too many dimensions for the letters left")
    ell = "".join(spare[:n_ell])
    for k, (t, s) in enumerate(zip(terms, shapes)):
        if "..." in t:
            n = len(s) - (len(t) - 3)
            if n < 0:
                raise ShapeError(f"einsum: subscript {t!r} has more letters than the operand "
                                 f"has dimensions {s}")
            terms[k] = t.replace("...", ell[n_ell - n:])
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(terms)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return terms, out


def _squeeze_broadcast(ops):
    """Drop the axes of size 1 whose letter is larger in another operand (NumPy broadcasts)."""
    from .shape import squeeze
    sizes = {}
    for op, term in ops:
        for c, n in zip(term, type_of(op).shape):
            sizes.setdefault(c, set()).add(n)
    size = {}
    for c, ns in sizes.items():
        if len(ns - {1}) > 1:
            raise ShapeError(f"einsum: operands could not be broadcast together: letter {c!r} "
                             f"has sizes {sorted(ns)} in different operands")
        size[c] = min(ns - {1}, default=1)
    for k, (op, term) in enumerate(ops):
        shape = type_of(op).shape
        drop = tuple(i for i, (c, n) in enumerate(zip(term, shape)) if n == 1 and size[c] != 1)
        if drop:
            ops[k] = (squeeze(op, axis=drop),
                      "".join(c for i, c in enumerate(term) if i not in drop))
    return ops


@implements(np.einsum)
def einsum(subscripts, *operands, optimize=False, **kwargs):
    """Einstein summation (explicit, implicit, ``...`` and sublist forms)."""
    from .reductions import sum as sum_
    from .shape import transpose
    if not isinstance(subscripts, str):
        subscripts, operands = _from_sublists((subscripts,) + operands)
    operands = [as_traceable(op) for op in operands]
    terms, out = _parse(subscripts, [type_of(op).shape for op in operands])
    ops = []
    for term, op in zip(terms, operands):
        if len(term) != type_of(op).ndim:
            raise ShapeError(f"einsum: subscript {term!r} has {len(term)} letters but the operand "
                             f"has shape {type_of(op).shape}")
        ops.append(_einsum_diagonal(op, term))
    ops = _squeeze_broadcast(ops)
    # sum out letters that appear in one operand only and nowhere else
    for k, (op, term) in enumerate(ops):
        others = out + "".join(t for j, (_, t) in enumerate(ops) if j != k)
        drop = tuple(i for i, c in enumerate(term) if c not in others)
        if drop:
            op = sum_(op, axis=drop, dtype=type_of(op).dtype)     # einsum keeps the dtype
            term = "".join(c for i, c in enumerate(term) if i not in drop)
        ops[k] = (op, term)
    acc, acc_t = ops[0]
    for k in range(1, len(ops)):
        op, term = ops[k]
        later = out + "".join(t for _, t in ops[k + 1:])
        shared = [c for c in acc_t if c in term]
        batch = [c for c in shared if c in later]
        contract = [c for c in shared if c not in later]
        acc = _dot_general(acc, op, (tuple(acc_t.index(c) for c in contract),
                                     tuple(term.index(c) for c in contract)),
                           (tuple(acc_t.index(c) for c in batch),
                            tuple(term.index(c) for c in batch)))
        acc_t = "".join(batch) + "".join(c for c in acc_t if c not in shared) + \
            "".join(c for c in term if c not in shared)
    drop = tuple(i for i, c in enumerate(acc_t) if c not in out)
    if drop:
        acc = sum_(acc, axis=drop, dtype=type_of(acc).dtype)
        acc_t = "".join(c for i, c in enumerate(acc_t) if i not in drop)
    if len(out) != len(acc_t) or set(out) != set(acc_t):
        raise ValueError(f"einsum: output subscript {out!r} does not match inputs")
    acc = transpose(acc, tuple(acc_t.index(c) for c in out))
    if all(type_of(op).dtype.kind == "b" for op, _ in ops) and type_of(acc).dtype.kind != "b":
        from .math import not_equal
        acc = not_equal(acc, 0)              # NumPy: an einsum of bools is bool (any of ands)
    return acc


def _einsum_diagonal(op, term):
    while len(set(term)) < len(term):
        c = next(ch for ch in term if term.count(ch) > 1)
        i = term.index(c)
        j = term.index(c, i + 1)
        op = diagonal(op, 0, i, j)
        term = "".join(ch for k, ch in enumerate(term) if k not in (i, j)) + c
    return op, term
