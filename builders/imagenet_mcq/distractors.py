"""The three distractor strategies. Each returns ``k`` distinct class ids drawn
from the variant's label space that are never a valid label of the image.

- ``random``: uniform over the non-valid classes of the label space.
- ``wordnet``: uniform among the ``top_k`` non-valid classes most Wu-Palmer
  similar to the true class (text obfuscation; sampling keeps questions varied).
- ``visual``: the ``k`` non-valid classes whose prototypes are nearest to the
  image embedding (visual obfuscation; the neighbour list comes from FAISS).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from vlmrobust.errors import VlmrobustError


def _candidates(ordered: Iterable[int], valid: frozenset[int]) -> list[int]:
    return [c for c in ordered if c not in valid]


def _need(pool: Sequence[int], k: int, what: str) -> None:
    if len(pool) < k:
        raise VlmrobustError(
            f"{what}: only {len(pool)} non-valid classes left for {k} distractors; "
            "use fewer options or a larger label space"
        )


def random_distractors(
    space: Sequence[int], valid: frozenset[int], k: int, rng: np.random.Generator
) -> tuple[int, ...]:
    """``k`` classes drawn uniformly without replacement from ``space`` minus ``valid``.

    >>> rng = np.random.default_rng(0)
    >>> d = random_distractors(range(10), frozenset({3, 4}), 4, rng)
    >>> len(set(d)), bool({3, 4} & set(d))
    (4, False)
    """
    pool = _candidates(space, valid)
    _need(pool, k, "random distractors")
    picked = rng.choice(len(pool), size=k, replace=False)
    return tuple(int(pool[i]) for i in picked)


def wordnet_distractors(
    ranking: Sequence[int], valid: frozenset[int], k: int, top_k: int,
    rng: np.random.Generator,
) -> tuple[int, ...]:
    """``k`` classes drawn uniformly from the first ``max(top_k, k)`` non-valid
    classes of ``ranking`` (most similar first).

    >>> rng = np.random.default_rng(0)
    >>> sorted(wordnet_distractors([5, 1, 7, 2, 9, 8], frozenset({1}), 2, 3, rng)) in (
    ...     [2, 5], [5, 7], [2, 7])
    True
    """
    pool = _candidates(ranking, valid)[: max(top_k, k)]
    _need(pool, k, "wordnet distractors")
    picked = rng.choice(len(pool), size=k, replace=False)
    return tuple(int(pool[i]) for i in sorted(picked))


def visual_distractors(
    neighbours: Sequence[int], valid: frozenset[int], k: int
) -> tuple[int, ...]:
    """The first ``k`` non-valid classes of ``neighbours`` (nearest first).

    >>> visual_distractors([4, 0, 6, 3, 1], frozenset({0, 3}), 2)
    (4, 6)
    """
    pool = _candidates(neighbours, valid)
    _need(pool, k, "visual distractors")
    return tuple(int(c) for c in pool[:k])
