"""Weather corruptions: fog (plasma fractal), frost (photos of frost shipped
inside the imagecorruptions package), snow, spatter."""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path

import cv2
import numba
import numpy as np

from vlmrobust.builders.corruptions import filters, kernels
from vlmrobust.builders.corruptions.draws import Draws
from vlmrobust.core.errors import VlmrobustError

FOG = ((1.5, 2.0), (2.0, 2.0), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4))  # strength, wibble decay
FROST = ((1.0, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75))  # image, frost weight
# The reference lists six frost photos but draws from the first five only.
FROST_FILES = ("frost1.png", "frost2.png", "frost3.png", "frost4.jpg", "frost5.jpg")
# loc, scale, zoom, threshold, blur radius, blur sigma, image weight
SNOW = (
    (0.1, 0.3, 3.0, 0.5, 10, 4, 0.8),
    (0.2, 0.3, 2.0, 0.5, 12, 4, 0.7),
    (0.55, 0.3, 4.0, 0.9, 12, 8, 0.7),
    (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
    (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
)
# loc, scale, sigma, threshold, intensity, mud (1) or water (0)
SPATTER = (
    (0.65, 0.3, 4, 0.69, 0.6, 0),
    (0.65, 0.3, 3, 0.68, 0.6, 0),
    (0.65, 0.3, 2, 0.68, 0.5, 0),
    (0.65, 0.3, 1, 0.65, 1.5, 1),
    (0.67, 0.4, 1, 0.65, 1.5, 1),
)
WATER_RGB = np.array([175, 238, 238], np.float32) / np.float32(255)
MUD_RGB = np.array([63, 42, 20], np.float64) / 255.0


def plasma(size: int, decay: float, draws: Draws) -> np.ndarray:
    """Diamond-square height map of side ``size`` (a power of two), scaled to
    [0, 1]. Each new point is the mean of its 4 neighbours plus uniform noise
    of amplitude w² (w starts at 100 and is divided by ``decay`` per level);
    draws per level: square centres, then edge points on corner rows, then on
    centre rows. The draws come first (the arithmetic takes none), then one
    compiled pass does the reference's float64 operations in its order."""
    amps: list[float] = []
    noise: list[np.ndarray] = []
    step, amp = size, 100.0
    while step >= 2:
        n = size // step
        amps.append(amp)
        noise.extend(np.asarray(draws.uniform(-amp, amp, (n, n)), np.float64).reshape(-1)
                     for _ in range(3))
        step //= 2
        amp /= decay
    grid = np.zeros((size, size), np.float64)
    _diamond_square(np.array(amps), np.concatenate(noise), grid)
    grid -= grid.min()
    return grid / grid.max()


@numba.njit(cache=True, nogil=True)
def _diamond_square(amps: np.ndarray, noise: np.ndarray, grid: np.ndarray) -> None:  # pragma: no cover
    """The reference's numpy rolls as index arithmetic: per level with corners
    K (every step-th point) and centres C, C = ((K[i,j] + K[i+1,j]) +
    (K[i,j+1] + K[i+1,j+1]))/4 + amp·u, then the edge points
    ((C[i,j] + C[i−1,j]) + (K[i,j] + K[i,j+1]))/4 + amp·u on corner rows and
    ((C[i,j] + C[i,j−1]) + (K[i,j] + K[i+1,j]))/4 + amp·u on centre rows,
    indices modulo the level's side."""
    size = grid.shape[0]
    step = size
    at = 0
    for amp in amps:
        half = step // 2
        n = size // step
        for i in range(n):
            y, y1 = i * step, ((i + 1) % n) * step
            for j in range(n):
                x, x1 = j * step, ((j + 1) % n) * step
                around = (grid[y, x] + grid[y1, x]) + (grid[y, x1] + grid[y1, x1])
                grid[y + half, x + half] = around / 4 + amp * noise[at + i * n + j]
        at += n * n
        for i in range(n):
            y, y0 = i * step, ((i - 1) % n) * step
            for j in range(n):
                x, x1 = j * step, ((j + 1) % n) * step
                top = (grid[y + half, x + half] + grid[y0 + half, x + half]) + (grid[y, x] + grid[y, x1])
                grid[y, x + half] = top / 4 + amp * noise[at + i * n + j]
        at += n * n
        for i in range(n):
            y, y1 = i * step, ((i + 1) % n) * step
            for j in range(n):
                x, x0 = j * step, ((j - 1) % n) * step
                left = (grid[y + half, x + half] + grid[y + half, x0 + half]) + (grid[y, x] + grid[y1, x])
                grid[y + half, x] = left / 4 + amp * noise[at + i * n + j]
        at += n * n
        step = half


def fog(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    strength, decay = FOG[severity - 1]
    h, w = x.shape[:2]
    # the reference sizes the map from max(H, W, channels)
    size = 1 << (max(h, w, x.shape[2]) - 1).bit_length()
    peak = x.max() / 255.0
    out = np.empty(x.shape, np.uint8)
    _fog_mix(np.ascontiguousarray(x), plasma(size, decay, draws), peak, strength, out)
    return out


@numba.njit(cache=True, nogil=True)
def _fog_mix(x: np.ndarray, plasma: np.ndarray, peak: float, strength: float,
             out: np.ndarray) -> None:  # pragma: no cover
    """uint8(clip((x/255 + strength·plasma)·peak/(peak + strength), 0, 1)·255),
    the reference's float64 operations in its order, a row at a time: the haze
    is spread over the row's interleaved channels first so that the main loop
    runs over contiguous values and vectorises."""
    denom = peak + strength
    w3 = x.shape[1] * 3
    haze = np.empty(w3)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            hz = strength * plasma[i, j]
            haze[3 * j] = hz
            haze[3 * j + 1] = hz
            haze[3 * j + 2] = hz
        src = x[i].reshape(-1)
        dst = out[i].reshape(-1)
        for m in range(w3):
            v = (kernels.div_exact(np.float64(src[m]), 255.0, kernels.INV255) + haze[m]) * peak / denom
            dst[m] = np.uint8(np.int32(min(max(v, 0.0), 1.0) * 255.0))


@numba.njit(cache=True, nogil=True)
def _water_mix(x: np.ndarray, mask: np.ndarray, colour: np.ndarray,
               out: np.ndarray) -> None:  # pragma: no cover
    """uint8(clip(x/255 + mask·colour, 0, 1)·255) in float32, as the reference,
    a row at a time over the interleaved values (see ``_fog_mix``)."""
    scale = np.float32(255.0)
    w3 = x.shape[1] * 3
    tint = np.empty(w3, np.float32)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            m = mask[i, j]
            for c in range(3):
                tint[3 * j + c] = m * colour[c]
        src = x[i].reshape(-1)
        dst = out[i].reshape(-1)
        for k in range(w3):
            v = np.float32(src[k]) / scale + tint[k]
            dst[k] = np.uint8(np.int32(min(max(v, np.float32(0.0)), np.float32(1.0)) * scale))


@numba.njit(cache=True, nogil=True)
def _mud_mix(x: np.ndarray, blot: np.ndarray, colour: np.ndarray,
             out: np.ndarray) -> None:  # pragma: no cover
    """uint8(clip(x/255·(1 − blot) + colour·blot, 0, 1)·255): the image part in
    float32, the sum in float64, as the reference's dtypes fall; a row at a
    time over the interleaved values."""
    scale = np.float32(255.0)
    w3 = x.shape[1] * 3
    keep = np.empty(w3, np.float32)
    tint = np.empty(w3, np.float64)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            b = blot[i, j]
            for c in range(3):
                keep[3 * j + c] = np.float32(1.0) - b
                tint[3 * j + c] = colour[c] * np.float64(b)
        src = x[i].reshape(-1)
        dst = out[i].reshape(-1)
        for k in range(w3):
            f = np.float32(src[k]) / scale * keep[k]
            v = np.float64(f) + tint[k]
            dst[k] = np.uint8(np.int32(min(max(v, 0.0), 1.0) * 255.0))


def _frost_dir() -> Path:
    spec = importlib.util.find_spec("imagecorruptions")
    if spec is None or not spec.submodule_search_locations:
        raise VlmrobustError(
            "frost needs the frost photos shipped in imagecorruptions; "
            "install it with 'pip install imagecorruptions==1.1.2'"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "frost"


@functools.lru_cache(maxsize=64)
def frost_layer(index: int, h: int, w: int) -> np.ndarray:
    """Frost photo ``index`` (BGR) bicubically scaled to cover (h, w) with a 10 %
    margin, as the reference scales it."""
    path = _frost_dir() / FROST_FILES[index]
    img = cv2.imread(str(path))
    if img is None:
        raise VlmrobustError(f"cannot read frost image {path}; reinstall imagecorruptions")
    fh, fw = img.shape[:2]
    if fh >= h and fw >= w:
        scale = 1.0
    elif fh < h and fw >= w:
        scale = h / fh
    elif fh >= h and fw < w:
        scale = w / fw
    else:
        scale = max(h / fh, w / fw)
    scale *= 1.1
    size = (math.ceil(fw * scale), math.ceil(fh * scale))
    out = cv2.resize(img, dsize=size, interpolation=cv2.INTER_CUBIC)
    out.setflags(write=False)
    return out


def frost(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    w_img, w_frost = FROST[severity - 1]
    index = int(draws.integers(0, len(FROST_FILES)))
    h, w = x.shape[:2]
    layer = frost_layer(index, h, w)
    top = int(draws.integers(0, layer.shape[0] - h))
    left = int(draws.integers(0, layer.shape[1] - w))
    out = np.empty((h, w, 3), np.uint8)
    _blend(np.ascontiguousarray(x), layer[top:top + h, left:left + w], w_img, w_frost, out)
    return out


@numba.njit(cache=True, nogil=True)
def _blend(x: np.ndarray, bgr: np.ndarray, w_img: float, w_frost: float,
           out: np.ndarray) -> None:  # pragma: no cover - compiled
    """uint8(clip(w_img·x + w_frost·rgb, 0, 255)) with rgb the BGR patch's
    channels reversed: the reference's float64 expression and truncation in
    one pass (four whole float64 images at 1024x768 made frost 1.9x the
    reference; this is the same arithmetic per value)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            for c in range(3):
                v = w_img * np.float64(x[i, j, c]) + w_frost * np.float64(bgr[i, j, 2 - c])
                out[i, j, c] = np.uint8(min(max(v, 0.0), 255.0))


def snow(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    loc, scale, zoom, thresh, radius, sigma, keep = SNOW[severity - 1]
    f = x.astype(np.float32) / 255.0
    h, w = f.shape[:2]
    flakes = draws.normal(loc, scale, (h, w))
    flakes = filters.center_zoom(flakes, zoom)
    flakes[flakes < thresh] = 0
    flakes = np.clip(flakes, 0, 1)
    # the streaks are blurred on the whole zoomed layer, then cropped
    flakes = filters.motion_blur(flakes, radius, sigma, float(draws.uniform(-135, -45)))
    flakes = (np.round(flakes * 255).astype(np.uint8) / 255.0)[:h, :w, None]
    grey = cv2.cvtColor(f, cv2.COLOR_RGB2GRAY)[..., None]
    f = keep * f + (1 - keep) * np.maximum(f, grey * 1.5 + 0.5)
    return np.clip(f + flakes + flakes[::-1, ::-1], 0, 1) * 255


def _water_mask(liquid: np.ndarray) -> np.ndarray:
    """Liquid intensity × a shading term from the distance to liquid edges."""
    liquid8 = (liquid * 255).astype(np.uint8)
    far = cv2.distanceTransform(255 - cv2.Canny(liquid8, 50, 150), cv2.DIST_L2, 5)
    _, far = cv2.threshold(far, 20, 20, cv2.THRESH_TRUNC)
    shade = cv2.equalizeHist(cv2.blur(far, (3, 3)).astype(np.uint8))
    emboss = np.array([[-2, -1, 0], [-1, 1, 1], [0, 1, 2]])
    shade = cv2.blur(cv2.filter2D(shade, cv2.CV_8U, emboss), (3, 3)).astype(np.float32)
    return liquid8 * shade


def spatter(x: np.ndarray, severity: int, draws: Draws) -> np.ndarray:
    loc, scale, sigma, thresh, intensity, mud = SPATTER[severity - 1]
    liquid = filters.gaussian(draws.normal(loc, scale, x.shape[:2]), sigma, channels=False)
    liquid[liquid < thresh] = 0
    if not mud:
        m = _water_mask(liquid)
        peak = m.max()
        if peak > 0:
            m /= peak
        m *= np.float32(intensity)
        out = np.empty(x.shape, np.uint8)
        _water_mix(np.ascontiguousarray(x), m, WATER_RGB, out)
        return out
    blot = filters.gaussian((liquid > thresh).astype(np.float32), intensity, channels=False)
    blot[blot < 0.8] = 0
    out = np.empty(x.shape, np.uint8)
    _mud_mix(np.ascontiguousarray(x), blot, MUD_RGB, out)
    return out
