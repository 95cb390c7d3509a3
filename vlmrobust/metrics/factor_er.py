"""Factor-level effective robustness on ImageNet-X (seed 001 §IV): for each
factor f, the baseline models' points (overall ImageNet-X accuracy, accuracy on
the images whose top factor is f) are fitted by least squares on probit axes,

    Φ⁻¹(acc_f) = a_f · Φ⁻¹(acc_all) + b_f,

and a model's factor ER is its factor accuracy above that line:

    ER_f(model) = acc_f(model) − Φ(a_f · Φ⁻¹(acc_all(model)) + b_f).

A factor whose baseline has fewer than two models with an accuracy on it (or
whose baseline models all share one overall accuracy) has no line; its ERs
are None, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vlmrobust.metrics.effective_robustness import LineFit, effective_robustness, fit_line


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
) -> dict[str, FactorLine]:
    """{factor: FactorLine}. ``overall``: model -> accuracy over all annotated
    ImageNet-X images; ``factor_accuracy``: model -> factor -> accuracy (None
    where the model has no image of the factor); ``baseline``: the models the
    lines are fitted on (the reference line's models).

    >>> from vlmrobust.metrics.transforms import inverse_probit as ip
    >>> overall = {"r1": float(ip(-1.0)), "r2": float(ip(1.0)), "m": float(ip(0.0))}
    >>> pose = {"r1": {"pose": float(ip(-1.5))}, "r2": {"pose": float(ip(0.5))},
    ...         "m": {"pose": float(ip(0.0))}}
    >>> line = factor_effective_robustness(overall, pose, ["r1", "r2"], ["pose"])["pose"]
    >>> round(line.fit.slope, 6), round(line.fit.intercept, 6), round(line.er["m"], 6)
    (1.0, -0.5, 0.191462)
    """
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
        try:
            fit = fit_line([x for _, x, _ in usable], [y for _, _, y in usable], transform)
        except ValueError as exc:
            out[f] = FactorLine(f, None, names, {m: None for m in overall}, str(exc))
            continue
        er: dict[str, float | None] = {}
        for m, x in overall.items():
            y = factor_accuracy.get(m, {}).get(f)
            er[m] = None if x is None or y is None else float(effective_robustness(fit, x, y))
        out[f] = FactorLine(f, fit, names, er)
    return out
