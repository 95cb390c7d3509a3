"""Paired tests at the paper's Bench-C size: 20 models × 849 questions × 96
copies (81,504 rows), every adjacent pair of the Bench-C Acc, ΔAcc and RAS
columns bootstrapped over source questions (1,000 resamples), and the pairing
built once for the shared dataset index. Printed: seconds per board.

Run: python -m pytest tests/perf/test_pairwise_speed.py --benchmark-only -s
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from tests.perf.test_score_speed import MANIFEST, N_ROWS, _dataset_columns
from vlmrobust.evaluation.scoring.bench_c.stats import Pairing, pairing_for
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex
from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.fits.pairwise import adjacent_tests
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.evidence import DatasetEvidence

N_MODELS = 20


def _board(root: Path) -> Any:
    index = DatasetIndex.from_table(pa.table(_dataset_columns()), MANIFEST)
    t0 = time.perf_counter()
    pairing = pairing_for(index)
    print(f"\npairing of {N_ROWS} rows: {time.perf_counter() - t0:.2f} s")
    assert pairing_for(index) is pairing and isinstance(pairing, Pairing)
    for i in range(N_MODELS):
        write_submission(root, *synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3]))
    subs = []
    for i, s in enumerate(load_submissions(root)):
        rng = np.random.default_rng(i)
        ev = DatasetEvidence("a" * 64, format(i, "x").rjust(64, "0"), f"m{i}", None, None, {},
                             index=index, correct=rng.random(N_ROWS) < 0.3 + 0.02 * i,
                             ras=rng.uniform(-1, 1, pairing.d_rows.size))
        subs.append(dataclasses.replace(s, evidence={"bench-c": ev}))
    return aggregate(tuple(subs), BaselineSpec(version="perf", n_bootstrap=50))


def test_pairwise_bench_c_paper_size(benchmark: Any, tmp_path: Path) -> None:
    lb = _board(tmp_path)
    tests = benchmark.pedantic(adjacent_tests, args=(lb,), rounds=2, iterations=1)
    bench_c = [t for t in tests if t.column.startswith("bench-c:")]
    assert len(bench_c) == 3 * (N_MODELS - 1)
    assert all(t.n_shared == 849 and t.p_value is not None for t in bench_c)
    print(f"{len(tests)} paired tests ({len(bench_c)} Bench-C, clustered) in "
          f"{benchmark.stats.stats.mean:.2f} s per board")
