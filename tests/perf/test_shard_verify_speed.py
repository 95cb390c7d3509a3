"""What checking the data shards costs (issue 22.6): ``validate``/``score`` and
``leaderboard build`` hash every shard against the manifest's sha256 before
reading the dataset's columns (the leaderboard once per dataset, whatever the
number of submissions: its dataset indexes are cached).

Measured on a Bench-C-like dataset of incompressible 262 KB image payloads (a
500×375 PNG at zlib level 4 is 0.466 of its 562,500 raw bytes, README), and
extrapolated to the paper's size: 849 questions × 96 copies = 81,504 rows,
about 21.4 GB. Printed: MB/s, the index read alone, and the paper-size seconds.

Run: python -m pytest tests/perf/test_shard_verify_speed.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.score import bench_c_features
from vlmrobust.core.datadir import read_table, verify_shards
from vlmrobust.core.writer import BuildInfo, write_dataset

N_ROWS = int(os.environ.get("VLMROBUST_PERF_SHARD_ROWS", "384"))
PAYLOAD = 262_000
PAPER_ROWS = 849 * 96


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = [{
        "id": f"q{i // 96}/{i % 96}", "image": {"bytes": rng.bytes(PAYLOAD), "path": None},
        "question": "q?", "options": ["a", "b", "c", "d"], "answer": 0,
        "source_id": str(i // 96), "source": "s", "category": "c",
        "corruption": "none" if i % 96 == 0 else "fog", "severity": min(i % 96, 5),
        "kappa": 0.5} for i in range(N_ROWS)]
    out = tmp_path_factory.mktemp("shards") / "bench-c"
    write_dataset(out, configs={"default": rows}, features=bench_c_features(), card="perf",
                  info=BuildInfo("bench-c", "0.1.0", 0), shard_bytes=32 * 2**20)
    return out


def test_shard_verification_cost(benchmark: Any, dataset: Path) -> None:
    nbytes = benchmark.pedantic(verify_shards, args=(dataset,), rounds=3, iterations=1)
    assert nbytes == sum(p.stat().st_size for p in (dataset / "data").rglob("*.parquet"))
    seconds = benchmark.stats.stats.min
    t0 = time.perf_counter()
    cols = ["id", "options", "answer", "source", "source_id", "corruption", "severity", "kappa"]
    assert read_table(dataset, "default", cols).num_rows == N_ROWS
    index_read = time.perf_counter() - t0
    rate = nbytes / seconds
    paper_bytes = PAPER_ROWS * nbytes / N_ROWS
    print(f"\nshard check: {nbytes / 1e6:.0f} MB in {seconds:.3f} s = {rate / 1e6:.0f} MB/s "
          f"(index columns read: {index_read:.3f} s); paper size ({PAPER_ROWS} rows, "
          f"{paper_bytes / 1e9:.1f} GB): {paper_bytes / rate:.0f} s once per dataset")
    assert rate > 0
