"""Bootstrap over clusters (Bench-C source questions): the 96 corrupted copies
of one question are not independent samples, so a resample draws questions
with replacement and keeps every copy of each drawn question.

With cluster multiplicities w_b(q) (how often resample b drew question q), a
κ-weighted cell mean is  x̄_c,b = Σ_q w_b(q)·Σ_{i∈q,c} κ_i·x_i / Σ_q w_b(q)·Σ_{i∈q,c} κ_i,
and the aggregate is the mean over the cells that hold a question in resample b.
Both sums are per (question, cell) totals, so a resample costs one (B × Q) by
(Q × C) product, whatever the number of copies.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

# (resamples × clusters) multiplicities are drawn in blocks of at most this many cells.
_BLOCK = 4_000_000


def cluster_ids(keys: Sequence[Hashable] | NDArray[Any]) -> tuple[NDArray[np.int64], int]:
    """Dense cluster indices 0..Q−1 in order of first appearance, and Q.

    >>> ids, q = cluster_ids([("s", "b"), ("s", "a"), ("s", "b"), ("t", "b")])
    >>> ids.tolist(), q
    ([0, 1, 0, 2], 3)
    """
    # A list of tuples stays a list: np.asarray would make it 2-D.
    seq = keys.tolist() if isinstance(keys, np.ndarray) else list(keys)
    index: dict[object, int] = {}
    out = np.fromiter((index.setdefault(k, len(index)) for k in seq), dtype=np.int64,
                      count=len(seq))
    return out, len(index)


def cluster_multiplicities(n_clusters: int, n_resamples: int, seed: int,
                           ) -> NDArray[np.float64]:
    """(n_resamples, n_clusters) draw counts: each row is a multinomial draw of
    n_clusters items with replacement (rows sum to n_clusters).

    >>> w = cluster_multiplicities(5, 3, seed=0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 5), [5.0, 5.0, 5.0])
    """
    if n_clusters < 0 or n_resamples < 1:
        raise ValueError("n_clusters must be >= 0 and n_resamples >= 1")
    rng = np.random.default_rng(seed)
    out = np.zeros((n_resamples, n_clusters))
    if n_clusters == 0:
        return out
    step = max(1, _BLOCK // n_clusters)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        idx = rng.integers(0, n_clusters, size=(stop - start, n_clusters))
        flat = (np.arange(stop - start)[:, None] * n_clusters + idx).ravel()
        out[start:stop] = np.bincount(flat, minlength=(stop - start) * n_clusters).reshape(
            stop - start, n_clusters)
    return out


def _check(values: NDArray[np.float64], kappa: NDArray[np.float64], cells: NDArray[np.int64],
           clusters: NDArray[np.int64], n_cells: int, n_clusters: int) -> None:
    if not (values.shape == kappa.shape == cells.shape == clusters.shape) or values.ndim != 1:
        raise ValueError("values, kappa, cells and clusters must be 1-D of one length")
    if cells.size and (cells.min() < 0 or cells.max() >= n_cells):
        raise ValueError(f"cells must be in [0, {n_cells})")
    if clusters.size and (clusters.min() < 0 or clusters.max() >= n_clusters):
        raise ValueError(f"clusters must be in [0, {n_clusters})")
    if not (np.isfinite(values).all() and np.isfinite(kappa).all()) or (kappa < 0).any():
        raise ValueError("values and kappa must be finite, kappa >= 0")


def cell_mean_replicates(values: ArrayLike, kappa: ArrayLike, cells: ArrayLike,
                         clusters: ArrayLike, n_cells: int, weights: NDArray[np.float64],
                         ) -> NDArray[np.float64]:
    """Per resample (row of ``weights``, shape (B, Q)): the mean over cells of the
    κ-weighted cell means (NaN when no cell holds a drawn question). With
    κ = 1 these are plain cell means. A row of ones gives the point estimate.

    >>> x = [1.0, 0.0, 1.0, 1.0]; k = [1.0, 1.0, 1.0, 1.0]
    >>> cells = [0, 1, 0, 1]; q = [0, 0, 1, 1]
    >>> cell_mean_replicates(x, k, cells, q, 2, np.array([[1.0, 1.0], [2.0, 0.0]])).tolist()
    [0.75, 0.5]
    """
    x = np.asarray(values, dtype=np.float64)
    k = np.asarray(kappa, dtype=np.float64)
    c = np.asarray(cells, dtype=np.int64)
    g = np.asarray(clusters, dtype=np.int64)
    n_clusters = weights.shape[-1]
    _check(x, k, c, g, n_cells, n_clusters)
    flat = g * n_cells + c
    num = np.bincount(flat, weights=k * x, minlength=n_clusters * n_cells).reshape(n_clusters,
                                                                                   n_cells)
    den = np.bincount(flat, weights=k, minlength=n_clusters * n_cells).reshape(n_clusters,
                                                                               n_cells)
    num_b, den_b = weights @ num, weights @ den
    # A cell whose drawn questions all have κ = 0 has no weighted mean.
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(den_b > 0, num_b / np.where(den_b > 0, den_b, 1.0), np.nan)
    held = ~np.isnan(means)
    count = held.sum(axis=1)
    total = np.where(held, means, 0.0).sum(axis=1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def mean_replicates(values: ArrayLike, clusters: ArrayLike, weights: NDArray[np.float64],
                    ) -> NDArray[np.float64]:
    """Per resample: the plain mean of every row, rows weighted by their cluster's
    multiplicity (Σ_q w(q)·Σ_{i∈q} x_i / Σ_q w(q)·n_q).

    >>> mean_replicates([1.0, 0.0, 1.0], [0, 0, 1], np.array([[1.0, 1.0], [0.0, 2.0]])).tolist()
    [0.6666666666666666, 1.0]
    """
    x = np.asarray(values, dtype=np.float64)
    g = np.asarray(clusters, dtype=np.int64)
    zeros = np.zeros(x.shape, dtype=np.int64)
    return cell_mean_replicates(x, np.ones(x.shape), zeros, g, 1, weights)


def percentile_interval(replicates: NDArray[np.float64], level: float,
                        ) -> tuple[float, float] | None:
    """[q((1−level)/2), q((1+level)/2)] over the finite replicates; None without any.

    >>> [round(v, 9) for v in percentile_interval(np.arange(101.0), 0.9)]
    [5.0, 95.0]
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    ok = replicates[np.isfinite(replicates)]
    if ok.size == 0:
        return None
    lo, hi = np.quantile(ok, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)
