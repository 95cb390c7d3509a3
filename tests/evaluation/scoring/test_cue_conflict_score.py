"""Shape bias end to end: a cue-conflict fixture built in Geirhos's layout,
predictions written three ways (label-space logits, text, EfficientNet-Lite0
through `predict` with the label space's mean-prob rule), scored; the
shape_bias block equals the hand count and model-vs-human's decision rule."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.evaluation.scoring.test_shape_bias_scores import DECISIONS
from tests.fixtures.cue_conflict import write_cue_conflict, write_stylized
from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.cue_conflict.build import build
from vlmrobust.builders.cue_conflict.categories import CATEGORIES, CATEGORY_CLASSES
from vlmrobust.builders.families import BuildOptions
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.api import write_predictions
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.metrics.holistic.shape_bias import category_decisions


def _dataset(tmp_path: Path, noise: bool = False) -> tuple[Path, list[dict[str, Any]]]:
    write_cue_conflict(tmp_path)
    write_stylized(tmp_path)
    if noise:  # varied images, so a classifier's decisions vary
        from PIL import Image

        for k, p in enumerate(sorted((tmp_path / "cue-conflict").rglob("*.png"))):
            arr = np.random.default_rng(k).integers(0, 256, size=(64, 64, 3), dtype=np.uint8)
            buf = io.BytesIO()
            Image.fromarray(arr).save(buf, "PNG")
            p.write_bytes(buf.getvalue())
    spec = resolve_spec("cue-conflict")
    out = tmp_path / "ds"
    build(load_spec_yaml(spec), spec, BuildOptions(out=out, source_root=tmp_path, progress=False))
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for config in ("cue-conflict", "stylized-imagenet"):
        for f in sorted((out / "data" / config).glob("*.parquet")):
            rows += pq.read_table(f, columns=["id", "source_file", "label"]).to_pylist()
    return out, rows


def _decision(row: dict[str, Any]) -> str | None:
    return DECISIONS.get(row["source_file"], CATEGORIES[row["label"]])


def _check(block: dict[str, Any]) -> None:
    assert (block["n"], block["n_conflict"], block["shape_decisions"],
            block["texture_decisions"]) == (32, 24, 11, 10)
    assert block["shape_bias"] == pytest.approx(11 / 21)
    assert block["shape_accuracy"] == pytest.approx(11 / 32)
    assert block["texture_accuracy"] == pytest.approx(10 / 32)


@pytest.mark.parametrize("mode", ["logits", "text"])
def test_scored_shape_bias_equals_the_hand_count(tmp_path: Path, mode: str) -> None:
    ds, rows = _dataset(tmp_path)
    ids = [r["id"] for r in rows]
    if mode == "logits":
        # cat2-car2 has no answer in the hand count; logits always decide: 'truck' is neither
        picks = [CATEGORIES.index(_decision(r) or "truck") for r in rows]
        logits = [[5.0 if j == p else 0.0 for j in range(16)] for p in picks]
        preds = write_predictions(ds, ids, logits, model="hand", family="clip",
                                  out=tmp_path / "p.parquet")
    else:
        texts = [f"It is a {d}." if (d := _decision(r)) else "I cannot tell." for r in rows]
        preds = write_predictions(ds, ids, text=texts, model="hand", family="vlm",
                                  out=tmp_path / "p.parquet")
    scores = score(ds, preds, tmp_path / "scores.json")
    section = scores["datasets"]["cue-conflict"]
    assert list(section["shape_bias"]) == ["cue-conflict"]  # stylized has no texture cue
    _check(section["shape_bias"]["cue-conflict"])
    assert section["configs"]["cue-conflict"]["accuracy"] == pytest.approx(17 / 32)
    assert section["configs"]["stylized-imagenet"]["accuracy"] == 1.0
    if mode == "text":
        assert section["configs"]["cue-conflict"]["no_answer"] == 1


def test_classifier_decides_by_mean_probability_as_model_vs_human(tmp_path: Path) -> None:
    """EfficientNet-Lite0 through `predict`: its 16 logits are the label space's
    mean-prob rule, so argmax equals model-vs-human's decision from the model's
    own 1,000 probabilities (category_decisions), and the scored block counts
    exactly those decisions."""
    import torch

    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.predictions.read import read_predictions
    from vlmrobust.models.classifiers.efficientnet_lite import lite_preprocess, load_lite

    ds, rows = _dataset(tmp_path, noise=True)
    out = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", progress=False,
        backend=BackendOptions(device="cpu", batch_size=8, threads=1)))
    pf = read_predictions(out)
    assert pf.logits_flat is not None
    got = pf.logits_flat.reshape(len(rows), 16).argmax(axis=1)
    from PIL import Image

    cue = sorted((tmp_path / "cue-conflict").rglob("*.png"))
    sty = sorted((tmp_path / "stylized" / "dnn" / "session-1").glob("*.png"))
    by_source = {f"{p.parent.name}/{p.name}": p for p in cue}
    by_source.update({f"dnn/session-1/{p.name}": p for p in sty})
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = load_lite(0, torch.device("cpu")).module
        pre = lite_preprocess(224)
        x = torch.from_numpy(np.stack([pre(Image.open(by_source[r["source_file"]]).convert("RGB"))
                                       for r in rows]))
        with torch.inference_mode():
            probs = torch.softmax(model(x), dim=1).numpy()
    finally:
        torch.set_num_threads(saved)
    want = category_decisions(probs, CATEGORY_CLASSES)
    assert [CATEGORIES[i] for i in got] == want.tolist()
    scores = score(ds, out, tmp_path / "scores.json")
    block = scores["datasets"]["cue-conflict"]["shape_bias"]["cue-conflict"]
    shape = [r["source_file"].split("/")[0] for r in rows[:32]]
    texture = [re.sub(r"\d+\.png$", "", r["source_file"].split("-")[1]) for r in rows[:32]]
    dec = want[:32].tolist()
    conflict = [s != t for s, t in zip(shape, texture, strict=True)]
    assert block["shape_decisions"] == sum(c and d == s for c, d, s in
                                           zip(conflict, dec, shape, strict=True))
    assert block["texture_decisions"] == sum(c and d == t for c, d, t in
                                             zip(conflict, dec, texture, strict=True))
