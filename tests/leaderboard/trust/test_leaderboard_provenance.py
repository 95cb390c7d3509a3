"""The reference/self-reported badge comes from the maintainers' reference-run
record alone: reference only when every scored dataset's stored predictions
(their sha256) is listed for the model id; run-record fields a submitter writes
into the predictions' metadata are a claim, shown as self-reported."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence
from vlmrobust.leaderboard.trust.provenance import provenance
from vlmrobust.leaderboard.trust.reference_runs import ReferenceRun, ReferenceRuns

DATASETS = ("imagenet-mcq", "bench-c", "imagewikiqa")
RUN_FIELDS = {"adapter": "clip", "batch_size": 32, "world_size": 1, "tool_version": "0.1.0"}


def _sha(dataset: str) -> str:
    return format(DATASETS.index(dataset) + 1, "x") * 64


def _evidence(dataset: str, meta: dict[str, Any]) -> DatasetEvidence:
    return DatasetEvidence(_sha(dataset), "c" * 64, "clip:ViT-B-32", "clip", None, meta)


@pytest.mark.parametrize(("recorded", "claims", "label"), [
    (DATASETS, False, "reference"),
    (DATASETS, True, "reference"),
    (("imagenet-mcq", "imagewikiqa"), True, "self-reported"),   # bench-c not recorded
    ((), True, "self-reported"),                                # claims everything, ran nothing
])
def test_badge_needs_every_dataset_in_the_record(tmp_path: Path, recorded: tuple[str, ...],
                                                 claims: bool, label: str) -> None:
    write_submission(tmp_path, *synthetic_submission(0, "clip"))
    (sub,) = load_submissions(tmp_path)
    assert set(sub.datasets) == set(DATASETS)
    meta = dict(RUN_FIELDS) if claims else {}
    sub = dataclasses.replace(sub, evidence={k: _evidence(k, meta) for k in DATASETS})
    record = ReferenceRuns("7", tuple(ReferenceRun(sub.model_id, k, _sha(k)) for k in recorded))
    p = provenance(sub, record)
    assert p.label == label
    if label == "reference":
        assert "version 7" in p.detail
    else:
        missing = sorted(set(DATASETS) - set(recorded))
        assert f"record: {', '.join(missing)}" in p.detail
        assert "carries reference-run fields" in p.detail
    # Another model id with the same files is not the recorded run.
    other = dataclasses.replace(sub, meta=dataclasses.replace(sub.meta, model_id="other"))
    assert provenance(other, record).label == "self-reported"


def test_records_without_evidence_are_not_reference(tmp_path: Path) -> None:
    write_submission(tmp_path, *synthetic_submission(0, "clip"))
    (sub,) = load_submissions(tmp_path)
    record = ReferenceRuns("1", tuple(ReferenceRun(sub.model_id, k, _sha(k)) for k in DATASETS))
    p = provenance(sub, record)
    assert p.label == "self-reported" and "not re-scored" in p.detail
