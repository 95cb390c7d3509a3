"""The offline imagewikiqa pipeline on real knowledge (WordNet, CuPL, imagenet-
classes), the real MiniLM guesser and the embedded sample."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagewikiqa.question import Candidate
from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge, load_knowledge
from vlmrobust.builders.imagewikiqa.vocab import SLOT_TYPES

CLASSES = [0, 1, 2, 49, 105, 292, 409, 849, 890, 948]
SAMPLE_CLASSES = ["n01697457", "n01882714", "n02129604", "n04398044", "n04540053"]


@pytest.fixture(scope="module")
def knowledge() -> tuple[ClassKnowledge, ...]:
    return load_knowledge()


@pytest.fixture(scope="module")
def generated(knowledge: tuple[ClassKnowledge, ...]) -> dict[int, list[Candidate]]:
    from vlmrobust.builders.imagewikiqa.generate.offline import OfflineGenerator

    gen = OfflineGenerator(knowledge, seed=0)
    return {i: gen.generate(knowledge[i]) for i in CLASSES}


def names_in(text: str, names: tuple[str, ...]) -> list[str]:
    """An independent, simpler leak check: each name (and name+s/es), as words."""
    low = " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "
    hits = []
    for n in names:
        words = re.sub(r"[^a-z0-9]+", " ", n.lower()).strip()
        if any(f" {words}{suffix} " in low for suffix in ("", "s", "es")):
            hits.append(n)
    return hits


def test_knowledge_covers_imagenet(knowledge: tuple[ClassKnowledge, ...]) -> None:
    assert len(knowledge) == 1000
    assert [k.index for k in knowledge] == list(range(1000))
    tench = knowledge[0]
    assert tench.wnid == "n01440764" and "Tinca tinca" in tench.names
    assert tench.hypernym == "cyprinid" and "Europe" in tench.gloss
    assert len(tench.cupl) > 50 and tench.description
    assert sum(1 for k in knowledge if k.cupl) >= 990


def test_offline_questions_are_well_formed_and_never_name_the_class(
    knowledge: tuple[ClassKnowledge, ...], generated: dict[int, list[Candidate]]
) -> None:
    total = 0
    for i, cands in generated.items():
        k = knowledge[i]
        for c in cands:
            total += 1
            assert c.wnid == k.wnid and c.label == i
            assert len(c.choices) == 4 and len({x.lower() for x in c.choices}) == 4
            assert 0 <= c.answer < 4
            assert "this object" in c.question.lower()
            assert names_in(c.question, k.names) == [], (c.question, k.names)
            for choice in c.choices:
                assert names_in(choice, k.names) == [], (choice, k.names)
            if c.kind.startswith("cloze"):
                assert c.question.count("___") == 1
    assert total >= 3 * len(CLASSES)
    kinds = Counter(c.kind for cs in generated.values() for c in cs)
    assert {"wordnet-hypernym", "wordnet-gloss", "cloze-colour"} <= set(kinds)


def test_one_cloze_per_sentence(generated: dict[int, list[Candidate]]) -> None:
    # Two blanks in one sentence would give each other's answers away.
    for cands in generated.values():
        sentences = [c.question.replace("___", c.answer_text) for c in cands
                     if c.kind.startswith("cloze")]
        assert len(sentences) == len(set(sentences))


def test_closed_type_distractors_are_never_stated_for_the_class(
    knowledge: tuple[ClassKnowledge, ...], generated: dict[int, list[Candidate]]
) -> None:
    checked = 0
    for i, cands in generated.items():
        text = " " + re.sub(r"[^a-z]+", " ", knowledge[i].text) + " "
        for c in cands:
            st = next((s for s in SLOT_TYPES if c.kind == f"cloze-{s.name}"), None)
            if st is None:
                continue
            for j, choice in enumerate(c.choices):
                if j == c.answer:
                    continue
                group = next(g for g in st.groups if choice.lower() in
                             {r.lower() for r in g.rep})
                assert not any(f" {m} " in text for m in group.mentions), (c, group)
                checked += 1
    assert checked > 0


def test_generation_is_deterministic(knowledge: tuple[ClassKnowledge, ...],
                                     generated: dict[int, list[Candidate]]) -> None:
    from vlmrobust.builders.imagewikiqa.generate.offline import OfflineGenerator

    again = OfflineGenerator(knowledge, seed=0)
    assert again.generate(knowledge[292]) == generated[292]


def test_minilm_filter_drops_what_the_guesser_gets_without_the_name(
    knowledge: tuple[ClassKnowledge, ...],
) -> None:
    from vlmrobust.builders.imagewikiqa.answerers import MiniLMGuesser, TextEmbedder, load_minilm
    from vlmrobust.builders.imagewikiqa.filter import filter_candidates

    embed = TextEmbedder(load_minilm())
    tench = knowledge[0]
    # The question text gives the answer away: no need to recognise the object.
    giveaway = Candidate(tench.wnid, 0, "Which of these animals is this object, a fish?",
                         ("a fish", "a motorcycle", "a teapot", "a volcano"), 0, "r", "test")
    guesser = MiniLMGuesser(embed)
    assert guesser.answer([giveaway], [None]) == [0]
    result = filter_candidates({tench.wnid: [giveaway]}, {tench.wnid: tench.names}, guesser,
                               embed, 0.92)
    assert result.kept[tench.wnid] == []
    assert result.dropped == Counter({"guessed_without_name": 1})


def sample_spec(classes: list[str]) -> dict[str, Any]:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "imagewikiqa.yaml"
    raw: dict[str, Any] = yaml.safe_load(path.read_text())
    raw["classes"] = classes
    return raw


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    from vlmrobust.builders.imagewikiqa.build import build

    out = tmp_path_factory.mktemp("iwqa") / "ds"
    spec = sample_spec(SAMPLE_CLASSES)
    manifest = build(spec, Path("benchmarks/imagewikiqa.yaml"),
                     BuildOptions(out=out, sample=True, progress=False))
    return out, manifest


def test_sample_build_rows(sample_build: tuple[Path, dict[str, Any]],
                           knowledge: tuple[ClassKnowledge, ...]) -> None:
    from vlmrobust.core.datadir import read_table

    out, manifest = sample_build
    assert manifest["spec"]["name"] == "imagewikiqa" and manifest["sample"] is True
    rows = read_table(out, "default").to_pylist()
    n = len(rows)
    assert n == manifest["num_rows"] > 0
    by_wnid = {k.wnid: k for k in knowledge}
    for r in rows:
        k = by_wnid[r["wnid"]]
        assert r["label"] == k.index and r["wnid"] in SAMPLE_CLASSES
        assert len(r["options"]) == 4 and len(set(r["options"])) == 4
        assert 0 <= r["answer"] < 4
        assert names_in(r["question"], k.names) == []
        assert all(names_in(o, k.names) == [] for o in r["options"])
        assert r["image"]["bytes"][:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0", b"\xff\xd8\xff\xe1")
    counts = np.bincount([r["answer"] for r in rows], minlength=4)
    assert np.all(np.abs(counts - n / 4) <= 1), counts
    per_question = Counter((r["question"], tuple(sorted(r["options"]))) for r in rows)
    assert max(per_question.values()) <= sample_spec(SAMPLE_CLASSES)["question_repeat_cap"] == 3
    for q in per_question:
        images = [r["image"]["bytes"] for r in rows if (r["question"],
                                                         tuple(sorted(r["options"]))) == q]
        assert len(images) == len(set(images))
    assert len({r["id"] for r in rows}) == n
    f = manifest["filter"]
    assert f["kept"] + sum(f["dropped"].values()) == f["candidates"]
    card = (out / "README.md").read_text()
    assert "this object" in card and f"{f['kept']} of {f['candidates']}" in card


def test_sample_build_loads_with_datasets(sample_build: tuple[Path, dict[str, Any]]) -> None:
    from vlmrobust.builders.card_meta import validate_card

    meta = validate_card((sample_build[0] / "README.md").read_text(encoding="utf-8"))
    assert meta["task_categories"] and "## How to evaluate" in \
        (sample_build[0] / "README.md").read_text(encoding="utf-8")
    import datasets

    out, manifest = sample_build
    # A private cache: the shared ~/.cache is written by other processes too.
    ds = datasets.load_dataset(str(out), "default", split="test",
                               cache_dir=str(out.parent / "hf-cache"))
    assert len(ds) == manifest["num_rows"]
    assert set(ds.column_names) == {"id", "image", "question", "options", "answer", "label",
                                    "wnid", "reference", "article", "revision"}
    assert ds[0]["image"].size[0] > 0


def test_cli_build_is_reproducible_across_hash_seeds(
    sample_build: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, manifest = sample_build
    spec_path = tmp_path / "iwqa.yaml"
    spec_path.write_text(yaml.safe_dump(sample_spec(SAMPLE_CLASSES)))
    out = tmp_path / "cli"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run([sys.executable, "-m", "vlmrobust", "build", str(spec_path), "--sample",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    again = json.loads((out / "manifest.json").read_text())
    assert again["fingerprint"] == manifest["fingerprint"]
    assert again["num_rows"] == manifest["num_rows"]


def test_build_without_images_is_a_clear_error(tmp_path: Path) -> None:
    from vlmrobust.builders.imagewikiqa.build import build
    from vlmrobust.core.errors import VlmrobustError

    with pytest.raises(VlmrobustError, match="--sample or --source-root"):
        build(sample_spec(SAMPLE_CLASSES), tmp_path / "s.yaml", BuildOptions(out=tmp_path / "o"))
    assert not (tmp_path / "o").exists()
