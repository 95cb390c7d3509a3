"""Bootstrap intervals of factor-level effective robustness (ImageNet-X; seed
001 §IV), drawn as the shift ERs' are (vlmrobust.leaderboard.fits.shifts): one
joint bootstrap over a model's images and the line's models.

- Images. Each model's annotated images are redrawn with replacement
  (vlmrobust.metrics.lines.factor_er.resample_factor_accuracies: top-factor
  annotations partition them by factor, so the overall accuracy and every
  factor accuracy of a replicate come from the same redrawn images), with one
  generator per (dataset, config, model).
- Models. The reference models are redrawn with replacement (one multiplicity
  vector per (dataset, config), shared by every factor); replicate b's line of
  factor f is the line through its redrawn models at their redrawn accuracies,
  on the spec's transform axes, fitted as the point line is (``holistic_fit``:
  Huber by default, seed 001 Fig. 1):

      ER_f*(m) = acc_f*(m) − t⁻¹(a_f* · t(acc_all*(m)) + b_f*).

The interval is the percentile interval at the spec's level over the
replicates that define a line (:func:`vlmrobust.leaderboard.fits.bootstrap.interval`:
at least 3 distinct models; a replicate where a model drew no image of the
factor is left out), or None with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.fits.bootstrap import MIN_BOOTSTRAP_MODELS, interval, seeded_rng
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.metrics.lines.factor_er import FactorLine, factor_cells, resample_factor_accuracies

Interval = tuple[tuple[float, float] | None, str | None]
ANNOTATED = "annotated"


def _draws(results: Mapping[str, Mapping[str, tuple[int, float | None]]], factors: Sequence[str],
           spec: BaselineSpec, parts: Sequence[str]
           ) -> tuple[dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]], dict[str, str]]:
    """model -> (overall replicates, factor replicates) and model -> why it has none."""
    draws: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    why: dict[str, str] = {}
    for m, res in results.items():
        n, acc = res.get(ANNOTATED, (0, None))
        if acc is None or n <= 0:
            why[m] = "not estimable: no annotated image"
            continue
        try:
            cells = factor_cells(n, acc, res, factors)
        except ValueError as exc:
            why[m] = f"not estimable: {exc}"
            continue
        rng = seeded_rng(spec.seed, "factor-images", *parts, m)
        draws[m] = resample_factor_accuracies(cells, spec.n_bootstrap, rng)
    return draws, why


def factor_er_intervals(results: Mapping[str, Mapping[str, tuple[int, float | None]]],
                        lines: Mapping[str, FactorLine], factors: Sequence[str],
                        spec: BaselineSpec, *parts: str) -> dict[str, dict[str, Interval]]:
    """factor -> model -> (interval of its factor ER, or None with why).
    ``results``: model -> its scores' ``factors`` block ({factor: (n, accuracy)},
    ``annotated`` included); ``lines``: the point lines
    (:func:`vlmrobust.metrics.lines.factor_er.factor_effective_robustness`);
    ``parts`` key the generators (dataset, config)."""
    b = spec.n_bootstrap
    draws, why = _draws(results, factors, spec, parts) if b else ({}, {})
    base = sorted({m for ln in lines.values() for m in ln.baseline})
    weights = fit.bootstrap_weights(len(base), b, seeded_rng(spec.seed, "factor-models", *parts))
    out: dict[str, dict[str, Interval]] = {}
    for j, f in enumerate(factors):
        line = lines[f]
        missing = [m for m in line.baseline if m not in draws]
        a = c = np.empty(0)
        if line.fit is not None and b and not missing:
            cols = [base.index(m) for m in line.baseline]
            x = np.stack([draws[m][0] for m in line.baseline], axis=1)
            y = np.stack([draws[m][1][:, j] for m in line.baseline], axis=1)
            seen = np.isfinite(y)  # a model that drew no image of f is out of that replicate
            a, c = fit.line_params(fit.transform(x, spec.transform),
                                   fit.transform(np.where(seen, y, 0.5), spec.transform),
                                   weights[:, cols] * seen, spec.holistic_fit,
                                   min_points=MIN_BOOTSTRAP_MODELS)
        per: dict[str, Interval] = {}
        for m in results:
            if line.fit is None or line.er.get(m) is None:
                per[m] = (None, "no factor ER")
            elif not b:
                per[m] = interval(np.empty(0), spec.level, b)
            elif m in why:
                per[m] = (None, why[m])
            elif missing:
                per[m] = (None, f"not estimable: reference model {missing[0]}: {why[missing[0]]}")
            else:
                overall, fac = draws[m]
                per[m] = interval(fit.effective_robustness(overall, fac[:, j], a, c,
                                                           spec.transform), spec.level, b)
        out[f] = per
    return out
