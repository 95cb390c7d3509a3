"""Factor-level effective robustness on ImageNet-X (seed 001 §IV): for each
factor f, the baseline models' points (overall ImageNet-X accuracy, accuracy on
the images whose top factor is f) are fitted by a line on probit axes,

    Φ⁻¹(acc_f) = a_f · Φ⁻¹(acc_all) + b_f,

by Huber-robust regression by default (seed 001 Fig. 1: "The blue straight lines
are fit with robust linear regression [75]"; vlmrobust.metrics.lines.robust_fit.huber_line,
statsmodels' RLM with HuberT) or by least squares (``fit="least-squares"``, the
effective-robustness lines of Taori et al.), and a model's factor ER is its
factor accuracy above that line:

    ER_f(model) = acc_f(model) − Φ(a_f · Φ⁻¹(acc_all(model)) + b_f).

A factor whose baseline has fewer than two models with an accuracy on it (or
whose baseline models all share one overall accuracy) has no line; its ERs
are None, with the reason.

For intervals, :func:`factor_cells` and :func:`resample_factor_accuracies`
resample a model's annotated images (the joint bootstrap over images and the
line's models is vlmrobust.leaderboard.fits.factor_intervals).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vlmrobust.metrics.lines.effective_robustness import LineFit, effective_robustness, fit_line
from vlmrobust.metrics.lines.robust_fit import FITS, line_params
from vlmrobust.metrics.transforms import get_transform


@dataclass(frozen=True)
class FactorLine:
    """One factor's fitted line (None with ``reason`` when there is none) and
    every model's ER against it."""

    factor: str
    fit: LineFit | None
    baseline: tuple[str, ...]  # the models the line was fitted on
    er: Mapping[str, float | None] = field(default_factory=dict)
    reason: str | None = None


def factor_effective_robustness(
    overall: Mapping[str, float | None],
    factor_accuracy: Mapping[str, Mapping[str, float | None]],
    baseline: Sequence[str],
    factors: Sequence[str],
    transform: str = "probit",
    fit: str = "huber",
) -> dict[str, FactorLine]:
    """{factor: FactorLine}. ``overall``: model -> accuracy over all annotated
    ImageNet-X images; ``factor_accuracy``: model -> factor -> accuracy (None
    where the model has no image of the factor); ``baseline``: the models the
    lines are fitted on (the reference line's models); ``fit``: ``huber`` (seed
    001) or ``least-squares``. Two points lie on any line, so both fits agree there.

    >>> from vlmrobust.metrics.transforms import inverse_probit as ip
    >>> overall = {"r1": float(ip(-1.0)), "r2": float(ip(1.0)), "m": float(ip(0.0))}
    >>> pose = {"r1": {"pose": float(ip(-1.5))}, "r2": {"pose": float(ip(0.5))},
    ...         "m": {"pose": float(ip(0.0))}}
    >>> line = factor_effective_robustness(overall, pose, ["r1", "r2"], ["pose"])["pose"]
    >>> round(line.fit.slope, 6), round(line.fit.intercept, 6), round(line.er["m"], 6)
    (1.0, -0.5, 0.191462)
    """
    if fit not in FITS:
        raise ValueError(f"fit must be one of {', '.join(FITS)}, got {fit!r}")
    out: dict[str, FactorLine] = {}
    for f in factors:
        pts = [(m, overall.get(m), factor_accuracy.get(m, {}).get(f)) for m in baseline]
        usable = [(m, x, y) for m, x, y in pts if x is not None and y is not None]
        names = tuple(m for m, _, _ in usable)
        if len(usable) < 2:
            out[f] = FactorLine(f, None, names, {m: None for m in overall},
                                f"{len(usable)} baseline model(s) with an accuracy on {f}; "
                                "a line needs 2")
            continue
        xs, ys = [x for _, x, _ in usable], [y for _, _, y in usable]
        try:
            line = fit_line(xs, ys, transform)
        except ValueError as exc:
            out[f] = FactorLine(f, None, names, {m: None for m in overall}, str(exc))
            continue
        if fit != "least-squares":
            fwd = get_transform(transform)[0]
            a, b = line_params(fwd(np.asarray(xs)), fwd(np.asarray(ys)), method=fit)
            line = LineFit(float(a), float(b), transform, line.n_models)
        er: dict[str, float | None] = {}
        for m, x in overall.items():
            y = factor_accuracy.get(m, {}).get(f)
            er[m] = None if x is None or y is None else float(effective_robustness(line, x, y))
        out[f] = FactorLine(f, line, names, er)
    return out


def factor_cells(n: int, accuracy: float, factors: Mapping[str, tuple[int, float | None]],
                 names: Sequence[str]) -> NDArray[np.int64]:
    """The ``n`` annotated images counted by cell, for an image bootstrap:
    ``[c_1, w_1, ..., c_F, w_F, c_o, w_o]``, where c_f / w_f are the correct / wrong
    images whose top factor is ``names[f]`` (c_f = round(n_f · acc_f): accuracies
    are counts over n_f) and o is every other annotated image. Top-factor
    annotations give an image one factor, so the cells partition the n images;
    counts that cannot (factors overlapping, as in a multi-factor file) raise
    ValueError.

    >>> factor_cells(10, 0.6, {"pose": (4, 0.5), "color": (2, 1.0)}, ["pose", "color"]).tolist()
    [2, 2, 2, 0, 2, 2]
    """
    if n < 0 or not 0.0 <= accuracy <= 1.0:
        raise ValueError(f"n {n} and accuracy {accuracy} must be >= 0 and in [0, 1]")
    cells: list[int] = []
    for f in names:
        n_f, acc_f = factors.get(f, (0, None))
        if n_f < 0 or (n_f and (acc_f is None or not 0.0 <= acc_f <= 1.0)):
            raise ValueError(f"factor {f}: n {n_f} with accuracy {acc_f}")
        c = round(n_f * acc_f) if n_f and acc_f is not None else 0
        cells += [c, n_f - c]
    correct = round(n * accuracy) - sum(cells[0::2])
    wrong = n - round(n * accuracy) - sum(cells[1::2])
    if correct < 0 or wrong < 0:
        raise ValueError(f"the factors hold more images ({sum(cells)}) or more correct ones "
                         f"than the {n} annotated images: factors overlap (a multi-factor "
                         "annotation file), so images cannot be resampled from the counts")
    return np.asarray([*cells, correct, wrong], dtype=np.int64)


def resample_factor_accuracies(cells: NDArray[np.int64], n_boot: int, rng: np.random.Generator
                               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Image-bootstrap replicates of (overall accuracy, per-factor accuracies)
    from :func:`factor_cells`: drawing the n images with replacement draws the
    cell counts from Multinomial(n, cells / n), so both accuracies of a
    replicate come from one resample of the same images. Returns shapes
    (n_boot,) and (n_boot, F); a replicate with no image of a factor has NaN.

    >>> cells = factor_cells(400, 0.75, {"pose": (100, 0.5)}, ["pose"])
    >>> acc, fac = resample_factor_accuracies(cells, 4000, np.random.default_rng(0))
    >>> round(float(acc.std()), 3), round(float(fac[:, 0].std()), 2)  # √(.75·.25/400), √(.25/100)
    (0.022, 0.05)
    """
    n = int(cells.sum())
    if n == 0:
        nan = np.full(n_boot, np.nan)
        return nan, np.full((n_boot, (cells.size - 2) // 2), np.nan)
    draws = rng.multinomial(n, cells / n, size=n_boot).astype(np.float64)
    overall = draws[:, 0::2].sum(axis=1) / n
    correct, seen = draws[:, 0:-2:2], draws[:, 0:-2:2] + draws[:, 1:-2:2]
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(seen > 0, correct / np.where(seen > 0, seen, 1.0), np.nan)
    return overall, factor
