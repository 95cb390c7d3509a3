"""Issue #40 hostile item 4: `demo --out X --fresh` deletes only what a demo
wrote (listed with inode, size and mtime in its ledger inside X), else refuses
naming the first entry that is not the demo's, before deleting anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures.hostile import hostile_folder, lstat_kind, snapshot
from tests.fixtures.safe_write import fails
from vlmrobust.cli.demo.ledger import LEDGER, Ledger, remove_own


def fake_demo(out: Path) -> None:
    """What a demo run leaves, written while its ledger watches."""
    ledger = Ledger(out)
    for rel in ("datasets/imagenet-mcq/manifest.json", "predictions/m/imagenet-mcq/p.parquet",
                "submissions/m/scores.json", "site/index.html", "discover/images/a.png",
                "discover/metrics.json"):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(rel)
    (out / "reference-runs.yaml").write_text("version: 1\n")
    ledger.save()


@pytest.mark.parametrize("theirs", ["datasets/my-survey.csv", "discover/notes.md",
                                    "predictions/my-model-outputs.jsonl", "site/index.html",
                                    "datasets/imagenet-mcq/.notes"])
def test_fresh_refuses_a_users_file_among_the_demos(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], theirs: str) -> None:
    out = hostile_folder(tmp_path / "demo")
    fake_demo(out)
    if (out / theirs).exists():  # replaced by the user's own page
        (out / theirs).unlink()
    (out / theirs).write_text("mine\n")
    before = snapshot(out)
    fails(["demo", "--out", str(out), "--fresh"], capsys, theirs, "not what the demo wrote")
    assert snapshot(out) == before


def test_fresh_removes_exactly_the_demos_entries(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = hostile_folder(tmp_path / "demo")
    theirs = snapshot(out)
    fake_demo(out)
    Ledger(out).save()  # a second run that wrote nothing new keeps every entry the demo's
    remove_own(out)
    assert snapshot(out) == theirs
    # something else in the place of one of its entries: refused before any work
    fake_demo(out)
    os.rename(out / "site", tmp_path / "site-aside")
    os.mkfifo(out / "site")
    fails(["demo", "--out", str(out), "--fresh"], capsys, "site is a FIFO")
    assert lstat_kind(out / "site") == "p" and (out / "datasets").is_dir()
    fails(["demo", "--out", str(out / "pipe")], capsys, "not a folder")


def test_fresh_refuses_entries_no_demo_listed(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "proj"
    (out / "site").mkdir(parents=True)
    (out / "site" / "index.html").write_text("my site\n")
    fails(["demo", "--out", str(out), "--fresh"], capsys, "site", LEDGER)
    assert (out / "site" / "index.html").read_text() == "my site\n"
    # a demo's first run beside a user's folder never claims it
    (out / "datasets").mkdir()
    (out / "datasets" / "my-survey.csv").write_text("a,b\n")
    fake_demo(out)
    fails(["demo", "--out", str(out), "--fresh"], capsys, "datasets")
    assert (out / "datasets" / "my-survey.csv").read_text() == "a,b\n"
