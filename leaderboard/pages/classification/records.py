"""What the Classification page shows, as frozen records (:class:`ClassificationBoard`
with each dataset's :class:`ClassificationER` and the K curves' :class:`KPoint` s),
held by the :class:`~vlmrobust.leaderboard.board.Leaderboard` and computed in
:mod:`.classification_numbers`: below both (issue 38.4: no import circles)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlmrobust.leaderboard.shift_records import ERValue, MeanER, ShiftFit, family_key
from vlmrobust.leaderboard.submission import DatasetScores, Submission


@dataclass(frozen=True)
class ClassificationER:
    """Lines and ER of one classification dataset, on full-label-space accuracy."""

    dataset: str
    fits: tuple[ShiftFit, ...]
    er: Mapping[str, tuple[ERValue, ...]]
    mean_er: Mapping[str, MeanER]


@dataclass(frozen=True)
class KPoint:
    """One point of a K curve: a model's accuracy with ``k`` classes to choose
    from (``k`` = n_classes for the full label space)."""

    model_id: str
    variant: str
    k: int
    accuracy: float
    full: bool


@dataclass(frozen=True)
class ClassificationBoard:
    """Everything the Classification page shows (one entry per classification dataset)."""

    datasets: tuple[str, ...]
    er: Mapping[str, ClassificationER]
    # model id -> seed 002 setting
    settings: Mapping[str, str]

    def sections(self, subs: Sequence[Submission]) -> list[tuple[Submission, DatasetScores]]:
        """(submission, section) of every submission with a classification section,
        in family, name order."""
        out = [(s, s.datasets[k]) for s in subs for k in self.datasets if k in s.datasets]
        return sorted(out, key=lambda p: (family_key(p[0].meta.family), p[0].meta.name, p[0].model_id,
                                          p[1].key))
