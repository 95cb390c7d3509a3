"""score(): scores.json schema and values, checked against an independent
per-question loop; determinism; prediction-only submissions; CLI."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_bench_c,
    write_jsonl,
    write_mcq,
    write_meta,
    write_parquet,
)
from vlmrobust.cli import main
from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.scoring.dataset import score, score_tables


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", n=30)


@pytest.fixture(scope="module")
def bench_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bench_c(tmp_path_factory.mktemp("ds") / "bench-c", n_questions=6)


def _softmax(z: list[float]) -> list[float]:
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


def _reference_bench_c(ds: Path, logits: dict[str, list[float]]) -> dict[tuple[str, int], dict[str, float]]:
    """Independent plain-Python computation of every cell of the bench_c block."""
    from vlmrobust.core.datadir import read_table

    rows = read_table(ds, "default", columns=["id", "answer", "source_id", "corruption", "severity", "kappa"]).to_pylist()
    clean = {r["source_id"]: r for r in rows if r["corruption"] == "none"}

    def stats(r: dict[str, Any]) -> tuple[float, float, int]:
        p = _softmax(logits[r["id"]])
        s = -sum(x * math.log(x) for x in p if x > 0) / math.log(len(p))
        pred = p.index(max(p))
        ok = int(pred == r["answer"])
        return s, abs(ok - max(p)), ok

    cells: dict[tuple[str, int], list[tuple[float, dict[str, float]]]] = {}
    for r in rows:
        if r["corruption"] == "none":
            continue
        so, co, oko = stats(clean[r["source_id"]])
        sd, cd, okd = stats(r)
        ds_, dc = sd - so, cd - co
        ras = -dc - max(dc, 0) * max(-ds_, 0) - max(ds_, 0) * max(-dc, 0)
        vals = {"acc": okd, "delta_acc": okd - oko, "S": sd, "delta_S": ds_, "C": cd, "delta_C": dc, "ras": ras}
        cells.setdefault((r["corruption"], r["severity"]), []).append((r["kappa"], vals))
    out = {}
    for key, items in cells.items():
        wsum = sum(k for k, _ in items)
        out[key] = {m: (sum(k * v[m] for k, v in items) / wsum if wsum > 0
                        else sum(v[m] for _, v in items) / len(items)) for m in items[0][1]}
    return out


def _submit(ds: Path, folder: Path, seed: int = 0) -> tuple[Path, dict[str, list[float]]]:
    rows = dataset_rows(ds)
    logits = random_logits(rows, seed)
    p = write_parquet(folder / "predictions.parquet", [r["id"] for r in rows], logits)
    write_meta(p, ds)
    return p, {r["id"]: x for r, x in zip(rows, logits, strict=True)}


def test_bench_c_cells_match_independent_loop(bench_c: Path, tmp_path: Path) -> None:
    p, logits = _submit(bench_c, tmp_path / "sub")
    scores = score(bench_c, p, tmp_path / "scores.json")
    on_disk = json.loads((tmp_path / "scores.json").read_text())
    assert on_disk == scores
    assert scores["schema_version"] == 1 and scores["model_id"] == "toy-model"
    section = scores["datasets"]["bench-c"]
    assert section["has_logits"] is True and section["reference_variant"] is None
    bc = section["bench_c"]
    ref = _reference_bench_c(bench_c, logits)
    assert len(bc["cells"]) == len(ref) == 4
    for cell in bc["cells"]:
        want = ref[(cell["corruption"], cell["severity"])]
        for m, v in want.items():
            assert cell[m] == pytest.approx(v, abs=1e-12), (cell["corruption"], cell["severity"], m)
        assert cell["n"] == 6
        assert sum(cell["quadrants"].values()) == sum(cell["transitions"].values()) == 6
    for m in ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras"):
        assert bc["aggregate"][m] == pytest.approx(np.mean([r[m] for r in ref.values()]), abs=1e-12)
    assert sum(bc["aggregate"]["transitions"].values()) == 24
    assert -2.0 <= bc["aggregate"]["destructive_ras"] <= 1.0
    assert -2.0 <= bc["aggregate"]["corrective_ras"] <= 1.0


def test_destructive_and_corrective_split(bench_c: Path, tmp_path: Path) -> None:
    # Clean copies confidently right, corrupted copies confidently wrong: all pairs
    # are RW (destructive), ΔC ≈ +1 and ΔS ≈ 0 → RAS ≈ −1; nothing is corrective.
    from vlmrobust.core.datadir import read_table

    rows = read_table(bench_c, "default", columns=["id", "answer", "corruption"]).to_pylist()
    logits = []
    for r in rows:
        z = [0.0] * 4
        z[r["answer"] if r["corruption"] == "none" else (r["answer"] + 1) % 4] = 30.0
        logits.append(z)
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], logits)
    write_meta(p, bench_c)
    agg = score(bench_c, p, tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]["aggregate"]
    assert agg["transitions"] == {"RR": 0, "RW": 24, "WR": 0, "WW": 0}
    assert agg["destructive_ras"] == pytest.approx(-1.0, abs=1e-9)
    assert agg["corrective_ras"] is None
    assert agg["delta_acc"] == -1.0 and agg["quadrants"]["overconfident"] + agg["quadrants"]["degraded"] == 24


def test_imagenet_mcq_configs(mcq: Path, tmp_path: Path) -> None:
    p, logits = _submit(mcq, tmp_path / "sub")
    section = score(mcq, p, tmp_path / "s.json")["datasets"]["imagenet-mcq"]
    assert section["reference_variant"] == "sample-photo"
    assert section["bench_c"] is None
    rows = dataset_rows(mcq)
    for config, block in section["configs"].items():
        mine = [r for r in rows if r["config"] == config]
        acc = np.mean([int(np.argmax(logits[r["id"]]) == r["answer"]) for r in mine])
        assert block["n"] == len(mine) == 30
        assert block["accuracy"] == pytest.approx(acc)
        lo, hi = block["accuracy_ci"]
        assert lo <= acc <= hi
        assert block["variant"] == config.removesuffix("-random") and block["strategy"] == "random"
        for key in ("ece", "nll", "ece_ts", "nll_ts", "temperature"):
            assert isinstance(block[key], float) and block[key] >= 0


def test_prediction_only_gets_accuracy_but_no_calibration(bench_c: Path, tmp_path: Path) -> None:
    rows = dataset_rows(bench_c)
    preds = [int(r["answer"]) if i % 3 else 0 for i, r in enumerate(rows)]
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "prediction": v} for r, v in zip(rows, preds, strict=True)])
    write_meta(p, bench_c)
    section = score(bench_c, p, tmp_path / "s.json")["datasets"]["bench-c"]
    assert section["has_logits"] is False
    cfg = section["configs"]["default"]
    assert cfg["accuracy"] == pytest.approx(np.mean([v == r["answer"] for r, v in zip(rows, preds, strict=True)]))
    assert cfg["ece"] is None and cfg["temperature"] is None
    agg = section["bench_c"]["aggregate"]
    assert agg["ras"] is None and agg["quadrants"] is None and agg["acc"] is not None
    assert sum(agg["transitions"].values()) == 24


def test_scores_are_byte_identical_across_runs(bench_c: Path, tmp_path: Path) -> None:
    p, _ = _submit(bench_c, tmp_path / "sub")
    score(bench_c, p, tmp_path / "a.json")
    score(bench_c, p, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_failure_keeps_previous_scores(bench_c: Path, tmp_path: Path) -> None:
    p, _ = _submit(bench_c, tmp_path / "sub")
    out = tmp_path / "s.json"
    score(bench_c, p, out)
    before = out.read_bytes()
    bad = write_parquet(tmp_path / "bad" / "p.parquet", ["q0-none-0"], [[1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(SubmissionError):
        score(bench_c, bad, out)
    assert out.read_bytes() == before
    assert [x.name for x in tmp_path.iterdir() if x.name.startswith(".s.json")] == []


def test_score_tables_in_memory(bench_c: Path, tmp_path: Path) -> None:
    import pyarrow as pa

    from vlmrobust.core.datadir import read_manifest, read_table

    p, logits = _submit(bench_c, tmp_path / "sub")
    table = read_table(bench_c, "default", columns=["id", "options", "answer", "source_id", "category", "corruption",
                                                    "severity", "kappa"])
    ids = list(logits)
    preds = pa.table({"id": ids, "logits": [logits[i] for i in ids]})
    mem = score_tables(table, read_manifest(bench_c), preds, model_id="toy-model")
    disk = score(bench_c, p, tmp_path / "s.json")
    assert disk["datasets"]["bench-c"].pop("predictions_sha256") == hashlib.sha256(p.read_bytes()).hexdigest()
    assert mem["datasets"]["bench-c"].pop("predictions_sha256") is None
    assert mem == disk


def test_cli_score(bench_c: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p, _ = _submit(bench_c, tmp_path / "sub")
    out = tmp_path / "out" / "scores.json"
    assert main(["score", "--dataset", str(bench_c), "--predictions", str(p), "--out", str(out),
                 "--model-id", "m1"]) == 0
    assert "RAS" in capsys.readouterr().out
    assert json.loads(out.read_text())["model_id"] == "m1"
