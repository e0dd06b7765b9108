"""The implicit reparameterisation gradient of Gamma(a) samples: d sample / d a.

A Gamma(a) sample z is F^-1(u; a) for the CDF F = P(a, z) (the regularised lower incomplete
gamma function) and a uniform u that does not depend on a, so

    dz/da = -(dP/da)(a, z) / (dP/dz)(a, z),     dP/dz = z**(a - 1) exp(-z) / Gamma(a).

This is XLA's ``RandomGammaGrad`` (JAX's ``random_gamma_grad``): dP/da from the power series
of P when z <= max(1, a) and from the continued fraction of Q = 1 - P otherwise, each carried
with its derivative in a and iterated until the derivative converges; the density cancels
against the series' prefactor, so neither Gamma(a) nor the prefactor is evaluated.

Invariants: elementwise in (a, z) of one shape; both loops are ``while_loop``s over the whole
array with an ``enabled`` mask (a lane stops changing once it converged), so they compile to
native loops and batch. z == 0 gives 0; a <= 0, z < 0 or NaN give NaN.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as tnp
from ..control import while_loop
from ..numpy.special_gamma import digamma

def _select(enabled, new, old):
    return [tnp.where(enabled, n, o) for n, o in zip(new, old)]


def _series(a, x, enabled, eps):
    """-(dP/da) / (dP/dx) from P's power series (XLA's IgammaSeries, SAMPLE_DERIVATIVE)."""
    def cond(s):
        return tnp.any(s[0])

    def body(s):
        en, r, c, ans, dc_da, dans_da = s
        r2 = r + 1.0
        dc_da2 = dc_da * (x / r2) - c * x / (r2 * r2)
        dans_da2 = dans_da + dc_da2
        c2 = c * (x / r2)
        ans2 = ans + c2
        more = en & (tnp.abs(dc_da2 / dans_da2) > eps)
        return [more] + _select(en, [r2, c2, ans2, dc_da2, dans_da2], [r, c, ans, dc_da, dans_da])

    one, zero = tnp.ones_like(a), tnp.zeros_like(a)
    _, _, _, ans, _, dans_da = while_loop(cond, body, [enabled, a, one, one, zero, zero])
    return -(dans_da + ans * (tnp.log(x) - digamma(a + 1.0))) * x / a


def _continued_fraction(a, x, enabled, eps):
    """(dP/da) / (dP/dx) from Q's continued fraction (XLA's IgammacContinuedFraction, negated
    SAMPLE_DERIVATIVE: Q = 1 - P), at most 2000 steps."""
    def cond(s):
        return (s[1] < 2000.0) & tnp.any(s[0])

    def body(s):
        en, c, ans, y, z, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = s
        c = c + 1.0
        y2, z2 = y + 1.0, z + 2.0
        yc = y2 * c
        pk = pkm1 * z2 - pkm2 * yc
        qk = qkm1 * z2 - qkm2 * yc
        nonzero = qk != 0.0
        safe_qk = tnp.where(nonzero, qk, 1.0)
        ans2 = tnp.where(nonzero, pk / safe_qk, ans)
        dpk = dpkm1 * z2 - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z2 - qkm1 - dqkm2 * yc + qkm2 * c
        dans2 = tnp.where(nonzero, (dpk - ans2 * dqk) / safe_qk, dans)
        change = tnp.where(nonzero, tnp.abs(dans2 - dans), 1.0)
        # rescale the recurrences when they grow large (their ratio is all that matters)
        big = tnp.abs(pk) > 1.0 / eps
        scale = tnp.where(big, eps, 1.0)
        new = [ans2, y2, z2, pk * scale, qk * scale, pkm1 * scale, qkm1 * scale,
               dpkm1 * scale, dqkm1 * scale, dpk * scale, dqk * scale, dans2]
        old = [ans, y, z, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans]
        return [en & (change > eps), c] + _select(en, new, old)

    y = 1.0 - a
    z = x + y + 1.0
    pkm1, qkm1 = x + 1.0, z * x
    ans = pkm1 / qkm1
    zero = tnp.zeros_like(x)
    dqkm1 = -x
    dans = (zero - ans * dqkm1) / qkm1
    out = while_loop(cond, body, [enabled, tnp.zeros((), x.dtype), ans, y, z, pkm1, qkm1,
                                  tnp.ones_like(x), x, zero, zero, zero, dqkm1, dans])
    ans, dans = out[2], out[13]
    return (dans + ans * (tnp.log(x) - digamma(a))) * x


def gamma_sample_grad(a, x):
    """d x / d a for Gamma(a) samples x (arrays of one shape and float dtype)."""
    eps = float(np.finfo(x.dtype).eps)
    nan = tnp.isnan(a) | tnp.isnan(x)
    domain = (x < 0.0) | (a <= 0.0)
    ok = ~(nan | domain | (x == 0.0))
    use_cf = (x > 1.0) & (x > a)
    # lanes a branch does not own get harmless inputs (a = x = 1), so no NaN is ever computed
    # where a select discards it (the NaN-gradient trap of where())
    a_ok = tnp.where(ok, a, 1.0)
    x_ok = tnp.where(ok, x, 1.0)
    out = tnp.where(use_cf, _continued_fraction(a_ok, x_ok, ok & use_cf, eps),
                    _series(a_ok, x_ok, ok & ~use_cf, eps))
    out = tnp.where(x == 0.0, 0.0, out)
    return tnp.where(nan | domain, np.nan, out)
