"""Photometric and digital corruptions: brightness, contrast, saturate,
jpeg_compression, pixelate, elastic_transform."""

from __future__ import annotations

import io
from typing import Any

import cv2
import numba
import numpy as np
from PIL import Image
from scipy import ndimage

from vlmrobust.builders.corruptions import hsv, resize
from vlmrobust.builders.corruptions.draws import Draws

BRIGHTNESS = (0.1, 0.2, 0.3, 0.4, 0.5)
CONTRAST = (0.4, 0.3, 0.2, 0.1, 0.05)
SATURATE = ((0.3, 0.0), (0.1, 0.0), (2.0, 0.0), (5.0, 0.1), (20.0, 0.2))  # gain, offset
JPEG_QUALITY = (25, 18, 15, 10, 7)
PIXELATE = (0.6, 0.5, 0.4, 0.3, 0.25)
ELASTIC_ALPHA = tuple(250 * a for a in (0.05, 0.065, 0.085, 0.1, 0.12))


def brightness(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """V = clip(V + c) in HSV, byte for byte the reference's float64 round trip
    (``hsv.py``: V, p and the middle channel only)."""
    return hsv.hsv_adjust(x, saturation=False, gain=1.0, offset=BRIGHTNESS[severity - 1])


def contrast(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """(x − mean)·c + mean per channel: each channel is a function of its own
    value, so one 256-entry table per channel does the whole image."""
    c = CONTRAST[severity - 1]
    means = np.asarray(cv2.mean(x)[:3]) / 255.0
    levels = np.arange(256, dtype=np.float64)[:, None] / 255.0
    table = np.clip((levels - means) * c + means, 0, 1) * 255
    return cv2.LUT(np.ascontiguousarray(x), table.astype(np.uint8).reshape(256, 1, 3))


def saturate(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """S = clip(S·gain + offset) in HSV, byte for byte the reference's float64
    round trip: float64 throughout, because the new channel values land
    exactly on integers for many pixels (all of them at gain 2) and there the
    reference's own roundings decide the byte; ``hsv.py`` repeats them for V,
    p and the middle channel only."""
    gain, offset = SATURATE[severity - 1]
    return hsv.hsv_adjust(x, saturation=True, gain=gain, offset=offset)


def jpeg_compression(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Encode and decode as JPEG at the severity's quality, the reference's
    Pillow round trip (libjpeg-turbo: IJG tables, 4:2:0 chroma, integer DCT,
    fancy upsampling). OpenCV's encoder writes Pillow's bytes (same
    libjpeg-turbo settings) in 0.7x its time; the decoder is simplejpeg's
    (the ``build`` extra: 0.8x OpenCV's, 0.4x Pillow's), else OpenCV's; the
    tests check both decoders give Pillow's pixels."""
    quality = JPEG_QUALITY[severity - 1]
    ok, encoded = cv2.imencode(".jpg", cv2.cvtColor(np.ascontiguousarray(x), cv2.COLOR_RGB2BGR),
                               [cv2.IMWRITE_JPEG_QUALITY, quality])
    decoded = decode_jpeg_rgb(encoded) if ok else None
    if decoded is None:  # pragma: no cover - OpenCV built without JPEG
        buf = io.BytesIO()
        Image.fromarray(x).save(buf, "JPEG", quality=quality)
        with Image.open(buf) as im:
            return np.asarray(im.convert("RGB"))
    return decoded


def _simplejpeg_decoder() -> Any:
    try:
        from simplejpeg import decode_jpeg
    except ImportError:
        return None
    return decode_jpeg


def decode_jpeg_rgb(encoded: np.ndarray, decoder: Any = ...) -> np.ndarray | None:
    """RGB pixels of a JPEG (uint8 buffer) by the fastest decoder installed;
    ``decoder=None`` forces OpenCV's."""
    if decoder is ...:
        decoder = _SIMPLEJPEG
    if decoder is not None:
        return np.asarray(decoder(encoded, "RGB"))
    if hasattr(cv2, "IMREAD_COLOR_RGB"):
        return cv2.imdecode(encoded, cv2.IMREAD_COLOR_RGB)
    bgr = cv2.imdecode(encoded, cv2.IMREAD_COLOR)  # pragma: no cover - OpenCV < 4.11
    return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)  # pragma: no cover


_SIMPLEJPEG = _simplejpeg_decoder()


def pixelate(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Pillow's BOX resize to c·(W, H) then NEAREST back, the reference's two
    PIL resizes, as one pair of compiled passes (``resize.py``: same pixels)."""
    h, w = x.shape[:2]
    c = PIXELATE[severity - 1]
    # at least one block per axis, so that tiny images still work
    return resize.box_down_nearest_up(x, max(1, int(w * c)), max(1, int(h * c)))


def elastic_transform(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    """Resample along a smooth random displacement field (Simard et al.):
    uniform noise blurred with σ = 1 % of the image side, scaled by α."""
    f = x.astype(np.float32) / 255.0
    h, w = f.shape[:2]
    sigma = np.array([h, w]) * 0.01
    alpha = ELASTIC_ALPHA[severity - 1]
    # both amplitudes come from the height in ImageNet-C
    amp = h * 0.005
    fields = []
    for _ in range(2):
        noise = draws.uniform(-amp, amp, (h, w))
        fields.append((ndimage.gaussian_filter(noise, sigma, mode="reflect", truncate=3)
                       * alpha).astype(np.float32))
    dx, dy = fields
    out = np.empty(x.shape, np.uint8)
    _displace(f, dy, dx, out)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _symmetric(i: int, n: int) -> int:  # pragma: no cover
    """Index ``i`` of the half-sample symmetric extension (period 2n) of an
    axis of length n: scipy.ndimage's mode="reflect" for order-1 interpolation
    (checked against map_coordinates in the tests)."""
    i %= 2 * n
    return 2 * n - i - 1 if i >= n else i


@numba.njit(cache=True, nogil=True)
def _displace(f: np.ndarray, dy: np.ndarray, dx: np.ndarray,
              out: np.ndarray) -> None:  # pragma: no cover
    """uint8(clip(map_coordinates(f[..., c], (y + dy, x + dx), order=1,
    mode="reflect"), 0, 1)·255) for the three channels at once, with scipy's
    arithmetic: weights (1 − t, 1 − (1 − t)), the four terms summed in C order
    in float64, each pixel stored as float32."""
    h, w = f.shape[0], f.shape[1]
    for i in range(h):
        for j in range(w):
            cy = np.float64(i) + np.float64(dy[i, j])
            cx = np.float64(j) + np.float64(dx[i, j])
            fy = np.floor(cy)
            fx = np.floor(cx)
            wy0 = 1.0 - (cy - fy)
            wy1 = 1.0 - wy0
            wx0 = 1.0 - (cx - fx)
            wx1 = 1.0 - wx0
            y0 = int(fy)
            x0 = int(fx)
            ya, yb = _symmetric(y0, h), _symmetric(y0 + 1, h)
            xa, xb = _symmetric(x0, w), _symmetric(x0 + 1, w)
            for c in range(3):
                t = 0.0
                t += np.float64(f[ya, xa, c]) * wy0 * wx0
                t += np.float64(f[ya, xb, c]) * wy0 * wx1
                t += np.float64(f[yb, xa, c]) * wy1 * wx0
                t += np.float64(f[yb, xb, c]) * wy1 * wx1
                v = np.float32(t)
                v = min(max(v, np.float32(0.0)), np.float32(1.0)) * np.float32(255.0)
                out[i, j, c] = np.uint8(v)
