"""Records that cannot be what the project wrote are refused on reading, in one
line naming the file, the line and the field: JSON nested past the stack,
contradictory fields (docs/discover.md, record format), and the same record
twice across the files given to `discover evaluate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.discover import make_record
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import (
    read_many,
    read_records,
    write_records,
)
from vlmrobust.core.errors import VlmrobustError


def _evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *paths: Path) -> str:
    out = tmp_path / "m.json"
    assert main(["discover", "evaluate", *map(str, paths), "--out", str(out), "--no-sd"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not out.exists()
    return err


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a": ' * 50_000 + "1" + "}" * 50_000])
def test_json_nested_past_the_stack_is_one_line(tmp_path, capsys, text: str) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(make_record().to_json() + "\n" + text + "\n")
    err = _evaluate(tmp_path, capsys, path)
    assert f"{path} line 2: " in err and "nested deeper than" in err and "; fix" in err


def test_json_nested_below_the_stack_but_too_deep_is_refused(tmp_path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("[" * 40 + "]" * 40 + "\n")
    with pytest.raises(VlmrobustError, match=r"d\.jsonl line 1: .*nested deeper than 32"):
        read_records(path)


@pytest.mark.parametrize("edit, field", [
    ({"verifier_parsed": False}, "verifier_parsed"),
    ({"verifier_parsed": False, "correct": True}, "verifier_parsed"),
    ({"question": None, "valid": False, "correct": False}, "answer"),
    ({"question": "   ", "answer": "4"}, "question"),
    ({"question": "", "valid": False, "correct": False}, "question"),
    ({"question": "\t\n", "valid": False, "correct": False, "answer": None}, "question"),
])
def test_contradictory_fields_are_refused(tmp_path, capsys, edit: dict[str, object],
                                          field: str) -> None:
    good = json.loads(make_record().to_json())
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(dict(good, **edit)) + "\n")
    with pytest.raises(VlmrobustError, match=rf"r\.jsonl line 2: .*\b{field}\b.*; fix"):
        read_records(path)
    err = _evaluate(tmp_path, capsys, path)
    assert f"{path} line 2: " in err and field in err


def test_what_the_writers_produce_still_loads(tmp_path) -> None:
    # the shapes sample.py and train_reward.py write: a missing slot (question and
    # answer null, V = C = 0), an unreadable verdict on a real question (V = C = 0,
    # verifier_parsed false), an empty answer, a valid correct question
    recs = [make_record(slot=2, question=None, answer=None, valid=False, correct=False,
                    valid_reason="question missing from the completion (malformed)",
                    correct_reason="", skills=(), reward=-1.0),
            make_record(completion_id="a.png#1", valid=False, correct=False, verifier_parsed=False,
                    valid_reason="verifier reply unparsable", correct_reason=""),
            make_record(completion_id="a.png#2", answer=""),
            make_record(completion_id="a.png#3", correct=True)]
    path = tmp_path / "r.jsonl"
    write_records(path, recs)
    assert read_records(path) == recs


def test_the_same_record_twice_is_refused_naming_both_places(tmp_path, capsys) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_records(a, [make_record(), make_record(slot=2)])
    write_records(b, [make_record(completion_id="a.png#1"), make_record(slot=2)])
    with pytest.raises(VlmrobustError, match=rf"{b} line 2: .*a\.png#0.* slot 2 .*{a} line 2"):
        read_many([a, b])
    err = _evaluate(tmp_path, capsys, a, a)
    assert f"{a} line 1: " in err and "twice" in err and "; fix" in err
    # within one file as well
    write_records(b, [make_record(), make_record()])
    err = _evaluate(tmp_path, capsys, b)
    assert f"{b} line 2: " in err and f"{b} line 1" in err


def test_a_slot_repeated_for_another_run_is_not_a_duplicate(tmp_path) -> None:
    # the same questions asked of another answerer, or sampled again with another
    # seed or at another step, are other records (the builder's record key)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_records(a, [make_record(), make_record(answerer="other")])
    write_records(b, [make_record(seed=1), make_record(step=4), make_record(method="zero-shot"),
                      make_record(verifier="judge2"), make_record(questioner="q2")])
    assert len(read_many([a, b])) == 7
