"""The downloads: the full table at full precision as ``leaderboard.csv`` and
``leaderboard.json``.

Bench-C numbers come in two named weightings (docs/internals.md, "Downloads"):
``bench-c:plain:<metric>`` (unweighted cell means, the paper's tables) and
``bench-c:kappa_weighted:<metric>`` (Σκ·x/Σκ cell means), each then averaged
over cells; quadrant and transition columns are counts, which no weighting
touches. The unqualified ``bench-c:<metric>`` columns of schema 1 (κ-weighted,
unmarked) are gone, so no reader takes one weighting for the other.

``leaderboard.json`` is columnar since schema 3 (issue 37.2): ``columns`` names
the fields once and each row is an array in that order, as is ``pairwise``
(``{"columns": [...], "rows": [[...], ...]}``); schema 2 repeated every column name
in every row (a 400-model file was 5.6 MB, 2.4 MB after). ``as_records`` turns either
block back into dicts."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from vlmrobust.leaderboard.aggregate import headline_er
from vlmrobust.leaderboard.board import BENCH_C, IMAGENET, Leaderboard
from vlmrobust.leaderboard.submission import (
    BENCH_C_METRICS,
    QUADRANTS,
    TRANSITIONS,
    WEIGHTINGS,
    BenchCScores,
)

# Version of the leaderboard.json layout; 2: Bench-C columns named by weighting;
# 3: rows and pairwise tests are arrays under one list of column names.
DOWNLOADS_SCHEMA = 3
# Nested fields of leaderboard.json's rows that the CSV leaves out (it has the flat
# headline_er_* columns instead): the last columns of every JSON row.
JSON_ONLY_COLUMNS = ("headline_er", "er_reference", "bench_c_sensitivity",
                     "bench_c_corruption_effect", "bench_c_accuracy_gain")
BENCH_C_COLUMN_NOTES = {
    "*:ci_low, *:ci_high": "95% percentile bootstrap interval; Bench-C intervals redraw source "
                           "questions with all their copies (scores.json bench_c.intervals)",
    "pairwise": "pairwise.csv / leaderboard.json 'pairwise': paired tests between adjacent "
                "models of every overview column (tie: p >= 0.05)",
    "rows": "each row is an array in the order of 'columns' (pairwise: of its own "
            "'columns'); the CSV header is 'columns' without the nested "
            + ", ".join(JSON_ONLY_COLUMNS),
    "bench-c:plain:*": "plain: per (corruption, severity) cell the unweighted mean over the "
                       "cell's questions (the paper's per-cell tables), then the mean over cells",
    "bench-c:kappa_weighted:*": "κ-weighted: per cell Σκ·x / Σκ (κ = the question's "
                                "discriminative power), then the mean over cells",
    "bench-c:<quadrant|transition>": "counts of corrupted answers over all cells (unweighted)",
}

# CSV cells starting with these are formulas in spreadsheet programs.
_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def table_records(lb: Leaderboard) -> tuple[list[str], list[dict[str, Any]]]:
    """The full table at full precision (for the CSV and JSON downloads)."""
    in_cols = sorted({(c.variant, c.strategy or "") for s in lb.submissions
                      if IMAGENET in s.datasets for c in s.datasets[IMAGENET].configs
                      if c.variant is not None})
    er_cols = sorted({(v.strategy, v.shift) for vals in lb.er.values() for v in vals})
    columns = ["model_id", "name", "family", "vision_encoder", "params", "prompt_id", "date",
               "tool_version", "adapter", "paper_url", "code_url", "weights_url"]
    columns += [f"imagenet-mcq:{v}:{st}:{k}" for v, st in in_cols
                for k in ("accuracy", "accuracy_ci_low", "accuracy_ci_high")]
    columns += [f"er:{st}:{sh}" for st, sh in er_cols]
    columns += ["headline_er_value", "headline_er_ci_low", "headline_er_ci_high",
                "headline_er_strategy", "mean_er", "mean_er_ci_low", "mean_er_ci_high"]
    columns += bench_c_columns()
    columns += ["imagewikiqa:accuracy", "imagewikiqa:accuracy_ci_low", "imagewikiqa:accuracy_ci_high"]
    rows_by_id = {r.model_id: r for r in lb.rows}
    records = []
    for s in lb.submissions:
        m = s.meta
        rec: dict[str, Any] = {
            "model_id": m.model_id, "name": m.name, "family": m.family,
            "vision_encoder": m.vision_encoder, "params": m.params, "prompt_id": m.prompt_id,
            "date": m.date, "tool_version": m.tool_version, "adapter": m.adapter,
            "paper_url": m.paper_url, "code_url": m.code_url, "weights_url": m.weights_url}
        cfgs = ({(c.variant, c.strategy or ""): c for c in s.datasets[IMAGENET].configs}
                if IMAGENET in s.datasets else {})
        for v, st in in_cols:
            c = cfgs.get((v, st))
            ci = c.accuracy_ci if c is not None else None
            rec[f"imagenet-mcq:{v}:{st}:accuracy"] = c.accuracy if c is not None else None
            rec[f"imagenet-mcq:{v}:{st}:accuracy_ci_low"] = ci[0] if ci else None
            rec[f"imagenet-mcq:{v}:{st}:accuracy_ci_high"] = ci[1] if ci else None
        ers = {(e.strategy, e.shift): e.er for e in lb.er.get(m.model_id, ())}
        for st, sh in er_cols:
            rec[f"er:{st}:{sh}"] = ers.get((st, sh))
        row = rows_by_id[m.model_id]
        head = headline_er(lb, m.model_id)
        rec["headline_er"] = head  # JSON only; the CSV gets the flat columns
        rec["headline_er_value"] = head["value"]
        rec["headline_er_ci_low"] = head["ci"][0] if head["ci"] else None
        rec["headline_er_ci_high"] = head["ci"][1] if head["ci"] else None
        rec["headline_er_strategy"] = head["strategy"]
        rec["er_reference"] = [
            {"strategy": e.strategy, "shift": e.shift, "er": e.er,
             "ci": list(e.ci) if e.ci else None, "reason": e.reason or e.ci_reason}
            for e in lb.er.get(m.model_id, ())]
        rec["mean_er"] = row.mean_er
        rec["mean_er_ci_low"] = row.mean_er_ci[0] if row.mean_er_ci else None
        rec["mean_er_ci_high"] = row.mean_er_ci[1] if row.mean_er_ci else None
        bc = s.datasets[BENCH_C].bench_c if BENCH_C in s.datasets else None
        rec.update(bench_c_values(bc))
        ex = bc.extras if bc is not None else None
        # JSON only: seed 003's sensitivity analysis (Table 2) and accuracy-gain
        # cells (Table 3), and the corruption-effect t-tests (not a seed analysis)
        rec["bench_c_sensitivity"] = None if ex is None else ex.sensitivity
        rec["bench_c_corruption_effect"] = None if ex is None else ex.corruption_effect
        rec["bench_c_accuracy_gain"] = None if ex is None else list(ex.accuracy_gain)
        rec["imagewikiqa:accuracy"] = row.iwqa
        rec["imagewikiqa:accuracy_ci_low"] = row.iwqa_ci[0] if row.iwqa_ci else None
        rec["imagewikiqa:accuracy_ci_high"] = row.iwqa_ci[1] if row.iwqa_ci else None
        records.append(rec)
    return columns, records


def bench_c_columns() -> list[str]:
    cols = [f"bench-c:{wt}:{k}{suffix}" for wt in WEIGHTINGS
            for k in ("clean_accuracy", *BENCH_C_METRICS) for suffix in ("", ":ci_low", ":ci_high")]
    return cols + [f"bench-c:{k}" for k in (*QUADRANTS, *TRANSITIONS)]


def bench_c_values(bc: BenchCScores | None) -> dict[str, Any]:
    """One model's Bench-C columns (all None without a Bench-C section)."""
    if bc is None:
        return dict.fromkeys(bench_c_columns())
    by_weighting = {"plain": bc.plain_aggregate, "kappa_weighted": bc.aggregate}
    # clean_accuracy is the scorer's κ-weighted clean accuracy (older scores lack `clean`)
    clean = {"plain": bc.clean.get("plain", {}).get("acc"),
             "kappa_weighted": bc.clean.get("kappa_weighted", {}).get("acc", bc.clean_accuracy)}
    out: dict[str, Any] = dict.fromkeys(bench_c_columns())
    intervals = bc.extras.intervals if bc.extras is not None else {}
    for wt in WEIGHTINGS:
        out[f"bench-c:{wt}:clean_accuracy"] = clean[wt]
        out.update({f"bench-c:{wt}:{k}": by_weighting[wt].get(k) for k in BENCH_C_METRICS})
        cis = dict(intervals.get(wt, {}))
        cis["clean_accuracy"] = cis.pop("clean:acc", None)
        for k, ci in cis.items():
            if ci is not None and f"bench-c:{wt}:{k}:ci_low" in out:
                out[f"bench-c:{wt}:{k}:ci_low"], out[f"bench-c:{wt}:{k}:ci_high"] = ci
    out.update({f"bench-c:{k}": bc.quadrants.get(k) for k in QUADRANTS})
    out.update({f"bench-c:{k}": bc.transitions.get(k) for k in TRANSITIONS})
    return out


PAIRWISE_COLUMNS = ("column", "higher", "lower", "n_shared", "difference", "ci_low", "ci_high",
                    "p_value", "tie", "test", "p_bootstrap", "p_mcnemar", "mcnemar_only_higher",
                    "mcnemar_only_lower", "note")


def pairwise_records(lb: Leaderboard) -> list[dict[str, Any]]:
    """Every adjacent-model paired test (leaderboard.pairwise), flat."""
    out = []
    for t in lb.pairwise:
        rec = t.as_record()
        ci = rec.pop("ci")
        rec["ci_low"], rec["ci_high"] = (ci if ci else (None, None))
        out.append(rec)
    return out


def pairwise_csv(lb: Leaderboard) -> str:
    """``pairwise.csv``: one row per adjacent pair of every overview column."""
    return to_csv(list(PAIRWISE_COLUMNS), pairwise_records(lb))


def _csv_cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    s = str(v)
    # Neutralise spreadsheet formulas in model-supplied text (OWASP CSV injection).
    return "'" + s if s.startswith(_CSV_FORMULA) else s


def to_csv(columns: list[str], records: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in records:
        w.writerow([_csv_cell(r.get(c)) for c in columns])
    return buf.getvalue()


def columnar(columns: list[str] | tuple[str, ...],
             records: list[dict[str, Any]]) -> dict[str, Any]:
    """Records as one list of column names and one array per record.

    >>> columnar(["a", "b"], [{"a": 1, "b": None}, {"b": 2, "a": 3}])
    {'columns': ['a', 'b'], 'rows': [[1, None], [3, 2]]}
    """
    names = list(columns)
    for i, rec in enumerate(records):
        if set(rec) - set(names):
            raise ValueError(f"record {i} has fields not in the columns: "
                             f"{sorted(set(rec) - set(names))}")
    return {"columns": names, "rows": [[rec.get(c) for c in names] for rec in records]}


def as_records(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A columnar block of ``leaderboard.json`` (the top level's ``columns`` and
    ``rows``, or ``pairwise``) as one dict per row.

    >>> as_records({"columns": ["a", "b"], "rows": [[1, None]]})
    [{'a': 1, 'b': None}]
    """
    names = list(block["columns"])
    out = []
    for i, row in enumerate(block["rows"]):
        if len(row) != len(names):
            raise ValueError(f"row {i} has {len(row)} values for {len(names)} columns")
        out.append(dict(zip(names, row, strict=True)))
    return out


def to_json(lb: Leaderboard, columns: list[str], records: list[dict[str, Any]]) -> str:
    """``leaderboard.json``: the same table (columnar, the nested JSON-only fields
    last) plus the baselines definition, every fit and every pairwise test."""
    table = columnar([*columns, *JSON_ONLY_COLUMNS], records)
    return json.dumps(
        {"schema_version": DOWNLOADS_SCHEMA, "overview_strategy": lb.strategy,
         "column_notes": BENCH_C_COLUMN_NOTES,
         "baselines": lb.spec.as_record(), "fits": [f.as_record() for f in lb.fits],
         # full-label-space lines of the classification datasets (their own reference line)
         "classification_fits": [f.as_record() for k in (lb.classification.datasets if lb.classification else ())
                                 for f in lb.classification.er[k].fits] if lb.classification else [],
         "reference_runs": None if lb.record is None else lb.record.as_record(),
         "pairwise": columnar(PAIRWISE_COLUMNS, pairwise_records(lb)),
         **table},
        separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"
