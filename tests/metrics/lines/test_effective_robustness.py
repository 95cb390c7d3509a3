"""Transforms vs scipy.stats; the baseline fit recovers a known line; ER on the line is 0."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vlmrobust.metrics.lines.effective_robustness import (
    LineFit,
    effective_robustness,
    effective_robustness_ci,
    fit_line,
)
from vlmrobust.metrics.transforms import inverse_logit, inverse_probit, logit, probit


def test_probit_matches_scipy() -> None:
    p = np.linspace(0.01, 0.99, 37)
    assert np.allclose(probit(p), stats.norm.ppf(p), atol=1e-12)
    assert np.allclose(inverse_probit(stats.norm.ppf(p)), p)


def test_logit_matches_scipy() -> None:
    p = np.linspace(0.01, 0.99, 37)
    assert np.allclose(logit(p), stats.logistic.ppf(p))
    assert np.allclose(inverse_logit(logit(p)), p)


def test_transform_clips_ends_and_rejects_out_of_range() -> None:
    assert np.isfinite(probit([0.0, 1.0])).all()
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        probit(1.2)


@pytest.mark.parametrize("transform", ["probit", "logit"])
def test_fit_recovers_known_line(transform: str) -> None:
    fwd, inv = (probit, inverse_probit) if transform == "probit" else (logit, inverse_logit)
    rng = np.random.default_rng(0)
    x = rng.uniform(0.3, 0.9, size=25)
    y = inv(0.8 * fwd(x) - 0.4)
    fit = fit_line(x, y, transform)
    assert fit.slope == pytest.approx(0.8, abs=1e-9)
    assert fit.intercept == pytest.approx(-0.4, abs=1e-9)
    assert fit.n_models == 25
    # agrees with an independent least-squares solver
    ref = stats.linregress(fwd(x), fwd(y))
    assert fit.slope == pytest.approx(ref.slope) and fit.intercept == pytest.approx(ref.intercept)


def test_noisy_fit_matches_linregress() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0.4, 0.9, size=30)
    y = inverse_probit(1.1 * probit(x) - 0.7 + rng.normal(0, 0.05, size=30))
    fit = fit_line(x, y)
    ref = stats.linregress(probit(x), probit(y))
    assert fit.slope == pytest.approx(ref.slope) and fit.intercept == pytest.approx(ref.intercept)


def test_er_of_point_on_line_is_zero_and_above_is_positive() -> None:
    fit = LineFit(0.9, -0.3)
    xs = np.array([0.5, 0.7, 0.85])
    on_line = inverse_probit(0.9 * probit(xs) - 0.3)
    assert np.allclose(effective_robustness(fit, xs, on_line), 0.0, atol=1e-12)
    assert np.allclose(effective_robustness(fit, xs, on_line + 0.05), 0.05)


def test_er_ci_contains_truth_and_is_deterministic() -> None:
    rng = np.random.default_rng(2)
    x = rng.uniform(0.4, 0.9, size=20)
    y = inverse_probit(probit(x) - 0.5 + rng.normal(0, 0.03, size=20))
    target_ref = 0.7
    target_shift = float(inverse_probit(probit(target_ref) - 0.5)) + 0.04
    lo, hi = effective_robustness_ci(x, y, target_ref, target_shift, seed=1)
    assert lo < 0.04 < hi and hi - lo < 0.05
    assert (lo, hi) == effective_robustness_ci(x, y, target_ref, target_shift, seed=1)


def test_fit_argument_checks() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        fit_line([0.5], [0.4])
    with pytest.raises(ValueError, match="same reference accuracy"):
        fit_line([0.5, 0.5], [0.4, 0.3])
    with pytest.raises(ValueError, match="unknown transform"):
        fit_line([0.5, 0.6], [0.4, 0.3], "cubic")
