"""Who produced a submission's predictions: the reference evaluator
(``vlmrobust predict``) or the submitter's own code ("self-reported").

The evidence is the run metadata that travels with each dataset's predictions
(embedded in ``submissions/<model-id>/<dataset>/predictions.parquet``; see
vlmrobust.evaluation.predictions_meta): ``vlmrobust predict`` writes the
adapter it ran, the batch size and world size of the run and its tool version,
which hand-written metadata does not carry. A submission counts as reference
only when every scored dataset has such a run record. The badge states where
the numbers came from; it is not a signature (a determined submitter can copy
the fields), which the About page says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predictions_meta import read_prediction_meta
from vlmrobust.evaluation.submissions import PREDICTIONS_NAME
from vlmrobust.leaderboard.submission import Submission

# Fields only the reference evaluator writes (evaluation/predict.py::_meta).
REFERENCE_FIELDS = ("adapter", "batch_size", "world_size", "tool_version")


@dataclass(frozen=True)
class Provenance:
    reference: bool
    detail: str

    @property
    def label(self) -> str:
        return "reference" if self.reference else "self-reported"


def is_reference_run(meta: Mapping[str, Any] | None) -> bool:
    """True when a predictions meta.yaml is a reference-evaluator run record.

    >>> is_reference_run({"adapter": "clip", "batch_size": 32, "world_size": 1,
    ...                   "tool_version": "0.1.0"})
    True
    >>> is_reference_run({"model": "mine", "tool_version": "0.1.0"})
    False
    """
    if not isinstance(meta, Mapping):
        return False
    return all(meta.get(k) not in (None, "") for k in REFERENCE_FIELDS) and isinstance(
        meta.get("world_size"), int) and isinstance(meta.get("batch_size"), int)


def _read(dataset_folder: Path) -> Mapping[str, Any] | None:
    """The run metadata of a stored predictions file (None when unreadable)."""
    try:
        return read_prediction_meta(dataset_folder / PREDICTIONS_NAME)
    except VlmrobustError:
        return None


def provenance(s: Submission) -> Provenance:
    """Reference when every dataset of the submission has a reference run record."""
    if not s.datasets:
        return Provenance(False, "no scored datasets")
    missing = [k for k in sorted(s.datasets)
               if not is_reference_run(_read(s.folder / k))]
    if missing:
        return Provenance(False, f"no reference-evaluator run record for {', '.join(missing)}")
    return Provenance(True, "every dataset predicted by vlmrobust predict "
                            f"({', '.join(sorted(s.datasets))})")
