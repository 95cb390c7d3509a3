"""K-config candidates (issue 23.2): always the ground truth, distractors
uniform over the non-valid classes (chi-square on a large seeded draw), the
label's position uniform, one row's draw independent of the others; ImageNet-D's
hardest wrong classes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from vlmrobust.builders.classification.candidates import (
    group_scores,
    hardest_candidates,
    random_candidates,
)

N_CLASSES, K, ROWS = 20, 5, 12_000


def _draws(seed: int = 7) -> list[tuple[int, list[int]]]:
    out = []
    for i in range(ROWS):
        label = i % N_CLASSES
        out.append((label, random_candidates(seed, "toy-k5", f"img-{i}.jpg", label, [label],
                                             N_CLASSES, K)))
    return out


def test_candidates_hold_the_label_k_distinct_classes_and_repeat_per_seed() -> None:
    draws = _draws()
    for label, cands in draws:
        assert len(cands) == K == len(set(cands)) and label in cands
        assert all(0 <= c < N_CLASSES for c in cands)
    assert draws == _draws()
    assert draws != _draws(seed=8)


def test_distractors_and_label_positions_are_uniform_chi_square() -> None:
    draws = _draws()
    # per label, each other class should be drawn (K-1)/(N-1) of the time
    for label in (0, 7, 19):
        counts = Counter(c for lab, cands in draws if lab == label for c in cands if c != label)
        observed = [counts.get(c, 0) for c in range(N_CLASSES) if c != label]
        assert sum(observed) == (ROWS // N_CLASSES) * (K - 1)
        assert chisquare(observed).pvalue > 1e-3
    positions = Counter(cands.index(label) for label, cands in draws)
    assert chisquare([positions[p] for p in range(K)]).pvalue > 1e-3
    # the same test rejects a mildly biased sampler (weights 1..19 over the pool)
    rng = np.random.default_rng(0)
    pool = np.arange(1, N_CLASSES)
    weights = pool / pool.sum()
    biased = Counter(int(c) for _ in range(ROWS // N_CLASSES)
                     for c in rng.choice(pool, size=K - 1, replace=False, p=weights))
    assert chisquare([biased.get(c, 0) for c in pool]).pvalue < 1e-3


def test_other_valid_labels_are_never_distractors() -> None:
    for i in range(500):
        cands = random_candidates(0, "c", f"k{i}", 3, [3, 4, 5], 10, 8)
        assert 3 in cands and not {4, 5} & set(cands)
    with pytest.raises(ValueError, match="non-valid classes"):
        random_candidates(0, "c", "k", 3, [3, 4, 5], 10, 9)
    with pytest.raises(ValueError, match=r"must be in 2\.\.10"):
        random_candidates(0, "c", "k", 3, [3], 10, 11)


def test_one_rows_draw_does_not_depend_on_the_others() -> None:
    a = random_candidates(0, "cfg", "same.jpg", 2, [2], 50, 5)
    for i in range(20):
        random_candidates(0, "cfg", f"other-{i}", 2, [2], 50, 5)
    assert random_candidates(0, "cfg", "same.jpg", 2, [2], 50, 5) == a


def test_hardest_candidates_against_a_direct_sort() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        scores = rng.normal(size=12)
        label = int(rng.integers(12))
        got = hardest_candidates(0, "d", f"x{trial}", label, [label], scores, 4)
        order = np.argsort(-scores, kind="stable")
        expect = [int(c) for c in order if c != label][:3]
        assert sorted(got) == sorted([label, *expect])
    logits = rng.normal(size=(3, 1000))
    groups = [[1, 5, 9], [2], [100, 3]]
    direct = np.array([[row[g].max() for g in groups] for row in logits])
    assert np.array_equal(group_scores(logits, groups), direct)
