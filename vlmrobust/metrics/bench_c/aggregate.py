"""κ-weighted and plain aggregation over a Bench-C benchmark.

Per (corruption, severity) cell c holding questions q with weights κ(q):

    x̄_c = Σ_q κ(q) · x(q) / Σ_q κ(q)

and the benchmark value is the plain mean of x̄_c over the cells. The plain
cell mean (1/N_c) Σ_q x(q) is what the paper's per-cell tables show (its
Table 3 ΔAcc equals (WR − RW)/N in every row); both are reported, named.

The RAS paper's Eq. 11 writes Σ_q κ(q) · x(q) without the Σ κ normaliser; that
sum grows with the number of questions, yet the paper's Table 1 reports values
inside [−1, 1]. We therefore normalise by Σ κ, which keeps every aggregate on
the scale of its per-sample metric (RAS ∈ [−2, 1], ΔAcc ∈ [−1, 1], ...) and
makes benchmarks of different sizes comparable. A cell whose κ are all 0 (no
discriminative question) falls back to the unweighted mean, the limit of equal
weights; an empty cell is NaN and is left out of the mean over cells.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def kappa_weighted_cell_means(
    values: ArrayLike, kappa: ArrayLike, cells: ArrayLike, n_cells: int
) -> NDArray[np.float64]:
    """x̄_c = Σ_{q∈c} κ(q)·x(q) / Σ_{q∈c} κ(q) for c = 0..n_cells−1 (NaN if empty).

    >>> kappa_weighted_cell_means([1.0, 0.0, 5.0], [3.0, 1.0, 0.0], [0, 0, 1], 3).tolist()
    [0.75, 5.0, nan]
    """
    x = np.asarray(values, dtype=np.float64)
    k = np.asarray(kappa, dtype=np.float64)
    c = np.asarray(cells, dtype=np.int64)
    if not (x.shape == k.shape == c.shape) or x.ndim != 1:
        raise ValueError(f"values, kappa and cells must be 1-D of one length, got {x.shape}, {k.shape}, {c.shape}")
    if n_cells < 0 or (c.size and (c.min() < 0 or c.max() >= n_cells)):
        raise ValueError(f"cells must be in [0, {n_cells})")
    if not np.isfinite(k).all() or (k < 0).any():
        raise ValueError("kappa must be finite and >= 0")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite")
    wsum = np.bincount(c, weights=k, minlength=n_cells)
    wx = np.bincount(c, weights=k * x, minlength=n_cells)
    n = np.bincount(c, minlength=n_cells).astype(np.float64)
    sx = np.bincount(c, weights=x, minlength=n_cells)
    with np.errstate(divide="ignore", invalid="ignore"):
        weighted = wx / wsum
        plain = sx / n
    return np.asarray(np.where(wsum > 0, weighted, plain), dtype=np.float64)


def kappa_weighted_mean(values: ArrayLike, kappa: ArrayLike) -> float:
    """Σ κ·x / Σ κ over one group (unweighted mean if Σ κ = 0; NaN if empty).

    >>> kappa_weighted_mean([1.0, 0.0], [1.0, 3.0])
    0.25
    """
    x = np.asarray(values, dtype=np.float64)
    return float(kappa_weighted_cell_means(x, kappa, np.zeros(x.shape, dtype=np.int64), 1)[0])


def mean_over_cells(cell_values: ArrayLike) -> float:
    """Plain mean over the cells that hold at least one question (NaN if none).

    >>> mean_over_cells([0.5, float("nan"), 1.0])
    0.75
    """
    v = np.asarray(cell_values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def plain_cell_means(values: ArrayLike, cells: ArrayLike, n_cells: int) -> NDArray[np.float64]:
    """x̄_c = (1/N_c) Σ_{q∈c} x(q): the paper's per-cell table entries (NaN if empty).
    For ΔAcc this is (WR − RW)/N_c.

    >>> plain_cell_means([1.0, 0.0, 5.0], [0, 0, 1], 3).tolist()
    [0.5, 5.0, nan]
    """
    x = np.asarray(values, dtype=np.float64)
    return kappa_weighted_cell_means(x, np.ones(x.shape), cells, n_cells)
