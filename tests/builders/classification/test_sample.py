"""The embedded sample's classification config (issue 23.6): built from the
sample's photos and renditions over ImageNet-1k with K-configs, loadable with
``load_dataset``, predicted by EfficientNet-Lite0 (1,000 logits per row of a
full config, equal to the model's own logits; K per row of a K-config, its
logits at the candidates) and scored with the photos as seed 001's
temperature reference."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from tests.fixtures.classification_layouts import raw_spec
    from vlmrobust.builders.classification.build import build
    from vlmrobust.builders.families import BuildOptions

    out = tmp_path_factory.mktemp("sample") / "ds"
    raw = {**raw_spec(), "sample": {"label_set_sizes": [5]}}
    return out, build(raw, Path("x.yaml"), BuildOptions(out=out, sample=True, progress=False))


def test_sample_classification_config(sample: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from datasets import load_dataset

    from tests.fixtures.classification import index_rows
    from vlmrobust.builders.sample import load_sample
    from vlmrobust.core.label_space import read_label_space

    out, m = sample
    photos = {im.key: im.class_index for im in load_sample() if im.group == "photo"}
    assert set(m["configs"]) == {"sample-photo", "sample-rendition", "sample-photo-k5",
                                 "sample-rendition-k5"}
    assert m["configs"]["sample-photo"] == len(photos) and m["sample"] is True
    assert m["reference_config"] == "sample-photo"
    ds = load_dataset(str(out), "sample-photo", split="test", cache_dir=str(tmp_path / "hf"))
    space = read_label_space(out, "sample-photo")
    assert len(space) == 1000
    assert {r["source_file"]: r["label"] for r in ds} == photos
    assert all(len(r["candidates"]) == 5 for r in index_rows(out) if r["config"].endswith("k5"))


def test_efficientnet_lite0_predicts_and_scores_the_sample(sample: tuple[Path, dict[str, Any]],
                                                           tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    from PIL import Image

    from vlmrobust.core.datadir import read_table
    from vlmrobust.evaluation.predict.dataset import predict_dataset
    from vlmrobust.evaluation.scoring.dataset import score
    from vlmrobust.models import load_adapter

    out, _ = sample
    pred = tmp_path / "lite0.parquet"
    predict_dataset(RunSpec(
        "classifier:efficientnet-lite0", out, pred, limit=3, progress=False,
        backend=BackendOptions(threads=1)))
    got = {r["id"]: np.asarray(r["logits"]) for r in pq.read_table(pred).to_pylist()}
    adapter: Any = load_adapter("classifier:efficientnet-lite0", device="cpu")
    for config, k in (("sample-photo", None), ("sample-photo-k5", 5)):
        for r in read_table(out, config, columns=["id", "image", "candidates"]).to_pylist()[:3]:
            im = Image.open(io.BytesIO(r["image"]["bytes"])).convert("RGB")
            own = adapter.class_logits([im])[0]
            if k is None:
                assert got[r["id"]].shape == (1000,)
                np.testing.assert_allclose(got[r["id"]], own, rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_allclose(got[r["id"]], own[r["candidates"]], rtol=1e-5, atol=1e-5)
    scores = score(out, pred, tmp_path / "scores.json")
    section = scores["datasets"]["classification"]
    photo, k5 = section["configs"]["sample-photo"], section["configs"]["sample-photo-k5"]
    assert (photo["over"], photo["n_classes"], photo["n"]) == ("label-space", 1000, 3)
    assert (k5["over"], k5["k"]) == ("k-options", 5)
    assert section["temperature"]["reference_config"] == "sample-photo"
