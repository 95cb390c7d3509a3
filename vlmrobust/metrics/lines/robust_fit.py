"""Line fits vectorised over rows of point weights (bootstrap
multiplicities): weighted least squares (:func:`least_squares`, the
leaderboard's effective-robustness lines) and Huber-robust fits (seed 001 fits
its trend lines by robust regression): iteratively reweighted least squares
with Huber's ψ, as statsmodels' ``RLM(y, X, M=HuberT(t))`` with its default
scale. Both share one weighted fit (:func:`_wls`) and one rule for which fits
are estimable."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: How a trend line is fitted (:func:`line_params`): least squares (Taori et al. 2020, seed
#: 000's effective robustness) or Huber-robust IRLS (seed 001: "The blue straight lines are
#: fit with robust linear regression [75]", Figs. 1, 3, 9, 10; [75] is Huber's "Robust
#: statistics").
FITS = ("least-squares", "huber")
#: Huber's tuning constant: 95% efficiency at the normal (statsmodels' HuberT default).
HUBER_T = 1.345
# Φ⁻¹(3/4): MAD / this estimates σ at the normal
_MAD_NORMAL = 0.6744897501960817


def weighted_median(values: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Median of each row of ``values`` with integer multiplicities ``w``: the
    median of the row repeated w times (the mean of the two middle values when
    the total is even).

    >>> float(weighted_median(np.array([1.0, 2.0, 10.0]), np.array([1.0, 2.0, 1.0])))
    2.0
    >>> float(weighted_median(np.array([1.0, 2.0, 10.0]), np.array([1.0, 1.0, 0.0])))
    1.5
    """
    order = np.argsort(values, axis=-1)
    v = np.take_along_axis(values, order, axis=-1)
    cw = np.cumsum(np.take_along_axis(np.broadcast_to(w, values.shape), order, axis=-1), axis=-1)
    total = cw[..., -1:]
    # 0-based positions of the two middle elements of the repeated row
    lo = np.floor((total - 1) / 2)
    hi = np.ceil((total - 1) / 2)
    i_lo = np.minimum((cw <= lo).sum(axis=-1, keepdims=True), v.shape[-1] - 1)
    i_hi = np.minimum((cw <= hi).sum(axis=-1, keepdims=True), v.shape[-1] - 1)
    out = 0.5 * (np.take_along_axis(v, i_lo, axis=-1) + np.take_along_axis(v, i_hi, axis=-1))
    return np.asarray(out[..., 0], dtype=np.float64)


def _wls(x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64],
         min_points: int = 2,
         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """(a, b, estimable) of the weighted least-squares line per row of ``w``;
    a fit is estimable when x has spread and ``min_points`` distinct points
    carry weight (elsewhere a and b are arithmetic leftovers, not NaN)."""
    sw = w.sum(axis=-1)
    safe = np.where(sw > 0, sw, 1.0)
    xm = (w * x).sum(axis=-1) / safe
    ym = (w * y).sum(axis=-1) / safe
    dx = x - xm[..., None]
    sxx = (w * dx**2).sum(axis=-1)
    a = (w * dx * (y - ym[..., None])).sum(axis=-1) / np.where(sxx > 0, sxx, 1.0)
    # Relative tolerance: a resample that drew one model n times has sxx ~ 1e-30.
    ok = (sw > 0) & (sxx > 1e-12 * np.maximum(1.0, (w * x**2).sum(axis=-1)))
    ok &= (w > 0).sum(axis=-1) >= min_points
    return a, ym - a * xm, ok


def least_squares(x: NDArray[np.float64], y: NDArray[np.float64],
                  w: NDArray[np.float64] | None = None, min_points: int = 2,
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Weighted least-squares slope and intercept of y = a·x + b, one fit per row
    of the weights ``w`` (shape (..., m); all ones when None):
    x̄ = Σwx/Σw, a = Σw(x − x̄)(y − ȳ) / Σw(x − x̄)², b = ȳ − a·x̄.
    Integer weights are bootstrap multiplicities; a zero weight leaves a point out.
    Fits whose x has no spread, or with fewer than ``min_points`` distinct points
    (non-zero weights), get NaN.

    >>> a, b = least_squares(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]))
    >>> float(a), float(b)
    (2.0, 1.0)
    >>> a, b = least_squares(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 9.0]),
    ...                      np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 4.0]]))
    >>> a.tolist(), b.tolist()
    ([2.0, nan], [1.0, nan])
    >>> least_squares(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]),
    ...               np.array([2.0, 1.0, 0.0]), min_points=3)[0].tolist()
    nan
    """
    ww = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    a, b, ok = _wls(x, y, ww, min_points)
    return (np.asarray(np.where(ok, a, np.nan), dtype=np.float64),
            np.asarray(np.where(ok, b, np.nan), dtype=np.float64))


def huber_line(x: NDArray[np.float64], y: NDArray[np.float64], w: NDArray[np.float64] | None = None,
               t: float = HUBER_T, max_iter: int = 50, tol: float = 1e-8, min_points: int = 2,
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Slope and intercept of y = a·x + b minimising Σ wᵢ ρ((yᵢ − a·xᵢ − b)/s),
    Huber's ρ with constant ``t``, one fit per row of ``w`` (shape (..., m)).

    IRLS from the least-squares fit, step for step as statsmodels'
    ``RLM(y, X, M=HuberT(t)).fit()`` (its defaults: MAD scale, ``conv="dev"``,
    ``maxiter=50``): each step estimates the scale s = median|r| / Φ⁻¹(3/4) (MAD
    about 0, over the multiplicities) of the current fit, gives point i the weight
    hᵢ = min(1, t·s/|rᵢ|) and refits by weighted least squares; it stops when
    the criterion Σ wᵢ ρ(rᵢ / v) changes by at most ``tol`` or after
    ``max_iter`` − 1 refits, where v = Σ wᵢ hᵢ rᵢ² / (Σ wᵢ − 2) is the weighted
    fit's residual variance (statsmodels' ``deviance`` divides by that WLS
    scale, not by s). A fit whose x has no spread, or with fewer than
    ``min_points`` distinct points, is NaN; a perfect fit (s = 0) keeps its line.
    So is a row where one point carries more than half the weight (a bootstrap
    resample that drew one model that often): every line through that point has
    a median residual of 0, so the MAD scale collapses and the slope the
    iterations stop at is rounding noise, not an estimate.

    >>> x = np.arange(10.0); y = x.copy(); y[4] = 30.0  # one outlier, not a leverage point
    >>> a, b = huber_line(x, y)
    >>> round(float(a), 3), abs(round(float(b), 3))
    (1.0, 0.0)
    """
    if t <= 0:
        raise ValueError(f"t must be > 0, got {t}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ww = np.ones_like(x) if w is None else np.asarray(w, dtype=np.float64)
    shape = np.broadcast_shapes(x.shape, y.shape, ww.shape)
    lead = shape[:-1]
    # one row per fit; a row leaves the loop once converged, so the rows still
    # iterating (a few in a thousand bootstrap resamples) are all that is computed
    x, y, ww = (np.broadcast_to(v, shape).reshape(-1, shape[-1]) for v in (x, y, ww))
    a, b, ok = _wls(x, y, ww, min_points)
    ok &= 2.0 * ww.max(axis=-1) <= ww.sum(axis=-1)
    prev = np.full(a.shape, np.inf)
    h = np.ones(x.shape)  # the Huber weights of the fit (a, b) came from
    dof = np.maximum(ww.sum(axis=-1) - 2.0, 1.0)
    act = np.flatnonzero(ok)
    for i in range(max_iter):
        if act.size == 0:
            break
        xa, ya, wa = x[act], y[act], ww[act]
        r = ya - (a[act, None] * xa + b[act, None])
        v = (wa * h[act] * r**2).sum(axis=-1) / dof[act]
        zd = np.abs(r) / np.where(v > 0, v, 1.0)[:, None]
        dev = (wa * np.where(zd <= t, 0.5 * zd**2, t * zd - 0.5 * t**2)).sum(axis=-1)
        s = weighted_median(np.abs(r), wa) / _MAD_NORMAL
        live = (s > 0) & ~(np.abs(dev - prev[act]) <= tol)
        if i == max_iter - 1:
            break
        prev[act] = dev
        act, r, s, xa, ya, wa = act[live], r[live], s[live], xa[live], ya[live], wa[live]
        z = np.abs(r) / s[:, None]
        h[act] = np.where(z <= t, 1.0, t / np.maximum(z, 1e-300))
        a[act], b[act], _ = _wls(xa, ya, wa * h[act])
    a = np.where(ok, a, np.nan).reshape(lead)
    b = np.where(ok, b, np.nan).reshape(lead)
    return np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)


def line_params(x: NDArray[np.float64], y: NDArray[np.float64],
                w: NDArray[np.float64] | None = None, method: str = "least-squares",
                min_points: int = 2) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Slope and intercept per row of ``w`` by ``method`` (one of :data:`FITS`):
    :func:`least_squares` or :func:`huber_line`.

    >>> x = np.arange(10.0); y = x.copy(); y[4] = 30.0
    >>> [round(float(v), 3) for v in line_params(x, y, method="huber")]
    [1.0, 0.0]
    >>> [round(float(v), 3) for v in line_params(x, y)]
    [0.842, 3.309]
    """
    if method == "least-squares":
        return least_squares(x, y, w, min_points)
    if method == "huber":
        return huber_line(x, y, w, min_points=min_points)
    raise ValueError(f"unknown fit method {method!r}; choose least-squares or huber")
