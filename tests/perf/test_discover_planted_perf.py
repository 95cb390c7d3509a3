"""The planted-blind-spot study at length (issue 25, Done-when), with figures.

Same world as tests/test_discover_planted.py (planted scenes, rule answerer and
verifier, tiny text-only questioner, TRL GRPO, Eq. 5 with real MiniLM), on 1,024
images so that images are rarely revisited within a run:

1. one blind spot (counting): reward, FDR and the counting share per 10 steps;
2. two blind spots (counting and colour) from a questioner whose prior asks
   colour less often (weights count .30, shape .25, side .30, colour .15), with
   the full reward and without δ_ifreq, over SEEDS: the share of each blind
   spot among the failures of the last 20 steps. The minority share is the
   figure of merit ("finds both" vs "collapses onto one", seed 004 Table 4).

Run: python -m pytest tests/perf/test_discover_planted_perf.py -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.images import write_planted_images
from vlmrobust.evaluation.discover.planted import question_type
from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier
from vlmrobust.evaluation.discover.tiny import make_tiny_questioner
from vlmrobust.evaluation.discover.train import TrainConfig, run_train
from vlmrobust.metrics.discovery_reward import RewardConfig

pytest.importorskip("trl")
SEEDS = (0, 1, 2)
STEPS = 150
PRIOR = {"count": 0.30, "shape": 0.25, "side": 0.30, "color": 0.15}


def _run(q: Path, images: Path, out: Path, blind: str, steps: int, lr: float, seed: int,
         use_ifreq: bool) -> dict[str, Any]:
    from vlmrobust.models.minilm import TextEmbedder, load_minilm

    cfg = TrainConfig(steps=steps, images_per_step=4, group_size=8, learning_rate=lr,
                      lr_scheduler="constant", max_completion_length=30, save_steps=10**6,
                      seed=seed, reward=RewardConfig(use_ifreq=use_ifreq))
    t0 = time.perf_counter()
    rec = run_train(str(q), images, make_answerer(f"rule:blind={blind}"),
                    make_verifier("rule:planted"), out, cfg, TextEmbedder(load_minilm("cpu")),
                    device="cpu", log=lambda *a: None)
    wall = time.perf_counter() - t0
    recs = read_records(out / "journal.jsonl")
    fails = Counter(question_type(r.question) for r in recs
                    if r.failure and r.step >= steps - 20)
    total = sum(fails.values()) or 1
    hist = rec["history"]
    curve = [(h["step"], round(h["reward"], 3), round(h["fdr"], 3)) for h in hist[::10]]
    return {"wall_s": wall, "steps_per_s": steps / wall, "curve": curve,
            "shares": {k: v / total for k, v in fails.items()}, "records": recs}


def test_planted_blind_spots(tmp_path: Path) -> None:
    images = tmp_path / "images"
    write_planted_images(images, 1024, seed=0)
    uniform = make_tiny_questioner(tmp_path / "q_uniform")
    one = _run(uniform, images, tmp_path / "one", "count", 40, 3e-3, 0, True)
    print(f"\none blind spot: {one['steps_per_s']:.2f} steps/s; (step, reward, FDR): "
          f"{one['curve']}")
    recs = one["records"]
    for lo in range(0, 40, 10):
        t = Counter(question_type(r.question) for r in recs if lo <= r.step < lo + 10 and r.valid)
        print(f"  steps {lo}-{lo + 9}: counting share of valid questions "
              f"{t['count'] / max(1, sum(t.values())):.3f}")
    assert one["curve"][-1][2] > one["curve"][0][2]

    skewed = make_tiny_questioner(tmp_path / "q_skewed", type_weights=PRIOR)
    minority: dict[bool, list[float]] = {True: [], False: []}
    for seed in SEEDS:
        for use_ifreq in (True, False):
            r = _run(skewed, images, tmp_path / f"two-{seed}-{use_ifreq}", "count,color",
                     STEPS, 1e-3, seed, use_ifreq)
            shares = {t: round(r["shares"].get(t, 0.0), 3) for t in ("count", "color")}
            minority[use_ifreq].append(min(shares.values()))
            print(f"two blind spots, seed {seed}, {'full' if use_ifreq else 'no δ_ifreq'}: "
                  f"failure shares (last 20 steps) {shares}; {r['steps_per_s']:.2f} steps/s; "
                  f"curve {r['curve'][::3]}")
    print(f"minority blind-spot share, mean over seeds: full "
          f"{np.mean(minority[True]):.3f}, without δ_ifreq {np.mean(minority[False]):.3f}")
    assert np.mean(minority[True]) > np.mean(minority[False])
