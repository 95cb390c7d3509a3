"""`build failure-discovery` from one answerer's records (issue 34 item 6): the
`open` config is always built; an MCQ row needs a reference answer (another
answer judged correct to the same question on the same image), so failures
without one are left out and counted in the card and the manifest, and a run
where none has one builds `open` alone."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from tests.fixtures.discover import make_record
from vlmrobust.builders.failure_discovery.choices import NO_REFERENCE
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import DiscoveryRecord, write_records

HOW_MANY = "how many shapes are there ?"


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buf, format="PNG")
    return buf.getvalue()


def _source(root: Path, with_reference: bool) -> tuple[Path, list[DiscoveryRecord]]:
    """ROOT/images/{a,b,c,d}.png + ROOT/records/run.jsonl: one answerer, three
    failures (a, b, d), an invalid question and a missing slot; with
    ``with_reference``, a second sample on a.png answered right."""
    (root / "images").mkdir(parents=True)
    sha = {}
    for name, colour in zip("abcd", [(200, 0, 0), (0, 200, 0), (0, 0, 200), (90, 90, 90)],
                            strict=True):
        data = _png(colour)
        (root / "images" / f"{name}.png").write_bytes(data)
        sha[name] = hashlib.sha256(data).hexdigest()

    def rec(img: str, sample: int, slot: int, **kw: object) -> DiscoveryRecord:
        return make_record(image=f"{img}.png", image_sha256=sha[img],
                           completion_id=f"{img}.png#{sample}", slot=slot, **kw)

    recs = [rec("a", 0, 1, answer="4"),                                       # failure
            rec("b", 0, 1, answer="5"),                                       # failure
            rec("c", 0, 1, question="how many circles are there ?", answer="2",
                correct=True, correct_reason="yes"),
            rec("c", 0, 2, question="what color is the circle ?", answer="red",
                valid=False, valid_reason="not grounded"),                    # invalid
            rec("d", 0, 1, question="how many squares are there ?", answer="7"),  # failure
            rec("d", 0, 2, question=None, answer=None, valid=False, skills=())]  # missing slot
    if with_reference:
        recs.append(rec("a", 1, 1, question="How many shapes are there?", answer="3",
                        correct=True, correct_reason="yes"))
    (root / "records").mkdir()
    write_records(root / "records" / "run.jsonl", recs)
    return root, recs


def _build(source: Path, out: Path) -> dict:
    assert main(["build", "failure-discovery", "--source-root", str(source), "--out",
                 str(out)]) == 0
    return json.loads((out / "manifest.json").read_text())


def test_a_single_answerer_run_builds_the_open_config(tmp_path: Path) -> None:
    from datasets import load_dataset

    from vlmrobust.leaderboard.pages.failure_modes import read_open_records

    source, recs = _source(tmp_path / "src", with_reference=False)
    assert len({r.answerer for r in recs}) == 1
    manifest = _build(source, tmp_path / "fd")
    assert manifest["configs"] == {"open": len(recs)}  # no empty mcq config
    assert manifest["config_kinds"] == {"open": "open"}
    assert manifest["n_failures"] == 3
    assert manifest["mcq_skipped"] == {NO_REFERENCE: 3}
    ds = load_dataset(str(tmp_path / "fd"), "open", split="test")
    assert [(r["question"], r["answerer_answer"], r["valid"], r["correct"]) for r in ds] == \
        [(r.question, r.answer, r.valid, r.correct) for r in recs]
    # the one question answered right is its own reference; the failures have none
    assert [r["reference_answer"] for r in ds] == [None, None, "2", None, None, None]
    assert read_open_records(tmp_path / "fd") == recs  # the Failure modes page reads it back
    card = (tmp_path / "fd" / "README.md").read_text()
    assert "`mcq`: **not in this build**" in card
    assert "none of the 3 verified failures" in card and f"3: {NO_REFERENCE}" in card
    # rebuilt byte-identically
    assert _build(source, tmp_path / "again")["fingerprint"] == manifest["fingerprint"]


def test_failures_without_a_reference_are_left_out_and_counted(tmp_path: Path) -> None:
    from datasets import load_dataset

    source, recs = _source(tmp_path / "src", with_reference=True)
    manifest = _build(source, tmp_path / "fd")
    assert manifest["configs"] == {"open": len(recs), "mcq": 1}
    assert manifest["mcq_skipped"] == {NO_REFERENCE: 2}  # b and d: nobody answered them right
    (row,) = load_dataset(str(tmp_path / "fd"), "mcq", split="test")
    assert row["image_file"] == "a.png" and row["question"] == HOW_MANY
    assert row["options"][row["answer"]] == "3" and row["options"][row["wrong_option"]] == "4"
    # distractors: other "how many" answers (5, 2, 7), never the reference or the wrong one
    assert set(row["options"]) - {"3", "4"} <= {"5", "2", "7"}
    card = (tmp_path / "fd" / "README.md").read_text()
    assert "1 of the 3 verified failures" in card and f"2: {NO_REFERENCE}" in card
    opened = load_dataset(str(tmp_path / "fd"), "open", split="test")
    assert [r["reference_answer"] for r in opened][:2] == ["3", None]


@pytest.mark.parametrize("config", ["open", None])
def test_an_open_only_build_is_not_exported(tmp_path: Path, capsys, config) -> None:
    source, _ = _source(tmp_path / "src", with_reference=False)
    _build(source, tmp_path / "fd")
    capsys.readouterr()
    cmd = ["export", "vlmevalkit", str(tmp_path / "fd"), "--out", str(tmp_path / "fd.tsv")]
    assert main(cmd + (["--config", config] if config else [])) != 0
    err = capsys.readouterr().err.strip().splitlines()
    # no mcq config to point to: the advice is not "--config mcq"
    assert len(err) == 1 and "kind open" in err[0] and "--config mcq" not in err[0], err
    assert not (tmp_path / "fd.tsv").exists()
