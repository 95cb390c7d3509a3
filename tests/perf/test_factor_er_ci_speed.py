"""Factor-level ER intervals at seed 001's sizes: 100 models (40 of them on the
reference line) on all 46,110 annotated ImageNet val images, seed 001's 10
factors with ImageNet-X's own top-factor counts, 1,000 joint resamples of
images and reference models (leaderboard/fits/factor_intervals.py). It runs on every
leaderboard build, once per source config. With seed 001's Huber lines (the
default holistic_fit) each resample's line is an IRLS fit: 2.8 s on this
machine with 2 shared cores (least squares: 1.0 s); only the resamples still
iterating are refitted, which took it from 4.7 s.

Run: python -m pytest tests/perf/test_factor_er_ci_speed.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vlmrobust.leaderboard.fits.factor_intervals import factor_er_intervals
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.metrics.lines.factor_er import factor_effective_robustness
from vlmrobust.metrics.lines.factors import NAMED_FACTORS

# images per top factor over ImageNet val, prototypes removed (README, ImageNet-X)
N_FACTOR = {"pose": 15064, "background": 14751, "color": 6150, "pattern": 5972, "smaller": 1450,
            "shape": 679, "partial_view": 638, "subcategory": 585, "texture": 282, "larger": 150}
N_ANNOTATED = 46_110


def _results(n_models: int) -> dict[str, dict[str, tuple[int, float | None]]]:
    """Consistent counts: the overall accuracy is the factors' correct images
    plus the other images' at the model's base rate."""
    rng = np.random.default_rng(0)
    out = {}
    for i in range(n_models):
        base = rng.uniform(0.5, 0.9)
        res: dict[str, tuple[int, float | None]] = {}
        correct = 0
        for f in NAMED_FACTORS:
            c = round(min(1.0, max(0.0, base + rng.normal(0, 0.05))) * N_FACTOR[f])
            res[f] = (N_FACTOR[f], c / N_FACTOR[f])
            correct += c
        correct += round(base * (N_ANNOTATED - sum(N_FACTOR.values())))
        res["annotated"] = (N_ANNOTATED, correct / N_ANNOTATED)
        out[f"m{i:03d}"] = res
    return out


def test_factor_er_intervals_for_100_models(benchmark: Any) -> None:
    results = _results(100)
    base = sorted(results)[:40]
    spec = BaselineSpec(version="perf", n_bootstrap=1000)
    overall = {m: r["annotated"][1] for m, r in results.items()}
    accs = {m: {f: r[f][1] for f in NAMED_FACTORS} for m, r in results.items()}
    lines = factor_effective_robustness(overall, accs, base, NAMED_FACTORS)

    def run() -> dict[str, Any]:
        return factor_er_intervals(results, lines, NAMED_FACTORS, spec, "classification",
                                   "imagenet-val")

    cis = benchmark.pedantic(run, rounds=3, iterations=1)
    n_ci = sum(ci is not None for per in cis.values() for ci, _ in per.values())
    assert n_ci == 100 * len(NAMED_FACTORS)
    print(f"\nfactor-ER intervals, 100 models x 10 factors x 1,000 resamples: "
          f"{benchmark.stats.stats.mean:.3f} s")
    assert benchmark.stats.stats.max < 5.0
