"""Submit is all-or-nothing and locked: another model's predictions under an
id are refused, a failure midway or a kill between the swap renames changes
nothing, and concurrent submits to one model keep every section."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.score import (
    write_bench_c,
    write_mcq,
)
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation import submissions as submissions_mod
from vlmrobust.evaluation.submissions import add_submission


def _dead_pid() -> int:
    """The pid of a process that has exited: only a dead process's leftovers
    are recovered (a fixed number could belong to a live process)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_submit_refuses_another_models_predictions_under_an_id(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, perfect_predictions(ds, tmp_path / "a.parquet", model="model-a"))
    with pytest.raises(SubmissionError, match="holds predictions of model 'model-a'"):
        add_submission(subs, "m", bc, perfect_predictions(bc, tmp_path / "b.parquet", model="model-b"))
    with pytest.raises(SubmissionError, match="names model_id 'other'"):
        add_submission(subs, "m", bc, perfect_predictions(bc, tmp_path / "c.parquet", model="model-a",
                                               model_id="other"))
    assert sorted(p.name for p in (subs / "m").iterdir()) == ["imagenet-mcq", "meta.yaml",
                                                              "scores.json"]


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_submit_failure_midway_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, perfect_predictions(ds, tmp_path / "a.parquet"))
    before = _snapshot(subs / "m")

    def boom(folder: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(submissions_mod, "_fsync_tree", boom)
    with pytest.raises(OSError):
        add_submission(subs, "m", bc, perfect_predictions(bc, tmp_path / "b.parquet"))
    assert _snapshot(subs / "m") == before
    # through the CLI: one line naming the cause
    rc, err = run_cli(["submit", "--submissions", str(subs), "--model-id", "m", "--dataset",
                    str(bc), "--predictions", str(tmp_path / "b.parquet")], capsys)
    assert rc == 1 and "No space left on device" in err
    one_line_error(err)
    assert _snapshot(subs / "m") == before
    assert not [p for p in subs.iterdir() if ".building-" in p.name]


def test_kill_between_the_swap_renames_is_recovered(tmp_path: Path) -> None:
    ds = write_mcq(tmp_path / "imagenet-mcq")
    bc = write_bench_c(tmp_path / "bench-c")
    subs = tmp_path / "subs"
    add_submission(subs, "m", ds, perfect_predictions(ds, tmp_path / "a.parquet"))
    before = _snapshot(subs / "m")
    # what a kill after the first rename leaves (swap_in marks it before the rename)
    pid = _dead_pid()
    (subs / "m" / ".vlmrobust-swap").write_text(f"{pid}\n")
    os.replace(subs / "m", subs / f".m.old-{pid}")
    scores = add_submission(subs, "m", bc, perfect_predictions(bc, tmp_path / "b.parquet"))
    assert sorted(scores["datasets"]) == ["bench-c", "imagenet-mcq"]
    after = _snapshot(subs / "m")
    assert after["imagenet-mcq/predictions.parquet"] == before["imagenet-mcq/predictions.parquet"]
    assert not list(subs.glob(".m.old-*"))


def _submit_worker(args: tuple[str, str, str, str]) -> str:
    subs, model_id, ds, pred = args
    add_submission(subs, model_id, ds, pred)
    return ds


def test_concurrent_submits_to_one_model_keep_every_section(tmp_path: Path) -> None:
    datasets = [write_mcq(tmp_path / "imagenet-mcq"), write_bench_c(tmp_path / "bench-c")]
    preds = [perfect_predictions(d, tmp_path / f"p{i}.parquet") for i, d in enumerate(datasets)]
    ctx = multiprocessing.get_context("fork")
    for round_ in range(3):
        subs = tmp_path / f"subs{round_}"
        jobs = [(str(subs), "m", str(d), str(p)) for d, p in zip(datasets, preds, strict=True)]
        with ctx.Pool(2) as pool:
            pool.map(_submit_worker, jobs)
        scores = json.loads((subs / "m" / "scores.json").read_text())
        assert sorted(scores["datasets"]) == ["bench-c", "imagenet-mcq"]
        assert sorted(p.name for p in (subs / "m").iterdir()) == [
            "bench-c", "imagenet-mcq", "meta.yaml", "scores.json"]
