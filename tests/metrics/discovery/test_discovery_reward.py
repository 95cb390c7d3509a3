"""Seed 004's Eq. 5 reward and its memory banks against hand-computed cases."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.metrics.discovery.reward import DiscoveryReward, RewardConfig, question_reward
from vlmrobust.metrics.discovery.scores import parse_questions

E1 = np.array([1.0, 0.0])
E2 = np.array([0.0, 1.0])
E_COS06 = np.array([0.6, 0.8])  # cos(E1, E_COS06) = 0.6


def score_one(reward: DiscoveryReward, image: str, q1: str | None, e1: np.ndarray,
              v1: bool, c1: bool, q2: str | None = None, e2: np.ndarray = E2,
              v2: bool = False, c2: bool = False, update: bool = True) -> tuple[float, ...]:
    out = reward.score_group([image], [[q1, q2]], np.stack([e1, e2])[None], [[v1, v2]],
                             [[c1, c2]], update=update)
    return tuple(float(x) for x in out.question[0])


def test_empty_banks_score_full_novelty() -> None:
    r = DiscoveryReward(RewardConfig(lambda_scale=2.0, lambda_penalty=0.5))
    # V = 1, C = 0, empty banks: δ_emb = 1, δ_ifreq = 1/(1 + 0) → 2·(1 + 1)
    assert score_one(r, "img", "How many dogs?", E1, True, False)[0] == 4.0
    r2 = DiscoveryReward(RewardConfig(empty_bank_emb=0.25))
    assert score_one(r2, "img", "How many dogs?", E1, True, False)[0] == 1.25


def test_invalid_gives_minus_penalty_and_correct_gives_zero() -> None:
    r = DiscoveryReward(RewardConfig(lambda_scale=3.0, lambda_penalty=0.7))
    got = score_one(r, "img", "How many dogs?", E1, False, False, "Is it red?", E2, True, True)
    assert got == (-0.7, 0.0)
    # neither verdict entered a bank: a failure now still scores full novelty
    assert r.prefixes == {}
    assert r.image_bank("img").shape[0] == 0


def test_identical_question_scores_zero_embedding_novelty() -> None:
    r = DiscoveryReward()
    score_one(r, "img", "How many dogs?", E1, True, False)        # banked
    got = r.score_group(["img"], [["How many dogs?", None]], np.stack([E1 * 5, E2])[None],
                        [[True, False]], [[False, False]])
    assert got.delta_emb[0, 0] == pytest.approx(0.0)
    assert got.delta_ifreq[0, 0] == 0.5                            # prefix seen once
    assert got.question[0].tolist() == pytest.approx([0.5, -1.0])  # second slot missing
    assert got.completion[0] == pytest.approx(-0.25)               # mean of the two


def test_prefix_len_sets_the_words_of_the_prefix_bank() -> None:
    """δ_ifreq counts the first ``prefix_len`` words (L = 3 here), not a fixed two."""
    r3 = DiscoveryReward(RewardConfig(prefix_len=3))
    r2 = DiscoveryReward()
    for r in (r3, r2):
        score_one(r, "img", "How many dogs are there?", E1, True, False)
    assert r3.prefixes == {"how many dogs": 1} and r2.prefixes == {"how many": 1}
    # "How many cats?" shares two words with the banked failure, not three
    assert r3.delta_ifreq("How many cats?") == 1.0 and r2.delta_ifreq("How many cats?") == 0.5
    assert r3.delta_ifreq("how many DOGS?") == 0.5
    got = score_one(r3, "other", "How many cats?", E2, True, False)[0]
    assert got == pytest.approx(1.0 + 1.0)  # empty image bank: δ_emb = 1; new 3-word prefix


def test_cosine_and_repeated_prefix_hand_computed() -> None:
    r = DiscoveryReward(RewardConfig(lambda_scale=2.0))
    for _ in range(3):                                             # "how many" seen 3 times
        score_one(r, "a", "How many dogs?", E1, True, False)
    # other image: empty embedding bank, but the prefix bank is global
    assert r.delta_emb("b", E1) == 1.0
    assert r.delta_ifreq("how MANY cats are there") == pytest.approx(1 / 4)
    assert r.delta_ifreq("What colour?") == 1.0
    # δ_emb = 1 − 0.6, δ_ifreq = 1/(1 + 3): R = 2·(0.4 + 0.25)
    assert score_one(r, "a", "How many cats?", E_COS06, True, False)[0] == pytest.approx(1.3)
    # the max is taken over the bank: E2 is orthogonal to E1 but E_COS06 is banked now
    assert r.delta_emb("a", E2) == pytest.approx(1 - 0.8)
    # opposed to every banked question (cos −1 and −0.6): δ_emb = 1 − (−0.6), not clipped
    assert r.delta_emb("a", -E1) == pytest.approx(1.6)


def test_rewards_within_a_group_do_not_depend_on_order() -> None:
    images = ["a", "a", "b", "a"]
    questions = [["How many dogs?", "Is it red?"], ["How many dogs?", None],
                 ["What colour is it?", "How many cats?"], ["Is it red?", "How many dogs?"]]
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(4, 2, 8))
    emb[1, 0] = emb[0, 0]                                          # an identical question twice
    valid = np.array([[1, 1], [1, 1], [1, 0], [1, 1]], dtype=bool)
    correct = np.array([[0, 0], [0, 0], [0, 0], [1, 0]], dtype=bool)

    def run(order: list[int]) -> tuple[np.ndarray, DiscoveryReward]:
        r = DiscoveryReward()
        score_one(r, "a", "Where is the cup?", rng_fixed, True, False, e2=rng_fixed)
        out = r.score_group([images[i] for i in order], [questions[i] for i in order],
                            emb[order], valid[order], correct[order])
        back = np.empty(4)
        back[order] = out.completion
        return back, r

    rng_fixed = np.linspace(-1, 1, 8)
    first, bank1 = run([0, 1, 2, 3])
    second, bank2 = run([3, 1, 0, 2])
    np.testing.assert_allclose(first, second)
    # the two identical "How many dogs?" failures both scored as novel within the group
    r = DiscoveryReward()
    out = r.score_group(images[:2], questions[:2], emb[:2], valid[:2], correct[:2])
    assert out.question[0, 0] == out.question[1, 0] == 2.0
    # after the group both are banked
    assert r.prefixes["how many"] == 2
    assert r.image_bank("a").shape == (3, 8)
    assert bank1.prefixes == bank2.prefixes
    assert sorted(map(tuple, bank1.image_bank("a").round(12))) == sorted(
        map(tuple, bank2.image_bank("a").round(12)))


def test_update_false_leaves_banks_alone() -> None:
    r = DiscoveryReward()
    assert score_one(r, "a", "How many dogs?", E1, True, False, update=False)[0] == 2.0
    assert score_one(r, "a", "How many dogs?", E1, True, False)[0] == 2.0
    assert score_one(r, "a", "How many dogs?", E1, True, False)[0] == pytest.approx(0.5)


def test_malformed_completion_counts_as_invalid() -> None:
    r = DiscoveryReward(RewardConfig(lambda_penalty=0.5))
    qs = parse_questions("<response_1>How many dogs?</response_1><response_2>Is it", 2)
    # the caller's verdict for the missing slot is overridden: no question, no validity
    out = r.score_group(["a"], [qs], np.stack([E1, E2])[None], [[True, True]], [[False, False]])
    assert out.valid.tolist() == [[True, False]]
    assert out.question[0].tolist() == [2.0, -0.5]
    assert out.completion[0] == pytest.approx(0.75)
    assert r.prefixes == {"how many": 1}


def test_sum_aggregate_and_valid_prefix_bank() -> None:
    r = DiscoveryReward(RewardConfig(aggregate="sum", bank="valid"))
    out = r.score_group(["a"], [["How many dogs?", "Is it red?"]], np.stack([E1, E2])[None],
                        [[True, True]], [[False, True]])
    assert out.completion[0] == 2.0 + 0.0
    # "valid": the correctly answered question's prefix is banked, its embedding is not
    assert r.prefixes == {"how many": 1, "is it": 1}
    assert r.image_bank("a").shape == (1, 2)


def test_question_reward_closed_form_grid() -> None:
    de, di, ls, lp = 0.3, 0.2, 1.5, 0.8
    for v in (0, 1):
        for c in (0, 1):
            expected = ls * (de + di) * v * (1 - c) - lp * (1 - v)
            got = question_reward([de], [di], [v], [c], ls, lp)[0]
            assert math.isclose(got, expected)
    with pytest.raises(ValueError, match="one shape"):
        question_reward([0.1], [0.1, 0.2], [1], [0])


@pytest.mark.parametrize("kwargs", [
    {"k": 0}, {"prefix_len": 0}, {"lambda_scale": -1.0}, {"lambda_penalty": float("nan")},
    {"empty_bank_emb": float("inf")}, {"aggregate": "max"}, {"bank": "all"},
])
def test_config_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RewardConfig(**kwargs)  # type: ignore[arg-type]


def test_bad_group_shapes() -> None:
    r = DiscoveryReward()
    with pytest.raises(ValueError, match="k = 2"):
        r.score_group(["a"], [["only one"]], np.zeros((1, 2, 2)), [[1, 1]], [[0, 0]])
    with pytest.raises(ValueError, match=r"\(n, k, d\)"):
        r.score_group(["a"], [["q?", "r?"]], np.ones((1, 2)), [[1, 1]], [[0, 0]])
    score_one(r, "a", "How many dogs?", E1, True, False)
    with pytest.raises(ValueError, match="dimensions"):
        r.delta_emb("a", np.ones(3))


def test_bank_state_round_trip_gives_the_same_rewards(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    r = DiscoveryReward()
    for step in range(3):
        imgs = [f"img{(step + i) % 4}" for i in range(4)]
        qs = [[f"Q{step} {i} a?", f"What {i} b?"] for i in range(4)]
        r.score_group(imgs, qs, rng.normal(size=(4, 2, 6)), rng.random((4, 2)) < 0.8,
                      rng.random((4, 2)) < 0.4)
    path = tmp_path / "banks.npz"
    np.savez(path, **r.state())
    with np.load(path) as z:
        back = DiscoveryReward.from_state(dict(z))
    assert back.prefixes == r.prefixes
    imgs = ["img0", "img1", "img2", "img9"]
    qs = [["What 1 b?", "Q0 2 a?"]] * 4
    emb, v, c = rng.normal(size=(4, 2, 6)), np.ones((4, 2), bool), np.zeros((4, 2), bool)
    a = r.score_group(imgs, qs, emb, v, c)
    b = back.score_group(imgs, qs, emb, v, c)
    np.testing.assert_allclose(a.question, b.question)
    assert (a.delta_emb < 1).any() and (a.delta_ifreq < 1).all()  # the banks did matter
    assert len(DiscoveryReward.from_state(DiscoveryReward().state()).prefixes) == 0


@pytest.mark.parametrize("damage", ["drop", "offsets", "counts"])
def test_damaged_bank_state_is_refused(damage: str) -> None:
    r = DiscoveryReward()
    score_one(r, "a", "How many dogs?", E1, True, False, "Is it red?", E2, True, False)
    state: dict[str, Any] = dict(r.state())
    if damage == "drop":
        del state["prefixes"]
    elif damage == "offsets":
        state["offsets"] = np.array([0, 5])
    else:
        state["prefix_counts"] = np.array([1, 0])
    with pytest.raises(ValueError, match="reward bank state"):
        DiscoveryReward.from_state(state)


def test_verdict_shapes_are_checked() -> None:
    r = DiscoveryReward()
    with pytest.raises(ValueError, match=r"valid must be \(n, k\)"):
        r.score_group(["a"], [["q?", "r?"]], np.ones((1, 2, 2)), [1, 1], [[0, 0]])
    with pytest.raises(ValueError, match="correct must hold"):
        r.score_group(["a"], [["q?", "r?"]], np.ones((1, 2, 2)), [[1, 1]], [[0, 3]])


@pytest.mark.slow
def test_reward_with_real_minilm_embeddings() -> None:
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    embed = TextEmbedder(load_minilm())
    banked = "How many dogs are in the picture?"
    r = DiscoveryReward()
    r.score_group(["img"], [[banked, None]], embed([banked, banked])[None],
                  [[True, False]], [[False, False]])
    same = r.delta_emb("img", embed([banked])[0])
    paraphrase = r.delta_emb("img", embed(["How many dogs can you see in the image?"])[0])
    unrelated = r.delta_emb("img", embed(["What does the red sign on the wall say?"])[0])
    assert same == pytest.approx(0.0, abs=1e-5)
    assert 0.0 < paraphrase < unrelated < 1.5
    assert r.delta_emb("other-image", embed([banked])[0]) == 1.0


def test_ablations_drop_one_term_and_keep_the_banks() -> None:
    full = DiscoveryReward(RewardConfig(lambda_scale=2.0))
    no_ifreq = DiscoveryReward(RewardConfig(lambda_scale=2.0, use_ifreq=False))
    no_emb = DiscoveryReward(RewardConfig(lambda_scale=2.0, use_emb=False))
    for r in (full, no_ifreq, no_emb):
        score_one(r, "a", "How many dogs?", E1, True, False)
    # δ_emb = 1 − 0.6 = 0.4, δ_ifreq = 1/(1 + 1) = 0.5
    assert score_one(full, "a", "How many cats?", E_COS06, True, False)[0] == pytest.approx(1.8)
    assert score_one(no_ifreq, "a", "How many cats?", E_COS06, True, False)[0] == \
        pytest.approx(0.8)
    assert score_one(no_emb, "a", "How many cats?", E_COS06, True, False)[0] == pytest.approx(1.0)
    # the banks grow the same way whatever the reward uses
    assert no_ifreq.prefixes == full.prefixes == {"how many": 2}
    assert score_one(no_ifreq, "b", "Is it red?", E1, False, False)[0] == -1.0
