"""`vlmrobust predict` on a retrieval dataset with a tiny randomly initialised
open_clip model: per row the image embedding and one embedding per caption,
equal to open_clip's own encode_image / encode_text (captions without a
prompt template); the file validates and scores; a model without caption
embeddings is refused in one line before any row is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from tests.fixtures.clip import make_open_clip
from tests.fixtures.retrieval import build_retrieval, write_flickr30k
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.retrieval import check_retrieval_adapter
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.scoring.dataset import score
from vlmrobust.evaluation.validate.retrieval import validate_retrieval


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_open_clip(tmp_path_factory.mktemp("tiny_clip_retrieval"), seed=0)


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("src")
    write_flickr30k(root, n_test=5, n_train=0)
    return build_retrieval(root, root.parent / "retrieval-predict-ds")


def test_predict_writes_open_clips_own_embeddings(tiny_dir: Path, ds: Path,
                                                  tmp_path: Path) -> None:
    import datasets
    import open_clip

    out = predict_dataset(RunSpec(
        f"clip:local-dir:{tiny_dir}", ds, tmp_path / "p.parquet", progress=False, name="tiny-clip",
        backend=BackendOptions(batch_size=2, device="cpu", threads=1)))
    meta = read_prediction_meta(out)
    assert (meta["kind"], meta["mode"], meta["family"], meta["name"]) == (
        "retrieval", "embedding", "clip", "tiny-clip")
    assert str(tiny_dir) not in json.dumps(meta)  # a local path never becomes public
    t = pq.read_table(out).to_pylist()
    rows = datasets.load_dataset(str(ds), "flickr30k", split="test")
    assert [r["id"] for r in t] == rows["id"]
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tiny_dir}")
    model.eval()
    tokenizer = open_clip.get_tokenizer(f"local-dir:{tiny_dir}")
    with torch.no_grad():
        for got, row in zip(t, rows, strict=True):
            im = model.encode_image(preprocess(row["image"].convert("RGB"))[None])
            tx = model.encode_text(tokenizer(row["captions"]))
            im = torch.nn.functional.normalize(im, dim=-1)[0].numpy()
            tx = torch.nn.functional.normalize(tx, dim=-1).numpy()
            np.testing.assert_allclose(got["image_embedding"], im, atol=1e-5)
            assert len(got["text_embeddings"]) == len(row["captions"]) == 5
            np.testing.assert_allclose(np.array(got["text_embeddings"]), tx, atol=1e-5)
    report = validate_retrieval(ds, out)
    assert report.file.dim == 32
    s = score(ds, out, tmp_path / "s.json")["datasets"]["retrieval"]["configs"]["flickr30k"]
    assert s["n"] == 5 and s["n_captions"] == 25
    # K >= the 5 images: every caption's image is among them
    assert s["text_to_image"]["recall@5"] == s["text_to_image"]["recall@10"] == 1.0
    assert 0.0 <= s["image_to_text"]["recall@1"] <= s["image_to_text"]["recall@5"] <= 1.0


def test_a_model_without_caption_embeddings_is_refused(ds: Path, tmp_path: Path) -> None:
    class ImageOnly:  # injects the failure: an adapter with image embeddings only
        name = "image-only"
        family = "other"

        def embed_images(self, images: Any) -> np.ndarray:
            return np.ones((len(images), 4), np.float32)

    with pytest.raises(VlmrobustError, match="image-only: retrieval needs image and caption "
                       "embeddings, and this model has no embed_captions") as exc:
        check_retrieval_adapter(ImageOnly())
    assert "\n" not in str(exc.value)
    with pytest.raises(VlmrobustError, match="has no embed_captions"):
        predict_dataset(RunSpec(
            ImageOnly(), ds, tmp_path / "x.parquet", progress=False,
            backend=BackendOptions(threads=1)))
    assert not (tmp_path / "x.parquet").exists()


def test_caption_embeddings_ignore_the_prompt_template(tiny_dir: Path) -> None:
    from vlmrobust.models import load_adapter

    clip = load_adapter(f"clip:local-dir:{tiny_dir}", device="cpu")
    caps = ["a red thing", "two dogs on a beach"]
    raw = clip.embed_captions(caps)  # type: ignore[attr-defined]
    templated = clip.embed_texts(caps)  # type: ignore[attr-defined]
    assert raw.shape == (2, 32) and np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(raw, templated, atol=1e-3)
    img = clip.embed_images([Image.new("RGB", (40, 30), "red")])
    assert img.shape == (1, 32)


def test_a_limited_run_scores_as_partial_and_is_not_submitted(tiny_dir: Path, ds: Path,
                                                               tmp_path: Path) -> None:
    from vlmrobust.core.errors import SubmissionError
    from vlmrobust.evaluation.submissions import add_submission

    out = predict_dataset(RunSpec(
        f"clip:local-dir:{tiny_dir}", ds, tmp_path / "p.parquet", limit=3, progress=False,
        backend=BackendOptions(device="cpu", threads=1)))
    assert len(pq.read_table(out)) == 3
    section = score(ds, out, tmp_path / "s.json")["datasets"]["retrieval"]
    assert section["partial"] == {"limit": 3, "rows": 3, "of": 5}
    assert section["configs"]["flickr30k"]["n"] == 3  # the gallery is the 3 images
    assert section["configs"]["flickr30k"]["n_captions"] == 15
    with pytest.raises(SubmissionError, match=r"PARTIAL run \(predict --limit 3: 3 of 5 rows\); `submit` refuses"):
        add_submission(tmp_path / "subs", "m", ds, out)
    assert not (tmp_path / "subs" / "m").exists()
