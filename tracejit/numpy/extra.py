"""Composites beyond NumPy's core that users of tracejit reach for (softmax, logsumexp)."""
from __future__ import annotations

from ..core import type_of
from ._base import normalize_axes

__all__ = ["logsumexp", "softmax", "log_softmax"]


def logsumexp(a, axis=None, keepdims=False):
    """log(sum(exp(a))) computed stably: max + log(sum(exp(a - max))); all -inf gives -inf."""
    from .logic import where
    from .math import add, exp, isfinite, log, subtract
    from .reductions import max as max_, sum as sum_
    axes = normalize_axes(axis, type_of(a).ndim)
    m = max_(a, axis=axes, keepdims=True)
    m = where(isfinite(m), m, 0.0)
    s = sum_(exp(subtract(a, m)), axis=axes, keepdims=True)
    out = add(log(s), m)
    if not keepdims:
        from .shape import squeeze
        out = squeeze(out, axis=axes)
    return out


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    from .math import exp, subtract, true_divide
    from .reductions import max as max_, sum as sum_
    e = exp(subtract(x, max_(x, axis=axis, keepdims=True)))
    return true_divide(e, sum_(e, axis=axis, keepdims=True))


def log_softmax(x, axis=-1):
    from .math import subtract
    return subtract(x, logsumexp(x, axis=axis, keepdims=True))
