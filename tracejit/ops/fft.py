"""FFT primitives: ``fft`` (complex to complex), ``rfft`` (real to complex), ``irfft`` (complex
to real). Every ``numpy.fft`` function is a composite of these (tracejit/numpy/fft.py).

Invariants (checked by the shape rules):
- The transforms are *unnormalised* in both directions: ``fft[inverse=False]`` sums with
  ``exp(-2 pi i jk/n)``, ``fft[inverse=True]`` with ``exp(+2 pi i jk/n)`` and no ``1/n``.
  NumPy's ``norm`` scalings are multiplications in the composites; keeping them out of the
  primitives makes every transpose below a transform of the same family without scale factors.
- ``axes`` are distinct, in range and non-empty, and every transformed axis has length >= 1
  (the composites pad or truncate to NumPy's ``n``/``s`` first). ``fft`` keeps its operand's
  complex dtype. ``rfft`` and ``irfft`` transform their *last* listed axis as the real one and
  the others as complex ones (NumPy's ``rfftn``/``irfftn``): ``rfft`` maps float32/float64 to
  complex64/complex128 with that axis's length ``n`` becoming ``n//2 + 1``; ``irfft`` takes that
  half spectrum (length exactly ``n//2 + 1``) and returns ``n`` reals, ignoring the imaginary
  parts of bins ``0`` and ``n/2`` (as pocketfft does).

Derivatives follow the project's complex convention (JAX's: a transpose is the plain bilinear
transpose, the pairing of a cotangent ``c`` with a tangent ``t`` being ``Re(sum(c * t))``):
- the DFT matrix is symmetric, so ``fft``'s transpose is ``fft`` with the same direction;
- ``rfft`` is "complex FFT, keep the first half": its transpose is ``Re(F pad(ct))``, computed
  as ``irfft(conj(ct) * w)`` with Hermitian weights ``w`` = 1 at bins 0 and n/2, 1/2 elsewhere
  (irfft counts those other bins twice);
- ``irfft(t) = Re(sum_k w'_k t_k exp(+...))`` with ``w'`` = 1 at bins 0 and n/2, 2 elsewhere,
  so its transpose is ``conj(w' * rfft(ct))``.
All three are linear, so jvp applies the primitive to the tangent; the rules bind primitives,
so derivatives compose to any order. Batching shifts ``axes`` past the batch axis.
"""
from __future__ import annotations

import numpy as np

from .. import ad_util as ad
from .. import dtypes
from ..core import Primitive
from ..errors import DTypeError, ShapeError
from ..ir import Type


def _check_axes(name, x, axes):
    if not axes or len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise ShapeError(f"{name}: axes {axes} must be distinct axes of the operand {x} "
                         f"(at least one)")
    empty = [a for a in axes if x.shape[a] == 0]
    if empty:
        raise ShapeError(f"{name}: the transformed axes {empty} of {x} have length 0")


def _fft_shape(x, *, axes, inverse):
    _check_axes("fft", x, axes)
    if x.dtype.kind != "c":
        raise DTypeError(f"fft: the operand must be complex64 or complex128, got {x.dtype} "
                         f"(tracejit.numpy.fft converts real input)")
    return Type(x.dtype, x.shape)


def _fft_impl(x, *, axes, inverse):
    x = np.asarray(x)
    norm = "forward" if inverse else "backward"      # "forward": the inverse is not scaled
    if len(axes) == 1:                  # (the 1-D functions skip fftn's argument handling)
        out = (np.fft.ifft if inverse else np.fft.fft)(x, axis=axes[0], norm=norm)
    else:
        out = (np.fft.ifftn if inverse else np.fft.fftn)(x, axes=axes, norm=norm)
    return np.asarray(out, dtype=x.dtype)


fft_p = Primitive("fft", "other", _fft_shape, _fft_impl, linear=True)
ad.deflinear(fft_p, lambda ct, x, *, axes, inverse: [fft_p.bind(ct, axes=axes,
                                                                inverse=inverse)])


def _rfft_shape(x, *, axes):
    _check_axes("rfft", x, axes)
    if x.dtype.kind != "f":
        raise DTypeError(f"rfft: the operand must be float32 or float64, got {x.dtype}")
    shape = list(x.shape)
    shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return Type(dtypes.complex_dtype(x.dtype), tuple(shape))


def _rfft_impl(x, *, axes):
    x = np.asarray(x)
    out = np.fft.rfft(x, axis=axes[0]) if len(axes) == 1 else np.fft.rfftn(x, axes=axes)
    return np.asarray(out, dtype=dtypes.complex_dtype(x.dtype))


rfft_p = Primitive("rfft", "other", _rfft_shape, _rfft_impl, linear=True)


def _irfft_shape(x, *, axes, n):
    _check_axes("irfft", x, axes)
    if x.dtype.kind != "c":
        raise DTypeError(f"irfft: the operand must be complex64 or complex128, got {x.dtype}")
    if n < 1 or x.shape[axes[-1]] != n // 2 + 1:
        raise ShapeError(f"irfft: an output length n={n} needs {n // 2 + 1} input bins along "
                         f"axis {axes[-1]} of {x}")
    shape = list(x.shape)
    shape[axes[-1]] = n
    return Type(dtypes.real_dtype(x.dtype), tuple(shape))


def _irfft_impl(x, *, axes, n):
    x = np.asarray(x)
    if len(axes) == 1:
        out = np.fft.irfft(x, n, axis=axes[0], norm="forward")
    else:
        s = [x.shape[a] for a in axes[:-1]] + [n]
        out = np.fft.irfftn(x, s=s, axes=axes, norm="forward")
    return np.asarray(out, dtype=dtypes.real_dtype(x.dtype))


irfft_p = Primitive("irfft", "other", _irfft_shape, _irfft_impl, linear=True)


def _hermitian_weights(t: Type, axis: int, n: int, inner: float):
    """``inner`` at the bins counted twice by irfft along ``axis`` (all but 0 and, for even
    ``n``, n/2), 1 at those two, broadcast to ``t`` (complex, so it multiplies spectra)."""
    w = np.full(n // 2 + 1, inner, dtype=t.dtype)
    w[0] = 1
    if n % 2 == 0:
        w[-1] = 1
    return ad.broadcast_in_dim(w, t.shape, (axis,))


def _rfft_transpose(ct, x, *, axes):
    n = x.ty.shape[axes[-1]]
    w = _hermitian_weights(ad.ty(ct), axes[-1], n, 0.5)
    return [irfft_p.bind(ad.mul(ad.unary("conj", ct), w), axes=axes, n=n)]


def _irfft_transpose(ct, x, *, axes, n):
    spectrum = rfft_p.bind(ct, axes=axes)
    w = _hermitian_weights(ad.ty(spectrum), axes[-1], n, 2.0)
    return [ad.unary("conj", ad.mul(spectrum, w))]


ad.deflinear(rfft_p, _rfft_transpose)
ad.deflinear(irfft_p, _irfft_transpose)


def _batch_rule(prim):
    """vmap: the batch axis is axis 0 of the only operand; the transformed axes move past it."""
    def rule(args, dims, B, **params):
        params = dict(params, axes=tuple(a + 1 for a in params["axes"]))
        return prim.bind(args[0], **params), 0
    return rule


for _p in (fft_p, rfft_p, irfft_p):
    _p.batch = _batch_rule(_p)
