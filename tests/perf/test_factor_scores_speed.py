"""ImageNet-X and shape-bias scoring at seed 001's sizes: the top-factor file
read (48,868 lines, prototypes removed), factor accuracies over all 50,000
ImageNet val rows joined on source_file, and the shape-bias block over 1,280
cue-conflict stimuli with its 1,000-draw bootstrap. Each must stay well under
a second once the annotations are loaded.

Run: python -m pytest tests/perf/test_factor_scores_speed.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from vlmrobust.core.imagenet_x import load, packaged_annotations


def test_factor_block_over_imagenet_val(benchmark: Any) -> None:
    from vlmrobust.evaluation.scoring.factors import factor_block
    from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

    path = packaged_annotations("top")
    if path is None:
        pytest.skip("imagenet-x is not installed (the `factors` extra)")
    load.cache_clear()
    t0 = time.perf_counter()
    ann = load(path)
    read_s = time.perf_counter() - t0
    n = 50_000
    files = np.array([f"n00000000/ILSVRC2012_val_{i:08d}.JPEG" for i in range(1, n + 1)],
                     dtype=object)
    index = DatasetIndex(manifest={}, configs=("imagenet-val",),
                         ids=np.array([str(i) for i in range(n)], dtype=object),
                         config=np.full(n, "imagenet-val", dtype=object),
                         n_options=np.full(n, 1000, dtype=np.int64),
                         answer=np.zeros(n, dtype=np.int64),
                         columns={"variant": np.full(n, "imagenet-val", dtype=object),
                                  "source_file": files})
    correct = np.random.default_rng(0).random(n) < 0.8
    rows = np.arange(n)
    out = benchmark.pedantic(factor_block, args=(index, rows, correct, ann), rounds=3,
                             iterations=1)
    assert out is not None and out["annotated"]["n"] == len(ann.factors) == 46_110
    print(f"\nImageNet-X top-factor read: {read_s:.2f} s; factor block over {n:,} rows: "
          f"{benchmark.stats.stats.mean:.3f} s")
    assert benchmark.stats.stats.max < 5.0


def test_shape_bias_block_over_1280_stimuli(benchmark: Any) -> None:
    from vlmrobust.builders.cue_conflict.categories import CATEGORIES
    from vlmrobust.evaluation.scoring.shape_bias import shape_bias_config

    rng = np.random.default_rng(0)
    shape = np.repeat(np.arange(16), 80)
    texture = rng.integers(0, 16, 1280)
    decided = np.where(rng.random(1280) < 0.5, shape, texture)
    out = benchmark.pedantic(shape_bias_config, args=(decided, shape, texture, CATEGORIES),
                             rounds=3, iterations=1)
    assert out is not None and out["n"] == 1280
    print(f"\nshape-bias block over 1,280 stimuli: {benchmark.stats.stats.mean:.3f} s")
    assert benchmark.stats.stats.max < 5.0
