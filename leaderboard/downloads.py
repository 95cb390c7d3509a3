"""The downloads: the full table at full precision as ``leaderboard.csv`` and
``leaderboard.json``."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from vlmrobust.leaderboard.aggregate import headline_er
from vlmrobust.leaderboard.board import BENCH_C, IMAGENET, Leaderboard
from vlmrobust.leaderboard.submission import AGGREGATE_METRICS, QUADRANTS, TRANSITIONS

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
    columns += [f"imagenet-mcq:{v}:{st}:accuracy" for v, st in in_cols]
    columns += [f"er:{st}:{sh}" for st, sh in er_cols]
    columns += ["headline_er_value", "headline_er_ci_low", "headline_er_ci_high",
                "headline_er_strategy", "mean_er", "mean_er_ci_low", "mean_er_ci_high",
                "bench-c:clean_accuracy"]
    columns += [f"bench-c:{k}" for k in AGGREGATE_METRICS]
    columns += [f"bench-c:{k}" for k in (*QUADRANTS, *TRANSITIONS)]
    columns += ["imagewikiqa:accuracy"]
    rows_by_id = {r.model_id: r for r in lb.rows}
    records = []
    for s in lb.submissions:
        m = s.meta
        rec: dict[str, Any] = {
            "model_id": m.model_id, "name": m.name, "family": m.family,
            "vision_encoder": m.vision_encoder, "params": m.params, "prompt_id": m.prompt_id,
            "date": m.date, "tool_version": m.tool_version, "adapter": m.adapter,
            "paper_url": m.paper_url, "code_url": m.code_url, "weights_url": m.weights_url}
        accs = ({(c.variant, c.strategy or ""): c.accuracy
                 for c in s.datasets[IMAGENET].configs} if IMAGENET in s.datasets else {})
        for v, st in in_cols:
            rec[f"imagenet-mcq:{v}:{st}:accuracy"] = accs.get((v, st))
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
        rec["bench-c:clean_accuracy"] = bc.clean_accuracy if bc else None
        for k in AGGREGATE_METRICS:
            rec[f"bench-c:{k}"] = bc.aggregate.get(k) if bc else None
        for k in QUADRANTS:
            rec[f"bench-c:{k}"] = bc.quadrants.get(k) if bc else None
        for k in TRANSITIONS:
            rec[f"bench-c:{k}"] = bc.transitions.get(k) if bc else None
        rec["imagewikiqa:accuracy"] = row.iwqa
        records.append(rec)
    return columns, records


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


def to_json(lb: Leaderboard, columns: list[str], records: list[dict[str, Any]]) -> str:
    """``leaderboard.json``: the same table plus the baselines definition and every fit."""
    return json.dumps(
        {"schema_version": 1, "overview_strategy": lb.strategy,
         "baselines": lb.spec.as_record(), "fits": [f.as_record() for f in lb.fits],
         "columns": columns, "rows": records},
        separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"
