"""submissions/<model-id>/ layout, merging, model-id validation, nothing written on failure."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import vlmrobust
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
from vlmrobust.evaluation.model_meta import model_meta_from, validate_model_id
from vlmrobust.evaluation.submissions import add_submission


@pytest.fixture(scope="module")
def datasets_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ds")
    write_mcq(root / "imagenet-mcq")
    write_bench_c(root / "bench-c")
    return root


def _predictions(ds: Path, folder: Path, jsonl: bool = False) -> Path:
    rows = dataset_rows(ds)
    logits = random_logits(rows)
    if jsonl:
        p = write_jsonl(folder / "predictions.jsonl",
                        [{"id": r["id"], "logits": x} for r, x in zip(rows, logits, strict=True)])
        write_meta(p, ds, model="classifier:toy", family="classifier", params=4_000_000)
        return p
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits, model="classifier:toy",
                                       family="classifier", params=4_000_000,
                                       out=folder / "predictions.parquet")


@pytest.mark.parametrize("bad", ["", "../x", "a/b", "a\\b", ".hidden", "-x", "a..b", "x" * 101, "é", "a b"])
def test_bad_model_ids(bad: str) -> None:
    with pytest.raises(SubmissionError, match="invalid model id"):
        validate_model_id(bad)


@pytest.mark.parametrize("good", ["a", "efficientnet-lite0", "Qwen2.5-VL_7B", "x" * 100])
def test_good_model_ids(good: str) -> None:
    assert validate_model_id(good) == good


def test_add_two_datasets_and_merge(datasets_dir: Path, tmp_path: Path) -> None:
    subs = tmp_path / "submissions"
    p1 = _predictions(datasets_dir / "imagenet-mcq", tmp_path / "p1")
    p2 = _predictions(datasets_dir / "bench-c", tmp_path / "p2", jsonl=True)
    add_submission(subs, "toy-1", datasets_dir / "imagenet-mcq", p1, {"vision_encoder": "ViT-T"})
    scores = add_submission(subs, "toy-1", datasets_dir / "bench-c", p2)
    root = subs / "toy-1"
    assert sorted(x.name for x in root.iterdir()) == ["bench-c", "imagenet-mcq", "meta.yaml", "scores.json"]
    on_disk = json.loads((root / "scores.json").read_text())
    assert on_disk == scores and sorted(on_disk["datasets"]) == ["bench-c", "imagenet-mcq"]
    assert on_disk["model_id"] == "toy-1"
    assert (root / "imagenet-mcq" / "predictions.parquet").read_bytes() == p1.read_bytes()
    # JSONL is stored as parquet with the same rows
    stored = pq.read_table(root / "bench-c" / "predictions.parquet").to_pylist()
    original = [json.loads(line) for line in p2.read_text().splitlines()]
    assert [r["id"] for r in stored] == [r["id"] for r in original]
    assert [r["logits"] for r in stored] == [r["logits"] for r in original]
    assert sorted(x.name for x in (root / "bench-c").iterdir()) == ["predictions.parquet", "rows.jsonl"]
    pred_meta = json.loads(pq.read_schema(root / "bench-c" / "predictions.parquet").metadata[b"vlmrobust.meta"])
    assert pred_meta["dataset"]["name"] == "bench-c"
    model = yaml.safe_load((root / "meta.yaml").read_text())
    assert model["model_id"] == "toy-1" and model["family"] == "classifier"
    assert model["params"] == 4_000_000 and model["adapter"] == "classifier:toy"
    # re-submitting one dataset replaces only that section
    before = on_disk["datasets"]["imagenet-mcq"]
    add_submission(subs, "toy-1", datasets_dir / "bench-c", p2)
    assert json.loads((root / "scores.json").read_text())["datasets"]["imagenet-mcq"] == before


def test_rejected_submission_writes_nothing(datasets_dir: Path, tmp_path: Path) -> None:
    subs = tmp_path / "submissions"
    p = _predictions(datasets_dir / "bench-c", tmp_path / "p")
    add_submission(subs, "m", datasets_dir / "bench-c", p)
    snapshot = {x: x.read_bytes() for x in subs.rglob("*") if x.is_file()}
    bad = write_parquet(tmp_path / "bad" / "predictions.parquet", ["q0-none-0"], [[0.0, 1.0, 2.0, 3.0]])
    with pytest.raises(SubmissionError):
        add_submission(subs, "m", datasets_dir / "bench-c", bad)
    with pytest.raises(SubmissionError, match="invalid model id"):
        add_submission(subs, "../m", datasets_dir / "bench-c", p)
    assert {x: x.read_bytes() for x in subs.rglob("*") if x.is_file()} == snapshot


def test_corrupt_existing_scores_is_refused(datasets_dir: Path, tmp_path: Path) -> None:
    subs = tmp_path / "submissions"
    (subs / "m").mkdir(parents=True)
    (subs / "m" / "scores.json").write_text("{not json")
    p = _predictions(datasets_dir / "bench-c", tmp_path / "p")
    with pytest.raises(SubmissionError, match=r"scores\.json: not valid JSON"):
        add_submission(subs, "m", datasets_dir / "bench-c", p)
    assert sorted(x.name for x in (subs / "m").iterdir()) == ["scores.json"]


def test_model_meta_validation() -> None:
    meta = model_meta_from("m", {"model": "vlm:x", "family": "vlm", "params": "7e9"}, {"name": "X"})
    assert (meta.name, meta.family, meta.params, meta.adapter) == ("X", "vlm", 7_000_000_000, "vlm:x")
    with pytest.raises(SubmissionError, match="family 'robot'"):
        model_meta_from("m", None, {"family": "robot"})
    with pytest.raises(SubmissionError, match="params 'many'"):
        model_meta_from("m", None, {"params": "many"})


def test_cli_submit(datasets_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _predictions(datasets_dir / "imagenet-mcq", tmp_path / "p")
    extra = tmp_path / "model.yaml"
    extra.write_text("name: Toy Model\nprompt_id: p2\n")
    subs = tmp_path / "subs"
    rc = main(["submit", "--submissions", str(subs), "--model-id", "toy", "--dataset",
               str(datasets_dir / "imagenet-mcq"), "--predictions", str(p), "--meta", str(extra),
               "--family", "other", "--params", "12"])
    assert rc == 0, capsys.readouterr().err
    model = yaml.safe_load((subs / "toy" / "meta.yaml").read_text())
    assert (model["name"], model["prompt_id"], model["family"], model["params"]) == ("Toy Model", "p2", "other", 12)
    assert main(["submit", "--submissions", str(subs), "--model-id", "a/b", "--dataset",
                 str(datasets_dir / "imagenet-mcq"), "--predictions", str(p)]) == 1
    assert "invalid model id" in capsys.readouterr().err
    assert not (subs / "a").exists()


def test_rescore_in_place(datasets_dir: Path, tmp_path: Path) -> None:
    subs = tmp_path / "submissions"
    p = _predictions(datasets_dir / "bench-c", tmp_path / "p")
    first = add_submission(subs, "m", datasets_dir / "bench-c", p)
    stored = subs / "m" / "bench-c" / "predictions.parquet"
    again = add_submission(subs, "m", datasets_dir / "bench-c", stored)
    assert again == first
    assert stored.read_bytes() == p.read_bytes()
    meta = json.loads(pq.read_schema(stored).metadata[b"vlmrobust.meta"])
    assert meta["model"] == "classifier:toy"
