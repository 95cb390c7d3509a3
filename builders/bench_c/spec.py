"""The bench-c spec (benchmarks/bench-c.yaml) as frozen, validated dataclasses.
``parse_spec`` names the spec file and key in every error, and checks every
corruption name and severity before any work starts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmrobust.builders.corruptions.registry import (
    ALL_CORRUPTIONS,
    check_corruptions,
    check_severity,
)
from vlmrobust.core.errors import SpecError, VlmrobustError

CORE_COLUMNS = ("id", "image", "question", "options", "answer")
TEXT_EMBEDDERS = ("minilm",)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class SourceSpec:
    """One source MCQ dataset and how its columns map onto the core schema."""

    name: str
    category_column: str
    path: str | None = None
    hub: str | None = None
    configs: tuple[str, ...] = ()
    split: str = "test"
    columns: tuple[tuple[str, str], ...] = ()  # (core name, source column)
    spec: str | None = None  # sample only: build this family's sample as the source

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"source name {self.name!r} must match {_NAME.pattern}")
        if not self.category_column:
            raise ValueError(f"source {self.name!r}: category_column must not be empty")
        if sum(x is not None for x in (self.path, self.hub, self.spec)) != 1:
            raise ValueError(f"source {self.name!r}: give exactly one of path, hub (or spec)")
        for core, _ in self.columns:
            if core not in CORE_COLUMNS:
                raise ValueError(f"source {self.name!r}: columns key {core!r} is not one of "
                                 f"{CORE_COLUMNS}")

    def source_column(self, core: str) -> str:
        return dict(self.columns).get(core, core)


@dataclass(frozen=True)
class SelectionSpec:
    selectors: tuple[str, ...]
    image_embedder: str
    text_embedder: str = "minilm"
    alpha_kappa: float = 1.0
    alpha_diversity: float = 1.0
    pool_per_category: int | None = 50
    pool_per_source: int | None = None
    # cap on the whole pool, drawn round-robin over the (source, category) task types
    pool_size: int | None = None
    max_questions: int | None = None
    batch_size: int = 32
    trust_remote_code: bool = False  # vlm selectors may run their checkpoint's own code

    def __post_init__(self) -> None:
        if not self.selectors:
            raise ValueError("selection.selectors must list at least one model")
        if len(set(self.selectors)) != len(self.selectors):
            raise ValueError("selection.selectors lists a model twice")
        if self.text_embedder not in TEXT_EMBEDDERS:
            raise ValueError(f"selection.text_embedder must be one of {TEXT_EMBEDDERS}")
        if self.alpha_kappa < 0 or self.alpha_diversity < 0:
            raise ValueError("selection.alpha_kappa and alpha_diversity must be >= 0")
        if self.pool_per_category is not None and self.pool_per_category < 1:
            raise ValueError("selection.pool_per_category must be >= 1 or null")
        if self.pool_per_source is not None and self.pool_per_source < 1:
            raise ValueError("selection.pool_per_source must be >= 1 or null")
        if self.pool_size is not None and self.pool_size < 1:
            raise ValueError("selection.pool_size must be >= 1 or null")
        if self.max_questions is not None and self.max_questions < 1:
            raise ValueError("selection.max_questions must be >= 1 or null")
        if self.batch_size < 1:
            raise ValueError("selection.batch_size must be >= 1")


@dataclass(frozen=True)
class BenchCSpec:
    name: str
    version: str
    seed: int
    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    selection: SelectionSpec
    sources: tuple[SourceSpec, ...]
    max_side: int | None = None
    sample_source: SourceSpec | None = None
    sample_selection: SelectionSpec | None = None
    sample_max_side: int | None = None
    path: Path = field(default=Path("bench-c.yaml"))

    def __post_init__(self) -> None:
        if not self.version:
            raise ValueError("version must not be empty")
        if not self.sources:
            raise ValueError("sources must list at least one source")
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError("source names must be unique")
        if len(set(self.severities)) != len(self.severities) or not self.severities:
            raise ValueError("severities must be a non-empty list without repeats")
        if self.max_side is not None and self.max_side < 32:
            raise ValueError(f"max_side must be >= 32 or null, got {self.max_side}")
        if self.sample_max_side is not None and self.sample_max_side < 32:
            raise ValueError(f"sample.max_side must be >= 32 or null, got {self.sample_max_side}")


def _source(raw: Any, where: str) -> SourceSpec:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a mapping")
    cols = raw.get("columns") or {}
    if not isinstance(cols, Mapping):
        raise ValueError(f"{where}.columns must be a mapping core name -> source column")
    configs = raw.get("configs") or ()
    if isinstance(configs, str):
        configs = (configs,)
    return SourceSpec(
        name=str(raw.get("name", "")), category_column=str(raw.get("category_column", "")),
        path=raw.get("path"), hub=raw.get("hub"), configs=tuple(str(c) for c in configs),
        split=str(raw.get("split", "test")),
        columns=tuple(sorted((str(k), str(v)) for k, v in cols.items())),
        spec=raw.get("spec"),
    )


def _selection(raw: Any, where: str) -> SelectionSpec:
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a mapping")
    known = set(SelectionSpec.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)} (known: {sorted(known)})")
    kw = dict(raw)
    kw["selectors"] = tuple(str(s) for s in raw.get("selectors") or ())
    kw["image_embedder"] = str(raw.get("image_embedder", ""))
    return SelectionSpec(**kw)


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> BenchCSpec:
    """Validate the raw YAML mapping; every error names ``spec_path``."""
    try:
        if raw.get("family") != "bench-c":
            raise ValueError(f"family must be 'bench-c', got {raw.get('family')!r}")
        corr = raw.get("corruptions", "all")
        names = ALL_CORRUPTIONS if corr == "all" else check_corruptions(
            [str(c) for c in (corr or [])])
        severities = tuple(check_severity(s) for s in raw.get("severities", [1, 2, 3, 4, 5]))
        sources = tuple(_source(s, f"sources[{i}]")
                        for i, s in enumerate(raw.get("sources") or []))
        sample = raw.get("sample") or {}
        return BenchCSpec(
            name=str(raw["name"]), version=str(raw["version"]), seed=int(raw.get("seed", 0)),
            corruptions=tuple(names), severities=severities,
            max_side=_opt_int(raw.get("max_side")), sample_max_side=_opt_int(sample.get("max_side")),
            selection=_selection(raw.get("selection") or {}, "selection"),
            sources=sources,
            sample_source=_source(sample["source"], "sample.source") if "source" in sample
            else None,
            sample_selection=_selection(sample["selection"], "sample.selection")
            if "selection" in sample else None,
            path=Path(spec_path),
        )
    except (ValueError, TypeError, KeyError) as exc:
        raise SpecError(f"{spec_path}: {exc}") from None
    except VlmrobustError as exc:
        raise SpecError(f"{spec_path}: {exc}") from None
