"""Done-when: shape bias equals a hand count on a fixture of 32 named stimuli
(tests/cue_conflict_fixtures.named_stimuli), and agrees with model-vs-human's
own analysis re-done in pandas on the same decisions."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from tests.fixtures.cue_conflict import named_stimuli
from vlmrobust.builders.cue_conflict.categories import CATEGORIES
from vlmrobust.evaluation.scoring.shape_bias import shape_bias_config, shape_bias_section

# One decision per named stimulus (None: the answer named no category). Marked
# by hand: S shape decision, T texture decision, - neither, = shape equals
# texture (left out).
DECISIONS: dict[str, str | None] = {
    "airplane/airplane1-bear1.png": "airplane",      # S
    "airplane/airplane2-airplane2.png": "airplane",  # =
    "bear/bear1-bicycle1.png": "bicycle",            # T
    "bear/bear2-airplane2.png": "bear",              # S
    "bicycle/bicycle1-bird1.png": "bird",            # T
    "bicycle/bicycle2-bicycle2.png": "dog",          # =
    "bird/bird1-boat1.png": "bird",                  # S
    "bird/bird2-bicycle2.png": "cat",                # -
    "boat/boat1-bottle1.png": "bottle",              # T
    "boat/boat2-boat2.png": "boat",                  # =
    "bottle/bottle1-car1.png": "bottle",             # S
    "bottle/bottle2-boat2.png": "boat",              # T
    "car/car1-cat1.png": "car",                      # S
    "car/car2-car2.png": "car",                      # =
    "cat/cat1-chair1.png": "chair",                  # T
    "cat/cat2-car2.png": None,                       # -
    "chair/chair1-clock1.png": "chair",              # S
    "chair/chair2-chair2.png": "chair",              # =
    "clock/clock1-dog1.png": "dog",                  # T
    "clock/clock2-chair2.png": "clock",              # S
    "dog/dog1-elephant1.png": "dog",                 # S
    "dog/dog2-dog2.png": "cat",                      # =
    "elephant/elephant1-keyboard1.png": "keyboard",  # T
    "elephant/elephant2-dog2.png": "elephant",       # S
    "keyboard/keyboard1-knife1.png": "knife",        # T
    "keyboard/keyboard2-keyboard2.png": "keyboard",  # =
    "knife/knife1-oven1.png": "truck",               # -
    "knife/knife2-keyboard2.png": "knife",           # S
    "oven/oven1-truck1.png": "truck",                # T
    "oven/oven2-oven2.png": "oven",                  # =
    "truck/truck1-airplane1.png": "truck",           # S
    "truck/truck2-oven2.png": "oven",                # T
}


def _arrays() -> tuple[np.ndarray[Any, Any], ...]:
    names = named_stimuli()
    assert sorted(DECISIONS) == sorted(names) and len(names) == 32
    idx = {c: i for i, c in enumerate(CATEGORIES)}
    shape = [idx[n.split("/")[0]] for n in names]
    texture = [idx[re.sub(r"\d+\.png$", "", n.split("-")[1])] for n in names]
    decided = [idx[d] if (d := DECISIONS[n]) is not None else -1 for n in names]
    return np.array(decided), np.array(shape), np.array(texture)


def test_shape_bias_equals_the_hand_count() -> None:
    d, s, t = _arrays()
    out = shape_bias_config(d, s, t, CATEGORIES, seed=0)
    assert out is not None
    # By hand from the marks above: 32 stimuli, 8 with shape = texture; of the
    # 24 others 11 S, 10 T, 3 neither.
    assert (out["n"], out["n_conflict"], out["shape_decisions"], out["texture_decisions"]) \
        == (32, 24, 11, 10)
    assert out["shape_bias"] == pytest.approx(11 / 21)
    assert out["shape_accuracy"] == pytest.approx(11 / 32)
    assert out["texture_accuracy"] == pytest.approx(10 / 32)
    per = out["per_category"]
    assert per["bear"]["shape_bias"] == 0.5      # bear1 T, bear2 S
    assert per["bird"]["shape_bias"] == 1.0      # bird1 S, bird2 neither
    assert per["cat"]["shape_bias"] == 0.0       # cat1 T, cat2 no answer
    assert per["knife"]["shape_bias"] == 1.0     # knife1 neither, knife2 S
    assert per["airplane"]["n_conflict"] == 1 and per["airplane"]["n"] == 2
    lo, hi = out["shape_bias_ci"]
    assert 0.0 <= lo < 11 / 21 < hi <= 1.0
    assert shape_bias_config(d, s, t, CATEGORIES, seed=0) == out  # seeded: the same twice


def test_interval_equals_a_direct_bootstrap_of_the_conflict_stimuli() -> None:
    """The percentile interval re-done by hand: resample the 24 conflict stimuli with
    numpy's default_rng(seed) as documented, recount shape and texture decisions
    with the metric function, drop draws without a cued decision."""
    from vlmrobust.metrics.holistic.shape_bias import shape_bias

    d, s, t = _arrays()
    out = shape_bias_config(d, s, t, CATEGORIES, seed=7)
    assert out is not None
    conflict = s != t
    names = np.array([*CATEGORIES, ""], dtype=object)
    dn, sn, tn = names[d[conflict]], names[s[conflict]], names[t[conflict]]
    draws = np.random.default_rng(7).integers(0, dn.size, size=(1000, dn.size))
    reps = [shape_bias(dn[i], sn[i], tn[i]).shape_bias for i in draws]
    reps = [r for r in reps if not np.isnan(r)]
    assert out["shape_bias_ci"] == pytest.approx(list(np.quantile(reps, [0.025, 0.975])), abs=1e-12)


def test_stimuli_without_a_texture_cue_and_answers_without_a_category() -> None:
    """Rows of a config without a texture cue (-1) are left out of every count;
    an answer naming no category (-1) is neither a shape nor a texture decision,
    whatever the stimulus' classes are."""
    d, s, t = _arrays()
    truck, cat = CATEGORIES.index("truck"), CATEGORIES.index("cat")
    more = shape_bias_config(np.r_[d, [truck, cat, -1, -1]], np.r_[s, [truck, cat, cat, truck]],
                             np.r_[t, [-1, -1, truck, cat]], CATEGORIES, seed=0)
    assert more is not None
    # 34 cued stimuli: the hand count's 32 and two conflict stimuli answered by nothing
    assert (more["n"], more["n_conflict"], more["shape_decisions"], more["texture_decisions"]) \
        == (34, 26, 11, 10)
    assert more["shape_accuracy"] == pytest.approx(11 / 34)
    none = shape_bias_config([-1, -1], [cat, truck], [truck, cat], CATEGORIES)
    assert none is not None and (none["shape_decisions"], none["texture_decisions"]) == (0, 0)
    assert none["shape_bias"] is None and none["shape_bias_ci"] is None


def test_agrees_with_model_vs_human_analysis_in_pandas() -> None:
    """model-vs-human's ShapeBias.analysis, re-done: texture from the image name
    (last '-' part without digits), rows with shape == texture dropped, both
    fractions over ALL rows, bias = their ratio."""
    pd = pytest.importorskip("pandas")
    d, s, t = _arrays()
    names = named_stimuli()
    df = pd.DataFrame({"imagename": [f"x_{n.split('/')[1]}" for n in names],
                       "category": [CATEGORIES[i] for i in s],
                       "object_response": [CATEGORIES[i] if i >= 0 else "na" for i in d]})
    df["correct_texture"] = df["imagename"].map(
        lambda n: "".join(ch for ch in n.split("_")[-1].split(".")[0].split("-")[-1]
                          if not ch.isdigit()))
    df2 = df[df["category"] != df["correct_texture"]]
    frac_shape = (df2["object_response"] == df2["category"]).sum() / len(df)
    frac_texture = (df2["object_response"] == df2["correct_texture"]).sum() / len(df)
    out = shape_bias_config(d, s, t, CATEGORIES)
    assert out is not None
    assert out["shape_accuracy"] == pytest.approx(frac_shape)
    assert out["texture_accuracy"] == pytest.approx(frac_texture)
    assert out["shape_bias"] == pytest.approx(frac_shape / (frac_shape + frac_texture))


def test_section_skips_configs_without_texture_cues() -> None:
    d, s, t = _arrays()
    config = np.array(["cue-conflict"] * 32 + ["stylized-imagenet"] * 2, dtype=object)
    cols = {"texture_label": np.concatenate([t, [-1, -1]])}
    sec = shape_bias_section(cols, config, ("cue-conflict", "stylized-imagenet"),
                             np.concatenate([s, [0, 1]]), np.concatenate([d, [0, 0]]),
                             {"cue-conflict": CATEGORIES, "stylized-imagenet": CATEGORIES})
    assert sec is not None and list(sec) == ["cue-conflict"]
    assert sec["cue-conflict"]["shape_bias"] == pytest.approx(11 / 21)
    assert shape_bias_section({}, config, ("cue-conflict",), s, d, {}) is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="labels must lie in"):
        shape_bias_config([0], [16], [1], CATEGORIES)
    with pytest.raises(ValueError, match="one length"):
        shape_bias_config([0, 1], [0], [1], CATEGORIES)
