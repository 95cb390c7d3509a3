"""The shared temperature fit (vlmrobust/metrics/temperature.py): its moments
are the NLL's derivatives in β (checked by finite differences of an
independent log-sum-exp NLL, scipy's), its Newton search lands on scipy's
bounded minimiser, and both fits that use it agree on finite logits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from vlmrobust.metrics import calibration, classification
from vlmrobust.metrics.temperature import (
    LOG_T_BOUNDS,
    newton_temperature,
    nll_beta_moments,
    on_lower_bound,
)


def _nll(z: np.ndarray, y: np.ndarray, beta: float) -> float:
    return float(np.mean(logsumexp(beta * z, axis=1) - beta * z[np.arange(len(y)), y]))


def test_moments_are_the_nll_derivatives_in_beta_with_padding() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(40, 6)) * 3
    y = rng.integers(0, 3, 40)
    z[::2, 4:] = -np.inf  # padded options of shorter rows; labels stay in 0..2
    zc = z - z.max(axis=1, keepdims=True)
    z0 = np.where(np.isfinite(zc), zc, 0.0)
    zy = zc[np.arange(40), y]
    eps = 1e-5
    for beta in (0.3, 1.0, 2.5):
        g, h = nll_beta_moments(zc, z0, zy, beta)
        fd_g = (_nll(z, y, beta + eps) - _nll(z, y, beta - eps)) / (2 * eps)
        fd_h = (_nll(z, y, beta + eps) - 2 * _nll(z, y, beta) + _nll(z, y, beta - eps)) / eps**2
        assert g / 40 == pytest.approx(fd_g, rel=1e-6, abs=1e-8)
        assert h / 40 == pytest.approx(fd_h, rel=1e-3, abs=1e-5)
        assert h > 0


@pytest.mark.parametrize("seed", range(5))
def test_newton_search_equals_scipys_bounded_minimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(200, 8)) * rng.uniform(0.5, 6)
    y = np.where(rng.uniform(size=200) < 0.6, z.argmax(axis=1), rng.integers(0, 8, 200))
    zc = z - z.max(axis=1, keepdims=True)
    zy = zc[np.arange(200), y]

    def grad_curv(beta: float) -> tuple[float, float]:
        g, h = nll_beta_moments(zc, zc, zy, beta)
        return g / 200, h / 200

    t = newton_temperature(grad_curv)
    ref = minimize_scalar(lambda log_t: _nll(z, y, float(np.exp(-log_t))), bounds=LOG_T_BOUNDS,
                          method="bounded", options={"xatol": 1e-10})
    assert np.log(t) == pytest.approx(ref.x, abs=1e-5)
    assert calibration.fit_temperature(z, y) == pytest.approx(t, rel=1e-12)
    assert classification.fit_temperature(z, y, chunk_rows=17) == pytest.approx(t, rel=1e-12)


def test_constant_logits_give_one_and_errorless_rows_the_lower_bound() -> None:
    assert newton_temperature(lambda b: (0.0, 0.0)) == 1.0
    z = np.array([[3.0, 0.0], [0.0, 2.0]])
    t = calibration.fit_temperature(z, np.array([0, 1]))
    assert on_lower_bound(t) and t == pytest.approx(np.exp(LOG_T_BOUNDS[0]))
    assert not on_lower_bound(np.exp(LOG_T_BOUNDS[0]) * 1.01)
