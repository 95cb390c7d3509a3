"""Issue 35, suites as data: benchmarks/suites/*.yaml load into validated frozen
dataclasses; a bad suite is one line naming the file and the key; `eval
--dry-run` lists every dataset, config and row count of a suite from the
manifests, and the skips with their reasons, without loading a model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.predict import mcq_features, mcq_rows
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.core.errors import SpecError
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.suite.spec import available_suites, load_suite

REPO = Path(__file__).resolve().parents[3]
FAMILIES = ("imagenet-mcq", "bench-c", "imagewikiqa", "classification", "cue-conflict", "ood",
            "retrieval", "failure-discovery")
SEED_SUITES = ("seed000-imagenet-mcq", "seed001-holistic", "seed002-classification",
               "seed003-bench-c", "seed004-failure-modes")


def test_every_named_suite_ships_and_loads() -> None:
    assert set(available_suites()) == {"sample", "full", *SEED_SUITES}
    for name in available_suites():
        suite = load_suite(name)
        assert suite.name == name and suite.version == "1.0.0"
        assert all(d.store == d.name for d in suite.datasets)
    for name in ("sample", "full"):
        suite = load_suite(name)
        assert sorted(d.name for d in suite.datasets) == sorted(FAMILIES)
        fd = next(d for d in suite.datasets if d.name == "failure-discovery")
        assert fd.configs == ("mcq",)  # `open` holds verdicts, not questions to answer
    # the seed's protocol where the seed states it (quoted in the suite files)
    assert load_suite("seed002-classification").reader("vlm", "classification").class_order == \
        "random"
    assert load_suite("seed001-holistic").reader("clip", "classification").prompt == "openai-80"
    assert load_suite("seed003-bench-c").reader("endpoint", "bench-c").mode == "letter"
    skip = load_suite("sample").reader("classifier", "retrieval").skip
    assert skip and "embeddings" in skip
    assert "no reader for bench-c" in (load_suite("sample").reader("pipeline", "bench-c").skip or "")


BAD = [
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreader: {}\n", "unknown key 'reader'"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a, hub: o/a, revision: v1}]\n",
     "exactly one of store, path, hub"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, hub: o/a}]\n", "hub needs OWNER/NAME and a revision"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}, {name: a, store: b}]\n", "a listed twice"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreaders: {vlm: {b: {}}}\n",
     "readers.vlm: b is not in datasets"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreaders: {vllm: {a: {}}}\n",
     "readers.vllm: unknown model family"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreaders: {vlm: {a: {mode: leter}}}\n",
     "readers.vlm.a.mode"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreaders: {classifier: {a: {mode: letter}}}\n",
     "answer modes apply to vlm and endpoint models"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a}]\nreaders: {vlm: {a: {skip: x, mode: letter}}}\n",
     "skip excludes mode"),
    ("name: s\nversion: '1'\ndatasets: [{name: a, store: a, configs: []}]\n", "configs is empty"),
    ("name: s\ndatasets: [{name: a, store: a}]\n", "version"),
    ("- just a list\n", "a suite is a YAML mapping"),
]


@pytest.mark.parametrize(("text", "needle"), BAD)
def test_bad_suite_is_one_line_naming_file_and_key(tmp_path: Path, text: str, needle: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_suite(str(path))
    assert str(path) in str(info.value) and needle in str(info.value), info.value
    rc, err = run_cli(["eval", "--model", "classifier:efficientnet-lite0", "--suite", str(path),
                       "--out", str(tmp_path / "out")], capsys)
    assert rc == 1 and needle in err
    one_line_error(err)
    assert not (tmp_path / "out").exists()


def test_unknown_suite_name_suggests(capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = run_cli(["eval", "--model", "classifier:efficientnet-lite0", "--suite", "smaple",
                       "--dry-run"], capsys)
    assert rc == 1 and "did you mean 'sample'" in err
    one_line_error(err)


def _store(root: Path, sizes: dict[str, dict[str, int]]) -> Path:
    """Tiny MCQ builds under the names of the families (a dry run reads manifests only)."""
    for family, configs in sizes.items():
        write_dataset(root / family, configs={c: mcq_rows(c, n) for c, n in configs.items()},
                      features=mcq_features(), card="tiny",
                      info=BuildInfo(family, "1.0.0", seed=0, sample=True), rows_per_shard=8)
    return root


SIZES = {f: {f"{f}-x": 2 + i, f"{f}-y": 1} for i, f in enumerate(FAMILIES)}
SIZES["failure-discovery"] = {"open": 5, "mcq": 3}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _store(tmp_path_factory.mktemp("store"), SIZES)


def test_dry_run_on_full_lists_everything_without_loading_a_model(store: Path,
                                                                  tmp_path: Path) -> None:
    """A child process (so that no other test's imports count): the plan names every
    dataset, config and row count, the total, and torch is never imported."""
    script = ("import sys\nfrom vlmrobust.cli.main import main\n"
              "rc = main(sys.argv[1:])\n"
              "assert 'torch' not in sys.modules, 'a dry run imported torch'\n"
              "sys.exit(rc)\n")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", script, "eval", "--model", "vlm:org/not-here",
                           "--suite", "full", "--dataset-store", str(store), "--out", str(out),
                           "--dry-run"], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    for family in SIZES:
        assert f"{family} ({store / family}" in text or f"skip {family}:" in text
    lines = text.splitlines()
    # full's vlm readers skip ood and retrieval, with the reason; the rest is planned
    assert any(line.startswith("  skip ood: seed 001 detects OOD") for line in lines)
    assert any(line.startswith("  skip retrieval: a vlm gives no image") for line in lines)
    run = [f for f in FAMILIES if f not in ("ood", "retrieval")]
    for f in run:
        for c, n in SIZES[f].items():
            if f == "failure-discovery" and c == "open":
                assert f"    {c}:" not in text
            else:
                assert f"    {c}: {n} rows" in lines
    total = sum(n for f in run for c, n in SIZES[f].items() if c != "open")
    assert lines[-1] == f"{len(run)} datasets, {2 * len(run) - 1} configs, {total} rows"
    assert "mode letter" in text and "mode generate, class order random" in text
    assert not out.exists()


def test_dry_run_lists_a_missing_build_and_the_filters(store: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli.main import main

    partial = _store(tmp_path / "s", {"bench-c": {"a": 4, "b": 2}})
    assert main(["eval", "--model", "classifier:efficientnet-lite0", "--suite", "sample",
                 "--dataset-store", str(partial), "--dry-run", "--limit", "3"]) == 0
    text = capsys.readouterr().out
    assert "skip imagenet-mcq: no imagenet-mcq/ in the dataset store" in text
    assert "    a: 3 rows" in text and "    b: 2 rows" in text
    assert text.splitlines()[-1] == "1 datasets, 2 configs, 5 rows (--limit 3: partial)"
    assert main(["eval", "--model", "classifier:efficientnet-lite0", "--suite", "sample",
                 "--dataset-store", str(store), "--dry-run", "--datasets", "bench-c",
                 "--configs", "bench-c-y"]) == 0
    text = capsys.readouterr().out
    assert "bench-c-y: 1 rows" in text and "bench-c-x" not in text and "imagenet-mcq" not in text
    rc, err = run_cli(["eval", "--model", "classifier:efficientnet-lite0", "--suite", "sample",
                       "--dataset-store", str(store), "--dry-run", "--datasets", "imagenet"],
                      capsys)
    assert rc == 1 and "--datasets imagenet: not in suite sample" in err
    one_line_error(err)


def test_hub_dataset_that_cannot_be_fetched_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    suite = tmp_path / "hub.yaml"
    suite.write_text("name: hub\nversion: '1'\ndatasets: [{name: imagenet-mcq, hub: "
                     "no-such-org/no-such-set, revision: v1.0.0}]\n"
                     "readers: {classifier: {imagenet-mcq: {}}}\n")
    rc, err = run_cli(["eval", "--model", "classifier:efficientnet-lite0", "--suite", str(suite),
                       "--dry-run"], capsys)
    assert rc == 1 and "hub no-such-org/no-such-set@v1.0.0 cannot be fetched" in err
    assert "list it with path: in the suite" in err
    one_line_error(err)
