"""Gaussian and speckle noise drawn straight as output bytes.

The reference draws a float64 N(0, σ²) per value and keeps
``uint8(clip(t, 0, 1)·255)`` of t = x/255 + n (gaussian_noise) or
t = x/255 + x/255·n (speckle_noise), imagecorruptions 1.1.2. That byte is
b with probability P(b ≤ 255·t < b + 1) (b = 0 takes t < 1/255, b = 255 takes
t ≥ 1), a function of the input byte alone:

    gaussian: P(out < b | x) = Φ((b/255 − x/255) / σ)
    speckle:  P(out < b | x) = Φ((b/x − 1) / σ)   (x > 0; x = 0 stays 0)

So the production stream samples each output byte from that distribution,
from a (256 inputs × 256 outputs) Walker alias table: 32 random bits per value,
half a 64-bit draw (8 bits pick a column, 24 compare with its threshold), no float noise
image, no clip, no rounding pass. Column probabilities are exact to 2⁻³²; the
tests compare the tables and the samples with the closed form above.
"""

from __future__ import annotations

import functools

import numba
import numpy as np


def byte_probabilities(scale: float, multiplicative: bool) -> np.ndarray:
    """(256, 256) float64: row x is the distribution of the output byte for
    input byte x (rows sum to 1).

    >>> p = byte_probabilities(0.08, False)
    >>> bool(np.allclose(p.sum(axis=1), 1.0)), int(p[128].argmax())
    (True, 127)
    """
    from scipy.special import ndtr

    if not scale > 0:
        raise ValueError(f"noise scale must be positive, got {scale!r}")
    level = np.arange(256, dtype=np.float64)[:, None]
    edge = np.arange(1, 256, dtype=np.float64)[None, :]  # P(out < b) for b = 1..255
    if multiplicative:
        with np.errstate(divide="ignore"):
            z = (edge / level - 1.0) / scale  # x = 0: +inf, so out is 0
    else:
        z = (edge - level) / 255.0 / scale
    below = ndtr(z)
    cdf = np.concatenate([np.zeros((256, 1)), below, np.ones((256, 1))], axis=1)
    return np.diff(cdf, axis=1)


@numba.njit(cache=True, nogil=True)
def _alias_rows(prob: np.ndarray, table: np.ndarray) -> None:  # pragma: no cover - compiled
    """Vose's alias method per row; table[x, j] = threshold (24 bits) << 8 | alias:
    column j gives j when the low 24 bits of the draw are under the threshold,
    else its alias."""
    n = prob.shape[1]
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    q = np.empty(n, np.float64)
    alias = np.empty(n, np.int64)
    for x in range(prob.shape[0]):
        ns = 0
        nl = 0
        for j in range(n):
            alias[j] = j
            q[j] = prob[x, j] * n
            if q[j] < 1.0:
                small[ns] = j
                ns += 1
            else:
                large[nl] = j
                nl += 1
        while ns > 0 and nl > 0:
            ns -= 1
            s = small[ns]
            g = large[nl - 1]
            alias[s] = g
            q[g] = (q[g] + q[s]) - 1.0
            if q[g] < 1.0:
                nl -= 1
                small[ns] = g
                ns += 1
        # what is left is 1 up to rounding: the column keeps itself
        for k in range(ns):
            q[small[k]] = 1.0
        for k in range(nl):
            q[large[k]] = 1.0
        for j in range(n):
            thr = int(q[j] * 16777216.0 + 0.5)
            if thr >= 16777216:  # always itself: any threshold will do with alias j
                thr = 16777215
                alias[j] = j
            table[x, j] = (np.uint32(thr) << np.uint32(8)) | np.uint32(alias[j])


@functools.lru_cache(maxsize=16)
def alias_table(scale: float, multiplicative: bool) -> np.ndarray:
    """The (256, 256) uint32 alias table of ``byte_probabilities`` (cached:
    one per noise kind and severity, 256 KiB each)."""
    table = np.empty((256, 256), np.uint32)
    _alias_rows(byte_probabilities(scale, multiplicative), table)
    table.setflags(write=False)
    return table


def table_probabilities(table: np.ndarray) -> np.ndarray:
    """The distribution an alias table samples, row by row (for the tests)."""
    thr = (table >> 8).astype(np.float64) / 16777216.0
    alias = (table & 255).astype(np.int64)
    out = thr / 256.0
    rows = np.repeat(np.arange(256), 256)
    np.add.at(out, (rows, alias.reshape(-1)), ((1.0 - thr) / 256.0).reshape(-1))
    return out


@numba.njit(cache=True, nogil=True)
def _sample(levels: np.ndarray, raw: np.ndarray, table: np.ndarray,
            out: np.ndarray) -> None:  # pragma: no cover - compiled
    """Value i takes the low 32 bits of raw[i // 2] when i is even, the high 32
    bits when odd: 8 bits pick the column, 24 compare with its threshold."""
    for i in range(levels.shape[0]):
        r = (raw[i >> 1] >> np.uint64(32 * (i & 1))) & np.uint64(0xFFFFFFFF)
        column = r >> np.uint64(24)
        entry = np.uint64(table[levels[i], column])
        keep = (r & np.uint64(0xFFFFFF)) < (entry >> np.uint64(8))
        out[i] = np.uint8(column) if keep else np.uint8(entry & np.uint64(255))


def sample_bytes(levels: np.ndarray, raw: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Output bytes for uint8 ``levels`` from uint64 ``raw`` draws, two values
    a draw (``raw`` holds at least ceil(levels.size / 2))."""
    levels = np.ascontiguousarray(levels)
    if raw.size * 2 < levels.size:
        raise ValueError(f"{raw.size} draws cannot cover {levels.size} values")
    out = np.empty(levels.shape, np.uint8)
    _sample(levels.reshape(-1), raw.reshape(-1), table, out.reshape(-1))
    return out
