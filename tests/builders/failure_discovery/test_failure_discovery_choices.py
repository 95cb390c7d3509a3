"""The MCQ config's options (builders/failure_discovery/choices.py) on hand-made
records: exactly one option is correct, whatever the verifier judged right."""

from __future__ import annotations

import hashlib

from vlmrobust.builders.failure_discovery.choices import (
    NO_REFERENCE,
    TOO_FEW,
    build_choices,
    norm_answer,
)
from vlmrobust.core.discover_records import DiscoveryRecord


def _rec(image: str, answer: str, correct: bool, n: int,
         question: str = "What color is the car?") -> DiscoveryRecord:
    return DiscoveryRecord(
        image=image, image_sha256=hashlib.sha256(image.encode()).hexdigest(),
        completion_id=f"{image}#{n}", slot=1, question=question, answer=answer, valid=True,
        correct=correct, valid_reason="ok", correct_reason="ok", verifier_parsed=True,
        method="zero-shot", questioner="q", answerer=f"a{n}", verifier="v", seed=0)


def _build(records: list[DiscoveryRecord], n_options: int = 4):
    keys = [f"k{i}" for i in range(len(records))]
    return build_choices(records, keys, n_options, seed=0)


def test_another_correct_answer_to_the_same_question_is_never_a_distractor() -> None:
    recs = [_rec("a.png", "red", True, 0), _rec("a.png", "crimson", True, 1),
            _rec("a.png", "blue", False, 2), _rec("b.png", "green", False, 3)]
    choices, skipped = _build(recs)
    # without "red" (also judged right) only "green" is left: too few for 2
    # distractors; b.png's failure has no reference
    assert choices == [] and skipped == {TOO_FEW: 1, NO_REFERENCE: 1}


def test_the_distractors_skip_every_correct_answer_even_reworded() -> None:
    recs = [_rec("a.png", "red", True, 0), _rec("a.png", "crimson", True, 1),
            _rec("a.png", "blue", False, 2), _rec("b.png", "green", False, 3),
            # "Red." on another image normalises to a correct answer of a.png's question
            _rec("b.png", "Red.", True, 4), _rec("c.png", "yellow", False, 5),
            _rec("d.png", "Crimson!", False, 6), _rec("e.png", "pink", True, 7)]
    correct = {"red", "crimson"}
    seen_distractors: set[str] = set()
    for seed in range(12):
        choices, _ = build_choices(recs, [f"k{i}-{seed}" for i in range(len(recs))], 4, seed)
        (c,) = [c for c in choices if recs[c.source].image == "a.png"]
        assert norm_answer(c.options[c.answer]) == "crimson"
        assert c.options[c.wrong_option] == "blue"
        rest = {norm_answer(o) for i, o in enumerate(c.options)
                if i not in (c.answer, c.wrong_option)}
        assert not rest & correct
        seen_distractors |= rest
    assert seen_distractors == {"green", "yellow", "pink"}


def test_a_question_with_one_correct_answer_keeps_its_distractors() -> None:
    recs = [_rec("a.png", "red", True, 0), _rec("a.png", "blue", False, 2),
            _rec("b.png", "green", False, 3), _rec("c.png", "crimson", True, 4)]
    choices, skipped = _build(recs)
    (c,) = choices
    assert skipped == {NO_REFERENCE: 1}  # b.png's failure
    assert sorted(c.options) == ["blue", "crimson", "green", "red"]
    assert c.options[c.answer] == "red" and c.options[c.wrong_option] == "blue"
