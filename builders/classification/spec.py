"""The classification family's spec (benchmarks/classification.yaml), checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.builders.classification.layouts_imagenet import (
    IMAGENET_D_SPLITS,
    THREEDCC_CORRUPTIONS,
)
from vlmrobust.core.errors import SpecError

IMAGENET_VARIANTS = ("imagenet-val", "imagenet-v2", "imagenet-r", "imagenet-sketch", "imagenet-a",
                     "objectnet")
# ImageNet val's clean-label subset (Kisel et al. / ReaL), beside the full 50,000 (seed 001/002)
VAL_CLEAN = "imagenet-val-clean"
# Caltech101's test split: the seed authors' list when present, else a seeded half per class
# (seed 002 Table 7: 4.3K train / 4.3K test), or the 30-per-class protocol (the pre-v2 default)
CALTECH_SPLITS = ("auto", "seed-list", "half", "first30")
# The label texts CLIP and VLM prompts write for ImageNet classes: OpenAI CLIP's names (what
# seeds 001 and 002 use) or the curated clean names
CLASS_NAME_SETS = ("openai", "curated")
VARIANTS = (*IMAGENET_VARIANTS, VAL_CLEAN, "flowers102", "stanford-cars", "caltech101", "imagenet-vid-robust",
            "imagenet-d", "3dcc")


@dataclass(frozen=True)
class VariantSpec:
    name: str
    licence: str = ""
    homepage: str = ""
    release: str | None = None  # ImageNet-V2's release
    splits: tuple[str, ...] = IMAGENET_D_SPLITS  # ImageNet-D
    corruptions: tuple[str, ...] = THREEDCC_CORRUPTIONS  # 3DCC
    severities: tuple[int, ...] = (1, 2, 3, 4, 5)

    def __post_init__(self) -> None:
        if self.name not in VARIANTS:
            raise ValueError(f"variant {self.name!r} is not one of {', '.join(VARIANTS)}")
        if not set(self.splits) <= set(IMAGENET_D_SPLITS):
            raise ValueError(f"{self.name}: splits must be among {IMAGENET_D_SPLITS}")
        if not set(self.corruptions) <= set(THREEDCC_CORRUPTIONS):
            raise ValueError(f"{self.name}: corruptions must be among {THREEDCC_CORRUPTIONS}")
        if not set(self.severities) <= {1, 2, 3, 4, 5} or not self.severities:
            raise ValueError(f"{self.name}: severities must be among 1..5")


@dataclass(frozen=True)
class HardOptions:
    """ImageNet-D's K-option configs (seed 001 §IX): the selection model and K."""

    k: int = 4
    selector: str = "classifier:efficientnet-lite0"
    batch_size: int = 16

    def __post_init__(self) -> None:
        if not 2 <= self.k <= 26 or self.batch_size < 1:
            raise ValueError(f"hard_options: k must be in 2..26 and batch_size >= 1 (k = {self.k})")


@dataclass(frozen=True)
class ClassificationSpec:
    name: str
    version: str
    seed: int
    variants: tuple[VariantSpec, ...]
    clean_labels: str | None = "auto"
    images_per_config: int | None = None  # seeded subset; None = every image
    label_set_sizes: tuple[int, ...] = (2, 5, 20, 100)
    label_set_variants: tuple[str, ...] | None = None  # None = every full-label-space config
    label_set_images: int | None = None  # a seeded subset of images per K-config; None = all
    hard_options: HardOptions = field(default_factory=HardOptions)
    skip_missing: bool = False  # an absent variant folder is skipped (and named), not an error
    sample_label_set_sizes: tuple[int, ...] = (2, 5, 20, 100)
    caltech_split: str = "auto"
    class_names: str = "openai"

    def __post_init__(self) -> None:
        if self.caltech_split not in CALTECH_SPLITS:
            raise ValueError(f"caltech_split {self.caltech_split!r} is not one of "
                             f"{', '.join(CALTECH_SPLITS)}")
        if self.class_names not in CLASS_NAME_SETS:
            raise ValueError(f"class_names {self.class_names!r} is not one of "
                             f"{', '.join(CLASS_NAME_SETS)}")
        if self.clean_labels is None and any(v.name == VAL_CLEAN for v in self.variants):
            raise ValueError(f"variant {VAL_CLEAN} needs clean_labels (auto, real or a file); "
                             f"set it, or drop {VAL_CLEAN} from variants")
        if any(k < 2 for k in (*self.label_set_sizes, *self.sample_label_set_sizes)):
            raise ValueError("label_set_sizes must be >= 2")
        for name in ("images_per_config", "label_set_images"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be an integer >= 1 or null")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError("variants: a variant is listed twice")


def _ints(raw: Any, what: str) -> tuple[int, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in raw):
        raise ValueError(f"{what} must be a list of integers")
    return tuple(raw)


def _variant(raw: Any) -> VariantSpec:
    if isinstance(raw, str):
        return VariantSpec(raw)
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise ValueError("each variant is a name or a mapping with 'name'")
    known = {"name", "licence", "homepage", "release", "splits", "corruptions", "severities"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"variant {raw['name']!r}: unknown keys {unknown}")
    opts: dict[str, Any] = {k: str(raw[k]) for k in ("licence", "homepage", "release") if raw.get(k)}
    for key in ("splits", "corruptions"):
        if key in raw:
            opts[key] = tuple(str(x) for x in raw[key])
    if "severities" in raw:
        opts["severities"] = _ints(raw["severities"], "severities")
    return VariantSpec(str(raw["name"]), **opts)


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> ClassificationSpec:
    """The YAML mapping, checked; any problem is one SpecError naming the file."""
    try:
        seed = raw.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        variants = raw.get("variants") or []
        if not isinstance(variants, list) or not variants:
            raise ValueError("variants must list at least one of " + ", ".join(VARIANTS))
        hard = raw.get("hard_options") or {}
        if not isinstance(hard, Mapping):
            raise ValueError("hard_options must be a mapping (k, selector, batch_size)")
        lsv = raw.get("label_set_variants")
        sample = raw.get("sample") or {}
        return ClassificationSpec(
            name=str(raw["name"]), version=str(raw["version"]), seed=seed,
            variants=tuple(_variant(v) for v in variants),
            clean_labels=None if raw.get("clean_labels", "auto") is None else str(raw.get("clean_labels", "auto")),
            images_per_config=raw.get("images_per_config"),
            label_set_sizes=_ints(raw.get("label_set_sizes", [2, 5, 20, 100]), "label_set_sizes"),
            label_set_variants=None if lsv is None else tuple(str(v) for v in lsv),
            label_set_images=raw.get("label_set_images"),
            hard_options=HardOptions(int(hard.get("k", 4)),
                                     str(hard.get("selector", "classifier:efficientnet-lite0")),
                                     int(hard.get("batch_size", 16))),
            skip_missing=bool(raw.get("skip_missing", False)),
            sample_label_set_sizes=_ints(sample.get("label_set_sizes", [2, 5, 20, 100]),
                                         "sample.label_set_sizes"),
            caltech_split=str(raw.get("caltech_split", "auto")),
            class_names=str(raw.get("class_names", "openai")))
    except (ValueError, TypeError, KeyError) as exc:
        raise SpecError(f"{spec_path}: {exc}") from None
