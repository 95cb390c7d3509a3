"""Compiled per-pixel loops that replace whole-image float64 round trips.

``to_uint8`` fuses the reference's ``np.uint8(np.clip(y, 0, 1) * 255)`` tail
into one pass; the noise tails fuse their float64 operations likewise.
(Brightness and saturate live in ``hsv.py``.)
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def to_uint8(y: np.ndarray, scale: float, out: np.ndarray) -> None:  # pragma: no cover
    """out = uint8(clip(y·scale, 0, 1)·255) over a flat float array."""
    for i in range(y.shape[0]):
        v = y[i] * scale
        if v <= 0.0:
            out[i] = 0
        elif v >= 1.0:
            out[i] = 255
        else:
            out[i] = np.uint8(v * 255.0)


@numba.njit(cache=True, nogil=True)
def to_uint8_255(y: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """out = uint8(clip(y, 0, 255)) over a flat float array."""
    for i in range(y.shape[0]):
        out[i] = np.uint8(min(max(y[i], 0.0), 255.0))


def finish255(y: np.ndarray) -> np.ndarray:
    """``uint8(clip(y, 0, 255))`` in one pass (truncation, as the reference)."""
    y = np.ascontiguousarray(y)
    out = np.empty(y.shape, np.uint8)
    to_uint8_255(y.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _counts_to_uint8(counts: np.ndarray, lam: float, out: np.ndarray) -> None:  # pragma: no cover
    for i in range(counts.shape[0]):
        out[i] = np.uint8(min(max(counts[i] / lam, 0.0), 1.0) * 255.0)


def photons_to_uint8(counts: np.ndarray, lam: float) -> np.ndarray:
    """``uint8(clip(counts / lam, 0, 1) · 255)`` in one pass (shot noise's tail)."""
    counts = np.ascontiguousarray(counts)
    out = np.empty(counts.shape, np.uint8)
    _counts_to_uint8(counts.reshape(-1), float(lam), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _noise_mix(x: np.ndarray, noise: np.ndarray, multiplicative: bool,
               out: np.ndarray) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        f = x[i] / 255.0
        v = f + f * noise[i] if multiplicative else f + noise[i]
        out[i] = np.uint8(min(max(v, 0.0), 1.0) * 255.0)


def add_noise(x: np.ndarray, noise: np.ndarray, *, multiplicative: bool) -> np.ndarray:
    """``uint8(clip(f + n, 0, 1)·255)`` (or ``f + f·n``) with f = x/255, the
    reference's float64 operations fused into one pass over uint8 ``x``."""
    x = np.ascontiguousarray(x)
    noise = np.ascontiguousarray(noise, dtype=np.float64)
    out = np.empty(x.shape, np.uint8)
    _noise_mix(x.reshape(-1), noise.reshape(-1), multiplicative, out.reshape(-1))
    return out


def finish(y: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """``uint8(clip(y·scale, 0, 1)·255)`` in one pass (truncation, as the reference)."""
    y = np.ascontiguousarray(y)
    out = np.empty(y.shape, np.uint8)
    to_uint8(y.reshape(-1), scale, out.reshape(-1))
    return out
