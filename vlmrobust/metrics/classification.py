"""Classification over a whole label space (issue 23): top-1 accuracy,
per-class accuracy, ECE and NLL of (N, C) logits, and seed 001's temperature
scaling, all in bounded memory.

The K-option metrics of :mod:`vlmrobust.metrics.calibration` take float64
copies of the whole logit array; at 50,000 × 1,000 that is 400 MB a copy. Here
rows are processed in chunks of about ``CHUNK_CELLS`` logits, so a pass holds
the input, two float64 chunks and a few length-N vectors, whatever N is. A
chunked result equals the unchunked one (each row's softmax stays in one chunk).

Logits must be finite (a full label space has no padded options); labels index
the columns. ECE bins follow torchmetrics' ``multiclass_calibration_error``
exactly (see :func:`binned_ece`), not the right-closed bins of the K-option ECE.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.calibration import DEFAULT_BINS, NO_ERRORS, ON_BOUND
from vlmrobust.metrics.subsets import split_half
from vlmrobust.metrics.temperature import newton_temperature, nll_beta_moments, on_lower_bound

# 4 Mi logits a chunk: 32 MB per float64 copy, two copies live at a time.
CHUNK_CELLS = 1 << 22


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def _as_logits(logits: ArrayLike) -> NDArray[np.floating] | NDArray[np.integer]:
    # No dtype: float32 logits stay float32 here and are widened chunk by chunk.
    z = np.asarray(logits)
    if z.ndim != 2 or z.shape[1] < 1:
        raise ValueError(f"logits must be (N, C) with C >= 1 classes, got shape {z.shape}")
    if not (np.issubdtype(z.dtype, np.floating) or np.issubdtype(z.dtype, np.integer)):
        raise ValueError(f"logits must be numeric, got dtype {z.dtype}")
    return z


def _as_labels(labels: ArrayLike, n: int, n_classes: int) -> NDArray[np.int64]:
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    bad = np.flatnonzero((y < 0) | (y >= n_classes))
    if bad.size:
        raise ValueError(f"labels must be class ids in [0, {n_classes}); row {bad[0]} holds {y[bad[0]]}")
    return y.astype(np.int64)


def _check_temperature(t: float) -> float:
    if not (isinstance(t, (int, float, np.floating)) and np.isfinite(t) and t > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {t!r}")
    return float(t)


def _chunks(n: int, n_classes: int, chunk_rows: int | None) -> Iterator[slice]:
    rows = max(1, CHUNK_CELLS // n_classes) if chunk_rows is None else _check_int("chunk_rows", chunk_rows, 1)
    for start in range(0, n, rows):
        yield slice(start, min(n, start + rows))


def _widened(z: NDArray[np.floating] | NDArray[np.integer], s: slice) -> NDArray[np.float64]:
    block = z[s].astype(np.float64)
    finite = np.isfinite(block).all(axis=1)
    if not finite.all():
        row = s.start + int(np.flatnonzero(~finite)[0])
        raise ValueError(f"logits must be finite over the whole label space; row {row} holds NaN or inf")
    return block


@dataclass(frozen=True)
class RowScores:
    """Per-row results of one pass: top-1 class, its probability (the
    confidence), and log p(label), all under softmax(z / T)."""

    prediction: NDArray[np.int64]
    confidence: NDArray[np.float64]
    log_prob_label: NDArray[np.float64]


def row_scores(logits: ArrayLike, labels: ArrayLike, *, temperature: float = 1.0,
               chunk_rows: int | None = None) -> RowScores:
    """ŷ_i = argmax_c z_ic (first maximum on ties), conf_i = max_c p_ic and
    log p_i,y_i = z_iy/T − m_i − log Σ_c exp(z_ic/T − m_i) with m_i = max_c z_ic/T
    (the stable log-softmax), in chunks of rows.

    >>> r = row_scores([[0.0, 0.0, np.log(2.0)]], [0])
    >>> r.prediction.tolist(), round(float(r.confidence[0]), 6), round(float(r.log_prob_label[0]), 6)
    ([2], 0.5, -1.386294)
    """
    t = _check_temperature(temperature)
    z = _as_logits(logits)
    n, c = z.shape
    y = _as_labels(labels, n, c)
    pred = np.empty(n, dtype=np.int64)
    conf = np.empty(n, dtype=np.float64)
    logp = np.empty(n, dtype=np.float64)
    for s in _chunks(n, c, chunk_rows):
        block = _widened(z, s)
        pred[s] = block.argmax(axis=1)
        block /= t
        block -= block.max(axis=1, keepdims=True)
        lse = np.log(np.exp(block).sum(axis=1))
        # the top class has z − m = 0, so its probability is exp(−lse)
        conf[s] = np.exp(-lse)
        logp[s] = block[np.arange(block.shape[0]), y[s]] - lse
    return RowScores(pred, conf, logp)


def top1_accuracy(logits: ArrayLike, labels: ArrayLike, *, chunk_rows: int | None = None) -> float:
    """acc = (1/N) Σ_i 1[argmax_c z_ic = y_i]; NaN for N = 0.

    >>> top1_accuracy([[0.1, 2.0, 0.3], [5.0, 0.0, 0.0]], [1, 2])
    0.5
    """
    z = _as_logits(logits)
    n, c = z.shape
    y = _as_labels(labels, n, c)
    if n == 0:
        return float("nan")
    hits = 0
    for s in _chunks(n, c, chunk_rows):
        hits += int((_widened(z, s).argmax(axis=1) == y[s]).sum())
    return hits / n


def subset_predictions(logits: ArrayLike, subsets: ArrayLike, *,
                       chunk_rows: int | None = None) -> NDArray[np.int64]:
    """ŷ_i = S_i[argmax_j z_i,S_ij]: the top class among row i's own label set
    S_i (seed 002's label-set-size setting: the model sees K classes, here read
    off its full-label-space logits). Ties go to the first class of S_i.

    >>> subset_predictions([[0.0, 5.0, 1.0, 2.0]], [[0, 2, 3]]).tolist()
    [3]
    """
    z = _as_logits(logits)
    n, c = z.shape
    sets = np.asarray(subsets)
    if sets.ndim != 2 or sets.shape[0] != n or sets.shape[1] < 1 or not np.issubdtype(sets.dtype, np.integer):
        raise ValueError(f"subsets must be ({n}, K) integer class ids with K >= 1, got {sets.dtype} of shape {sets.shape}")
    bad = np.argwhere((sets < 0) | (sets >= c))
    if bad.size:
        raise ValueError(f"subsets must hold class ids in [0, {c}); row {bad[0][0]} holds {sets[tuple(bad[0])]}")
    pred = np.empty(n, dtype=np.int64)
    for s in _chunks(n, c, chunk_rows):
        picked = np.take_along_axis(_widened(z, s), sets[s], axis=1)
        pred[s] = np.take_along_axis(sets[s], picked.argmax(axis=1)[:, None], axis=1)[:, 0]
    return pred


def subset_accuracy(logits: ArrayLike, labels: ArrayLike, subsets: ArrayLike, *,
                    chunk_rows: int | None = None) -> float:
    """acc_K = (1/N) Σ_i 1[ŷ_i = y_i] with ŷ from :func:`subset_predictions`;
    each S_i must hold its y_i (:func:`~vlmrobust.metrics.subsets.label_subset`
    builds such sets). NaN for N = 0.

    >>> subset_accuracy([[0.0, 5.0, 1.0], [0.0, 5.0, 1.0]], [2, 0], [[0, 2], [0, 1]])
    0.5
    """
    pred = subset_predictions(logits, subsets, chunk_rows=chunk_rows)
    sets = np.asarray(subsets)
    y = _as_labels(labels, sets.shape[0], int(np.asarray(logits).shape[1]))
    missing = np.flatnonzero(~(sets == y[:, None]).any(axis=1))
    if missing.size:
        raise ValueError(f"every label set must hold its row's label; row {missing[0]} lacks {y[missing[0]]}")
    return float((pred == y).mean()) if y.size else float("nan")


def per_class_accuracy(predictions: ArrayLike, labels: ArrayLike, n_classes: int) -> NDArray[np.float64]:
    """acc_c = Σ_i 1[y_i = c]·1[ŷ_i = c] / Σ_i 1[y_i = c] for each class c.

    A class with no rows has no accuracy: its entry is NaN (not 0), so a
    variant with a sub-space of the classes (ImageNet-R's 200) keeps C entries.

    >>> per_class_accuracy([0, 1, 1, 2], [0, 0, 1, 2], 4).tolist()
    [0.5, 1.0, 1.0, nan]
    """
    c = _check_int("n_classes", n_classes, 1)
    y = np.asarray(labels)
    y = _as_labels(y, y.shape[0] if y.ndim == 1 else -1, c)
    p = np.asarray(predictions)
    if p.shape != y.shape or not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"predictions must be {y.shape[0]} integer class ids, got {p.dtype} of shape {p.shape}")
    counts = np.bincount(y, minlength=c).astype(np.float64)
    hits = np.bincount(y, weights=(p == y).astype(np.float64), minlength=c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, hits / np.where(counts > 0, counts, 1.0), np.nan)


def mean_per_class_accuracy(predictions: ArrayLike, labels: ArrayLike, n_classes: int) -> float:
    """mPCA = mean of acc_c over the classes that have rows (absent classes,
    NaN in :func:`per_class_accuracy`, are skipped); NaN when no class has rows.

    >>> mean_per_class_accuracy([0, 1, 1, 2], [0, 0, 1, 2], 4)
    0.8333333333333334
    """
    acc = per_class_accuracy(predictions, labels, n_classes)
    present = acc[~np.isnan(acc)]
    return float(present.mean()) if present.size else float("nan")


def binned_ece(confidence: ArrayLike, correct: ArrayLike, n_bins: int = DEFAULT_BINS) -> float:
    """ECE = Σ_b (n_b / N)·|acc_b − conf_b| with torchmetrics' bins.

    Boundaries are linspace(0, 1, B + 1); bin b holds confidences in
    [b/B, (b+1)/B) (``torch.bucketize(right=True) − 1``) and a confidence of
    exactly 1 has a bin of its own, as in torchmetrics ≥ 0.11. NaN for N = 0.

    >>> round(binned_ece([0.9, 0.9, 0.6], [1, 0, 1], n_bins=5), 6)  # (2/3)·0.4 + (1/3)·0.4
    0.4
    """
    b = _check_int("n_bins", n_bins, 1)
    conf = np.asarray(confidence, dtype=np.float64)
    ok = np.asarray(correct, dtype=np.float64)
    if conf.ndim != 1 or ok.shape != conf.shape:
        raise ValueError(f"confidence and correct must be 1-D of one length, got {conf.shape} and {ok.shape}")
    if conf.size and not ((conf >= 0) & (conf <= 1)).all():
        raise ValueError(f"confidence must lie in [0, 1], got {float(conf[~((conf >= 0) & (conf <= 1))][0])!r}")
    if conf.size == 0:
        return float("nan")
    idx = np.searchsorted(np.linspace(0.0, 1.0, b + 1), conf, side="right") - 1
    gap = np.abs(np.bincount(idx, weights=ok, minlength=b + 1)
                 - np.bincount(idx, weights=conf, minlength=b + 1))
    return float(gap.sum() / conf.size)


@dataclass(frozen=True)
class ClassificationScores:
    """Top-1 accuracy, ECE and NLL of one set of logits under one temperature."""

    n: int
    accuracy: float
    ece: float
    nll: float
    temperature: float

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must be >= 0, got {self.n}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


def score_logits(logits: ArrayLike, labels: ArrayLike, *, temperature: float = 1.0,
                 n_bins: int = DEFAULT_BINS, chunk_rows: int | None = None) -> ClassificationScores:
    """Accuracy, ECE (:func:`binned_ece`) and NLL = −(1/N) Σ_i log p_i,y_i of
    softmax(z / T) over the whole label space, in one chunked pass.

    >>> s = score_logits([[0.0, 0.0], [3.0, 0.0]], [1, 0])
    >>> s.accuracy, round(s.nll, 6)  # (log 2 + log(1 + e⁻³)) / 2
    (0.5, 0.370867)
    """
    _check_int("n_bins", n_bins, 1)
    r = row_scores(logits, labels, temperature=temperature, chunk_rows=chunk_rows)
    n = int(r.prediction.shape[0])
    if n == 0:
        return ClassificationScores(0, float("nan"), float("nan"), float("nan"), float(temperature))
    correct = r.prediction == np.asarray(labels)
    return ClassificationScores(n, float(correct.mean()), binned_ece(r.confidence, correct, n_bins),
                                float(-r.log_prob_label.mean()), float(temperature))


def _grad_curv(z: NDArray[np.floating] | NDArray[np.integer], y: NDArray[np.int64], beta: float,
               chunk_rows: int | None) -> tuple[float, float]:
    """d/dβ and d²/dβ² of NLL(β) = mean_i [log Σ_c exp(β z_ic) − β z_iy],
    summed chunk by chunk so that the whole array is never widened."""
    g = h = 0.0
    for s in _chunks(z.shape[0], z.shape[1], chunk_rows):
        block = _widened(z, s)
        block -= block.max(axis=1, keepdims=True)  # shift-invariant; keeps exp ≤ 1
        # finite logits (_widened): the block is its own −inf-free copy
        dg, dh = nll_beta_moments(block, block, block[np.arange(block.shape[0]), y[s]], beta)
        g += dg
        h += dh
    n = z.shape[0]
    return g / n, h / n


def fit_temperature(logits: ArrayLike, labels: ArrayLike, *, chunk_rows: int | None = None) -> float:
    """T* = argmin_T NLL(softmax(z / T), y) over log T ∈ [−5, 5], chunked.

    The same minimisation as :func:`vlmrobust.metrics.calibration.fit_temperature`
    (one Newton search, :func:`~vlmrobust.metrics.temperature.newton_temperature`),
    but each pass streams the rows in chunks and never widens the whole array.
    Constant logits give T* = 1; a fit on rows without an error runs to the
    lower bound (see :func:`temperature_problem`).

    >>> round(fit_temperature([[4.0, 0.0]] * 3, [0, 0, 1]), 4)  # p* = 2/3: T = 4 / ln 2
    5.7708
    """
    z = _as_logits(logits)
    y = _as_labels(labels, z.shape[0], z.shape[1])
    if z.shape[0] == 0:
        raise ValueError("fit_temperature needs at least one row")
    return newton_temperature(lambda beta: _grad_curv(z, y, beta, chunk_rows))


def temperature_problem(scores: RowScores, labels: ArrayLike, t: float) -> str | None:
    """Why T fitted on these rows is not estimable (the reasons of
    :func:`vlmrobust.metrics.calibration.temperature_fit_problem`), or None.

    >>> r = row_scores([[3.0, 0.0], [0.0, 2.0]], [0, 1])
    >>> temperature_problem(r, [0, 1], 0.01) == NO_ERRORS
    True
    """
    y = np.asarray(labels)
    if y.size and bool((scores.prediction == y).all()):
        return NO_ERRORS
    return ON_BOUND if on_lower_bound(t) else None


@dataclass(frozen=True)
class HalfTemperature:
    """Seed 001's temperature: fitted on ``fit_rows`` of the reference set and
    to be applied to ``held_out_rows`` and every shifted variant; None with
    ``reason`` when not estimable."""

    temperature: float | None
    reason: str | None
    fit_rows: NDArray[np.int64]
    held_out_rows: NDArray[np.int64]

    def __post_init__(self) -> None:
        if (self.temperature is None) == (self.reason is None):
            raise ValueError("a fit has either a temperature or a reason for none")
        if self.temperature is not None and not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


def half_temperature(logits: ArrayLike, labels: ArrayLike, *, seed: int,
                     keys: Sequence[str] | None = None, chunk_rows: int | None = None) -> HalfTemperature:
    """T fitted by :func:`fit_temperature` on the seeded half
    :func:`~vlmrobust.metrics.subsets.split_half` (n, seed, keys)[0] of the
    reference rows (ImageNet val), as seed 001 fits one T for every variant.

    >>> z = np.array([[4.0, 0.0]] * 8); y = np.array([0, 0, 1, 0, 1, 0, 0, 1])
    >>> fit = half_temperature(z, y, seed=0); len(fit.fit_rows), len(fit.held_out_rows)
    (4, 4)
    """
    z = _as_logits(logits)
    y = _as_labels(labels, z.shape[0], z.shape[1])
    fit_rows, held_out = split_half(z.shape[0], seed, keys)
    if fit_rows.size == 0:
        return HalfTemperature(None, "not estimable: fewer than 2 reference rows", fit_rows, held_out)
    zf, yf = z[fit_rows], y[fit_rows]
    t = fit_temperature(zf, yf, chunk_rows=chunk_rows)
    problem = temperature_problem(row_scores(zf, yf, chunk_rows=chunk_rows), yf, t)
    return HalfTemperature(None if problem else t, problem, fit_rows, held_out)
