"""The one module that imports every built-in scorer and registers it in
:data:`vlmrobust.core.kinds.SCORERS`, as vlmrobust.models.registration fills the
model registries; ``score``, ``submit`` and the leaderboard's re-scoring find a
kind's scorer through :func:`scorer_for`, never by an if-chain on the kind.

A new kind registers a :class:`vlmrobust.core.kinds.Scorer` from its own module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.kinds import CLASSIFICATION, MCQ, OOD, RETRIEVAL, SCORERS, Scorer
from vlmrobust.evaluation.predictions.stored import option_stored_bytes
from vlmrobust.evaluation.scoring.common import DEFAULT_SEED
from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID
from vlmrobust.evaluation.scoring.mcq import (
    classification_scores,
    mcq_scores,
    no_ood_score,
    option_summary,
    refuse_imagenet_x,
)
from vlmrobust.evaluation.scoring.ood import ood_row_results, ood_score_report
from vlmrobust.evaluation.scoring.retrieval import (
    retrieval_headlines,
    retrieval_rows,
    retrieval_scores,
    retrieval_summary,
    stored_bytes,
)
from vlmrobust.evaluation.scoring.rows.results import classification_rows, option_rows
from vlmrobust.evaluation.validate.check import ValidationReport
from vlmrobust.evaluation.validate.retrieval import RetrievalReport


@dataclass(frozen=True)
class ScoreOptions:
    """What every scorer is given beside the report: the bootstrap seed,
    ImageNet-X annotations (None: the installed package's), an ood dataset's
    headline score (None: MCM for zero-shot CLIP, else MSP) and the guidance
    weights a CFG run's accuracy is swept over. A kind that cannot use one
    refuses it, naming the flag."""

    seed: int = DEFAULT_SEED
    imagenet_x: Path | str | None = None
    ood_score: str | None = None
    cfg_grid: tuple[float, ...] = DEFAULT_CFG_GRID

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        object.__setattr__(self, "cfg_grid", tuple(self.cfg_grid))
        bad = [t for t in self.cfg_grid if not (math.isfinite(t) and t >= 0)]
        if bad:
            raise ValueError(f"cfg_grid must hold finite weights >= 0, got {bad[0]!r}")


def _ood_scores(report: ValidationReport, model_id: str | None, opts: ScoreOptions
                ) -> dict[str, Any]:
    refuse_imagenet_x(report, opts)
    return ood_score_report(report, model_id, opts.seed, opts.ood_score)


def _retrieval_scores(report: RetrievalReport, model_id: str | None, opts: ScoreOptions
                      ) -> dict[str, Any]:
    no_ood_score(opts.ood_score, str(report.dataset_dir))
    return retrieval_scores(report, model_id, opts.seed)


SCORERS.add(MCQ, Scorer(mcq_scores, lambda r, o: option_rows(r), option_summary,
                        option_stored_bytes))
SCORERS.add(CLASSIFICATION, Scorer(classification_scores, lambda r, o: classification_rows(r),
                                   option_summary, option_stored_bytes))
# OOD rows have no answer: the ood block, not accuracy alone (seed 001)
SCORERS.add(OOD, Scorer(_ood_scores, lambda r, o: ood_row_results(r, o.ood_score),
                        option_summary, option_stored_bytes))
SCORERS.add(RETRIEVAL, Scorer(_retrieval_scores, lambda r, o: list(retrieval_rows(r)),
                              retrieval_summary, stored_bytes, retrieval_headlines))


def scorer_for(kind: str) -> Scorer:
    """The scorer of ``kind`` (one line naming the registered kinds when none)."""
    return SCORERS.get(kind)


def config_headlines(section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per config of a scores.json section the headline rows `vlmrobust eval`
    reports, by the section kind's scorer (absent kind: mcq); each config's
    accuracy for a kind that names none.

    >>> config_headlines({"configs": {"a": {"n": 4, "accuracy": 0.5, "accuracy_ci": [0.1, 0.9]}}})
    [{'config': 'a', 'metric': 'accuracy', 'value': 0.5, 'ci': [0.1, 0.9], 'n': 4}]
    """
    kind = section.get("kind") or MCQ
    own = SCORERS.get(kind).config_headlines if kind in SCORERS else None
    if own is not None:
        return own(section)
    return [{"config": config, "metric": "accuracy", "value": c["accuracy"],
             "ci": c.get("accuracy_ci"), "n": c.get("n")}
            for config, c in (section.get("configs") or {}).items()
            if c.get("accuracy") is not None]
