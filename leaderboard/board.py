"""What aggregation produces, as frozen records: the :class:`Leaderboard` and its
overview rows (:class:`Row`). Its lines (:class:`ShiftFit` of kind reference,
family or prompt), each model's ER per shift (:class:`ERValue`) and per strategy
(:class:`MeanER`), the dataset keys and display orders the site shares live in
:mod:`vlmrobust.leaderboard.shift_records` and are imported from here too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vlmrobust.leaderboard.fits.pair_test import PairTest
from vlmrobust.leaderboard.pages.classification.records import ClassificationBoard
from vlmrobust.leaderboard.shift_records import (  # noqa: F401  (imported from here too)
    BENCH_C,
    CHANCE,
    FAMILY_ORDER,
    FEW_LINE_MODELS,
    IMAGENET,
    IMAGEWIKIQA,
    LINE_KINDS,
    LOW_R2,
    REFERENCE,
    SELF_REPORTED,
    UNSPECIFIED_PROMPT,
    VARIANT_ORDER,
    ERValue,
    MeanER,
    Point,
    ShiftFit,
    family_key,
    variant_key,
)
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.provenance import Provenance
from vlmrobust.leaderboard.trust.reference_runs import ReferenceRuns

if TYPE_CHECKING:
    from vlmrobust.leaderboard.pages.failure_modes import FailureDataset

@dataclass(frozen=True)
class Row:
    """One overview-table row; numbers stay numbers (None = not measured).
    ``mean_er``/``mean_er_ci`` are the headline ER (reference line, headline strategy)."""

    model_id: str
    name: str
    family: str
    vision_encoder: str | None
    params: int | None
    page: str
    imagenet: Mapping[str, float | None]
    mean_er: float | None
    mean_er_ci: tuple[float, float] | None
    benchc: Mapping[str, float | None]
    iwqa: float | None
    headline_er: Mapping[str, Any] = field(default_factory=dict)
    prompt_id: str | None = None
    # intervals of the other columns: variant -> accuracy CI; Bench-C metric -> CI
    # (clustered by source question); ImageWikiQA accuracy CI
    imagenet_ci: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    benchc_ci: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    iwqa_ci: tuple[float, float] | None = None
    # why ER against the reference line deserves caution (weak lines), if it does
    er_warning: str | None = None


@dataclass(frozen=True)
class Leaderboard:
    submissions: tuple[Submission, ...]
    spec: BaselineSpec
    strategy: str
    variants: tuple[str, ...]
    fits: tuple[ShiftFit, ...]
    er: Mapping[str, tuple[ERValue, ...]]
    rows: tuple[Row, ...]
    pages: Mapping[str, str] = field(default_factory=dict)
    mean_er: Mapping[str, tuple[MeanER, ...]] = field(default_factory=dict)
    # model id -> where its predictions came from (the maintainers' record decides)
    provenance: Mapping[str, Provenance] = field(default_factory=dict)
    record: ReferenceRuns | None = None
    # adjacent-model paired tests of every overview column (.pairwise)
    pairwise: tuple[PairTest, ...] = ()
    # the Classification page: full-label-space lines and ER (.classification)
    classification: ClassificationBoard | None = None
    # the Failure modes page: failure-discovery datasets, re-evaluated (.failure_modes)
    failure_modes: tuple[FailureDataset, ...] = ()

    def __post_init__(self) -> None:
        if len(self.rows) != len(self.submissions):
            raise ValueError("one row per submission")

    @property
    def headline_strategy(self) -> str:
        return self.spec.headline_strategy
