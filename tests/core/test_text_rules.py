"""Seed 002's text rules over a label space (issue 33 items 2 and 3): success is
inclusion of the class name (Table 1), with the WordNet lemmas as its only
synonyms (Table 8); the strict matcher is a named option."""

from __future__ import annotations

import pytest

from vlmrobust.builders.classification.spaces import imagenet_entry, imagenet_space
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.label_space import name_key
from vlmrobust.core.text.class_matcher import DEFAULT_TEXT_RULE, TEXT_RULES, ClassMatcher, TextRule


def test_imagenet_synonyms_are_the_classes_wordnet_lemmas_only() -> None:
    """Before: 9 classes took names outside their synset as synonyms (the CLIP
    name "duck" for drake, "vespa" for motor scooter, "sailboat" for yawl)."""
    classes = load_imagenet_classes()
    outside = {c.index: [s for s in imagenet_entry(c.index).synonyms
                         if name_key(s) not in {name_key(lemma) for lemma in c.lemmas}]
               for c in classes}
    assert {i: s for i, s in outside.items() if s} == {}
    # every lemma but the display name itself is a synonym
    for c in classes:
        e = imagenet_entry(c.index)
        assert {name_key(s) for s in e.synonyms} == {name_key(x) for x in c.lemmas} - {name_key(c.name)}


def test_drake_is_not_read_from_duck_where_duck_is_not_its_label_text() -> None:
    """"duck" is OpenAI CLIP's name for drake, so the openai build's prompts write
    it and every rule reads it; it is no synonym, so a curated build (prompts
    write "drake (male duck)") does not take it under any rule."""
    drake = 97
    openai = ClassMatcher.for_space(imagenet_space("in1k", tuple(range(1000))))
    assert all(openai.answer("a duck on a pond", drake, rule=rule) == drake for rule in TEXT_RULES)
    m = ClassMatcher.for_space(imagenet_space("in1k", tuple(range(1000)), "curated"))
    for rule in TEXT_RULES:
        assert m.answer("a duck on a pond", drake, rule=rule) != drake, rule.id
    assert m.answer("a drake on a pond", drake, rule=TextRule("inclusion", True)) == drake


def test_rule_ids_parse_and_refuse() -> None:
    assert TextRule("inclusion", False) == DEFAULT_TEXT_RULE
    assert [TextRule.parse(r.id) for r in TEXT_RULES] == list(TEXT_RULES)
    with pytest.raises(ValueError, match="text rule 'loose'"):
        TextRule.parse("loose")
    with pytest.raises(ValueError, match="'fuzzy' is not one of inclusion, strict"):
        TextRule("fuzzy")
    with pytest.raises(ValueError, match=r"label 7 is outside 0\.\.1"):
        ClassMatcher(["a", "b"], [[], []]).answer("a", 7)


class Scripted:
    """A backend whose generations are given (the model's output is the input here)."""

    name = "scripted"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def generate(self, prompts: list, config: object) -> list[str]:
        return self.texts[:len(prompts)]

    def render(self, prompt: object) -> str:
        return str(getattr(prompt, "text", ""))


@pytest.mark.parametrize("mode", ["generate", "open-world"])
def test_the_reader_records_what_the_scorer_reads(mode: str) -> None:
    """predict's prediction equals the scorer's reading (validate refuses a
    prediction that disagrees with the text), under inclusion in both worlds."""
    from vlmrobust.models.readers import parse_mode
    from vlmrobust.models.readers.label_space import LabelSpaceReads

    space = imagenet_space("in1k", tuple(range(1000)))
    texts = ["A goldfish swimming in a fish tank", "a tench, I think", "a sunny day"]
    rows = [{"id": str(i), "image": None, "label": 1} for i in range(3)]
    reads = LabelSpaceReads(parse_mode(mode), Scripted(texts), None, "fixed")  # type: ignore[arg-type]
    assert [r.prediction for r in reads.read(rows, space)] == [1, 0, None]
    k_rows = [{**r, "candidates": [847, 1, 0]} for r in rows]  # tank, goldfish, tench
    assert [r.prediction for r in reads.read(k_rows, space)] == [1, 2, None]


def test_the_name_rule_reads_the_label_text_prompts_write() -> None:
    """An ImageNet build writes OpenAI CLIP's names (seed 002's class names): the
    name-only rule looks for "tiger cat", not the curated "a cat having a striped coat"."""
    space = imagenet_space("in1k", tuple(range(1000)))
    m = ClassMatcher.for_space(space)
    tiger_cat = 282
    assert space.classes[tiger_cat].label_text == "tiger cat"
    assert m.answer("a tiger cat on a sofa", tiger_cat) == tiger_cat
    assert m.answer("a cat having a striped coat", tiger_cat) != tiger_cat


def test_the_leaderboard_csv_carries_every_text_rule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Seed 002 Table 8's with-synonyms accuracy and the strict matcher's reach the
    leaderboard's classification.csv beside the headline (inclusion) accuracy."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.fixtures.classification import index_rows, toy_label_space, write_classification
    from tests.fixtures.score import write_meta
    from vlmrobust.evaluation.scoring.dataset import score_report
    from vlmrobust.evaluation.validate.check import validate
    from vlmrobust.leaderboard.pages.classification.page import _extras, csv_columns
    from vlmrobust.leaderboard.scores_json import parse_scores

    ds = write_classification(tmp_path / "ds", n=4, k=None)
    space = toy_label_space()
    rows = index_rows(ds)
    # a synonym, a hedge naming the label and another class, the label's name, nothing
    texts = [f"a {space.classes[r['label']].synonyms[-1]}" if i == 0 else
             f"a {space.names[r['label']]} or a {space.names[(r['label'] + 1) % 6]}" if i == 1 else
             space.names[r["label"]] if i == 2 else "a sunny day" for i, r in enumerate(rows)]
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "text": texts}), p)
    write_meta(p, ds)
    scores = score_report(validate(ds, p), "m")
    parsed = parse_scores(scores, tmp_path / "scores.json", "m")
    config = next(iter(parsed.values())).configs[0]
    assert config.accuracy == 0.5  # inclusion of the name: the hedge and the bare name
    extras = _extras(config)
    assert (extras["accuracy_synonyms"], extras["accuracy_strict"], extras["accuracy_strict_synonyms"]) \
        == (0.75, 0.25, 0.5)
    cols = csv_columns([extras])
    assert cols[cols.index("accuracy_ci_high") + 1:][:3] == [
        "accuracy_synonyms", "accuracy_strict", "accuracy_strict_synonyms"]
