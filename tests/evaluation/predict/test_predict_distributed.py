"""Two CPU processes under torchrun (gloo): rows are sharded by rank and rank 0
merges; the merged file equals a single-process run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tests.fixtures.predict import write_mcq
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.distributed import DistContext
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.write import partial_dir

MODEL = "classifier:efficientnet-lite0"


def test_round_robin_covers_every_row_once() -> None:
    world = 3
    owners = [[r for r in range(world) if DistContext(r, world).owns(i)] for i in range(20)]
    assert all(len(o) == 1 for o in owners)
    assert [o[0] for o in owners[:6]] == [0, 1, 2, 0, 1, 2]


def test_torchrun_two_processes_equals_single(tmp_path: Path) -> None:
    dataset = write_mcq(tmp_path / "ds", {"photo": 5, "other": 4})
    single = predict_dataset(RunSpec(
        MODEL, dataset, tmp_path / "single" / "predictions.parquet", progress=False,
        backend=BackendOptions(batch_size=2, device="cpu")))
    out = tmp_path / "multi" / "predictions.parquet"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(Path(__file__).parents[3]))
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "vlmrobust", "predict", "--model", MODEL, "--dataset", str(dataset),
         "--out", str(out), "--batch-size", "2", "--device", "cpu", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = pq.read_table(single), pq.read_table(out)
    assert a.column("id").to_pylist() == b.column("id").to_pylist()
    assert a.column("config").to_pylist() == b.column("config").to_pylist()
    for x, y in zip(a.column("logits").to_pylist(), b.column("logits").to_pylist(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    meta = read_prediction_meta(out)
    assert meta["world_size"] == 2 and meta["n_rows"] == 9
    assert not partial_dir(out).exists()
