"""`discover evaluate` over several answerers: per-answerer FDR spread (seed 004
Tables 8–9, σ with ddof = 1) and SD from real MiniLM embeddings, checked against
numpy and the independent vendi-score package."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import DiscoveryRecord, write_records

QUESTIONS = ["how many dogs are there ?", "what color is the car ?", "is the cup on the left ?",
             "what is written on the sign ?", "how many windows are open ?"]


def _records(answerer: str, wrong: set[int]) -> list[DiscoveryRecord]:
    return [DiscoveryRecord(
        image=f"{i}.png", image_sha256="0" * 64, completion_id=f"{i}.png#0", slot=1,
        question=q, answer="x", valid=i != 4 or answerer != "a3", correct=i not in wrong
        and (i != 4 or answerer != "a3"), valid_reason="", correct_reason="",
        verifier_parsed=True, method="rl", questioner="q", answerer=answerer, verifier="judge",
        seed=0) for i, q in enumerate(QUESTIONS)]


def test_spread_and_sd(tmp_path) -> None:
    from vendi_score import vendi

    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    path = tmp_path / "r.jsonl"
    recs = _records("a1", {0}) + _records("a2", {0, 1, 2}) + _records("a3", {1})
    write_records(path, recs)
    out = tmp_path / "m.json"
    assert main(["discover", "evaluate", str(path), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    fdrs = {r["answerer"]: r["fdr"] for r in result["rows"]}
    assert fdrs == pytest.approx({"a1": 1 / 5, "a2": 3 / 5, "a3": 1 / 4})
    (spread,) = result["spread"]
    pct = np.array([20.0, 60.0, 25.0])
    assert spread["n_answerers"] == 3
    assert spread["fdr_mean"] == pytest.approx(pct.mean())
    assert spread["fdr_min"] == pytest.approx(20.0)
    assert spread["fdr_sigma"] == pytest.approx(np.std(pct, ddof=1))
    emb = TextEmbedder(load_minilm("cpu"))(QUESTIONS)
    row_a1 = next(r for r in result["rows"] if r["answerer"] == "a1")
    assert row_a1["sd"] == pytest.approx(vendi.score_dual(emb.astype(np.float64),
                                                          normalize=True), rel=1e-4)
    assert 1.0 < row_a1["sd"] < 5.0


def _rec(i: int, skills: tuple[str, ...], meta: str | None, *, valid: bool = True,
         correct: bool = False, question: str | None = None) -> DiscoveryRecord:
    return DiscoveryRecord(
        image=f"{i}.png", image_sha256="0" * 64, completion_id=f"{i}.png#0", slot=1,
        question=question or QUESTIONS[i % len(QUESTIONS)], answer="x", valid=valid,
        correct=correct, valid_reason="", correct_reason="", verifier_parsed=True,
        method="rl", questioner="q", answerer="a", verifier="judge", seed=0, skills=skills,
        meta_skill=meta)


def _evaluate(tmp_path, recs: list[DiscoveryRecord], *flags: str) -> dict:
    path = tmp_path / "r.jsonl"
    write_records(path, recs)
    out = tmp_path / "m.json"
    assert main(["discover", "evaluate", str(path), "--out", str(out), "--no-sd", *flags]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    return row


def test_skills_and_meta_skills_are_counted_apart(tmp_path) -> None:
    # the default naming calls a meta-skill after its most frequent skill, so
    # "counting" is both; each question counts once in each map
    row = _evaluate(tmp_path, [_rec(0, ("counting",), "counting"),
                               _rec(1, ("number estimation",), "counting", correct=True)])
    assert row["fdr_by_skill"] == {"counting": {"fdr": 1.0, "n_valid": 1},
                                   "number estimation": {"fdr": 0.0, "n_valid": 1}}
    assert row["fdr_by_meta_skill"] == {"counting": {"fdr": 0.5, "n_valid": 2}}


def test_fdr_by_skill_against_a_hand_count(tmp_path) -> None:
    tags = [(("counting", "counting"), "quantity", True, False),   # a skill tagged twice
            (("counting", "OCR"), "quantity", True, True),
            (("OCR",), "text", True, False),
            (("OCR",), "text", False, False),                      # invalid: in no FDR
            ((), None, True, False)]                               # untagged
    recs = [_rec(i, s, m, valid=v, correct=c) for i, (s, m, v, c) in enumerate(tags)]
    row = _evaluate(tmp_path, recs)
    expect: dict[str, dict[str, list[bool]]] = {"skill": {}, "meta": {}}
    for s, m, v, c in tags:
        if not v:
            continue
        for name in set(s):
            expect["skill"].setdefault(name, []).append(not c)
        if m is not None:
            expect["meta"].setdefault(m, []).append(not c)
    for key, kind in (("fdr_by_skill", "skill"), ("fdr_by_meta_skill", "meta")):
        assert {k: (v["fdr"], v["n_valid"]) for k, v in row[key].items()} == {
            k: (pytest.approx(sum(f) / len(f)), len(f)) for k, f in expect[kind].items()}
    assert row["fdr_by_skill"]["counting"]["n_valid"] == 2


def test_no_skill_maps_without_tags(tmp_path) -> None:
    row = _evaluate(tmp_path, [_rec(0, (), None), _rec(1, (), None)])
    assert "fdr_by_skill" not in row and "fdr_by_meta_skill" not in row
    assert row["skill_coverage"] is None and row["n_skill_tagged"] == 0  # no SC, not 0


def test_skill_coverage_is_seed_004s_mean_skills_per_valid_question(tmp_path, capsys) -> None:
    # seed 004 §4.1: "Skill Coverage (SC): The average number of distinct
    # cognitive skills required to answer a generated question"; metrics are
    # over valid questions only
    tags = [(("counting", "spatial", "ocr"), True),
            (("counting", "counting", "colour"), True),   # a skill tagged twice: 2 skills
            (("ocr", "spatial", "colour", "counting"), True),
            (("a", "b", "c", "d", "e"), False),           # invalid: left out
            ((), True)]                                   # untagged (--failures-only): left out
    recs = [_rec(i, s, None, valid=v) for i, (s, v) in enumerate(tags)]
    tax = tmp_path / "tax.txt"
    tax.write_text("counting\nspatial\nocr\ncolour\nmaterial\n")
    row = _evaluate(tmp_path, recs, "--taxonomy", str(tax))
    assert row["skill_coverage"] == pytest.approx((3 + 2 + 4) / 3, abs=1e-6)
    assert row["n_skill_tagged"] == 3
    # the share of a reference taxonomy is another quantity, under its own name
    assert row["taxonomy_coverage"] == pytest.approx(4 / 5)
    assert "SC 3.0" in capsys.readouterr().out


@pytest.mark.parametrize("norm", ["n_questions", "n_prefixes", "none"])
def test_ld_normalise_flag(tmp_path, norm: str) -> None:
    from scipy.stats import entropy

    qs = ["how many dogs ?", "how many cats ?", "what color is it ?", "is it red ?",
          "how many cups ?"]
    recs = [_rec(i, (), None, question=q) for i, q in enumerate(qs)]
    row = _evaluate(tmp_path, recs, "--ld-normalise", norm)
    h = entropy([3, 1, 1])  # prefixes: "how many" x3, "what color", "is it"
    denom = {"n_questions": np.log(5), "n_prefixes": np.log(3), "none": 1.0}[norm]
    assert row["ld"] == pytest.approx(h / denom, abs=1e-6)
    config = json.loads((tmp_path / "m.json").read_text())["config"]
    assert config["ld_normalise"] == norm


def test_ld_normalise_default_and_bad_value(tmp_path, capsys) -> None:
    recs = [_rec(i, (), None) for i in range(3)]
    row = _evaluate(tmp_path, recs)
    assert row["ld"] == pytest.approx(1.0)  # three different prefixes over ln 3
    out = tmp_path / "m2.json"
    with pytest.raises(SystemExit):
        main(["discover", "evaluate", str(tmp_path / "r.jsonl"), "--out", str(out),
              "--no-sd", "--ld-normalise", "log2"])
    assert "--ld-normalise" in capsys.readouterr().err and not out.exists()


def test_one_prefix_gives_ld_zero_not_minus_zero(tmp_path) -> None:
    recs = [_rec(i, (), None, question=f"how many {w} ?") for i, w in enumerate("abc")]
    assert _evaluate(tmp_path, recs)["ld"] == 0.0
    assert '"ld": 0.0' in (tmp_path / "m.json").read_text()
