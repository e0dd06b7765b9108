"""Samplers built on the random bits of ``_threefry``: uniform, normal, randint, and the
distributions that are functions of them.

Invariants:
- Each sampler is the construction of ``jax/_src/random.py`` (same bits, same bit-to-float map,
  same transforms), written with tracejit.numpy composites, so a fixed key gives the same
  values eagerly (NumPy), in the interpreter and compiled (bits and uniforms bit for bit;
  transcendentals to within their last-place differences).
- Outside a trace every function runs eagerly in NumPy on a concrete key; inside one it records
  elementwise integer and float equations that the llvm backend fuses into one loop.
- Samples are differentiable in their float parameters where the sampler is a reparameterised
  transform (``uniform``'s bounds; ``mu + sigma * normal(...)`` by construction); integer
  outputs have no derivative.
- Defaults follow NumPy: ``float64`` and ``int64`` (JAX with ``jax_enable_x64``); pass
  ``dtype=np.float32`` / ``np.int32`` for JAX's default (32-bit) results.
"""
from __future__ import annotations

import numpy as np

from .. import numpy as tnp
from ..core import Tracer
from ..errors import InputError
from ._threefry import _as_key, assemble, bit_parts, canonical_shape, split

__all__ = ["bits", "uniform", "normal", "randint", "bernoulli", "gumbel", "categorical",
           "exponential", "laplace", "logistic", "permutation", "choice",
           "multivariate_normal"]

# Giles, "Approximating the erfinv function" (GPU Gems / 2010), coefficients as XLA's ErfInv
# uses them (highest degree first), so that normal() maps the same uniforms to the same values
_ERFINV32 = ((2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
             (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682))
_ERFINV64 = ((-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
              1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
              6.6376381343583238325e-15, -4.0545662729752068639e-14,
              -8.1519341976054721522e-14, 2.6335093153082322977e-12,
              -1.2975133253453532498e-11, -5.4154120542946279317e-11,
              1.051212273321532285e-09, -4.1126339803469836976e-09,
              -2.9070369957882005086e-08, 4.2347877827932403518e-07,
              -1.3654692000834678645e-06, -1.3882523362786468719e-05,
              0.0001867342080340571352, -0.00074070253416626697512,
              -0.0060336708714301490533, 0.24015818242558961693, 1.6536545626831027356),
             (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
              1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
              2.9234449089955446044e-06, 1.2475304481671778723e-05,
              -4.7318229009055733981e-05, 6.8284851459573175448e-05,
              2.4031110387097893999e-05, -0.0003550375203628474796,
              0.00095328937973738049703, -0.0016882755560235047313,
              0.0024914420961078508066, -0.0037512085075692412107, 0.005370914553590063617,
              1.0052589676941592334, 3.0838856104922207635),
             (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
              -3.7894654401267369937e-09, 7.6157012080783393804e-09,
              -1.4960026627149240478e-08, 2.9147953450901080826e-08,
              -6.7711997758452339498e-08, 2.2900482228026654717e-07,
              -9.9298272942317002539e-07, 4.5260625972231537039e-06,
              -1.9681778105531670567e-05, 7.5995277030017761139e-05,
              -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
              4.8499064014085844221))


def _horner(coeffs, w):
    p = coeffs[0] * w + coeffs[1]
    for c in coeffs[2:]:
        p = p * w + c
    return p


def _erfinv(x):
    """erfinv on the open interval (-1, 1), float32 or float64 (Giles' approximations)."""
    w = -tnp.log1p(-x * x)
    if x.dtype == np.float32:
        small, large = _ERFINV32
        p = tnp.where(w < 5.0, _horner(small, w - 2.5), _horner(large, tnp.sqrt(w) - 3.0))
    else:
        small, mid, large = _ERFINV64
        s = tnp.sqrt(w)
        p = tnp.where(w < 6.25, _horner(small, w - 3.125),
                      tnp.where(w < 16.0, _horner(mid, s - 3.25), _horner(large, s - 5.0)))
    return p * x


def _float_dtype(dtype, fn: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise InputError(f"tracejit.random.{fn}: dtype must be float32 or float64, got {dt}")
    return dt


def _unit_parts(key, dt, size: int):
    """Uniform [0, 1) floats as ``bit_parts`` pieces: the top mantissa bits of each word, times
    2**-mantissa (exactly JAX's ``bitcast(bits >> k | bits(1.0)) - 1.0``)."""
    if dt == np.float32:
        parts, size = bit_parts(key, 32, size)
        return [(p >> np.uint32(9)).astype(np.float32) * np.float32(2.0 ** -23)
                for p in parts], size
    parts, size = bit_parts(key, 64, size)
    return [(p >> np.uint64(12)).astype(np.float64) * 2.0 ** -52 for p in parts], size


def _scaled(f, lo, hi):
    """JAX's ``max(lo, f * (hi - lo) + lo)`` in the dtype of ``f``."""
    return tnp.maximum(lo, f * (hi - lo) + lo)


def _uniform_scalar_bounds(key, shape, dt, lo, hi, fn, transform=None):
    """Uniforms in [lo, hi) with Python-number bounds, an elementwise ``transform`` applied to
    each piece before the pieces are joined (one fused loop computes finished values)."""
    key = _as_key(key, fn)
    shape = canonical_shape(shape, fn)
    lo, hi = dt.type(lo), dt.type(hi)
    parts, size = _unit_parts(key, dt, int(np.prod(shape, dtype=np.int64)))
    out = [_scaled(p, lo, hi) for p in parts]
    if transform is not None:
        out = [transform(p) for p in out]
    return assemble(out, size, shape)


def bits(key, shape=(), dtype=np.uint32):
    """Uniform random unsigned integers (``dtype`` uint8, uint16, uint32 or uint64)."""
    from ._threefry import random_bits
    dt = np.dtype(dtype)
    if dt.kind != "u":
        raise InputError(f"tracejit.random.bits: dtype must be an unsigned integer dtype, "
                         f"got {dt}")
    return random_bits(key, dt.itemsize * 8, shape)


def uniform(key, shape=(), dtype=np.float64, minval=0.0, maxval=1.0):
    """Uniform floats in ``[minval, maxval)`` of ``shape`` and ``dtype``.

    ``minval``/``maxval`` may be arrays broadcasting to ``shape`` (or tracers: the sample is
    differentiable in them).
    """
    dt = _float_dtype(dtype, "uniform")
    if np.ndim(minval) == 0 and np.ndim(maxval) == 0 and \
            not isinstance(minval, Tracer) and not isinstance(maxval, Tracer):
        return _uniform_scalar_bounds(key, shape, dt, minval, maxval, "uniform")
    f = _uniform_scalar_bounds(key, shape, dt, 0.0, 1.0, "uniform")
    lo = tnp.asarray(minval).astype(dt)
    hi = tnp.asarray(maxval).astype(dt)
    out = _scaled(f, lo, hi)
    if out.shape != f.shape:
        raise InputError(f"tracejit.random.uniform: minval/maxval of shapes {lo.shape} and "
                         f"{hi.shape} do not broadcast to shape {f.shape}")
    return out


def normal(key, shape=(), dtype=np.float64):
    """Standard normal floats: ``sqrt(2) * erfinv(u)`` for ``u`` uniform in (-1, 1)."""
    dt = _float_dtype(dtype, "normal")
    lo = np.nextafter(dt.type(-1.0), dt.type(0.0))
    sqrt2 = dt.type(np.sqrt(2.0))
    return _uniform_scalar_bounds(key, shape, dt, lo, 1.0, "normal",
                                  lambda u: sqrt2 * _erfinv(u))
