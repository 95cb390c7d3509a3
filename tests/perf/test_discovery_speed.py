"""Seed 004 at the paper's scale: the Eq. 5 reward of one GRPO batch against
memory banks after a long run, and the evaluation metrics of a 10k-question
run (MiniLM's 384 dimensions). Prints completions and questions per second.

Banks: 1,000 images (the paper's COCO subset) with 50 banked failures each and
5,000 distinct prefixes. Batch: 8 images × a group of 8 completions × k = 2.

Run: python -m pytest tests/perf/test_discovery_speed.py --benchmark-only -s
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vlmrobust.metrics.discovery.reward import DiscoveryReward
from vlmrobust.metrics.discovery.scores import fdr, prefix_entropy, qvr, vendi_score

D = 384
N_IMAGES = 1000
PER_IMAGE = 50
BATCH_IMAGES, GROUP, K = 8, 8, 2
N_EVAL = 10_000


def _banks(rng: np.random.Generator) -> DiscoveryReward:
    state = {
        "images": np.array([f"img{i}" for i in range(N_IMAGES)]),
        "offsets": np.arange(0, N_IMAGES * PER_IMAGE + 1, PER_IMAGE),
        "embeddings": rng.normal(size=(N_IMAGES * PER_IMAGE, D)),
        "prefixes": np.array([f"w{i} x{i % 7}" for i in range(5000)]),
        "prefix_counts": rng.integers(1, 40, size=5000),
    }
    return DiscoveryReward.from_state(state)


def test_reward_batch_speed(benchmark: Any) -> None:
    rng = np.random.default_rng(0)
    reward = _banks(rng)
    n = BATCH_IMAGES * GROUP
    images = [f"img{i // GROUP}" for i in range(n)]
    questions = [[f"w{rng.integers(5000)} x{j} how many?" for j in range(K)] for _ in range(n)]
    emb = rng.normal(size=(n, K, D))
    valid = rng.random((n, K)) < 0.8
    correct = rng.random((n, K)) < 0.5

    def run() -> None:
        reward.score_group(images, questions, emb, valid, correct, update=False)

    benchmark.pedantic(run, rounds=20, iterations=1)
    per_batch = benchmark.stats.stats.mean
    print(f"\nEq. 5 reward: {n} completions x k={K} against {N_IMAGES} x {PER_IMAGE} banked "
          f"failures: {per_batch * 1e3:.2f} ms per batch, {n / per_batch:,.0f} completions/s")


def test_eval_metrics_speed(benchmark: Any) -> None:
    rng = np.random.default_rng(1)
    emb = rng.normal(size=(N_EVAL, D))
    words = ["how", "what", "is", "are", "where", "which", "many", "colour", "the", "there"]
    questions = [" ".join(rng.choice(words, size=6)) + "?" for _ in range(N_EVAL)]
    valid = rng.random(N_EVAL) < 0.8
    correct = rng.random(N_EVAL) < 0.5

    def run() -> tuple[float, float, float, float]:
        return qvr(valid), fdr(valid, correct), vendi_score(emb), prefix_entropy(questions)

    benchmark.pedantic(run, rounds=3, iterations=1)
    t0 = time.perf_counter()
    vendi_score(emb)
    t_vendi = time.perf_counter() - t0
    print(f"\nQVR+FDR+Vendi+LD over {N_EVAL:,} questions (d={D}): "
          f"{benchmark.stats.stats.mean:.3f} s; Vendi alone {t_vendi:.3f} s")


def test_taxonomy_dedup_speed(benchmark: Any) -> None:
    """Skill dedup over 3,000 distinct skills that never merge (the worst case:
    every skill is compared with every representative kept before it)."""
    from collections import Counter

    from vlmrobust.evaluation.discover.taxonomy import dedup

    rng = np.random.default_rng(2)
    emb = rng.normal(size=(3000, D)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    skills = [f"skill {i}" for i in range(3000)]
    counts = Counter(dict.fromkeys(skills, 1))
    out: dict[str, str] = {}

    def run() -> None:
        out.update(dedup(skills, counts, emb, 0.8))

    benchmark.pedantic(run, rounds=3, iterations=1)
    assert len(set(out.values())) == 3000
    print(f"\ntaxonomy dedup: 3,000 skills in {benchmark.stats.stats.mean:.3f} s")
