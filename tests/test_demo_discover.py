"""The demo's failure-discovery stage (issue 25 item 6): GRPO steps of the tiny
questioner against the planted counting-blind answerer, then the trained
questioner's questions judged and scored. A shortened run; the metrics file is
checked against the records it was computed from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlmrobust.cli.commands.demo_discover import DemoDiscover, complete, run_discover, summary
from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.planted import question_type

pytest.importorskip("trl")


def test_demo_discover_stage(tmp_path: Path) -> None:
    folder = tmp_path / "discover"
    settings = DemoDiscover(images=8, sampled_images=4, steps=2, images_per_step=2,
                            group_size=2, samples_per_image=3)
    assert not complete(folder)
    row = run_discover(folder, settings)
    assert complete(folder)
    run = json.loads((folder / "run" / "discover_run.json").read_text())
    assert run["steps_done"] == 2 and len(run["history"]) == 2
    recs = read_records(folder / "records.jsonl")
    assert len(recs) == 4 * 3 * 2  # images x samples x k
    assert {r.method for r in recs} == {"rl"} and {r.step for r in recs} == {2}
    assert {r.answerer for r in recs} == {"rule-answerer:blind=count"}
    # the rule answerer is wrong on counting only: every failure is a counting question
    assert all(question_type(r.question) == "count" for r in recs if r.failure)
    # tagged with the planted skills
    assert all(r.skills for r in recs if r.valid)
    valid = [r for r in recs if r.valid]
    assert row["n_questions"] == len(recs) and row["n_valid"] == len(valid)
    assert row["qvr"] == pytest.approx(len(valid) / len(recs), abs=1e-6)
    if valid:
        assert row["fdr"] == pytest.approx(sum(r.failure for r in valid) / len(valid), abs=1e-6)
    assert f"{row['n_failures']} failures" in summary(folder)


def test_demo_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="group_size"):
        DemoDiscover(group_size=1)
    with pytest.raises(ValueError, match=">= 1"):
        DemoDiscover(steps=0)
