"""Effective robustness (Taori et al. 2020; Miller et al. 2021, "accuracy on the line").

Baseline models of one family give points (acc_ref, acc_shift). In transformed
space t ∈ {probit, logit} the fit is the least-squares line

    t(acc_shift) = a · t(acc_ref) + b,

and a model's effective robustness is its shifted accuracy above the line:

    ER = acc_shift − t⁻¹(a · t(acc_ref) + b).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.accuracy import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from vlmrobust.metrics.transforms import TRANSFORMS, get_transform


@dataclass(frozen=True)
class LineFit:
    """A baseline line in transformed space: t(y) = slope · t(x) + intercept."""

    slope: float
    intercept: float
    transform: str = "probit"
    n_models: int = 0

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ValueError(
                f"unknown transform {self.transform!r}; choose one of {sorted(TRANSFORMS)}"
            )
        if not (np.isfinite(self.slope) and np.isfinite(self.intercept)):
            raise ValueError(f"slope/intercept must be finite, got {self.slope}, {self.intercept}")
        if self.n_models < 0:
            raise ValueError(f"n_models must be >= 0, got {self.n_models}")

    def predict(self, acc_ref: ArrayLike) -> NDArray[np.float64]:
        """Shifted accuracy the line predicts: t⁻¹(a · t(acc_ref) + b)."""
        fwd, inv = get_transform(self.transform)
        return inv(self.slope * fwd(acc_ref) + self.intercept)


def _check_points(acc_ref: ArrayLike, acc_shift: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    x = np.asarray(acc_ref, dtype=np.float64)
    y = np.asarray(acc_shift, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"acc_ref and acc_shift must be 1-D of equal length, got {x.shape} and {y.shape}"
        )
    if x.size < 2:
        raise ValueError(f"a line fit needs at least 2 baseline models, got {x.size}")
    return x, y


def _least_squares(tx: NDArray[np.float64], ty: NDArray[np.float64]) -> tuple[
    NDArray[np.float64], NDArray[np.float64]
]:
    """Closed-form simple regression along the last axis (vectorised over resamples):
    a = Σ(x − x̄)(y − ȳ) / Σ(x − x̄)², b = ȳ − a x̄. a is NaN when all x are equal."""
    mx = tx.mean(axis=-1, keepdims=True)
    my = ty.mean(axis=-1, keepdims=True)
    sxx = ((tx - mx) ** 2).sum(axis=-1)
    sxy = ((tx - mx) * (ty - my)).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), np.nan)
    intercept = my[..., 0] - slope * mx[..., 0]
    return slope, intercept


def fit_line(acc_ref: ArrayLike, acc_shift: ArrayLike, transform: str = "probit") -> LineFit:
    """Least-squares fit of t(acc_shift) = a · t(acc_ref) + b over baseline models.

    >>> from vlmrobust.metrics.transforms import inverse_probit
    >>> x = inverse_probit([-1.0, 0.0, 1.0])
    >>> fit = fit_line(x, inverse_probit([-1.5, -0.5, 0.5]))
    >>> round(fit.slope, 6), round(fit.intercept, 6)
    (1.0, -0.5)
    """
    x, y = _check_points(acc_ref, acc_shift)
    fwd, _ = get_transform(transform)
    slope, intercept = _least_squares(fwd(x), fwd(y))
    if not np.isfinite(slope):
        raise ValueError("all baseline models have the same reference accuracy: no line to fit")
    return LineFit(float(slope), float(intercept), transform, int(x.size))


def effective_robustness(
    fit: LineFit, acc_ref: ArrayLike, acc_shift: ArrayLike
) -> NDArray[np.float64]:
    """ER = acc_shift − t⁻¹(a · t(acc_ref) + b); 0 for a point on the line.

    >>> fit = LineFit(slope=1.0, intercept=0.0)
    >>> round(float(effective_robustness(fit, 0.7, 0.75)), 12)
    0.05
    """
    y = np.asarray(acc_shift, dtype=np.float64)
    return np.asarray(y - fit.predict(acc_ref), dtype=np.float64)


def effective_robustness_ci(
    baseline_ref: ArrayLike,
    baseline_shift: ArrayLike,
    acc_ref: float,
    acc_shift: float,
    *,
    transform: str = "probit",
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap CI of ER, resampling the baseline models with
    replacement and refitting the line each time (resamples whose models all
    share one reference accuracy are dropped: they define no line).

    >>> lo, hi = effective_robustness_ci([0.5, 0.6, 0.7], [0.4, 0.5, 0.6], 0.6, 0.5)
    >>> lo <= 0.0 <= hi
    True
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    x, y = _check_points(baseline_ref, baseline_shift)
    fwd, inv = get_transform(transform)
    tx, ty = fwd(x), fwd(y)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_resamples, x.size))
    slope, intercept = _least_squares(tx[idx], ty[idx])
    ok = np.isfinite(slope)
    if not ok.any():
        raise ValueError("every bootstrap resample is degenerate: baselines need distinct accuracies")
    er = acc_shift - inv(slope[ok] * fwd(acc_ref) + intercept[ok])
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(er, [alpha, 1.0 - alpha])
    return float(lo), float(hi)
