"""Factor-level ER (seed 001 §IV) against an independent computation with
scipy: linregress on norm.ppf of the baseline points, ER = y − Φ(a·Φ⁻¹(x) + b)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vlmrobust.metrics.factor_er import factor_effective_robustness


def test_matches_scipy_line_and_er() -> None:
    rng = np.random.default_rng(7)
    models = [f"m{i}" for i in range(8)]
    overall = {m: float(v) for m, v in zip(models, rng.uniform(0.4, 0.9, 8), strict=True)}
    acc = {m: {"pose": float(overall[m] - rng.uniform(0.0, 0.2)),
               "texture": float(overall[m] * rng.uniform(0.5, 0.9))} for m in models}
    baseline = models[:5]
    lines = factor_effective_robustness(overall, acc, baseline, ["pose", "texture"])
    for f in ("pose", "texture"):
        x = stats.norm.ppf([overall[m] for m in baseline])
        y = stats.norm.ppf([acc[m][f] for m in baseline])
        ref = stats.linregress(x, y)
        line = lines[f]
        assert line.fit is not None and line.baseline == tuple(baseline)
        assert line.fit.slope == pytest.approx(ref.slope, rel=1e-9)
        assert line.fit.intercept == pytest.approx(ref.intercept, rel=1e-9, abs=1e-12)
        for m in models:
            expected = acc[m][f] - stats.norm.cdf(ref.slope * stats.norm.ppf(overall[m])
                                                  + ref.intercept)
            assert line.er[m] == pytest.approx(expected, abs=1e-12)


def test_no_line_without_two_baseline_points() -> None:
    overall = {"a": 0.7, "b": 0.8, "c": 0.6}
    acc: dict[str, dict[str, float | None]] = {"a": {"larger": 0.5}, "b": {"larger": None},
                                               "c": {"larger": 0.4}}
    line = factor_effective_robustness(overall, acc, ["a", "b"], ["larger"])["larger"]
    assert line.fit is None and line.er == {"a": None, "b": None, "c": None}
    assert line.reason is not None and "1 baseline model(s)" in line.reason
    same = factor_effective_robustness({"a": 0.7, "b": 0.7}, {"a": {"f": 0.5}, "b": {"f": 0.6}},
                                       ["a", "b"], ["f"])["f"]
    assert same.fit is None and same.reason is not None and "same reference accuracy" in same.reason
