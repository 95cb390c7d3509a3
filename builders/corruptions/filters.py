"""Shared building blocks: Gaussian filtering as scikit-image does it, the
linear zoom of ``scipy.ndimage.zoom(order=1)`` done as two separable gathers,
and motion blur as one sparse line kernel instead of a loop of image shifts."""

from __future__ import annotations

import math

import cv2
import numba
import numpy as np
from scipy import ndimage


def gaussian(x: np.ndarray, sigma: float, *, channels: bool, mode: str = "nearest",
             truncate: float = 4.0) -> np.ndarray:
    """``skimage.filters.gaussian`` on a float array (channel axis last when
    ``channels``); same defaults (nearest border, truncate 4)."""
    sig: float | list[float] = [sigma, sigma, 0.0] if channels else sigma
    return ndimage.gaussian_filter(x, sig, mode=mode, truncate=truncate)


def _linear_axis(n_in: int, n_out: int, n_keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices and weights of the first ``n_keep`` of ``n_out`` samples
    that ``ndimage.zoom(order=1, grid_mode=False)`` takes along one axis: output
    i sits at input coordinate i·(n_in − 1)/(n_out − 1)."""
    i = np.arange(n_keep, dtype=np.float64)
    coord = i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(i)
    lo = np.floor(coord).astype(np.intp)
    lo = np.clip(lo, 0, n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w = coord - lo
    return lo, hi, w


@numba.njit(cache=True, nogil=True)
def _bilinear(src: np.ndarray, rlo: np.ndarray, rhi: np.ndarray, rt: np.ndarray,
              clo: np.ndarray, chi: np.ndarray, ct: np.ndarray,
              out: np.ndarray) -> None:  # pragma: no cover
    for i in range(out.shape[0]):
        a, b, t = rlo[i], rhi[i], rt[i]
        for j in range(out.shape[1]):
            c0, c1, u = clo[j], chi[j], ct[j]
            for k in range(out.shape[2]):
                left = src[a, c0, k] + (src[b, c0, k] - src[a, c0, k]) * t
                right = src[a, c1, k] + (src[b, c1, k] - src[a, c1, k]) * t
                out[i, j, k] = left + (right - left) * u


def center_zoom(x: np.ndarray, factor: float, out_hw: tuple[int, int] | None = None) -> np.ndarray:
    """Crop the centre 1/factor of ``x`` (H, W[, C]) and zoom it back by ``factor``
    with linear interpolation (ImageNet-C's ``clipped_zoom``). ``out_hw`` keeps
    only the top-left rows/columns of the zoomed result (all when None)."""
    h, w = x.shape[:2]
    ch, cw = math.ceil(h / factor), math.ceil(w / factor)
    top, left = (h - ch) // 2, (w - cw) // 2
    crop = x[top:top + ch, left:left + cw]
    zh, zw = round(ch * factor), round(cw * factor)
    kh, kw = (zh, zw) if out_hw is None else (min(zh, out_hw[0]), min(zw, out_hw[1]))
    # a + (b − a)·t in the input's precision (float32 for images: within one
    # grey level of scipy's float64 sum after truncation), rows then columns,
    # in one compiled pass
    rlo, rhi, rt = _linear_axis(ch, zh, kh)
    clo, chi, ct = _linear_axis(cw, zw, kw)
    src = np.ascontiguousarray(crop if x.ndim == 3 else crop[..., None])
    out = np.empty((kh, kw, src.shape[2]), dtype=x.dtype)
    _bilinear(src, rlo, rhi, rt.astype(x.dtype), clo, chi, ct.astype(x.dtype), out)
    if x.ndim == 2:
        out = out[..., 0]
    return out.astype(x.dtype, copy=False)


def motion_kernel(radius: int, sigma: float, angle_deg: float, shape_hw: tuple[int, int]
                  ) -> tuple[np.ndarray, int]:
    """The line kernel of ImageNet-C motion blur: weights of a half-Gaussian
    (width 2r+1, normalised over the full width) at integer offsets along
    ``angle``; taps stop at the first offset that leaves the image (weights are
    not renormalised, as in the reference). Returns (kernel, anchor), the kernel
    laid out for ``cv2.filter2D`` correlation around (anchor, anchor)."""
    width = 2 * radius + 1
    weights = np.exp(-np.arange(width, dtype=np.float64) ** 2 / (2 * sigma**2)) / (
        math.sqrt(2 * math.pi) * sigma)
    weights /= weights.sum()
    py = width * math.sin(math.radians(angle_deg))
    px = width * math.cos(math.radians(angle_deg))
    hyp = math.hypot(py, px)
    taps: list[tuple[int, int, float]] = []
    for i in range(width):
        dy = -math.ceil(i * py / hyp - 0.5)
        dx = -math.ceil(i * px / hyp - 0.5)
        if abs(dy) >= shape_hw[0] or abs(dx) >= shape_hw[1]:
            break
        taps.append((dy, dx, float(weights[i])))
    reach = max([max(abs(dy), abs(dx)) for dy, dx, _ in taps] + [0])
    kernel = np.zeros((2 * reach + 1, 2 * reach + 1), np.float64)
    # a shift by (dy, dx) reads the source at (y − dy, x − dx)
    for dy, dx, wgt in taps:
        kernel[reach - dy, reach - dx] += wgt
    return kernel, reach


def motion_blur(x: np.ndarray, radius: int, sigma: float, angle_deg: float) -> np.ndarray:
    """Sum of edge-replicated shifts of ``x`` (2-D or H×W×C) weighted by the line
    kernel, as float64."""
    kernel, reach = motion_kernel(radius, sigma, angle_deg, x.shape[:2])
    src = np.asarray(x, dtype=np.float64)
    return cv2.filter2D(src, cv2.CV_64F, kernel, anchor=(reach, reach),
                        borderType=cv2.BORDER_REPLICATE)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """Textbook RGB -> HSV on floats in [0, 1] (hue in [0, 1), s = 0 for grey),
    with the same tie-breaking as scikit-image (blue wins over green over red)."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = np.maximum(np.maximum(r, g), b)
    delta = v - np.minimum(np.minimum(r, g), b)
    grey = delta == 0.0
    safe_delta = np.where(grey, 1.0, delta)
    s = np.where(grey, 0.0, delta / np.where(grey, 1.0, v))
    h = np.where(g == v, 2.0 + (b - r) / safe_delta, (g - b) / safe_delta)
    h = np.where(b == v, 4.0 + (r - g) / safe_delta, h)
    h = (h / 6.0) % 1.0
    h[grey] = 0.0
    return np.stack((h, s, v), axis=-1)


# which of (v, t, p, q) each of R, G, B takes in hue sectors 0..5
_SECTOR_PICK = np.array([[0, 3, 2, 2, 1, 0],
                         [1, 0, 0, 3, 2, 2],
                         [2, 2, 1, 0, 0, 3]], dtype=np.intp)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """Textbook HSV -> RGB (same p, q, t arithmetic as scikit-image)."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    sector = np.floor(h * 6)
    f = h * 6 - sector
    values = np.stack((v, v * (1 - (1 - f) * s), v * (1 - s), v * (1 - f * s))).reshape(4, -1)
    pick = _SECTOR_PICK[:, sector.astype(np.uint8).ravel() % 6]  # (3, N)
    out = values[pick, np.arange(values.shape[1])]
    return np.ascontiguousarray(out.T).reshape(hsv.shape)
