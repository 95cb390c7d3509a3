"""Scoring a Bench-C-sized submission: 849 questions × 96 copies (clean + 19
corruptions × 5 severities) × K = 4 = 81,504 rows. Must stay well under 5 s.

Run: python -m pytest tests/perf/test_score_speed.py --benchmark-only
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vlmrobust.evaluation.scoring.dataset import score, score_tables

N_QUESTIONS = 849
N_CORRUPTIONS = 19
SEVERITIES = 5
K = 4
N_ROWS = N_QUESTIONS * (1 + N_CORRUPTIONS * SEVERITIES)


def _dataset_columns() -> dict[str, Any]:
    copies = [("none", 0)] + [(f"c{c:02d}", s) for c in range(N_CORRUPTIONS) for s in range(1, SEVERITIES + 1)]
    q = np.repeat(np.arange(N_QUESTIONS), len(copies))
    corr = np.tile(np.array([c for c, _ in copies], dtype=object), N_QUESTIONS)
    sev = np.tile(np.array([s for _, s in copies], dtype=np.int32), N_QUESTIONS)
    ids = [f"q{a}-{c}-{s}" for a, c, s in zip(q.tolist(), corr.tolist(), sev.tolist(), strict=True)]
    kappa = np.random.default_rng(0).random(N_QUESTIONS).astype(np.float32)[q]
    return {
        "id": ids, "options": [["a", "b", "c", "d"]] * N_ROWS, "answer": (q % K).astype(np.int32),
        "source_id": [f"q{a}" for a in q.tolist()], "corruption": corr.tolist(), "severity": sev,
        "kappa": kappa,
    }


def _predictions(ids: list[str]) -> pa.Table:
    logits = np.random.default_rng(1).normal(size=(N_ROWS, K)).astype(np.float32)
    flat = pa.array(logits.reshape(-1))
    offsets = pa.array(np.arange(0, N_ROWS * K + 1, K, dtype=np.int32))
    return pa.table({"id": ids, "logits": pa.ListArray.from_arrays(offsets, flat)})


MANIFEST = {"spec": {"name": "bench-c", "version": "perf"}, "configs": {"default": N_ROWS},
            "fingerprint": "perf", "sample": False}


def test_score_bench_c_in_memory(benchmark: Any) -> None:
    dataset = pa.table(_dataset_columns())
    preds = _predictions(dataset.column("id").to_pylist())
    scores = benchmark.pedantic(score_tables, args=(dataset, MANIFEST, preds), rounds=3, iterations=1)
    bc = scores["datasets"]["bench-c"]["bench_c"]
    assert len(bc["cells"]) == N_CORRUPTIONS * SEVERITIES
    assert scores["datasets"]["bench-c"]["configs"]["default"]["n"] == N_ROWS
    assert benchmark.stats.stats.max < 5.0


@pytest.fixture(scope="module")
def bench_c_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real dataset dir (vlmrobust.core.writer) whose images are one tiny PNG."""
    import datasets

    from tests.fixtures.score import bench_c_features, png
    from vlmrobust.core.writer import BuildInfo, write_dataset

    cols = _dataset_columns()
    image = {"bytes": png(0), "path": None}
    names = list(cols)

    def rows() -> Any:
        for i in range(N_ROWS):
            row = {n: cols[n][i] for n in names}
            row.update(image=image, question="q?", source="perf", category="perf")
            yield row

    features = bench_c_features()
    assert isinstance(features, datasets.Features)
    out = tmp_path_factory.mktemp("perf") / "bench-c"
    write_dataset(out, configs={"default": rows()}, features=features, card="perf",
                  info=BuildInfo("bench-c", "perf", 0), rows_per_shard=20_000)
    return out


def test_score_bench_c_end_to_end(benchmark: Any, bench_c_dir: Path, tmp_path: Path) -> None:
    from vlmrobust.core.datadir import read_table

    ids = read_table(bench_c_dir, "default", columns=["id"]).column("id").to_pylist()
    pred_path = tmp_path / "sub" / "predictions.parquet"
    pred_path.parent.mkdir()
    pq.write_table(_predictions(ids), pred_path)
    out = tmp_path / "scores.json"
    benchmark.pedantic(score, args=(bench_c_dir, pred_path, out), rounds=2, iterations=1)
    assert out.is_file()
    assert benchmark.stats.stats.max < 5.0
