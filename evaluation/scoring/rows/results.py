"""Per-row results: one record per scored dataset row, written beside
``scores.json`` (``scores.rows.jsonl``), stored with a submission
(``<model-id>/<dataset>/rows.jsonl``) and published in the leaderboard's
downloads — the per-question view that ``scores.json``'s aggregates hide
(lmms-eval's ``--log_samples``, VLMEvalKit's per-sample records).

Each JSON line holds ``id``, ``config``, ``answer`` (the right option's
index), ``predicted`` (the scored option index; null where the row's text
answers no option), ``correct``, ``no_answer``, ``from_text`` (ŷ read from the
row's text by the matcher), ``confidence`` (max softmax probability of the
logits; null without logits), ``label`` for a row of kind classification (its
class id in the config's label space: per-class accuracy is the mean of
``correct`` per config and label) and, for a Bench-C corrupted row, its pair
against the clean copy of its question (same ``source`` and ``source_id``): ``clean_id``, ``delta_acc``,
``S``, ``S_clean``, ``delta_S``, ``C``, ``C_clean``, ``delta_C`` and ``ras``
(vlmrobust.metrics.bench_c.ras; null without logits). Clean rows carry ``clean_id``
null and no pair terms. Numbers are JSON numbers, NaN never written. An ood
dataset's rows are described by :func:`vlmrobust.evaluation.scoring.ood.ood_row_results`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.evaluation.validate.check import ValidationReport
from vlmrobust.evaluation.validate.dataset_index import CLEAN, clean_rows_of, question_keys
from vlmrobust.metrics.bench_c.ras import pair_metrics
from vlmrobust.metrics.uncertainty import softmax

ROWS_SUFFIX = ".rows.jsonl"
ROWS_NAME = "rows.jsonl"
PAIR_FIELDS = ("delta_acc", "S", "S_clean", "delta_S", "C", "C_clean", "delta_C", "ras")


def rows_path(scores_out: Path | str) -> Path:
    """``dir/scores.json`` -> ``dir/scores.rows.jsonl`` (any suffix is replaced)."""
    out = Path(scores_out)
    return out.with_name(out.stem + ROWS_SUFFIX) if out.suffix else out.with_name(out.name + ROWS_SUFFIX)


def _num(x: Any) -> float | None:
    v = float(x)
    return None if math.isnan(v) or math.isinf(v) else v


def option_rows(report: ValidationReport) -> list[dict[str, Any]]:
    """The per-row records of a validated report of kind mcq, in dataset order
    (the other kinds' come from their scorer: vlmrobust.evaluation.scoring.registration)."""
    index = report.index
    aligned = report.aligned
    y = index.answer
    predicted = aligned.predicted
    correct = predicted == y
    no_answer = aligned.no_answer
    from_text = aligned.from_text if aligned.from_text is not None else np.zeros(index.n_rows, bool)
    probs = softmax(aligned.logits) if aligned.logits is not None else None
    confidence = probs.max(axis=1) if probs is not None else None
    records: list[dict[str, Any]] = []
    for i in range(index.n_rows):
        records.append({
            "id": index.ids[i], "config": index.config[i], "answer": int(y[i]),
            "predicted": None if no_answer[i] else int(predicted[i]),
            "correct": bool(correct[i]), "no_answer": bool(no_answer[i]),
            "from_text": bool(from_text[i]),
            "confidence": _num(confidence[i]) if confidence is not None else None,
        })
    _add_pairs(report, records, probs, correct)
    return records


def classification_rows(report: ValidationReport) -> list[dict[str, Any]]:
    """Kind classification: the common fields plus ``label`` (the class id in the
    config's label space; per-class accuracy is the mean of ``correct`` per
    config and label), confidence from a chunked softmax over the config's
    label space or K options (never a float64 copy of all the logits)."""
    from vlmrobust.evaluation.scoring.classification import configs_from_report
    from vlmrobust.metrics.classification import row_scores

    index = report.index
    from_text = report.aligned.from_text
    records: list[dict[str, Any]] = [{} for _ in range(index.n_rows)]
    for d in configs_from_report(report):
        conf = row_scores(d.logits, d.answer).confidence if d.logits is not None and d.n else None
        for j, i in enumerate(np.flatnonzero(index.config == d.config).tolist()):
            records[i] = {
                "id": d.ids[j], "config": d.config, "answer": int(d.answer[j]),
                "label": int(d.labels[j]),
                "predicted": None if d.predicted[j] < 0 else int(d.predicted[j]),
                "correct": bool(d.predicted[j] == d.answer[j]), "no_answer": bool(d.predicted[j] < 0),
                "from_text": bool(from_text[i]) if from_text is not None else False,
                "confidence": _num(conf[j]) if conf is not None else None,
            }
    return records


def _add_pairs(report: ValidationReport, records: list[dict[str, Any]],
               probs: np.ndarray[Any, Any] | None, correct: np.ndarray[Any, Any]) -> None:
    """Bench-C: each corrupted row's terms against its clean copy."""
    index = report.index
    cols = index.columns
    if not {"source_id", "corruption"} <= set(cols):
        return
    is_clean = cols["corruption"] == CLEAN
    clean_of = clean_rows_of(index)
    keys = question_keys(index)
    d_rows = np.flatnonzero(~is_clean)
    o_rows = np.fromiter((clean_of[keys[i]] for i in d_rows.tolist()),
                         dtype=np.int64, count=d_rows.size)
    terms: dict[str, np.ndarray[Any, Any]] = {
        "delta_acc": correct[d_rows].astype(np.float64) - correct[o_rows].astype(np.float64)}
    if probs is not None:
        m = pair_metrics(probs[o_rows], probs[d_rows], index.answer[d_rows],
                         index.n_options[d_rows])
        terms.update(S=m.s_corrupted, S_clean=m.s_clean, delta_S=m.delta_s, C=m.c_corrupted,
                     C_clean=m.c_clean, delta_C=m.delta_c, ras=m.ras)
    for i in np.flatnonzero(is_clean).tolist():
        records[i]["clean_id"] = None
    for j, (d, o) in enumerate(zip(d_rows.tolist(), o_rows.tolist(), strict=True)):
        rec = records[d]
        rec["clean_id"] = index.ids[o]
        for name in PAIR_FIELDS:
            rec[name] = _num(terms[name][j]) if name in terms else None


def rows_jsonl(records: Iterable[Mapping[str, Any]]) -> str:
    """The records as JSON lines (NaN refused: every number is finite or null)."""
    return "".join(json.dumps(dict(r), ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")) + "\n" for r in records)
