"""Issue 38.1's done-when: a new question kind is one module per stage plus one
registry entry. The toy kind ``toy-count`` (tests/fixtures/toy_kind/) brings a
validator, a scorer and a leaderboard reader (with its Holistic section), each
registering itself in vlmrobust.core.kinds; the test adds the QUESTION_KINDS
entry and takes a tiny dataset through validate -> score -> submit -> the
leaderboard's re-scoring and site, then
counts what it needed: three modules, one entry, and no file of the package
that names the kind."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

# The built-in registrations are imported before the registries are scoped to
# one test, so that the built-in kinds stay registered after it.
import vlmrobust.evaluation.scoring.registration
import vlmrobust.evaluation.validate.registration
import vlmrobust.leaderboard.registration  # noqa: F401
from tests.fixtures.retrieval import jpeg
from vlmrobust.core.kinds import (
    KINDS,
    QUESTION_KINDS,
    SCORERS,
    SECTION_READERS,
    VALIDATORS,
    QuestionKind,
)
from vlmrobust.core.registry import Registry
from vlmrobust.leaderboard.pages.holistic.page import SECTIONS

KIND = "toy-count"
TOY = Path(__file__).resolve().parents[1] / "fixtures" / "toy_kind"
STAGES = {"validate.py": VALIDATORS, "score.py": SCORERS, "leaderboard.py": SECTION_READERS}
REPO = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("vlmrobust", "evaluation", "leaderboard", "builders", "benchmarks")
REGISTRIES: tuple[Registry, ...] = (QUESTION_KINDS, VALIDATORS, SCORERS, SECTION_READERS,
                                    SECTIONS)


def _load(path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A fresh module object each time, so that its registrations run inside the
    registries this test scopes."""
    name = f"tests.fixtures.toy_kind.{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def toy_kind(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    for registry in REGISTRIES:  # restored after the test: the kind never leaks
        monkeypatch.setattr(registry, "_items", dict(registry._items))
    stage_modules = sorted(p for p in TOY.glob("*.py") if p.name != "__init__.py")
    for path in stage_modules:
        _load(path, monkeypatch)
    # the one registry entry: the kind's name and the columns every row must have
    QUESTION_KINDS.add(KIND, QuestionKind(KIND, ("id", "image", "answer")))
    return stage_modules


def _dataset(out: Path, answers: dict[str, list[int]]) -> Path:
    import datasets

    from vlmrobust.core.writer import BuildInfo, write_dataset

    features = datasets.Features({"id": datasets.Value("string"), "image": datasets.Image(),
                                  "answer": datasets.Value("int32")})
    configs = {c: [{"id": f"{c}-{i}", "image": {"bytes": jpeg(10 * j + i), "path": None},
                    "answer": a} for i, a in enumerate(ans)]
               for j, (c, ans) in enumerate(answers.items())}
    write_dataset(out, configs=configs, features=features, card="# toy-count\n",
                  info=BuildInfo(spec_name="toy-count", spec_version="1", seed=0), kind=KIND)
    return out


def test_a_toy_kind_is_one_module_per_stage_and_one_entry(
        toy_kind: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from vlmrobust.cli import main
    from vlmrobust.evaluation.predictions.meta import attach_meta
    from vlmrobust.leaderboard.site.publish import build_site
    from vlmrobust.leaderboard.trust.verify import load_verified_submissions

    answers = {"few": [1, 2, 3, 2], "many": [7, 9, 8]}
    counts = {"few": [1, 2, 4, 2], "many": [5, 9, 8]}
    ds = _dataset(tmp_path / "toy-count", answers)
    manifest = json.loads((ds / "manifest.json").read_text())
    preds = tmp_path / "counts.parquet"
    meta = {"model": "toy-counter", "family": "vlm",
            "dataset": {"name": "toy-count", "version": "1", "fingerprint": manifest["fingerprint"]}}
    table = pa.table({"id": [f"{c}-{i}" for c, ns in counts.items() for i in range(len(ns))],
                      "count": [n for ns in counts.values() for n in ns]})
    pq.write_table(attach_meta(table, meta), preds)

    # validate
    assert main(["validate", "--dataset", str(ds), "--predictions", str(preds)]) == 0
    assert capsys.readouterr().out == "OK: 7 toy-count rows of toy-count answered\n"

    # score: scores.json and the rows beside it, by the toy's scorer
    out = tmp_path / "scored" / "scores.json"
    assert main(["score", "--dataset", str(ds), "--predictions", str(preds), "--out", str(out),
                 "--model-id", "toy-model"]) == 0
    err = np.abs(np.concatenate([np.subtract(counts[c], answers[c]) for c in answers]))
    mae = float(err.mean())  # 3/7: one count off by 1, one by 2
    assert capsys.readouterr().out.splitlines()[0] == f"toy-count: counting MAE {mae:.3f}"
    section = json.loads(out.read_text())["datasets"]["toy-count"]
    assert section["kind"] == KIND and section[KIND] == {"mae": mae}
    assert section["configs"]["few"]["accuracy"] == 0.75
    rows = [json.loads(line) for line in (out.parent / "scores.rows.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in rows] == [True, True, False, True, False, True, True]

    # leaderboard: submit stores the predictions and their scores; the site is
    # built by re-scoring them (the toy's validator and scorer again), the toy's
    # reader parses its block and its Holistic section shows it
    subs = tmp_path / "submissions"
    assert main(["submit", "--submissions", str(subs), "--model-id", "toy-model",
                 "--dataset", str(ds), "--predictions", str(preds)]) == 0
    (sub,) = load_verified_submissions(subs, datasets=[ds])
    d = sub.datasets["toy-count"]
    assert d.kind == KIND and d.blocks[KIND].mae == mae
    assert [c.accuracy for c in d.configs] == [0.75, 2 / 3]
    assert sub.evidence["toy-count"].predictions_sha256 == section["predictions_sha256"]
    site = tmp_path / "site"
    build_site(subs, site, datasets=[ds])
    page = (site / "holistic.html").read_text(encoding="utf-8")
    assert "Toy counting" in page and f"{mae:.3f}" in page

    # what it took: one module per stage, each registering one entry there, and
    # one QUESTION_KINDS entry; the built-in kinds untouched
    assert [p.name for p in toy_kind] == ["leaderboard.py", "score.py", "validate.py"]
    for name, registry in STAGES.items():
        assert KIND in registry, name
    assert QUESTION_KINDS.names() == (*KINDS, KIND)
    # ... and no dispatch code to edit: no file of the package names the kind
    naming = [p for d in PACKAGE_DIRS for p in (REPO / d).rglob("*.py")
              if KIND in p.read_text(encoding="utf-8")]
    assert naming == []


def test_the_toy_kind_does_not_outlive_its_test() -> None:
    assert KIND not in QUESTION_KINDS and KIND not in VALIDATORS and KIND not in SECTIONS


def test_an_unregistered_stage_is_one_line_naming_the_known_kinds(toy_kind: list[Path]) -> None:
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.scoring.registration import scorer_for

    with pytest.raises(VlmrobustError, match=r"unknown question kind with a scorer 'toy-cont'; "
                                             r"did you mean 'toy-count'\?"):
        scorer_for("toy-cont")


def test_eval_headlines_come_from_the_section_kinds_scorer(toy_kind: list[Path]) -> None:
    from vlmrobust.evaluation.suite.results import headlines

    recall = {"recall@5": 0.25, "recall@5_ci": [0.1, 0.4]}
    retrieval = {"kind": "retrieval", "configs": {"f": {"kind": "retrieval", "n": 8,
                 "accuracy": None, "image_to_text": recall, "text_to_image": recall}}}
    assert [(h["metric"], h["value"], h["n"]) for h in headlines(retrieval)] == [
        ("recall@5 image_to_text", 0.25, 8), ("recall@5 text_to_image", 0.25, 8)]
    # a kind whose scorer names no headline rows: each config's accuracy
    toy = {"kind": KIND, "configs": {"few": {"n": 4, "accuracy": 0.75, "accuracy_ci": None}}}
    assert headlines(toy) == [{"config": "few", "metric": "accuracy", "value": 0.75, "ci": None,
                               "n": 4}]
