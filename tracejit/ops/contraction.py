"""dot_general: the one contraction primitive (matmul, dot, einsum, tensordot are composites).

params: ``contract=((lhs axes), (rhs axes))`` and ``batch=((lhs axes), (rhs axes))``. The result
dims are: batch dims (in lhs batch order), then lhs free dims, then rhs free dims — as in XLA.
Both operands have one dtype.
"""
from __future__ import annotations

import numpy as np

from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type
from .. import ad_util as ad


def _free(ndim, *groups):
    used = {a for g in groups for a in g}
    return [a for a in range(ndim) if a not in used]


def _dot_shape(lhs, rhs, *, contract, batch):
    (lc, rc), (lb, rb) = contract, batch
    if lhs.dtype != rhs.dtype:
        raise DTypeError(f"dot_general: operand dtypes {lhs.dtype} and {rhs.dtype} differ")
    if lhs.dtype.kind == "b":
        raise DTypeError("dot_general is not defined for bool operands")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise ShapeError(f"dot_general: mismatched axis groups {contract} {batch}")
    for a, b in zip((*lc, *lb), (*rc, *rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ShapeError(f"dot_general: dimension {a} of {lhs.shape} ({lhs.shape[a]}) does not "
                             f"match dimension {b} of {rhs.shape} ({rhs.shape[b]})")
    shape = tuple(lhs.shape[a] for a in lb) + tuple(lhs.shape[a] for a in _free(lhs.ndim, lc, lb)) \
        + tuple(rhs.shape[a] for a in _free(rhs.ndim, rc, rb))
    return Type(lhs.dtype, shape, lhs.weak and rhs.weak)


def _letters(n, start=0):
    return [chr(ord("a") + start + i) for i in range(n)]


def dot_general_einsum_spec(lhs_ndim, rhs_ndim, contract, batch) -> str:
    """The einsum subscripts equivalent to a dot_general (used by the reference implementation)."""
    (lc, rc), (lb, rb) = contract, batch
    ls = _letters(lhs_ndim)
    rs = _letters(rhs_ndim, lhs_ndim)
    for a, b in zip((*lc, *lb), (*rc, *rb)):
        rs[b] = ls[a]
    out = [ls[a] for a in lb] + [ls[a] for a in _free(lhs_ndim, lc, lb)] + \
        [rs[a] for a in _free(rhs_ndim, rc, rb)]
    return f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"


def _dot_impl(lhs, rhs, *, contract, batch):
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    (lc, rc), (lb, rb) = contract, batch
    if not lb and len(lc) == 1 and lhs.ndim <= 2 and rhs.ndim <= 2 and \
            lc[0] == lhs.ndim - 1 and rc[0] == 0:
        return np.asarray(np.dot(lhs, rhs), dtype=lhs.dtype)     # BLAS for the common case
    spec = dot_general_einsum_spec(lhs.ndim, rhs.ndim, contract, batch)
    return np.asarray(np.einsum(spec, lhs, rhs), dtype=lhs.dtype)


dot_general_p = Primitive("dot_general", "contraction", _dot_shape, _dot_impl, bilinear=True)


def _dot_jvp_lhs(g, ans, x, y, *, contract, batch):
    return dot_general_p.bind(g, y, contract=contract, batch=batch)


def _dot_jvp_rhs(g, ans, x, y, *, contract, batch):
    return dot_general_p.bind(x, g, contract=contract, batch=batch)


def _dot_transpose_lhs(ct, x_ty, y, contract, batch, swap_ans=False):
    """The cotangent of the lhs: another dot_general (ct with y) and a transpose (as JAX)."""
    (xc, yc), (xb, yb) = contract, batch
    y_ndim = ad.ty(y).ndim
    x_kept = _free(x_ty.ndim, xc, xb)
    y_kept = _free(y_ndim, yc, yb)
    nb = len(xb)
    if swap_ans:
        ans_batch, ans_y = range(nb), range(nb, nb + len(y_kept))
    else:
        ans_batch, ans_y = range(nb), range(nb + len(x_kept), nb + len(x_kept) + len(y_kept))
    d = dot_general_p.bind(ct, y, contract=(tuple(ans_y), tuple(y_kept)),
                           batch=(tuple(ans_batch), tuple(yb)))
    xc_by_y = [xc[i] for i in np.argsort(yc)]
    out_axes = np.argsort(list(xb) + x_kept + xc_by_y)
    return ad.transpose(d, tuple(int(a) for a in out_axes))


def _dot_transpose(ct, x, y, *, contract, batch):
    if ad.is_undefined(x) and ad.is_undefined(y):
        raise ValueError("dot_general of two tangents is not linear")
    (xc, yc), (xb, yb) = contract, batch
    if ad.is_undefined(x):
        return [_dot_transpose_lhs(ct, x.ty, y, contract, batch), None]
    return [None, _dot_transpose_lhs(ct, y.ty, x, ((yc, xc)), ((yb, xb)), swap_ans=True)]


ad.defjvp(dot_general_p, _dot_jvp_lhs, _dot_jvp_rhs)
dot_general_p.transpose = _dot_transpose
