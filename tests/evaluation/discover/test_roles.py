"""The planted world, the verifier reply parser and the record format."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.fixtures.discover import make_record
from vlmrobust.core.discover_records import (
    read_records,
    write_records,
)
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.discover import planted
from vlmrobust.evaluation.discover.roles import (
    MISSING,
    PlantedVerifier,
    make_answerer,
    make_verifier,
    parse_verdict,
)


def test_scenes_read_back_from_pixels() -> None:
    for i in range(60):
        scene = planted.scene_for(i, seed=3)
        assert planted.read_scene(planted.draw(scene)) == scene


def test_blind_answerer_is_wrong_exactly_on_its_types() -> None:
    answerer = make_answerer("rule:blind=count,side")
    verifier = PlantedVerifier()
    images, questions = [], []
    for i in range(8):
        im = planted.draw(planted.scene_for(i))
        for qs in planted.TEMPLATES.values():
            images.append(im)
            questions.append(qs[0])
    answers = answerer.answer(images, questions)
    verdicts = verifier.verify(images, questions, answers)
    for q, a, v in zip(questions, answers, verdicts, strict=True):
        assert v.valid
        assert v.correct == (planted.question_type(q) not in ("count", "side")), (q, a)
    # a question outside the planted phrasings is invalid, a missing one too
    odd = verifier.verify(images[:2], ["why is the sky blue ?", None], ["no idea", None])
    assert [v.valid for v in odd] == [False, False]
    assert odd[1] == MISSING


def test_partial_blind_spot_is_wrong_on_a_fixed_share_of_scenes() -> None:
    answerer = make_answerer("rule:blind=count@0.5,color")
    assert answerer.name == "rule-answerer:blind=count@0.5,color"
    verifier = PlantedVerifier()
    # every distinct scene (4 counts x 4 colours x 2 kinds x 2 sides = 64)
    scenes = [planted.Scene(c, col, k, s) for c in range(1, 5) for col in planted.PALETTE
              for k in planted.KINDS for s in planted.SIDES]
    images = [planted.draw(sc) for sc in scenes]
    counts = [planted.TEMPLATES["count"][i % 4] for i in range(len(images))]
    wrong = [not v.correct for v in verifier.verify(images, counts,
                                                    answerer.answer(images, counts))]
    # a binomial(64, 0.5) share: outside [0.25, 0.75] has probability < 1e-4
    assert 0.25 <= np.mean(wrong) <= 0.75
    # the same scene gets the same verdict whatever the phrasing, on every call
    again = [planted.TEMPLATES["count"][(i + 1) % 4] for i in range(len(images))]
    assert wrong == [not v.correct for v in verifier.verify(images, again,
                                                            answerer.answer(images, again))]
    colours = ["what color are the shapes ?"] * len(images)
    assert not any(v.correct for v in verifier.verify(images, colours,
                                                      answerer.answer(images, colours)))


@pytest.mark.parametrize("spec", ["rule:blind=count@0", "rule:blind=count@1.5",
                                  "rule:blind=count@half"])
def test_partial_blind_spot_rates_are_checked(spec: str) -> None:
    with pytest.raises(VlmrobustError, match="rate"):
        make_answerer(spec)


def test_answer_value_reads_free_text() -> None:
    assert planted.answer_value("count", "There are 3 shapes.") == "3"
    assert planted.answer_value("color", "They look red, maybe blue") is None
    assert planted.answer_value("shape", "circles") == "circle"
    im = planted.draw(planted.Scene(3, "blue", "circle", "left"))
    judge = planted.RuleVerifier()
    assert judge.judge(im, "How many shapes are there?", "I count 3.").correct
    assert not judge.judge(im, "How many shapes are there?", "4").correct


@pytest.mark.parametrize("reply, valid, correct, parsed", [
    ("It shows two dogs.\nVALID: yes\nVALID_REASON: fine\nCORRECT: no\nCORRECT_REASON: 3",
     True, False, True),
    ("**VALID:** Yes\n**CORRECT:** yes", True, True, True),
    ("reasoning...\nV: no\nVALID_REASON: asks two things", False, False, True),
    ("VALID: yes\nVALID_REASON: ok", False, False, False),   # valid but no C: unreadable
    ("The answer seems right.", False, False, False),
    ("VALID: no\nCORRECT: yes", False, False, True),          # C of an invalid question: ignored
    ("VALID: no\nVALID: yes\nCORRECT: 1", True, True, True),  # the last lines count
])
def test_parse_verdict(reply: str, valid: bool, correct: bool, parsed: bool) -> None:
    v = parse_verdict(reply)
    assert (v.valid, v.correct, v.parsed) == (valid, correct, parsed)
    assert v.raw == reply


def test_parse_verdict_reasons() -> None:
    v = parse_verdict("VALID: yes\nVALID_REASON: grounded\nCORRECT: no\nCORRECT_REASON: it is 3")
    assert (v.valid_reason, v.correct_reason) == ("grounded", "it is 3")


def test_role_names_are_checked() -> None:
    with pytest.raises(VlmrobustError, match="rule:blind"):
        make_answerer("rule:count")
    with pytest.raises(VlmrobustError, match="unknown blind-spot"):
        make_answerer("rule:blind=smell")
    with pytest.raises(VlmrobustError, match="rule:planted"):
        make_verifier("rule:other")
    with pytest.raises(VlmrobustError, match="vlm:DIR_OR_HUB_ID"):
        make_verifier("gpt-4o")




def test_records_round_trip(tmp_path) -> None:
    recs = [make_record(), make_record(slot=2, question=None, answer=None, valid=False,
                               correct=False, skills=(), reward=-1.0)]
    path = tmp_path / "r.jsonl"
    assert write_records(path, recs) == 2
    assert read_records(path) == recs
    assert recs[0].failure and not recs[1].failure


@pytest.mark.parametrize("edit, message", [
    ({"valid": "yes"}, "valid must be true or false"),
    ({"correct": True, "valid": False}, "correct = true needs valid = true"),
    ({"method": "magic"}, "method must be one of"),
    ({"slot": 0}, "slot is 1-based"),
    ({"reward": float("nan")}, "reward must be a finite number"),
    ({"extra": 1}, "unknown fields"),
])
def test_bad_record_line_is_named(tmp_path, edit: dict[str, object], message: str) -> None:
    good = json.loads(make_record().to_json())
    bad = dict(good, **edit)
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad, allow_nan=True) + "\n")
    with pytest.raises(VlmrobustError, match=rf"r\.jsonl line 2: .*{message}"):
        read_records(path)


def test_missing_field_and_empty_file(tmp_path) -> None:
    good = json.loads(make_record().to_json())
    del good["answer"]
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n")
    with pytest.raises(VlmrobustError, match=r"r\.jsonl line 1: .*answer"):
        read_records(path)
    path.write_text("\n")
    with pytest.raises(VlmrobustError, match="no records"):
        read_records(path)


def test_planted_images_are_deterministic(tmp_path) -> None:
    from vlmrobust.evaluation.discover.images import list_images, write_planted_images

    write_planted_images(tmp_path / "a", 5, seed=1)
    write_planted_images(tmp_path / "b", 5, seed=1)
    a = [r.load() for r in list_images(tmp_path / "a")]
    b = [r.load() for r in list_images(tmp_path / "b")]
    assert [h for _, h in a] == [h for _, h in b]
    assert np.array_equal(np.asarray(a[0][0]), np.asarray(planted.draw(planted.scene_for(0, 1))))


def test_docs_state_the_verifier_prompt_verbatim() -> None:
    from pathlib import Path

    from vlmrobust.evaluation.discover.roles import VERIFIER_PROMPT

    docs = (Path(__file__).parents[3] / "docs" / "discover.md").read_text(encoding="utf-8")
    assert VERIFIER_PROMPT in docs
