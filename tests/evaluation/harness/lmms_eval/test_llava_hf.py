"""Issue 36.6: lmms-eval's ``llava_hf`` values are no log-likelihoods of the
option when the image is several tokens (it masks the prompt by its length
without the image tokens, so the mean also covers the prompt's last N - 1
tokens: evaluation/harness/lmms_eval/llava_hf.py). Such a log imports as
lmms-eval's choices, accuracy only, marked in the predictions metadata and in
scores.json; a one-token LLaVA and other model classes keep their logits.
Logs in lmms-eval 0.7.3's ``--log_samples`` layout (test_bridge._log)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.evaluation.harness.lmms_eval.test_bridge import (
    CONFIGS,
    _docs,
    _export,
    _log,
    _losses,
    _utils,
)
from tests.fixtures.lmms_eval import write_llava_config
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.cli import main
from vlmrobust.evaluation.predictions.meta import read_prediction_meta as read_meta


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    return write_mcq(tmp_path / "ds", n=6, k=4)


@pytest.fixture
def empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache of this test's own (what this machine has cached
    must not decide the outcome)."""
    import huggingface_hub.constants

    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def _mc_import(ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
               **log: Any) -> tuple[int, str, Path, list[Path]]:
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        _export(ds, tasks, capsys)
    paths = _log(ds, tasks, tmp_path / f"logs-{name}", "multiple_choice", _losses, **log)
    preds = tmp_path / f"{name}.parquet"
    capsys.readouterr()  # the datasets progress bars of writing the log
    rc = main(["import", "lmms-eval", *map(str, paths), "--dataset", str(ds), "--out", str(preds)])
    printed = capsys.readouterr()
    return rc, printed.out + printed.err, preds, paths


def test_a_16_token_llava_imports_lmms_evals_choices_only(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        empty_hub_cache: Path) -> None:
    """Today's import wrote -value as logits for every metric; now the choices
    only, the reason recorded, and the scorer has no logit to compute from."""
    model = write_llava_config(tmp_path / "ckpts" / "tiny-llava-16", image_size=32)  # 4x4 patches
    rc, out, preds, paths = _mc_import(ds, tmp_path, capsys, "sixteen",
                                       model_args=f"pretrained={model},device=cpu")
    assert rc == 0, out
    rows = pq.read_table(preds).to_pylist()
    assert "logits" not in rows[0]
    got = {r["id"]: r["prediction"] for r in rows}
    utils = _utils(tmp_path / "tasks")
    lmms_acc = []
    for config in CONFIGS:
        for i, doc in enumerate(_docs(ds, config, utils)):
            assert got[doc["id"]] == int(np.argmin(_losses(i, doc)))  # lmms-eval's argmin
        lmms_acc.append([json.loads(x)["acc"] for x in
                         paths[CONFIGS.index(config)].read_text().splitlines()])
    reason = read_meta(preds)["harness"]["accuracy_only"]
    assert "llava_hf" in reason and "last 15 tokens" in reason and "16 tokens" in reason
    assert str(tmp_path) not in reason
    scores = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                 str(scores)]) == 0
    assert f"imagenet-mcq: accuracy only: {reason}" in capsys.readouterr().out
    section = json.loads(scores.read_text())["datasets"]["imagenet-mcq"]
    assert section["accuracy_only"] == reason and not section["has_logits"]
    assert "cfg" not in section
    for config, accs in zip(CONFIGS, lmms_acc, strict=True):  # lmms-eval's own accuracy
        got_cfg = section["configs"][config]
        assert got_cfg["accuracy"] == pytest.approx(np.mean(accs))
        # every calibration figure is undefined: nothing was computed from the values
        assert [got_cfg[k] for k in ("ece", "nll", "ece_ts", "nll_ts", "temperature")] == [None] * 5


def test_the_import_prints_the_reason_and_the_fix(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        empty_hub_cache: Path) -> None:
    model = write_llava_config(tmp_path / "ckpts" / "m", image_size=336, patch_size=14)
    rc, out, _, _ = _mc_import(ds, tmp_path, capsys, "printed",
                                model_args=f"pretrained={model}")
    assert rc == 0
    note = [ln for ln in out.splitlines() if ln.startswith("note: ")]
    assert len(note) == 1 and "576 tokens" in note[0] and "likelihood:avg" in note[0], out


@pytest.mark.parametrize("model_args", [None, "pretrained=llava-hf/llava-1.5-7b-hf",
                                        "pretrained=/nowhere/tiny-llava",
                                        "pretrained=llava-hf/llava-v1.6-mistral-7b-hf"])
def test_an_unknown_image_size_counts_as_several_tokens(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], empty_hub_cache: Path,
        model_args: str | None) -> None:
    """No config to read (lmms-eval's default model, a folder of another
    machine), or a LLaVA-NeXT (any-resolution tiles): every published LLaVA
    has hundreds of image tokens, so its values are withheld."""
    if model_args and "v1.6" in model_args:  # cached, but not a plain LLaVA
        snap = empty_hub_cache / "models--llava-hf--llava-v1.6-mistral-7b-hf" / "snapshots" / "abc"
        write_llava_config(snap, image_size=8, model_type="llava_next")
        (snap.parents[1] / "refs").mkdir()
        (snap.parents[1] / "refs" / "main").write_text("abc")
    rc, out, preds, _ = _mc_import(ds, tmp_path, capsys, "unknown", model_args=model_args)
    assert rc == 0, out
    assert "token count is unknown" in read_meta(preds)["harness"]["accuracy_only"]
    assert "logits" not in pq.read_table(preds).column_names


def test_one_image_token_or_another_class_keeps_the_logits(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        empty_hub_cache: Path) -> None:
    """A one-token LLaVA found in the hub cache (llava_hf's mean is the option's
    alone), and a model class that does not mask by the imageless prompt."""
    snap = empty_hub_cache / "models--me--tiny-llava" / "snapshots" / "0123"
    write_llava_config(snap, image_size=8)
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("0123")
    for name, log in (("cached", {"model_args": "pretrained=me/tiny-llava"}),
                      ("other", {"model_class": "qwen2_vl",
                                 "model_args": "pretrained=Qwen/Qwen2-VL-2B-Instruct"})):
        rc, out, preds, _ = _mc_import(ds, tmp_path, capsys, name, **log)
        assert rc == 0, out
        assert "accuracy_only" not in read_meta(preds)["harness"]
        assert "logits" in pq.read_table(preds).column_names and "note:" not in out


def test_the_scorer_refuses_logits_beside_the_mark(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An edited file: the mark says the values are no probabilities but logits
    are there; RAS and calibration must not read them."""
    from vlmrobust.core.datadir import read_table
    from vlmrobust.evaluation.predictions.api import write_predictions

    ids = [r["id"] for c in CONFIGS for r in read_table(ds, c, ["id"]).to_pylist()]
    rng = np.random.default_rng(0)
    preds = write_predictions(ds, ids, rng.normal(size=(len(ids), 4)).tolist(), model="m",
                              family="vlm", out=tmp_path / "p.parquet",
                              harness={"name": "lmms-eval", "version": "0.7.3",
                                       "accuracy_only": "llava_hf ..."})
    assert "logits" in pq.read_table(preds).column_names
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(tmp_path / "s.json")], capsys)
    assert rc == 1 and "marks it accuracy only" in err, err
    one_line_error(err)
    assert not (tmp_path / "s.json").exists()


def test_an_accuracy_only_import_submits_and_builds(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        empty_hub_cache: Path) -> None:
    """``submit`` stores the mark in the model's scores.json, and the leaderboard's
    re-scoring from the stored predictions agrees with it."""
    model = write_llava_config(tmp_path / "ckpts" / "tiny-llava-16", image_size=32)
    rc, out, preds, _ = _mc_import(ds, tmp_path, capsys, "sub",
                                   model_args=f"pretrained={model}")
    assert rc == 0, out
    subs = tmp_path / "subs"
    rc = main(["submit", "--submissions", str(subs), "--model-id", "tiny", "--dataset", str(ds),
               "--predictions", str(preds)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    stored = json.loads((subs / "tiny" / "scores.json").read_text())["datasets"]["imagenet-mcq"]
    assert "16 tokens" in stored["accuracy_only"] and not stored["has_logits"]
    site = tmp_path / "site"
    rc = main(["leaderboard", "build", "--submissions", str(subs), "--out", str(site),
               "--datasets", str(ds), "--quiet"])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
