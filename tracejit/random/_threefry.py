"""Threefry-2x32 and JAX's key construction on it: keys, ``split``, ``fold_in``, random bits.

Invariants:
- A key is an ordinary ``uint32`` array of shape ``(2,)`` (a NumPy array outside a trace, a
  tracer inside one), so keys flow through jit, vmap, grad and control flow like any array.
- Everything here is a composite of uint32 elementwise primitives (add, xor, shl, shr, or) plus
  ``iota``/``concatenate``/``slice``: no primitive of its own, so the llvm backend fuses the
  twenty rounds into one vector loop and the interpreter evaluates the same graph with NumPy,
  bit for bit the same.
- The hash is Random123's Threefry-2x32 with 20 rounds (checked against its known-answer
  vectors), and ``key``/``split``/``fold_in``/``random_bits`` follow ``jax/_src/prng.py`` in
  its original (``jax_threefry_partitionable=False``) construction, so the same key gives the
  same bits as JAX with that setting (the default before JAX 0.5).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import numpy as tnp
from ..core import Tracer
from ..errors import InputError
from ..ops import structural as st

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = 0x1BD11BDA                    # Threefry's key-schedule parity constant


def _rotl(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter words ``x0, x1`` under key words ``k0, k1``.

    All four are uint32 (scalars or arrays broadcasting together); returns the two output words.
    Written with uint32 ``+ ^ << >> |`` only, which wrap modulo 2**32 in NumPy and in tracejit.
    """
    with np.errstate(over="ignore"):         # eager NumPy scalars warn on the (intended) wrap
        k2 = k0 ^ k1 ^ np.uint32(_PARITY)
        ks = (k0, k1, k2)
        x0 = x0 + k0
        x1 = x1 + k1
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1


def _as_key(key, fn: str):
    if isinstance(key, Tracer):
        ok = key.shape == (2,) and key.dtype == np.uint32
    else:
        key = np.asarray(key)
        ok = key.shape == (2,) and key.dtype == np.uint32
    if not ok:
        raise InputError(f"tracejit.random.{fn}: a key is a uint32 array of shape (2,) (from "
                         f"tracejit.random.key, split or fold_in); got {key.dtype}"
                         f"{list(key.shape)}. For a batch of keys, vmap over them.")
    return key


def _iota(n: int):
    """uint32 0..n-1: an ``iota`` equation inside a trace (never an n-element constant)."""
    return st.iota_p.bind(dtype=np.uint32, shape=(n,), axis=0)


def threefry_2x32(keypair, count):
    """JAX's ``threefry_2x32``: hash a uint32 array ``count`` (any shape) under ``keypair``.

    The flattened counts (padded with one 0 when their number is odd) are split into halves
    that form the two words of each counter; the output words are concatenated back.
    """
    k0, k1 = keypair[0], keypair[1]
    count = tnp.asarray(count)
    if count.dtype != np.uint32:
        raise InputError(f"threefry_2x32 needs uint32 counts, got {count.dtype}")
    flat = tnp.ravel(count)
    n = flat.shape[0]
    if n == 0:
        return count
    if n % 2:
        flat = tnp.concatenate([flat, tnp.zeros(1, np.uint32)])
    h = flat.shape[0] // 2
    y0, y1 = threefry2x32(k0, k1, flat[:h], flat[h:])
    return tnp.reshape(tnp.concatenate([y0, y1])[:n], count.shape)


def _counter_halves(key, n: int):
    """The two output words of ``threefry_2x32(key, arange(n))``, without materialising it.

    For even ``n`` the counters are ``(i, h + i)`` for ``i < h = n / 2``; for odd ``n`` the
    last counter's second word is the padding 0. The stream is ``concatenate([y0, y1])[:n]``.
    """
    h = (n + 1) // 2
    i = _iota(h)
    x1 = i + np.uint32(h)
    if n % 2:
        x1 = tnp.where(i == np.uint32(h - 1), np.uint32(0), x1)
    return threefry2x32(key[0], key[1], i, x1)


def bit_parts(key, width: int, size: int):
    """JAX's ``_threefry_random_bits_original`` as a list of pieces to concatenate.

    Returns ``(parts, size)``: elementwise functions of the bits may be applied to each part
    (the fused loop then produces finished values) before ``assemble`` joins them. 32-bit bits
    are the two halves of one hash of ``arange(size)``; 64-bit bits hash ``arange(2 * size)``
    and join the first half (high words) with the second (low words), one part.
    """
    if size >= 2 ** 31:
        raise InputError(f"tracejit.random: {size} values in one call is more than this "
                         f"implementation supports (2**31); split the key and draw in pieces")
    if size == 0:
        dt = np.uint64 if width == 64 else np.uint32
        return [tnp.zeros(0, dt)], 0
    if width == 64:
        y0, y1 = _counter_halves(key, 2 * size)
        return [(y0.astype(np.uint64) << np.uint64(32)) | y1.astype(np.uint64)], size
    if width == 32:
        return list(_counter_halves(key, size)), size
    # 8 and 16 bits: the 32-bit stream of ceil(width * size / 32) words viewed as narrower
    # unsigned ints, little-endian (JAX: "essentially bits.view(dtype)[:size]")
    per = 32 // width
    words = assemble(list(_counter_halves(key, -(-size * width // 32))), None, None)
    shifts = np.arange(per, dtype=np.uint32) * np.uint32(width)
    pieces = (words[:, None] >> shifts) & np.uint32((1 << width) - 1)
    dt = np.uint8 if width == 8 else np.uint16
    return [tnp.reshape(pieces, (-1,))[:size].astype(dt)], size


def assemble(parts, size, shape):
    """Join ``bit_parts`` pieces (or elementwise functions of them) into an array of ``shape``."""
    flat = parts[0] if len(parts) == 1 else tnp.concatenate(parts)
    if size is not None and flat.shape[0] != size:
        flat = flat[:size]
    return flat if shape is None else tnp.reshape(flat, shape)


def random_bits(key, width: int, shape):
    """Uniform random unsigned ints of ``width`` bits (8, 16, 32 or 64) and ``shape``."""
    key = _as_key(key, "bits")
    if width not in (8, 16, 32, 64):
        raise InputError(f"tracejit.random.bits: width {width}; use 8, 16, 32 or 64")
    shape = canonical_shape(shape, "bits")
    parts, size = bit_parts(key, width, int(np.prod(shape, dtype=np.int64)))
    return assemble(parts, size, shape)


def canonical_shape(shape, fn: str) -> tuple:
    """A static shape tuple (an int means a 1-d shape)."""
    try:
        if isinstance(shape, (int, np.integer)):
            return (operator.index(shape),)
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise InputError(f"tracejit.random.{fn}: shape must be a tuple of ints (static, known "
                         f"while tracing), got {shape!r}") from None


def key(seed):
    """A key from an integer seed, as ``jax.random.key``/``PRNGKey`` (64-bit seeds: the high
    and low 32-bit words; ``key(0)`` is ``[0, 0]``, ``key(-1)`` is ``[2**32 - 1, 2**32 - 1]``).

    A traced integer seed gives a traced key (so ``vmap(key)(seeds)`` works).
    """
    if isinstance(seed, Tracer):
        if seed.ndim != 0 or seed.dtype.kind not in "iu":
            raise InputError(f"tracejit.random.key: the seed must be an integer scalar, got "
                             f"{seed.dtype}{list(seed.shape)}")
        s = seed.astype(np.int64) if seed.dtype.kind == "i" else seed.astype(np.uint64)
        hi = (s >> 32).astype(np.uint32) if s.dtype == np.int64 else \
            (s >> np.uint64(32)).astype(np.uint32)
        lo = (s & 0xFFFFFFFF).astype(np.uint32)
        return tnp.stack([hi, lo])
    if isinstance(seed, (bool, np.bool_)) or np.ndim(seed) != 0 or \
            np.asarray(seed).dtype.kind not in "iu":
        raise InputError(f"tracejit.random.key: the seed must be an integer scalar, got "
                         f"{seed!r}")
    s = int(seed)
    if not -2 ** 63 <= s < 2 ** 64:
        raise InputError(f"tracejit.random.key: seed {s} does not fit in 64 bits")
    s %= 2 ** 64
    return np.array([s >> 32, s & 0xFFFFFFFF], dtype=np.uint32)


PRNGKey = key


def split(key, num=2):
    """``num`` new keys (shape ``(num, 2)``; a tuple ``num`` gives shape ``num + (2,)``), as
    ``jax.random.split``: the hash of ``arange(2 * prod(num))`` under ``key``, reshaped."""
    key = _as_key(key, "split")
    shape = canonical_shape(num, "split")
    n = int(np.prod(shape, dtype=np.int64))
    y0, y1 = _counter_halves(key, 2 * n)
    return tnp.reshape(tnp.concatenate([y0, y1]), shape + (2,))


def fold_in(key, data):
    """A new key from ``key`` and an integer ``data`` (taken modulo 2**32), as
    ``jax.random.fold_in``: the hash of the counter ``(0, data)``."""
    key = _as_key(key, "fold_in")
    if np.ndim(data) != 0:
        raise InputError("tracejit.random.fold_in: data must be a scalar; vmap for a batch")
    if isinstance(data, Tracer):
        if data.dtype.kind not in "iub":
            raise InputError(f"tracejit.random.fold_in: data must be an integer, got "
                             f"{data.dtype}")
        d = data.astype(np.uint32)
    else:
        d = np.uint32(int(data) % 2 ** 32)
    y0, y1 = threefry2x32(key[0], key[1], np.uint32(0), d)
    return tnp.stack([tnp.asarray(y0, dtype=np.uint32), tnp.asarray(y1, dtype=np.uint32)])
