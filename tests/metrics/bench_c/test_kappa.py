"""κ against hand-computed Gini values and an independent loop implementation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.metrics.bench_c.kappa import gini_impurity, kappa


def loop_kappa(table: list[list[list[list[int]]]], k: list[int]) -> list[float]:
    out = []
    for q, per_model in enumerate(table):
        vals = []
        for per_corruption in per_model:
            for answers in per_corruption:
                counts = Counter(answers)
                g = 1 - sum((n / len(answers)) ** 2 for n in counts.values())
                vals.append(g / (1 - 1 / k[q]))
        out.append(sum(vals) / len(vals))
    return out


def test_hand_computed_toy_table() -> None:
    # 2 questions, 2 selectors, 2 corruptions, 5 severities, K = 4
    table = np.array([
        [[[0, 0, 0, 0, 0], [0, 0, 0, 0, 1]],      # G = 0, 1 − (16+1)/25 = 0.32
         [[0, 1, 2, 3, 0], [1, 1, 2, 2, 3]]],     # 1 − (4+1+1+1)/25 = 0.72, 1 − (4+4+1)/25 = 0.64
        [[[2, 2, 2, 2, 2], [3, 3, 3, 3, 3]],
         [[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]]],
    ])
    got = kappa(table, 4)
    norm = 1 - 1 / 4
    expected_q0 = (0 + 0.32 + 0.72 + 0.64) / norm / 4
    assert got[0] == pytest.approx(expected_q0, abs=1e-12)
    assert got[1] == 0.0


def test_gini_examples() -> None:
    assert gini_impurity([1, 1, 1]) == 0.0
    assert gini_impurity([0, 1]) == pytest.approx(0.5)
    assert gini_impurity([0, 1, 2, 3, 4]) == pytest.approx(0.8)
    with pytest.raises(ValueError):
        gini_impurity([])


def test_maximum_is_one_when_answers_spread_over_all_options() -> None:
    table = np.array([[[[0, 1, 2, 3, 4]]]])
    assert kappa(table, 5)[0] == pytest.approx(1.0)


def test_per_question_option_counts() -> None:
    table = np.array([[[[0, 1, 0, 1, 0]]], [[[0, 1, 0, 1, 0]]]])
    got = kappa(table, [2, 5])
    g = 1 - (0.6**2 + 0.4**2)
    assert got[0] == pytest.approx(g / 0.5)
    assert got[1] == pytest.approx(g / 0.8)


def test_bad_tables_are_rejected() -> None:
    with pytest.raises(ValueError, match="shape"):
        kappa(np.zeros((2, 5), int), 4)
    with pytest.raises(ValueError, match=r"0\.\.K"):
        kappa(np.full((1, 1, 1, 5), 4), 4)
    with pytest.raises(ValueError, match="integer"):
        kappa(np.zeros((1, 1, 1, 5)), 4)
    with pytest.raises(ValueError, match="2 options"):
        kappa(np.zeros((1, 1, 1, 5), int), 1)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_matches_loop_implementation_and_stays_in_unit_interval(data: st.DataObject) -> None:
    q = data.draw(st.integers(1, 4))
    m = data.draw(st.integers(1, 3))
    c = data.draw(st.integers(1, 3))
    s = data.draw(st.integers(1, 6))
    ks = data.draw(st.lists(st.integers(2, 6), min_size=q, max_size=q))
    table = [[[[data.draw(st.integers(0, ks[i] - 1)) for _ in range(s)] for _ in range(c)]
              for _ in range(m)] for i in range(q)]
    got = kappa(np.array(table), ks)
    assert got == pytest.approx(loop_kappa(table, ks), abs=1e-12)
    # with S < K the maximum share spread caps κ below 1, never above
    assert (got >= 0).all() and (got <= 1 + 1e-12).all()
