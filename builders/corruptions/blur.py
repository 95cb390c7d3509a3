"""Blur corruptions except glass blur (see glass.py)."""

from __future__ import annotations

import cv2
import numpy as np

from vlmrobust.builders.corruptions import filters, kernels
from vlmrobust.builders.corruptions.draws import Draws

DEFOCUS = ((3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5))  # disk radius, alias blur
GAUSSIAN_SIGMA = (1, 2, 3, 4, 6)
MOTION = ((10, 3), (15, 5), (15, 8), (15, 12), (20, 15))  # radius, sigma
ZOOM_FACTORS = (
    np.arange(1, 1.11, 0.01),
    np.arange(1, 1.16, 0.01),
    np.arange(1, 1.21, 0.02),
    np.arange(1, 1.26, 0.02),
    np.arange(1, 1.31, 0.03),
)


def disk_kernel(radius: int, alias_blur: float) -> np.ndarray:
    """A normalised aliased disk, anti-aliased by a small Gaussian (float32).
    Small disks live on a 17×17 grid, as in ImageNet-C."""
    half = max(radius, 8)
    grid = np.arange(-half, half + 1)
    yy, xx = np.meshgrid(grid, grid)
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float32)
    disk /= disk.sum()
    ksize = (3, 3) if radius <= 8 else (5, 5)
    return cv2.GaussianBlur(disk, ksize=ksize, sigmaX=alias_blur)


def defocus_blur(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    radius, alias = DEFOCUS[severity - 1]
    # straight from uint8 (no x/255 image); float64 keeps the reference's pixels
    out = cv2.filter2D(np.ascontiguousarray(x), cv2.CV_64F, disk_kernel(radius, alias))
    return kernels.finish(out, 1 / 255)


def gaussian_blur(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """scipy's Gaussian filter of x/255 in its own arithmetic: the reference's
    pixels exactly."""
    return kernels.finish(filters.gaussian(kernels.unit(x), GAUSSIAN_SIGMA[severity - 1],
                                           channels=True))


def motion_blur(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    radius, sigma = MOTION[severity - 1]
    angle = float(draws.uniform(-45, 45))
    return kernels.finish255(filters.motion_blur(x, radius, sigma, angle))


def zoom_blur(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Mean of the image and its centre zooms at each factor (float32, as the
    reference accumulates)."""
    f = (x / 255.0).astype(np.float32)
    acc = np.zeros_like(f)
    factors = ZOOM_FACTORS[severity - 1]
    for factor in factors:
        filters.center_zoom(f, float(factor), out_hw=f.shape[:2], add_to=acc)
    return kernels.finish((f + acc) / np.float32(len(factors) + 1))
