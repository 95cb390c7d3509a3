"""clip adapter end to end with a tiny randomly initialised open_clip model saved
as a local-dir checkpoint (open_clip's bundled BPE vocab; no downloads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from tests.fixtures.clip import make_open_clip
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.models import load_adapter, parse_adapter_name
from vlmrobust.models.clip.openclip import ClipAdapter
from vlmrobust.models.prompts import PROMPTS, resolve_prompt


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # a non-default temperature shows that logit_scale is used
    return make_open_clip(tmp_path_factory.mktemp("tiny_clip"), seed=0, logit_scale=50.0)


@pytest.fixture(scope="module")
def clip(tiny_dir: Path) -> ClipAdapter:
    adapter = load_adapter(f"clip:local-dir:{tiny_dir}", device="cpu")
    assert isinstance(adapter, ClipAdapter)
    return adapter


@pytest.fixture(scope="module")
def images() -> list[Image.Image]:
    return [Image.fromarray(skimage.data.chelsea()), Image.fromarray(skimage.data.coffee()),
            Image.fromarray(skimage.data.astronaut())]


def reference_logits(clip: ClipAdapter, folder: Path, image: Image.Image,
                     texts: list[str]) -> np.ndarray:
    """Independent computation straight from open_clip's API."""
    import open_clip

    tok = open_clip.get_tokenizer(f"local-dir:{folder}")
    with torch.no_grad():
        img = clip.model.encode_image(clip.preprocess(image)[None])
        txt = clip.model.encode_text(tok([f"a photo of a {t}" for t in texts]))
        img = img / img.norm(dim=-1, keepdim=True)
        txt = txt / txt.norm(dim=-1, keepdim=True)
        return (50.0 * img @ txt.T)[0].numpy()


def test_logits_match_open_clip(clip: ClipAdapter, tiny_dir: Path,
                                images: list[Image.Image]) -> None:
    rows = [
        {"id": "a", "image": images[0], "options": ["tabby cat", "espresso", "rocket"]},
        {"id": "b", "image": images[1], "options": ["espresso", "tabby cat"]},
        {"id": "c", "image": images[2], "options": ["astronaut", "goldfish", "cup", "dog", "x"]},
    ]
    out = clip.option_logits(rows)
    assert out.shape == (3, 5) and out.dtype == np.float32
    assert np.isnan(out[0, 3:]).all() and np.isnan(out[1, 2:]).all() and np.isfinite(out[2]).all()
    for i, row in enumerate(rows):
        k = len(row["options"])
        np.testing.assert_allclose(out[i, :k], reference_logits(clip, tiny_dir, row["image"], row["options"]),
                                   rtol=1e-4, atol=1e-4)
    # logits differ between options (the model is not degenerate)
    assert np.ptp(out[2]) > 1e-3


def test_weights_are_loaded_not_reinitialised(tiny_dir: Path, clip: ClipAdapter,
                                              images: list[Image.Image]) -> None:
    again = load_adapter(f"clip:local-dir:{tiny_dir}", device="cpu")
    np.testing.assert_array_equal(again.embed_images(images), clip.embed_images(images))


def test_option_order_and_cache(clip: ClipAdapter, images: list[Image.Image]) -> None:
    opts = ["tabby cat", "espresso", "rocket", "goldfish"]
    base = clip.option_logits([{"image": images[0], "options": opts}])[0]
    perm = [3, 1, 0, 2]
    permuted = clip.option_logits([{"image": images[0], "options": [opts[p] for p in perm]}])[0]
    np.testing.assert_allclose(permuted, base[perm], rtol=1e-6)
    calls: list[int] = []
    original = clip.model.encode_text

    def counting(tokens: Any) -> Any:
        calls.append(len(tokens))
        return original(tokens)

    clip.model.encode_text = counting  # type: ignore[method-assign]
    try:
        clip.option_logits([{"image": images[1], "options": [*opts, "new thing", "new thing"]}])
    finally:
        clip.model.encode_text = original  # type: ignore[method-assign]
    assert calls == [1]  # only the one unseen text was encoded


def test_embeddings(clip: ClipAdapter, images: list[Image.Image]) -> None:
    emb = clip.embed_images(images)
    assert emb.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    txt = clip.embed_texts(["cat", "dog"])
    np.testing.assert_allclose(np.linalg.norm(txt, axis=1), 1.0, rtol=1e-5)


def test_prompt_ensemble_is_mean_of_templates(tiny_dir: Path, clip: ClipAdapter) -> None:
    ens = load_adapter(f"clip:local-dir:{tiny_dir}", device="cpu", prompt="openai-7")
    assert isinstance(ens, ClipAdapter) and ens.prompt_id == "openai-7"
    singles = []
    for tpl in PROMPTS["openai-7"]:
        single = load_adapter(f"clip:local-dir:{tiny_dir}", device="cpu", prompt=tpl)
        singles.append(single.embed_texts(["goldfish"])[0])
    mean = np.mean(singles, axis=0)
    np.testing.assert_allclose(ens.embed_texts(["goldfish"])[0], mean / np.linalg.norm(mean),
                               rtol=1e-5, atol=1e-6)
    assert not np.allclose(ens.embed_texts(["goldfish"]), clip.embed_texts(["goldfish"]))


def test_prompt_names() -> None:
    assert resolve_prompt("bare") == ("bare", ("{option}",))
    assert resolve_prompt("A photo of a {class}")[1] == ("A photo of a {option}",)
    with pytest.raises(VlmrobustError, match="did you mean 'photo'"):
        resolve_prompt("phot")
    with pytest.raises(VlmrobustError, match="only"):
        resolve_prompt("a {option} of {x}")


def test_bad_names_fail_before_loading(tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match="did you mean 'ViT-B-32'"):
        parse_adapter_name("clip:ViT-B-33:openai")
    with pytest.raises(VlmrobustError, match="give weights"):
        parse_adapter_name("clip:ViT-B-32")
    with pytest.raises(VlmrobustError, match="neither a pretrained tag"):
        parse_adapter_name("clip:ViT-B-32:opnai")
    with pytest.raises(VlmrobustError, match=r"open_clip_config\.json not found"):
        parse_adapter_name(f"clip:local-dir:{tmp_path}")
    assert parse_adapter_name("clip:ViT-B-32:openai").family == "clip"


def test_predict_with_clip(tmp_path: Path, tiny_dir: Path) -> None:
    import pyarrow.parquet as pq

    from tests.fixtures.predict import write_mcq
    from vlmrobust.evaluation.predict.dataset import predict_dataset

    ds = write_mcq(tmp_path / "ds", {"default": 5}, with_class_ids=False)
    out = predict_dataset(RunSpec(
        f"clip:local-dir:{tiny_dir}", ds, tmp_path / "p" / "predictions.parquet", progress=False,
        reader=ReaderOptions(prompt="itap"), backend=BackendOptions(batch_size=2, device="cpu")))
    table = pq.read_table(out).to_pylist()
    assert [len(r["logits"]) for r in table] == [2, 3, 4, 5, 2]
    from vlmrobust.evaluation.predictions.meta import read_prediction_meta

    meta = read_prediction_meta(out)
    assert meta["family"] == "clip" and meta["prompt_id"] == "itap"
