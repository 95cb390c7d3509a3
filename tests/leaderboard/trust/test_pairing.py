"""Bench-C pairs a corrupted copy with the clean copy of its own question,
``(source, source_id)``: converted sources number their rows from 0, so two
sources share ids (issue 22.1). Validation refuses a dataset whose clean copies
repeat a question."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import vlmrobust
from tests.fixtures.score import bench_c_features, png, write_meta, write_parquet
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.validate.check import validate

COPIES = (("none", 0), ("fog", 1), ("gaussian_noise", 1))
# mmstar's question is answered right with high confidence, lego's wrong with low
LOGITS = {"mmstar": [4.0, 0.0, 0.0, 0.0], "lego": [0.3, 0.2, 0.1, 0.0]}
ANSWER = {"mmstar": 0, "lego": 3}


def _rows(ids: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for n, source in enumerate(("mmstar", "lego")):
        for corruption, severity in COPIES:
            rows.append({
                "id": f"{source}/{ids[source]}/{corruption}/{severity}",
                "image": {"bytes": png(n), "path": None}, "question": f"{source} question?",
                "options": ["a", "b", "c", "d"], "answer": ANSWER[source],
                "source_id": ids[source], "source": source, "category": "cat",
                "corruption": corruption, "severity": severity, "kappa": 0.5,
            })
    return rows


def _dataset(out: Path, ids: dict[str, str], rows: list[dict[str, Any]] | None = None) -> Path:
    write_dataset(out, configs={"default": rows or _rows(ids)}, features=bench_c_features(),
                  card="toy", info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    return out


def _own_clean_logits(ds: Path, out: Path) -> Path:
    """Every copy of a question gets exactly its clean copy's logits."""
    from vlmrobust.core.datadir import read_table

    t = read_table(ds, "default", ["id", "source"]).to_pylist()
    return vlmrobust.write_predictions(ds, [r["id"] for r in t], [LOGITS[r["source"]] for r in t],
                                       model="m", family="other", out=out)


def test_shared_source_id_pairs_within_its_source(tmp_path: Path) -> None:
    shared = _dataset(tmp_path / "shared", {"mmstar": "0", "lego": "0"})
    block = score(shared, _own_clean_logits(shared, tmp_path / "p.parquet"),
                  tmp_path / "s.json")["datasets"]["bench-c"]["bench_c"]
    agg = block["aggregate"]
    for metric in ("delta_acc", "delta_S", "delta_C", "ras"):
        assert agg[metric] == pytest.approx(0.0, abs=1e-12), metric
        assert agg["plain"][metric] == pytest.approx(0.0, abs=1e-12), metric
        for cell in block["cells"]:
            assert cell[metric] == pytest.approx(0.0, abs=1e-12), (metric, cell["corruption"])
    assert agg["transitions"] == {"RR": 2, "RW": 0, "WR": 0, "WW": 2}
    # and exactly as two separately keyed questions
    apart = _dataset(tmp_path / "apart", {"mmstar": "0", "lego": "1"})
    block_apart = score(apart, _own_clean_logits(apart, tmp_path / "q.parquet"),
                        tmp_path / "t.json")["datasets"]["bench-c"]["bench_c"]
    assert block_apart["cells"] == block["cells"]
    assert block_apart["aggregate"] == block["aggregate"]


def test_a_repeated_clean_copy_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rows = _rows({"mmstar": "0", "lego": "0"})
    rows.append({**rows[0], "id": "mmstar/0/none/0-again"})
    ds = _dataset(tmp_path / "dup", {}, rows)
    with pytest.raises(SubmissionError, match="dataset repeats a clean copy"):
        _own_clean_logits(ds, tmp_path / "refused.parquet")  # write_predictions validates
    assert not (tmp_path / "refused.parquet").exists()
    pred = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows],
                         [LOGITS[r["source"]] for r in rows])
    write_meta(pred, ds)
    with pytest.raises(SubmissionError, match=r"dataset repeats a clean copy.*mmstar/0"):
        validate(ds, pred)
    out = tmp_path / "s.json"
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(pred), "--out",
                       str(out)], capsys)
    assert rc == 1 and "rebuild the dataset" in err and not out.exists()
    one_line_error(err)


def test_leaderboard_rescoring_pairs_within_the_source(tmp_path: Path) -> None:
    from vlmrobust.evaluation.submissions import add_submission
    from vlmrobust.leaderboard.trust.verify import load_verified_submissions

    shared = _dataset(tmp_path / "datasets" / "bench-c", {"mmstar": "0", "lego": "0"})
    pred = _own_clean_logits(shared, tmp_path / "p.parquet")
    add_submission(tmp_path / "subs", "m", shared, pred)
    (sub,) = load_verified_submissions(tmp_path / "subs", datasets=[shared])
    bc = sub.datasets["bench-c"].bench_c
    assert bc is not None
    assert bc.transitions == {"RR": 2, "RW": 0, "WR": 0, "WW": 2}
    for metric in ("delta_acc", "delta_S", "delta_C", "ras"):
        assert bc.aggregate[metric] == pytest.approx(0.0, abs=1e-12), metric
