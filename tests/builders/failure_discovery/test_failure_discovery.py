"""The failure-discovery family end to end on the planted world: records from
`discover sample` (tiny questioner, two rule answerers blind on different
types, the rule verifier) -> `vlmrobust build failure-discovery` ->
`load_dataset` -> predict (a tiny random LLaVA) -> validate -> score; the open
config is refused by predict/validate/score in one line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.failure_discovery import BLIND, planted_source
from tests.fixtures.vlm import make_llava
from vlmrobust.builders.card_meta import validate_card
from vlmrobust.builders.failure_discovery.choices import norm_answer
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import read_records, write_records
from vlmrobust.evaluation.discover.planted import question_type, read_scene


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ROOT/images + ROOT/records/{count,color}.jsonl: the same questions (one
    questioner, one seed) answered by two answerers."""
    return planted_source(tmp_path_factory.mktemp("fd"))


@pytest.fixture(scope="module")
def built(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built") / "fd"
    assert main(["build", "failure-discovery", "--source-root", str(source), "--out",
                 str(out)]) == 0
    return out


def _all_records(root: Path) -> list:
    return [r for f in sorted((root / "records").glob("*.jsonl")) for r in read_records(f)]


def test_open_config_keeps_every_slot_with_its_verdicts(source: Path, built: Path) -> None:
    from datasets import load_dataset

    recs = _all_records(source)
    ds = load_dataset(str(built), "open", split="test")
    assert len(ds) == len(recs)
    assert [r["question"] for r in ds] == [r.question for r in recs]
    assert [(r["valid"], r["correct"]) for r in ds] == [(r.valid, r.correct) for r in recs]
    assert [r["answerer"] for r in ds] == [r.answerer for r in recs]
    assert {r["verifier"] for r in ds} == {"rule-verifier:planted"}
    assert all(r["skills"] == list(rec.skills) for r, rec in zip(ds, recs, strict=True))
    # the image a row shows is the one judged: its pixels give the verdict back
    for row, rec in list(zip(ds, recs, strict=True))[:20]:
        if rec.valid:
            truth = read_scene(row["image"].convert("RGB")).truth(question_type(rec.question))
            assert rec.correct == (norm_answer(rec.answer) == truth)
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["config_kinds"] == {"open": "open"}
    assert "kind" not in manifest  # the dataset's other config is MCQ


def test_mcq_config_is_derived_from_failures(source: Path, built: Path) -> None:
    from datasets import load_dataset

    ds = load_dataset(str(built), "mcq", split="test")
    opened = {r["id"]: r for r in load_dataset(str(built), "open", split="test")}
    failures = sum(r["valid"] and not r["correct"] for r in opened.values())
    assert 0 < len(ds) <= failures
    positions = Counter()
    for row in ds:
        opts = row["options"]
        assert len(opts) == 4 and len({norm_answer(o) for o in opts}) == 4
        src = opened[row["open_id"]]
        assert src["valid"] and not src["correct"] and src["answerer"] == row["answerer"]
        assert opts[row["wrong_option"]] == src["answerer_answer"]
        assert row["wrong_option"] != row["answer"]
        # the correct option is the truth read from the pixels
        qtype = question_type(row["question"])
        truth = read_scene(row["image"].convert("RGB")).truth(qtype)
        assert norm_answer(opts[row["answer"]]) == truth
        assert qtype in BLIND and row["answerer"].endswith(qtype)
        positions[row["answer"]] += 1
    assert max(positions.values()) - min(positions.get(i, 0) for i in range(4)) <= 1
    card = (built / "README.md").read_text()
    assert "adversarial to the answerer" in card and "docs/discover.md" in card
    assert "--config mcq" in card


def test_rebuild_is_identical_and_another_seed_redraws(source: Path, built: Path,
                                                               tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert main(["build", "failure-discovery", "--source-root", str(source), "--out",
                 str(again)]) == 0
    m1 = json.loads((built / "manifest.json").read_text())
    m2 = json.loads((again / "manifest.json").read_text())
    assert m1["fingerprint"] == m2["fingerprint"]
    spec = tmp_path / "fd-seed1.yaml"
    spec.write_text((Path(__file__).parents[3] / "benchmarks" / "failure-discovery.yaml")
                    .read_text().replace("seed: 0", "seed: 1"))
    assert main(["build", str(spec), "--source-root", str(source), "--out",
                 str(tmp_path / "s1")]) == 0
    from datasets import load_dataset

    a = load_dataset(str(built), "mcq", split="test")
    b = load_dataset(str(tmp_path / "s1"), "mcq", split="test")
    assert a["open_id"] == b["open_id"]  # the same failures become questions
    assert a["options"] != b["options"]  # in other seeded orders
    assert [set(o) for o in a["options"]] != [set(o) for o in b["options"]] or \
        a["answer"] != b["answer"]
    validate_card((built / "README.md").read_text())


def test_mcq_predicts_validates_and_scores(built: Path, tmp_path: Path, capsys) -> None:
    llava = make_llava(tmp_path / "llava")
    preds = tmp_path / "preds.parquet"
    assert main(["predict", "--model", f"vlm:{llava}", "--dataset", str(built), "--config",
                 "mcq", "--out", str(preds), "--no-progress"]) == 0
    assert main(["validate", "--dataset", str(built), "--config", "mcq", "--predictions",
                 str(preds)]) == 0
    scores = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(built), "--config", "mcq", "--predictions",
                 str(preds), "--out", str(scores)]) == 0
    import pyarrow.parquet as pq
    from datasets import load_dataset

    table = pq.read_table(preds)
    ds = load_dataset(str(built), "mcq", split="test")
    answer = dict(zip(ds["id"], ds["answer"], strict=True))
    logits = dict(zip(table.column("id").to_pylist(), table.column("logits").to_pylist(),
                      strict=True))
    acc = float(np.mean([int(np.argmax(logits[i])) == a for i, a in answer.items()]))
    report = json.loads(scores.read_text())
    (section,) = report["datasets"].values()
    mcq = section["configs"]["mcq"]
    assert mcq["n"] == len(answer)
    assert mcq["accuracy"] == pytest.approx(acc, abs=1e-6)
    capsys.readouterr()
    for cmd in (["predict", "--model", f"vlm:{llava}", "--dataset", str(built), "--out",
                 str(tmp_path / "p2.parquet")],
                ["score", "--dataset", str(built), "--config", "open", "--predictions",
                 str(preds), "--out", str(tmp_path / "s2.json")]):
        assert main(cmd) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "kind open" in err[0] and "--config mcq" in err[0]
    assert not (tmp_path / "p2.parquet").exists() and not (tmp_path / "s2.json").exists()


def test_bad_sources_are_one_line(source: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "src"
    shutil.copytree(source / "images", bad / "images")
    (bad / "records").mkdir()
    recs = read_records(source / "records" / "count.jsonl")
    write_records(bad / "records" / "a.jsonl", recs)
    # one answerer alone has no references for its failures: open alone is built
    # (it was refused: "N no answer to the same question judged correct")
    assert main(["build", "failure-discovery", "--source-root", str(bad), "--out",
                 str(tmp_path / "single")]) == 0
    manifest = json.loads((tmp_path / "single" / "manifest.json").read_text())
    n_fail = sum(r.failure for r in recs)
    assert manifest["configs"] == {"open": len(recs)} and n_fail > 0
    assert manifest["mcq_skipped"] == {"no answer to the same question judged correct": n_fail}
    write_records(bad / "records" / "b.jsonl", recs)  # the same records twice
    assert main(["build", "failure-discovery", "--source-root", str(bad), "--out",
                 str(tmp_path / "o2")]) != 0
    assert "appears twice" in capsys.readouterr().err
    (bad / "records" / "b.jsonl").unlink()
    write_records(bad / "records" / "b.jsonl",
                  read_records(source / "records" / "color.jsonl"))
    first = recs[0].image
    (bad / "images" / first).write_bytes((bad / "images" / first).read_bytes() + b"x")
    assert main(["build", "failure-discovery", "--source-root", str(bad), "--out",
                 str(tmp_path / "o3")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sha256" in err[0] and first in err[0]
    assert not any((tmp_path / f"o{i}").exists() for i in (2, 3))


def test_writer_config_kinds_are_checked_and_recorded(tmp_path: Path) -> None:
    from datasets import Features, Value

    from vlmrobust.core.kinds import config_kind
    from vlmrobust.core.writer import BuildInfo, mcq_features, write_dataset

    info = BuildInfo("t", "1", 0)
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (9, 9, 9)).save(buf, format="PNG")
    image = {"bytes": buf.getvalue(), "path": None}
    mcq = [{"id": "m", "image": image, "question": "q", "options": ["a", "b"], "answer": 0}]
    from datasets import Image as HFImage

    open_f = Features({"id": Value("string"), "image": HFImage(), "question": Value("string")})
    with pytest.raises(ValueError, match="not built"):
        write_dataset(tmp_path / "a", configs={"mcq": mcq}, features=mcq_features({}),
                      card="c", info=info, config_kinds={"open": "open"})
    with pytest.raises(ValueError, match="label-space"):
        write_dataset(tmp_path / "b", configs={"mcq": mcq}, features=mcq_features({}),
                      card="c", info=info, config_kinds={"mcq": "classification"})
    with pytest.raises(ValueError, match="missing columns \\['question'\\]"):  # open rows need a question
        write_dataset(tmp_path / "c", configs={"mcq": mcq, "open": [{"id": "o", "image": image}]},
                      features=mcq_features({}), card="c", info=info,
                      config_kinds={"open": "open"}, config_features={"open": open_f})
    assert not any((tmp_path / n).exists() for n in "abc")
    rows = [{"id": "o", "image": image, "question": "q"}]
    m = write_dataset(tmp_path / "d", configs={"mcq": mcq, "open": rows},
                      features=mcq_features({}), card="c", info=info,
                      config_kinds={"open": "open"}, config_features={"open": open_f})
    assert config_kind(m, "open") == "open" and config_kind(m, "mcq") == "mcq"
    assert m["config_features"]["open"] == open_f.to_dict()


def test_harness_exports_take_the_mcq_config_and_refuse_the_open_one(built: Path,
                                                                     tmp_path: Path,
                                                                     capsys) -> None:
    import csv

    for fmt, out in (("vlmevalkit", tmp_path / "fd.tsv"), ("lmms-eval", tmp_path / "lmms")):
        capsys.readouterr()
        assert main(["export", fmt, str(built), "--out", str(out)]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "kind open" in err[0] and "--config mcq" in err[0]
        assert not out.exists()
    assert main(["export", "vlmevalkit", str(built), "--config", "mcq", "--out",
                 str(tmp_path / "fd.tsv")]) == 0
    csv.field_size_limit(1 << 24)
    with open(tmp_path / "fd.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    manifest = json.loads((built / "manifest.json").read_text())
    assert len(rows) == manifest["configs"]["mcq"]
    assert {r["vlmrobust_config"] for r in rows} == {"mcq"}
