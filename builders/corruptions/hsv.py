"""Brightness and saturation as the reference computes them (scikit-image's
float64 rgb2hsv -> change -> hsv2rgb, then uint8(clip(·, 0, 1)·255)), bit for
bit, in one compiled pass per pixel.

Most of scikit-image's work is not needed. The channel holding the maximum
keeps V; the minimum becomes p = V'(1 − S'); only the middle channel needs
the hue, through q = V'(1 − f S') or t = V'(1 − (1 − f) S'). Which of the two,
and the sector, follow from the order of the channels; ties land exactly on
V or p (the hue fraction is exactly 0 there). So the kernel sorts the bytes,
repeats the reference's float64 operations for V, p and the middle channel
only, and places the three results. Every operation whose rounding decides a
byte is the reference's own float64 operation; the two divisions by
constants (by 255 and by 6) are a multiplication plus one fused
multiply-add correction, which gives the correctly rounded quotient for every
input the kernel sees (checked exhaustively in the tests). Float32 would be
faster and right for most pixels, but the new values land exactly on integers
for many of them (all of them at saturate's gain 2), and there only the
reference's own float64 roundings give its byte.
"""

from __future__ import annotations

import cv2
import numba
import numpy as np

from vlmrobust.builders.corruptions.kernels import INV255, div_exact

_INV6 = 1.0 / 6.0


# nnan/ninf/nsz only let min/max and compares skip NaN handling (no NaN or
# infinity can occur); they allow no reassociation or contraction, so every
# rounding stays the reference's.
@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"nnan", "ninf", "nsz"})
def _hsv_kernel(R: np.ndarray, G: np.ndarray, B: np.ndarray, saturation: bool, gain: float,
                offset: float, oR: np.ndarray, oG: np.ndarray,
                oB: np.ndarray) -> None:  # pragma: no cover - compiled
    for i in range(R.shape[0]):
        r = np.int32(R[i])
        g = np.int32(G[i])
        b = np.int32(B[i])
        mx = max(r, g, b)
        mn = min(r, g, b)
        md = max(min(r, g), min(max(r, g), b))
        v = div_exact(np.float64(mx), 255.0, INV255)
        m = div_exact(np.float64(mn), 255.0, INV255)
        d = div_exact(np.float64(md), 255.0, INV255)
        grey = mx == mn
        delta = v - m
        s = 0.0 if grey else delta / (1.0 if grey else v)
        # hue: (base + num/delta)/6 mod 1 with num = ±(mid − min); + when the
        # middle channel follows the maximum in the cycle r -> g -> b -> r
        plus = ((r == mx) & (g > b)) | ((g == mx) & (b > r)) | ((b == mx) & (r > g))
        z = (d - m) / (1.0 if grey else delta)
        base = 4.0 if b == mx else (2.0 if g == mx else 0.0)
        x = base + (z if plus else -z)
        h = div_exact(x, 6.0, _INV6)
        h = h + 1.0 if h < 0.0 else h
        h6 = h * 6.0
        f = h6 - np.floor(h6)
        if saturation:
            s = min(max(s * gain + offset, 0.0), 1.0)
            vv = v
            top = np.int32(mx)  # uint8(m/255·255) is m for every byte (tested)
        else:
            vv = min(max(v + offset, 0.0), 1.0)
            top = np.int32(vv * 255.0)
        # both lie in [0, V'], so the reference's clip changes nothing
        p = np.int32(vv * (1.0 - s) * 255.0)
        mid = np.int32(vv * (1.0 - ((1.0 - f) if plus else f) * s) * 255.0)
        # grey has hue 0: red keeps V', green and blue become p
        oR[i] = np.uint8(top if r == mx else (p if r == mn else mid))
        oG[i] = np.uint8(p if grey else (top if g == mx else (p if g == mn else mid)))
        oB[i] = np.uint8(p if grey else (top if b == mx else (p if b == mn else mid)))


def hsv_adjust(x: np.ndarray, *, saturation: bool, gain: float, offset: float) -> np.ndarray:
    """Brightness (V = clip(V + offset)) or saturation (S = clip(S·gain + offset))
    of an (H, W, 3) uint8 image, byte for byte what the reference computes."""
    h, w = x.shape[:2]
    # planar channels, because the loop vectorises only without interleaving;
    # one buffer for the three inputs and three outputs, because fresh
    # allocations per channel cost a tenth of the whole call
    buf = np.empty((6, h, w), np.uint8)
    cv2.split(np.ascontiguousarray(x), [buf[0], buf[1], buf[2]])
    flat = buf.reshape(6, h * w)
    _hsv_kernel(flat[0], flat[1], flat[2], saturation, float(gain), float(offset),
                flat[3], flat[4], flat[5])
    return cv2.merge([buf[3], buf[4], buf[5]])
