"""`vlmrobust predict --mode MODE` end to end on tiny random Qwen2-VL and LLaVA
models: every answer mode's predictions validate and score, the mode and
backend travel in the metadata and the resume key, and a sharded load
(--device-map) reads the same numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests import vlm_fixtures
from tests.predict_fixtures import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict import predict_dataset
from vlmrobust.evaluation.predictions_meta import read_prediction_meta

BUILDERS = {"qwen2vl": vlm_fixtures.make_qwen2vl, "llava": vlm_fixtures.make_llava}
MODES = ["letter", "likelihood:sum", "likelihood:avg", "likelihood:cfg=0.5"]


@pytest.fixture(scope="module", params=list(BUILDERS))
def model_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return BUILDERS[request.param](tmp_path_factory.mktemp(request.param) / "m")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "ds", {"default": 4}, with_class_ids=False)


def _predict(model_dir: Path, dataset: Path, out: Path, *extra: str) -> int:
    return main(["predict", "--model", f"vlm:{model_dir}", "--dataset", str(dataset),
                 "--out", str(out), "--device", "cpu", "--batch-size", "3", "--no-progress",
                 *extra])


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_predicts_validates_and_scores(model_dir: Path, dataset: Path, mode: str,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    assert _predict(model_dir, dataset, out, "--mode", mode) == 0
    meta = read_prediction_meta(out)
    assert meta["mode"] == mode and meta["backend"] == "hf" and meta["family"] == "vlm"
    table = pq.read_table(out).to_pylist()
    assert [len(r["logits"]) for r in table] == [2, 3, 4, 5]
    assert all(np.isfinite(r["logits"]).all() and max(r["logits"]) <= 0 for r in table)
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0
    scores = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(dataset), "--predictions", str(out),
                 "--out", str(scores)]) == 0
    assert json.loads(scores.read_text())


def test_modes_differ_and_resume_key_holds_the_mode(model_dir: Path, dataset: Path,
                                                    tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(f"vlm:{model_dir}", dataset, out, batch_size=2, device="cpu",
                        progress=False, mode="likelihood:sum", after_batch=stop)
    run = json.loads((tmp_path / ".p.parquet.partial" / "run.json").read_text())
    assert run["mode"] == "likelihood:sum"
    with pytest.raises(VlmrobustError, match="different mode"):
        predict_dataset(f"vlm:{model_dir}", dataset, out, batch_size=2, device="cpu",
                        progress=False, mode="letter")
    # the same mode resumes and finishes
    predict_dataset(f"vlm:{model_dir}", dataset, out, batch_size=2, device="cpu",
                    progress=False, mode="likelihood:sum")
    resumed = pq.read_table(out).column("logits").to_pylist()
    fresh = predict_dataset(f"vlm:{model_dir}", dataset, tmp_path / "q.parquet", batch_size=2,
                            device="cpu", progress=False, mode="likelihood:sum")
    assert pq.read_table(fresh).column("logits").to_pylist() == resumed
    letter = predict_dataset(f"vlm:{model_dir}", dataset, tmp_path / "l.parquet",
                             batch_size=2, device="cpu", progress=False)
    assert pq.read_table(letter).column("logits").to_pylist() != resumed


def test_device_map_reads_the_same(model_dir: Path, dataset: Path, tmp_path: Path) -> None:
    plain = predict_dataset(f"vlm:{model_dir}", dataset, tmp_path / "a.parquet", batch_size=4,
                            device="cpu", progress=False, mode="likelihood:avg")
    sharded = tmp_path / "b.parquet"
    assert main(["predict", "--model", f"vlm:{model_dir}", "--dataset", str(dataset),
                 "--out", str(sharded), "--batch-size", "4", "--no-progress",
                 "--mode", "likelihood:avg", "--device-map", "auto"]) == 0
    np.testing.assert_allclose(
        np.concatenate(pq.read_table(sharded).column("logits").to_pylist()),
        np.concatenate(pq.read_table(plain).column("logits").to_pylist()), rtol=0, atol=1e-5)


def test_mode_errors_are_one_line(model_dir: Path, dataset: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ("--mode", "likelihood:cfg=2"),
        ("--mode", "guess"),
        ("--device-map", "auto", "--device", "cpu"),
    ]
    for extra in cases:
        assert _predict(model_dir, dataset, tmp_path / "x.parquet", *extra) != 0
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err, err
    assert not any(tmp_path.iterdir())
    rc = main(["predict", "--model", "classifier:efficientnet-lite0", "--dataset", str(dataset),
               "--out", str(tmp_path / "c.parquet"), "--mode", "letter", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and "answer modes apply to vlm models" in err and "\n" not in err


def test_models_lists_the_modes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for mode in ("letter", "likelihood:sum | avg | cfg=T", "generate", "open-world"):
        assert f"\n  {mode} " in out
    (backends,) = [line for line in out.splitlines() if line.startswith("backends: ")]
    assert "hf (" in backends and "endpoint (" in backends
