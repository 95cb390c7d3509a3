"""κ-weighted aggregation against a plain-Python loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlmrobust.metrics.bench_c.aggregate import (
    kappa_weighted_cell_means,
    kappa_weighted_mean,
    mean_over_cells,
)


@given(st.lists(st.tuples(st.floats(-2, 1), st.floats(0, 1), st.integers(0, 4)), min_size=1, max_size=40))
def test_cell_means_match_loop(rows: list[tuple[float, float, int]]) -> None:
    x, k, c = (np.array(v) for v in zip(*rows, strict=True))
    got = kappa_weighted_cell_means(x, k, c, 5)
    for cell in range(5):
        sel = c == cell
        if not sel.any():
            assert np.isnan(got[cell])
        elif k[sel].sum() > 0:
            assert got[cell] == pytest.approx(sum(k[sel] * x[sel]) / sum(k[sel]), abs=1e-9)
        else:
            assert got[cell] == pytest.approx(x[sel].mean(), abs=1e-9)


def test_normaliser_keeps_scale_independent_of_size() -> None:
    # Without Σκ the value would double with twice as many identical questions.
    x, k = np.full(10, 0.5), np.full(10, 0.8)
    assert kappa_weighted_mean(x, k) == kappa_weighted_mean(np.tile(x, 2), np.tile(k, 2)) == 0.5


def test_mean_over_cells_skips_empty() -> None:
    assert mean_over_cells([0.2, np.nan, 0.4]) == pytest.approx(0.3)
    assert np.isnan(mean_over_cells([np.nan]))


def test_checks() -> None:
    with pytest.raises(ValueError, match="kappa must be finite and >= 0"):
        kappa_weighted_cell_means([1.0], [-1.0], [0], 1)
    with pytest.raises(ValueError, match="cells must be in"):
        kappa_weighted_cell_means([1.0], [1.0], [3], 2)
