"""The wheel as a newcomer installs it (issue 27.1), full: installed into a
fresh venv over every ``[all]`` dependency, every CLI subcommand's ``--help`` and
happy path run from the installed package in a temporary working directory,
never from the checkout; then the demo, twice into one folder (issue 40.1).
The light install: tests/project/test_light_wheel.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fixtures.light_env import make_full_venv
from tests.fixtures.score import bench_c_features, bench_c_rows, write_bench_c
from tests.fixtures.wheel_cli import (
    assert_installed_not_checkout,
    check_helps,
    check_light_outputs,
    cli,
    light_paths,
    ok,
    one_dataset_suite,
    predictions,
)
from vlmrobust.cli.demo.discover_stage import DemoDiscover

# One worker under xdist (--dist loadgroup) for every user of the session's
# wheel and its venvs: each is built once per worker.
pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def full_python(tmp_path_factory: pytest.TempPathFactory, vlmrobust_wheel: Path) -> Path:
    return make_full_venv(tmp_path_factory.mktemp("full"), vlmrobust_wheel)


def _build_mcq(out: Path) -> list[str]:
    """`build` of a one-row-per-config ImageNet-MCQ sample into ``out``."""
    return ["build", "imagenet-mcq", "--sample", "--limit", "1", "--out", str(out),
            "--no-progress", "--workers", "1", "--threads", "1"]


def test_full_wheel_every_subcommand(full_python: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert_installed_not_checkout(full_python, cwd)
    paths = check_helps(full_python, cwd)
    built = tmp_path / "built"
    heavy: dict[str, list[list[str]]] = {
        "build": [_build_mcq(built)],
        "predict": [["predict", "--model", "classifier:efficientnet-lite0", "--dataset",
                     str(built), "--out", str(tmp_path / "lite0.parquet"), "--no-progress",
                     "--threads", "1"]],
    }
    happy = {**heavy, **light_paths(tmp_path)}
    happy["discover sample"] = [
        ["discover", "planted", "--out", str(tmp_path / "pl"), "--n", "2", "--questioner-out",
         str(tmp_path / "q")],
        ["discover", "sample", "--questioner", str(tmp_path / "q"), "--images",
         str(tmp_path / "pl"), "--answerer", "rule:blind=count", "--verifier", "rule:planted",
         "--out", str(tmp_path / "s.jsonl"), "--max-new-tokens", "30",
         "--samples-per-image", "3"]]
    happy["discover train"] = [
        ["discover", "train", "--questioner", str(tmp_path / "q"), "--images",
         str(tmp_path / "pl"), "--answerer", "rule:blind=count", "--verifier", "rule:planted",
         "--out", str(tmp_path / "grpo-run"), "--steps", "1", "--group-size", "2",
         "--images-per-step", "1", "--max-completion-length", "30", "--device", "cpu"]]
    happy["discover taxonomy"] = [
        ["discover", "taxonomy", str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "tax"),
         "--tagger", "rule:planted"]]
    happy["eval"].append(["eval", "--model", "classifier:efficientnet-lite0", "--suite",
                          str(one_dataset_suite(tmp_path / "built-suite.yaml", built)), "--out",
                          str(tmp_path / "eval"), "--no-progress", "--threads", "1"])
    keys = {" ".join(p) for p in paths}
    # the demo has its own test below
    assert keys == set(happy) | {"demo"}, "every subcommand needs a happy path here"
    for key, runs in happy.items():
        for args in runs:
            ok(cli(full_python, args, cwd), key)
    check_light_outputs(tmp_path)
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["submission"] == "submissions/efficientnet-lite0"
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["num_rows"] == len(manifest["configs"])  # --limit 1: one row per config
    r = cli(full_python, ["validate", "--dataset", str(built), "--predictions",
                          str(tmp_path / "lite0.parquet")], cwd)
    ok(r, "validate the reference run")


# A discover stage of the demo's code at the smallest size whose records still
# give failure-discovery an mcq config (16 images: enough distinct counting
# answers for the distractors); ~11 s of CPU instead of the demo's 12 GRPO
# steps, which tests/project/test_demo_discover.py runs and checks.
def _seed_stage() -> DemoDiscover:
    return DemoDiscover(images=16, sampled_images=16, steps=1, images_per_step=2,
                        group_size=2, threads=1)


def _seed_demo(out: Path, built_mcq: Path) -> None:
    """Datasets, the discover stage and predictions where a demo that was stopped
    after predicting left them: the demo then builds failure-discovery from the
    stage's records and runs its score, submit and render stages."""
    pytest.importorskip("trl")
    from tests.fixtures.classification import write_classification
    from tests.fixtures.ood import write_ood
    from vlmrobust.cli.commands.demo import DemoOptions
    from vlmrobust.cli.demo.discover_stage import run_discover
    from vlmrobust.core.writer import BuildInfo, write_dataset
    from vlmrobust.evaluation.suite.spec import load_suite

    run_discover(out / "discover", _seed_stage())
    datasets = out / "datasets"
    shutil.copytree(built_mcq, datasets / "imagenet-mcq")
    write_bench_c(datasets / "bench-c", n_questions=2)
    iw_rows = [{**r, "id": f"iw-{i}"} for i, r in enumerate(bench_c_rows(1)[:3])]
    write_dataset(datasets / "imagewikiqa", configs={"default": iw_rows},
                  features=bench_c_features(), card="toy imagewikiqa",
                  info=BuildInfo("imagewikiqa", "0.1.0", 0, sample=True))
    write_classification(datasets / "classification")
    write_ood(datasets / "ood")
    suite = load_suite(DemoOptions().suite)
    for i, (adapter, model_id, _) in enumerate(DemoOptions().models):
        # a family not seeded here (the cue-conflict stand-in) is built and
        # predicted by the demo itself, under the adapter's name as here
        answers = [d.name for d in suite.datasets
                   if suite.reader(adapter.partition(":")[0], d.name).skip is None]
        for family in (f for f in answers if (datasets / f).is_dir()):
            predictions(datasets / family,
                        out / "predictions" / model_id / family / "predictions.parquet",
                        adapter, seed=i,
                        # as the demo's own runs: a pipeline's family is "other", and the
                        # demo adds its own predictions to these submissions
                        family="classifier" if adapter.startswith("classifier:") else "other")


def test_full_wheel_demo_twice(full_python: Path, tmp_path: Path) -> None:
    from vlmrobust.cli.commands.demo import DemoOptions
    from vlmrobust.metrics.discovery.reward import RewardConfig

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    built = tmp_path / "built"
    ok(cli(full_python, _build_mcq(built), cwd), "build")
    demo = tmp_path / "demo"
    _seed_demo(demo, built)
    out = ok(cli(full_python, ["demo", "--out", str(demo)], cwd), "demo")
    assert out.count("already built; reusing") == 5
    assert out.count("already done; reusing") == 1  # the discover stage
    assert (demo / "site" / "index.html").is_file()
    subs = sorted(p.name for p in (demo / "submissions").iterdir() if not p.name.startswith("."))
    assert subs == sorted({m[1] for m in DemoOptions().models})
    # built by the demo itself: the retrieval sample (answered by the describe
    # pipeline), and the failure-discovery dataset from the stage's records
    describe = json.loads((demo / "submissions" / "efficientnet-lite0-minilm-describe"
                           / "scores.json").read_text())
    assert describe["datasets"]["retrieval"]["configs"]["sample-photo"]["n"] == 31
    fd = json.loads((demo / "datasets" / "failure-discovery" / "manifest.json").read_text())
    # images x samples x k slots, put to two answerers
    stage = _seed_stage()
    assert fd["configs"]["open"] == stage.sampled_images * stage.samples_per_image * RewardConfig().k * 2
    assert fd["configs"]["mcq"] > 0
    assert "QVR" in out and (demo / "site" / "failure-modes.html").is_file()
    # issue 37.1: the per-row details the model pages point to, one config per model--dataset
    details_card = (demo / "details" / "README.md").read_text(encoding="utf-8")
    assert "efficientnet-lite0--imagenet-mcq" in details_card
    assert f"details:     {demo / 'details'}" in out
    # issue 40.1: the README calls the demo idempotent; a second run into the same
    # folder reuses every build and re-submits the same predictions (it failed on
    # retrieval's scores.json) with identical fingerprints and scores
    before = _demo_state(demo)
    again = ok(cli(full_python, ["demo", "--out", str(demo)], cwd), "demo, second run")
    assert again.count("already built; reusing") == len(before[0]), again
    assert _demo_state(demo) == before


def _demo_state(demo: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every dataset's fingerprint and every submission's scores.json bytes."""
    prints = {p.parent.name: json.loads(p.read_text())["fingerprint"]
              for p in sorted((demo / "datasets").glob("*/manifest.json"))}
    scores = {p.parent.name: p.read_text() for p in sorted((demo / "submissions").glob("*/scores.json"))}
    assert len(prints) == 8 and scores, (prints, scores)
    return prints, scores
