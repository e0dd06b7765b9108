"""The elementwise rule of an equation: real (``ops.EMIT``) or complex (``complex.CEMIT``).

Every emitter of elementwise code (loops, epilogues, row fusion, scans, scatters) asks here, so
an equation gets the same rule, hence the same bits, whichever step runs it. Invariant: an
equation with any complex operand or result takes the complex rule (values are (re, im) pairs).
"""
from __future__ import annotations

import numpy as np

from .complex import CEMIT
from .ops import EMIT


def rule(eqn):
    """The emitter ``(cx, eqn, *args) -> value`` of ``eqn`` (complex operands are (re, im)
    pairs)."""
    if any(np.dtype(a.ty.dtype).kind == "c" for a in (*eqn.invars, *eqn.outvars)):
        return CEMIT[eqn.prim.name]
    return EMIT[eqn.prim.name]


def emit(cx, eqn, args):
    """Emit ``eqn`` on register values (complex operands are (re, im) pairs)."""
    return rule(eqn)(cx, eqn, *args)
