"""Issue 35's Done-when for served models: `vlmrobust eval` with an `endpoint:`
model against a REAL local `transformers serve` (a tiny random LLaVA, CPU) runs
what that server can answer (the sample suite reads classification in the
closed world, by generation) and lists what it cannot (ImageNet-MCQ's letter
log-probs: the server returns none) as skipped in one line with the server's
reason, not as a failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.classification import write_classification
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
# one worker under xdist for the session's transformers-serve (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("served-llava")


def test_endpoint_runs_what_the_server_answers_and_skips_the_rest(
        served_llava: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model_dir, url = served_llava
    store = tmp_path / "store"
    write_mcq(store / "imagenet-mcq", {"default": 2}, with_class_ids=False)
    write_classification(store / "classification", n=3, k=None)
    out = tmp_path / "out"
    assert main(["eval", "--model", f"endpoint:{model_dir}", "--endpoint-url", url,
                 "--endpoint-cache", str(tmp_path / "cache"), "--suite", "sample",
                 "--dataset-store", str(store), "--datasets", "imagenet-mcq", "classification",
                 "--max-new-tokens", "6", "--out", str(out), "--no-progress",
                 "--model-id", "tiny-llava"]) == 0
    printed = capsys.readouterr().out
    skipped = [line for line in printed.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 1 and skipped[0].startswith("skipped imagenet-mcq: ")
    assert "returns no logprobs" in skipped[0] and "--mode letter" in skipped[0]
    r = json.loads((out / "results.json").read_text())
    status = {e["dataset"]: e["status"] for e in r["entries"]}
    assert status == {"imagenet-mcq": "skipped", "classification": "done"}
    done = next(e for e in r["entries"] if e["dataset"] == "classification")
    assert done["reader"]["mode"] == "generate" and done["reader"]["backend"] == "endpoint"
    assert [h["config"] for h in done["headlines"]] == ["toy"]
    assert r["backend"]["endpoint"]["url"] == url
    sub = out / "submissions" / "tiny-llava"
    assert (sub / "classification" / "predictions.parquet").is_file()
    assert not (sub / "imagenet-mcq").exists()
    assert not (out / "predictions" / "imagenet-mcq").exists()
