"""Noise corruptions (ImageNet-C parameters, as imagecorruptions 1.1.2 sets them).

Each returns uint8 (the reference's final float64 ``np.uint8(clip(·)·255)``
fused into one compiled pass) or floats on the 0..255 scale that the caller
truncates the same way."""

from __future__ import annotations

import numba
import numpy as np

from vlmrobust.builders.corruptions import kernels
from vlmrobust.builders.corruptions.draws import Draws

GAUSSIAN_SCALE = (0.08, 0.12, 0.18, 0.26, 0.38)
SHOT_PHOTONS = (60, 25, 12, 5, 3)
IMPULSE_AMOUNT = (0.03, 0.06, 0.09, 0.17, 0.27)
SPECKLE_SCALE = (0.15, 0.2, 0.35, 0.45, 0.6)


def gaussian_noise(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Additive N(0, σ²) per channel on [0, 1] intensities, drawn as output
    bytes (``Draws.normal_bytes``)."""
    return draws.normal_bytes(x, GAUSSIAN_SCALE[severity - 1], multiplicative=False)


def shot_noise(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Poisson photon noise: Poisson(λ·x)/λ."""
    lam = SHOT_PHOTONS[severity - 1]
    # counts of lam or more all clip to 1, so the draw may stop there
    counts = draws.poisson_levels(np.ascontiguousarray(x), lam, lam)
    return kernels.photons_to_uint8(counts, lam)


def impulse_noise(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Salt and pepper: each channel value flips with probability p, to 1 or 0
    with equal odds (scikit-image ``random_noise(mode='s&p')`` semantics).
    Kept values come back as they were: uint8(x/255·255) is x for every byte."""
    x = np.ascontiguousarray(x)
    codes = draws.salt_and_pepper(x.shape, IMPULSE_AMOUNT[severity - 1])
    out = np.empty(x.shape, np.uint8)
    _impulse(x.reshape(-1), codes.reshape(-1), out.reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _impulse(x: np.ndarray, codes: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    for i in range(x.shape[0]):
        c = codes[i]
        out[i] = x[i] if c == 0 else (np.uint8(255) if c == 2 else np.uint8(0))


def speckle_noise(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Multiplicative noise: x + x·N(0, σ²), drawn as output bytes."""
    return draws.normal_bytes(x, SPECKLE_SCALE[severity - 1], multiplicative=True)
