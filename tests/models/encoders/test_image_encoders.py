"""Visual distractors from any image encoder: class prototypes = normalised mean
of L2-normalised embeddings over a user-given image set, with tiny random
transformers (DINOv2, DINOv3) and timm backbones and the open_clip image tower
through the same loader; embeddings cached."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.builders.imagenet_mcq.test_sources import CLASSES, make_sources, raw_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import build
from vlmrobust.builders.imagenet_mcq.spec import VisualSpec
from vlmrobust.builders.imagenet_mcq.visual import _prototypes, image_set_files
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.encoders.image_encoders import load_image_encoder

pytest.importorskip("transformers")


def _tiny_dinov2(out: Path) -> Path:
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    cfg = Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=64, image_size=32, patch_size=8)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        Dinov2Model(cfg).save_pretrained(out)
    BitImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                      do_center_crop=True).save_pretrained(out)
    return out


def _tiny_dinov3(out: Path) -> Path:
    import torch
    from transformers import DINOv3ViTConfig, DINOv3ViTImageProcessorFast, DINOv3ViTModel

    cfg = DINOv3ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=64, image_size=32, patch_size=8,
                          num_register_tokens=0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        DINOv3ViTModel(cfg).save_pretrained(out)
    DINOv3ViTImageProcessorFast(size={"height": 32, "width": 32}).save_pretrained(out)
    return out


def _image_set(root: Path, classes: list[int], per_class: int) -> Path:
    folder = root / "imagenet-train"
    for j, c in enumerate(classes):
        for i in range(per_class):
            arr = (np.random.default_rng(1000 + 10 * j + i).random((24, 24, 3)) * 255)
            path = folder / CLASSES[c].wnid / f"train_{i:03d}.JPEG"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(arr.astype(np.uint8)).save(path, format="JPEG")
    return folder


@pytest.mark.parametrize("kind", ["dinov2", "dinov3", "timm"])
def test_prototypes_are_mean_normalised_embeddings(tmp_path: Path, kind: str) -> None:
    if kind == "timm":
        name = "timm:resnet10t:random"
    else:
        folder = (_tiny_dinov2 if kind == "dinov2" else _tiny_dinov3)(tmp_path / kind)
        name = f"hf:{folder}"
    enc = load_image_encoder(name, device="cpu")
    folder = _image_set(tmp_path, [1, 409, 954], per_class=3)
    files = image_set_files(folder, per_class=2)  # first 2 per class by name
    assert [f.name for f, c in files if c == 1] == ["train_000.JPEG", "train_001.JPEG"]
    visual = VisualSpec(encoder=name, prototypes="image-set",
                        prototype_images="imagenet-train", per_class=2, batch_size=2)
    q = enc.embed_images([Image.open(files[0][0])])
    protos, has = _prototypes(visual, enc, q, [], folder, cache_dir=tmp_path / "cache")
    assert has.sum() == 3 and has[[1, 409, 954]].all()
    for c in (1, 409, 954):
        imgs = [Image.open(f).convert("RGB") for f, cc in files if cc == c]
        e = enc.embed_images(imgs)
        e = e / np.linalg.norm(e, axis=1, keepdims=True)
        m = e.mean(0)
        np.testing.assert_allclose(protos[c], m / np.linalg.norm(m), atol=1e-5)
    assert list((tmp_path / "cache").rglob("*.npy"))  # cached for a resumed build
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)


def test_build_with_image_set_prototypes(tmp_path: Path) -> None:
    root = make_sources(tmp_path / "src")
    _image_set(root, [*range(0, 1000, 7), 281, 415, 700], per_class=1)
    enc_dir = _tiny_dinov2(tmp_path / "dino")
    spec = raw_spec(["visual"])
    spec["visual"] = {"encoder": f"hf:{enc_dir}", "prototypes": "image-set",
                      "prototype_images": "imagenet-train", "per_class": 1, "batch_size": 8}
    spec["variants"] = [v for v in spec["variants"] if v["name"] == "imagenet-val"]
    out = tmp_path / "ds"
    manifest = build(spec, Path("s.yaml"), BuildOptions(out=out, source_root=root,
                                                        progress=False, device="cpu"))
    assert manifest["visual"]["prototypes"] == "image-set"
    card = (out / "README.md").read_text()
    assert "from the image set `imagenet-train`" in card
    rows = read_table(out, "imagenet-val-visual").to_pylist()
    with_proto = set(range(0, 1000, 7)) | {281, 415, 700}
    for r in rows:
        distractors = [c for i, c in enumerate(r["option_class_ids"]) if i != r["answer"]]
        assert set(distractors) <= with_proto  # only classes with a prototype


def test_image_set_errors(tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match="prototype image set not found"):
        image_set_files(tmp_path / "nope", 5)
    (tmp_path / "set" / "not-a-wnid").mkdir(parents=True)
    with pytest.raises(VlmrobustError, match="not an ImageNet-1k wnid folder"):
        image_set_files(tmp_path / "set", 5)
    with pytest.raises(ValueError, match=r"needs visual\.prototype_images"):
        VisualSpec(prototypes="image-set")
    with pytest.raises(VlmrobustError, match="unknown timm architecture"):
        load_image_encoder("timm:resnet_nope:random")
