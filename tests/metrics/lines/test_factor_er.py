"""Factor-level ER (seed 001 §IV) against independent computations: scipy's
linregress (``fit="least-squares"``) and statsmodels' RLM with HuberT (the
default: seed 001 Fig. 1's "robust linear regression [75]") on norm.ppf of the
baseline points, ER = y − Φ(a·Φ⁻¹(x) + b)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vlmrobust.metrics.lines.factor_er import factor_effective_robustness


def test_matches_scipy_line_and_er() -> None:
    rng = np.random.default_rng(7)
    models = [f"m{i}" for i in range(8)]
    overall = {m: float(v) for m, v in zip(models, rng.uniform(0.4, 0.9, 8), strict=True)}
    acc = {m: {"pose": float(overall[m] - rng.uniform(0.0, 0.2)),
               "texture": float(overall[m] * rng.uniform(0.5, 0.9))} for m in models}
    baseline = models[:5]
    lines = factor_effective_robustness(overall, acc, baseline, ["pose", "texture"],
                                        fit="least-squares")
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


# Six reference models on a probit line of slope ~1.09 and one that is far below it
# (issue 33 item 9's outlier case: least squares gives 0.36, statsmodels' RLM 0.91).
_Z = [-1.0, -0.6, -0.2, 0.2, 0.6, 1.0, 0.8]
_ZF = [-1.08, -0.974, -0.503, -0.092, 0.374, 0.785, -2.5]


def _outlier_case() -> tuple[dict[str, float | None], dict[str, dict[str, float | None]], list[str]]:
    base = [f"r{i}" for i in range(len(_Z))]
    overall: dict[str, float | None] = {m: float(stats.norm.cdf(z)) for m, z in zip(base, _Z, strict=True)}
    acc: dict[str, dict[str, float | None]] = {
        m: {"pose": float(stats.norm.cdf(z))} for m, z in zip(base, _ZF, strict=True)}
    overall["clip"], acc["clip"] = 0.7, {"pose": 0.68}
    return overall, acc, base


def test_huber_is_the_default_and_equals_statsmodels_rlm() -> None:
    sm = pytest.importorskip("statsmodels.api")
    overall, acc, base = _outlier_case()
    x = stats.norm.ppf([overall[m] for m in base])
    y = stats.norm.ppf([acc[m]["pose"] for m in base])
    ref = sm.RLM(y, sm.add_constant(x), M=sm.robust.norms.HuberT()).fit()
    slope, intercept = float(ref.params[1]), float(ref.params[0])
    line = factor_effective_robustness(overall, acc, base, ["pose"])["pose"]
    assert line.fit is not None
    assert line.fit.slope == pytest.approx(slope, abs=1e-5)
    assert line.fit.intercept == pytest.approx(intercept, abs=1e-5)
    want = 0.68 - stats.norm.cdf(slope * stats.norm.ppf(0.7) + intercept)
    assert line.er["clip"] == pytest.approx(want, abs=1e-5)
    ls = factor_effective_robustness(overall, acc, base, ["pose"], fit="least-squares")["pose"]
    assert ls.fit is not None and ls.fit.slope == pytest.approx(stats.linregress(x, y).slope)
    assert slope - ls.fit.slope > 0.5  # the outlier drags least squares; Huber resists it
    with pytest.raises(ValueError, match="fit must be one of least-squares, huber, got 'l1'"):
        factor_effective_robustness(overall, acc, base, ["pose"], fit="l1")
