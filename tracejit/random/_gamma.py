"""Gamma, beta and Dirichlet samplers (JAX's construction: Marsaglia-Tsang per element).

Invariants:
- ``gamma`` draws each element from its own key (``split(key, size)``) with the
  Marsaglia-Tsang rejection loop of ``jax/_src/random.py`` (``_gamma_one``: the same splits,
  the same normal and uniform draws), written as a ``while_loop`` and vectorised with
  ``vmap``, so a key gives JAX's samples and the loop stays a loop in native code.
- The derivative in the shape parameter is not the rejection loop's (which would be wrong) but
  the implicit reparameterisation gradient ``dz/da = -(dF/da) / (dF/dz)`` of the Gamma CDF F
  (``_gamma_grad``), a custom JVP as in JAX; beta and Dirichlet inherit it through their
  log-gamma draws. Its rule differentiates again into the second derivative of the same
  implicit function (the series and fraction loops are differentiated as written).
"""
from __future__ import annotations

import numpy as np

from .. import numpy as tnp
from ..api import jit
from ..control import while_loop
from ..custom import custom_jvp
from ..errors import InputError
from ..vmapped import vmap
from ._gamma_grad import gamma_sample_grad
from ._samplers import _float_dtype, _param_float_dtype, exponential, normal, uniform
from ._threefry import _as_key, canonical_shape, split

__all__ = ["gamma", "loggamma", "beta", "dirichlet"]


def _gamma_one(key, alpha, log_space: bool):
    """One Gamma(alpha) draw (scalar ``alpha``), exactly as JAX's ``_gamma_one``."""
    dt = alpha.dtype.type
    one, zero = dt(1.0), dt(0.0)
    boost_mask = alpha >= one
    alpha_orig = alpha
    alpha = tnp.where(boost_mask, alpha, alpha + one)
    d = alpha - dt(1.0 / 3.0)
    c = dt(1.0 / 3.0) / tnp.sqrt(d)

    def accept_not_yet(state):
        _, X, V, U = state
        return tnp.logical_and(U >= one - dt(0.0331) * (X * X),
                               tnp.log(U) >= X * dt(0.5) + d * (one - V + tnp.log(V)))

    def propose(state):
        k = state[0]
        k, x_key, u_key = split(k, 3)

        def next_x(kxv):
            kk, sub = split(kxv[0])
            x = normal(sub, (), alpha.dtype)
            return kk, x, one + x * c

        _, x, v = while_loop(lambda kxv: kxv[2] <= zero, next_x,
                             (x_key, tnp.asarray(zero), tnp.asarray(-one)))
        return k, x * x, v * v * v, uniform(u_key, (), alpha.dtype)

    key, sub = split(key)
    _, _, V, _ = while_loop(accept_not_yet, propose,
                            (key, tnp.asarray(zero), tnp.asarray(one), tnp.asarray(dt(2.0))))
    # the boost for alpha < 1 (Gamma(alpha) = Gamma(alpha + 1) * U**(1 / alpha)) draws from the
    # key split off before the loop; in log space log(U) is -exponential(), as JAX
    if log_space:
        log_u = -exponential(sub, (), alpha.dtype)
        log_boost = tnp.where(boost_mask | (log_u == zero), zero, log_u * (one / alpha_orig))
        return tnp.log(d) + tnp.log(V) + log_boost
    boost = tnp.where(boost_mask, one, (one - uniform(sub, (), alpha.dtype)) ** (one / alpha_orig))
    return d * V * boost


def _sampler(log_space: bool):
    # traced once per shape and dtype: the custom JVP's function and its rule both inline the
    # cached graph (batching the rejection loops is the expensive part of a trace)
    _draws = jit(vmap(lambda k, a: _gamma_one(k, a, log_space)))

    @custom_jvp
    def draw(keys, alphas):
        return _draws(keys, alphas)

    @draw.defjvp
    def draw_jvp(primals, tangents):
        # the implicit reparameterisation gradient (tangent linear in the tangent of alpha);
        # z comes from draw itself, so differentiating this rule again uses the same rule
        # (d2z/da2 = dg/da + dg/dz * g), never the rejection loop's pathwise derivative
        keys, alphas = primals
        z = draw(keys, alphas)
        if not log_space:
            return z, tangents[1] * gamma_sample_grad(alphas, z)
        x = tnp.exp(z)                       # d log x = dx / x; x == 0 by rounding: tiny
        x = tnp.where(x == 0.0, np.finfo(x.dtype).tiny, x)
        return z, tangents[1] * (gamma_sample_grad(alphas, x) / x)
    # jit: a concrete call compiles once per shape and dtype (the while loops are worth it);
    # inside a trace it inlines
    return jit(draw)


_DRAW = {False: _sampler(False), True: _sampler(True)}


def _gamma(key, a, shape, dtype, log_space, name):
    key = _as_key(key, name)
    dt = _float_dtype(dtype, name)
    a = tnp.asarray(a).astype(dt)
    shape = a.shape if shape is None else canonical_shape(shape, name)
    if np.broadcast_shapes(shape, a.shape) != shape:
        raise InputError(f"tracejit.random.{name}: a of shape {a.shape} does not broadcast to "
                         f"shape {shape}")
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return tnp.zeros(shape, dt)
    alphas = tnp.reshape(tnp.broadcast_to(a, shape), (size,))
    keys = tnp.reshape(split(key, size), (size, 2))
    return tnp.reshape(_DRAW[log_space](keys, alphas), shape)


def gamma(key, a, shape=None, dtype=np.float64):
    """Standard Gamma(a) floats (unit scale; divide by a rate or multiply by a scale)."""
    return _gamma(key, a, shape, dtype, False, "gamma")


def loggamma(key, a, shape=None, dtype=np.float64):
    """``log`` of Gamma(a) draws, computed in log space (accurate for small ``a``)."""
    return _gamma(key, a, shape, dtype, True, "loggamma")


def beta(key, a, b, shape=None, dtype=np.float64):
    """Beta(a, b) floats, from two log-gamma draws (``key`` split in two), as JAX."""
    dt = _float_dtype(dtype, "beta")
    a = _param_float_dtype(a, "beta").astype(dt)
    b = _param_float_dtype(b, "beta").astype(dt)
    shape = np.broadcast_shapes(a.shape, b.shape) if shape is None else \
        canonical_shape(shape, "beta")
    key_a, key_b = split(_as_key(key, "beta"))
    log_ga = loggamma(key_a, tnp.broadcast_to(a, shape), shape, dt)
    log_gb = loggamma(key_b, tnp.broadcast_to(b, shape), shape, dt)
    log_max = tnp.maximum(log_ga, log_gb)
    ga, gb = tnp.exp(log_ga - log_max), tnp.exp(log_gb - log_max)
    return ga / (ga + gb)


def dirichlet(key, alpha, shape=None, dtype=np.float64):
    """Dirichlet(alpha) vectors (``alpha`` of shape (..., n)): the softmax of log-gamma
    draws, as JAX."""
    dt = _float_dtype(dtype, "dirichlet")
    alpha = _param_float_dtype(alpha, "dirichlet").astype(dt)
    if alpha.ndim < 1:
        raise InputError("tracejit.random.dirichlet: alpha must have at least one dimension")
    shape = alpha.shape[:-1] if shape is None else canonical_shape(shape, "dirichlet")
    logs = loggamma(key, alpha, shape + alpha.shape[-1:], dt)
    top = tnp.max(logs, axis=-1, keepdims=True)
    e = tnp.exp(logs - top)
    return e / tnp.sum(e, axis=-1, keepdims=True)
