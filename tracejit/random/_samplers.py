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

import math

import numpy as np

from .. import numpy as tnp
from ..core import Tracer
from ..errors import InputError, UnsupportedError
from ..ops import structural as st
from ._threefry import _as_key, assemble, bit_parts, canonical_shape, random_bits, split

__all__ = ["bits", "uniform", "normal", "truncated_normal", "randint", "bernoulli", "gumbel",
           "categorical", "exponential", "laplace", "logistic", "permutation", "choice",
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


def _erfinv(x):
    """erfinv on the open interval (-1, 1), float32 or float64: Giles' piecewise polynomials in
    w = -log1p(-x*x), evaluated as XLA does (per-lane coefficients chosen by the piece, one
    Horner loop; cheaper than evaluating every piece and selecting).

    Not ``tracejit.scipy.special.erfinv`` (Cephes' ndtri in float64, rounded once): normal
    samples must equal JAX's bit for bit, in float32 too, which takes XLA's own polynomials
    in the sample's precision."""
    w = -tnp.log1p(-x * x)
    dt = x.dtype.type                   # coefficients in x's precision (selected ones are not
    if x.dtype == np.float32:           # weak Python floats: where() would make them float64)
        small, large = _ERFINV32
        lt = w < 5.0
        w = tnp.where(lt, w - 2.5, tnp.sqrt(w) - 3.0)
        p = tnp.where(lt, dt(small[0]), dt(large[0]))
        for c_small, c_large in zip(small[1:], large[1:]):
            p = tnp.where(lt, dt(c_small), dt(c_large)) + p * w
        return p * x
    small, mid, large = _ERFINV64
    lt6, lt16 = w < 6.25, w < 16.0
    w = tnp.where(lt6, w - 3.125, tnp.sqrt(w) - tnp.where(lt16, 3.25, 5.0))

    def coefficient(i):
        # the pieces have 23, 19 and 17 coefficients: the shorter ones stop early below
        if i >= 19:
            return small[i]
        c = tnp.where(lt6, dt(small[i]), dt(mid[i]))
        return c if i >= 17 else tnp.where(lt16, c, dt(large[i]))
    p = coefficient(0)
    for i in range(1, 23):
        step = coefficient(i) + p * w
        p = step if i < 17 else tnp.where(lt16 if i < 19 else lt6, step, p)
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


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _concrete_bound(b, dt):
    """A bound's value: a NumPy array, or a tracer whose value the trace knows (an array the
    function made with NumPy); a value known only at run time is refused."""
    if isinstance(b, Tracer):
        value = b.known()
        if value is None:
            raise UnsupportedError("tracejit.random.truncated_normal: the bounds must be "
                                   "concrete numbers or arrays (erf of traced values is not "
                                   "available here); pass them as constants or static "
                                   "arguments")
        b = value
    return np.asarray(b, dt)


def truncated_normal(key, lower, upper, shape=None, dtype=np.float64):
    """Standard normal floats conditioned on ``lower < x < upper``: ``sqrt(2) * erfinv(u)`` for
    ``u`` uniform between ``erf(lower / sqrt(2))`` and ``erf(upper / sqrt(2))``, clipped into
    the open interval, as JAX. The bounds must be concrete (``erf`` of traced values is not
    available to this module), so the samples are not differentiable in them."""
    dt = _float_dtype(dtype, "truncated_normal")
    lo, hi = (_concrete_bound(b, dt) for b in (lower, upper))
    shape = np.broadcast_shapes(lo.shape, hi.shape) if shape is None else \
        canonical_shape(shape, "truncated_normal")
    sqrt2 = dt.type(np.sqrt(2.0))
    a = _erf(lo / sqrt2).astype(dt)
    b = _erf(hi / sqrt2).astype(dt)
    out = sqrt2 * _erfinv(uniform(key, shape, dt, a, b))
    return tnp.clip(out, np.nextafter(lo, dt.type(np.inf)), np.nextafter(hi, dt.type(-np.inf)))


def _urem(a, span):
    """``a % span`` for unsigned ints with XLA's ``a % 0 == a`` (NumPy gives 0), which
    randint's full-range case relies on."""
    zero = span == 0
    return tnp.where(zero, a, a % tnp.where(zero, span.dtype.type(1), span))


def _clip_convert(x, dt):
    """JAX's ``_convert_and_clip_integer``: clip an integer array into ``dt``'s range, then cast."""
    info = np.iinfo(dt)
    src = np.iinfo(x.dtype)
    lo = info.min if info.min > src.min else None
    hi = info.max if info.max < src.max else None
    if lo is not None or hi is not None:
        x = tnp.clip(x, lo, hi)
    return x.astype(dt)


def randint(key, shape, minval, maxval, dtype=np.int64):
    """Uniform integers in ``[minval, maxval)`` (JAX's construction from two draws of bits, so
    the bias for spans that are not powers of two is ~2**-bits)."""
    key = _as_key(key, "randint")
    shape = canonical_shape(shape, "randint")
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise InputError(f"tracejit.random.randint: dtype must be an integer dtype, got {dt}")
    nbits = dt.itemsize * 8
    udt = np.dtype(f"uint{nbits}")
    minval, maxval = tnp.asarray(minval), tnp.asarray(maxval)
    minval = minval if minval.dtype.kind in "iu" else minval.astype(np.int64)
    maxval = maxval if maxval.dtype.kind in "iu" else maxval.astype(np.int64)
    top = np.iinfo(dt).max
    out_of_range = maxval > (min(top, np.iinfo(maxval.dtype).max))
    minval, maxval = _clip_convert(minval, dt), _clip_convert(maxval, dt)
    k1, k2 = split(key)
    higher, lower = bits(k1, shape, udt), bits(k2, shape, udt)
    with np.errstate(over="ignore"):
        span = (maxval - minval).astype(udt)
        one = udt.type(1)
        span = tnp.where(maxval <= minval, one, span)
        span = tnp.where(out_of_range & (maxval > minval), span + one, span)
        half = udt.type(2 ** (nbits // 2) % 2 ** nbits)
        multiplier = _urem(tnp.broadcast_to(half, span.shape), span)
        multiplier = _urem(multiplier * multiplier, span)
        offset = _urem(_urem(higher, span) * multiplier + _urem(lower, span), span)
        out = minval + offset.astype(dt)
    if out.shape != shape:
        raise InputError(f"tracejit.random.randint: minval/maxval of shapes {minval.shape} and "
                         f"{maxval.shape} do not broadcast to shape {shape}")
    return out


def _param_float_dtype(p, fn):
    p = tnp.asarray(p)
    if p.dtype.kind != "f":
        p = p.astype(np.float64)
    _float_dtype(p.dtype, fn)
    return p


def bernoulli(key, p=0.5, shape=None):
    """Booleans that are True with probability ``p`` (``uniform(key, shape, p.dtype) < p``;
    a Python float ``p`` is float64)."""
    p = _param_float_dtype(p, "bernoulli")
    shape = p.shape if shape is None else canonical_shape(shape, "bernoulli")
    return uniform(key, shape, p.dtype) < p


def gumbel(key, shape=(), dtype=np.float64):
    """Standard Gumbel floats ``-log(-log(u))``, ``u`` uniform in [tiny, 1)."""
    dt = _float_dtype(dtype, "gumbel")
    return _uniform_scalar_bounds(key, shape, dt, np.finfo(dt).tiny, 1.0, "gumbel",
                                  lambda u: -tnp.log(-tnp.log(u)))


def exponential(key, shape=(), dtype=np.float64):
    """Standard exponential floats ``-log1p(-u)``."""
    dt = _float_dtype(dtype, "exponential")
    return _uniform_scalar_bounds(key, shape, dt, 0.0, 1.0, "exponential",
                                  lambda u: -tnp.log1p(-u))


def laplace(key, shape=(), dtype=np.float64):
    """Standard Laplace floats ``sign(u) * log1p(-|u|)``, ``u`` uniform in (-1, 1)."""
    dt = _float_dtype(dtype, "laplace")
    return _uniform_scalar_bounds(key, shape, dt, -1.0 + np.finfo(dt).epsneg, 1.0, "laplace",
                                  lambda u: tnp.sign(u) * tnp.log1p(-tnp.abs(u)))


def logistic(key, shape=(), dtype=np.float64):
    """Standard logistic floats ``log(u / (1 - u))``, ``u`` uniform in [eps, 1)."""
    dt = _float_dtype(dtype, "logistic")
    return _uniform_scalar_bounds(key, shape, dt, np.finfo(dt).eps, 1.0, "logistic",
                                  lambda u: tnp.log(u / (1.0 - u)))


def categorical(key, logits, axis=-1, shape=None):
    """Indices drawn with probabilities ``softmax(logits, axis)`` (the Gumbel-max trick, as
    JAX: ``argmax(gumbel + logits, axis)``); differentiable nowhere (an integer result)."""
    logits = _param_float_dtype(logits, "categorical")
    nd = logits.ndim
    if not -nd <= axis < nd:
        raise InputError(f"tracejit.random.categorical: axis {axis} out of range for logits "
                         f"of shape {logits.shape}")
    axis = axis - nd if axis >= 0 else axis
    batch = tuple(np.delete(logits.shape, axis))
    shape = batch if shape is None else canonical_shape(shape, "categorical")
    if np.broadcast_shapes(shape, batch) != shape:
        raise InputError(f"tracejit.random.categorical: shape {shape} does not broadcast with "
                         f"the logits' batch shape {batch}")
    prefix = shape[:len(shape) - len(batch)]
    gshape = list(shape[len(shape) - len(batch):])
    gshape.insert(axis % nd, logits.shape[axis])
    g = gumbel(key, (*prefix, *gshape), logits.dtype)
    return tnp.argmax(g + tnp.reshape(logits, (1,) * len(prefix) + logits.shape), axis=axis)


def _stable_order(sort_keys):
    """The stable ascending order of a 1-d array (``argsort(kind="stable")``)."""
    return tnp.argsort(sort_keys, kind="stable")


def _index(n: int):
    """int64 0..n-1 as an ``iota`` equation inside a trace (the n x n comparisons built from it
    then stay symbolic and fuse, instead of becoming an n x n constant)."""
    return st.iota_p.bind(dtype=np.int64, shape=(n,), axis=0)


def _shuffled_order(key, n: int):
    """JAX's ``_shuffle`` of ``arange(n)``: sort by fresh random 32-bit keys, repeated
    ``ceil(3 ln n / ln(2**32 - 1))`` times (once for n < 1626) so that ties are negligible."""
    rounds = int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))
    order = _index(n)
    for _ in range(rounds):
        key, sub = split(key)
        order = tnp.take(order, _stable_order(bits(sub, (n,), np.uint32)))
    return order


def permutation(key, x, axis=0, independent=False):
    """A random permutation of ``arange(x)`` (an int) or of ``x`` along ``axis`` (JAX's
    construction: stable sorts by random 32-bit keys). ``independent=True`` is not supported."""
    key = _as_key(key, "permutation")
    if independent:
        raise InputError("tracejit.random.permutation: independent=True is not supported; "
                         "vmap permutation over split keys instead")
    if isinstance(x, Tracer) and x.ndim == 0 or not isinstance(x, Tracer) and np.ndim(x) == 0:
        if isinstance(x, Tracer) or not np.issubdtype(np.asarray(x).dtype, np.integer):
            raise InputError("tracejit.random.permutation: x must be a static int or an "
                             "array of at least one dimension")
        return _shuffled_order(key, int(x))
    x = tnp.asarray(x)
    axis = axis + x.ndim if axis < 0 else axis
    return tnp.take(x, _shuffled_order(key, x.shape[axis]), axis=axis)


def choice(key, a, shape=(), replace=True, p=None, axis=0):
    """Samples from ``a`` (an array, or ``arange(a)`` for an int) along ``axis``, with or
    without replacement, uniformly or with probabilities ``p`` (JAX's construction)."""
    key = _as_key(key, "choice")
    shape = canonical_shape(shape, "choice")
    scalar = not isinstance(a, Tracer) and np.ndim(a) == 0
    if scalar:
        n_inputs = int(a)
    else:
        a = tnp.asarray(a)
        axis = axis + a.ndim if axis < 0 else axis
        n_inputs = a.shape[axis]
    n_draws = int(np.prod(shape, dtype=np.int64))
    if n_draws == 0:
        return tnp.zeros(shape, np.int64 if scalar else a.dtype)
    if n_inputs <= 0:
        raise InputError("tracejit.random.choice: a must be greater than 0 unless no samples "
                         "are taken")
    if not replace and n_draws > n_inputs:
        raise InputError("tracejit.random.choice: cannot take a larger sample than the "
                         "population when replace=False")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
        else:
            ind = _shuffled_order(key, n_inputs)[:n_draws]
    else:
        p = _param_float_dtype(p, "choice")
        if p.shape != (n_inputs,):
            raise InputError(f"tracejit.random.choice: p must have shape ({n_inputs},), got "
                             f"{p.shape}")
        if replace:
            cum = tnp.cumsum(p)
            r = cum[-1] * (1 - uniform(key, shape, p.dtype))
            # searchsorted(cum, r, side="left"): the number of cumulative sums below r
            ind = tnp.sum(cum < r[..., None], axis=-1)
        else:
            g = -gumbel(key, (n_inputs,), p.dtype) - tnp.log(p)
            order = _stable_order(g)
            ind = order[:n_draws]
        ind = tnp.reshape(ind, shape)
    if scalar:
        return tnp.reshape(ind, shape)
    out = tnp.take(a, tnp.ravel(ind), axis=axis)
    return tnp.reshape(out, a.shape[:axis] + shape + a.shape[axis + 1:])


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Normal vectors with ``mean`` (..., n) and covariance ``cov`` (..., n, n): ``mean +
    factor @ normal(...)`` with ``factor`` from ``np.linalg.cholesky`` (or ``svd``/``eigh``),
    as JAX. A ``cov`` known while tracing is factored by NumPy; a traced one (a derivative in
    ``cov``) needs that linalg function on tracers."""
    key = _as_key(key, "multivariate_normal")
    if method not in ("cholesky", "svd", "eigh"):
        raise InputError("tracejit.random.multivariate_normal: method must be 'cholesky', "
                         "'svd' or 'eigh'")
    mean = _param_float_dtype(mean, "multivariate_normal")
    cov = _param_float_dtype(cov, "multivariate_normal")
    dt = _float_dtype(np.result_type(mean.dtype, cov.dtype) if dtype is None else dtype,
                      "multivariate_normal")
    if mean.ndim < 1 or cov.ndim < 2 or cov.shape[-2:] != (mean.shape[-1],) * 2:
        raise InputError(f"tracejit.random.multivariate_normal: mean (..., n) and cov "
                         f"(..., n, n), got {mean.shape} and {cov.shape}")
    batch = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    shape = batch if shape is None else canonical_shape(shape, "multivariate_normal")
    if isinstance(cov, Tracer) and cov.known() is not None:
        cov = cov.known()         # made with NumPy in the function: factor it with NumPy
    if method == "svd":
        u, s, _ = np.linalg.svd(cov)
        factor = u * tnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = np.linalg.eigh(cov)
        factor = v * tnp.sqrt(w[..., None, :])
    else:
        factor = np.linalg.cholesky(cov)
    z = normal(key, shape + mean.shape[-1:], dt)
    return mean + tnp.einsum("...ij,...j->...i", factor, z)
