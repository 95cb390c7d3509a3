"""The demo's failure-discovery stage (issue 25 item 6): GRPO steps of the tiny
questioner against the planted counting-blind answerer, the trained
questioner's questions put to that answerer and to one blind to colour, judged
and scored, then built into the failure-discovery family. The stage at the
demo's own settings, run once per session (the ``demo_discover`` fixture, which
the wheel test's demo resumes from); the metrics are checked against the
records they were computed from and the MCQ rows against the failures."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from vlmrobust.builders.failure_discovery.choices import TOO_FEW
from vlmrobust.cli.demo.discover_stage import (
    DemoDiscover,
    build_dataset,
    complete,
    run_discover,
    summary,
)
from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.planted import question_type
from vlmrobust.metrics.discovery.reward import RewardConfig

pytest.importorskip("trl")


def test_demo_discover_stage(tmp_path: Path) -> None:
    folder = tmp_path / "discover"
    run_discover(folder)
    s = DemoDiscover()
    assert complete(folder) and not complete(tmp_path)
    rows = json.loads((folder / "metrics.json").read_text())["rows"]
    run = json.loads((folder / "run" / "discover_run.json").read_text())
    assert run["steps_done"] == s.steps and len(run["history"]) == s.steps
    by = {b: read_records(folder / "records" / f"blind-{b}.jsonl") for b in ("count", "color")}
    for blind, recs in by.items():
        # images x samples x k
        assert len(recs) == s.sampled_images * s.samples_per_image * RewardConfig().k
        assert {r.method for r in recs} == {"rl"} and {r.step for r in recs} == {s.steps}
        assert {r.answerer for r in recs} == {f"rule-answerer:blind={blind}"}
        # a rule answerer is wrong on its blind type only
        assert all(question_type(r.question) == blind for r in recs if r.failure)
        assert all(r.skills for r in recs if r.valid)
    # one questioner, one seed: both answerers were asked the same questions
    assert [r.question for r in by["count"]] == [r.question for r in by["color"]]
    assert len(rows) == 2
    for row in rows:
        recs = by[row["answerer"].rsplit("=", 1)[1]]
        valid = [r for r in recs if r.valid]
        assert row["n_questions"] == len(recs) and row["n_valid"] == len(valid)
        assert row["qvr"] == pytest.approx(len(valid) / len(recs), abs=1e-6)
        if valid:
            assert row["fdr"] == pytest.approx(sum(r.failure for r in valid) / len(valid),
                                               abs=1e-6)
    lines = summary(folder)
    assert len(lines) == 2 and all(f"{r['n_failures']} failures" in " ".join(lines) for r in rows)

    # A failure, not a skip: the seeded run asks counting questions, and without a
    # counting failure the family build below (the stage's last step) is never checked.
    count_failures = sum(r.failure for r in by["count"])
    assert count_failures > 0, "the seeded demo run asked no counting question"
    manifest = build_dataset(folder, tmp_path / "fd")
    assert manifest["configs"]["open"] == sum(len(recs) for recs in by.values())
    # every failure has a reference (each answerer is right on the other's blind
    # type): it is an mcq row unless these few images leave too few distractors
    failures = count_failures + sum(r.failure for r in by["color"])
    skipped = manifest["mcq_skipped"]
    assert manifest["configs"].get("mcq", 0) + sum(skipped.values()) == failures
    assert set(skipped) <= {TOO_FEW}
    # the card states the run the questioner came from (one run behind both files)
    card = (tmp_path / "fd" / "README.md").read_text()
    assert "no run record" not in card
    runs = manifest["source_runs"]
    assert len(runs) == 1 and runs[0]["sha256"] == hashlib.sha256(
        (folder / "run" / "discover_run.json").read_bytes()).hexdigest()


def test_two_runs_build_the_same_fingerprint(tmp_path: Path) -> None:
    """Issue 34 item 9: the same settings in two folders give the same
    failure-discovery dataset. The questioner was named after its folder's
    path (local:questioner@<hash of the path>), so every row differed; the run
    record held the absolute checkpoint folder."""
    settings = DemoDiscover(images=6, sampled_images=3, steps=1, images_per_step=2,
                            group_size=2, samples_per_image=2)
    built = []
    for name in ("a", "elsewhere/b"):
        folder = tmp_path / name / "discover"
        run_discover(folder, settings)
        built.append((folder, build_dataset(folder, tmp_path / name / "fd")))
    (a, ma), (b, mb) = built
    assert ma["fingerprint"] == mb["fingerprint"]
    for rel in ("run/journal.jsonl", "records/blind-count.jsonl", "records/blind-color.jsonl"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    ra, rb = (json.loads((f / "run" / "discover_run.json").read_text()) for f in (a, b))
    for r in (ra, rb):  # when and how fast it ran: the only differences
        del r["started"], r["train_seconds"]
    assert ra == rb and ra["torch_threads"] == settings.threads
    assert str(tmp_path) not in (b / "run" / "discover_run.json").read_text()
    assert "seed 004 Eq. 1" in (tmp_path / "a" / "fd" / "README.md").read_text()


def test_demo_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="group_size"):
        DemoDiscover(group_size=1)
    with pytest.raises(ValueError, match=">= 1"):
        DemoDiscover(steps=0)
    with pytest.raises(ValueError, match="second_blind"):
        DemoDiscover(second_blind="count")
