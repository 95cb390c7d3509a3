"""κ, the discriminative power of a Bench-C source question (Bench-C / RAS paper).

For one selector model m and corruption c, let p_k be the fraction of the
severities s = 1..S at which m's top-1 answer is option k. The Gini impurity

    G_{m,c} = 1 − Σ_k p_k²

is 0 when the answer never changes with severity and largest when it spreads
over many options; dividing by its K-class maximum (1 − 1/K) puts it in
[0, 1]. κ(q) is the mean of G_{m,c} / (1 − 1/K) over selectors and corruptions.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def gini_impurity(labels: npt.ArrayLike) -> float:
    """Gini impurity 1 − Σ_k p_k² of a sequence of discrete labels.

    >>> gini_impurity([0, 0, 0, 0, 0])
    0.0
    >>> round(gini_impurity([0, 0, 1, 1, 2]), 4)   # 1 − (4 + 4 + 1)/25
    0.64
    """
    arr = np.asarray(labels).ravel()
    if arr.size == 0:
        raise ValueError("gini_impurity needs at least one label")
    _, counts = np.unique(arr, return_counts=True)
    p = counts / arr.size
    return float(1.0 - np.sum(p * p))


def kappa(predictions: npt.ArrayLike, n_options: int | npt.ArrayLike) -> np.ndarray:
    """κ per question from top-1 predictions of shape (Q, M, C, S): question,
    selector model, corruption, severity.

    κ(q) = mean_{m,c} [1 − Σ_k p_{q,m,c,k}²] / (1 − 1/K_q), with p_{q,m,c,k} the
    share of the S severities at which model m answers option k under
    corruption c, and K_q the question's option count (scalar or (Q,)).

    >>> preds = np.array([[[[0, 0, 0, 0, 0], [0, 0, 1, 1, 2]]]])   # Q=1, M=1, C=2, S=5
    >>> round(float(kappa(preds, 5)[0]), 12)     # (0 + 0.64 / 0.8) / 2
    0.4
    """
    p = np.asarray(predictions)
    if p.ndim != 4:
        raise ValueError(f"predictions must have shape (Q, M, C, S), got {p.shape}")
    if p.shape[3] < 1:
        raise ValueError("predictions need at least one severity")
    if not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"predictions must be integer option indices, got {p.dtype}")
    k = np.broadcast_to(np.asarray(n_options, dtype=np.int64), (p.shape[0],))
    if (k < 2).any():
        raise ValueError("every question needs at least 2 options for κ")
    if (p < 0).any() or (p >= k[:, None, None, None]).any():
        raise ValueError("predictions must be option indices in 0..K−1")
    kmax = int(k.max())
    # counts[q, m, c, j] = how many severities answer option j
    onehot = p[..., None] == np.arange(kmax)
    share = onehot.sum(axis=3) / p.shape[3]
    gini = 1.0 - np.sum(share * share, axis=-1)
    normalised = gini / (1.0 - 1.0 / k)[:, None, None]
    out: np.ndarray = normalised.mean(axis=(1, 2))
    return out
