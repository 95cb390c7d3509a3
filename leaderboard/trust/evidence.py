"""What re-scoring a stored predictions file tells the leaderboard beyond its
scores: the file's sha256 (for the maintainers' reference-run record), which
model its metadata names, and a digest of the answers themselves.

Two submissions are one model when their adapter, checkpoint and predictions
content agree (:func:`model_identity`): a text-free classifier submitted under
several prompt ids gives the same logits for every prompt, so it is one point
of a baseline line, not several (issue 22, item 2).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

IDENTITY_DATASET = "imagenet-mcq"


@dataclass(frozen=True)
class DatasetEvidence:
    """One re-scored dataset section of a submission."""

    predictions_sha256: str
    # sha256 over the dataset's row ids and the answers aligned to them (logits
    # when present, else the predicted option): equal for equal answers whatever
    # the file's metadata, row order or encoding.
    content_sha256: str
    model: str
    adapter: str | None
    checkpoint: str | None
    meta: Mapping[str, Any]
    # the per-row details (evaluation.scoring.row_details: row_results' records plus
    # logits and text) recomputed from the predictions, as parquet: one config of the
    # details dataset (leaderboard/site/details.py; never the submitted rows.jsonl)
    details: bytes | None = field(default=None, repr=False, compare=False)
    # Per-question answers for paired tests (vlmrobust.leaderboard.fits.pairwise): the
    # dataset index (shared by every submission of one build), whether each row
    # was answered correctly, and per Bench-C pair (corrupted row) its RAS.
    index: Any = field(default=None, compare=False, repr=False)
    correct: NDArray[np.bool_] | None = field(default=None, compare=False, repr=False)
    ras: NDArray[np.float64] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("predictions_sha256", "content_sha256"):
            v = getattr(self, name)
            if len(v) != 64:
                raise ValueError(f"{name} must be a sha256 hex digest, got {v!r}")
        if not self.model:
            raise ValueError("model must not be empty")


def content_digest(ids: Any, logits: Any, predicted: Any) -> str:
    """sha256 of the answers in dataset order.

    >>> a = content_digest(np.array(["q1", "q2"], dtype=object), None, np.array([0, 2]))
    >>> a == content_digest(np.array(["q1", "q2"], dtype=object), None, np.array([0, 2]))
    True
    >>> a == content_digest(np.array(["q1", "q2"], dtype=object), None, np.array([0, 1]))
    False
    """
    h = hashlib.sha256()
    # one update of every id and its NUL, not one per id (the same bytes, so the same digest)
    h.update("".join(f"{rid}\x00" for rid in ids.tolist()).encode("utf-8"))
    if logits is not None:
        h.update(b"logits")
        h.update(np.ascontiguousarray(logits, dtype="<f8").tobytes())
    else:
        h.update(b"predicted")
        h.update(np.ascontiguousarray(predicted, dtype="<i8").tobytes())
    return h.hexdigest()


def _checkpoint(meta: Mapping[str, Any]) -> str | None:
    ref = meta.get("reference")
    ck = ref.get("checkpoint_sha256") if isinstance(ref, Mapping) else None
    if not isinstance(ck, Mapping) or not ck:
        return None
    return hashlib.sha256(json.dumps(dict(sorted(ck.items())), sort_keys=True).encode()
                          ).hexdigest()


def _pair_ras(report: Any) -> NDArray[np.float64] | None:
    index = report.index
    if report.aligned.logits is None or not {"source_id", "corruption", "severity"} <= set(
            index.columns):
        return None
    from vlmrobust.evaluation.scoring.bench_c.stats import pairing_for
    from vlmrobust.metrics.bench_c.ras import pair_metrics
    from vlmrobust.metrics.uncertainty import softmax

    pairing = pairing_for(index)
    probs = softmax(report.aligned.logits)
    m = pair_metrics(probs[pairing.o_rows], probs[pairing.d_rows], index.answer[pairing.d_rows],
                     index.n_options[pairing.d_rows])
    return np.asarray(m.ras, dtype=np.float64)


def evidence_from_report(report: Any) -> DatasetEvidence:
    """The evidence of a :class:`vlmrobust.evaluation.validate.check.ValidationReport`."""
    meta = dict(report.meta or {})
    aligned = report.aligned
    adapter = meta.get("adapter")
    return DatasetEvidence(
        predictions_sha256=str(report.sha256),
        content_sha256=content_digest(report.index.ids, aligned.logits, aligned.predicted),
        model=str(meta.get("model") or ""),
        adapter=str(adapter) if adapter else None,
        checkpoint=_checkpoint(meta),
        meta=meta,
        details=details_download(report),
        index=report.index,
        correct=np.asarray(aligned.predicted == report.index.answer, dtype=bool),
        ras=_pair_ras(report),
    )


def details_download(report: Any) -> bytes:
    """The report's per-row details as parquet, byte-identical for the same predictions."""
    from vlmrobust.evaluation.scoring.dataset import row_results
    from vlmrobust.evaluation.scoring.rows.details import details_parquet

    return details_parquet(report, row_results(report))


def retrieval_evidence(report: Any) -> DatasetEvidence:
    """The evidence of a :class:`vlmrobust.evaluation.validate.retrieval.RetrievalReport`:
    the content digest covers each config's ids and its image and caption embeddings."""
    from vlmrobust.evaluation.scoring.retrieval import retrieval_rows
    from vlmrobust.evaluation.scoring.rows.details import details_parquet

    meta = dict(report.meta or {})
    digest = hashlib.sha256()
    for cfg in report.configs:
        img, txt, _ = cfg.embeddings(report.file)
        digest.update("\x1f".join(cfg.ids.tolist()).encode("utf-8"))
        digest.update(img.tobytes())
        digest.update(txt.tobytes())
    rows = details_parquet(report, retrieval_rows(report))
    adapter = meta.get("adapter")
    return DatasetEvidence(
        predictions_sha256=str(report.sha256), content_sha256=digest.hexdigest(),
        model=str(meta.get("model") or ""), adapter=str(adapter) if adapter else None,
        checkpoint=None, meta=meta, details=rows)


def file_evidence(report: Any, rows: list[dict[str, Any]]) -> DatasetEvidence:
    """The evidence of a kind that registers none: the predictions file's sha256
    stands for its content, ``rows`` (its scorer's) for the details."""
    from vlmrobust.evaluation.scoring.rows.details import details_parquet

    meta = dict(report.meta or {})
    adapter = meta.get("adapter")
    return DatasetEvidence(
        predictions_sha256=str(report.sha256), content_sha256=str(report.sha256),
        model=str(meta.get("model") or ""), adapter=str(adapter) if adapter else None,
        checkpoint=_checkpoint(meta), meta=meta,
        details=details_parquet(report, rows))


def model_identity(model_id: str, evidence: Mapping[str, DatasetEvidence]) -> tuple[str, ...]:
    """(adapter, checkpoint, predictions content) of the submission's ImageNet-MCQ
    predictions; a submission without re-scored evidence is its own model.

    >>> ev = DatasetEvidence("a" * 64, "b" * 64, "clf", "classifier:x", None, {})
    >>> model_identity("m1", {IDENTITY_DATASET: ev}) == model_identity("m2", {IDENTITY_DATASET: ev})
    True
    >>> model_identity("m1", {}) == model_identity("m2", {})
    False
    """
    ev = evidence.get(IDENTITY_DATASET)
    if ev is None:
        return ("submission", model_id)
    return ("content", ev.adapter or ev.model, ev.checkpoint or "", ev.content_sha256)


def copied_runs(evidence: Mapping[str, Mapping[str, DatasetEvidence]]) -> list[tuple[str, str, str]]:
    """(dataset, first model, copy) for each dataset whose stored predictions file
    (its sha256, as the reference-run record counts runs) is the same in two model
    folders: a copied run is not a new model (issue 41.2). ``evidence`` is model id
    -> dataset -> evidence; the first in model-id order is named as the original.

    >>> ev = DatasetEvidence("a" * 64, "b" * 64, "clf", None, None, {})
    >>> copied_runs({"new": {"imagenet-mcq": ev}, "lite1": {"imagenet-mcq": ev}, "x": {}})
    [('imagenet-mcq', 'lite1', 'new')]
    """
    first: dict[tuple[str, str], str] = {}
    out = []
    for model_id in sorted(evidence):
        for key, ev in sorted(evidence[model_id].items()):
            seen = first.setdefault((key, ev.predictions_sha256), model_id)
            if seen != model_id:
                out.append((key, seen, model_id))
    return out
