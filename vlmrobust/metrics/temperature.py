"""The one temperature fit behind both calibration paths: the K-option
:func:`vlmrobust.metrics.calibration.fit_temperature` (padded logits, in
memory) and the label-space
:func:`vlmrobust.metrics.classification.fit_temperature` (finite logits,
streamed in chunks). They differ only in how rows reach the moments below, so
the moments and the Newton search live here once.

In β = 1/T the NLL, mean_i [log Σ_k exp(β z_ik) − β z_iy], is convex, with
gradient mean_i (E_p[z_i] − z_iy) and curvature mean_i Var_p(z_i) ≥ 0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

# log T is searched in [−5, 5]: T from 0.0067 to 148 covers any sane model.
LOG_T_BOUNDS = (-5.0, 5.0)


def nll_beta_moments(zc: NDArray[np.float64], z0: NDArray[np.float64], zy: NDArray[np.float64],
                     beta: float) -> tuple[float, float]:
    """Σ_i (E_p[z_i] − z_iy) and Σ_i Var_p(z_i) over a block of rows, with
    p = softmax(β z_i): the NLL's gradient and curvature in β, times the rows.

    ``zc`` holds row-max-shifted logits (≤ 0, so exp stays ≤ 1; −inf for padded
    options, whose p is 0); ``z0`` is ``zc`` with −inf set to 0 so that p·z is
    0 there rather than 0·(−inf) = NaN (pass ``zc`` itself when every logit is
    finite: no copy). ``zy`` is the shifted logit of each row's label.

    >>> zc = np.array([[0.0, -2.0]]); g, h = nll_beta_moments(zc, zc, np.array([-2.0]), 0.0)
    >>> g, h  # β = 0: p uniform, E[z] = −1, Var = 1
    (1.0, 1.0)
    """
    e = np.exp(beta * zc)
    total = e.sum(axis=1)
    # In place: a block's float64 copies stay at two (zc and e) for the chunked caller.
    e *= z0
    m1 = e.sum(axis=1) / total
    e *= z0
    m2 = e.sum(axis=1) / total
    return float((m1 - zy).sum()), float(np.maximum(m2 - m1 * m1, 0.0).sum())


def newton_temperature(grad_curv: Callable[[float], tuple[float, float]]) -> float:
    """T* = 1/β* with β* = argmin NLL(β) over T ∈ [e⁻⁵, e⁵], from
    ``grad_curv(β) = (dNLL/dβ, d²NLL/dβ²)``.

    Newton's step β − g/h, safeguarded by bisection (in log space) of the
    bracket that the gradient's sign keeps; a handful of calls to
    ``grad_curv`` (each a pass over the data). Constant logits (g = h = 0) give
    T* = 1; a gradient that keeps its sign up to a bound puts T* on that bound.

    >>> newton_temperature(lambda b: (b - 0.5, 1.0))  # NLL = (β − ½)²/2: β* = ½
    2.0
    """
    lo, hi = float(np.exp(-LOG_T_BOUNDS[1])), float(np.exp(-LOG_T_BOUNDS[0]))
    beta = 1.0
    g, h = grad_curv(beta)
    if h <= 1e-15 and abs(g) <= 1e-15:
        return 1.0
    # Uninformative logits put the optimum on a bound: check it before iterating.
    edge = lo if g > 0 else hi
    g_edge, _ = grad_curv(edge)
    if (g > 0 and g_edge >= 0) or (g <= 0 and g_edge <= 0):
        return float(1.0 / edge)
    for _ in range(100):
        if g > 0:
            hi = beta
        else:
            lo = beta
        step = g / h if h > 0 else np.inf
        # Converged: without this, a last Newton step that lands on the bracket's
        # edge falls back to bisection, which creeps the remaining 1e-9 for a dozen passes.
        if abs(step) <= 1e-10 * beta:
            beta -= step
            break
        nxt = beta - step
        if not lo < nxt < hi:
            nxt = float(np.sqrt(lo * hi))
        if abs(nxt - beta) <= 1e-10 * beta or hi - lo <= 1e-10 * hi:
            beta = nxt
            break
        beta = nxt
        g, h = grad_curv(beta)
    return float(1.0 / beta)


def on_lower_bound(t: float) -> bool:
    """Whether a fitted T sits on the lower search bound e⁻⁵ (T → 0: no
    finite optimum). The upper bound is a real answer (uninformative logits:
    flatten them, NLL → log K); only T → 0 turns one held-out mistake into an
    absurd NLL.

    >>> on_lower_bound(float(np.exp(-5.0))), on_lower_bound(0.5)
    (True, False)
    """
    return t <= float(np.exp(LOG_T_BOUNDS[0])) * (1 + 1e-9)
