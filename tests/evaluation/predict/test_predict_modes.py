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

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta

BUILDERS = {"qwen2vl": vlm_fixtures.make_qwen2vl, "llava": vlm_fixtures.make_llava}
MODES = {
    # mode: (extra flags, has logits, keeps raw text)
    "letter": ((), True, False),
    "likelihood:sum": ((), True, False),
    "likelihood:avg": ((), True, False),
    "likelihood:cfg=2": ((), True, False),
    "likelihood:cfg-avg=1.5": ((), True, False),
    "generate": (("--max-new-tokens", "4", "--stop", "###"), False, True),
    "generate+cue": (("--max-new-tokens", "4", "--answer-cue", "\nAnswer:"), True, True),
    "open-world": (("--max-new-tokens", "4"), False, True),
}


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


@pytest.mark.parametrize("name", list(MODES))
def test_every_mode_predicts_validates_and_scores(model_dir: Path, dataset: Path, name: str,
                                                  tmp_path: Path) -> None:
    extra, has_logits, has_text = MODES[name]
    mode = name.removesuffix("+cue")
    out = tmp_path / "p.parquet"
    assert _predict(model_dir, dataset, out, "--mode", mode, *extra) == 0
    meta = read_prediction_meta(out)
    assert meta["mode"] == mode and meta["backend"] == "hf" and meta["family"] == "vlm"
    table = pq.read_table(out).to_pylist()
    assert len(table) == 4
    if has_logits:
        assert [len(r["logits"]) for r in table] == [2, 3, 4, 5]
        # log-probs are <= 0; guidance (t > 1) extrapolates past them
        assert all(np.isfinite(r["logits"]).all() and ("cfg" in mode or max(r["logits"]) <= 0)
                   for r in table)
        assert all(("logp_with_image" in r) == ("cfg" in mode) for r in table)
    else:
        assert "logits" not in table[0]
    # the exact text the model received travels with every row
    assert all(r["prompt_text"] and ("What is in this image?" in r["prompt_text"]
                                     or "What type" in r["prompt_text"]) for r in table)
    assert all(("A. " in r["prompt_text"]) == (mode in ("letter", "generate")) for r in table)
    if has_text:
        assert all(isinstance(r["text"], str) for r in table)
        assert {"prediction", "text"} <= set(table[0])
    else:
        assert "text" not in table[0]
    assert main(["validate", "--dataset", str(dataset), "--predictions", str(out)]) == 0
    scores = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(dataset), "--predictions", str(out),
                 "--out", str(scores)]) == 0
    assert json.loads(scores.read_text())


def test_likelihood_file_equals_one_forward_per_option(model_dir: Path, dataset: Path,
                                                      tmp_path: Path) -> None:
    """From the predictions file alone (its recorded prompt text) and the dataset,
    one full forward per option reproduces every logit to 1e-4."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from vlmrobust.core.datadir import read_table
    from vlmrobust.models.runtime import to_pil

    out = tmp_path / "p.parquet"
    assert _predict(model_dir, dataset, out, "--mode", "likelihood:sum") == 0
    preds = pq.read_table(out).to_pylist()
    data = {r["id"]: r for r in read_table(dataset, "default").to_pylist()}
    proc = AutoProcessor.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    tok = proc.tokenizer
    for p in preds:
        row = data[p["id"]]
        prompt = p["prompt_text"]
        sep = "" if prompt[-1].isspace() else " "
        image = to_pil(row["image"])
        ref = []
        for option in row["options"]:
            text = prompt + sep + option
            n = len(tok.encode(text, add_special_tokens=False)) - len(
                tok.encode(prompt, add_special_tokens=False))
            inputs = proc(text=[text], images=[image], return_tensors="pt")
            with torch.no_grad():
                logits = model(**inputs).logits[0].float()
            ids = inputs["input_ids"][0]
            lp = torch.log_softmax(logits[-n - 1:-1], dim=-1).gather(1, ids[-n:, None])
            ref.append(float(lp.sum()))
        np.testing.assert_allclose(p["logits"], ref, rtol=0, atol=1e-4)


def test_modes_differ_and_resume_key_holds_the_mode(model_dir: Path, dataset: Path,
                                                    tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec(
            f"vlm:{model_dir}", dataset, out, progress=False,
            reader=ReaderOptions(mode="likelihood:sum"),
            backend=BackendOptions(batch_size=2, device="cpu")), after_batch=stop)
    run = json.loads((tmp_path / ".p.parquet.partial" / "run.json").read_text())
    assert run["mode"] == "likelihood:sum" and run["backend"] == "hf"
    with pytest.raises(VlmrobustError, match="different mode"):
        predict_dataset(RunSpec(
            f"vlm:{model_dir}", dataset, out, progress=False, reader=ReaderOptions(mode="letter"),
            backend=BackendOptions(batch_size=2, device="cpu")))
    # the same mode resumes and finishes
    predict_dataset(RunSpec(
        f"vlm:{model_dir}", dataset, out, progress=False,
        reader=ReaderOptions(mode="likelihood:sum"),
        backend=BackendOptions(batch_size=2, device="cpu")))
    resumed = pq.read_table(out).column("logits").to_pylist()
    fresh = predict_dataset(RunSpec(
        f"vlm:{model_dir}", dataset, tmp_path / "q.parquet", progress=False,
        reader=ReaderOptions(mode="likelihood:sum"),
        backend=BackendOptions(batch_size=2, device="cpu")))
    assert pq.read_table(fresh).column("logits").to_pylist() == resumed
    letter = predict_dataset(RunSpec(
        f"vlm:{model_dir}", dataset, tmp_path / "l.parquet", progress=False,
        backend=BackendOptions(batch_size=2, device="cpu")))
    assert pq.read_table(letter).column("logits").to_pylist() != resumed


def test_device_map_reads_the_same(model_dir: Path, dataset: Path, tmp_path: Path) -> None:
    plain = predict_dataset(RunSpec(
        f"vlm:{model_dir}", dataset, tmp_path / "a.parquet", progress=False,
        reader=ReaderOptions(mode="likelihood:avg"),
        backend=BackendOptions(batch_size=4, device="cpu")))
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
        ("--mode", "likelihood:cfg=-1"),
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
    for mode in ("letter", "likelihood:sum | avg | cfg=T | cfg-avg=T", "generate", "open-world"):
        assert f"\n  {mode} " in out
    (backends,) = [line for line in out.splitlines() if line.startswith("backends: ")]
    assert "hf (" in backends and "endpoint (" in backends


def test_scorer_reads_open_world_text_by_seed_rule(model_dir: Path, dataset: Path,
                                                   tmp_path: Path) -> None:
    """The scorer re-reads an open-world file's texts by seed 002's rule (true class
    named: right, even beside a distractor), other files' by the option matcher."""
    from vlmrobust.evaluation.predictions.write import predictions_table, write_predictions
    from vlmrobust.evaluation.validate.check import validate

    out = tmp_path / "p.parquet"
    assert _predict(model_dir, dataset, out, "--mode", "open-world", "--max-new-tokens", "2") == 0
    meta = read_prediction_meta(out)
    rows = pq.read_table(out).to_pylist()
    from vlmrobust.core.datadir import read_table

    data = {r["id"]: r for r in read_table(dataset, "default").to_pylist()}
    texts = []
    for r in rows:
        d = data[r["id"]]
        wrong = d["options"][(d["answer"] + 1) % len(d["options"])]
        texts.append(f"a {d['options'][d['answer']]} and a {wrong}")
    table = predictions_table([r["id"] for r in rows], [r["config"] for r in rows], None,
                              text=texts, prompt_text=[r["prompt_text"] for r in rows])
    write_predictions(out, table, meta)
    report = validate(dataset, out)
    assert (report.aligned.predicted == report.index.answer).all()
    write_predictions(out, table, dict(meta, mode="generate"))
    assert (validate(dataset, out).aligned.predicted == -1).all()  # two options named


def test_device_map_under_torchrun_is_refused(model_dir: Path, dataset: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.evaluation.predict import dataset as predict_mod
    from vlmrobust.evaluation.predict.distributed import DistContext

    monkeypatch.setattr(predict_mod, "init_distributed", lambda device: DistContext(0, 2))
    with pytest.raises(VlmrobustError, match="without torchrun") as exc:
        predict_dataset(RunSpec(
            f"vlm:{model_dir}", dataset, tmp_path / "p.parquet", progress=False,
            backend=BackendOptions(device_map="auto")))
    assert "\n" not in str(exc.value) and not any(tmp_path.iterdir())
