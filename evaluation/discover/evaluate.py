"""``discover evaluate``: seed 004's metrics from records, one row per
(method, questioner, answerer, verifier):

- QVR over every question slot (a slot missing from a malformed completion is
  an invalid question);
- FDR over the valid questions;
- SD, the Vendi score (cosine kernel) of the MiniLM embeddings of the valid
  questions; LD, the first-two-word prefix entropy of the valid questions
  normalised by ln n (:func:`vlmrobust.metrics.discovery.scores.prefix_entropy`);
- #Skills (skills on more than ``min_skill_questions`` valid questions);
- SC, skill coverage (seed 004 §4.1): the mean number of distinct skills of a
  valid question, over the valid questions that carry a skill (seed 004 tags
  every valid question; here a records file may be untagged, or tagged with
  ``discover taxonomy --failures-only``: an untagged question is left out, not
  counted as 0, and ``n_skill_tagged`` says over how many SC is taken; null
  when none is tagged);
- given a reference taxonomy, taxonomy coverage (not a seed metric): the
  share of its skills some valid question carries;
- FDR per skill and, apart, per meta-skill (the default taxonomy names a
  meta-skill after its most frequent skill, so one map of both would count a
  question twice under one name), the FDR curve against the number of
  questions (in record order), and, over the rows of one (method, questioner), the per-answerer
  FDR mean / min / σ (ddof = 1) of seed 004's Tables 8–9.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vlmrobust.core.discover_records import DiscoveryRecord
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.metrics.discovery.scores import (
    fdr,
    fdr_by_group,
    fdr_curve,
    fdr_spread,
    n_skills,
    prefix_entropy,
    qvr,
    skill_coverage,
    taxonomy_coverage,
    vendi_score,
)

Embed = Callable[[Sequence[str]], np.ndarray]
CURVE_POINTS = 20


@dataclass(frozen=True)
class EvaluateConfig:
    prefix_words: int = 2
    ld_normalise: str = "n_questions"
    min_skill_questions: int = 20

    def __post_init__(self) -> None:
        if self.prefix_words < 1 or self.min_skill_questions < 0:
            raise VlmrobustError("--prefix-words must be >= 1 and --min-skill-questions >= 0")
        if self.ld_normalise not in ("n_questions", "n_prefixes", "none"):
            raise VlmrobustError("--ld-normalise: n_questions, n_prefixes or none")


def _num(x: float) -> float | None:
    """JSON has no NaN: an undefined rate is null."""
    return None if math.isnan(x) else round(float(x), 6) + 0.0  # + 0.0: no "-0.0"


def _curve(valid: np.ndarray, correct: np.ndarray) -> list[list[float | None]]:
    c = fdr_curve(valid, correct)
    n = len(c)
    at = sorted({max(1, round(n * (i + 1) / CURVE_POINTS)) for i in range(CURVE_POINTS)})
    return [[m, _num(c[m - 1])] for m in at if m <= n]


def evaluate_rows(records: Sequence[DiscoveryRecord], config: EvaluateConfig | None = None,
                  embed: Embed | None = None,
                  taxonomy: Sequence[str] | None = None) -> dict[str, Any]:
    """The metrics JSON (see the module doc); ``embed`` None leaves SD out."""
    cfg = config or EvaluateConfig()
    if not records:
        raise VlmrobustError("no records to evaluate")
    groups: dict[tuple[str, str, str, str], list[DiscoveryRecord]] = {}
    for r in records:
        groups.setdefault((r.method, r.questioner, r.answerer, r.verifier), []).append(r)
    rows = []
    for (method, questioner, answerer, verifier), rs in sorted(groups.items()):
        v = np.array([r.valid for r in rs], dtype=bool)
        c = np.array([r.correct for r in rs], dtype=bool)
        valid_qs = [str(r.question) for r in rs if r.valid]
        skills = [r.skills for r in rs if r.valid]
        tagged = [t for t in skills if t]
        row: dict[str, Any] = {
            "method": method, "questioner": questioner, "answerer": answerer,
            "verifier": verifier, "n_questions": len(rs), "n_valid": int(v.sum()),
            "n_failures": int((v & ~c).sum()), "qvr": _num(qvr(v)), "fdr": _num(fdr(v, c)),
            "sd": None,
            "ld": (_num(prefix_entropy(valid_qs, cfg.prefix_words, cfg.ld_normalise))  # type: ignore[arg-type]
                   if valid_qs else None),
            "n_skills": n_skills(skills, cfg.min_skill_questions),
            "skill_coverage": _num(skill_coverage(tagged)) if tagged else None,
            "n_skill_tagged": len(tagged),
            "taxonomy_coverage": (_num(taxonomy_coverage(skills, taxonomy))
                                  if taxonomy is not None else None),
            "unparsed_verdicts": int(sum(not r.verifier_parsed for r in rs)),
            "fdr_curve": _curve(v, c),
        }
        if embed is not None and valid_qs:
            row["sd"] = _num(vendi_score(embed(valid_qs)))
        # a question tagged twice with one skill counts once (as in skill_counts)
        for key, tags in (("fdr_by_skill", [dict.fromkeys(r.skills) for r in rs]),
                          ("fdr_by_meta_skill", [() if r.meta_skill is None else (r.meta_skill,)
                                                 for r in rs])):
            by = _by_group(rs, tags)
            if by is not None:
                row[key] = by
        rows.append(row)
    return {"rows": rows, "spread": _spread(rows), "config": {
        "prefix_words": cfg.prefix_words, "ld_normalise": cfg.ld_normalise,
        "min_skill_questions": cfg.min_skill_questions,
        "sd": "Vendi score, cosine kernel over all-MiniLM-L6-v2 embeddings of valid questions"
        if embed is not None else None}}


def _by_group(rs: Sequence[DiscoveryRecord], tags: Sequence[Iterable[str]],
              ) -> dict[str, dict[str, Any]] | None:
    """{label: {fdr, n_valid}} over the records carrying each label; None when
    no record carries one."""
    tagged = [(r.valid, r.correct, t) for r, ts in zip(rs, tags, strict=True) for t in ts]
    if not tagged:
        return None
    by = fdr_by_group([t[0] for t in tagged], [t[1] for t in tagged], [t[2] for t in tagged])
    return {k: {"fdr": _num(f), "n_valid": n} for k, (f, n) in by.items()}


def _spread(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (method, questioner, verifier): FDR mean / min / σ over its answerers."""
    by: dict[tuple[str, str, str], list[float]] = {}
    for r in rows:
        if r["fdr"] is not None:
            by.setdefault((r["method"], r["questioner"], r["verifier"]), []).append(r["fdr"])
    out = []
    for (method, questioner, verifier), fdrs in sorted(by.items()):
        if len(fdrs) >= 2:
            mean, lo, sd = fdr_spread(np.array(fdrs) * 100.0)
            out.append({"method": method, "questioner": questioner, "verifier": verifier,
                        "n_answerers": len(fdrs), "fdr_mean": _num(mean), "fdr_min": _num(lo),
                        "fdr_sigma": _num(sd)})
    return out
