"""RAS, quadrants, transitions: bounds (hypothesis), both ends, hand-written cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.metrics.bench_c.ras import (
    QUADRANTS,
    counts,
    delta_accuracy,
    pair_metrics,
    quadrant,
    ras,
    transition,
)
from vlmrobust.metrics.uncertainty import calibration_error, normalized_entropy

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
delta = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


@given(delta, delta)
def test_ras_bounds_over_deltas(ds: float, dc: float) -> None:
    v = float(ras(ds, dc))
    assert -2.0 <= v <= 1.0


@settings(max_examples=200)
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(
    st.lists(st.floats(-30, 30), min_size=k, max_size=k),
    st.lists(st.floats(-30, 30), min_size=k, max_size=k),
    st.integers(0, k - 1))))
def test_ras_bounds_over_real_distributions(case: tuple[list[float], list[float], int]) -> None:
    from vlmrobust.metrics.uncertainty import softmax

    zo, zd, y = case
    m = pair_metrics(softmax([zo]), softmax([zd]), [y])
    assert -2.0 <= float(m.ras[0]) <= 1.0
    assert -1.0 <= float(m.delta_s[0]) <= 1.0 and -1.0 <= float(m.delta_c[0]) <= 1.0


@pytest.mark.parametrize("ds", [0.0, -0.3, -1.0])
def test_ras_upper_end(ds: float) -> None:
    assert float(ras(ds, -1.0)) == 1.0


def test_ras_lower_end() -> None:
    assert float(ras(-1.0, 1.0)) == -2.0


def test_ras_ends_reached_by_real_distributions() -> None:
    # clean: confident and wrong (C=1, S=0); corrupted: confident and right (C=0, S=0)
    m = pair_metrics([[0.0, 1.0]], [[1.0, 0.0]], [0])
    assert float(m.delta_c[0]) == -1.0 and float(m.ras[0]) == 1.0
    # The lower end (ΔC = 1 with ΔS = −1) needs a clean copy with C = 0 (p = 1 on
    # the answer, so S = 0) and S = 1 at once, which no distribution has: that
    # end is tight over the delta domain only (test_ras_lower_end).


@pytest.mark.parametrize(("ds", "dc", "expected_ras", "expected_quadrant"), [
    # degraded: ΔS>0, ΔC>0 → −ΔC only (both penalties vanish)
    (0.2, 0.3, -0.3, "degraded"),
    # overconfident: ΔS≤0, ΔC>0 → −ΔC − ΔC·(−ΔS) = −0.3 − 0.3·0.4
    (-0.4, 0.3, -0.42, "overconfident"),
    # hesitant: ΔS>0, ΔC≤0 → −ΔC − ΔS·(−ΔC) = 0.5 − 0.2·0.5
    (0.2, -0.5, 0.4, "hesitant"),
    # stable: ΔS≤0, ΔC≤0 → −ΔC = 0.5
    (-0.2, -0.5, 0.5, "stable"),
])
def test_four_quadrants_by_hand(ds: float, dc: float, expected_ras: float, expected_quadrant: str) -> None:
    assert float(ras(ds, dc)) == pytest.approx(expected_ras, abs=1e-12)
    assert QUADRANTS[int(quadrant(ds, dc))] == expected_quadrant


def test_quadrant_boundaries_are_non_positive_side() -> None:
    assert [QUADRANTS[q] for q in quadrant([0.0, 0.0, 0.1], [0.0, 0.1, 0.0])] == [
        "stable", "overconfident", "hesitant"]


def test_ras_rejects_out_of_range() -> None:
    with pytest.raises(ValueError, match="delta_c must be in"):
        ras(0.0, 1.5)
    with pytest.raises(ValueError, match="delta_s must be in"):
        ras(float("nan"), 0.0)


def test_transitions_and_delta_acc() -> None:
    o = np.array([1, 1, 0, 0, 1])
    d = np.array([1, 0, 1, 0, 1])
    assert counts(transition(o, d), ("RR", "RW", "WR", "WW")) == {"RR": 2, "RW": 1, "WR": 1, "WW": 1}
    assert delta_accuracy(o, d).tolist() == [0.0, -1.0, 1.0, 0.0, 0.0]


def test_pair_metrics_against_hand_computation() -> None:
    po = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]])
    pd = np.array([[0.3, 0.4, 0.3], [0.1, 0.1, 0.8]])
    y = np.array([0, 2])
    m = pair_metrics(po, pd, y)

    def s(p: list[float]) -> float:
        return -sum(x * np.log(x) for x in p if x > 0) / np.log(len(p))

    exp_ds = [s(pd[i].tolist()) - s(po[i].tolist()) for i in range(2)]
    # C: clean row0 right (|1-.7|=.3), corrupted row0 wrong (|0-.4|=.4); row1 clean wrong (.6), corrupted right (.2)
    exp_dc = [0.4 - 0.3, 0.2 - 0.6]
    assert np.allclose(m.delta_s, exp_ds)
    assert np.allclose(m.delta_c, exp_dc)
    exp_ras = [-dc - max(dc, 0) * max(-ds, 0) - max(ds, 0) * max(-dc, 0) for ds, dc in zip(exp_ds, exp_dc, strict=True)]
    assert np.allclose(m.ras, exp_ras)
    assert m.transition.tolist() == [1, 2]  # RW, WR
    assert np.allclose(normalized_entropy(po), [s(r.tolist()) for r in po])
    assert np.allclose(calibration_error(pd, y), [0.4, 0.2])
