"""Baseline-line fits for effective robustness, vectorised over bootstrap resamples.

Formulas (Taori et al. 2020; Miller et al. 2021, "accuracy on the line"):
``t(acc_shift) = a·t(acc_ref) + b`` fitted by ordinary least squares over the
baseline models, with t = Φ⁻¹ (probit) or logit; a model's effective robustness is
``ER = acc_shift − t⁻¹(a·t(acc_ref) + b)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.lines import effective_robustness as er_metrics
from vlmrobust.metrics.lines.robust_fit import least_squares as least_squares  # re-exported
from vlmrobust.metrics.lines.robust_fit import line_params as line_params  # re-exported
from vlmrobust.metrics.transforms import get_transform


def transform(acc: ArrayLike, kind: str = "probit") -> NDArray[np.float64]:
    """t(acc) (vlmrobust.metrics.transforms: probit Φ⁻¹ or logit, clipped to (0, 1)).

    >>> [round(float(v), 4) for v in transform([0.5, 0.8413447], "probit")]
    [0.0, 1.0]
    >>> round(float(transform(0.75, "logit")), 4)
    1.0986
    """
    return get_transform(kind)[0](acc)


def inverse(z: ArrayLike, kind: str = "probit") -> NDArray[np.float64]:
    """t⁻¹(z): Φ(z) or 1 / (1 + e^(−z)).

    >>> round(float(inverse(1.0, "probit")), 4), round(float(inverse(0.0, "logit")), 4)
    (0.8413, 0.5)
    """
    return get_transform(kind)[1](z)


def bootstrap_weights(m: int, n_boot: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """Multiplicities of ``m`` items in ``n_boot`` resamples drawn with replacement,
    shape (n_boot, m); each row sums to m."""
    if m == 0 or n_boot == 0:
        return np.zeros((n_boot, m))
    idx = rng.integers(0, m, size=(n_boot, m))
    counts = np.zeros((n_boot, m))
    np.add.at(counts, (np.arange(n_boot)[:, None], idx), 1.0)
    return counts


@dataclass(frozen=True)
class LineFit:
    """A fitted baseline line plus its goodness of fit (R² in transformed space)."""

    slope: float
    intercept: float
    n: int
    transform: str
    r2: float

    def __post_init__(self) -> None:
        if self.n < 2:
            raise ValueError("a line needs at least 2 points")
        if not (np.isfinite(self.slope) and np.isfinite(self.intercept)):
            raise ValueError("slope and intercept must be finite")


def fit_line(acc_ref: Sequence[float], acc_shift: Sequence[float],
             kind: str = "probit", method: str = "least-squares") -> LineFit | None:
    """vlmrobust.metrics' least-squares line (or the Huber-robust one, ``method``
    "huber"); None when no line is defined (fewer than 2 points, or all
    reference accuracies equal). R² is in transformed space either way.

    >>> f = fit_line([0.5, 0.8413447460685429], [0.5, 0.9772498680518208])
    >>> round(f.slope, 6), round(f.intercept, 6), f.r2
    (2.0, 0.0, 1.0)
    """
    if len(acc_ref) < 2:
        return None
    try:
        line = er_metrics.fit_line(acc_ref, acc_shift, kind)
    except ValueError:
        return None
    x, y = transform(acc_ref, kind), transform(acc_shift, kind)
    slope, intercept = line.slope, line.intercept
    if method != "least-squares":
        a, b = line_params(x, y, method=method)
        slope, intercept = float(a), float(b)
    resid = y - (slope * x + intercept)
    sst = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / sst if sst > 0 else 1.0
    return LineFit(slope, intercept, line.n_models, kind, round(r2, 12))


def effective_robustness(acc_ref: ArrayLike, acc_shift: ArrayLike, slope: ArrayLike,
                         intercept: ArrayLike, kind: str = "probit") -> NDArray[np.float64]:
    """ER = acc_shift − t⁻¹(a·t(acc_ref) + b), broadcast over arrays of fits (one per
    bootstrap resample). For a scalar fit this is exactly
    vlmrobust.metrics.lines.effective_robustness.effective_robustness.

    >>> float(np.round(effective_robustness(0.7, 0.75, 1.0, 0.0), 12))
    0.05
    """
    expected = inverse(np.asarray(slope) * transform(acc_ref, kind) + np.asarray(intercept),
                       kind)
    return np.asarray(np.asarray(acc_shift, dtype=np.float64) - expected, dtype=np.float64)


def percentile_ci(values: NDArray[np.float64], level: float,
                  ) -> tuple[float, float] | None:
    """Percentile interval [q((1−level)/2), q((1+level)/2)]; None without values.

    >>> [round(v, 9) for v in percentile_ci(np.arange(101.0), 0.9)]
    [5.0, 95.0]
    """
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    lo, hi = np.quantile(v, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)
