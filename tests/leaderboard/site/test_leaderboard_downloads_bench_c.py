"""The downloads name each Bench-C weighting: ``bench-c:plain:<metric>`` (the
paper's per-cell tables) and ``bench-c:kappa_weighted:<metric>``, both equal to
a direct loop over the stored predictions, in the CSV and the JSON alike."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.fixtures.submission import real_submissions
from vlmrobust.core.datadir import read_table
from vlmrobust.leaderboard.site.downloads import JSON_ONLY_COLUMNS, as_records
from vlmrobust.leaderboard.site.publish import build_site

METRICS = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras", "destructive_ras",
           "corrective_ras", "S_clean", "C_clean")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], Path]:
    tmp = tmp_path_factory.mktemp("downloads")
    subs, datasets = real_submissions(tmp, 3)
    build_site(subs, tmp / "site", datasets=datasets)
    return subs, datasets, tmp / "site"


def _probs(z: list[float]) -> list[float]:
    top = max(z)
    e = [math.exp(x - top) for x in z]
    return [x / sum(e) for x in e]


def _s_c(z: list[float], answer: int) -> tuple[float, float, bool]:
    """Normalised entropy, |1[right] − max p| and whether the first argmax is right."""
    p = _probs(z)
    s = -sum(x * math.log(x) for x in p if x > 0) / math.log(len(p))
    right = p.index(max(p)) == answer
    return s, abs(float(right) - max(p)), right


def _mean(pairs: list[tuple[float, float]], weighted: bool) -> float | None:
    """(κ, x) pairs -> Σκx/Σκ (plain mean when Σκ = 0) or the plain mean; None if empty."""
    if not pairs:
        return None
    ksum = sum(k for k, _ in pairs)
    if weighted and ksum > 0:
        return sum(k * x for k, x in pairs) / ksum
    return sum(x for _, x in pairs) / len(pairs)


def _direct(dataset: Path, predictions: Path) -> dict[str, float | None]:
    """Every Bench-C download column of one model, by a loop over cells."""
    rows = read_table(dataset, "default", columns=[
        "id", "answer", "source_id", "corruption", "severity", "kappa"]).to_pylist()
    logits = {r["id"]: r["logits"] for r in pq.read_table(predictions).to_pylist()}
    clean = {r["source_id"]: r for r in rows if r["corruption"] == "none"}
    cells: dict[tuple[str, int], dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for r in rows:
        if r["corruption"] == "none":
            continue
        o = clean[r["source_id"]]
        s_o, c_o, right_o = _s_c(logits[o["id"]], o["answer"])
        s_d, c_d, right_d = _s_c(logits[r["id"]], r["answer"])
        ds, dc = s_d - s_o, c_d - c_o
        ras = -dc - max(dc, 0) * max(-ds, 0) - max(ds, 0) * max(-dc, 0)
        values = {"acc": float(right_d), "delta_acc": float(right_d) - float(right_o), "S": s_d,
                  "delta_S": ds, "C": c_d, "delta_C": dc, "ras": ras, "S_clean": s_o,
                  "C_clean": c_o,
                  "destructive_ras" if right_o else "corrective_ras": ras}
        cell = cells[(r["corruption"], r["severity"])]
        for name, x in values.items():
            cell[name].append((float(r["kappa"]), x))
    out: dict[str, float | None] = {}
    for label, weighted in (("plain", False), ("kappa_weighted", True)):
        for name in METRICS:
            per_cell = [_mean(cell[name], weighted) for cell in cells.values()]
            kept = [v for v in per_cell if v is not None]
            out[f"bench-c:{label}:{name}"] = sum(kept) / len(kept) if kept else None
        answers = [(float(o["kappa"]), float(_s_c(logits[o["id"]], o["answer"])[2]))
                   for o in clean.values()]
        out[f"bench-c:{label}:clean_accuracy"] = _mean(answers, weighted)
    return out


def test_csv_and_json_name_both_weightings(site: tuple[Path, list[Path], Path]) -> None:
    _, _, root = site
    header = next(csv.reader(io.StringIO((root / "leaderboard.csv").read_text())))
    table = json.loads((root / "leaderboard.json").read_text())
    assert [c for c in table["columns"] if c not in JSON_ONLY_COLUMNS] == header
    assert table["schema_version"] == 3
    for name in (*METRICS, "clean_accuracy"):
        assert f"bench-c:plain:{name}" in header and f"bench-c:kappa_weighted:{name}" in header
        assert f"bench-c:{name}" not in header  # an unmarked weighting is what #13 left
    assert {"bench-c:plain:*", "bench-c:kappa_weighted:*"} <= set(table["column_notes"])
    # the page that explains which number is which names the download columns too
    for page in ("bench-c.html", "index.html"):
        text = (root / page).read_text()
        assert "bench-c:plain:" in text and "bench-c:kappa_weighted:" in text, page


def test_columns_equal_a_direct_loop_over_cells(site: tuple[Path, list[Path], Path]) -> None:
    subs, datasets, root = site
    bench_c = next(d for d in datasets if d.name == "bench-c")
    csv_rows = {r["model_id"]: r for r in
                csv.DictReader(io.StringIO((root / "leaderboard.csv").read_text()))}
    json_rows = {r["model_id"]: r for r in
                 as_records(json.loads((root / "leaderboard.json").read_text()))}
    assert sorted(csv_rows) == ["model-0", "model-1", "model-2"]
    for model_id, row in csv_rows.items():
        want = _direct(bench_c, subs / model_id / "bench-c" / "predictions.parquet")
        differ = 0
        for column, value in want.items():
            got: Any = row[column]
            if value is None:  # e.g. corrective RAS of a model never wrong on a clean copy
                assert got == "" and json_rows[model_id][column] is None, (model_id, column)
                continue
            assert got != "", (model_id, column)
            assert math.isclose(float(got), value, rel_tol=1e-9, abs_tol=1e-12), (
                model_id, column, got, value)
            assert json_rows[model_id][column] == float(got)  # same full-precision value
            if column.startswith("bench-c:plain:"):
                twin = want[column.replace(":plain:", ":kappa_weighted:")]
                differ += twin is not None and abs(twin - value) > 1e-6
        # κ differs between questions, so the weightings must differ somewhere:
        # a swapped or duplicated column pair cannot pass the loop above.
        assert differ >= 3, model_id
    nulls = sum(v == "" for r in csv_rows.values() for k, v in r.items()
                if k.startswith("bench-c:") and not k.endswith(("ci_low", "ci_high")))
    assert nulls < 4  # the comparison above is about numbers, not empty cells
