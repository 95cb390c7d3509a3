"""Predictions carry their own model id: two predict runs into one folder keep
apart; the predict journal appears only once the model loads; the ``models``
and ``prompts`` commands list what researchers can name."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from vlmrobust.cli import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec


class ToyAdapter:
    """Deterministic logits without a model: ``kind`` picks the preferred option."""

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.family = "other"
        self.kind = kind

    def option_logits(self, rows: Any) -> np.ndarray:
        k = max(len(r["options"]) for r in rows)
        out = np.full((len(rows), k), np.nan, dtype=np.float32)
        for i, r in enumerate(rows):
            n = len(r["options"])
            out[i, :n] = 0.0
            out[i, 0 if self.kind == "first" else n - 1] = 5.0
        return out

    def embed_images(self, images: Any) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError


def test_two_predict_runs_into_one_folder_keep_their_model_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fixtures.predict import write_mcq as write_photo_mcq
    from vlmrobust.evaluation.predict.dataset import predict_dataset

    ds = write_photo_mcq(tmp_path / "ds", {"photo": 6}, with_class_ids=False)
    folder = tmp_path / "runs"
    a = predict_dataset(RunSpec(
        ToyAdapter("toy-first", "first"), ds, folder / "a.parquet", progress=False))
    b = predict_dataset(RunSpec(
        ToyAdapter("toy-last", "last"), ds, folder / "b.jsonl", progress=False))
    assert sorted(p.name for p in folder.iterdir()) == ["a.parquet", "b.jsonl",
                                                        "b.jsonl.meta.yaml"]
    for path, model in ((a, "toy-first"), (b, "toy-last")):
        out = tmp_path / f"{model}.json"
        assert main(["score", "--dataset", str(ds), "--predictions", str(path), "--out",
                     str(out)]) == 0
        assert json.loads(out.read_text())["model_id"] == model
    sa = json.loads((tmp_path / "toy-first.json").read_text())["datasets"]["imagenet-mcq"]
    sb = json.loads((tmp_path / "toy-last.json").read_text())["datasets"]["imagenet-mcq"]
    assert sa["configs"]["photo"]["accuracy"] != sb["configs"]["photo"]["accuracy"]
    assert sa["predictions_sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()
    capsys.readouterr()


def test_journal_only_after_the_model_loads_and_overwrite(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vlmrobust.evaluation.predict.dataset as predict_mod
    from tests.fixtures.predict import write_mcq as write_photo_mcq
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.write import partial_dir

    ds = write_photo_mcq(tmp_path / "ds", {"photo": 6}, with_class_ids=False)
    out = tmp_path / "p.parquet"

    def cannot_load(*args: Any, **kwargs: Any) -> Any:
        raise VlmrobustError("clip:x: could not load the model (no weights)")

    monkeypatch.setattr(predict_mod, "load_model", cannot_load)
    with pytest.raises(VlmrobustError, match="could not load"):
        predict_dataset(RunSpec("clip:ViT-B-32:none", ds, out, progress=False))
    assert not partial_dir(out).exists() and not out.exists()

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec(
            ToyAdapter("toy", "first"), ds, out, progress=False,
            backend=BackendOptions(batch_size=2)), after_batch=stop)
    assert partial_dir(out).exists()
    with pytest.raises(VlmrobustError, match="--overwrite"):
        predict_dataset(RunSpec(ToyAdapter("toy", "first"), ds, out, limit=2, progress=False))
    predict_dataset(RunSpec(
        ToyAdapter("toy", "first"), ds, out, limit=2, progress=False, overwrite=True))
    assert pq.read_table(out).num_rows == 2 and not partial_dir(out).exists()


def test_models_and_prompts_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for form in ("classifier:efficientnet-lite0", "classifier:timm:", "clip:ARCH:PRETRAINED",
                 "clip:DIR", "vlm:", "pipeline:CLASSIFIER+ANSWERER", "minilm"):
        assert form in out, form
    # issue 40.5: every adapter family has a name form listed, here and in predict --help
    import vlmrobust.models.registration  # noqa: F401  (fills the registries)
    from vlmrobust.cli.commands.models import FORMS
    from vlmrobust.cli.commands.predict import register
    from vlmrobust.models.base import ADAPTER_FAMILIES

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    model_help = next(a.help for a in parser._subparsers._group_actions[0].choices["predict"]._actions
                      if "--model" in a.option_strings)
    for family in ADAPTER_FAMILIES:
        assert any(f.startswith(f"{family}:") for f, _ in FORMS), family
        assert f"{family}:" in str(model_help), family
    assert main(["prompts"]) == 0
    out = capsys.readouterr().out
    from vlmrobust.models.prompts import PROMPTS
    from vlmrobust.models.vlm import VLM_PROMPTS

    for name in (*PROMPTS, *VLM_PROMPTS):
        assert f"  {name}" in out, name
