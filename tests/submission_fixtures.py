"""Real submissions on tiny hand-written datasets: predictions written with
vlmrobust.write_predictions and stored with `submit`, so that the leaderboard
can re-score them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import vlmrobust
from tests.score_fixtures import dataset_rows, write_bench_c, write_mcq
from vlmrobust.evaluation.submissions import add_submission


def write_datasets(root: Path) -> list[Path]:
    return [write_mcq(root / "imagenet-mcq"), write_bench_c(root / "bench-c")]


def predictions_for(ds: Path, out: Path, skill: float, seed: int, model: str,
                    family: str = "clip") -> Path:
    rows = dataset_rows(ds)
    rng = np.random.default_rng(seed)
    logits = []
    for r in rows:
        z = rng.normal(size=r["k"])
        z[r["answer"]] += skill
        logits.append(z.round(4).tolist())
    # classifiers are ImageNet-1k-trained here: the reference line's models
    groups = {"training_data": "imagenet-1k"} if family == "classifier" else None
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows], logits, model=model,
                                       family=family, out=out, groups=groups)


def real_submissions(tmp: Path, n: int) -> tuple[Path, list[Path]]:
    """``n`` models (model-0 …) each submitted on both datasets; returns
    (submissions folder, dataset directories)."""
    datasets = write_datasets(tmp / "datasets")
    subs = tmp / "submissions"
    for i in range(n):
        for j, ds in enumerate(datasets):
            p = predictions_for(ds, tmp / "preds" / f"m{i}-{j}.parquet", 0.5 + i, 10 * i + j,
                                model=f"toy-{i}", family=("clip", "vlm", "classifier")[i % 3])
            add_submission(subs, f"model-{i}", ds, p)
    return subs, datasets
