"""Per-row results beside scores.json (#27 item 7): one record per question,
and every Bench-C corrupted row's ΔAcc / ΔS / ΔC / RAS against its clean copy,
checked against an independent plain-Python computation and against the
cell means of scores.json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_bench_c,
    write_meta,
    write_parquet,
)
from vlmrobust.core.datadir import read_table
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.rows.results import rows_path


def _terms(z: list[float], answer: int) -> tuple[float, float, int, float]:
    m = max(z)
    e = [math.exp(v - m) for v in z]
    p = [v / sum(e) for v in e]
    s = -sum(x * math.log(x) for x in p if x > 0) / math.log(len(p))
    ok = int(p.index(max(p)) == answer)
    return s, abs(ok - max(p)), ok, max(p)


def test_bench_c_rows_equal_an_independent_pairing(tmp_path: Path) -> None:
    ds = write_bench_c(tmp_path / "bench-c", n_questions=4)
    rows = dataset_rows(ds)
    logits = random_logits(rows, seed=7)
    p = write_parquet(tmp_path / "sub" / "p.parquet", [r["id"] for r in rows], logits)
    write_meta(p, ds)
    out = tmp_path / "out" / "scores.json"
    scores = score(ds, p, out)
    assert rows_path(out) == tmp_path / "out" / "scores.rows.jsonl"
    records = {r["id"]: r for r in map(json.loads, rows_path(out).read_text().splitlines())}
    assert len(records) == len(rows)
    table = read_table(ds, "default", columns=["id", "answer", "source", "source_id",
                                               "corruption", "severity"]).to_pylist()
    z = {r["id"]: x for r, x in zip(rows, logits, strict=True)}
    clean = {(r["source"], r["source_id"]): r for r in table if r["corruption"] == "none"}
    by_cell: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in table:
        rec = records[r["id"]]
        sd, cd, okd, conf = _terms(z[r["id"]], r["answer"])
        assert rec["confidence"] == pytest.approx(conf, abs=1e-12)
        assert rec["correct"] is bool(okd) and rec["predicted"] == z[r["id"]].index(max(z[r["id"]]))
        if r["corruption"] == "none":
            assert rec["clean_id"] is None and "ras" not in rec
            continue
        o = clean[(r["source"], r["source_id"])]
        so, co, oko, _ = _terms(z[o["id"]], o["answer"])
        d_s, d_c = sd - so, cd - co
        want = {"delta_acc": okd - oko, "S": sd, "S_clean": so, "delta_S": d_s, "C": cd,
                "C_clean": co, "delta_C": d_c,
                "ras": -d_c - max(d_c, 0) * max(-d_s, 0) - max(d_s, 0) * max(-d_c, 0)}
        assert rec["clean_id"] == o["id"]
        for k, v in want.items():
            assert rec[k] == pytest.approx(v, abs=1e-12), (r["id"], k)
        by_cell.setdefault((r["corruption"], r["severity"]), []).append(rec)
    # the per-row terms are what the cells of scores.json average
    for cell in scores["datasets"]["bench-c"]["bench_c"]["cells"]:
        recs = by_cell[(cell["corruption"], cell["severity"])]
        for k in ("delta_acc", "delta_S", "delta_C", "ras"):
            assert cell["plain"][k] == pytest.approx(sum(r[k] for r in recs) / len(recs), abs=1e-12)


def test_rows_output_may_not_overwrite_an_input(tmp_path: Path) -> None:
    from vlmrobust.core.errors import VlmrobustError

    ds = write_bench_c(tmp_path / "bench-c", n_questions=2)
    rows = dataset_rows(ds)
    # predictions named like the rows file of --out: scoring would overwrite them
    p = write_parquet(tmp_path / "scores.rows.jsonl", [r["id"] for r in rows], random_logits(rows))
    write_meta(p, ds)
    before = p.read_bytes()
    with pytest.raises(VlmrobustError, match="is an input of this command"):
        score(ds, p, tmp_path / "scores.json")
    assert p.read_bytes() == before and not (tmp_path / "scores.json").exists()
