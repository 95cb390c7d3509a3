"""Seed 002 Fig. 4's relative error gap (issue 33 item 6): the metric against
its closed form, its edge cases and argument checks, and the leaderboard's
choice of reference model."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from vlmrobust.leaderboard.charts.error_gaps import error_gaps, reference_model
from vlmrobust.metrics.lines.error_gap import relative_error_gap


def test_gap_is_the_ratio_of_error_rates() -> None:
    rng = np.random.default_rng(3)
    acc, ref = rng.uniform(0, 0.99, 50), rng.uniform(0, 0.99, 50)
    np.testing.assert_allclose(relative_error_gap(acc, ref), (1 - acc) / (1 - ref), rtol=1e-12)
    assert relative_error_gap(0.9, 0.9) == pytest.approx(1.0)
    assert np.isinf(relative_error_gap([0.7], [1.0])).all() and np.isnan(relative_error_gap(1.0, 1.0))


@pytest.mark.parametrize(("acc", "ref", "msg"), [
    ([1.2], [0.5], "accuracy must hold accuracies in \\[0, 1\\], got 1.2"),
    ([0.5], [float("nan")], "reference_accuracy must hold"),
    ([0.5, 0.6], [0.5], "shape"),
    ([[0.5]], [[0.5]], "1-D"),
])
def test_bad_arguments_are_named(acc: list, ref: list, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        relative_error_gap(acc, ref)


def _s(name: str, family: str) -> SimpleNamespace:
    return SimpleNamespace(model_id=name, meta=SimpleNamespace(name=name, family=family))


def test_reference_is_the_clip_most_accurate_at_the_largest_k() -> None:
    a, b, v, cls = _s("clip-a", "clip"), _s("clip-b", "clip"), _s("vlm", "vlm"), _s("cls", "classifier")
    rows = [(a, {2: 0.99, 100: 0.80}), (b, {2: 0.95, 100: 0.90}), (v, {2: 0.90, 5: 0.8, 100: 0.5}),
            (cls, {2: 0.999, 100: 0.95})]
    assert reference_model(rows) is b  # classifiers are no reference; K = 100 decides
    gaps = error_gaps(rows)
    assert gaps is not None and gaps.reference is b
    got = {s.model_id: g for s, g in gaps.rows}
    assert set(got) == {"clip-a", "vlm", "cls"} and set(got["vlm"]) == {2, 100}  # K = 5: no reference
    v = "vlm"
    assert got[v][2] == pytest.approx(0.10 / 0.05) and got[v][100] == pytest.approx(0.5 / 0.1)
    assert error_gaps([(_s("vlm", "vlm"), {2: 0.9})]) is None
