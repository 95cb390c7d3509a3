"""Stale predictions are refused: the dataset fingerprint covers everything a
model sees (images, question, options, answer, id, prompt), predictions of an
earlier build are refused with or without metadata, and ``write_predictions``
fills the fingerprint in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

import vlmrobust
from tests.fixtures.score import (
    bench_c_features,
    bench_c_rows,
    dataset_rows,
    png,
    random_logits,
    write_mcq,
    write_meta,
    write_parquet,
)
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.fingerprint import ContentHasher
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.validate.check import validate


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


# -- stale: an earlier build's predictions -----------------------------------------------


def _bench_c_build(out: Path, seed: int) -> Path:
    rows = bench_c_rows()
    for r in rows:  # a "reseeded rebuild": other answers for the same ids
        r["answer"] = (r["answer"] + seed) % 4
    write_dataset(out, configs={"default": rows}, features=bench_c_features(),
                  card="toy", info=BuildInfo("bench-c", "0.1.0", seed, sample=True))
    return out


def test_predictions_of_an_earlier_build_are_refused(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    old = _bench_c_build(tmp_path / "old", 0)
    pred = perfect_predictions(old, tmp_path / "p" / "predictions.parquet")
    assert score(old, pred, tmp_path / "s.json")["datasets"]["bench-c"]["configs"]["default"][
        "accuracy"] == 1.0
    new = _bench_c_build(tmp_path / "new", 1)
    with pytest.raises(SubmissionError, match="dataset fingerprint mismatch"):
        validate(new, pred)
    # Without metadata the rows alone match the new build: refused all the same.
    bare = write_parquet(tmp_path / "bare" / "predictions.parquet",
                         pq.read_table(pred).column("id").to_pylist(),
                         pq.read_table(pred).column("logits").to_pylist())
    subs = tmp_path / "subs"
    rc, err = run_cli(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset",
                    str(new), "--predictions", str(bare)], capsys)
    assert rc == 1 and "no metadata" in err and "write_predictions" in err
    one_line_error(err)
    assert not (subs / "m").exists()
    rc, err = run_cli(["score", "--dataset", str(new), "--predictions", str(bare), "--out",
                    str(tmp_path / "s2.json")], capsys)
    assert rc == 1 and "no metadata" in err and not (tmp_path / "s2.json").exists()


def test_missing_fingerprint_is_refused(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], random_logits(rows))
    meta = write_meta(p, mcq)
    data = yaml.safe_load(meta.read_text())
    del data["dataset"]["fingerprint"]
    meta.write_text(yaml.safe_dump(data))
    with pytest.raises(SubmissionError, match=r"dataset: 'fingerprint' is a required property"):
        validate(mcq, p)


# -- the fingerprint covers everything a model sees --------------------------------------


BASE_ROW = {"id": "a", "image": png(1), "question": "What is it?", "options": ["x", "y"],
            "answer": 1}


def _fp(prompt: str | None = "what-type", **change: Any) -> str:
    h = ContentHasher(prompt)
    h.update("cfg", {**BASE_ROW, **change})
    return h.hexdigest()


@pytest.mark.parametrize("change", [
    {"image": png(2)}, {"question": "What is this object?"}, {"options": ["x", "z"]},
    {"options": ["y", "x"]}, {"answer": 0}, {"id": "b"}, {"prompt": "Answer with the letter."},
])
def test_fingerprint_changes_with_what_a_model_sees(change: dict[str, Any]) -> None:
    assert _fp(**change) != _fp()
    assert _fp() == _fp()  # deterministic


def test_fingerprint_changes_with_the_config_a_row_is_in() -> None:
    """A row moved to another config (another variant: scored and fitted apart) is
    another dataset."""
    def fp(*configs: str) -> str:
        h = ContentHasher("what-type")
        for i, config in enumerate(configs):
            h.update(config, {**BASE_ROW, "id": f"r{i}"})
        return h.hexdigest()

    assert fp("cfg", "cfg") != fp("cfg", "other") != fp("other", "cfg")
    assert fp("cfg", "other") == fp("cfg", "other")


def test_fingerprint_changes_with_the_dataset_prompt() -> None:
    assert _fp(prompt="what-object") != _fp(prompt="what-type") != _fp(prompt=None)


def test_question_prompt_change_makes_old_predictions_stale(tmp_path: Path) -> None:
    def build(out: Path, question: str, prompt: str) -> Path:
        rows = [{**r, "question": question} for r in bench_c_rows()]
        write_dataset(out, configs={"default": rows}, features=bench_c_features(), card="t",
                      info=BuildInfo("bench-c", "0.1.0", 0, extra={"question_prompt": prompt}))
        return out

    a = build(tmp_path / "a", "What type of object is this?", "what-type")
    b = build(tmp_path / "b", "What object is this?", "what-object")
    fa = json.loads((a / "manifest.json").read_text())["fingerprint"]
    fb = json.loads((b / "manifest.json").read_text())["fingerprint"]
    assert fa != fb
    pred = perfect_predictions(a, tmp_path / "p.parquet")
    with pytest.raises(SubmissionError, match="dataset fingerprint mismatch"):
        validate(b, pred)


# -- for researchers: write_predictions ------------------------------------------------



def test_write_predictions_fills_the_fingerprint(mcq: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    code = "import sys, vlmrobust; print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyarrow', 'numpy', 'yaml', 'torch')))"
    light = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert light.stdout.strip() == "[]"  # the root package stays light
    rows = dataset_rows(mcq)
    out = vlmrobust.write_predictions(mcq, [r["id"] for r in rows], random_logits(rows),
                                      model="my-vlm", family="vlm", out=tmp_path / "p.parquet",
                                      prompt_id="mcq-letter", params=7_000_000_000)
    meta = read_prediction_meta(out)
    manifest = json.loads((mcq / "manifest.json").read_text())
    assert meta["dataset"] == {"name": "imagenet-mcq", "version": "0.1.0",
                               "fingerprint": manifest["fingerprint"]}
    assert validate(mcq, out).meta == meta
    with pytest.raises(SubmissionError, match="missing id"):
        vlmrobust.write_predictions(mcq, [r["id"] for r in rows[1:]], random_logits(rows)[1:],
                                    model="m", family="vlm", out=tmp_path / "bad.parquet")
    assert not (tmp_path / "bad.parquet").exists()
    with pytest.raises(SubmissionError, match="family"):
        vlmrobust.write_predictions(mcq, [r["id"] for r in rows], random_logits(rows),
                                    model="m", family="robot", out=tmp_path / "bad.parquet")
