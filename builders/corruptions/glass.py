"""Glass blur: blur, locally scramble pixels, blur again.

The reference's per-pixel Python loop costs about a second per 224² call. Here
the displacements are drawn in one call (same order: per iteration, rows
bottom-up, columns right-to-left, (dx, dy) per pixel) and the sequential copy
runs compiled. Note the reference's "swap" ``x[a], x[b] = x[b], x[a]`` on
(3,)-views is in effect the one-way copy ``x[a] = x[b]``; that is the
distribution ImageNet-C ships, so it is what is reproduced here.
"""

from __future__ import annotations

import numba
import numpy as np

from vlmrobust.builders.corruptions import kernels
from vlmrobust.builders.corruptions.draws import Draws
from vlmrobust.builders.corruptions.filters import gaussian

# sigma, max displacement, iterations
GLASS = ((0.7, 1, 2), (0.9, 2, 1), (1.0, 2, 3), (1.1, 3, 2), (1.5, 4, 2))


@numba.njit(cache=True, nogil=True)
def _scramble(img: np.ndarray, shifts: np.ndarray, reach: int) -> None:  # pragma: no cover
    h, w = img.shape[0], img.shape[1]
    for it in range(shifts.shape[0]):
        for i in range(shifts.shape[1]):
            y = h - reach - i
            for j in range(shifts.shape[2]):
                x = w - reach - j
                sy = y + shifts[it, i, j, 1]
                sx = x + shifts[it, i, j, 0]
                for c in range(img.shape[2]):
                    img[y, x, c] = img[sy, sx, c]


def glass_blur(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    sigma, reach, iterations = GLASS[severity - 1]
    img = (gaussian(kernels.unit(x), sigma, channels=True) * 255).astype(np.uint8)
    rows = max(0, x.shape[0] - 2 * reach)
    cols = max(0, x.shape[1] - 2 * reach)
    shifts = np.asarray(draws.integers(-reach, reach, size=(iterations, rows, cols, 2)),
                        dtype=np.int64)
    _scramble(img, shifts, reach)
    return kernels.finish(gaussian(kernels.unit(img), sigma, channels=True))
