"""The three distractor strategies. Each returns ``k`` distinct class ids drawn
from the variant's label space that are never a valid label of the image.

- ``random``: uniform over the non-valid classes of the label space.
- ``wordnet``: uniform among the ``top_k`` non-valid classes most Wu-Palmer
  similar to the true class (text obfuscation; sampling keeps questions varied);
  ties at the cutoff are broken per question by a seeded hash of the synset
  names (``wordnet_item_distractors``), never by class index.
- ``visual``: the ``k`` non-valid classes whose prototypes are nearest to the
  image embedding (visual obfuscation; the neighbour list comes from FAISS).

``groups`` (ObjectNet: IN-1k class -> ObjectNet class) makes the options
distinct at the group level: a class that shares a group with a valid label
is never a distractor, and no two distractors share a group (so an ObjectNet
"chair" question never offers both "folding chair" and "rocking chair").
Random then draws groups uniformly (the 113 ObjectNet classes), then one class
per group; the ranked strategies keep the best-ranked class of each group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from vlmrobust.builders.imagenet_mcq.seeding import derive_seed, item_rng
from vlmrobust.core.errors import VlmrobustError

if TYPE_CHECKING:
    from vlmrobust.builders.imagenet_mcq.similarity import LabelSpaceSimilarity

Groups = Mapping[int, str]


def _candidates(
    ordered: Iterable[int], valid: frozenset[int], groups: Groups | None = None
) -> list[int]:
    """Non-valid classes in order; with ``groups``, the first of each group whose
    group holds no valid label.

    >>> _candidates([1, 2, 3, 4, 5], frozenset({1}), {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"})
    [3, 5]
    """
    if groups is None:
        return [c for c in ordered if c not in valid]
    seen = {groups[c] for c in valid if c in groups}
    out = []
    for c in ordered:
        g = groups[c]
        if c not in valid and g not in seen:
            seen.add(g)
            out.append(c)
    return out


def _need(pool: Sequence[object], k: int, what: str) -> None:
    if len(pool) < k:
        raise VlmrobustError(
            f"{what}: only {len(pool)} non-valid classes left for {k} distractors; "
            "use fewer options or a larger label space"
        )


def random_distractors(
    space: Sequence[int], valid: frozenset[int], k: int, rng: np.random.Generator,
    groups: Groups | None = None,
) -> tuple[int, ...]:
    """``k`` classes drawn uniformly without replacement from ``space`` minus ``valid``
    (with ``groups``: ``k`` groups uniformly, then one class of each uniformly).

    >>> rng = np.random.default_rng(0)
    >>> d = random_distractors(range(10), frozenset({3, 4}), 4, rng)
    >>> len(set(d)), bool({3, 4} & set(d))
    (4, False)
    """
    if groups is not None:
        blocked = {groups[c] for c in valid if c in groups}
        members: dict[str, list[int]] = {}
        for c in space:
            if c not in valid and groups[c] not in blocked:
                members.setdefault(groups[c], []).append(int(c))
        names = sorted(members)
        _need(names, k, "random distractors")
        chosen = rng.choice(len(names), size=k, replace=False)
        return tuple(
            members[names[i]][int(rng.integers(len(members[names[i]])))] for i in chosen
        )
    pool = _candidates(space, valid)
    _need(pool, k, "random distractors")
    picked = rng.choice(len(pool), size=k, replace=False)
    return tuple(int(pool[i]) for i in picked)


def wordnet_distractors(
    ranking: Sequence[int], valid: frozenset[int], k: int, top_k: int,
    rng: np.random.Generator, groups: Groups | None = None,
) -> tuple[int, ...]:
    """``k`` classes drawn uniformly from the first ``max(top_k, k)`` non-valid
    classes of ``ranking`` (most similar first).

    >>> rng = np.random.default_rng(0)
    >>> sorted(wordnet_distractors([5, 1, 7, 2, 9, 8], frozenset({1}), 2, 3, rng)) in (
    ...     [2, 5], [5, 7], [2, 7])
    True
    """
    pool = _candidates(ranking, valid, groups)[: max(top_k, k)]
    _need(pool, k, "wordnet distractors")
    picked = rng.choice(len(pool), size=k, replace=False)
    return tuple(int(pool[i]) for i in sorted(picked))


def wordnet_item_distractors(
    similarity: LabelSpaceSimilarity, seed: int, variant: str, key: str, label: int,
    valid: frozenset[int], k: int, top_k: int, groups: Groups | None = None,
) -> tuple[int, ...]:
    """One question's ``wordnet`` distractors as the builder draws them: the
    ranking of ``label`` with the question's own tie seed (spec seed, variant,
    item key), then ``k`` of its first ``top_k`` non-valid classes by the
    question's own generator. Nothing here depends on class indices or their
    order, so relabelled classes get the same distractors."""
    ranking = similarity.ranking(label, derive_seed(seed, variant, key, "wordnet-ties"))
    rng = item_rng(seed, variant, key, "wordnet")
    return wordnet_distractors(ranking, valid, k, top_k, rng, groups)


def visual_distractors(
    neighbours: Sequence[int], valid: frozenset[int], k: int, groups: Groups | None = None
) -> tuple[int, ...]:
    """The first ``k`` non-valid classes of ``neighbours`` (nearest first).

    >>> visual_distractors([4, 0, 6, 3, 1], frozenset({0, 3}), 2)
    (4, 6)
    """
    pool = _candidates(neighbours, valid, groups)
    _need(pool, k, "visual distractors")
    return tuple(int(c) for c in pool[:k])
