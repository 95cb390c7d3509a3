"""Assembling MCQ rows: balanced answer positions, option order, stable ids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.builders.imagenet_mcq.items import Item
from vlmrobust.builders.imagenet_mcq.seeding import item_rng, key_hash


def balanced_positions(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Answer index per question: a seeded permutation of ``[0..k-1]`` repeated,
    so each position occurs ``floor(n/k)`` or ``ceil(n/k)`` times.

    >>> p = balanced_positions(12, 5, np.random.default_rng(0))
    >>> sorted(np.bincount(p, minlength=5).tolist())
    [2, 2, 2, 3, 3]
    >>> p = balanced_positions(13, 5, np.random.default_rng(0))
    >>> int(max(np.bincount(p)) - min(np.bincount(p)))
    1
    """
    base = np.arange(n) % k
    return rng.permutation(base)


def question_id(variant: str, strategy: str, key: str) -> str:
    """``<variant>-<strategy>-<12 hex of sha256(key)>``: unique across the dataset dir.

    >>> question_id("imagenet-r", "wordnet", "n01443537/art_0.jpg")[:19]
    'imagenet-r-wordnet-'
    """
    return f"{variant}-{strategy}-{key_hash(key)}"


def make_row(
    item: Item, strategy: str, distractors: Sequence[int], answer: int,
    names: Mapping[int, str], question: str, seed: int, image: bytes,
    groups: Mapping[int, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """One dataset row. Distractors are shuffled with the item's own seed and the
    true class is put at ``answer``. ``groups`` gives, per class id, the IN-1k
    classes its option is scored over (ObjectNet); without it each option's group
    is its own class."""
    rng = item_rng(seed, item.variant, item.key, strategy, "order")
    order = [int(distractors[i]) for i in rng.permutation(len(distractors))]
    classes = [*order[:answer], item.label, *order[answer:]]
    return {
        "id": question_id(item.variant, strategy, item.key),
        "image": {"bytes": image, "path": None},
        "question": question,
        "options": [names[c] for c in classes],
        "answer": answer,
        "label": item.label,
        "option_class_ids": classes,
        "option_class_groups": [
            sorted(int(g) for g in groups[c]) if groups is not None else [c] for c in classes
        ],
        "variant": item.variant,
        "distractors": strategy,
        "source_file": source_file(item.variant, item.key),
    }


def source_file(variant: str, key: str) -> str:
    """The image's file name in its release: ImageNet val is one flat folder of
    ``ILSVRC2012_val_XXXXXXXX.JPEG`` files (the join key of ReaL, Kisel et al. and
    ImageNet-X), so only the base name; the other variants' names are their paths
    inside the release (class folder / file).

    >>> source_file("imagenet-val", "n01440764/ILSVRC2012_val_00000293.JPEG")
    'ILSVRC2012_val_00000293.JPEG'
    >>> source_file("imagenet-r", "n01443537/art_0.jpg")
    'n01443537/art_0.jpg'
    """
    return key.rsplit("/", 1)[-1] if variant == "imagenet-val" else key
