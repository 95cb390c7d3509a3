"""`discover sample` and `discover evaluate` on the planted world: a tiny local
questioner, the rule answerer and verifier; the metrics are recomputed here from
the records by hand and by the independent Vendi implementation."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.discover import planted_folder, tiny_questioner
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import read_records
from vlmrobust.evaluation.discover.evaluate import evaluate_rows
from vlmrobust.evaluation.discover.images import list_images
from vlmrobust.evaluation.discover.planted import question_type
from vlmrobust.evaluation.discover.questioner import make_questioner
from vlmrobust.evaluation.discover.roles import make_answerer, make_verifier
from vlmrobust.evaluation.discover.sample import SampleConfig, run_sample


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("world")
    return planted_folder(root, n=10), tiny_questioner(root, prior_steps=120)


def test_sample_records_follow_the_roles(world, tmp_path) -> None:
    images, qdir = world
    questioner = make_questioner(str(qdir), 2, "zero-shot", max_new_tokens=40)
    out = tmp_path / "r.jsonl"
    recs = run_sample(list_images(images), questioner, make_answerer("rule:blind=count"),
                      make_verifier("rule:planted"), out,
                      SampleConfig("untrained", seed=5, samples_per_image=3, batch_size=4),
                      skill_tagger=lambda ims, qs: [[question_type(q) or "none"] for q in qs])
    assert read_records(out) == recs
    assert len(recs) == 10 * 3 * 2
    assert {r.completion_id for r in recs} == {f"planted-{i:04d}.png#{s}" for i in range(10)
                                               for s in range(3)}
    for r in recs:
        qtype = question_type(r.question)
        assert r.valid == (qtype is not None)
        if r.valid:
            assert r.correct == (qtype != "count")
        if r.question is None:
            assert r.answer is None and not r.valid
    assert Counter(question_type(r.question) for r in recs)["count"] > 0
    # the same seed gives the same questions whatever the batch size
    again = run_sample(list_images(images), questioner, make_answerer("rule:blind=count"),
                       make_verifier("rule:planted"), tmp_path / "b.jsonl",
                       SampleConfig("untrained", seed=5, samples_per_image=3, batch_size=7))
    assert [r.question for r in again] == [r.question for r in recs]


def test_evaluate_matches_hand_computation(world, tmp_path) -> None:
    from vendi_score import vendi

    from vlmrobust.evaluation.discover.planted import TEMPLATES

    images, qdir = world
    questioner = make_questioner(str(qdir), 2, "zero-shot", max_new_tokens=40)
    recs = run_sample(list_images(images), questioner, make_answerer("rule:blind=count,color"),
                      make_verifier("rule:planted"), tmp_path / "r.jsonl",
                      SampleConfig("untrained", samples_per_image=4))
    vocab = sorted({q for qs in TEMPLATES.values() for q in qs} | {"x"})

    def embed(texts):  # one-hot over the phrasings: an exact, independent kernel
        return np.array([[float(t == v) for v in vocab] for t in texts])

    out = evaluate_rows(recs, embed=embed, taxonomy=["count", "color", "shape", "side", "ocr"])
    (row,) = out["rows"]
    valid = [r for r in recs if r.valid]
    assert row["n_questions"] == len(recs)
    assert row["qvr"] == pytest.approx(len(valid) / len(recs))
    assert row["fdr"] == pytest.approx(sum(not r.correct for r in valid) / len(valid))
    x = embed([str(r.question) for r in valid])
    assert row["sd"] == pytest.approx(vendi.score_dual(x, normalize=True), rel=1e-6)
    prefixes = Counter(" ".join(str(r.question).split()[:2]) for r in valid)
    p = np.array(list(prefixes.values())) / len(valid)
    assert row["ld"] == pytest.approx(-(p * np.log(p)).sum() / math.log(len(valid)), rel=1e-6)
    assert row["fdr_curve"][-1] == [len(recs), pytest.approx(row["fdr"], abs=1e-6)]
    assert row["skill_coverage"] is None and row["n_skill_tagged"] == 0  # no skills tagged
    assert row["taxonomy_coverage"] == 0.0


def test_cli_planted_sample_evaluate(tmp_path, capsys) -> None:
    imgs, q = tmp_path / "imgs", tmp_path / "q"
    assert main(["discover", "planted", "--out", str(imgs), "--n", "6",
                 "--questioner-out", str(q)]) == 0
    recs = tmp_path / "r.jsonl"
    assert main(["discover", "sample", "--questioner", str(q), "--images", str(imgs),
                 "--answerer", "rule:blind=count", "--verifier", "rule:planted",
                 "--skills", "rule:planted", "--out", str(recs), "--samples-per-image", "2",
                 "--max-new-tokens", "40"]) == 0
    rs = read_records(recs)
    assert {r.method for r in rs} == {"zero-shot"} and len(rs) == 24
    assert all(r.skills == (("counting",) if question_type(r.question) == "count" else r.skills)
               for r in rs)
    assert all(r.questioner.startswith("local:q@") for r in rs)  # no local path published
    tax = tmp_path / "tax.txt"
    tax.write_text("counting\ncolor recognition\nOCR\n")
    metrics = tmp_path / "m.json"
    assert main(["discover", "evaluate", str(recs), "--out", str(metrics), "--no-sd",
                 "--taxonomy", str(tax), "--min-skill-questions", "0"]) == 0
    (row,) = json.loads(metrics.read_text())["rows"]
    tagged = {s for r in rs if r.valid for s in r.skills}
    assert row["taxonomy_coverage"] == pytest.approx(len(tagged & {"counting", "color recognition",
                                                                    "OCR"}) / 3)
    # seed 004's SC: the planted tagger gives each valid question one skill
    n_tagged = sum(1 for r in rs if r.valid and r.skills)
    assert row["skill_coverage"] == 1.0 and row["n_skill_tagged"] == n_tagged > 0
    assert row["n_skills"] == len(tagged)
    assert "QVR" in capsys.readouterr().out


def test_cli_errors_are_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"image": 1}\n')
    assert main(["discover", "evaluate", str(bad), "--out", str(tmp_path / "m.json"),
                 "--no-sd"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bad.jsonl line 1" in err and err.count("\n") == 1
    assert not (tmp_path / "m.json").exists()
    (tmp_path / "q").mkdir()  # apart from --out: an output never lies inside an input
    assert main(["discover", "sample", "--questioner", str(tmp_path / "q"), "--images",
                 str(tmp_path / "none"), "--answerer", "rule:blind=count", "--verifier",
                 "rule:planted", "--out", str(tmp_path / "r.jsonl")]) == 1
    assert "not a folder of images" in capsys.readouterr().err
