"""A quick `predict --limit N` run scores as explicitly partial, is marked
partial wherever it is shown, and is refused by `submit` and the leaderboard
(issue 27.6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from tests.fixtures.predict import write_mcq as write_photo_mcq
from tests.fixtures.score import dataset_rows, random_logits, write_mcq, write_meta, write_parquet
from vlmrobust.cli.main import main
from vlmrobust.evaluation.validate.check import validate


def _first_rows(ds: Path, n: int) -> list[dict[str, object]]:
    rows = dataset_rows(ds)
    out, seen = [], {}
    for r in rows:
        seen[r["config"]] = seen.get(r["config"], 0) + 1
        if seen[r["config"]] <= n:
            out.append(r)
    return out


def test_predict_limit_scores_as_partial_and_submit_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_photo_mcq(tmp_path / "ds", {"a": 4, "b": 3})
    preds = tmp_path / "p.parquet"
    assert main(["predict", "--model", "classifier:efficientnet-lite0", "--dataset", str(ds),
                 "--out", str(preds), "--limit", "2", "--no-progress", "--threads", "1"]) == 0
    assert "partial run" in capsys.readouterr().out
    assert main(["validate", "--dataset", str(ds), "--predictions", str(preds)]) == 0
    assert "PARTIAL run (predict --limit 2: 4 of 7 rows)" in capsys.readouterr().out
    out = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(ds), "--predictions", str(preds), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "imagenet-mcq: PARTIAL run (predict --limit 2: 4 of 7 rows)" in printed
    section = json.loads(out.read_text())["datasets"]["imagenet-mcq"]
    assert section["partial"] == {"limit": 2, "rows": 4, "of": 7}
    assert {c: v["n"] for c, v in section["configs"].items()} == {"a": 2, "b": 2}
    # accuracy of the answered rows, recomputed here from the file and the dataset
    table = pq.read_table(preds).to_pylist()
    answers = {r["id"]: r["answer"] for r in dataset_rows(ds)}
    for config in ("a", "b"):
        mine = [r for r in table if r["id"].startswith(config)]
        acc = np.mean([int(np.argmax(r["logits"])) == answers[r["id"]] for r in mine])
        assert section["configs"][config]["accuracy"] == pytest.approx(acc)

    subs = tmp_path / "subs"
    assert main(["submit", "--submissions", str(subs), "--model-id", "quick", "--dataset",
                 str(ds), "--predictions", str(preds)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "PARTIAL run" in err and "without --limit" in err
    assert not (subs / "quick").exists()


def test_only_the_first_rows_of_a_limited_run_count_as_partial(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "ds")  # two configs of 8 rows
    first = _first_rows(ds, 3)
    good = write_parquet(tmp_path / "good.parquet", [r["id"] for r in first],
                         logits=random_logits(first))
    write_meta(good, ds, limit=3)
    report = validate(ds, good)
    assert report.partial == {"limit": 3, "rows": 6, "of": 16}
    assert report.index.n_rows == 6 and report.index.configs == tuple(
        dict.fromkeys(r["config"] for r in first))
    # the same rows without a recorded limit: refused as missing rows
    write_meta(good, ds)
    with pytest.raises(Exception, match="missing id"):
        validate(ds, good)
    # a recorded limit, but rows picked from the middle: not a limited run
    rows = dataset_rows(ds)
    picked = [r for i, r in enumerate(rows) if i % 8 in (2, 4, 6)]
    cherry = write_parquet(tmp_path / "cherry.parquet", [r["id"] for r in picked],
                           logits=random_logits(picked))
    write_meta(cherry, ds, limit=3)
    with pytest.raises(Exception, match="missing id"):
        validate(ds, cherry)
    # a limit at least as large as every config: complete, not partial
    full = write_parquet(tmp_path / "full.parquet", [r["id"] for r in rows],
                         logits=random_logits(rows))
    write_meta(full, ds, limit=100)
    assert validate(ds, full).partial is None


def test_leaderboard_refuses_a_partial_section(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds")
    first = _first_rows(ds, 2)
    folder = tmp_path / "subs" / "quick"
    preds = write_parquet(folder / "imagenet-mcq" / "predictions.parquet",
                          [r["id"] for r in first], logits=random_logits(first))
    write_meta(preds, ds, limit=2)
    # a hand-assembled folder: the scores are what `score` computes for it
    assert main(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                 str(tmp_path / "s.json"), "--model-id", "quick"]) == 0
    (folder / "scores.json").write_text((tmp_path / "s.json").read_text())
    (folder / "meta.yaml").write_text(yaml.safe_dump({"model_id": "quick", "name": "Quick",
                                                      "family": "classifier"}))
    # the sidecar is not part of a submission folder's layout: embed-less parquet needs it
    capsys.readouterr()
    assert main(["leaderboard", "build", "--submissions", str(tmp_path / "subs"), "--out",
                 str(tmp_path / "site"), "--datasets", str(ds), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "PARTIAL run (predict --limit 2: 4 of 16 rows)" in err
    assert not (tmp_path / "site").exists()
