"""S, C, ECE, NLL and temperature scaling against independent implementations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats
from sklearn.metrics import log_loss

from vlmrobust.metrics.calibration import (
    calibration_report,
    expected_calibration_error,
    fit_temperature,
    negative_log_likelihood,
)
from vlmrobust.metrics.uncertainty import normalized_entropy, softmax


def _ece_loop(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """Independent ECE: explicit loop over bins ((b−1)/B, b/B], as in Guo et al."""
    conf = probs.max(axis=1)
    pred = probs.argmax(axis=1)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        in_bin = (conf > lo) & (conf <= hi) if b else (conf >= 0) & (conf <= hi)
        if in_bin.any():
            acc = (pred[in_bin] == labels[in_bin]).mean()
            total += in_bin.mean() * abs(acc - conf[in_bin].mean())
    return total


def _data(n: int = 300, k: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    z = rng.normal(size=(n, k)) * 2.0
    z[np.arange(n), y] += 1.5
    return z, y


def test_softmax_and_entropy_match_scipy() -> None:
    z, _ = _data(50)
    p = softmax(z)
    assert np.allclose(p, special.softmax(z, axis=1))
    assert np.allclose(normalized_entropy(p), stats.entropy(p, axis=1) / np.log(5))


def test_entropy_with_padding_uses_row_k() -> None:
    p = softmax([[0.0, 0.0, -np.inf], [1.0, 2.0, 3.0]])
    s = normalized_entropy(p, n_options=[2, 3])
    assert s[0] == pytest.approx(1.0)
    assert s[1] == pytest.approx(stats.entropy(p[1]) / np.log(3))


@pytest.mark.parametrize("n_bins", [1, 5, 15])
def test_ece_matches_loop(n_bins: int) -> None:
    z, y = _data()
    p = softmax(z)
    assert expected_calibration_error(p, y, n_bins) == pytest.approx(_ece_loop(p, y, n_bins), abs=1e-12)


def test_ece_is_zero_for_perfect_calibration() -> None:
    # confidence 1 and always right
    p = np.eye(4)
    assert expected_calibration_error(p, np.arange(4)) == 0.0


def test_nll_matches_sklearn() -> None:
    z, y = _data()
    assert negative_log_likelihood(z, y) == pytest.approx(log_loss(y, softmax(z), labels=range(5)))
    assert negative_log_likelihood(z, y, temperature=2.0) == pytest.approx(
        log_loss(y, softmax(z / 2.0), labels=range(5)))


def test_fit_temperature_matches_grid_search() -> None:
    z, y = _data(seed=3)
    t = fit_temperature(z * 3.0, y)  # over-confident logits need T > 1
    grid = np.exp(np.linspace(-2, 3, 5001))
    # independent: scipy's log_softmax at every grid temperature at once
    lp = special.log_softmax(z[None] * 3.0 / grid[:, None, None], axis=2)
    nll = -lp[:, np.arange(len(y)), y].mean(axis=1)
    best = grid[np.argmin(nll)]
    assert t == pytest.approx(best, rel=5e-3)
    assert t > 1.0


def test_calibration_report_cross_fitted_halves() -> None:
    z, y = _data(400, seed=4)
    rep = calibration_report(z * 4.0, y, seed=0)
    assert rep.nll == pytest.approx(negative_log_likelihood(z * 4.0, y))
    assert rep.temperature > 1.0
    assert rep.nll_ts < rep.nll and rep.ece_ts < rep.ece
    assert rep == calibration_report(z * 4.0, y, seed=0)
    # cross-fitting by hand: T fitted on one half scores the other
    perm = np.random.default_rng(0).permutation(400)
    a, b = perm[:200], perm[200:]
    ta, tb = fit_temperature(z[a] * 4, y[a]), fit_temperature(z[b] * 4, y[b])
    scaled = np.empty_like(z)
    scaled[b] = z[b] * 4 / ta
    scaled[a] = z[a] * 4 / tb
    assert rep.nll_ts == pytest.approx(negative_log_likelihood(scaled, y))
    assert rep.temperature == pytest.approx(np.sqrt(ta * tb))


def test_argument_checks_name_the_bad_value() -> None:
    with pytest.raises(ValueError, match=r"labels must be in \[0, 2\), got 3"):
        expected_calibration_error([[0.5, 0.5]], [3])
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error([[0.5, 0.5]], [0], n_bins=0)
    with pytest.raises(ValueError, match="NaN"):
        negative_log_likelihood([[np.nan, 0.0]], [0])
    with pytest.raises(ValueError, match="temperature"):
        softmax([[0.0, 1.0]], temperature=0.0)
