"""Who produced a submission's predictions: the maintainers, with the
reference evaluator ("reference"), or the submitter ("self-reported").

"Reference" means the maintainers ran it: every scored dataset's stored
predictions (their sha256, checked while re-scoring) is listed for this model
id in the maintainers' record (:mod:`.reference_runs`), a versioned file
outside every submission folder. Nothing a submitter writes can grant it: the
fields ``vlmrobust predict`` writes into the predictions' metadata (adapter,
batch size, world size, tool version) are only a claim, and a submission that
carries them without being in the record is shown as self-reported, with a
detail saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.reference_runs import ReferenceRuns

# Fields only the reference evaluator writes (evaluation/predict/dataset.py::_meta).
REFERENCE_FIELDS = ("adapter", "batch_size", "world_size", "tool_version")


@dataclass(frozen=True)
class Provenance:
    reference: bool
    detail: str

    @property
    def label(self) -> str:
        return "reference" if self.reference else "self-reported"


def claims_reference_run(meta: Mapping[str, Any] | None) -> bool:
    """True when a predictions' metadata carries the fields of a reference-evaluator
    run record. A claim only: anyone can write these fields.

    >>> claims_reference_run({"adapter": "clip", "batch_size": 32, "world_size": 1,
    ...                       "tool_version": "0.1.0"})
    True
    >>> claims_reference_run({"model": "mine", "tool_version": "0.1.0"})
    False
    """
    if not isinstance(meta, Mapping):
        return False
    return all(meta.get(k) not in (None, "") for k in REFERENCE_FIELDS) and isinstance(
        meta.get("world_size"), int) and isinstance(meta.get("batch_size"), int)


def provenance(s: Submission, record: ReferenceRuns) -> Provenance:
    """Reference when every scored dataset's predictions are in ``record`` for this
    model id (needs a re-scored submission: its evidence holds the sha256s)."""
    if not s.datasets:
        return Provenance(False, "no scored datasets")
    if not s.evidence:
        return Provenance(False, "not re-scored from stored predictions, so not checked "
                                 "against the maintainers' reference-run record")
    missing = [k for k in sorted(s.datasets)
               if k not in s.evidence
               or not record.covers(s.model_id, k, s.evidence[k].predictions_sha256)]
    if not missing:
        return Provenance(True, "run by the maintainers: every dataset's predictions are in "
                                f"the reference-run record version {record.version} "
                                f"({', '.join(sorted(s.datasets))})")
    claimed = [k for k in missing if k in s.evidence and claims_reference_run(s.evidence[k].meta)]
    detail = f"not in the maintainers' reference-run record: {', '.join(missing)}"
    if claimed:
        detail += (f" (the metadata of {', '.join(claimed)} carries reference-run fields, "
                   "which submitters can write)")
    return Provenance(False, detail)


def provenances(subs: tuple[Submission, ...] | list[Submission],
                record: ReferenceRuns) -> dict[str, Provenance]:
    return {s.model_id: provenance(s, record) for s in subs}
