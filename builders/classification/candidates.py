"""Candidate classes of a K-config row: ``candidates`` (indices into the label
space, in presentation order, always containing the label).

- Label-set size (seed 002, Fig. 2): K - 1 distractors drawn uniformly without
  replacement from the classes that are not valid for the image, and the
  label's position drawn uniformly, all from a generator derived from (spec
  seed, config, image key): no global RNG, and one image's draw never depends
  on another's.
- Hardest wrong classes (seed 001 §IX, ImageNet-D's 4-option questions): the
  K - 1 classes a selection model scores highest besides the valid ones, its
  scores per class taken over the class's ImageNet group (max, as group_rule
  says), then shuffled with the label into a seeded order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlmrobust.builders.imagenet_mcq.seeding import item_rng


def random_candidates(seed: int, config: str, key: str, label: int, valid: Sequence[int],
                      n_classes: int, k: int) -> list[int]:
    """K classes: the label and K - 1 uniform non-valid distractors, seeded order.

    >>> c = random_candidates(0, "cfg", "a.jpg", 3, [3], 10, 4)
    >>> len(c), 3 in c, c == random_candidates(0, "cfg", "a.jpg", 3, [3], 10, 4)
    (4, True, True)
    """
    if not 2 <= k <= n_classes:
        raise ValueError(f"K = {k} must be in 2..{n_classes} (the label space)")
    excluded = set(valid) | {label}
    pool = np.asarray([c for c in range(n_classes) if c not in excluded], dtype=np.int64)
    if pool.size < k - 1:
        raise ValueError(f"{key}: only {pool.size} non-valid classes for K = {k}")
    rng = item_rng(seed, config, key, f"k{k}")
    shown = [int(c) for c in rng.choice(pool, size=k - 1, replace=False)]
    shown.insert(int(rng.integers(k)), int(label))
    return shown


def hardest_candidates(seed: int, config: str, key: str, label: int, valid: Sequence[int],
                       class_scores: np.ndarray, k: int) -> list[int]:
    """The label and the K - 1 highest-scoring non-valid classes (ties by index),
    in a seeded order.

    >>> sorted(hardest_candidates(0, "c", "k", 0, [0], np.array([9.0, 1.0, 5.0, 7.0, 3.0]), 3))
    [0, 2, 3]
    """
    scores = np.asarray(class_scores, dtype=np.float64)
    if not 2 <= k <= scores.size:
        raise ValueError(f"K = {k} must be in 2..{scores.size}")
    excluded = set(valid) | {label}
    order = sorted((c for c in range(scores.size) if c not in excluded),
                   key=lambda c: (-scores[c], c))
    shown = [label, *order[:k - 1]]
    rng = item_rng(seed, config, key, "hardest")
    return [int(shown[i]) for i in rng.permutation(len(shown))]


def group_scores(class_logits: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """(B, 1000) ImageNet logits -> (B, n_classes): the max over each class's group.

    >>> group_scores(np.array([[1.0, 5.0, 2.0]]), [[0, 2], [1]]).tolist()
    [[2.0, 5.0]]
    """
    logits = np.asarray(class_logits, dtype=np.float64)
    return np.stack([logits[:, list(g)].max(axis=1) for g in groups], axis=1)
