"""The frozen records of a re-scored dataset section beyond the point estimates:
Bench-C's intervals and tests (:class:`BenchCExtras`), cue-conflict shape bias
(:class:`ShapeBiasScore`) and the ood block (:class:`OodScores`). Their readers
live beside the pages that show them (pages/bench_c_stats.py,
holistic_scores.py, ood_scores.py); the records sit here, below
:mod:`vlmrobust.leaderboard.submission`, which holds them, so that the submission
record imports no page (issue 38.4: no import circles)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# the ood block's headline scores (vlmrobust.evaluation.scoring.ood)
SCORES = ("msp", "mcm", "max_logit", "energy")


@dataclass(frozen=True)
class BenchCExtras:
    # weighting -> metric ("clean:acc" for the clean copies) -> interval
    intervals: Mapping[str, Mapping[str, tuple[float, float] | None]] = field(
        default_factory=dict)
    # seed 003's Table 2 for one model: e_abs_z_ras, e_abs_z_delta_acc, t, df, p,
    # n_pairs, tested, left_out and corruptions: name -> {n_pairs, e_abs_z_*}
    sensitivity: Mapping[str, Any] = field(default_factory=dict)
    # metric -> corruption ("all" too) -> {n_questions, mean_change, t, df, p, z}
    corruption_effect: Mapping[str, Mapping[str, Mapping[str, float | int | None]]] = field(
        default_factory=dict)
    accuracy_gain: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ShapeBiasScore:
    """One config's shape-bias numbers (see vlmrobust.evaluation.scoring.shape_bias)."""

    n: int
    n_conflict: int
    shape_decisions: int
    texture_decisions: int
    shape_bias: float | None
    shape_bias_ci: tuple[float, float] | None
    shape_accuracy: float | None
    texture_accuracy: float | None

    def __post_init__(self) -> None:
        if not 0 <= self.n_conflict <= self.n:
            raise ValueError("n_conflict must lie in [0, n]")
        if min(self.shape_decisions, self.texture_decisions) < 0 or \
                self.shape_decisions + self.texture_decisions > self.n_conflict:
            raise ValueError("shape + texture decisions must lie within the conflict stimuli")


@dataclass(frozen=True)
class OodSetScore:
    """One OOD set against the ID rows, by the section's headline score."""

    n: int
    auroc: float | None
    auroc_ci: tuple[float, float] | None
    fpr95: float | None
    fpr95_ci: tuple[float, float] | None
    class_mean_auroc: float | None = None
    class_mean_auroc_ci: tuple[float, float] | None = None
    n_classes: int | None = None


@dataclass(frozen=True)
class OodScores:
    score: str  # the headline score (mcm for CLIP, msp otherwise)
    n_id: int
    id_accuracy: float | None
    mean_auroc: float | None
    mean_fpr95: float | None
    sets: Mapping[str, OodSetScore]
    # the sets the means average (seed 001 Table IV's five where built; ImageNet-O apart)
    mean_sets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.score not in SCORES:
            raise ValueError(f"score {self.score!r} is not one of {', '.join(SCORES)}")
