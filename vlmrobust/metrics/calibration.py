"""Calibration: expected calibration error, negative log-likelihood, and
temperature scaling, measured two ways:

- cross-fitted within one config (:func:`calibration_report`): T fitted on one
  random half, applied to the other, and vice versa;
- as seed 001 measures it under distribution shift
  (:func:`reference_temperature`, :func:`scaled_calibration`): T fitted on the
  reference distribution (ImageNet val) and applied unchanged to each shifted
  variant.

A temperature fitted on rows without a single error has no finite optimum (the
NLL keeps falling as T → 0) and lands on the search bound; applied elsewhere it
turns one mistake into an NLL of several nats. Such fits are *not estimable*:
their numbers are None with a reason, never the bound's artefact.

Logits are (N, K_max) with −inf padding for rows of fewer options
(see :mod:`vlmrobust.metrics.uncertainty`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.temperature import newton_temperature, nll_beta_moments, on_lower_bound
from vlmrobust.metrics.uncertainty import softmax

DEFAULT_BINS = 15


def _check_labels(labels: ArrayLike, n: int, k: int) -> NDArray[np.int64]:
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {y.dtype}")
    if n and ((y < 0).any() or (y >= k).any()):
        raise ValueError(f"labels must be in [0, {k}), got {y[(y < 0) | (y >= k)][0]}")
    return y.astype(np.int64)


def expected_calibration_error(
    probs: ArrayLike, labels: ArrayLike, n_bins: int = DEFAULT_BINS
) -> float:
    """ECE = Σ_b (n_b / N) · |acc_b − conf_b| over equal-width confidence bins.

    Confidence is max_k p_k; bin b ∈ {1..B} holds confidences in ((b−1)/B, b/B]
    (confidence 0 joins bin 1). acc_b and conf_b are the mean correctness and
    mean confidence of the bin. NaN when N = 0.

    Bin-edge convention: bins are closed on the RIGHT, ((b−1)/B, b/B]. torchmetrics
    (``torch.bucketize(..., right=True) − 1``) and Guo et al.'s reference code
    close them on the left, [(b−1)/B, b/B), so a confidence exactly on an inner
    edge (e.g. 0.6 with B = 5) falls one bin lower here; the two agree whenever
    no confidence sits exactly on an edge (the usual case for softmax outputs).

    >>> p = [[0.8, 0.2], [0.8, 0.2], [0.6, 0.4]]
    >>> round(expected_calibration_error(p, [0, 1, 0], n_bins=5), 6)  # (2/3)·0.3 + (1/3)·0.4
    0.333333
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be an int >= 1, got {n_bins!r}")
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be (N, K), got shape {p.shape}")
    y = _check_labels(labels, p.shape[0], p.shape[1])
    if p.shape[0] == 0:
        return float("nan")
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    bins = np.clip(np.ceil(conf * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    gap = np.abs(
        np.bincount(bins, weights=correct, minlength=n_bins)
        - np.bincount(bins, weights=conf, minlength=n_bins)
    )
    # Σ_b (n_b/N)|acc_b − conf_b| = Σ_b |Σ_{i∈b}(correct_i − conf_i)| / N
    return float(gap.sum() / p.shape[0])


def _log_probs_of_labels(logits: NDArray[np.float64], y: NDArray[np.int64], t: float) -> NDArray[np.float64]:
    """log softmax(z / T)_y via log-sum-exp with the row maximum factored out."""
    z = logits / t
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    return np.asarray(z[np.arange(z.shape[0]), y] - lse, dtype=np.float64)


def negative_log_likelihood(logits: ArrayLike, labels: ArrayLike, temperature: float = 1.0) -> float:
    """NLL = −(1/N) Σ_i log softmax(z_i / T)_{y_i}, computed with log-sum-exp.

    >>> round(negative_log_likelihood([[0.0, 0.0]], [1]), 6)
    0.693147
    """
    z = np.asarray(logits, dtype=np.float64)
    softmax(z, temperature)  # validates shape, NaN, padding and T
    y = _check_labels(labels, z.shape[0], z.shape[1])
    if z.shape[0] == 0:
        return float("nan")
    lp = _log_probs_of_labels(z, y, temperature)
    if np.isneginf(lp).any():
        raise ValueError("a label points at a padded (-inf) option")
    return float(-lp.mean())


def fit_temperature(logits: ArrayLike, labels: ArrayLike) -> float:
    """T* = argmin_T NLL(z / T, y) over T ∈ [e⁻⁵, e⁵].

    In β = 1/T the NLL, mean_i [log Σ_k exp(β z_ik) − β z_iy], is convex, with
    gradient mean_i (E_p[z_i] − z_iy) and curvature mean_i Var_p(z_i) ≥ 0; a
    Newton iteration safeguarded by bisection on the gradient's sign
    (:func:`~vlmrobust.metrics.temperature.newton_temperature`, shared with the
    label-space fit) finds the minimum in a handful of passes over the data. If
    every row's logits are constant the NLL does not depend on T and T* = 1.

    >>> z = np.array([[4.0, 0.0], [4.0, 0.0]]); fit_temperature(z, [0, 1]) > 1
    True
    """
    z = np.asarray(logits, dtype=np.float64)
    softmax(z)
    y = _check_labels(labels, z.shape[0], z.shape[1])
    if z.shape[0] == 0:
        raise ValueError("fit_temperature needs at least one sample")
    zc = z - z.max(axis=1, keepdims=True)  # ≤ 0; padded options stay −inf
    zy = zc[np.arange(zc.shape[0]), y]
    if np.isneginf(zy).any():
        raise ValueError("a label points at a padded (-inf) option")
    z0 = np.where(np.isfinite(zc), zc, 0.0)
    n = zc.shape[0]

    def grad_curv(beta: float) -> tuple[float, float]:
        g, h = nll_beta_moments(zc, z0, zy, beta)
        return g / n, h / n

    return newton_temperature(grad_curv)


NO_ERRORS = "not estimable: the fitting rows have no errors, so T has no finite optimum"
ON_BOUND = "not estimable: the fitted temperature lies on its lower search bound"


def temperature_fit_problem(logits: ArrayLike, labels: ArrayLike, t: float) -> str | None:
    """Why a temperature fitted on these rows is not estimable, or None.

    >>> temperature_fit_problem([[3.0, 0.0], [0.0, 2.0]], [0, 1], 0.01)
    'not estimable: the fitting rows have no errors, so T has no finite optimum'
    >>> temperature_fit_problem([[3.0, 0.0], [0.0, 2.0]], [0, 0], 1.7) is None
    True
    """
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.shape[0] and bool((z.argmax(axis=1) == y).all()):
        return NO_ERRORS
    return ON_BOUND if on_lower_bound(t) else None


@dataclass(frozen=True)
class CalibrationReport:
    """ECE/NLL before and after temperature scaling (cross-fitted halves);
    the scaled numbers are None, with ``ts_reason``, when a fit is not estimable."""

    ece: float
    nll: float
    ece_ts: float | None
    nll_ts: float | None
    temperature: float | None
    ts_reason: str | None = None

    def __post_init__(self) -> None:
        if self.temperature is not None and not self.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if (self.temperature is None) != (self.ts_reason is not None):
            raise ValueError("a report has either a temperature or a reason for none")


def calibration_report(
    logits: ArrayLike, labels: ArrayLike, *, seed: int = 0, n_bins: int = DEFAULT_BINS
) -> CalibrationReport:
    """ECE and NLL of the raw logits, and after temperature scaling where no row
    is scaled by a temperature it helped fit.

    Rows are split at random (seeded) into halves A and B; T_A is fitted on A
    and applied to B, T_B on B and applied to A (two-fold cross-fitting), so
    ``ece_ts``/``nll_ts`` cover every row, on the same rows as ``ece``/``nll``.
    ``temperature`` is the geometric mean √(T_A·T_B). With fewer than 2 rows
    there is no held-out half: T = 1. When either half's fit is not estimable
    (:func:`temperature_fit_problem`) the scaled numbers are None with the reason.

    >>> z = np.array([[3.0, 0.0]] * 6 + [[0.0, 2.0]] * 6)
    >>> r = calibration_report(z, [0] * 6 + [1] * 6)
    >>> r.ece_ts, r.temperature, r.ts_reason == NO_ERRORS
    (None, None, True)
    """
    z = np.asarray(logits, dtype=np.float64)
    p = softmax(z)
    y = _check_labels(labels, z.shape[0], z.shape[1])
    n = z.shape[0]
    ece = expected_calibration_error(p, y, n_bins)
    nll = negative_log_likelihood(z, y)
    if n < 2:
        return CalibrationReport(ece, nll, ece, nll, 1.0)
    perm = np.random.default_rng(seed).permutation(n)
    half_a, half_b = perm[: n // 2], perm[n // 2:]
    t_a = fit_temperature(z[half_a], y[half_a])
    t_b = fit_temperature(z[half_b], y[half_b])
    problem = (temperature_fit_problem(z[half_a], y[half_a], t_a)
               or temperature_fit_problem(z[half_b], y[half_b], t_b))
    if problem is not None:
        return CalibrationReport(ece, nll, None, None, None, problem)
    scale = np.empty(n, dtype=np.float64)
    scale[half_b] = t_a
    scale[half_a] = t_b
    scaled = z / scale[:, None]
    return CalibrationReport(
        ece=ece,
        nll=nll,
        ece_ts=expected_calibration_error(softmax(scaled), y, n_bins),
        nll_ts=negative_log_likelihood(scaled, y),
        temperature=float(np.sqrt(t_a * t_b)),
    )


def reference_temperature(logits: ArrayLike, labels: ArrayLike) -> tuple[float | None, str | None]:
    """(T fitted on all reference-distribution rows, None) or (None, why not).

    >>> t, why = reference_temperature([[4.0, 0.0]] * 3, [0, 0, 1])  # p* = 2/3: T = 4 / ln 2
    >>> round(t, 4), why
    (5.7708, None)
    """
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels)
    if z.shape[0] == 0:
        return None, "not estimable: no reference rows"
    t = fit_temperature(z, y)
    problem = temperature_fit_problem(z, y, t)
    return (None, problem) if problem else (t, None)


def scaled_calibration(logits: ArrayLike, labels: ArrayLike, temperature: float,
                       n_bins: int = DEFAULT_BINS) -> tuple[float, float]:
    """(ECE, NLL) of softmax(z / T) with a temperature fitted elsewhere.

    >>> [round(v, 6) for v in scaled_calibration([[0.0, 0.0]], [1], 2.0)]
    [0.5, 0.693147]
    """
    z = np.asarray(logits, dtype=np.float64)
    y = _check_labels(labels, z.shape[0], z.shape[1])
    return (expected_calibration_error(softmax(z, temperature), y, n_bins),
            negative_log_likelihood(z, y, temperature))
