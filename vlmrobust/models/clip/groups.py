"""Model groups (evaluation/model_groups.py: architecture, training data and
size, loss) of open_clip checkpoints, read from the architecture name and the
pretrained tag, so that `vlmrobust predict --model clip:ARCH:TAG` records them.
Only what the tag states: an unknown tag (a local checkpoint) gives no
training data, and a field that cannot be read stays absent."""

from __future__ import annotations

from typing import Any

# Pretrained-tag prefix -> (training data slug, training samples). Sizes are the
# image-text pairs of each set as published (CLIP's WIT: 400M; LAION-400M/2B/5B;
# DataComp-1B: 1.4B; CommonPool scales unfiltered: 12.8M/128M/1.28B/12.8B; DFN-2B/5B;
# MetaCLIP 400M; YFCC-15M; CC12M).
TAG_DATA: tuple[tuple[str, str, int | None], ...] = (
    ("openai", "wit-400m", 400_000_000),
    ("laion400m", "laion-400m", 400_000_000),
    ("laion2b", "laion-2b", 2_320_000_000),
    ("laion5b", "laion-5b", 5_850_000_000),
    ("frozen_laion5b", "laion-5b", 5_850_000_000),
    ("laion_aesthetic", "laion-aesthetic", None),
    ("datacomp1b", "datacomp-1b", 1_400_000_000),
    ("datacomp_s34b", "datacomp-1b", 1_400_000_000),  # 34B samples seen of DataComp-1B
    ("datacomp_xl", "datacomp-1b", 1_400_000_000),
    ("datacomp_l", "datacomp-l", 140_000_000),
    ("datacomp_m", "datacomp-m", 14_000_000),
    ("datacomp_s", "datacomp-s", 1_400_000),
    ("commonpool_xl", "commonpool-xl", 12_800_000_000),
    ("commonpool_l", "commonpool-l", 1_280_000_000),
    ("commonpool_m", "commonpool-m", 128_000_000),
    ("commonpool_s", "commonpool-s", 12_800_000),
    ("dfn2b", "dfn-2b", 2_000_000_000),
    ("dfn5b", "dfn-5b", 5_000_000_000),
    ("metaclip_400m", "metaclip-400m", 400_000_000),
    ("metaclip_fullcc", "metaclip-2.5b", 2_500_000_000),
    ("merged2b", "merged-2b", 2_000_000_000),
    ("yfcc15m", "yfcc-15m", 15_000_000),
    ("cc12m", "cc12m", 12_000_000),
    ("webli", "webli", None),
)
# DataComp's filters of a CommonPool scale (tags commonpool_<scale>_<filter>_s..., Gadre et al.
# 2023): each filtered subset is its own training-data group, apart from the unfiltered pool
# (seed 001 Table IV compares CommonPool-L with CommonPool-L-CLIP). Their sizes are not in the
# tag, so a filtered subset states none.
COMMONPOOL_FILTERS = ("clip", "laion", "basic", "text", "image")


def architecture_of(arch: str) -> str | None:
    """cnn / vit / hybrid from an open_clip architecture name.

    >>> architecture_of("ViT-B-32"), architecture_of("RN50"), architecture_of("convnext_base_w")
    ('vit', 'cnn', 'cnn')
    >>> architecture_of("ViT-B-16-SigLIP"), architecture_of("local-dir:/m"), architecture_of("RN50x4")
    ('vit', None, 'cnn')
    """
    a = arch.lower()
    if a.startswith(("vit-", "eva", "timm-vit", "xlm-roberta-base-vit", "xlm-roberta-large-vit")) \
            or "-vit-" in a or a.startswith(("nllb-clip", "pe-core")):
        return "vit"
    if a.startswith(("rn", "convnext", "timm-resnet", "timm-efficientnet", "timm-convnext")):
        return "cnn"
    if a.startswith(("mobileclip", "coca_vit", "fastvit", "vitamin")):
        return "hybrid"
    return None


def clip_groups(arch: str, pretrained: str | None) -> dict[str, Any]:
    """The groups an open_clip ``arch`` + ``pretrained`` tag state.

    >>> clip_groups("ViT-B-32", "openai")
    {'architecture': 'vit', 'loss': 'contrastive', 'training_data': 'wit-400m', 'training_size': 400000000}
    >>> clip_groups("ViT-L-14", "laion2b_s32b_b82k")["training_data"]
    'laion-2b'
    >>> clip_groups("ViT-L-14", "datacomp_xl_s13b_b90k")["training_data"], clip_groups("ViT-L-14", "datacomp_s34b_b86k")["training_data"]
    ('datacomp-1b', 'datacomp-1b')
    >>> clip_groups("RN50", "/ckpt/model.pt"), clip_groups("RN50", "openai_ft.pt")
    ({'architecture': 'cnn', 'loss': 'contrastive'}, {'architecture': 'cnn', 'loss': 'contrastive'})
    >>> clip_groups("ViT-B-32", "mscoco_finetuned_laion2b_s13b_b90k")["fine_tuned_on"]
    'mscoco'
    >>> clip_groups("ViT-B-16", "commonpool_l_s1b_b8k")["training_data"], clip_groups("ViT-B-16", "commonpool_l_clip_s1b_b8k")["training_data"]
    ('commonpool-l', 'commonpool-l-clip')
    """
    out: dict[str, Any] = {}
    if (a := architecture_of(arch)) is not None:
        out["architecture"] = a
    # SigLIP's sigmoid pairwise loss is still image-text contrastive; CoCa adds a captioner
    out["loss"] = "other" if arch.lower().startswith("coca") else "contrastive"
    tag = (pretrained or "").lower()
    if "/" in tag or "." in tag or "\\" in tag:  # a checkpoint file, not a published tag
        tag = ""
    if tag.startswith("mscoco_finetuned_"):
        out["fine_tuned_on"] = "mscoco"
        tag = tag.removeprefix("mscoco_finetuned_")
    for prefix, data, size in TAG_DATA:
        if tag == prefix or tag.startswith(prefix + "_"):
            kept = tag.removeprefix(prefix + "_").split("_")[0]
            if data.startswith("commonpool-") and kept in COMMONPOOL_FILTERS:
                out["training_data"] = f"{data}-{kept}"
                break
            out["training_data"] = data
            if size is not None:
                out["training_size"] = size
            break
    return out
