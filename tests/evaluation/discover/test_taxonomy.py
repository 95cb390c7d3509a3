"""`discover taxonomy`: skills per question, MiniLM dedup, clustering into
meta-skills, naming; the rule tagger on planted records and a model tagger
through the hf backend (tiny random VLM)."""

from __future__ import annotations

import json

import numpy as np

from tests.fixtures.vlm import make_llava
from vlmrobust.cli.main import main
from vlmrobust.core.discover_records import DiscoveryRecord, read_records, write_records
from vlmrobust.evaluation.discover.taxonomy import (
    TaxonomyConfig,
    build_taxonomy,
    cluster,
    dedup,
    parse_skills,
)

QUESTIONS = [("how many shapes are there ?", False), ("how many things can you see ?", False),
             ("what color are the shapes ?", True), ("which side are the shapes on ?", True),
             ("why ?", None)]


def records(tmp_path):
    out = []
    for i, (q, correct) in enumerate(QUESTIONS * 3):
        out.append(DiscoveryRecord(
            image=f"planted-{i % 3:04d}.png", image_sha256="0" * 64, completion_id=f"c{i}",
            slot=1, question=q, answer="x", valid=correct is not None,
            correct=bool(correct), valid_reason="", correct_reason="", verifier_parsed=True,
            method="rl", questioner="q", answerer="a", verifier="v", seed=0))
    path = tmp_path / "r.jsonl"
    write_records(path, out)
    return path


def test_parse_skills() -> None:
    assert parse_skills("1. Counting\n2. Counting\n3) object detection.") == \
        ["counting", "object detection"]
    assert parse_skills("") == []
    assert len(parse_skills(",".join(f"s{i}" for i in range(9)))) == 5


def test_dedup_and_cluster_against_hand_cases() -> None:
    skills = ["counting", "count", "color"]
    emb = np.array([[1.0, 0.0], [0.95, np.sqrt(1 - 0.95**2)], [0.0, 1.0]])
    counts = {"counting": 5, "count": 2, "color": 3}
    from collections import Counter

    assert dedup(skills, Counter(counts), emb, 0.9) == {
        "counting": "counting", "count": "counting", "color": "color"}
    assert dedup(skills, Counter(counts), emb, 0.99)["count"] == "count"
    labels = cluster(np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]]), 2)
    assert labels[0] == labels[1] != labels[2] == labels[3]


def test_rule_taxonomy_tags_and_groups(tmp_path) -> None:
    result = build_taxonomy(records(tmp_path), tmp_path / "tax", "rule:planted",
                            TaxonomyConfig(meta_skills=2))
    assert result["n_questions"] == 12 and result["n_skills"] == 3
    assert result["skills"]["counting"]["count"] == 6
    tagged = read_records(tmp_path / "tax" / "records.jsonl")
    assert [r.skills for r in tagged[:5]] == [("counting",), ("counting",),
                                             ("color recognition",), ("spatial position",), ()]
    metas = {r.meta_skill for r in tagged if r.valid}
    assert len(metas) == 2 and None not in metas
    assert set(json.loads((tmp_path / "tax" / "taxonomy.json").read_text())["meta_skills"]) == metas
    only = build_taxonomy(records(tmp_path), tmp_path / "tax2", "rule:planted",
                          TaxonomyConfig(failures_only=True))
    assert only["n_questions"] == 6 and set(only["skills"]) == {"counting"}


def test_model_tagger_and_namer_through_a_backend(tmp_path) -> None:
    model = make_llava(tmp_path / "llava")
    out = tmp_path / "tax"
    rc = main(["discover", "taxonomy", str(records(tmp_path)), "--out", str(out), "--tagger",
               f"vlm:{model}", "--namer", f"vlm:{model}", "--device", "cpu"])
    assert rc == 0
    tax = json.loads((out / "taxonomy.json").read_text())
    # the tagger and namer are named as published: no local path of this machine
    assert tax["tagger"] == tax["namer"] == f"vlm:{model.name}@{_path_hash(model)}"
    assert str(tmp_path) not in (out / "taxonomy.json").read_text()
    assert sum(s["count"] for s in tax["skills"].values()) >= tax["n_skills"] >= 1
    tagged = read_records(out / "records.jsonl")
    # every valid question got the random model's phrases as skills, canonicalised
    assert all(r.skills and set(r.skills) <= set(tax["skills"]) for r in tagged if r.valid)
    assert {r.meta_skill for r in tagged if r.valid} <= set(tax["meta_skills"])


def _path_hash(path: object) -> str:
    import hashlib

    return hashlib.sha256(str(path).encode()).hexdigest()[:12]


def test_dedup_equals_a_pairwise_loop_in_frequency_order() -> None:
    """Each skill, most frequent first, joins the most similar representative
    kept so far when cos >= threshold, else becomes one (a direct loop)."""
    from collections import Counter

    import numpy as np

    from vlmrobust.evaluation.discover.taxonomy import dedup

    rng = np.random.default_rng(5)
    centres = rng.normal(size=(6, 16))
    emb = np.repeat(centres, 20, axis=0) + 0.35 * rng.normal(size=(120, 16))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    skills = [f"s{i:03d}" for i in range(120)]
    counts = Counter({s: int(c) for s, c in zip(skills, rng.integers(1, 9, 120), strict=True)})
    got = dedup(skills, counts, emb, 0.8)
    kept: list[int] = []
    want: dict[str, str] = {}
    for i in sorted(range(120), key=lambda i: (-counts[skills[i]], skills[i])):
        sims = [float(emb[i] @ emb[j]) for j in kept]
        if sims and max(sims) >= 0.8:
            want[skills[i]] = skills[kept[sims.index(max(sims))]]
        else:
            kept.append(i)
            want[skills[i]] = skills[i]
    assert got == want
    assert 6 <= len(set(got.values())) < 120  # some merged, not all
