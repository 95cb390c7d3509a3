"""OOD detection metrics (seed 001): AUROC, FPR@95 and NINCO's class-mean AUROC,
each with a two-sample percentile bootstrap CI.

Scores follow one convention: higher means "more in-distribution" (MSP, MCM,
max-logit, −energy: :mod:`vlmrobust.metrics.holistic.ood_scores`). ID rows are the
positives.

Every statistic is computed from the ID scores' sorted distinct values v and
their counts, so a bootstrap replicate only re-counts (O(n) per replicate, no
sort): for an OOD score y, G(y) = #{ID > y} + ½·#{ID = y}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.accuracy import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    _check_resampling,
    _percentiles,
)

DEFAULT_TPR = 0.95
OodMetric = Literal["auroc", "fpr", "class_mean_auroc"]


def _scores(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: AUROC/FPR need at least one ID and one OOD score")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {float(arr[~np.isfinite(arr)][0])!r} "
                         f"at index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
    return arr


def _check_tpr(tpr: float) -> None:
    if isinstance(tpr, bool) or not isinstance(tpr, (int, float)) or not 0.0 < tpr <= 1.0:
        raise ValueError(f"tpr must be in (0, 1], got {tpr!r}")


@dataclass(frozen=True)
class _Layout:
    """ID distinct values and where each OOD score falls among them."""

    id_index: NDArray[np.int64]  # each ID score's position in v
    n_values: int
    ood_lo: NDArray[np.int64]  # searchsorted(v, y, "left")
    ood_hi: NDArray[np.int64]  # searchsorted(v, y, "right")


def _layout(id_s: NDArray[np.float64], ood_s: NDArray[np.float64]) -> _Layout:
    v, inverse = np.unique(id_s, return_inverse=True)
    return _Layout(inverse.astype(np.int64).reshape(-1), int(v.size),
                   np.searchsorted(v, ood_s, side="left").astype(np.int64),
                   np.searchsorted(v, ood_s, side="right").astype(np.int64))


def _g_values(lay: _Layout, id_counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """G(y_j) / n_id for every OOD score: share of ID above y_j, ties counted half."""
    cum = np.concatenate(([0.0], np.cumsum(id_counts)))
    n = cum[-1]
    above = n - cum[lay.ood_hi]
    equal = cum[lay.ood_hi] - cum[lay.ood_lo]
    return np.asarray((above + 0.5 * equal) / n, dtype=np.float64)


def _fpr_flags(lay: _Layout, id_counts: NDArray[np.float64], tpr: float) -> NDArray[np.bool_]:
    """Whether each OOD score is at or above the threshold t* (see :func:`fpr_at_tpr`)."""
    n = float(id_counts.sum())
    kept_from = np.cumsum(id_counts[::-1])[::-1]  # kept_from[k] = #{ID ≥ v_k}
    # t* = v_k for the largest k whose share #{ID ≥ v_k}/n reaches tpr
    k = int(np.flatnonzero(kept_from / n >= tpr)[-1])
    return np.asarray(lay.ood_hi > k)  # y ≥ v_k  ⇔  searchsorted(v, y, "right") > k


def auroc(id_scores: ArrayLike, ood_scores: ArrayLike) -> float:
    """AUROC with ID as positives, the Mann–Whitney form with ties counted half:

    AUROC = (1 / (n·m)) Σ_i Σ_j (1[x_i > y_j] + ½·1[x_i = y_j])

    over ID scores x_1..x_n and OOD scores y_1..y_m (equal to the area under
    scikit-learn's ``roc_curve``, i.e. ``roc_auc_score``).

    >>> auroc([0.9, 0.8], [0.1, 0.8])  # pairs: 1, 1, 1, ½
    0.875
    """
    x, y = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    lay = _layout(x, y)
    counts = np.bincount(lay.id_index, minlength=lay.n_values).astype(np.float64)
    return float(_g_values(lay, counts).mean())


def fpr_at_tpr(id_scores: ArrayLike, ood_scores: ArrayLike, tpr: float = DEFAULT_TPR) -> float:
    """FPR@95: the share of OOD scores at or above the threshold that keeps 95% of ID.

    Threshold rule: t* is the LARGEST threshold t with #{ID ≥ t}/n ≥ tpr, which
    is the m-th largest ID score for the least m with m/n ≥ tpr (ID ties at t*
    are all kept). FPR = #{OOD ≥ t*}/m_ood. This is scikit-learn's
    ``fpr[np.searchsorted(tpr_curve, 0.95)]`` on ``roc_curve(...,
    drop_intermediate=False)``: the first ROC point whose TPR reaches 95%.

    >>> fpr_at_tpr(list(range(1, 21)), [0.5, 1.0, 2.0, 3.0])  # t* = 2 (19 of 20 kept)
    0.5
    """
    _check_tpr(tpr)
    x, y = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    lay = _layout(x, y)
    counts = np.bincount(lay.id_index, minlength=lay.n_values).astype(np.float64)
    return float(_fpr_flags(lay, counts, tpr).mean())


def _classes(ood_classes: ArrayLike, m: int) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    labels = np.asarray(ood_classes)
    if labels.shape != (m,):
        raise ValueError(f"ood_classes must have shape ({m},) like ood_scores, got {labels.shape}")
    names, code = np.unique(labels.astype(str), return_inverse=True)
    return names, code.astype(np.int64).reshape(-1)


def per_class_auroc(id_scores: ArrayLike, ood_scores: ArrayLike,
                    ood_classes: ArrayLike) -> dict[str, float]:
    """AUROC of all ID vs each OOD class c alone, keyed by str(c) in sorted order.

    >>> per_class_auroc([0.9, 0.8], [0.1, 0.8, 0.95], ["a", "a", "b"])
    {'a': 0.875, 'b': 0.0}
    """
    x, y = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    names, code = _classes(ood_classes, y.size)
    lay = _layout(x, y)
    counts = np.bincount(lay.id_index, minlength=lay.n_values).astype(np.float64)
    means = _class_means(_g_values(lay, counts), code, names.size)
    return {str(c): float(a) for c, a in zip(names, means, strict=True)}


def _class_means(values: NDArray[np.float64], code: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    return np.asarray(np.bincount(code, weights=values, minlength=k)
                      / np.bincount(code, minlength=k), dtype=np.float64)


def class_mean_auroc(id_scores: ArrayLike, ood_scores: ArrayLike, ood_classes: ArrayLike) -> float:
    """NINCO's class-mean AUROC = (1/C) Σ_c AUROC(ID, OOD_c) over the C OOD classes
    present; each class weighs the same whatever its size.

    >>> class_mean_auroc([0.9, 0.8], [0.1, 0.8, 0.95], ["a", "a", "b"])  # (0.875 + 0) / 2
    0.4375
    """
    return float(np.mean(list(per_class_auroc(id_scores, ood_scores, ood_classes).values())))


def ood_bootstrap_ci(
    id_scores: ArrayLike,
    ood_scores: ArrayLike,
    metric: OodMetric,
    *,
    ood_classes: ArrayLike | None = None,
    tpr: float = DEFAULT_TPR,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of ``auroc``, ``fpr`` (at ``tpr``) or ``class_mean_auroc``.

    Two-sample bootstrap: each replicate draws n ID rows and m OOD rows with
    replacement, independently (ID and OOD are separate samples); for
    ``class_mean_auroc`` the OOD rows are drawn within each class, so every
    class keeps its size. The interval is the [α/2, 1 − α/2] quantile pair of
    the replicates, α = 1 − confidence, from ``numpy.random.default_rng(seed)``.

    The replicates are computed a block at a time (:data:`BOOT_CELLS`), from the
    draws made replicate after replicate as a one-replicate loop makes them, so
    the interval is the same for the same seed, bit for bit.

    >>> ood_bootstrap_ci([0.9, 0.8], [0.1, 0.2], "auroc")  # separated: always 1
    (1.0, 1.0)
    """
    _check_resampling(n_resamples, confidence)
    _check_tpr(tpr)
    if metric not in ("auroc", "fpr", "class_mean_auroc"):
        raise ValueError(f"metric must be 'auroc', 'fpr' or 'class_mean_auroc', got {metric!r}")
    if (metric == "class_mean_auroc") != (ood_classes is not None):
        raise ValueError("ood_classes is required for class_mean_auroc and only for it")
    x, y = _scores(id_scores, "id_scores"), _scores(ood_scores, "ood_scores")
    lay = _layout(x, y)
    rng = np.random.default_rng(seed)
    strata = None if ood_classes is None else _strata(ood_classes, y.size)
    stats = np.empty(n_resamples, dtype=np.float64)
    step = max(1, BOOT_CELLS // max(x.size, y.size, lay.n_values))
    for lo in range(0, n_resamples, step):
        b = min(step, n_resamples - lo)
        id_pick, ood_draw = _draws(rng, b, x.size, y.size, strata is not None)
        counts = _block_counts(lay, id_pick)
        if strata is None:
            values = (_block_g(lay, counts) if metric == "auroc"
                      else _block_fpr_flags(lay, counts, tpr))
            stats[lo:lo + b] = np.take_along_axis(values, ood_draw, axis=1).mean(axis=1)
        else:
            stats[lo:lo + b] = _block_class_means(_block_g(lay, counts), ood_draw, strata)
    return _percentiles(stats, confidence)


# Bootstrap replicates held at once: a block's draws are (replicates × rows) arrays
# of this many cells at most (8 MB each as int64), whatever the sample sizes.
BOOT_CELLS = 1 << 20


@dataclass(frozen=True)
class _Strata:
    """OOD rows by class for the stratified (class-mean) resample."""

    code: NDArray[np.int64]  # each OOD row's class
    order: NDArray[np.int64]  # OOD rows sorted by class (stable)
    sorted_code: NDArray[np.int64]  # code[order]
    sizes: NDArray[np.int64]  # rows per class
    starts: NDArray[np.int64]  # each class's first position in ``order``


def _strata(ood_classes: ArrayLike, m: int) -> _Strata:
    _, code = _classes(ood_classes, m)
    order = np.argsort(code, kind="stable")
    sizes = np.bincount(code)
    return _Strata(code, order, code[order], sizes,
                   np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64))


def _draws(rng: np.random.Generator, b: int, n: int, m: int, stratified: bool
           ) -> tuple[NDArray[np.int64], NDArray[Any]]:
    """``b`` replicates' ID indices (b, n) and OOD draws (b, m): indices, or the
    uniforms of a stratified pick. Drawn in the one-replicate order (ID, then
    OOD, per replicate): a generator's stream depends on the call sizes."""
    id_pick = np.empty((b, n), dtype=np.int64)
    ood: NDArray[Any] = np.empty((b, m), dtype=np.float64 if stratified else np.int64)
    for r in range(b):
        id_pick[r] = rng.integers(0, n, size=n)
        ood[r] = rng.random(m) if stratified else rng.integers(0, m, size=m)
    return id_pick, ood


def _block_counts(lay: _Layout, id_pick: NDArray[np.int64]) -> NDArray[np.float64]:
    """(b, V): each replicate's count of every distinct ID value."""
    b, v = id_pick.shape[0], lay.n_values
    flat = (lay.id_index[id_pick] + (np.arange(b, dtype=np.int64) * v)[:, None]).ravel()
    return np.bincount(flat, minlength=b * v).reshape(b, v).astype(np.float64)


def _block_g(lay: _Layout, counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`_g_values` of every replicate: (b, m)."""
    cum = np.concatenate((np.zeros((counts.shape[0], 1)), np.cumsum(counts, axis=1)), axis=1)
    n = cum[:, -1:]
    hi, lo = cum[:, lay.ood_hi], cum[:, lay.ood_lo]
    return np.asarray(((n - hi) + 0.5 * (hi - lo)) / n, dtype=np.float64)


def _block_fpr_flags(lay: _Layout, counts: NDArray[np.float64], tpr: float) -> NDArray[np.bool_]:
    """:func:`_fpr_flags` of every replicate: (b, m)."""
    n = counts.sum(axis=1, keepdims=True)
    kept_from = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]
    reached = kept_from / n >= tpr  # always true at k = 0 (every ID row kept)
    k = counts.shape[1] - 1 - np.argmax(reached[:, ::-1], axis=1)  # the last k reaching it
    return np.asarray(lay.ood_hi[None, :] > k[:, None])


def _block_class_means(g: NDArray[np.float64], uniforms: NDArray[np.float64],
                       s: _Strata) -> NDArray[np.float64]:
    """Class-mean AUROC of every replicate: each OOD row drawn within its class
    (position ⌊u·size⌋ of the class block), then the mean over classes."""
    b, k = g.shape[0], s.sizes.size
    offs = np.floor(uniforms * s.sizes[s.sorted_code]).astype(np.int64)
    pick = s.order[s.starts[s.sorted_code] + offs]
    flat = (s.code[pick] + (np.arange(b, dtype=np.int64) * k)[:, None]).ravel()
    sums = np.bincount(flat, weights=np.take_along_axis(g, pick, axis=1).ravel(), minlength=b * k)
    sizes = np.bincount(flat, minlength=b * k)
    return np.asarray((sums / sizes).reshape(b, k).mean(axis=1), dtype=np.float64)
