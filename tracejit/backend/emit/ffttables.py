"""The sizes and tables of the native FFT (``fftlib.py``): how much work area each library
call needs, and the twiddle tables of each length, computed in long double in Python, rounded
once to double, and registered as data symbols (``jit.add_symbol``) so that kernels declaring
``tj_fft_plan_<n>`` / ``tj_fft_half_<n>`` resolve them.

Invariants: a table, once registered, lives as long as the process (its address is baked into
loaded code) and never changes; the layouts are those ``fftlib``'s docstring describes.
"""
from __future__ import annotations

import threading

import numpy as np

from ..engine import jit

def is_pow2(n: int) -> bool:
    return n & (n - 1) == 0


def bluestein_length(n: int) -> int:
    """The power-of-two length ``M >= 2n - 1`` of the convolution for a length ``n``."""
    return 1 << max(0, (2 * n - 2).bit_length())


# The split arrays of a work area start PAD elements apart beyond their length: arrays a
# multiple of 4 KiB apart make every store alias the loads of the next arrays in the CPU's
# store-to-load forwarding check (measured: the complex FFT of 4096 points 2.2x slower).
PAD = 24


def cpx_work(n: int) -> int:
    """Elements of ``T`` the complex FFT of length ``n`` needs as scratch."""
    return 2 * (n + PAD) if is_pow2(n) else 4 * (bluestein_length(n) + PAD)


def work_size(kind: str, n: int) -> int:
    """Elements of ``T`` of ``work`` for ``tj_fft_<kind>`` of rows of (output or input) length
    ``n``: the row in split form plus the complex FFT's scratch."""
    m = n // 2 if kind != "c2c" and n % 2 == 0 else n
    return 2 * (m + PAD) + cpx_work(m)


def cpx_length(kind: str, n: int) -> int:
    """The complex FFT length ``tj_fft_<kind>`` runs for rows of length ``n``."""
    return n // 2 if kind != "c2c" and n % 2 == 0 else n


# --------------------------------------------------------------------------------------------
# tables (Python, long double)

_PI = np.arctan(np.longdouble(1)) * 4
_tables: dict = {}          # symbol -> array (kept alive: its address is registered)
_tables_lock = threading.Lock()
jit.register_fork_lock(_tables_lock)


def _roots(n: int, count: int) -> np.ndarray:
    """``W_n^k = exp(-2 pi i k/n)`` for k < count, in long double, by octant symmetry as
    pocketfft does: the angle is reduced exactly (integers) to at most pi/4, so the quadrant
    points are exactly 1, -i, -1, i and symmetric angles give equal magnitudes."""
    k = np.arange(count, dtype=np.int64) % n
    quadrant, rem = np.divmod(4 * k, n)         # angle = (pi/2) (quadrant + rem/n)
    low = 2 * rem <= n
    t = np.where(low, rem, n - rem).astype(np.longdouble) * (_PI / 2 / n)
    c0, s0 = np.cos(t), np.sin(t)
    c, s = np.where(low, c0, s0), np.where(low, s0, c0)
    c, s = (np.select([quadrant == 0, quadrant == 1, quadrant == 2], [c, -s, -c], s),
            np.select([quadrant == 0, quadrant == 1, quadrant == 2], [s, c, -s], -c))
    return c - 1j * s


def _split(z) -> np.ndarray:
    return np.concatenate([z.real, z.imag]).astype(np.float64)


def _plan_values(n: int) -> np.ndarray:
    if is_pow2(n):
        return _split(_roots(n, n))
    m = bluestein_length(n)
    k = np.arange(n, dtype=np.int64)
    ang = (_PI / n) * ((k * k) % (2 * n)).astype(np.longdouble)
    chirp = np.cos(ang) - 1j * np.sin(ang)
    wrapped = np.zeros(m, dtype=np.clongdouble)
    wrapped[:n] = np.conj(chirp)
    wrapped[m - n + 1:] = np.conj(chirp[1:])[::-1]
    spectrum = np.fft.fft(wrapped) / m
    return np.concatenate([_split(_roots(m, m)), _split(chirp), _split(spectrum)])


def _register(symbol: str, make) -> str:
    with _tables_lock:
        if symbol not in _tables:
            table = np.ascontiguousarray(make())
            _tables[symbol] = table
            jit.add_symbol(symbol, table.ctypes.data)
    return symbol


def tables() -> dict:
    """Every registered table by symbol (``tj.export`` writes those its kernels use)."""
    with _tables_lock:
        return dict(_tables)


def plan_table(n: int) -> str:
    """The registered symbol of the plan of the complex FFT of length ``n`` (module docstring)."""
    return _register(f"tj_fft_plan_{n}", lambda: _plan_values(n))


def half_table(n: int) -> str:
    """The registered symbol of ``W_n^k``, k = 0..n/2, of the real transforms of even ``n``."""
    return _register(f"tj_fft_half_{n}", lambda: _split(_roots(n, n // 2 + 1)))
