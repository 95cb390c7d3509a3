"""Paired tests between two models on the questions both answered.

- McNemar's exact test for accuracy: with b = questions only model A got right and
  c = questions only B got right, under H0 b ~ Binomial(b + c, 1/2), and the
  two-sided p = min(1, 2·P(X ≤ min(b, c))) (statsmodels' ``mcnemar(exact=True)``).
- Paired bootstrap of the difference of means: resample questions (clusters of
  rows for Bench-C) with replacement, the same draw for both models; the
  two-sided p = min(1, 2·min(P*(Δ ≤ 0), P*(Δ ≥ 0))) over the replicates.
- Paired t-test (scipy.stats.ttest_rel) where a mean of per-question differences
  is tested against 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats


@dataclass(frozen=True)
class McNemar:
    only_a: int  # A right, B wrong
    only_b: int  # B right, A wrong
    p_value: float

    def __post_init__(self) -> None:
        if self.only_a < 0 or self.only_b < 0 or not 0.0 <= self.p_value <= 1.0:
            raise ValueError("counts must be >= 0 and p in [0, 1]")


def mcnemar_exact(a_correct: ArrayLike, b_correct: ArrayLike) -> McNemar:
    """McNemar's exact test on paired correctness indicators.

    >>> r = mcnemar_exact([1, 1, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0])
    >>> r.only_a, r.only_b, round(r.p_value, 4)   # 2 · 0.5⁵
    (5, 0, 0.0625)
    >>> mcnemar_exact([1, 0], [1, 0]).p_value
    1.0
    """
    a = np.asarray(a_correct).astype(bool)
    b = np.asarray(b_correct).astype(bool)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-D of one length, got {a.shape} and {b.shape}")
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    n = only_a + only_b
    p = 1.0 if n == 0 else min(1.0, 2.0 * float(stats.binom.cdf(min(only_a, only_b), n, 0.5)))
    return McNemar(only_a, only_b, p)


def bootstrap_p_value(replicates: NDArray[np.float64]) -> float | None:
    """Two-sided bootstrap p of H0 "the difference is 0": twice the smaller share of
    replicates on either side of 0 (capped at 1); None without finite replicates.

    >>> bootstrap_p_value(np.array([0.1, 0.2, 0.3, -0.1]))
    0.5
    >>> bootstrap_p_value(np.array([0.1, 0.2]))
    0.0
    """
    ok = replicates[np.isfinite(replicates)]
    if ok.size == 0:
        return None
    return float(min(1.0, 2.0 * min(float((ok <= 0).mean()), float((ok >= 0).mean()))))


@dataclass(frozen=True)
class TTest:
    statistic: float | None
    df: int
    p_value: float | None
    mean_difference: float


def paired_t(a: ArrayLike, b: ArrayLike) -> TTest:
    """scipy.stats.ttest_rel(a, b): t = mean(d)/(sd(d)/√n), d = a − b, df = n − 1.
    Undefined (None) when n < 2 or every difference is equal (up to rounding).

    >>> r = paired_t([1.0, 2.0, 3.0, 5.0], [0.0, 1.0, 1.0, 1.0])
    >>> round(r.statistic, 4), r.df, round(r.p_value, 4)
    (2.8284, 3, 0.0663)
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"a and b must be 1-D of one length, got {x.shape} and {y.shape}")
    d = x - y
    mean = float(d.mean()) if d.size else float("nan")
    # Differences equal up to rounding have no spread: t is undefined, not huge.
    if d.size < 2 or np.ptp(d) <= 1e-12 * max(1.0, float(np.abs(d).max())):
        return TTest(None, max(d.size - 1, 0), None, mean)
    # scipy.stats.ttest_rel's own arithmetic (ttest_1samp of d: central second moment
    # times n/(n−1), t = mean/√(var/n), p = 2·stdtr(df, −|t|)), without its per-call
    # dispatch: 0.3 ms a call, and a Bench-C section makes ~60 (issue 37.2)
    n = d.size
    var = float(((d - d.mean(axis=0, keepdims=True)) ** 2).mean(axis=0)) * (n / (n - 1))
    t = mean / float(np.sqrt(var / n))
    return TTest(t, n - 1, float(2 * special.stdtr(float(n - 1), -abs(t))), mean)


def z_scores(values: ArrayLike) -> NDArray[np.float64]:
    """(x − mean)/sd with the sample sd (ddof = 1), as scipy.stats.zscore(ddof=1);
    NaN entries are left out of the mean and sd and stay NaN; all NaN when fewer
    than 2 values or no spread.

    >>> z_scores([1.0, 2.0, 3.0]).tolist()
    [-1.0, 0.0, 1.0]
    """
    x = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(x)
    if ok.sum() < 2 or np.ptp(x[ok]) == 0:
        return np.full(x.shape, np.nan)
    return np.asarray((x - x[ok].mean()) / x[ok].std(ddof=1), dtype=np.float64)
