"""The adapter protocol and the family registry (filled by
vlmrobust.models.registration, which also parses and loads adapter names)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.registry import Registry

FAMILIES = ("vlm", "clip", "classifier", "other")


@runtime_checkable
class Adapter(Protocol):
    """A model seen through the benchmark: dataset rows in, option logits out."""

    name: str
    family: str

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """float32 (B, K_max) option logits; entries beyond a row's own K are NaN."""
        ...

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """float32 (B, D) L2-normalised image embeddings."""
        ...


@dataclass(frozen=True)
class AdapterSpec:
    """A parsed adapter name: what to load, and what a dataset must provide."""

    name: str
    family: str
    target: str
    required_columns: tuple[str, ...] = ("id", "image", "question", "options")
    max_options: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {self.family!r}")
        if not self.target:
            raise ValueError("adapter target must be non-empty")


@dataclass(frozen=True)
class AdapterFamily:
    """How to validate and load the adapters of one family."""

    family: str
    parse: Callable[[str, str], AdapterSpec]  # (full name, target) -> spec; raises on bad input
    load: Callable[..., Adapter]  # (spec, device, **opts) -> adapter
    help: str = field(default="")


ADAPTER_FAMILIES: Registry[AdapterFamily] = Registry("adapter family")


def pad_rows(per_row: Sequence[np.ndarray]) -> np.ndarray:
    """Stack 1-D logit vectors of different lengths into (B, K_max), NaN-padded.

    >>> pad_rows([np.array([1.0, 2.0]), np.array([3.0])]).tolist()
    [[1.0, 2.0], [3.0, nan]]
    """
    k_max = max((len(v) for v in per_row), default=0)
    out = np.full((len(per_row), k_max), np.nan, dtype=np.float32)
    for i, v in enumerate(per_row):
        out[i, : len(v)] = v
    return out


NUM_IMAGENET_CLASSES = 1000


def option_groups(
    ids: Sequence[int], groups: Sequence[Sequence[int] | None] | None, where: str,
) -> list[np.ndarray]:
    """Check a row's ``option_class_groups`` against its ``option_class_ids`` and
    return them as int64 arrays: one non-empty group per option, ids in 0..999,
    each group holding its option's own class id.

    >>> [g.tolist() for g in option_groups([423, 954], [[423, 559], [954]], "row 'q'")]
    [[423, 559], [954]]
    >>> option_groups([423, 954], [[559], [954]], "row 'q'")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: row 'q': option 0's option_class_groups [559] lacks its option_class_ids entry 423; rebuild the dataset (vlmrobust build) so each group holds its option's class
    """
    fix = "rebuild the dataset (vlmrobust build) so each group holds its option's class"
    if groups is None or len(groups) != len(ids):
        n = "null" if groups is None else str(len(groups))
        raise VlmrobustError(
            f"{where}: {len(ids)} option_class_ids but {n} option_class_groups; {fix}"
        )
    out = []
    for k, (c, group) in enumerate(zip(ids, groups, strict=True)):
        arr = np.asarray(list(group or ()), dtype=np.int64)
        if arr.size == 0:
            raise VlmrobustError(f"{where}: option {k}'s option_class_groups is empty; {fix}")
        if arr.min() < 0 or arr.max() >= NUM_IMAGENET_CLASSES:
            raise VlmrobustError(
                f"{where}: option {k}'s option_class_groups {arr.tolist()} has ids outside "
                f"0..{NUM_IMAGENET_CLASSES - 1}; {fix}"
            )
        if int(c) not in arr:
            raise VlmrobustError(
                f"{where}: option {k}'s option_class_groups {arr.tolist()} lacks its "
                f"option_class_ids entry {int(c)}; {fix}"
            )
        out.append(arr)
    return out


def row_options(row: Mapping[str, Any], where: str = "row") -> list[str]:
    options = row.get("options")
    if options is None or len(options) == 0:
        raise VlmrobustError(f"{where}: 'options' is missing or empty; each row needs >= 1 option")
    return [str(o) for o in options]
