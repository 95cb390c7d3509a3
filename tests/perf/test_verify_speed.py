"""Benchmark: the leaderboard re-scores every submission from its predictions
(leaderboard/trust/verify.py). 20 models on a Bench-C table of 1,000 questions × 5
copies (5,000 rows) and a 16-row ImageNet-MCQ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vlmrobust
from tests.fixtures.score import bench_c_features, bench_c_rows, dataset_rows, write_mcq
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.submissions import add_submission
from vlmrobust.leaderboard.trust.verify import load_verified_submissions

N_MODELS = 20
N_QUESTIONS = 1000


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("verify")
    bc = root / "datasets" / "bench-c"
    write_dataset(bc, configs={"default": bench_c_rows(N_QUESTIONS)}, features=bench_c_features(),
                  card="perf", info=BuildInfo("bench-c", "0.1.0", 0, sample=True))
    datasets = [write_mcq(root / "datasets" / "imagenet-mcq"), bc]
    for i in range(N_MODELS):
        for ds in datasets:
            rows = dataset_rows(ds)
            rng = np.random.default_rng(i)
            logits = [rng.normal(size=r["k"]).tolist() for r in rows]
            p = vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits, model=f"m{i}",
                                            family="clip", out=root / "p" / f"{i}-{ds.name}.parquet")
            add_submission(root / "submissions", f"model-{i}", ds, p)
    return root / "submissions", datasets


def test_verify_20_submissions(benchmark: Any, board: tuple[Path, list[Path]]) -> None:
    subs, datasets = board
    out = benchmark.pedantic(load_verified_submissions, args=(subs,),
                             kwargs={"datasets": datasets}, rounds=2, iterations=1)
    assert len(out) == N_MODELS
