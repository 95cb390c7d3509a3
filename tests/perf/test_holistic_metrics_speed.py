"""OOD scoring and retrieval at seed 001's sizes: time and peak memory.

Targets (issue 24): OOD metrics on 50k ID + 50k OOD rows (AUROC, FPR@95,
NINCO-style class-mean AUROC over 64 classes, and a 1,000-replicate bootstrap
CI), and Recall@K on 5k images × 25k captions (MSCOCO 5k test) from 512-d
embeddings, in bounded memory: the similarity is computed in blocks, so peak
RSS stays well under the 1 GB that the full 5k × 25k float64 matrix alone takes.
Each part runs in a child process whose own peak RSS (VmHWM) is read.

Run: python -m pytest tests/perf/test_holistic_metrics_speed.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.perf.child import run_child

PEAK = textwrap.dedent("""
    from tests.perf.child import peak_rss_mb
""")

OOD = PEAK + textwrap.dedent("""
    import json, time
    import numpy as np
    from vlmrobust.metrics.holistic.ood import auroc, class_mean_auroc, fpr_at_tpr, ood_bootstrap_ci
    from vlmrobust.metrics.holistic.ood_scores import msp
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    x = msp(rng.normal(size=(50_000, 100)) * 3)  # ID scores from 100-way logits
    y = msp(rng.normal(size=(50_000, 100)) * 2)
    classes = rng.integers(0, 64, 50_000)
    t1 = time.perf_counter()
    a, f, c = auroc(x, y), fpr_at_tpr(x, y), class_mean_auroc(x, y, classes)
    t2 = time.perf_counter()
    ci = ood_bootstrap_ci(x, y, "auroc", n_resamples=1000)
    t3 = time.perf_counter()
    print(json.dumps({"scores_s": t1 - t0, "metrics_s": t2 - t1, "bootstrap_s": t3 - t2,
                      "auroc": a, "fpr95": f, "class_mean": c, "ci": ci, "peak_mb": peak_rss_mb()}))
""")

RETRIEVAL = PEAK + textwrap.dedent("""
    import json, time
    import numpy as np
    from vlmrobust.metrics.holistic.retrieval import recall_at_k, retrieval_ranks
    rng = np.random.default_rng(0)
    img = rng.normal(size=(5_000, 512)).astype(np.float32)
    ti = np.repeat(np.arange(5_000), 5)
    txt = img[ti] + rng.normal(size=(25_000, 512)).astype(np.float32) * 8.0
    base = peak_rss_mb()
    t0 = time.perf_counter()
    i2t, t2i = retrieval_ranks(img, txt, ti)
    t1 = time.perf_counter()
    print(json.dumps({"seconds": t1 - t0, "peak_mb": peak_rss_mb(), "inputs_peak_mb": base,
                      "i2t_r5": recall_at_k(i2t, 5), "t2i_r5": recall_at_k(t2i, 5)}))
""")


def test_ood_metrics_50k_by_50k(benchmark: Any) -> None:
    stats = benchmark.pedantic(run_child, args=(OOD,), rounds=1, iterations=1)
    print(f"\nOOD 50k ID + 50k OOD: scores {stats['scores_s']:.2f} s, AUROC + FPR@95 + "
          f"class-mean {stats['metrics_s']:.2f} s, 1,000-replicate CI {stats['bootstrap_s']:.1f} s, "
          f"peak RSS {stats['peak_mb']:.0f} MB (AUROC {stats['auroc']:.3f}, CI {stats['ci']})")
    benchmark.extra_info.update(stats)
    assert stats["ci"][0] <= stats["auroc"] <= stats["ci"][1]
    if stats["peak_mb"] >= 1024:
        pytest.fail(f"peak RSS {stats['peak_mb']:.0f} MB >= 1 GB")


def test_retrieval_5k_images_by_25k_captions(benchmark: Any) -> None:
    stats = benchmark.pedantic(run_child, args=(RETRIEVAL,), rounds=1, iterations=1)
    print(f"\nretrieval 5k × 25k (512-d): {stats['seconds']:.1f} s, peak RSS "
          f"{stats['peak_mb']:.0f} MB (inputs alone {stats['inputs_peak_mb']:.0f} MB; the full "
          f"float64 matrix would be 954 MB), R@5 i→t {stats['i2t_r5']:.3f} t→i {stats['t2i_r5']:.3f}")
    benchmark.extra_info.update(stats)
    if stats["peak_mb"] >= 954:
        pytest.fail(f"peak RSS {stats['peak_mb']:.0f} MB: no better than the full matrix")
