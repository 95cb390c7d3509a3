"""Shape bias against a hand count on 32 named cue-conflict stimuli."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlmrobust.metrics.holistic.shape_bias import (
    ShapeBias,
    category_decisions,
    cue_conflict_classes,
    shape_bias,
    shape_bias_per_category,
)

# 32 stimuli in the published naming, with a decision each.
# S = shape decision, T = texture decision, o = other, eq = shape == texture (excluded)
STIMULI = [
    ("bear/bear1-bird2.png", "bear"),  # S
    ("bear/bear1-cat3.png", "cat"),  # T
    ("bear/bear2-clock1.png", "clock"),  # T
    ("bear/bear3-dog5.png", "bear"),  # S
    ("bear/bear4-bear7.png", "bear"),  # eq
    ("bear/bear5-knife1.png", "truck"),  # o
    ("bear/bear6-oven2.png", "oven"),  # T
    ("bear/bear7-boat3.png", "bear"),  # S
    ("cat/cat1-bear1.png", "bear"),  # T
    ("cat/cat2-bird4.png", "bird"),  # T
    ("cat/cat3-cat9.png", "dog"),  # eq
    ("cat/cat4-chair2.png", "chair"),  # T
    ("cat/cat5-dog1.png", "dog"),  # T
    ("cat/cat6-elephant3.png", "cat"),  # S
    ("cat/cat7-keyboard1.png", "keyboard"),  # T
    ("cat/cat8-truck2.png", "bottle"),  # o
    ("dog/dog1-airplane1.png", "dog"),  # S
    ("dog/dog2-bicycle3.png", "dog"),  # S
    ("dog/dog3-bottle2.png", "bottle"),  # T
    ("dog/dog4-car1.png", "dog"),  # S
    ("dog/dog5-dog6.png", "dog"),  # eq
    ("dog/dog6-clock4.png", "clock"),  # T
    ("dog/dog7-knife2.png", "dog"),  # S
    ("dog/dog8-oven1.png", "cat"),  # o
    ("truck/truck1-boat1.png", "boat"),  # T
    ("truck/truck2-cat2.png", "truck"),  # S
    ("truck/truck3-chair1.png", "chair"),  # T
    ("truck/truck4-truck5.png", "car"),  # eq
    ("truck/truck5-elephant4.png", "elephant"),  # T
    ("truck/truck6-bird3.png", "bird"),  # T
    ("truck/truck7-keyboard3.png", "truck"),  # S
    ("truck/truck8-airplane2.png", "airplane"),  # T
]


def _columns() -> tuple[list[str], list[str], list[str]]:
    classes = [cue_conflict_classes(n) for n, _ in STIMULI]
    return [d for _, d in STIMULI], [s for s, _ in classes], [t for _, t in classes]


def test_hand_count_on_32_stimuli() -> None:
    assert len(STIMULI) == 32
    r = shape_bias(*_columns())
    # hand count of the comments above: 10 S, 15 T, 3 o, 4 eq
    assert (r.n_stimuli, r.n_conflict, r.shape_decisions, r.texture_decisions) == (32, 28, 10, 15)
    assert r.shape_bias == 10 / 25
    assert (r.fraction_shape, r.fraction_texture) == (10 / 32, 15 / 32)  # model-vs-human's /len(df)


def test_per_category_hand_count() -> None:
    per = shape_bias_per_category(*_columns())
    assert list(per) == ["bear", "cat", "dog", "truck"]
    counts = {c: (r.n_conflict, r.shape_decisions, r.texture_decisions) for c, r in per.items()}
    assert counts == {"bear": (7, 3, 3), "cat": (7, 1, 5), "dog": (7, 4, 2), "truck": (7, 2, 5)}
    assert per["dog"].shape_bias == 4 / 6
    assert sum(r.shape_decisions for r in per.values()) == shape_bias(*_columns()).shape_decisions


def test_equal_class_stimuli_are_excluded_even_when_answered_right() -> None:
    # a "correct" answer on a shape == texture stimulus is neither a shape nor a texture decision
    r = shape_bias(["cat", "cat"], ["cat", "cat"], ["cat", "dog"])
    assert (r.shape_decisions, r.texture_decisions, r.shape_bias) == (1, 0, 1.0)


def test_no_cued_decision_is_nan() -> None:
    assert math.isnan(shape_bias(["car"], ["cat"], ["dog"]).shape_bias)
    assert math.isnan(shape_bias([], [], []).fraction_shape)


def test_stimulus_names() -> None:
    assert cue_conflict_classes("cue-conflict/elephant/elephant10-keyboard2.png") == ("elephant", "keyboard")
    assert cue_conflict_classes("im0001_airplane1-bicycle2.png") == ("airplane", "bicycle")


@pytest.mark.parametrize("call, match", [
    (lambda: cue_conflict_classes("bear/bear1_bird2.png"), "'bear/bear1_bird2.png' is not <shape><i>"),
    (lambda: cue_conflict_classes("cat/bear1-bird2.png"), "in folder 'cat' but its shape class is 'bear'"),
    (lambda: shape_bias(["a"], ["a", "b"], ["b", "a"]), "got 1, 2 and 2"),
    (lambda: shape_bias([["a"]], [["a"]], [["b"]]), "decisions must be 1-D"),
    (lambda: ShapeBias(3, 2, 2, 1), r"\(2 \+ 1\) must be within the 2 conflict"),
    (lambda: ShapeBias(3, 4, 0, 0), "n_conflict must be in"),
])
def test_bad_input_names_the_value(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()  # type: ignore[operator]


def test_category_decisions_average_each_categorys_classes() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(12), size=50)
    cats = {"knife": [0, 5], "bear": [1, 2, 3], "oven": [11]}
    want = []
    for row in p:  # hand loop: mean per category, first maximum in sorted name order
        best, best_v = "", -1.0
        for name in sorted(cats):
            v = sum(row[k] for k in cats[name]) / len(cats[name])
            if v > best_v:
                best, best_v = name, v
        want.append(best)
    assert category_decisions(p, cats).tolist() == want
    # averaging, not summing: 3 small classes lose to 1 larger one
    assert category_decisions([[0.2, 0.2, 0.2, 0.4]], {"a": [0, 1, 2], "b": [3]}).tolist() == ["b"]
    # a tie goes to the first name in sorted order
    assert category_decisions([[0.5, 0.5]], {"z": [0], "y": [1]}).tolist() == ["y"]


@pytest.mark.parametrize("cats, match", [
    ({}, "categories is empty"),
    ({"cat": []}, "category 'cat' needs a non-empty list"),
    ({"cat": [0, 4]}, "category 'cat' has class index 4 outside"),
])
def test_category_decisions_bad_input(cats: dict[str, list[int]], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        category_decisions([[0.5, 0.5]], cats)
