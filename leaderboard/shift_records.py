"""The dataset keys and display orders the site shares, and the records of a line
fit on a shift: each :class:`ShiftFit` (kind reference, self-reported, family,
group or prompt) with its :class:`Point` s, every model's ER per shift
(:class:`ERValue`) and per strategy (:class:`MeanER`). Below the
:class:`~vlmrobust.leaderboard.board.Leaderboard` that holds them and the fits and
pages that compute them from it (issue 38.4: no import circles)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vlmrobust.leaderboard.fits import lines as fit

IMAGENET = "imagenet-mcq"
BENCH_C = "bench-c"
IMAGEWIKIQA = "imagewikiqa"
# 5 options per imagenet-mcq question (DESIGN.md): a random guess scores 1/5.
CHANCE = {IMAGENET: 1.0 / 5.0, IMAGEWIKIQA: 1.0 / 4.0}
# Display order for the real variants; unknown (e.g. sample) variants follow, sorted.
VARIANT_ORDER = ("imagenet-val", "imagenet-v2", "imagenet-r", "imagenet-sketch", "objectnet",
                 "imagenet-a")
FAMILY_ORDER = ("classifier", "clip", "vlm", "other")
REFERENCE = "reference"
# Models of the reference family (or list) that are not in the maintainers'
# reference-run record: their own line, never the reference one.
SELF_REPORTED = "self-reported"
LINE_KINDS = (REFERENCE, SELF_REPORTED, "family", "group", "prompt")
UNSPECIFIED_PROMPT = "unspecified"
# A line below this R² or with fewer models carries a visible warning wherever
# an ER against it is shown (issue 22.12).
LOW_R2 = 0.5
FEW_LINE_MODELS = 5


@dataclass(frozen=True)
class Point:
    model_id: str
    name: str
    acc_ref: float
    acc_shift: float
    is_baseline: bool
    family: str = "other"
    prompt_id: str = UNSPECIFIED_PROMPT
    # the model's value of the chart's group field (baselines.yaml group_by);
    # "" when lines are by family
    group: str = ""


@dataclass(frozen=True)
class ShiftFit:
    """One line of one group (the reference baseline, a family, or a family's
    prompt) for one (strategy, reference variant, shift)."""

    kind: str
    label: str
    strategy: str
    reference: str
    shift: str
    transform: str
    baselines: tuple[str, ...]
    missing: tuple[str, ...]
    line: fit.LineFit | None
    reason: str | None
    chance: float
    points: tuple[Point, ...]
    slope_ci: tuple[float, float] | None = None
    intercept_ci: tuple[float, float] | None = None
    ci_reason: str | None = None
    family: str = ""
    # line model -> other submissions of the same model (adapter, checkpoint,
    # predictions content), drawn but not counted
    copies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # the dataset whose accuracies the line is fitted on (imagenet-mcq, or the
    # full-label-space configs of a classification dataset)
    dataset: str = IMAGENET

    def __post_init__(self) -> None:
        if self.kind not in LINE_KINDS:
            raise ValueError(f"kind must be one of {LINE_KINDS}, got {self.kind!r}")
        if (self.line is None) == (self.reason is None):
            raise ValueError("a ShiftFit has either a line or a reason for having none")
        if self.line is not None and (self.slope_ci is None) != (self.ci_reason is not None):
            raise ValueError("a line has either CIs or a reason for having none")

    @property
    def warning(self) -> str | None:
        """Why ER against this line deserves caution (None for a sound line):
        a low R² (the models do not lie on a line) or few models."""
        if self.line is None:
            return None
        parts = []
        if self.line.r2 < LOW_R2:
            parts.append(f"R² = {self.line.r2:.2f} (below {LOW_R2})")
        if len(self.baselines) < FEW_LINE_MODELS:
            parts.append(f"only {len(self.baselines)} models (fewer than {FEW_LINE_MODELS})")
        if not parts:
            return None
        return (f"weak {self.label} line on {self.shift}: {'; '.join(parts)}; "
                "ER against it is uncertain")

    @property
    def slope(self) -> float | None:
        return None if self.line is None else self.line.slope

    @property
    def intercept(self) -> float | None:
        return None if self.line is None else self.line.intercept

    def as_record(self) -> dict[str, object]:
        return {
            "kind": self.kind, "label": self.label, "family": self.family or None,
            "dataset": self.dataset, "strategy": self.strategy,
            "reference_variant": self.reference, "shift_variant": self.shift,
            "transform": self.transform, "slope": self.slope, "intercept": self.intercept,
            "slope_ci": None if self.slope_ci is None else list(self.slope_ci),
            "intercept_ci": None if self.intercept_ci is None else list(self.intercept_ci),
            "ci_reason": self.ci_reason,
            "r2": None if self.line is None else self.line.r2,
            "n": len(self.baselines), "baselines": list(self.baselines),
            "copies": {m: list(c) for m, c in sorted(self.copies.items())},
            "missing_baselines": list(self.missing), "reason": self.reason,
            "warning": self.warning,
        }


@dataclass(frozen=True)
class ERValue:
    """A model's ER against the reference line on one (strategy, shift)."""

    strategy: str
    shift: str
    acc_ref: float
    acc_shift: float
    er: float | None
    ci: tuple[float, float] | None
    reason: str | None = None
    ci_reason: str | None = None


@dataclass(frozen=True)
class MeanER:
    """Mean ER over a model's shifts on one strategy, with its joint interval."""

    strategy: str
    value: float | None
    ci: tuple[float, float] | None
    n_shifts: int
    reason: str | None = None

    def as_headline(self) -> dict[str, Any]:
        return {"value": self.value, "ci": None if self.ci is None else list(self.ci),
                "strategy": self.strategy, "n_shifts": self.n_shifts, "reason": self.reason}


def variant_key(v: str) -> tuple[int, str]:
    return (VARIANT_ORDER.index(v), v) if v in VARIANT_ORDER else (len(VARIANT_ORDER), v)


def family_key(f: str) -> tuple[int, str]:
    return (FAMILY_ORDER.index(f), f) if f in FAMILY_ORDER else (len(FAMILY_ORDER), f)
