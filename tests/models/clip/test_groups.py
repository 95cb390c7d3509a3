"""Model groups of open_clip checkpoints (#24.5): read from the architecture and
pretrained tag, valid for every checkpoint open_clip lists, and recorded by
the clip adapter (a local checkpoint states no training data)."""

from __future__ import annotations

import json
from pathlib import Path

import open_clip
import pytest
import torch

from vlmrobust.evaluation.model_groups import group_problems
from vlmrobust.models.clip.groups import clip_groups


def test_every_listed_checkpoint_gives_valid_groups() -> None:
    listed = open_clip.list_pretrained()
    assert len(listed) > 50
    stated = 0
    for arch, tag in listed:
        g = clip_groups(arch, tag)
        assert not group_problems(g), (arch, tag, g)
        stated += "training_data" in g
    assert stated / len(listed) > 0.8  # nearly every tag names its data


@pytest.mark.parametrize(("arch", "tag", "want"), [
    ("ViT-B-32", "openai", {"architecture": "vit", "training_data": "wit-400m",
                            "training_size": 400_000_000, "loss": "contrastive"}),
    ("RN50", "openai", {"architecture": "cnn", "training_data": "wit-400m"}),
    ("ViT-H-14", "laion2b_s32b_b79k", {"training_data": "laion-2b"}),
    ("ViT-B-16", "laion400m_e32", {"training_data": "laion-400m", "training_size": 400_000_000}),
    ("convnext_base_w", "laion_aesthetic_s13b_b82k", {"architecture": "cnn",
                                                      "training_data": "laion-aesthetic"}),
    ("coca_ViT-B-32", "mscoco_finetuned_laion2b_s13b_b90k",
     {"loss": "other", "fine_tuned_on": "mscoco", "training_data": "laion-2b"}),
])
def test_known_checkpoints(arch: str, tag: str, want: dict[str, object]) -> None:
    got = clip_groups(arch, tag)
    assert {k: got.get(k) for k in want} == want


def test_commonpool_filtered_and_unfiltered_are_distinct_training_data() -> None:
    """Seed 001 Table IV compares CommonPool-L with CommonPool-L-CLIP (and -XL with
    -XL-CLIP): a filtered subset is a training-data group of its own, with no pool
    size, while the unfiltered pool keeps its 1.28B / 12.8B samples."""
    assert clip_groups("ViT-B-16", "commonpool_l_s1b_b8k") == {
        "architecture": "vit", "loss": "contrastive", "training_data": "commonpool-l",
        "training_size": 1_280_000_000}
    assert clip_groups("ViT-B-16", "commonpool_l_clip_s1b_b8k") == {
        "architecture": "vit", "loss": "contrastive", "training_data": "commonpool-l-clip"}
    assert clip_groups("ViT-L-14", "commonpool_xl_s13b_b90k")["training_size"] == 12_800_000_000
    assert clip_groups("ViT-L-14", "commonpool_xl_clip_s13b_b90k")["training_data"] == \
        "commonpool-xl-clip"
    listed = [t for _, t in open_clip.list_pretrained() if t.startswith("commonpool_")]
    slugs = {clip_groups("ViT-B-16", t)["training_data"] for t in listed}
    # every open_clip CommonPool tag: 4 scales x (unfiltered + 5 filters), XL with 2 filters
    assert len(listed) == len(slugs) == 21
    assert {"commonpool-m-basic", "commonpool-s-text", "commonpool-l-image",
            "commonpool-xl-laion"} <= slugs


def test_adapter_records_its_groups(tmp_path: Path) -> None:
    from vlmrobust.models import load_adapter

    cfg = {"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 1, "width": 16,
                                           "patch_size": 16, "head_width": 16},
           "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 16, "heads": 1,
                        "layers": 1}}
    (tmp_path / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    model = open_clip.create_model(f"local-dir:{tmp_path}")
    torch.save(model.state_dict(), tmp_path / "open_clip_pytorch_model.bin")
    adapter = load_adapter(f"clip:local-dir:{tmp_path}", device="cpu")
    # a local checkpoint: nothing known of its data or backbone, the loss is CLIP's
    assert adapter.model_groups == {"loss": "contrastive"}  # type: ignore[attr-defined]
