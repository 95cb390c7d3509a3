"""Done-when of issue 25: a planted blind spot is discovered on CPU.

Planted world (evaluation/discover/planted.py): PIL-drawn scenes whose answers
are read from the pixels, a rule answerer that is always wrong on counting and
right on colour, shape and side, the rule verifier, and the tiny text-only
questioner (a 2-layer Llama with a word-level vocabulary, given a prior over
the four question types). A bounded number of GRPO steps through TRL with the
full Eq. 5 reward (real MiniLM embeddings) raises the mean reward, the FDR and
the share of counting questions. The longer two-blind-spot study (full reward
vs no δ_ifreq) is tests/perf/test_discover_planted_perf.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.discover import planted_folder, tiny_questioner
from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.planted import question_type
from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier
from vlmrobust.evaluation.discover.train import TrainConfig, run_train
from vlmrobust.metrics.discovery.reward import RewardConfig

pytest.importorskip("trl")
STEPS = 20


def test_counting_blind_spot_is_found(tmp_path: Path) -> None:
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    images = planted_folder(tmp_path, n=128)
    q = tiny_questioner(tmp_path, prior_steps=150)
    # the objective and threads its documented figures were measured with (TRL's
    # dapo, β = 0: not Eq. 1, the default since; docs/discover.md)
    cfg = TrainConfig(steps=STEPS, images_per_step=4, group_size=8, learning_rate=3e-3,
                      lr_scheduler="constant", max_completion_length=30, save_steps=1000,
                      reward=RewardConfig(), loss_type="dapo", beta=0.0, threads=2)
    record = run_train(str(q), images, make_answerer("rule:blind=count"),
                       make_verifier("rule:planted"), tmp_path / "run", cfg,
                       TextEmbedder(load_minilm("cpu")), device="cpu", log=lambda *a: None)
    hist = record["history"]
    assert [h["step"] for h in hist] == list(range(STEPS))
    reward = np.array([h["reward"] for h in hist])
    fdr = np.array([np.nan if h["fdr"] is None else h["fdr"] for h in hist], dtype=float)
    recs = read_records(tmp_path / "run" / "journal.jsonl")

    def count_share(lo: int, hi: int) -> float:
        types = Counter(question_type(r.question) for r in recs if lo <= r.step < hi and r.valid)
        return types["count"] / max(1, sum(types.values()))

    early, late = slice(0, 5), slice(STEPS - 5, STEPS)
    print(f"reward {reward[early].mean():.3f} -> {reward[late].mean():.3f}; "
          f"FDR {np.nanmean(fdr[early]):.3f} -> {np.nanmean(fdr[late]):.3f}; counting share "
          f"{count_share(0, 5):.3f} -> {count_share(STEPS - 5, STEPS):.3f}")
    assert reward[late].mean() > reward[early].mean() + 0.2
    assert np.nanmean(fdr[late]) > np.nanmean(fdr[early]) + 0.3
    assert count_share(STEPS - 5, STEPS) > count_share(0, 5) + 0.3
    # every discovered failure is a counting question: the answerer's only blind spot
    assert {question_type(r.question) for r in recs if r.failure} == {"count"}


def test_why_only_the_prefix_term_reaches_a_second_blind_spot() -> None:
    """On a fresh image (empty bank: δ_emb = 1 for every failure) a group that
    collapsed onto counting, with one completion that also finds the colour blind
    spot: without δ_ifreq every completion scores the same, so GRPO's group-
    normalised advantages are all zero and nothing moves the questioner towards
    colour; with δ_ifreq the rarer prefix ("what color": 2 banked vs "how many":
    20) scores higher and gets the only positive advantage."""
    from vlmrobust.metrics.discovery.reward import DiscoveryReward

    count, color = "how many shapes are there ?", "what color are the shapes ?"
    advantages = {}
    for use_ifreq in (True, False):
        reward = DiscoveryReward(RewardConfig(use_ifreq=use_ifreq))
        reward.prefixes.update({"how many": 20, "what color": 2})
        group = [[count, count]] * 7 + [[count, color]]
        emb = np.ones((8, 2, 3))
        scored = reward.score_group(["fresh.png"] * 8, group, emb, np.ones((8, 2), bool),
                                    np.zeros((8, 2), bool))
        r = scored.completion
        # TRL scale_rewards="group": (r - mean) / (std + 1e-4), torch std (ddof = 1)
        advantages[use_ifreq] = (r - r.mean()) / (r.std(ddof=1) + 1e-4)
    assert np.allclose(advantages[False], 0.0)
    assert advantages[True][7] > 2 and (advantages[True][:7] < 0).all()
