"""tracejit.numpy.fft: NumPy's ``numpy.fft`` on arrays and tracers.

On concrete inputs every function is NumPy's own. On tracers a transform is: NumPy's dtype rule
(float32 and complex64 stay single precision, everything else becomes float64/complex128), each
transformed axis padded with zeros or truncated to NumPy's ``n``/``s``, *one* primitive of
:mod:`tracejit.ops.fft` over all transformed axes, then the ``norm`` scale as a multiplication
(the primitives are unnormalised). ``np.fft.fft(tracer)`` reaches these through
``__array_function__``. NumPy transforms a repeated axis (``fftn(a, axes=(0, 0))``) once per
mention, one axis after another; so does this module (one primitive per mention).
``fftfreq``/``rfftfreq`` are NumPy's (their values depend on ``n`` only; a traced ``d`` scales
them through ordinary arithmetic).
"""
from __future__ import annotations

import math
import operator
import sys
import warnings

import numpy as np

from .. import dtypes
from ..core import type_of
from ..errors import _is_internal
from ..ops import fft as ops
from ..ops import structural as st
from ._base import as_traceable, convert, implements, normalize_axis

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(norm):
    if norm not in _SWAP:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward".')
    return norm


def _swap(norm):
    """hfft/ihfft: NumPy computes them with the other direction's normalisation."""
    return _SWAP[_check_norm(norm)]


def _scaled(y, norm, n, inverse):
    """The unnormalised transform ``y`` (over ``n`` points in all) scaled as ``norm`` asks."""
    from .math import multiply
    norm = _check_norm(norm) or "backward"
    if norm == "ortho":
        return multiply(y, 1.0 / math.sqrt(n))
    if (norm == "backward") == inverse:
        return multiply(y, 1.0 / n)
    return y


def _length(n, name):
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"{name}: Invalid number of FFT data points ({n}) specified.")
    return n


def _resize(x, axis, n):
    """``x`` truncated or padded with zeros at the end of ``axis`` to length ``n``."""
    t = type_of(x)
    m = t.shape[axis]
    if m > n:
        return st.slice_p.bind(x, start=(0,) * t.ndim,
                               limit=t.shape[:axis] + (n,) + t.shape[axis + 1:],
                               step=(1,) * t.ndim)
    if m < n:
        hi = [0] * t.ndim
        hi[axis] = n - m
        zero = np.zeros((), t.dtype)[()]
        return st.pad_p.bind(x, zero, lo=(0,) * t.ndim, hi=tuple(hi))
    return x


def _complex(x):
    """NumPy's complex operand: single precision stays single, anything else complex128."""
    dt = type_of(x).dtype
    return convert(x, dtypes.complex64 if dt in (dtypes.float32, dtypes.complex64)
                   else dtypes.complex128)


def _real(x, name):
    dt = type_of(x).dtype
    if dt.kind == "c":
        raise TypeError(f"{name}: the input must be real, got {dt} (NumPy's rfft refuses "
                        f"complex input too); use fft for complex data, or take .real first")
    return convert(x, dtypes.float32 if dt == dtypes.float32 else dtypes.float64)


def _c2c(x, s, axes, norm, inverse):
    x = _complex(x)
    for a, n in zip(axes, s):
        x = _resize(x, a, n)
    y = ops.fft_p.bind(x, axes=tuple(sorted(axes)), inverse=inverse)
    return _scaled(y, norm, math.prod(s), inverse)


def _r2c(x, s, axes, norm, name):
    x = _real(x, name)
    for a, n in zip(axes, s):
        x = _resize(x, a, n)
    y = ops.rfft_p.bind(x, axes=tuple(sorted(axes[:-1])) + (axes[-1],))
    return _scaled(y, norm, math.prod(s), False)


def _c2r(x, s, axes, norm, conj=False):
    x = _complex(x)
    if conj:
        from .math import conj as conj_
        x = conj_(x)
    for a, n in zip(axes[:-1], s[:-1]):
        x = _resize(x, a, n)
    x = _resize(x, axes[-1], s[-1] // 2 + 1)
    y = ops.irfft_p.bind(x, axes=tuple(sorted(axes[:-1])) + (axes[-1],), n=s[-1])
    return _scaled(y, norm, math.prod(s), True)


def _out(result, out, name):
    """NumPy's ``out=``: the result written into ``out`` (same shape, same-kind cast)."""
    if out is None:
        return result
    from . import mutation
    dst = mutation._target(out, f"fft.{name}")
    if tuple(type_of(dst).shape) != tuple(type_of(result).shape):
        raise ValueError(f"fft.{name}: output array has wrong shape: {type_of(dst).shape}, "
                         f"the result has shape {type_of(result).shape}")
    return mutation.write_result(dst, result, "same_kind", True, f"fft.{name}(..., out=...)")


def _one_d(a, n, axis, name, default=None):
    """(operand, [n], [axis]) of a 1-D transform; ``default(length)`` gives NumPy's ``n``."""
    x = as_traceable(a)
    t = type_of(x)
    if t.ndim == 0:
        raise np.exceptions.AxisError(f"fft.{name}: axis {axis} is out of bounds for a 0-d "
                                      f"array (the input needs at least one dimension)")
    ax = normalize_axis(operator.index(axis), t.ndim, f"fft.{name}")
    m = t.shape[ax]
    n = (default(m) if default else m) if n is None else n
    return x, [_length(n, name)], [ax]


# ---------------------------------------------------------------------------------------------
# one axis

@implements(np.fft.fft)
def fft(a, n=None, axis=-1, norm=None, out=None):
    """The discrete Fourier transform along ``axis`` (length ``n``: truncated or zero-padded)."""
    x, s, axes = _one_d(a, n, axis, "fft")
    return _out(_c2c(x, s, axes, norm, False), out, "fft")


@implements(np.fft.ifft)
def ifft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse discrete Fourier transform along ``axis``."""
    x, s, axes = _one_d(a, n, axis, "ifft")
    return _out(_c2c(x, s, axes, norm, True), out, "ifft")


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    """The transform of real input: the ``n//2 + 1`` non-negative frequency terms."""
    x, s, axes = _one_d(a, n, axis, "rfft")
    return _out(_r2c(x, s, axes, norm, "rfft"), out, "rfft")


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of rfft: ``n`` (default ``2*(m-1)``) real values from ``n//2 + 1`` bins."""
    x, s, axes = _one_d(a, n, axis, "irfft", lambda m: 2 * (m - 1))
    return _out(_c2r(x, s, axes, norm), out, "irfft")


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The transform of a Hermitian-symmetric signal given by its first half: real output.
    (NumPy ignores ``out`` here; so does this function.)"""
    x, s, axes = _one_d(a, n, axis, "hfft", lambda m: 2 * (m - 1))
    return _c2r(x, s, axes, _swap(norm), conj=True)


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of hfft: the conjugate of rfft with the inverse's normalisation."""
    from .math import conj
    x, s, axes = _one_d(a, n, axis, "ihfft")
    return _out(conj(_r2c(x, s, axes, _swap(norm), "ihfft")), out, "ihfft")


# ---------------------------------------------------------------------------------------------
# several axes

def _cook(a, s, axes, name, invreal=False):
    """NumPy's ``_cook_nd_args``: (operand, lengths, axes as non-negative ints)."""
    x = as_traceable(a)
    shape = type_of(x).shape
    given = s is not None
    if axes is None:
        if given:
            _deprecated("`axes` should not be `None` if `s` is not `None` (deprecated in "
                        "NumPy 2.0): pass the axes explicitly")
            axes = range(-len(s), 0)
        else:
            axes = range(len(shape))
    axes = [normalize_axis(operator.index(ax), len(shape), f"fft.{name}") for ax in axes]
    s = list(s) if given else [shape[ax] for ax in axes]
    if len(s) != len(axes):
        raise ValueError(f"fft.{name}: Shape and axes have different lengths (s={s}, "
                         f"axes={axes}).")
    if invreal and axes and not given:
        s[-1] = 2 * (shape[axes[-1]] - 1)
    if None in s:
        _deprecated("Passing an array containing `None` values to `s` is deprecated in "
                    "NumPy 2.0: pass -1 for an axis's input length")
    defaults = [shape[ax] for ax in axes]
    if invreal and axes:
        defaults[-1] = 2 * (shape[axes[-1]] - 1)
    s = [d if n is None else shape[ax] if n == -1 else n
         for n, d, ax in zip(s, defaults, axes)]
    return x, [_length(n, name) for n in s], axes


def _deprecated(message):
    """NumPy's DeprecationWarning, attributed to the first frame outside tracejit and NumPy."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, DeprecationWarning, stacklevel=level)


def _last_axis(axes, name):
    if not axes:
        raise IndexError(f"fft.{name}: needs at least one axis (its last axis is the real one)")


def _fftn(a, s, axes, norm, inverse, name):
    x, s, axes = _cook(a, s, axes, name)
    if not axes:
        return x                                  # NumPy returns the input itself
    if len(set(axes)) == len(axes):
        return _c2c(x, s, axes, norm, inverse)
    one = ifft if inverse else fft
    for n, ax in reversed(list(zip(s, axes))):     # NumPy's order for repeated axes
        x = one(x, n, ax, norm)
    return x


@implements(np.fft.fftn)
def fftn(a, s=None, axes=None, norm=None, out=None):
    """The N-dimensional discrete Fourier transform over ``axes`` (default: all)."""
    return _out(_fftn(a, s, axes, norm, False, "fftn"), out, "fftn")


@implements(np.fft.ifftn)
def ifftn(a, s=None, axes=None, norm=None, out=None):
    """The N-dimensional inverse discrete Fourier transform."""
    return _out(_fftn(a, s, axes, norm, True, "ifftn"), out, "ifftn")


@implements(np.fft.fft2)
def fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """fftn over the last two axes."""
    return _out(_fftn(a, s, axes, norm, False, "fft2"), out, "fft2")


@implements(np.fft.ifft2)
def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """ifftn over the last two axes. (NumPy ignores ``out`` here; so does this function.)"""
    return _fftn(a, s, axes, norm, True, "ifft2")


@implements(np.fft.rfftn)
def rfftn(a, s=None, axes=None, norm=None, out=None):
    """rfft over the last of ``axes``, then fft over the others."""
    x, s, axes = _cook(a, s, axes, "rfftn")
    _last_axis(axes, "rfftn")
    if len(set(axes)) == len(axes):
        return _out(_r2c(x, s, axes, norm, "rfftn"), out, "rfftn")
    x = rfft(x, s[-1], axes[-1], norm)
    for n, ax in reversed(list(zip(s[:-1], axes[:-1]))):
        x = fft(x, n, ax, norm)
    return _out(x, out, "rfftn")


@implements(np.fft.rfft2)
def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """rfftn over the last two axes."""
    return rfftn(a, s, axes, norm, out)


@implements(np.fft.irfftn)
def irfftn(a, s=None, axes=None, norm=None, out=None):
    """The inverse of rfftn: ifft over all but the last of ``axes``, then irfft over it."""
    x, s, axes = _cook(a, s, axes, "irfftn", invreal=True)
    _last_axis(axes, "irfftn")
    if len(set(axes)) == len(axes):
        return _out(_c2r(x, s, axes, norm), out, "irfftn")
    for n, ax in zip(s[:-1], axes[:-1]):
        x = ifft(x, n, ax, norm)
    return _out(irfft(x, s[-1], axes[-1], norm), out, "irfftn")


@implements(np.fft.irfft2)
def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    """irfftn over the last two axes. (NumPy ignores ``out`` here; so does this function.)"""
    return irfftn(a, s, axes, norm)


# ---------------------------------------------------------------------------------------------
# helpers

def _shift(x, axes, sign):
    from .shape import roll
    x = as_traceable(x)
    shape = type_of(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
    if isinstance(axes, (int, np.integer)):
        return roll(x, sign * (shape[axes] // 2), axes)
    return roll(x, [sign * (shape[ax] // 2) for ax in axes], axes)


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    """Move the zero-frequency term to the centre (a roll by ``n//2`` along each of ``axes``)."""
    return _shift(x, axes, 1)


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    """The inverse of fftshift (a roll by ``-(n//2)``)."""
    return _shift(x, axes, -1)


def fftfreq(n, d=1.0, device=None):
    """NumPy's sample frequencies ``[0, 1, ..., -1] / (d*n)`` (a traced ``d`` gives a traced
    result)."""
    return np.fft.fftfreq(n, d, device=device)


def rfftfreq(n, d=1.0, device=None):
    """NumPy's non-negative sample frequencies ``[0, 1, ..., n//2] / (d*n)``."""
    return np.fft.rfftfreq(n, d, device=device)
