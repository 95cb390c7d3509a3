"""The planted-blind-spot study at length (issue 25, Done-when), with figures.

Same world as tests/evaluation/discover/test_planted.py (planted scenes, rule answerer and
verifier, tiny text-only questioner, TRL GRPO, Eq. 5 with real MiniLM).

1. One blind spot (counting), 1,024 images: reward, FDR and the counting share
   per 10 steps.
2. Two blind spots (counting and colour), with the full reward and without
   δ_ifreq, over SEEDS, from the same questioner, on N_IMAGES images for STEPS
   steps of 4 images: no image is seen twice, so δ_emb of a failure is the
   empty-bank 1 and only δ_ifreq can tell the blind spots apart (a second
   epoch's per-image banks would pull every run back to the other blind spot).
   Counting's share of the count + colour failures per WINDOW steps and over
   the run (the questioner starts from colour, whose one phrasing it writes
   validly more often than counting's four). What is asserted, per seed:
   - full Eq. 5 finds both: each blind spot is the majority of the failures in
     some window (δ_ifreq brings the questioner back to the neglected one) and
     neither falls under MIN_FULL of the run's failures;
   - without δ_ifreq it collapses onto one: counting is the majority in no
     window and at most MAX_COLLAPSED of the last window's failures;
   - the minority's share of the run is below the full reward's.

The study was measured with TRL's `dapo` loss and β = 0 (no KL term), the
defaults of `discover train` before it followed seed 004's Eq. 1 (`grpo`,
β = 0.04), on 2 torch threads (the figures repeat only at that count:
docs/discover.md, "Determinism"); MEASURED_WITH keeps those settings, so the
figures in docs/discover.md stay this file's.

Run (about 11 min here; `tox -e perf` runs it with the other benchmarks):
  python -m pytest tests/perf/test_discover_planted_perf.py --benchmark-only -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.images import write_planted_images
from vlmrobust.evaluation.discover.planted import question_type
from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier
from vlmrobust.evaluation.discover.tiny import make_tiny_questioner
from vlmrobust.evaluation.discover.train import TrainConfig, run_train
from vlmrobust.metrics.discovery.reward import RewardConfig

pytest.importorskip("trl")
SEEDS = (0, 1, 2, 3, 4)
N_IMAGES = 2048
STEPS = 500
WINDOW = 50
MIN_FULL = 0.35
MAX_COLLAPSED = 0.2
PRIOR = {"count": 0.30, "shape": 0.25, "side": 0.30, "color": 0.15}
# not Eq. 1: the objective and threads the documented figures were measured with
MEASURED_WITH = {"loss_type": "dapo", "beta": 0.0, "threads": 2}


def _run(q: Path, images: Path, out: Path, blind: str, steps: int, lr: float, seed: int,
         use_ifreq: bool) -> dict[str, Any]:
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    cfg = TrainConfig(steps=steps, images_per_step=4, group_size=8, learning_rate=lr,
                      lr_scheduler="constant", max_completion_length=30, save_steps=10**6,
                      seed=seed, reward=RewardConfig(use_ifreq=use_ifreq), **MEASURED_WITH)
    t0 = time.perf_counter()
    rec = run_train(str(q), images, make_answerer(f"rule:blind={blind}"),
                    make_verifier("rule:planted"), out, cfg, TextEmbedder(load_minilm("cpu")),
                    device="cpu", log=lambda *a: None)
    wall = time.perf_counter() - t0
    recs = read_records(out / "journal.jsonl")
    hist = rec["history"]
    curve = [(h["step"], round(h["reward"], 3), None if h["fdr"] is None else round(h["fdr"], 3))
             for h in hist[::10]]
    return {"wall_s": wall, "steps_per_s": steps / wall, "curve": curve, "records": recs}


def _count_shares(recs: list[Any], steps: int) -> tuple[list[float], float]:
    """Counting's share of the count + colour failures per window, and over the run."""
    def share(rows: list[Any]) -> float:
        c = Counter(question_type(r.question) for r in rows if r.failure)
        return c["count"] / max(1, c["count"] + c["color"])
    windows = [share([r for r in recs if lo <= r.step < lo + WINDOW])
               for lo in range(0, steps, WINDOW)]
    return windows, share(recs)


def _study(tmp_path: Path) -> None:
    one_images = tmp_path / "images-1024"
    write_planted_images(one_images, 1024, seed=0)
    images = tmp_path / "images"
    write_planted_images(images, N_IMAGES, seed=0)
    assert STEPS * 4 <= N_IMAGES, "the two-blind-spot runs must not revisit an image"
    uniform = make_tiny_questioner(tmp_path / "q_uniform")
    one = _run(uniform, one_images, tmp_path / "one", "count", 40, 3e-3, 0, True)
    print(f"\none blind spot: {one['steps_per_s']:.2f} steps/s; (step, reward, FDR): "
          f"{one['curve']}")
    recs = one["records"]
    for lo in range(0, 40, 10):
        t = Counter(question_type(r.question) for r in recs if lo <= r.step < lo + 10 and r.valid)
        print(f"  steps {lo}-{lo + 9}: counting share of valid questions "
              f"{t['count'] / max(1, sum(t.values())):.3f}")
    assert (one["curve"][-1][2] or 0.0) > (one["curve"][0][2] or 0.0)

    skewed = make_tiny_questioner(tmp_path / "q_skewed", type_weights=PRIOR)
    minority: dict[bool, list[float]] = {True: [], False: []}
    count_ever_majority: dict[bool, list[bool]] = {True: [], False: []}
    last_window: list[float] = []
    for seed in SEEDS:
        for use_ifreq in (True, False):
            r = _run(skewed, images, tmp_path / f"two-{seed}-{use_ifreq}", "count,color",
                     STEPS, 1e-3, seed, use_ifreq)
            windows, whole = _count_shares(r["records"], STEPS)
            minority[use_ifreq].append(min(whole, 1 - whole))
            count_ever_majority[use_ifreq].append(max(windows) > 0.5)
            label = "full" if use_ifreq else "no δ_ifreq"
            print(f"two blind spots, seed {seed}, {label}: counting share of the failures per "
                  f"{WINDOW} steps {[round(w, 2) for w in windows]}; whole run {whole:.3f}; "
                  f"{r['steps_per_s']:.2f} steps/s; (step, reward, FDR) {r['curve'][::5]}")
            if use_ifreq:
                assert max(windows) > 0.5 > min(windows), (seed, windows)
            else:
                last_window.append(windows[-1])
                assert max(windows) < 0.5 and windows[-1] <= MAX_COLLAPSED, (seed, windows)
    print(f"minority blind spot's share of the run's failures, per seed: full "
          f"{[round(m, 3) for m in minority[True]]}, without δ_ifreq "
          f"{[round(m, 3) for m in minority[False]]}; counting ever the majority without "
          f"δ_ifreq: {count_ever_majority[False]}")
    assert min(minority[True]) >= MIN_FULL
    assert all(f > n for f, n in zip(minority[True], minority[False], strict=True))
    assert not any(count_ever_majority[False])
    print(f"counting's share of the last {WINDOW} steps' failures without δ_ifreq: "
          f"{[round(w, 3) for w in last_window]}")


def test_planted_blind_spots(tmp_path: Path, benchmark: Any) -> None:
    # one timed round: the study is minutes long and deterministic
    benchmark.pedantic(_study, args=(tmp_path,), rounds=1, iterations=1)
