"""Greedy κ + diversity selection against a brute-force restatement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.builders.bench_c.selection import diversity, greedy_select


def _cos(a: list[float], b: list[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)


def brute_force(kappas: list[float], emb: list[list[list[float]]], a1: float, a2: float
                ) -> tuple[list[int], list[float], list[int]]:
    """The paper's algorithm read literally: drop κ = 0; at every step score
    every remaining candidate from scratch (explicit mean over the selected set,
    D_s = 2 while it is empty) and take the best, earliest on ties; keep the
    picks scoring above the mean of the recorded scores (the first pick always)."""
    remaining = [i for i, k in enumerate(kappas) if k > 0]
    chosen: list[int] = []
    scores: list[float] = []
    while remaining:
        all_scores = {}
        for i in remaining:
            d = 2.0
            for m in emb:
                if chosen:
                    mean = [sum(m[j][t] for j in chosen) / len(chosen)
                            for t in range(len(m[i]))]
                    d -= _cos(m[i], mean)
            all_scores[i] = a1 * kappas[i] + a2 * d
        top = max(all_scores.values())
        best = next(i for i in remaining if all_scores[i] >= top - 1e-9)
        best_score = all_scores[best]
        chosen.append(best)
        scores.append(best_score)
        remaining.remove(best)
    mean = sum(scores) / len(scores) if scores else 0.0
    kept = [i for n, (i, s) in enumerate(zip(chosen, scores, strict=True))
            if s > mean or n == 0]
    if all(s == pytest.approx(mean, abs=1e-12) for s in scores):
        kept = list(chosen)
    return chosen, scores, kept


def test_toy_pool_by_hand() -> None:
    # q0 and q1 are duplicates (e0), q2 differs (e1); both modalities alike
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    sel = greedy_select([0.9, 0.8, 0.3], [emb, emb])
    # step 1, A = ∅: D_s = 2 for all -> q0 (top κ) with 2.9
    # step 2, against e0: q1 0.8 + 2 − 2 = 0.8, q2 0.3 + 2 − 0 = 2.3 -> q2
    # step 3, against (1, 1): q1 0.8 + 2 − 2/√2
    assert sel.picked == (0, 2, 1)
    assert sel.scores == pytest.approx((2.9, 2.3, 0.8 + 2 - math.sqrt(2)))
    assert sel.diversities == pytest.approx((2.0, 2.0, 2 - math.sqrt(2)))
    assert sel.threshold == pytest.approx(sum(sel.scores) / 3)
    assert sel.kept == (0, 2)


def test_top_kappa_survives_a_larger_later_score() -> None:
    # the second pick is antipodal to the first in both modalities: D_s = 4, its
    # score 0.5 + 4 beats the first pick's 0.6 + 2 and lifts the mean above it
    emb = np.array([[1.0, 0.0], [-1.0, 0.0]])
    sel = greedy_select([0.6, 0.5], [emb, emb])
    assert sel.picked == (0, 1) and sel.scores == pytest.approx((2.6, 4.5))
    assert sel.kept == (0, 1)


def test_a_score_equal_to_the_mean_is_not_above_it() -> None:
    # orthogonal candidates: D_s = 2 at every pick, scores κ + 2 = 2.75, 2.5, 2.25
    # (exact in binary), mean 2.5: "above the mean" keeps the first pick only
    sel = greedy_select([0.75, 0.5, 0.25], [np.eye(3)])
    assert sel.scores == (2.75, 2.5, 2.25) and sel.threshold == 2.5
    assert sel.kept == (0,)


def test_diversity_closed_form() -> None:
    z = [np.array([1.0, 0.0]), np.array([0.6, 0.8])]
    a = [np.array([[0.0, 1.0], [1.0, 1.0]]), np.array([[0.6, 0.8]])]
    # image: mean (0.5, 1) -> cos = 0.5/√1.25; text: identical -> 1
    assert diversity(z, a) == pytest.approx(2 - 0.5 / math.sqrt(1.25) - 1.0)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_greedy_equals_brute_force(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 7))
    kappas = data.draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.0]),
                                min_size=n, max_size=n))
    dims = (3, 4)
    emb = [[data.draw(st.lists(st.integers(-3, 3).map(float), min_size=d, max_size=d))
            for _ in range(n)] for d in dims]
    a1 = data.draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    a2 = data.draw(st.sampled_from([0.0, 1.0, 1.5]))
    sel = greedy_select(kappas, [np.array(m) for m in emb], a1, a2)
    chosen, scores, kept = brute_force(kappas, emb, a1, a2)
    assert list(sel.picked) == chosen
    assert list(sel.scores) == pytest.approx(scores, abs=1e-9)
    assert list(sel.kept) == kept
    if any(k > 0 for k in kappas) and a1 > 0:
        top = max(kappas)
        assert kappas[sel.picked[0]] == top and sel.picked[0] in sel.kept
        assert sel.picked[0] == kappas.index(top)  # the earliest of equal κ


def test_zero_kappa_never_selected_and_bad_input() -> None:
    sel = greedy_select([0.0, 0.0], [np.eye(2)])
    assert sel.picked == () and sel.kept == ()
    with pytest.raises(ValueError, match="alphas"):
        greedy_select([1.0], [np.eye(1)], -1.0, 1.0)
    with pytest.raises(ValueError, match="N=2"):
        greedy_select([1.0, 1.0], [np.eye(3)])
