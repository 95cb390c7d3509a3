"""The one module that imports the leaderboard's side of every built-in question
kind and registers it in :data:`vlmrobust.core.kinds.SECTION_READERS`: how a
kind's scores.json section is read beyond what every section has
(leaderboard/scores_json.py) and what re-scoring keeps of it
(leaderboard/trust/verify.py). A kind's page or holistic section registers
itself in vlmrobust.leaderboard.pages.holistic.page.SECTIONS.

A new kind registers a :class:`vlmrobust.core.kinds.SectionReader` from its own
module; a kind without one has only the common fields.
"""

from __future__ import annotations

from typing import Any

from vlmrobust.core.kinds import (
    CLASSIFICATION,
    MCQ,
    OOD,
    RETRIEVAL,
    SECTION_READERS,
    SectionReader,
)
from vlmrobust.leaderboard.pages.holistic.ood_scores import load_ood
from vlmrobust.leaderboard.pages.retrieval import load_retrieval
from vlmrobust.leaderboard.trust.evidence import (
    DatasetEvidence,
    evidence_from_report,
    file_evidence,
    retrieval_evidence,
)

SECTION_READERS.add(MCQ, SectionReader(evidence=evidence_from_report))
SECTION_READERS.add(CLASSIFICATION, SectionReader(evidence=evidence_from_report))
SECTION_READERS.add(OOD, SectionReader(  # seed 001's OOD detection block
    blocks=lambda w, d, where: {"ood": load_ood(w, d.get("ood"), f"{where}.ood")},
    evidence=evidence_from_report))
SECTION_READERS.add(RETRIEVAL, SectionReader(config=load_retrieval,  # Recall@K per config
                                             evidence=retrieval_evidence))


def reader_for(kind: str) -> SectionReader | None:
    """The section reader of ``kind``; None for a kind that registers none."""
    return SECTION_READERS.get(kind) if kind in SECTION_READERS else None


def kind_evidence(kind: str, report: Any) -> DatasetEvidence:
    """What re-scoring keeps of a validated ``report`` of ``kind``."""
    reader = reader_for(kind)
    if reader is not None and reader.evidence is not None:
        evidence: DatasetEvidence = reader.evidence(report)
        return evidence
    from vlmrobust.evaluation.scoring.registration import ScoreOptions, scorer_for

    return file_evidence(report, scorer_for(kind).rows(report, ScoreOptions()))
