"""`submit` merges a model's metadata deliberately (issue 27.4): the first name
wins unless --name gives one, each dataset keeps its own prompt, and a family
or adapter other than the stored one is refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import vlmrobust
from tests.fixtures.score import dataset_rows, random_logits, write_bench_c, write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.model_meta import merge_model_meta
from vlmrobust.leaderboard.load import load_meta


def _preds(ds: Path, out: Path, **meta: object) -> Path:
    rows = dataset_rows(ds)
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows], random_logits(rows),
                                       out=out, **meta)


def _submit(subs: Path, ds: Path, preds: Path, *flags: str) -> int:
    return main(["submit", "--submissions", str(subs), "--model-id", "my-vlm", "--dataset",
                 str(ds), "--predictions", str(preds), *flags])


def test_three_submits_keep_name_prompts_and_refuse_conflicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mcq, benchc = write_mcq(tmp_path / "mcq"), write_bench_c(tmp_path / "bc")
    subs = tmp_path / "subs"
    meta_path = subs / "my-vlm" / "meta.yaml"
    p1 = _preds(mcq, tmp_path / "1.parquet", model="my-text-vlm", family="vlm",
                prompt_id="photo-of", vision_encoder="ViT-L/14")
    assert _submit(subs, mcq, p1, "--name", "My text-only VLM") == 0
    first = yaml.safe_load(meta_path.read_text())
    assert first["name"] == "My text-only VLM"
    assert first["prompts"] == {"imagenet-mcq": "photo-of"} and first["prompt_id"] == "photo-of"

    # second dataset, another prompt, no --name: the name stays, prompts per dataset
    p2 = _preds(benchc, tmp_path / "2.parquet", model="my-text-vlm", family="vlm",
                prompt_id="select-label", params=7_000_000)
    assert _submit(subs, benchc, p2) == 0
    second = yaml.safe_load(meta_path.read_text())
    assert second["name"] == "My text-only VLM"
    assert second["prompts"] == {"imagenet-mcq": "photo-of", "bench-c": "select-label"}
    assert second["prompt_id"] is None  # no single prompt: the page shows them per dataset
    assert second["vision_encoder"] == "ViT-L/14" and second["params"] == 7_000_000
    assert second["date"] == first["date"]

    # the first dataset again, with its prompt changed and an explicit new name
    p3 = _preds(mcq, tmp_path / "3.parquet", model="my-text-vlm", family="vlm",
                prompt_id="identify")
    assert _submit(subs, mcq, p3, "--name", "Renamed VLM") == 0
    third = yaml.safe_load(meta_path.read_text())
    assert third["name"] == "Renamed VLM"
    assert third["prompts"] == {"imagenet-mcq": "identify", "bench-c": "select-label"}
    loaded = load_meta(subs / "my-vlm")
    assert loaded.prompts == third["prompts"] and loaded.name == "Renamed VLM"

    # a conflicting family: one line, nothing changed
    before = {p: p.read_bytes() for p in (subs / "my-vlm").rglob("*") if p.is_file()}
    capsys.readouterr()
    p4 = _preds(benchc, tmp_path / "4.parquet", model="my-text-vlm", family="clip")
    assert _submit(subs, benchc, p4) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "family is 'vlm'" in err and "'clip'" in err
    assert {p: p.read_bytes() for p in (subs / "my-vlm").rglob("*") if p.is_file()} == before
    assert _submit(subs, benchc, p2, "--family", "classifier") == 1
    assert "family is 'vlm'" in capsys.readouterr().err


def test_adapter_conflict_and_first_submit() -> None:
    old = {"model_id": "m", "name": "M", "family": "classifier", "adapter": "classifier:lite0",
           "prompts": {"a": None}, "prompt_id": None}
    with pytest.raises(SubmissionError, match=r"adapter is 'classifier:lite0'.*classifier:lite1"):
        merge_model_meta("m", old, "b", {"model": "classifier:lite1", "family": "classifier"})
    same = merge_model_meta("m", old, "b", {"model": "classifier:lite0", "params": 5})
    assert same.name == "M" and same.family == "classifier" and same.params == 5
    assert same.prompts == {"a": None, "b": None}
    fresh = merge_model_meta("m", None, "a", {"model": "x", "prompt_id": "p"}, {"name": "N"})
    assert fresh.name == "N" and fresh.prompts == {"a": "p"} and fresh.prompt_id == "p"
