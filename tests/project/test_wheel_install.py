"""The wheel as a newcomer installs it (issue 27.1): built from the sources,
installed into fresh venvs (no extras; and over every ``[all]`` dependency),
every CLI subcommand's ``--help`` and happy path run from the installed package
in a temporary working directory, never from the checkout.

The editable install every other test uses hides a package left out of
pyproject's ``packages`` list (``vlmrobust.builders.convert`` once was): these
tests see it."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.fixtures.light_env import (
    listed_packages,
    make_full_venv,
    source_modules,
    source_packages,
)
from tests.fixtures.score import (
    bench_c_features,
    bench_c_rows,
    dataset_rows,
    write_bench_c,
    write_mcq,
)

REPO = Path(__file__).resolve().parents[2]
# One worker under xdist (--dist loadgroup) for every test of the session's
# wheel, its venvs and the demo stage the wheel test's demo resumes from: each
# is built once per worker.
pytestmark = pytest.mark.xdist_group("wheel")

# Lists the parser's subcommands (and leaderboard's actions) from the installed package.
_LIST_COMMANDS = """
import json
from vlmrobust.cli.main import make_parser
p = make_parser()
sub = next(a for a in p._actions if a.dest == "command")
out = {}
for name, cmd in sub.choices.items():
    inner = [a for a in cmd._actions
             if getattr(a, "dest", None) in ("leaderboard_command", "discover_command")]
    out[name] = sorted(inner[0].choices) if inner else []
print(json.dumps(out))
"""
# `--help` of every command path in one process (each exits 0 through SystemExit).
_HELPS = """
import contextlib, io, json, sys
from vlmrobust.cli.main import main
res = {}
for path in json.loads(sys.argv[1]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            main([*path, "--help"])
            code = 0
        except SystemExit as exc:
            code = exc.code
    res[" ".join(path)] = [code, buf.getvalue()]
print(json.dumps(res))
"""


def test_pyproject_lists_every_source_package() -> None:
    found = set(source_packages(REPO))
    listed = listed_packages(REPO)
    assert len(listed) == len(set(listed))
    assert sorted(found - set(listed)) == [], "add these to [tool.setuptools] packages"
    assert sorted(set(listed) - found) == [], "listed packages with no source folder"
    for name, folder in source_packages(REPO).items():
        assert (folder / "__init__.py").is_file(), f"{name}: {folder} lacks __init__.py"


def test_wheel_holds_every_source_module(vlmrobust_wheel: Path) -> None:
    names = set(zipfile.ZipFile(vlmrobust_wheel).namelist())
    missing = sorted(source_modules(REPO) - names)
    assert missing == [], f"modules missing from the wheel: {missing[:10]}"
    assert "vlmrobust/builders/convert/mcq.py" in names
    # nothing but vlmrobust at the top of site-packages
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"vlmrobust"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1"}


def _run(python: Path, args: list[str], cwd: Path, timeout: int = 300
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(), timeout=timeout)


def _cli(python: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # the console script the wheel installed, not `python -m` on a checkout
    script = python.parent / "vlmrobust"
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True, text=True,
                          env=_env(), timeout=300)


def _ok(r: subprocess.CompletedProcess[str], what: str) -> str:
    assert r.returncode == 0, f"{what}: rc {r.returncode}\n{r.stderr[-3000:]}"
    assert "Traceback" not in r.stderr, what
    return r.stdout


def _command_paths(python: Path, cwd: Path) -> list[list[str]]:
    tree = json.loads(_ok(_run(python, ["-c", _LIST_COMMANDS], cwd), "list commands"))
    return [[name, *([inner] if inner else [])]
            for name, actions in tree.items() for inner in (actions or [None])]


def _assert_installed_not_checkout(python: Path, cwd: Path) -> None:
    where = _ok(_run(python, ["-c", "import vlmrobust as m; print(m.__file__)"],
                     cwd), "import vlmrobust")
    assert "site-packages" in where and str(REPO) not in where, where


def _check_helps(python: Path, cwd: Path) -> list[list[str]]:
    paths = _command_paths(python, cwd)
    res = json.loads(_ok(_run(python, ["-c", _HELPS, json.dumps(paths)], cwd), "--help"))
    for key, (code, text) in res.items():
        assert code == 0 and text.startswith("usage: vlmrobust " + key), (key, code, text[:200])
    top = _ok(_cli(python, ["--help"], cwd), "vlmrobust --help")
    for path in paths:
        assert path[0] in top
    return paths


def _tsv(path: Path) -> Path:
    """A two-question benchmark in VLMEvalKit's published TSV layout."""
    def img(seed: int) -> str:
        arr = np.random.default_rng(seed).integers(0, 255, (16, 24, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(arr).save(buf, "JPEG")
        return base64.b64encode(buf.getvalue()).decode("ascii")
    header = ["index", "question", "A", "B", "C", "answer", "category", "image"]
    rows = [[0, "Which colour?", "red", "blue", "green", "B", "colour", img(0)],
            [1, "How many?", "one", "two", "three", "C", "count", img(1)]]
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def _predictions(ds: Path, out: Path, model: str, seed: int, family: str = "classifier") -> Path:
    import vlmrobust
    from tests.fixtures.classification import index_rows

    kind = json.loads((ds / "manifest.json").read_text()).get("kind")
    if kind == "ood":  # tests/fixtures/ood.py: 4 classes
        from tests.fixtures.ood import dataset_ids

        rows = [{"id": rid, "k": 4} for _, rid, _ in dataset_ids(ds)]
    else:
        rows = index_rows(ds) if kind == "classification" else dataset_rows(ds)
    rng = np.random.default_rng(seed)
    return vlmrobust.write_predictions(ds, [r["id"] for r in rows],
                                       [rng.normal(size=r["k"]).round(4).tolist() for r in rows],
                                       model=model, family=family, out=out)


def _light_paths(tmp: Path) -> dict[str, list[list[str]]]:
    """Happy paths that need no extra: (command path) -> CLI invocations."""
    ds = write_mcq(tmp / "ds")
    preds = _predictions(ds, tmp / "run" / "predictions.parquet", "toy-model", 0)
    preds_b = _predictions(ds, tmp / "run-b" / "predictions.parquet", "toy-model-b", 1)
    subs = tmp / "subs"
    return {
        "convert": [["convert", "vlmevalkit-tsv", str(_tsv(tmp / "bench.tsv")),
                     "--out", str(tmp / "converted")]],
        "validate": [["validate", "--dataset", str(ds), "--predictions", str(preds)]],
        "score": [["score", "--dataset", str(ds), "--predictions", str(preds),
                   "--out", str(tmp / "scores.json")]],
        "submit": [["submit", "--submissions", str(subs), "--model-id", "toy", "--dataset",
                    str(ds), "--predictions", str(preds)],
                   ["submit", "--submissions", str(subs), "--model-id", "toy-b", "--dataset",
                    str(ds), "--predictions", str(preds_b)]],
        "leaderboard build": [["leaderboard", "build", "--submissions", str(subs), "--out",
                               str(tmp / "site"), "--quiet", "--datasets", str(ds)]],
        "leaderboard publish": [["leaderboard", "publish", "--submissions", str(subs), "--site",
                                 str(tmp / "published"), "--quiet", "--datasets", str(ds)]],
        # the per-row details that publish wrote beside the site
        "compare": [["compare", "toy", "toy-b", "--dataset", "imagenet-mcq", "--details",
                     str(tmp / "details")]],
        "leaderboard record-reference": [["leaderboard", "record-reference", "--submissions",
                                          str(subs), "--model-id", "toy", "--record",
                                          str(tmp / "reference_runs.yaml")]],
        # the plan from the manifests; a dry run loads no model (no extra needed)
        "eval": [["eval", "--model", "classifier:efficientnet-lite0", "--suite",
                  str(_suite(tmp / "suite.yaml", ds)), "--dry-run"]],
        "models": [["models"]],
        "prompts": [["prompts"]],
        "export": [["export", "vlmevalkit", str(ds), "--out", str(tmp / "vr.tsv")]],
        "import": [["import", "vlmevalkit", str(_vlmevalkit_result(ds, tmp / "M_vr.jsonl")),
                    "--dataset", str(ds), "--out", str(tmp / "imported.parquet")]],
        "discover planted": [["discover", "planted", "--out", str(tmp / "planted"), "--n", "3"]],
        "discover evaluate": [["discover", "evaluate", str(_discover_records(tmp / "r.jsonl")),
                               "--out", str(tmp / "discover.json"), "--no-sd"]],
    }


def _suite(path: Path, ds: Path) -> Path:
    """A one-dataset suite (benchmarks/suites/ keys) over the local build ``ds``."""
    path.write_text(f"name: one\nversion: '1'\ndatasets: [{{name: imagenet-mcq, path: {ds}}}]\n"
                    "readers: {classifier: {imagenet-mcq: {}}}\n", encoding="utf-8")
    return path


def _discover_records(out: Path) -> Path:
    """Two question slots in the documented record format (docs/discover.md)."""
    base = {"image": "a.png", "image_sha256": "0" * 64, "completion_id": "a.png#0",
            "answer": "4", "valid_reason": "", "correct_reason": "", "verifier_parsed": True,
            "method": "zero-shot", "questioner": "q", "answerer": "a", "verifier": "v",
            "seed": 0}
    rows = [dict(base, slot=1, question="how many shapes ?", valid=True, correct=False),
            dict(base, slot=2, question="what color ?", valid=True, correct=True)]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def _vlmevalkit_result(ds: Path, out: Path) -> Path:
    """A VLMEvalKit result file for an export of ``ds``: our carried columns plus
    the model's raw output (the right letter) in ``prediction``."""
    fingerprint = json.loads((ds / "manifest.json").read_text())["fingerprint"]
    lines = [json.dumps({"index": i, "vlmrobust_id": r["id"], "vlmrobust_config": r["config"],
                         "vlmrobust_fingerprint": fingerprint, "vlmrobust_tsv": "vr",
                         "prediction": "ABCDE"[r["answer"]]})
             for i, r in enumerate(dataset_rows(ds))]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _check_light_outputs(tmp: Path) -> None:
    converted = json.loads((tmp / "converted" / "manifest.json").read_text())
    assert converted["num_rows"] == 2
    assert json.loads((tmp / "scores.json").read_text())["datasets"]["imagenet-mcq"]["configs"]
    assert (tmp / "subs" / "toy" / "scores.json").is_file()
    assert (tmp / "site" / "index.html").is_file()
    assert (tmp / "published" / "index.html").is_file()
    assert "model_id: toy" in (tmp / "reference_runs.yaml").read_text()
    assert (tmp / "vr.tsv").read_text(encoding="utf-8").startswith("index\timage\tquestion\tA")
    assert (tmp / "imported.parquet").is_file()
    assert len(list((tmp / "planted").glob("*.png"))) == 3
    assert json.loads((tmp / "discover.json").read_text())["rows"][0]["fdr"] == 0.5


@pytest.fixture(scope="module")
def full_python(tmp_path_factory: pytest.TempPathFactory, vlmrobust_wheel: Path) -> Path:
    return make_full_venv(tmp_path_factory.mktemp("full"), vlmrobust_wheel)


# Commands that need an extra: without it they say which, in one line.
NEEDS_EXTRA = {"build": "build", "predict": "predict", "demo": "predict",
               "discover sample": "predict", "discover train": "discover",
               "discover taxonomy": "predict"}


def test_light_wheel_every_subcommand(light_python: Path, tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    _assert_installed_not_checkout(light_python, cwd)
    paths = _check_helps(light_python, cwd)
    happy = _light_paths(tmp_path)
    keys = {" ".join(p) for p in paths}
    assert keys == set(happy) | set(NEEDS_EXTRA), "every subcommand needs a happy path here"
    for key, runs in happy.items():
        for args in runs:
            _ok(_cli(light_python, args, cwd), key)
    _check_light_outputs(tmp_path)
    # the repository's example, as a fresh clone holds it: its dataset build ships with it
    example = tmp_path / "example"
    shutil.copytree(REPO / "submissions", example, ignore=shutil.ignore_patterns(".*"))
    _ok(_cli(light_python, ["leaderboard", "build", "--submissions", str(example), "--out",
                            str(tmp_path / "example-site"), "--quiet"], cwd), "example board")
    ds = tmp_path / "ds"
    # inputs and outputs apart: discover refuses an --out inside an input folder
    (tmp_path / "q").mkdir()
    for cmd, args in {
        "build": ["build", "imagenet-mcq", "--sample", "--limit", "1", "--out", str(tmp_path / "b")],
        "predict": ["predict", "--model", "classifier:efficientnet-lite0", "--dataset", str(ds),
                    "--out", str(tmp_path / "p.parquet")],
        "demo": ["demo", "--out", str(tmp_path / "demo")],
        "discover sample": ["discover", "sample", "--questioner", str(tmp_path / "q"), "--images",
                            str(tmp_path / "planted"), "--answerer", "rule:blind=count",
                            "--verifier", "rule:planted", "--out", str(tmp_path / "s.jsonl")],
        "discover train": ["discover", "train", "--questioner", str(tmp_path / "q"), "--images",
                           str(tmp_path / "planted"), "--answerer", "rule:blind=count",
                           "--verifier", "rule:planted", "--out", str(tmp_path / "grpo-run")],
        "discover taxonomy": ["discover", "taxonomy", str(tmp_path / "r.jsonl"), "--out",
                              str(tmp_path / "tax"), "--tagger", "rule:planted"],
    }.items():
        r = _cli(light_python, args, cwd)
        assert r.returncode == 1 and "Traceback" not in r.stderr, (cmd, r.stderr[-2000:])
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and "pip install 'vlmrobust[" in line, (cmd, line)


def _seed_demo(out: Path, built_mcq: Path, discover: Path) -> None:
    """Datasets, the discover stage and predictions where a demo that was stopped
    after predicting left them: the demo then builds failure-discovery from the
    stage's records and runs its score, submit and render stages. The stage
    itself (GRPO from the same code) is the one tests/project/test_demo_discover.py
    checks; training it again here only cost time."""
    from vlmrobust.core.writer import BuildInfo, write_dataset

    shutil.copytree(discover, out / "discover")
    datasets = out / "datasets"
    shutil.copytree(built_mcq, datasets / "imagenet-mcq")
    write_bench_c(datasets / "bench-c", n_questions=2)
    iw_rows = [{**r, "id": f"iw-{i}"} for i, r in enumerate(bench_c_rows(1)[:3])]
    write_dataset(datasets / "imagewikiqa", configs={"default": iw_rows},
                  features=bench_c_features(), card="toy imagewikiqa",
                  info=BuildInfo("imagewikiqa", "0.1.0", 0, sample=True))
    from tests.fixtures.classification import write_classification
    from vlmrobust.cli.commands.demo import DemoOptions

    write_classification(datasets / "classification")
    from tests.fixtures.ood import write_ood

    write_ood(datasets / "ood")

    from vlmrobust.evaluation.suite.spec import load_suite

    suite = load_suite(DemoOptions().suite)
    for i, (adapter, model_id, _) in enumerate(DemoOptions().models):
        # a family not seeded here (the cue-conflict stand-in) is built and
        # predicted by the demo itself, under the adapter's name as here
        answers = [d.name for d in suite.datasets
                   if suite.reader(adapter.partition(":")[0], d.name).skip is None]
        for family in (f for f in answers if (datasets / f).is_dir()):
            _predictions(datasets / family,
                         out / "predictions" / model_id / family / "predictions.parquet",
                         adapter, seed=i,
                         # as the demo's own runs: a pipeline's family is "other", and the
                         # demo adds its own predictions to these submissions
                         family="classifier" if adapter.startswith("classifier:") else "other")


def test_full_wheel_every_subcommand(full_python: Path, tmp_path: Path,
                                    demo_discover: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    _assert_installed_not_checkout(full_python, cwd)
    paths = _check_helps(full_python, cwd)
    built = tmp_path / "built"
    heavy: dict[str, list[list[str]]] = {
        "build": [["build", "imagenet-mcq", "--sample", "--limit", "1", "--out", str(built),
                   "--no-progress", "--workers", "1", "--threads", "1"]],
        "predict": [["predict", "--model", "classifier:efficientnet-lite0", "--dataset",
                     str(built), "--out", str(tmp_path / "lite0.parquet"), "--no-progress",
                     "--threads", "1"]],
    }
    happy = {**heavy, **_light_paths(tmp_path)}
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
                          str(_suite(tmp_path / "built-suite.yaml", built)), "--out",
                          str(tmp_path / "eval"), "--no-progress", "--threads", "1"])
    keys = {" ".join(p) for p in paths}
    assert keys == set(happy) | {"demo"}, "every subcommand needs a happy path here"
    for key, runs in happy.items():
        for args in runs:
            _ok(_cli(full_python, args, cwd), key)
    _check_light_outputs(tmp_path)
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["submission"] == "submissions/efficientnet-lite0"
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["num_rows"] == len(manifest["configs"])  # --limit 1: one row per config
    r = _cli(full_python, ["validate", "--dataset", str(built), "--predictions",
                           str(tmp_path / "lite0.parquet")], cwd)
    _ok(r, "validate the reference run")
    demo = tmp_path / "demo"
    _seed_demo(demo, built, demo_discover)
    out = _ok(_cli(full_python, ["demo", "--out", str(demo)], cwd), "demo")
    assert out.count("already built; reusing") == 5
    assert out.count("already done; reusing") == 1  # the discover stage
    assert (demo / "site" / "index.html").is_file()
    from vlmrobust.cli.commands.demo import DemoOptions

    subs = sorted(p.name for p in (demo / "submissions").iterdir() if not p.name.startswith("."))
    assert subs == sorted({m[1] for m in DemoOptions().models})
    # built by the demo itself: the retrieval sample (answered by the describe
    # pipeline), the discover stage and the failure-discovery dataset from its records
    describe = json.loads((demo / "submissions" / "efficientnet-lite0-minilm-describe"
                           / "scores.json").read_text())
    assert describe["datasets"]["retrieval"]["configs"]["sample-photo"]["n"] == 31
    fd = json.loads((demo / "datasets" / "failure-discovery" / "manifest.json").read_text())
    assert fd["configs"]["open"] == 256 and fd["configs"]["mcq"] > 0
    assert "QVR" in out and (demo / "site" / "failure-modes.html").is_file()
    # issue 37.1: the per-row details the model pages point to, one config per model--dataset
    details_card = (demo / "details" / "README.md").read_text(encoding="utf-8")
    assert "efficientnet-lite0--imagenet-mcq" in details_card
    assert f"details:     {demo / 'details'}" in out
    # issue 40.1: the README calls the demo idempotent; a second run into the same
    # folder reuses every build and re-submits the same predictions (it failed on
    # retrieval's scores.json) with identical fingerprints and scores
    before = _demo_state(demo)
    again = _ok(_cli(full_python, ["demo", "--out", str(demo)], cwd), "demo, second run")
    assert again.count("already built; reusing") == len(before[0]), again
    assert _demo_state(demo) == before


def _demo_state(demo: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every dataset's fingerprint and every submission's scores.json bytes."""
    prints = {p.parent.name: json.loads(p.read_text())["fingerprint"]
              for p in sorted((demo / "datasets").glob("*/manifest.json"))}
    scores = {p.parent.name: p.read_text() for p in sorted((demo / "submissions").glob("*/scores.json"))}
    assert len(prints) == 8 and scores, (prints, scores)
    return prints, scores
