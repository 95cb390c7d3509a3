"""MCM end to end on a tiny randomly initialised open_clip model: `predict` over
an ood dataset's label space (logits = scale·cos, the scale in the metadata),
then `score`, gives the MCM a hand computation gets from open_clip's own
embeddings (τ = 1, the scale undone)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image
from sklearn.metrics import roc_auc_score

from tests.fixtures.clip import make_open_clip
from tests.fixtures.ood import SPACE, write_ood
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.scoring.rows.results import rows_path

SCALE = 23.0  # not CLIP's 100: the scorer must take it from the metadata


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_open_clip(tmp_path_factory.mktemp("tiny_clip_ood"), seed=3, logit_scale=SCALE)


def _hand_mcm(folder: Path, images: list[Image.Image]) -> np.ndarray:
    """max_k softmax(cos_k / 1) from open_clip's own embeddings (prompt 'a photo of a {}.')."""
    import open_clip

    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{folder}", device="cpu")
    model.eval()
    tok = open_clip.get_tokenizer(f"local-dir:{folder}")
    with torch.no_grad():
        img = model.encode_image(torch.stack([preprocess(im) for im in images])).double()
        txt = model.encode_text(tok([f"a photo of a {n}." for n in SPACE.names])).double()
    img = (img / img.norm(dim=-1, keepdim=True)).numpy()
    txt = (txt / txt.norm(dim=-1, keepdim=True)).numpy()
    cos = img @ txt.T
    return np.asarray(np.exp(cos).max(axis=1) / np.exp(cos).sum(axis=1))


def test_mcm_scored_from_predict_equals_hand_computation(tmp_path: Path, tiny_dir: Path) -> None:
    ds = write_ood(tmp_path / "ds")
    manifest = json.loads((ds / "manifest.json").read_text())
    rows = []
    for config in manifest["configs"]:
        for shard in sorted((ds / "data" / config).glob("*.parquet")):
            rows += pq.read_table(shard).to_pylist()
    images = [Image.open(io.BytesIO(r["image"]["bytes"])).convert("RGB") for r in rows]
    preds = predict_dataset(RunSpec(
        f"clip:local-dir:{tiny_dir}", ds, tmp_path / "p.parquet", progress=False,
        backend=BackendOptions(device="cpu", threads=1)))
    assert read_prediction_meta(preds)["logit_scale"] == pytest.approx(SCALE)
    block = score(ds, preds, tmp_path / "s.json")["datasets"]["ood"]["ood"]
    assert block["score"] == "mcm" and block["logit_scale"] == pytest.approx(SCALE)

    hand = _hand_mcm(tiny_dir, images)
    by_id = {json.loads(x)["id"]: json.loads(x)["score"]
             for x in rows_path(tmp_path / "s.json").read_text().splitlines()}
    np.testing.assert_allclose([by_id[r["id"]] for r in rows], hand, rtol=1e-5)
    is_ood = np.array([r["is_ood"] for r in rows])
    ninco = np.array([r["ood_source"] == "ninco" for r in rows])
    want = roc_auc_score(np.r_[np.ones((~is_ood).sum()), np.zeros(ninco.sum())],
                         np.r_[hand[~is_ood], hand[ninco]])
    assert block["sets"]["ninco"]["auroc"] == pytest.approx(want, abs=1e-9)
