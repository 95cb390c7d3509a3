"""The frozen records of one loaded submission (:class:`Submission`: its
``meta.yaml`` and the per-dataset :class:`DatasetScores` of its ``scores.json``),
the metric names they hold, and the error every unusable submission raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.model_meta import ModelMeta
from vlmrobust.leaderboard.score_records import BenchCExtras, OodScores, ShapeBiasScore
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence

QUADRANTS = ("degraded", "overconfident", "hesitant", "stable")
TRANSITIONS = ("RR", "RW", "WR", "WW")
CELL_METRICS = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras")
AGGREGATE_METRICS = (*CELL_METRICS, "destructive_ras", "corrective_ras")
# Bench-C cells also carry the clean side and the RAS split, κ-weighted and plain
BENCH_C_METRICS = (*AGGREGATE_METRICS, "S_clean", "C_clean")
CLEAN_METRICS = ("acc", "S", "C")
WEIGHTINGS = ("plain", "kappa_weighted")
# The range of each per-question metric; plain and κ-weighted (κ >= 0) means keep
# it, and so does floating point (its rounding is monotone), so a stored value
# outside is a damaged or hand-edited scores.json.
_UNIT, _SIGNED, _RAS = (0.0, 1.0), (-1.0, 1.0), (-2.0, 1.0)
METRIC_BOUNDS: Mapping[str, tuple[float, float]] = {
    "acc": _UNIT, "delta_acc": _SIGNED, "S": _UNIT, "delta_S": _SIGNED, "C": _UNIT,
    "delta_C": _SIGNED, "ras": _RAS, "destructive_ras": _RAS, "corrective_ras": _RAS,
    "S_clean": _UNIT, "C_clean": _UNIT}
CALIBRATION_FIELDS = ("ece", "nll", "ece_ts", "nll_ts", "temperature")


class LeaderboardInputError(SubmissionError):
    """A submission folder cannot be shown on the leaderboard."""


def check_metrics(values: Mapping[str, float | None], where: str) -> None:
    """Every value a known Bench-C metric, None or inside its range."""
    for k, v in values.items():
        bounds = METRIC_BOUNDS.get(k)
        if bounds is None:
            raise ValueError(f"{where}: unknown metric {k!r}; use {list(METRIC_BOUNDS)}")
        if v is not None and not bounds[0] <= v <= bounds[1]:
            raise ValueError(f"{where}.{k}: {v!r} is outside {list(bounds)}")


@dataclass(frozen=True)
class PerturbationSets:
    """ImageNet-Vid-Robust's scores of a config (evaluation/scoring/classification.py):
    over ``anchors`` perturbation sets, the share right on the anchor frame
    (``benign``) and right on every frame of the set (``pmk``), each with its
    bootstrap interval over anchors."""

    anchors: int
    benign: float | None
    benign_ci: tuple[float, float] | None
    pmk: float | None
    pmk_ci: tuple[float, float] | None

    def __post_init__(self) -> None:
        if self.anchors < 0:
            raise ValueError("anchors must be >= 0")
        if self.benign is not None and self.pmk is not None and self.pmk > self.benign:
            raise ValueError(f"pm-k accuracy {self.pmk!r} exceeds benign accuracy {self.benign!r}")


@dataclass(frozen=True)
class ConfigScore:
    config: str
    n: int
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None = None
    variant: str | None = None
    strategy: str | None = None
    calibration: Mapping[str, float | None] = field(default_factory=dict)
    # ImageNet-X factor -> (images with the factor, accuracy on them or None);
    # imagenet-val configs only, when the scorer had the annotations.
    factors: Mapping[str, tuple[int, float | None]] = field(default_factory=dict)
    # kind classification (issue 23): what the numbers are over ("label-space" |
    # "k-options"), K of a K-option config, the label space's size, and the mean of
    # the per-class accuracies
    over: str | None = None
    k: int | None = None
    n_classes: int | None = None
    mean_per_class: float | None = None
    # kind classification, rows with valid labels: top class among them (ImageNet-ReaL's rule)
    accuracy_valid_labels: float | None = None
    # kind classification, ImageNet-Vid-Robust: benign and pm-k accuracy over anchors
    perturbation: PerturbationSets | None = None
    # kind classification, text answers: accuracy per text rule id (seed 002: inclusion,
    # inclusion+synonyms, strict, strict+synonyms; vlmrobust.core.text.class_matcher)
    text_rules: Mapping[str, float | None] = field(default_factory=dict)
    # kind retrieval: direction (image_to_text | text_to_image) -> "recall@K" -> value,
    # "recall@K_ci" -> (lo, hi); empty for other kinds (leaderboard/pages/retrieval.py)
    retrieval: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must be >= 0")
        if self.accuracy is not None and not 0.0 <= self.accuracy <= 1.0:
            raise ValueError("accuracy must lie in [0, 1]")


@dataclass(frozen=True)
class BenchCCell:
    corruption: str
    severity: int
    n: int
    metrics: Mapping[str, float | None]  # κ-weighted cell means
    quadrants: Mapping[str, int]
    transitions: Mapping[str, int]
    plain: Mapping[str, float | None] = field(default_factory=dict)  # plain cell means

    def __post_init__(self) -> None:
        if not 1 <= self.severity <= 5:
            raise ValueError("severity must be 1..5")


@dataclass(frozen=True)
class BenchCScores:
    clean_accuracy: float | None
    cells: tuple[BenchCCell, ...]
    aggregate: Mapping[str, float | None]  # means over cells of κ-weighted cell means
    quadrants: Mapping[str, int]
    transitions: Mapping[str, int]
    plain_aggregate: Mapping[str, float | None] = field(default_factory=dict)
    # weighting ("plain" | "kappa_weighted") -> clean acc, S, C
    clean: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    categories: Mapping[str, BenchCScores] = field(default_factory=dict)
    # clustered intervals, sensitivity analysis, accuracy-gain cells (issue 22)
    extras: BenchCExtras | None = None

    def __post_init__(self) -> None:
        keys = [(c.corruption, c.severity) for c in self.cells]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate (corruption, severity) cell")
        for label, agg in (("aggregate", self.aggregate), ("plain_aggregate", self.plain_aggregate)):
            check_metrics(agg, label)
        for weighting, block in self.clean.items():
            if weighting not in WEIGHTINGS:
                raise ValueError(f"clean: unknown weighting {weighting!r}; use {list(WEIGHTINGS)}")
            check_metrics(block, f"clean.{weighting}")


@dataclass(frozen=True)
class DatasetScores:
    key: str
    name: str
    version: str | None
    fingerprint: str | None
    sample: bool
    has_logits: bool
    reference_variant: str | None
    configs: tuple[ConfigScore, ...]
    bench_c: BenchCScores | None = None
    # cue-conflict configs: config -> shape bias (vlmrobust.leaderboard.pages.holistic.scores)
    shape_bias: Mapping[str, ShapeBiasScore] = field(default_factory=dict)
    kind: str = "mcq"
    # the kind's own blocks, as its registered section reader parsed them
    # (vlmrobust.core.kinds.SECTION_READERS; leaderboard/scores_json.py)
    blocks: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.config for c in self.configs]
        if len(set(names)) != len(names):
            raise ValueError("duplicate config")

    @property
    def ood(self) -> OodScores | None:
        """An ood dataset's block (vlmrobust.leaderboard.pages.holistic.ood_scores)."""
        block: OodScores | None = self.blocks.get("ood")
        return block


@dataclass(frozen=True)
class Submission:
    meta: ModelMeta
    datasets: Mapping[str, DatasetScores]
    folder: Path
    # Filled by re-scoring (vlmrobust.leaderboard.trust.verify): per dataset, the stored
    # predictions' sha256, the model their metadata names and their content digest.
    evidence: Mapping[str, DatasetEvidence] = field(default_factory=dict, compare=False)

    @property
    def model_id(self) -> str:
        return self.meta.model_id
