"""Shared building blocks: Gaussian filtering as scikit-image does it, the
linear zoom of ``scipy.ndimage.zoom(order=1)`` done as two separable gathers,
and motion blur as one sparse line kernel instead of a loop of image shifts."""

from __future__ import annotations

import math

import cv2
import numba
import numpy as np
from scipy import ndimage

_BORDERS = {"nearest": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT}


def gaussian_kernel(sigma: float, truncate: float = 4.0) -> np.ndarray:
    """scipy's 1-D Gaussian: radius int(truncate·σ + 0.5), normalised to sum 1."""
    radius = int(truncate * float(sigma) + 0.5)
    xs = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 / float(sigma) ** 2 * xs**2)
    return phi / phi.sum()


def gaussian(x: np.ndarray, sigma: float, *, channels: bool, mode: str = "nearest",
             truncate: float = 4.0, dtype: type | None = None) -> np.ndarray:
    """``skimage.filters.gaussian`` (= ``scipy.ndimage.gaussian_filter`` with the
    channel axis last unfiltered when ``channels``): nearest border, truncate 4,
    scipy's kernel. The result has ``dtype`` (default: float64, or float32 for
    float32 input). float64 runs scipy's own arithmetic, compiled (bit for bit
    its result, several times faster); float32 is one separable OpenCV pass."""
    if dtype is None:
        dtype = np.float32 if x.dtype == np.float32 else np.float64
    src = np.ascontiguousarray(x)
    if not channels and src.ndim != 2:
        raise ValueError("gaussian without channels needs a 2-D array")
    kernel = gaussian_kernel(sigma, truncate)
    if len(kernel) > 2 * min(src.shape[:2]) - 1 and mode == "reflect":
        # OpenCV cannot reflect more than one image width; scipy can
        sig: float | list[float] = [sigma, sigma, 0.0] if channels else sigma
        return ndimage.gaussian_filter(x, sig, mode=mode, truncate=truncate).astype(
            dtype, copy=False)
    if dtype == np.float64:
        f = src.astype(np.float64, copy=False)
        rows = f.shape[0]
        # the first pass's result and the output in one allocation: separate
        # ones of this size cost a page fault per page here, several times
        # the filtering itself
        work = np.empty((2, rows, f[0].size), np.float64)
        _gauss_rows_cols(f.reshape(rows, -1), f.shape[2] if f.ndim == 3 else 1, kernel,
                         mode == "reflect", work[0], work[1])
        return work[1].reshape(f.shape)
    out = cv2.sepFilter2D(src, cv2.CV_32F, kernel.astype(np.float32), kernel.astype(np.float32),
                          borderType=_BORDERS[mode])
    return out.reshape(src.shape[:2] + ((src.shape[2],) if src.ndim == 3 else ()))


@numba.njit(cache=True, nogil=True, inline="always")
def _edge(i: int, n: int, reflect: bool) -> int:  # pragma: no cover - compiled
    """Index i of an axis of length n extended by scipy's "reflect" (half-sample
    symmetric, period 2n) or "nearest"."""
    if reflect:
        i %= 2 * n
        return 2 * n - 1 - i if i >= n else i
    return min(max(i, 0), n - 1)


@numba.njit(cache=True, nogil=True, inline="always")
def _correlate(flat: np.ndarray, centre: int, lo: np.ndarray, hi: np.ndarray, w: np.ndarray,
               out: np.ndarray) -> None:  # pragma: no cover - compiled
    """out[m] = flat[centre + m]·w[r], then += (flat[lo[d] + m] + flat[hi[d] + m])·w[r − d]
    for d = r … 1: scipy's symmetric correlate1d, value by value in its order.
    Four taps per sweep keep the running sum in a register."""
    n = out.shape[0]
    r = (w.shape[0] - 1) // 2
    c, wr = flat[centre:], w[r]
    for m in range(n):
        out[m] = c[m] * wr
    d = r
    while d >= 4:
        a1, b1, w1 = flat[lo[d]:], flat[hi[d]:], w[r - d]
        a2, b2, w2 = flat[lo[d - 1]:], flat[hi[d - 1]:], w[r - d + 1]
        a3, b3, w3 = flat[lo[d - 2]:], flat[hi[d - 2]:], w[r - d + 2]
        a4, b4, w4 = flat[lo[d - 3]:], flat[hi[d - 3]:], w[r - d + 3]
        for m in range(n):
            acc = out[m]
            acc += (a1[m] + b1[m]) * w1
            acc += (a2[m] + b2[m]) * w2
            acc += (a3[m] + b3[m]) * w3
            acc += (a4[m] + b4[m]) * w4
            out[m] = acc
        d -= 4
    for e in range(d, 0, -1):
        a1, b1, w1 = flat[lo[e]:], flat[hi[e]:], w[r - e]
        for m in range(n):
            out[m] += (a1[m] + b1[m]) * w1


_STRIP = 384  # values per strip of the vertical pass: 3 KiB a row, 147 KiB for 49 rows


@numba.njit(cache=True, nogil=True)
def _gauss_rows_cols(src: np.ndarray, channels: int, w: np.ndarray, reflect: bool,
                     tmp: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """scipy's correlate1d along axis 0, then along axis 1. Rows hold
    W·channels interleaved values; each row of the second pass is copied into
    a line padded by the border rule, so both passes read contiguous values."""
    h, wc = src.shape
    n = wc // channels
    r = (w.shape[0] - 1) // 2
    lo = np.empty(r + 1, np.int64)
    hi = np.empty(r + 1, np.int64)
    flat = src.reshape(-1)
    # the vertical pass reads 2r + 1 rows at once: in strips of _STRIP values
    # they stay in cache (a 1024x768 image's whole rows did not, at sigma 6)
    for s0 in range(0, wc, _STRIP):
        s1 = min(s0 + _STRIP, wc)
        for i in range(h):
            for d in range(1, r + 1):
                lo[d] = _edge(i - d, h, reflect) * wc
                hi[d] = _edge(i + d, h, reflect) * wc
            _correlate(flat[s0:], i * wc, lo, hi, w, tmp[i, s0:s1])
    line = np.empty((n + 2 * r) * channels)
    for d in range(1, r + 1):
        lo[d] = (r - d) * channels
        hi[d] = (r + d) * channels
    for i in range(h):
        row = tmp[i]
        line[r * channels:(r + n) * channels] = row
        for j in range(r):
            left = _edge(j - r, n, reflect) * channels
            right = _edge(n + j, n, reflect) * channels
            for c in range(channels):
                line[j * channels + c] = row[left + c]
                line[(r + n + j) * channels + c] = row[right + c]
        _correlate(line, r * channels, lo, hi, w, out[i])


def _linear_axis(n_in: int, n_out: int, n_keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices and weights of the first ``n_keep`` of ``n_out`` samples
    that ``ndimage.zoom(order=1, grid_mode=False)`` takes along one axis: output
    i sits at input coordinate i·(n_in − 1)/(n_out − 1)."""
    i = np.arange(n_keep, dtype=np.float64)
    coord = i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(i)
    lo = np.clip(np.floor(coord).astype(np.intp), 0, n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w = coord - lo
    return lo.astype(np.uint64), hi.astype(np.uint64), w


@numba.njit(cache=True, nogil=True)
def _bilinear(src: np.ndarray, rlo: np.ndarray, rhi: np.ndarray, rt: np.ndarray,
              clo: np.ndarray, chi: np.ndarray, ct: np.ndarray, out: np.ndarray,
              accumulate: bool) -> None:  # pragma: no cover
    """out (or out +=) a + (b − a)·t along rows, then along columns, per pixel.
    Each output row first interpolates its two source rows once over the whole
    width (contiguous, vectorised), then gathers the columns. Indices are
    unsigned so numba skips its negative-index test."""
    channels = src.shape[2]
    line = np.empty(src.shape[1] * channels, src.dtype)
    for i in range(out.shape[0]):
        top = src[rlo[i]].reshape(-1)
        bottom = src[rhi[i]].reshape(-1)
        t = rt[i]
        for m in range(np.uint64(line.shape[0])):
            line[m] = top[m] + (bottom[m] - top[m]) * t
        row = out[i]
        for j in range(np.uint64(out.shape[1])):
            c0 = clo[j] * channels
            c1 = chi[j] * channels
            u = ct[j]
            for k in range(np.uint64(channels)):
                left = line[c0 + k]
                value = left + (line[c1 + k] - left) * u
                if accumulate:
                    row[j, k] += value
                else:
                    row[j, k] = value


def center_zoom(x: np.ndarray, factor: float, out_hw: tuple[int, int] | None = None,
                add_to: np.ndarray | None = None) -> np.ndarray:
    """Crop the centre 1/factor of ``x`` (H, W[, C]) and zoom it back by ``factor``
    with linear interpolation (ImageNet-C's ``clipped_zoom``). ``out_hw`` keeps
    only the top-left rows/columns of the zoomed result (all when None). With
    ``add_to`` (an (H, W, C) array of ``x``'s dtype, the zoom's size) the result
    is added into it in place and it is returned: zoom blur's running sum
    without a temporary per factor."""
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
    if add_to is not None:
        if add_to.shape != (kh, kw, src.shape[2]) or add_to.dtype != x.dtype:
            raise ValueError("add_to must match the zoom's shape and dtype")
        _bilinear(src, rlo, rhi, rt.astype(x.dtype), clo, chi, ct.astype(x.dtype), add_to,
                  True)
        return add_to
    out = np.empty((kh, kw, src.shape[2]), dtype=x.dtype)
    _bilinear(src, rlo, rhi, rt.astype(x.dtype), clo, chi, ct.astype(x.dtype), out, False)
    if x.ndim == 2:
        out = out[..., 0]
    return out.astype(x.dtype, copy=False)


def motion_taps(radius: int, sigma: float, angle_deg: float, shape_hw: tuple[int, int]
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The line kernel of ImageNet-C motion blur as taps (dy, dx, weight): a
    half-Gaussian (width 2r+1, normalised over the full width) at integer
    offsets along ``angle``; taps stop at the first offset that leaves the image
    (weights are not renormalised, as in the reference)."""
    width = 2 * radius + 1
    weights = np.exp(-np.arange(width, dtype=np.float64) ** 2 / (2 * sigma**2)) / (
        math.sqrt(2 * math.pi) * sigma)
    weights /= weights.sum()
    py = width * math.sin(math.radians(angle_deg))
    px = width * math.cos(math.radians(angle_deg))
    hyp = math.hypot(py, px)
    dys: list[int] = []
    dxs: list[int] = []
    for i in range(width):
        dy = -math.ceil(i * py / hyp - 0.5)
        dx = -math.ceil(i * px / hyp - 0.5)
        if abs(dy) >= shape_hw[0] or abs(dx) >= shape_hw[1]:
            break
        dys.append(dy)
        dxs.append(dx)
    n = len(dys)
    return np.array(dys, np.int64), np.array(dxs, np.int64), weights[:n].copy()


@numba.njit(cache=True, nogil=True)
def _shift_sum(src: np.ndarray, channels: int, dys: np.ndarray, dxs: np.ndarray,
               ws: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """out += w·shift(src, dy, dx) per tap, in tap order, with edge-replicated
    shifts (out[y, x] reads src[y − dy, x − dx] clamped into the image); rows
    of ``src``/``out`` hold W·channels interleaved values."""
    h = src.shape[0]
    w = src.shape[1] // channels
    # rows outer, taps inner: the output row stays in L1 across the taps
    for y in range(h):
        acc = out[y]
        for t in range(ws.shape[0]):
            dy, dx, wt = dys[t], dxs[t], ws[t]
            lo = min(max(dx, 0), w)  # columns left of lo read column 0
            hi = max(min(w + dx, w), lo)  # columns from hi read column w − 1
            row = src[min(max(y - dy, 0), h - 1)]
            for x in range(lo):
                for c in range(channels):
                    acc[x * channels + c] += wt * row[c]
            dst = acc[lo * channels:]
            shifted = row[(lo - dx) * channels:]
            # an unsigned index skips numba's negative-index test, so this vectorises
            for j in range(np.uint64((hi - lo) * channels)):
                dst[j] += wt * shifted[j]
            for x in range(hi, w):
                for c in range(channels):
                    acc[x * channels + c] += wt * row[(w - 1) * channels + c]


def motion_blur(x: np.ndarray, radius: int, sigma: float, angle_deg: float) -> np.ndarray:
    """Sum of edge-replicated shifts of ``x`` (2-D or H×W×C) weighted by the line
    kernel, accumulated in float64 in the reference's order (so its pixels),
    touching only the ≤ 2r+1 taps instead of a dense 2-D kernel."""
    dys, dxs, ws = motion_taps(radius, sigma, angle_deg, x.shape[:2])
    src = np.ascontiguousarray(x)
    channels = src.shape[2] if src.ndim == 3 else 1
    rows = int(src.shape[0])
    out = np.zeros(src.shape, np.float64)
    _shift_sum(src.reshape(rows, -1), channels, dys, dxs, ws, out.reshape(rows, -1))
    return out
