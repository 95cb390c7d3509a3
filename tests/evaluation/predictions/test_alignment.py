"""evaluation/predictions/alignment.py: logits in dataset order, (N, K_max) with
−inf padding, against a row-by-row reconstruction; whole-label-space files
(every row K_max logits: classification, OOD) take a one-gather path (issue
37.2) that gives the same matrix as the block path."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from vlmrobust.evaluation.predictions import alignment
from vlmrobust.evaluation.predictions.read import PredictionsFile


def _case(rng: np.random.Generator, n: int, k_max: int, ragged: bool, dtype: Any
          ) -> tuple[Any, PredictionsFile, np.ndarray]:
    n_options = rng.integers(2, k_max + 1, n) if ragged else np.full(n, k_max)
    n_options[0] = k_max
    flat = rng.normal(size=int(n_options.sum())).astype(dtype)
    pf = PredictionsFile(path=Path("p.parquet"), format="parquet",
                         ids=np.array([f"r{i}" for i in range(n)], dtype=object),
                         logits_len=n_options.astype(np.int64), logits_flat=flat, prediction=None)
    index = SimpleNamespace(n_rows=n, n_options=n_options)
    return index, pf, rng.permutation(n).astype(np.int64)


def _expected(pf: PredictionsFile, row_of: np.ndarray, k_max: int) -> np.ndarray:
    assert pf.logits_len is not None and pf.logits_flat is not None
    starts = np.concatenate(([0], np.cumsum(pf.logits_len)))
    out = np.full((row_of.size, k_max), -np.inf)
    for i, r in enumerate(row_of.tolist()):
        row = pf.logits_flat[starts[r]:starts[r] + pf.logits_len[r]]
        out[i, :row.size] = row
    return out


@pytest.mark.parametrize("ragged", [False, True], ids=["whole-label-space", "ragged"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cells", [alignment.ALIGN_CELLS, 7])  # one block; many blocks
def test_aligned_logits_equal_a_row_by_row_reconstruction(
        ragged: bool, dtype: Any, cells: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alignment, "ALIGN_CELLS", cells)
    rng = np.random.default_rng(3)
    index, pf, row_of = _case(rng, 37, 9, ragged, dtype)
    got = alignment._align_values(index, pf, row_of)
    want = _expected(pf, row_of, 9)
    assert got.logits is not None and got.logits.dtype == np.float64
    assert np.array_equal(got.logits, want)
    assert got.predicted.tolist() == want.argmax(axis=1).tolist()
    assert got.row_of is row_of


def test_whole_label_space_alignment_does_not_alias_the_file() -> None:
    index, pf, row_of = _case(np.random.default_rng(0), 5, 4, False, np.float64)
    got = alignment._align_values(index, pf, row_of)
    assert got.logits is not None and pf.logits_flat is not None
    got.logits[:] = 0.0  # scorers may work in place: the file's values stay
    assert np.abs(pf.logits_flat).sum() > 0
