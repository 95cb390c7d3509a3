"""Huber-robust line fits (issue 24.5: seed 001's robust trend lines) against
statsmodels' RLM, and their selection through baselines.yaml."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.trust.baselines import BaselineSpec, BaselineSpecError, load_baselines
from vlmrobust.metrics.lines.robust_fit import huber_line, weighted_median


def _statsmodels_huber(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    sm = pytest.importorskip("statsmodels.api")
    res = sm.RLM(y, sm.add_constant(x), M=sm.robust.norms.HuberT()).fit()
    return float(res.params[1]), float(res.params[0])


@pytest.mark.parametrize("seed", range(6))
def test_huber_line_equals_statsmodels_rlm(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = 15
    x = rng.normal(size=m)
    y = 0.8 * x + 0.3 + rng.normal(scale=0.1, size=m)
    y[rng.integers(m)] += 3.0  # one gross outlier
    a, b = huber_line(x, y)
    ra, rb = _statsmodels_huber(x, y)
    assert float(a) == pytest.approx(ra, abs=1e-5) and float(b) == pytest.approx(rb, abs=1e-5)
    ls_a, _ = fit.least_squares(x, y)
    assert abs(float(ls_a) - ra) > abs(float(a) - ra)  # the outlier moves least squares


def test_rows_of_multiplicities_equal_fits_of_repeated_points() -> None:
    rng = np.random.default_rng(7)
    m = 10
    x = rng.normal(size=m)
    y = 1.2 * x - 0.1 + rng.normal(scale=0.2, size=m)
    y[0] -= 2.0
    w = rng.integers(0, 4, size=(5, m)).astype(np.float64)
    w[:, :3] += 1  # at least three distinct points per row
    a, b = huber_line(x, y, w)
    for row in range(w.shape[0]):
        reps = w[row].astype(int)
        ra, rb = _statsmodels_huber(np.repeat(x, reps), np.repeat(y, reps))
        assert a[row] == pytest.approx(ra, abs=1e-5) and b[row] == pytest.approx(rb, abs=1e-5)


def test_weighted_median_equals_median_of_the_repeated_row() -> None:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(50, 7))
    w = rng.integers(0, 4, size=(50, 7)).astype(np.float64)
    w[:, 0] += 1
    got = weighted_median(v, w)
    want = [np.median(np.repeat(v[i], w[i].astype(int))) for i in range(50)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_undefined_fits_are_nan_and_arguments_are_checked() -> None:
    a, b = huber_line(np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0]))
    assert np.isnan(a) and np.isnan(b)
    a, _ = huber_line(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]),
                      np.array([1.0, 0.0, 0.0]))
    assert np.isnan(a)
    a, b = huber_line(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]))  # perfect: s = 0
    assert (float(a), float(b)) == (2.0, 1.0)
    with pytest.raises(ValueError, match="t must be > 0"):
        huber_line(np.array([0.0, 1.0]), np.array([0.0, 1.0]), t=0.0)
    with pytest.raises(ValueError, match="unknown fit method 'l1'"):
        fit.line_params(np.array([0.0, 1.0]), np.array([0.0, 1.0]), method="l1")


def test_min_points_makes_resamples_of_too_few_distinct_points_nan() -> None:
    """Like least_squares: a row of multiplicities with fewer than ``min_points``
    points of non-zero weight is NaN even though its x has spread (a bootstrap
    replicate that drew two baseline models); other rows are fitted."""
    x = np.arange(6.0)
    y = np.array([0.1, 1.3, 1.9, 3.2, 9.0, 5.1])
    w = np.array([[3.0, 3.0, 0.0, 0.0, 0.0, 0.0],
                  [2.0, 0.0, 2.0, 0.0, 2.0, 0.0],
                  [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    a, b = huber_line(x, y, w, min_points=3)
    assert np.isnan(a[0]) and np.isnan(b[0])
    assert np.isfinite(a[1:]).all() and np.isfinite(b[1:]).all()
    ls_a, _ = fit.least_squares(x, y, w, min_points=3)
    assert (np.isnan(a) == np.isnan(ls_a)).all()
    # with min_points = 2 the two-point row is the line through its two points
    a2, b2 = huber_line(x, y, w, min_points=2)
    assert (float(a2[0]), float(b2[0])) == pytest.approx((1.2, 0.1), abs=1e-12)
    rep = np.repeat(x, w[1].astype(int)), np.repeat(y, w[1].astype(int))
    ra, rb = huber_line(*rep)
    assert (float(a[1]), float(b[1])) == pytest.approx((float(ra), float(rb)), abs=1e-9)
    assert np.isnan(fit.line_params(x, y, w, method="huber", min_points=3)[0][0])


def test_fit_line_huber_ignores_an_outlying_reference_model() -> None:
    from vlmrobust.metrics.transforms import inverse_probit

    z = np.linspace(-1.0, 1.0, 8)
    shift = 0.9 * z - 0.4
    shift[-1] -= 1.5  # one reference model far below the others' line
    ref_acc, shift_acc = inverse_probit(z).tolist(), inverse_probit(shift).tolist()
    ls = fit.fit_line(ref_acc, shift_acc, "probit")
    hub = fit.fit_line(ref_acc, shift_acc, "probit", "huber")
    assert ls is not None and hub is not None
    ra, rb = _statsmodels_huber(z, shift)
    assert hub.slope == pytest.approx(ra, abs=1e-5) and hub.intercept == pytest.approx(rb, abs=1e-5)
    assert abs(hub.slope - 0.9) < abs(ls.slope - 0.9)


def test_baselines_yaml_selects_the_fit(tmp_path: Path) -> None:
    """``fit`` (the robustness page's lines, seed 000: least squares) and
    ``holistic_fit`` (seed 001's lines: Huber by default) are chosen apart."""
    default = load_baselines()
    assert (default.fit, default.holistic_fit) == ("least-squares", "huber")
    p = tmp_path / "b.yaml"
    p.write_text("version: '9'\nfit: huber\n")
    spec = load_baselines(p)
    assert spec.fit == "huber" and spec.as_record()["fit"] == "huber"
    assert spec.as_record()["holistic_fit"] == "huber"
    p.write_text("version: '9'\nholistic_fit: least-squares\n")
    assert load_baselines(p).holistic_fit == "least-squares"
    p.write_text("version: '9'\nholistic_fit: l1\n")
    with pytest.raises(BaselineSpecError, match="holistic_fit must be one of"):
        load_baselines(p)
    p.write_text("version: '9'\nfit: lasso\n")
    with pytest.raises(BaselineSpecError, match="fit must be one of"):
        load_baselines(p)
    with pytest.raises(ValueError, match="fit must be one of"):
        BaselineSpec(version="x", fit="ols")


def test_slow_convergence_and_the_weighted_deviance_follow_statsmodels() -> None:
    """A resample whose IRLS converges slowly: statsmodels stops on the change of
    Σ ρ(r / v) with v the weighted fit's residual variance, after at most 49
    refits; stopping on Σ ρ(r / s) with the MAD scale stopped 2e-5 away."""
    x = np.array([1.0, -0.2, -0.5, -1.0, -0.7])
    y = np.array([0.5, 0.2, 0.0, -1.3, -1.0])
    w = np.array([1.0, 3.0, 0.0, 3.0, 2.0])
    ra, rb = _statsmodels_huber(np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int)))
    a, b = huber_line(x, y, w)
    assert float(a) == pytest.approx(ra, abs=1e-9) and float(b) == pytest.approx(rb, abs=1e-9)


def test_one_point_holding_over_half_the_weight_has_no_huber_line() -> None:
    """Drawn 3 times of 5, one point pulls every Huber line through itself (its
    residual is the median, the MAD scale collapses): no line, as a resample of
    too few models has none; least squares still has one."""
    x = np.array([-0.7, -0.3, -0.8])
    y = np.array([-1.4, -0.6, -0.6])
    a, b = huber_line(x, y, np.array([[1.0, 3.0, 1.0], [1.0, 2.0, 1.0]]))
    assert np.isnan(a[0]) and np.isnan(b[0]) and np.isfinite(a[1])
    assert np.isfinite(fit.least_squares(x, y, np.array([1.0, 3.0, 1.0]))[0])
