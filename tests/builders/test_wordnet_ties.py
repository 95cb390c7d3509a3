"""WordNet distractors are not biased by class index (issue 22.3). Wu-Palmer
takes few values, so the top-10 cutoff usually falls inside a tie group; the
builder breaks ties per question by a seeded hash of the synset names. On a
seeded build of one question per class over all 1,000 ImageNet classes,
relabelling and reordering the classes leaves every question's distractors
unchanged, and the old index tie-break fails the same check."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vlmrobust.builders.imagenet_mcq.distractors import (
    wordnet_distractors,
    wordnet_item_distractors,
)
from vlmrobust.builders.imagenet_mcq.seeding import item_rng
from vlmrobust.builders.imagenet_mcq.similarity import LabelSpaceSimilarity
from vlmrobust.core.classes import load_imagenet_classes

SEED, K, TOP_K, VARIANT = 20250101, 4, 10, "imagenet-val"
THIMBLE = 855


@pytest.fixture(scope="module")
def wordnet() -> tuple[dict[int, Any], LabelSpaceSimilarity]:
    from vlmrobust.builders.wordnet import synset_for_wnid

    synsets = {c.index: synset_for_wnid(c.wnid) for c in load_imagenet_classes()}
    return synsets, LabelSpaceSimilarity(range(1000), synsets)


def _key(c: int) -> str:
    return f"{load_imagenet_classes()[c].wnid}/ILSVRC2012_val_{c:08d}.JPEG"


def _build(sim: LabelSpaceSimilarity, index_of: np.ndarray) -> list[tuple[str, ...]]:
    """One question per class (class c under index ``index_of[c]``), its
    distractors as wnids (what a question shows, whatever the indices)."""
    wnid_at = {int(index_of[c.index]): c.wnid for c in load_imagenet_classes()}
    out = []
    for c in range(1000):
        label = int(index_of[c])
        d = wordnet_item_distractors(sim, SEED, VARIANT, _key(c), label, frozenset({label}),
                                     K, TOP_K)
        out.append(tuple(wnid_at[x] for x in d))
    return out


def test_cutoff_ties_are_common(wordnet: tuple[dict[int, Any], LabelSpaceSimilarity]) -> None:
    sim = wordnet[1]
    inside = 0
    for c in range(1000):
        s = np.sort(np.delete(sim.similarities(c), c))[::-1]
        inside += int(s[TOP_K - 1] == s[TOP_K])
    assert inside == 837  # the count, so the tie-break matters
    s = np.delete(sim.similarities(THIMBLE), THIMBLE)
    cut = np.sort(s)[::-1][TOP_K - 1]
    assert (s == cut).sum() == 37 and (s > cut).sum() == 4  # 37 tied for 6 places


def test_relabelled_classes_get_the_same_distractors(
        wordnet: tuple[dict[int, Any], LabelSpaceSimilarity]) -> None:
    synsets, sim = wordnet
    base = _build(sim, np.arange(1000))
    rng = np.random.default_rng(3)
    index_of = rng.permutation(1000)  # class c is now index index_of[c]
    space = rng.permutation(1000).tolist()  # and the label space lists them in another order
    permuted = LabelSpaceSimilarity(space, {int(index_of[c]): s for c, s in synsets.items()})
    assert _build(permuted, index_of) == base
    assert len(set(base)) > 900  # real, varied questions


def _old_rule(sim: LabelSpaceSimilarity, index_of: np.ndarray) -> list[tuple[int, ...]]:
    """The index tie-break this replaces, to show the check above can fail."""
    out = []
    pos = {x: i for i, x in enumerate(sim.space)}
    for c in range(1000):
        label = int(index_of[c])
        sims = sim.similarities(label)
        ranking = sorted((x for x in sim.space if x != label), key=lambda x: (-sims[pos[x]], x))
        d = wordnet_distractors(ranking, frozenset({label}), K, TOP_K,
                                item_rng(SEED, VARIANT, _key(c), "wordnet"))
        inverse = np.argsort(index_of)
        out.append(tuple(int(inverse[x]) for x in d))
    return out


def test_the_index_tie_break_fails_the_same_check(
        wordnet: tuple[dict[int, Any], LabelSpaceSimilarity]) -> None:
    synsets, sim = wordnet
    index_of = np.random.default_rng(3).permutation(1000)
    permuted = LabelSpaceSimilarity(range(1000), {int(index_of[c]): s for c, s in synsets.items()})
    old, old_permuted = _old_rule(sim, np.arange(1000)), _old_rule(permuted, index_of)
    changed = sum(a != b for a, b in zip(old, old_permuted, strict=True))
    assert changed > 100


def test_every_class_of_a_tie_group_gets_its_chance(
        wordnet: tuple[dict[int, Any], LabelSpaceSimilarity]) -> None:
    sim = wordnet[1]
    s = sim.similarities(THIMBLE)
    cut = np.sort(np.delete(s, THIMBLE))[::-1][TOP_K - 1]
    tied = {c for c in range(1000) if c != THIMBLE and s[c] == cut}
    counts = dict.fromkeys(tied, 0)
    n = 400
    for q in range(n):
        top = sim.ranking(THIMBLE, tie_seed=q)[:TOP_K]
        assert len(set(top) - tied) == 4  # the 4 above the tie always make it
        for c in set(top) & tied:
            counts[c] += 1
    # 6 of 37 places each draw: expected 400 * 6/37 ≈ 65 per class
    assert min(counts.values()) > 30 and max(counts.values()) < 110, counts
    # the old rule gave the 6 lowest indices every place
    lowest = sorted(tied)[:6]
    assert sum(counts[c] for c in lowest) < n * 6 * 0.35
