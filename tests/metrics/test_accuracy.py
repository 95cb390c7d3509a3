"""Accuracy and bootstrap CIs against an independent index-resampling bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from vlmrobust.metrics.accuracy import accuracy, accuracy_ci, bootstrap_mean_ci


def test_accuracy_closed_form() -> None:
    assert accuracy([1, 0, 0, 1, 1]) == 0.6
    assert np.isnan(accuracy([]))
    with pytest.raises(ValueError, match="0/1"):
        accuracy([0, 2])


def test_binomial_shortcut_matches_index_resampling() -> None:
    rng = np.random.default_rng(7)
    correct = rng.random(400) < 0.7
    lo, hi = accuracy_ci(correct, n_resamples=4000, seed=3)
    # independent: explicit resampling of indices, a different RNG stream
    idx = np.random.default_rng(11).integers(0, correct.size, size=(4000, correct.size))
    ref = np.quantile(correct[idx].mean(axis=1), [0.025, 0.975])
    assert abs(lo - ref[0]) < 0.012 and abs(hi - ref[1]) < 0.012
    # and the normal approximation p ± 1.96·sqrt(p(1−p)/n)
    p = correct.mean()
    half = 1.96 * np.sqrt(p * (1 - p) / correct.size)
    assert abs(lo - (p - half)) < 0.015 and abs(hi - (p + half)) < 0.015


def test_bootstrap_mean_ci_matches_normal_approximation() -> None:
    x = np.random.default_rng(1).normal(2.0, 1.0, size=500)
    lo, hi = bootstrap_mean_ci(x, n_resamples=2000, seed=0)
    se = x.std(ddof=0) / np.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - 1.96 * se, abs=0.02)
    assert hi == pytest.approx(x.mean() + 1.96 * se, abs=0.02)


def test_ci_is_seeded_and_deterministic() -> None:
    c = [1, 0, 1, 1, 0, 1, 0, 1]
    assert accuracy_ci(c, seed=5) == accuracy_ci(c, seed=5)
    assert bootstrap_mean_ci([1.0, 2.0, 4.0], seed=2) == bootstrap_mean_ci([1.0, 2.0, 4.0], seed=2)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_resamples": 0}, "n_resamples"), ({"confidence": 1.0}, "confidence"),
])
def test_ci_argument_checks(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        accuracy_ci([1, 0], **kwargs)  # type: ignore[arg-type]
