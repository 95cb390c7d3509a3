"""Issue 35's Done-when for `vlmrobust eval` on small real builds (the sample
suite's imagenet-mcq, classification and ood families, written in tmp_path)
with the real EfficientNet-Lite0:

- its scores equal, number for number, those of the chained `predict` /
  `score` / `submit` commands on the same builds (every headline and interval);
- the submission folder it writes passes `leaderboard build` as it is;
- a kill at a seeded random point and a rerun give the same results.json
  (timing aside) and the same submission folder, byte for byte;
- `--limit` is marked partial in every output and never submitted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.classification import write_classification
from tests.fixtures.hostile import snapshot
from tests.fixtures.ood import ood_rows, write_ood
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main

REPO = Path(__file__).resolve().parents[3]
MODEL = "classifier:efficientnet-lite0"
DATASETS = ("imagenet-mcq", "classification", "ood")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    write_mcq(root / "imagenet-mcq", {"a": 4, "b": 3})
    write_classification(root / "classification", n=4, k=3)
    write_ood(root / "ood", ood_rows(n_id=4, n_textures=2, ninco=(2, 2)))
    return root


def _eval(store: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--model", MODEL, "--suite", "sample", "--dataset-store", str(store),
                 "--datasets", *DATASETS, "--out", str(out), "--no-progress", "--device", "cpu",
                 *extra])


@pytest.fixture(scope="module")
def evaluated(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "out"
    assert _eval(store, out) == 0
    return out


def _without(obj: Any, keys: set[str]) -> Any:
    if isinstance(obj, dict):
        return {k: _without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_without(v, keys) for v in obj]
    return obj


def test_eval_equals_chained_predict_score_submit(store: Path, evaluated: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    results = json.loads((evaluated / "results.json").read_text())
    subs = tmp_path / "submissions"
    for name in DATASETS:
        pred = tmp_path / name / "predictions.parquet"
        assert main(["predict", "--model", MODEL, "--dataset", str(store / name), "--out",
                     str(pred), "--no-progress", "--device", "cpu"]) == 0
        assert main(["score", "--dataset", str(store / name), "--predictions", str(pred),
                     "--out", str(tmp_path / name / "scores.json")]) == 0
        assert main(["submit", "--submissions", str(subs), "--model-id", "efficientnet-lite0",
                     "--dataset", str(store / name), "--predictions", str(pred)]) == 0
    chained = json.loads((subs / "efficientnet-lite0" / "scores.json").read_text())
    mine = json.loads((evaluated / "submissions" / "efficientnet-lite0" / "scores.json")
                      .read_text())
    # the predictions' sha256 covers their metadata's timestamp: every other number
    assert _without(mine, {"predictions_sha256"}) == _without(chained, {"predictions_sha256"})
    from vlmrobust.evaluation.suite.results import headlines

    entries = {e["dataset"]: e for e in results["entries"]}
    n_checked = 0
    for name in DATASETS:
        scored = json.loads((tmp_path / name / "scores.json").read_text())["datasets"][name]
        assert entries[name]["headlines"] == headlines(scored)
        for h in entries[name]["headlines"]:
            assert isinstance(h["value"], float) and len(h["ci"]) == 2 and h["n"] > 0
            n_checked += 1
    # 2 + 2 accuracies, ood: imagenet-val accuracy + 2 OOD sets' AUROC
    assert n_checked == 7
    cls = chained["datasets"]["classification"]["configs"]["toy"]
    assert {"config": "toy", "metric": "accuracy", "value": cls["accuracy"],
            "ci": cls["accuracy_ci"], "n": cls["n"]} in entries["classification"]["headlines"]


def test_results_json_records_the_run(evaluated: Path, store: Path) -> None:
    from vlmrobust.core.datadir import read_manifest

    r = json.loads((evaluated / "results.json").read_text())
    assert r["suite"]["name"] == "sample" and r["suite"]["version"] == "1.0.0"
    assert r["model"] == MODEL and r["model_id"] == "efficientnet-lite0" and r["partial"] is False
    assert r["submission"] == "submissions/efficientnet-lite0"
    assert r["backend"]["device"] == "cpu" and r["packages"]["numpy"] == np.__version__
    assert "git_revision" in r and r["timing"]["this_run_s"] > 0
    done = [e for e in r["entries"] if e["status"] == "done"]
    assert [e["dataset"] for e in done] == list(DATASETS)
    for e in done:
        assert e["fingerprint"] == read_manifest(store / e["dataset"])["fingerprint"]
        assert e["reader"]["mode"] == "class-logits" and e["timing"]["predict_s"] > 0
        sub = evaluated / "submissions" / "efficientnet-lite0" / e["dataset"]
        assert (sub / "predictions.parquet").is_file() and (sub / "rows.jsonl").is_file()
    assert not [e for e in r["entries"] if e["status"] != "done"]  # --datasets kept the three


def test_report_opens_the_model_page_from_disk(evaluated: Path) -> None:
    """report.html sends the browser to the model's page of the run's own site, whose
    every image and link to a page of the site is a file beside it (no server)."""
    import re

    report = (evaluated / "report.html").read_text()
    target = evaluated / re.search(r'url=([^"]+)"', report).group(1)  # type: ignore[union-attr]
    assert target == evaluated / "site" / "models" / "efficientnet-lite0.html"
    page = target.read_text()
    assert "efficientnet-lite0" in page and "imagenet-mcq" in page and "classification" in page
    refs = re.findall(r'(?:src|href)="([^"#:]+\.(?:svg|html|png))"', page)
    assert refs and all((target.parent / r).resolve().is_file() for r in refs), refs


def test_eval_submission_passes_leaderboard_build(evaluated: Path, store: Path,
                                                  tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert main(["leaderboard", "build", "--submissions", str(evaluated / "submissions"),
                 "--out", str(site), "--dataset-store", str(store)]) == 0
    assert "efficientnet-lite0" in (site / "index.html").read_text()


def test_torchrun_two_ranks_equal_one_process(store: Path, evaluated: Path,
                                              tmp_path: Path) -> None:
    """Under torchrun every rank predicts its share of each dataset and rank 0
    scores and writes: the same headlines as the one-process run."""
    out = tmp_path / "multi"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "vlmrobust", "eval", "--model", MODEL, "--suite", "sample", "--dataset-store",
         str(store), "--datasets", "imagenet-mcq", "classification", "--out", str(out),
         "--device", "cpu", "--no-progress", "--batch-size", "2"],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("wrote ") == 1  # rank 0 reports
    multi = json.loads((out / "results.json").read_text())
    single = json.loads((evaluated / "results.json").read_text())
    assert multi["backend"]["world_size"] == 2
    heads = {e["dataset"]: e["headlines"] for e in single["entries"]}
    for e in multi["entries"]:
        assert e["status"] == "done" and e["headlines"] == heads[e["dataset"]]


def test_skips_and_table_are_printed(store: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The pipeline family answers none of these three: each is one skip line with
    the suite's reason, not a failure; nothing is submitted."""
    assert main(["eval", "--model", "pipeline:efficientnet-lite0+minilm", "--suite", "sample",
                 "--dataset-store", str(store), "--datasets", *DATASETS, "--out",
                 str(tmp_path / "o"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    for name in DATASETS:
        assert f"skipped {name}: suite sample gives pipeline: models no reader for {name}" in out
    r = json.loads((tmp_path / "o" / "results.json").read_text())
    assert r["submission"] is None and {e["status"] for e in r["entries"]} == {"skipped"}


def test_limit_is_partial_everywhere(store: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["eval", "--model", MODEL, "--suite", "sample", "--dataset-store", str(store),
                 "--datasets", "imagenet-mcq", "--limit", "2", "--out", str(out),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "PARTIAL run (--limit 2)" in printed
    r = json.loads((out / "results.json").read_text())
    assert r["partial"] is True and r["limit"] == 2 and r["submission"] is None
    entry = r["entries"][0]
    assert entry["partial"] == {"limit": 2, "rows": 4, "of": 7} and entry["rows"] == 4
    scores = json.loads((out / "scores" / "imagenet-mcq.json").read_text())
    assert scores["datasets"]["imagenet-mcq"]["partial"]["limit"] == 2
    assert not (out / "submissions").exists()
    # a rerun into the same --out with another limit keeps nothing of the first:
    # refused in one line, before any model loads, results.json untouched
    before = (out / "results.json").read_bytes()
    assert main(["eval", "--model", MODEL, "--suite", "sample", "--dataset-store", str(store),
                 "--datasets", "imagenet-mcq", "--limit", "3", "--out", str(out),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "predictions of another run (limit 2, this run: 3)" in err and err.count("\n") == 1
    assert (out / "results.json").read_bytes() == before


# A child `vlmrobust eval` whose clock is frozen (the predictions' metadata date
# is the one timestamp outside results.json's timing) and which SIGKILLs itself
# at event KILL_AT (a journaled predict batch, or a finished submit), -1: never.
CHILD = textwrap.dedent("""
    import datetime, os, signal, sys, types
    import vlmrobust.evaluation.predict.dataset as predict
    import vlmrobust.evaluation.submissions as submissions

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime(2026, 12, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)

    predict._dt = types.SimpleNamespace(datetime=Clock, timezone=datetime.timezone)
    kill_at, events = int(os.environ["KILL_AT"]), [0]
    def tick():
        events[0] += 1
        if events[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    real_batches, real_add = predict.run_batches, submissions.add_submission
    def run_batches(adapter, reader, todo, batch_size, journal, progress, total,
                    after_batch=None, **k):
        def hook(n):
            if after_batch is not None:
                after_batch(n)
            tick()
        return real_batches(adapter, reader, todo, batch_size, journal, progress, total, hook,
                            **k)
    predict.run_batches = run_batches
    def add_submission(*a, **k):
        result = real_add(*a, **k)
        tick()
        return result
    submissions.add_submission = add_submission
    from vlmrobust.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def _child(store: Path, out: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), KILL_AT=str(kill_at), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", CHILD, "eval", "--model", MODEL, "--suite",
                           "sample", "--dataset-store", str(store), "--datasets", "imagenet-mcq",
                           "classification", "--out", str(out), "--no-progress", "--device",
                           "cpu", "--batch-size", "2", "--threads", "1"],
                          env=env, capture_output=True, text=True, timeout=600)


def test_kill_at_a_random_point_then_rerun_is_byte_identical(store: Path, tmp_path: Path) -> None:
    # 4 + 4 predict batches (7 and 8 rows, batch size 2), 2 submits: 10 events
    ref = _child(store, tmp_path / "ref", -1)
    assert ref.returncode == 0, ref.stderr[-2000:]
    events = list(range(1, 11))
    points = sorted(np.random.default_rng(35).choice(events, size=2, replace=False).tolist())
    for kill_at in points:
        out = tmp_path / f"k{kill_at}"
        killed = _child(store, out, kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr[-2000:])
        assert not (out / "results.json").exists()
        again = _child(store, out, -1)
        assert again.returncode == 0, again.stderr[-2000:]
        a = json.loads((tmp_path / "ref" / "results.json").read_text())
        b = json.loads((out / "results.json").read_text())
        assert _without(a, {"timing"}) == _without(b, {"timing"}), kill_at
        sub_a = snapshot(tmp_path / "ref" / "submissions" / "efficientnet-lite0")
        sub_b = snapshot(out / "submissions" / "efficientnet-lite0")
        assert {k: v[2] for k, v in sub_a.items()} == {k: v[2] for k, v in sub_b.items()}
