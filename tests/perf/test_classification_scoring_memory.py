"""Scoring 50,000 × 1,000 float32 logits over the full label space (issue 23):
peak RSS under 2 GB, time linear in rows.

A child process builds the logits (200 MB, filled in place chunk by chunk),
then runs what the scorer needs for one reference set: seed 001's temperature
fitted on a seeded half, accuracy/ECE/NLL before and after it on the held-out
half, and per-class accuracy. Its peak RSS (VmHWM / ru_maxrss) is printed with
the RSS the input alone took; the same run on 12,500 rows gives the time per
row at a quarter of the size. The float64 K-option functions of
metrics/calibration.py would hold ~7 full float64 copies (2.8 GB) here.

Run: python -m pytest tests/perf/test_classification_scoring_memory.py \\
         --benchmark-only -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from tests.perf.child import run_child

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import numpy as np
    from vlmrobust.metrics.classification import (half_temperature, per_class_accuracy,
                                                  row_scores, score_logits)

    from tests.perf.child import overconfident_logits, peak_rss_mb

    n, c = int(sys.argv[1]), 1000
    z, y = overconfident_logits(n, c)
    input_mb = peak_rss_mb()
    t0 = time.perf_counter()
    fit = half_temperature(z, y, seed=0)
    held_z, held_y = z[fit.held_out_rows], y[fit.held_out_rows]
    raw = score_logits(held_z, held_y)
    scaled = score_logits(held_z, held_y, temperature=fit.temperature)
    pca = per_class_accuracy(row_scores(z, y).prediction, y, c)
    seconds = time.perf_counter() - t0
    print(json.dumps({"rows": n, "classes": c, "seconds": seconds, "input_mb": input_mb,
                      "peak_rss_mb": peak_rss_mb(),
                      "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "temperature": fit.temperature, "acc": raw.accuracy,
                      "ece": raw.ece, "ece_ts": scaled.ece, "nll": raw.nll, "nll_ts": scaled.nll,
                      "mean_per_class": float(np.nanmean(pca))}))
""")


def _run(rows: int) -> dict[str, Any]:
    return run_child(CHILD, str(rows))


def test_full_label_scoring_50k_x_1000_peak_rss(benchmark: Any) -> None:
    small = _run(12_500)
    stats = benchmark.pedantic(_run, args=(50_000,), rounds=1, iterations=1)
    per_row_small = small["seconds"] / small["rows"] * 1e6
    per_row = stats["seconds"] / stats["rows"] * 1e6
    print(f"\n50,000 × 1,000 float32 logits: {stats['seconds']:.1f} s "
          f"({per_row:.1f} µs/row; 12,500 rows: {small['seconds']:.1f} s, {per_row_small:.1f} µs/row), "
          f"peak RSS {stats['peak_rss_mb']:.0f} MB (ru_maxrss {stats['ru_maxrss_mb']:.0f} MB; "
          f"{stats['input_mb']:.0f} MB after building the input); T = {stats['temperature']:.3f}, "
          f"acc {stats['acc']:.4f}, ECE {stats['ece']:.4f} -> {stats['ece_ts']:.4f}, "
          f"NLL {stats['nll']:.4f} -> {stats['nll_ts']:.4f}")
    benchmark.extra_info.update(stats)
    assert stats["temperature"] is not None and stats["ece_ts"] < stats["ece"]
    if stats["peak_rss_mb"] >= 2048:
        pytest.fail(f"peak RSS {stats['peak_rss_mb']:.0f} MB >= 2 GB")
