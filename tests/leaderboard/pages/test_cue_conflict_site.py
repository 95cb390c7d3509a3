"""The demo's path for shape bias: the embedded cue-conflict sample, predicted
by the real EfficientNet-Lite0, submitted, re-scored from its predictions by the
leaderboard build and shown on the Holistic page."""

from __future__ import annotations

import json
import re
from pathlib import Path

from vlmrobust.benchmarks import load_spec_yaml, resolve_spec
from vlmrobust.builders.cue_conflict.build import build
from vlmrobust.builders.families import BuildOptions
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec


def test_sample_predicted_submitted_and_shown(tmp_path: Path) -> None:
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.submissions import add_submission
    from vlmrobust.leaderboard.site.publish import build_site

    spec = resolve_spec("cue-conflict")
    ds = tmp_path / "ds"
    build(load_spec_yaml(spec), spec, BuildOptions(out=ds, sample=True, progress=False))
    pred = predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", ds, tmp_path / "p.parquet", progress=False,
        backend=BackendOptions(device="cpu", batch_size=16, threads=1)))
    subs = tmp_path / "subs"
    add_submission(subs, "efficientnet-lite0", ds, pred, meta={"name": "EfficientNet-Lite0"})
    scores = json.loads((subs / "efficientnet-lite0" / "scores.json").read_text())
    block = scores["datasets"]["cue-conflict"]["shape_bias"]["cue-conflict"]
    assert block["n"] == 42 and block["n_conflict"] == 38
    build_site(subs, tmp_path / "site", datasets=[ds])
    page = (tmp_path / "site" / "holistic.html").read_text(encoding="utf-8")
    row = re.search(r'<tr data-model="efficientnet-lite0">(.*?)</tr>', page, re.S)
    assert row is not None
    shown = re.findall(r'<td data-v="([^"]*)"', row.group(1))
    bias = block["shape_bias"]
    assert shown[0] == ("" if bias is None else repr(bias))
    assert "cnn · imagenet-1k" in row.group(1)  # EfficientNet-Lite records its groups
