"""Seed 004 evaluation metrics: parsing, QVR/FDR, Vendi score against the
`vendi-score` package and closed forms, prefix entropy against scipy, skills."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from scipy.stats import entropy as scipy_entropy

from vlmrobust.metrics.discovery.scores import (
    fdr,
    fdr_by_group,
    fdr_curve,
    fdr_spread,
    n_skills,
    parse_questions,
    prefix,
    prefix_entropy,
    qvr,
    skill_coverage,
    taxonomy_coverage,
    unit_rows,
    vendi_score,
)

# ---------------------------------------------------------------- parsing


def test_parse_well_formed_and_stripped() -> None:
    text = "Think first.\n<response_1>\n How many dogs?\n</response_1> then <response_2>Is it red?</response_2>"
    assert parse_questions(text, 2) == ["How many dogs?", "Is it red?"]


@pytest.mark.parametrize(("text", "expected"), [
    ("", [None, None]),
    ("How many dogs? Is it red?", [None, None]),                               # no tags
    ("<response_1>How many dogs?", [None, None]),                              # unclosed
    ("<response_1>How many dogs?</response_2>", [None, None]),                 # mismatched
    ("<response_1>   </response_1><response_2>Is it red?</response_2>", [None, "Is it red?"]),
    ("<response_1>a?</response_1><response_1>b?</response_1>", ["a?", None]),   # first kept
    ("<response_3>c?</response_3><response_0>z?</response_0>", [None, None]),  # out of range
    ("<response_2>b?</response_2><response_1>a?</response_1>", ["a?", "b?"]),  # order of tags
])
def test_malformed_completions_yield_fewer_questions(text: str, expected: list[str | None]) -> None:
    assert parse_questions(text, 2) == expected


def test_parse_bounds_the_completion_it_reads() -> None:
    text = "<response_1>a?</response_1>" + " " * 100
    assert parse_questions(text, 1, max_chars=len(text)) == ["a?"]
    assert parse_questions(text, 1, max_chars=len(text) - 1) == [None]
    with pytest.raises(ValueError, match="k must be"):
        parse_questions(text, 0)


def test_prefix_tokenisation() -> None:
    assert prefix("How many dogs?") == prefix("how  MANY cats") == "how many"
    assert prefix("Is\tthe car red?", 3) == "is the car"
    assert prefix("¿Qué es?", 1) == "qué"
    assert prefix("...", 2) == ""
    with pytest.raises(ValueError):
        prefix("a b", 0)


# ---------------------------------------------------------------- QVR / FDR


def test_qvr_fdr_against_counting_loops() -> None:
    rng = np.random.default_rng(4)
    v = rng.random(500) < 0.8
    c = rng.random(500) < 0.5
    n_valid = sum(1 for x in v if x)
    n_fail = sum(1 for x, y in zip(v, c, strict=True) if x and not y)
    assert qvr(v) == pytest.approx(n_valid / 500)
    assert fdr(v, c) == pytest.approx(n_fail / n_valid)
    # C of invalid questions does not matter
    c2 = np.where(v, c, ~c)
    assert fdr(v, c2) == fdr(v, c)


def test_fdr_edge_cases() -> None:
    assert math.isnan(fdr([0, 0], [0, 1]))
    assert fdr([1, 1], [1, 1]) == 0.0
    assert fdr([True], [False]) == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        fdr([1, 1], [1])
    with pytest.raises(ValueError, match="0/1"):
        qvr([0, 2])
    with pytest.raises(ValueError, match="at least one"):
        qvr([])


def test_fdr_spread_matches_statistics_stdev() -> None:
    fdrs = [47.58, 39.1, 52.3, 44.0]
    mean, lo, sd = fdr_spread(fdrs)
    assert mean == pytest.approx(statistics.mean(fdrs))
    assert lo == min(fdrs)
    assert sd == pytest.approx(statistics.stdev(fdrs))  # ddof = 1
    with pytest.raises(ValueError, match="at least two"):
        fdr_spread([1.0])


# ---------------------------------------------------------------- Vendi score


@pytest.mark.parametrize(("n", "d"), [(7, 16), (40, 5), (12, 12)])
def test_vendi_matches_reference_package(n: int, d: int) -> None:
    from vendi_score import vendi

    rng = np.random.default_rng(n * 100 + d)
    x = rng.normal(size=(n, d))
    assert vendi_score(x) == pytest.approx(float(vendi.score_X(x)), rel=1e-9)


def test_vendi_closed_forms() -> None:
    v = np.array([0.3, -1.2, 2.0])
    assert vendi_score(np.tile(v, (9, 1)) * np.arange(1, 10)[:, None]) == pytest.approx(1.0)
    assert vendi_score(np.eye(5)) == pytest.approx(5.0)
    # two unit vectors at cos θ = c: K/2 has eigenvalues (1 ± c)/2
    c = 0.6
    x = np.array([[1.0, 0.0], [c, math.sqrt(1 - c * c)]])
    lam = np.array([(1 + c) / 2, (1 - c) / 2])
    assert vendi_score(x) == pytest.approx(math.exp(-np.sum(lam * np.log(lam))))
    # k orthogonal clusters of equal size: exactly k
    blocks = np.repeat(np.eye(3), 4, axis=0)
    assert vendi_score(blocks) == pytest.approx(3.0)


def test_vendi_bad_input() -> None:
    with pytest.raises(ValueError, match="norm 0"):
        vendi_score([[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="finite"):
        vendi_score([[np.nan, 1.0]])
    with pytest.raises(ValueError, match=r"\(n, d\)"):
        vendi_score([1.0, 2.0])
    assert np.allclose(np.linalg.norm(unit_rows([[3.0, 4.0], [0.0, 2.0]]), axis=1), 1.0)


# ---------------------------------------------------------------- lexical diversity


def test_prefix_entropy_matches_scipy() -> None:
    qs = ["How many dogs?", "How many cats?", "how many birds", "What colour is it?",
          "What colour is the car?", "Is it raining?", "Where is the cup?"]
    counts = [3, 2, 1, 1]
    h = scipy_entropy(counts)  # natural log
    assert prefix_entropy(qs, normalise="none") == pytest.approx(h)
    assert prefix_entropy(qs) == pytest.approx(h / math.log(len(qs)))
    assert prefix_entropy(qs, normalise="n_prefixes") == pytest.approx(h / math.log(4))
    assert prefix_entropy(qs, n_words=1, normalise="none") == pytest.approx(
        scipy_entropy([3, 2, 1, 1]))  # how / what / is / where


def test_prefix_entropy_extremes() -> None:
    assert prefix_entropy(["How many a", "how many b", "How many c"]) == 0.0
    assert prefix_entropy(["a b", "c d", "e f", "g h"]) == pytest.approx(1.0)
    assert prefix_entropy(["only one"]) == 0.0
    with pytest.raises(ValueError, match="normalise"):
        prefix_entropy(["a b", "c d"], normalise="bits")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        prefix_entropy([])


# ---------------------------------------------------------------- skills


def test_n_skills_counts_more_than_twenty() -> None:
    skills = [["counting"]] * 21 + [["colour"]] * 20 + [["ocr", "ocr"]] * 25
    assert n_skills(skills) == 2              # counting (21) and ocr (25, deduplicated per question)
    assert n_skills(skills, min_questions=21) == 1
    assert n_skills(skills, min_questions=0) == 3
    with pytest.raises(ValueError, match="not a string"):
        n_skills(["counting"])


def test_skill_coverage_is_the_mean_number_of_distinct_skills_per_question() -> None:
    # seed 004 Table 1: RL's questions need 3.30 skills each; 10 questions with
    # 3, 3, 3, 4, 3, 4, 3, 3, 4, 3 distinct skills (33 in all) give that
    rng = np.random.default_rng(0)
    sizes = [3, 3, 3, 4, 3, 4, 3, 3, 4, 3]
    pool = [f"skill {i}" for i in range(12)]
    skills = [list(rng.choice(pool, n, replace=False)) for n in sizes]
    skills[0] = [*skills[0], skills[0][0]]  # a skill tagged twice counts once
    assert skill_coverage(skills) == pytest.approx(3.30)
    assert skill_coverage(skills) == pytest.approx(np.mean([len(set(t)) for t in skills]))
    # not a share of a taxonomy: one skill per question is 1.0 whatever the taxonomy
    assert skill_coverage([["counting"], ["colour"]]) == 1.0
    with pytest.raises(ValueError, match="at least one question"):
        skill_coverage([])
    with pytest.raises(ValueError, match="not a string"):
        skill_coverage(["counting"])


def test_taxonomy_coverage() -> None:
    taxonomy = ["counting", "colour", "spatial", "ocr"]
    skills = [["counting"], ["counting", "colour"], ["made-up"]]
    assert taxonomy_coverage(skills, taxonomy) == 0.5
    assert taxonomy_coverage(skills, taxonomy, min_questions=2) == 0.25
    assert taxonomy_coverage([], taxonomy) == 0.0
    with pytest.raises(ValueError, match="taxonomy"):
        taxonomy_coverage(skills, [])


# ---------------------------------------------------------------- real MiniLM


@pytest.mark.slow
def test_vendi_on_real_minilm_embeddings() -> None:
    from vlmrobust.models.encoders.minilm import TextEmbedder, load_minilm

    embed = TextEmbedder(load_minilm())
    same = embed(["How many dogs are in the picture?"] * 4)
    varied = embed(["How many dogs are in the picture?", "What colour is the bus?",
                    "Is the man holding an umbrella?", "What does the sign say?"])
    paraphrases = embed(["How many dogs are in the picture?", "How many dogs are in the image?",
                         "How many dogs can you see in the picture?",
                         "What is the number of dogs in the picture?"])
    assert vendi_score(same) == pytest.approx(1.0, abs=1e-4)
    assert 1.0 < vendi_score(paraphrases) < vendi_score(varied) <= 4.0
    from vendi_score import vendi

    assert vendi_score(varied) == pytest.approx(float(vendi.score_X(varied.astype(np.float64))),
                                                rel=1e-6)


# ---------------------------------------------------------------- FDR per group / curve


def test_fdr_by_group_against_per_group_fdr() -> None:
    rng = np.random.default_rng(25)
    v = rng.random(300) < 0.7
    c = rng.random(300) < 0.4
    groups = [str(x) for x in rng.choice(["counting", "colour", "spatial"], size=300)]
    got = fdr_by_group(v, c, groups)
    assert list(got) == ["colour", "counting", "spatial"]
    for name, (rate, n_valid) in got.items():
        idx = [i for i, g in enumerate(groups) if g == name]
        assert n_valid == sum(1 for i in idx if v[i])
        assert rate == pytest.approx(sum(1 for i in idx if v[i] and not c[i]) / n_valid)
    only_invalid = fdr_by_group([0, 1], [0, 0], ["a", "b"])
    assert math.isnan(only_invalid["a"][0]) and only_invalid["b"] == (1.0, 1)
    with pytest.raises(ValueError, match="differ in length"):
        fdr_by_group([1, 1], [0, 0], ["a"])


def test_fdr_curve_is_fdr_of_each_prefix() -> None:
    rng = np.random.default_rng(8)
    v = rng.random(60) < 0.6
    v[0] = False
    c = rng.random(60) < 0.5
    curve = fdr_curve(v, c)
    assert curve.shape == (60,)
    for m in range(1, 61):
        expected = fdr(v[:m], c[:m])
        if math.isnan(expected):
            assert math.isnan(curve[m - 1])
        else:
            assert curve[m - 1] == pytest.approx(expected)
    assert curve[-1] == pytest.approx(fdr(v, c))
