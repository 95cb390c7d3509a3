"""Pixelate's resize pair, Pillow's pixels without Pillow's copies.

The reference pixelates with ``img.resize(small, Image.BOX)`` then
``.resize(full, Image.NEAREST)`` (imagecorruptions 1.1.2, ``pixelate``). Pillow
stores RGB as four bytes a pixel, so each PIL round trip copies the image in
and out; here the two resizes run straight on the (H, W, 3) array in one
compiled pass each, with Pillow's own arithmetic:

* BOX: Pillow's ``precompute_coeffs`` gives every output pixel the input pixels
  whose centres fall in its box, weight 1/n each as a 22-bit fixed-point
  integer K = int(0.5 + 2²²/n), then ``(2²¹ + Σ x·K) >> 22``, horizontally
  into a uint8 row buffer, then vertically. ``box_plan`` repeats that double
  arithmetic; all n weights of a box are equal, so Σ x·K = K·Σ x exactly.
* NEAREST: the source row and column of each output pixel are asked of Pillow
  itself, once per (small, full) size pair, on a one-row and a one-column int32
  image (Pillow's scale-only affine table is the same for every pixel type).

The tests compare both against Pillow on many sizes and every severity.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from PIL import Image

_BITS = 22  # Pillow's PRECISION_BITS for 8-bit images (32 - 8 - 2)


@functools.lru_cache(maxsize=64)
def box_plan(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(first input index, count, fixed-point weight K) of each output pixel of
    Pillow's BOX resize from ``n_in`` to ``n_out`` pixels, or None when a box is
    not one run of input pixels (never seen; the caller then uses Pillow).

    >>> first, count, k = box_plan(5, 2)
    >>> first.tolist(), count.tolist(), k.tolist()
    ([0, 3], [3, 2], [1398101, 2097152])
    """
    scale = float(np.float32(n_in)) / n_out  # (double)(in1 - in0) / outSize
    filterscale = max(scale, 1.0)
    support = 0.5 * filterscale
    inv = 1.0 / filterscale
    first = np.empty(n_out, np.int64)
    count = np.empty(n_out, np.int64)
    weight = np.empty(n_out, np.int64)
    for xx in range(n_out):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), n_in) - xmin
        taken = [x + xmin for x in range(xmax)
                 if -0.5 < ((x + xmin) - center + 0.5) * inv <= 0.5]
        if not taken or taken != list(range(taken[0], taken[0] + len(taken))):
            return None
        first[xx], count[xx] = taken[0], len(taken)
        weight[xx] = int(0.5 + (1.0 / len(taken)) * (1 << _BITS))
    return first, count, weight


@functools.lru_cache(maxsize=64)
def nearest_index(n_small: int, n_full: int, axis: int) -> np.ndarray | None:
    """The source index of each of ``n_full`` pixels along ``axis`` (1: columns,
    0: rows) in Pillow's NEAREST resize from ``n_small``, read from Pillow on a
    one-row or one-column int32 image; None if Pillow left a pixel unfilled.

    >>> nearest_index(2, 5, 1).tolist()
    [0, 0, 1, 1, 1]
    """
    line = np.arange(1, n_small + 1, dtype=np.int32)
    size = (n_full, 1) if axis == 1 else (1, n_full)
    image = Image.fromarray(line[None, :] if axis == 1 else line[:, None], "I")
    got = np.asarray(image.resize(size, Image.Resampling.NEAREST)).reshape(-1).astype(np.int64)
    return None if (got == 0).any() else got - 1


@numba.njit(cache=True, nogil=True)
def _box_rows(x: np.ndarray, first: np.ndarray, count: np.ndarray, weight: np.ndarray,
              y0: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Horizontal BOX pass over rows y0.. of x into out (rows, n_out, 3).

    Per row, level t holds the sums of t + 1 consecutive pixels at every
    start, each level one contiguous (vectorised) pass over the row; a box of
    n pixels then reads its sums from level n - 1."""
    half = 1 << (_BITS - 1)
    w3 = x.shape[1] * 3
    n_out = first.shape[0]
    flat = x.reshape(x.shape[0], w3)
    flat_out = out.reshape(out.shape[0], n_out * 3)
    levels = np.empty((count.max(), w3), np.int32)
    for r in range(out.shape[0]):
        row = flat[y0 + r]
        for j in range(w3):
            levels[0, j] = row[j]
        for t in range(1, levels.shape[0]):
            for j in range(w3 - 3 * t):
                levels[t, j] = levels[t - 1, j] + row[j + 3 * t]
        o = flat_out[r]
        for xx in range(n_out):
            sums = levels[count[xx] - 1]
            b = first[xx] * 3
            k = weight[xx]
            for c in range(3):
                o[3 * xx + c] = min((sums[b + c] * k + half) >> _BITS, 255)


@numba.njit(cache=True, nogil=True)
def _box_columns_then_nearest(tmp: np.ndarray, first: np.ndarray, count: np.ndarray,
                              weight: np.ndarray, y0: int, ix: np.ndarray, iy: np.ndarray,
                              out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Vertical BOX pass of tmp (rows from y0), one small row at a time,
    spread over its full-size row; the rows NEAREST maps to the same small row
    are copies of it."""
    half = 1 << (_BITS - 1)
    n = tmp.shape[1] * 3
    flat = tmp.reshape(tmp.shape[0], n)
    w3 = out.shape[1] * 3
    flat_out = out.reshape(out.shape[0], w3)
    acc = np.empty(n, np.int32)
    small = np.empty(n, np.uint8)
    done = -1
    for yy in range(out.shape[0]):
        src = iy[yy]
        o = flat_out[yy]
        if src == done:
            above = flat_out[yy - 1]
            for j in range(w3):
                o[j] = above[j]
            continue
        acc[:] = 0
        for r in range(first[src] - y0, first[src] - y0 + count[src]):
            row = flat[r]
            for j in range(n):
                acc[j] += row[j]
        k = weight[src]
        for j in range(n):
            small[j] = min((acc[j] * k + half) >> _BITS, 255)
        for xo in range(ix.shape[0]):
            s = ix[xo] * 3
            o[3 * xo] = small[s]
            o[3 * xo + 1] = small[s + 1]
            o[3 * xo + 2] = small[s + 2]
        done = src


def box_down_nearest_up(x: np.ndarray, small_w: int, small_h: int) -> np.ndarray:
    """``Image.fromarray(x).resize((small_w, small_h), BOX).resize((W, H),
    NEAREST)`` as an array, for (H, W, 3) uint8 ``x``."""
    h, w = x.shape[:2]
    cols, rows = box_plan(w, small_w), box_plan(h, small_h)
    ix, iy = nearest_index(small_w, w, 1), nearest_index(small_h, h, 0)
    if cols is None or rows is None or ix is None or iy is None:  # pragma: no cover - never seen
        small = Image.fromarray(x).resize((small_w, small_h), Image.Resampling.BOX)
        return np.asarray(small.resize((w, h), Image.Resampling.NEAREST))
    x = np.ascontiguousarray(x)
    y0 = int(rows[0][0])
    y1 = int(rows[0][-1] + rows[1][-1])
    tmp = np.empty((y1 - y0, small_w, 3), np.uint8)
    _box_rows(x, *cols, y0, tmp)
    out = np.empty((h, w, 3), np.uint8)
    _box_columns_then_nearest(tmp, *rows, y0, ix, iy, out)
    return out
