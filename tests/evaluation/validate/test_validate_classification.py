"""validate for kind classification (issue 23): n_options = n_classes (or K),
answer = label (or its position among the candidates), text matched against
the label space's names + synonyms, logits length checked with a one-line fix;
MCQ datasets are read as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fixtures.classification import (
    index_rows,
    perfect_logits,
    random_logits,
    toy_label_space,
    write_classification,
)
from tests.fixtures.score import write_jsonl, write_mcq, write_meta
from vlmrobust.cli import main
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION, MCQ
from vlmrobust.core.text.class_matcher import ClassMatcher
from vlmrobust.core.text.matcher import _by_names, _prepare, _unambiguous, fold
from vlmrobust.evaluation.validate.check import validate
from vlmrobust.evaluation.validate.dataset_index import load_dataset_index, max_options


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_classification(tmp_path_factory.mktemp("cls") / "ds", n=10, k=3)


def _preds(tmp: Path, ds: Path, logits: list[Any] | None = None, name: str = "p.parquet",
           **cols: Any) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = index_rows(ds)
    table = {"id": [r["id"] for r in rows], **({"logits": logits} if logits is not None else {}),
             **cols}
    p = tmp / name
    pq.write_table(pa.table(table), p)
    write_meta(p, ds)
    return p


def test_index_holds_label_space_sizes_and_answers_not_options(ds: Path) -> None:
    index = load_dataset_index(ds)
    rows = index_rows(ds)
    assert index.kind == CLASSIFICATION and index.options is None
    assert index.n_options.tolist() == [r["k"] for r in rows] == [6] * 10 + [3] * 10
    assert index.answer.tolist() == [r["answer"] for r in rows]
    assert index.labels is not None and index.labels.tolist() == [r["label"] for r in rows]
    assert index.candidates is not None
    for i, r in enumerate(rows):
        shown = index.candidates[i]
        assert list(shown) == r["candidates"]
        assert (shown[index.answer[i]] if shown else index.answer[i]) == r["label"]
    assert set(index.label_spaces) == {"toy", "toy-k3"}
    assert index.label_spaces["toy"] == toy_label_space()
    assert max_options(ds, index.manifest, ["toy"]) == 6
    sub = index.subset(index.n_options == 3)
    assert sub.configs == ("toy-k3",) and sub.candidates is not None and len(sub.candidates) == 10
    assert sub.labels is not None and sub.labels.tolist() == [r["label"] for r in rows[10:]]


def test_config_selection_and_other_config_hint(ds: Path, tmp_path: Path) -> None:
    index = load_dataset_index(ds, "toy-k3")
    assert index.n_rows == 10 and set(index.other_ids.values()) == {"toy"}
    rows = index_rows(ds)
    p = _preds(tmp_path, ds, random_logits(rows))
    with pytest.raises(SubmissionError, match="belong to config"):
        validate(ds, p, config="toy-k3")


def test_logits_over_the_label_space_and_the_candidates_validate(ds: Path, tmp_path: Path) -> None:
    rows = index_rows(ds)
    report = validate(ds, _preds(tmp_path, ds, perfect_logits(rows)))
    assert report.aligned.predicted.tolist() == [r["answer"] for r in rows]
    assert report.aligned.logits is not None and report.aligned.logits.shape == (20, 6)
    assert np.isneginf(report.aligned.logits[10:, 3:]).all()  # K-config rows padded past K


@pytest.mark.parametrize("row, n", [(3, 4), (13, 6)])
def test_wrong_number_of_logits_is_one_line_naming_file_row_and_fix(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], row: int, n: int) -> None:
    rows = index_rows(ds)
    logits = random_logits(rows)
    logits[row] = [0.0] * n
    p = _preds(tmp_path, ds, logits)
    with pytest.raises(SubmissionError) as err:
        validate(ds, p)
    msg = str(err.value)
    assert "\n" not in msg and str(p) in msg and f"row {row} (id '{rows[row]['id']}')" in msg
    if row < 10:
        assert "write 6 logits, one per class of the label space of config 'toy'" in msg
    else:
        assert "write 3 logits, one per candidate class" in msg and "'candidates'" in msg
    out = tmp_path / "scores.json"
    assert main(["score", "--dataset", str(ds), "--predictions", str(p), "--out", str(out)]) == 1
    err_text = capsys.readouterr().err
    assert err_text.startswith("error: ") and err_text.count("\n") == 1 and not out.exists()


def test_more_logits_than_classes_is_refused_while_reading(ds: Path, tmp_path: Path) -> None:
    rows = index_rows(ds)
    records = [{"id": r["id"], "logits": [0.0] * r["k"]} for r in rows]
    records[2]["logits"] = [0.0] * 7
    p = write_jsonl(tmp_path / "p.jsonl", records)
    write_meta(p, ds)
    with pytest.raises(VlmrobustError, match="line 3 has 7 logits, more than the 6"):
        validate(ds, p)


def test_text_is_read_by_inclusion_of_the_class_name_and_scored_under_every_rule(
        ds: Path, tmp_path: Path) -> None:
    """Issue 33 items 2-3: seed 002 Table 1 (the headline) reads the class name
    alone; Table 8 adds the synonyms; the strict matcher is reported beside."""
    from vlmrobust.evaluation.scoring.dataset import score_report

    rows = index_rows(ds)
    space = toy_label_space()
    texts = []
    for i, r in enumerate(rows):
        cls = space.classes[r["label"]]
        texts.append(f"The answer is {cls.name}." if i % 2 else f"I see a {cls.synonyms[-1]}.")
    p = _preds(tmp_path, ds, text=texts)
    report = validate(ds, p)
    named = [i % 2 == 1 for i in range(len(rows))]
    assert report.aligned.predicted.tolist() == [r["answer"] if ok else -1
                                                 for r, ok in zip(rows, named, strict=True)]
    assert report.aligned.from_text is not None and report.aligned.from_text.all()
    configs = next(iter(score_report(report, "m")["datasets"].values()))["configs"]
    for cfg in configs.values():
        assert cfg["text_rule"] == "inclusion" and cfg["accuracy"] == cfg["text_rules"]["inclusion"] == 0.5
        assert cfg["text_rules"] == {"inclusion": 0.5, "inclusion+synonyms": 1.0,
                                     "strict": 0.5, "strict+synonyms": 1.0}
        assert cfg["synonym_gain"] == 0.5


def test_text_naming_two_classes_is_right_by_inclusion_and_none_by_the_strict_rule(
        ds: Path, tmp_path: Path) -> None:
    """Seed 002 §2.3: "whether the ground-truth label is included in the VLM
    generation"; the strict matcher (a named option) answers none on a hedge."""
    from vlmrobust.evaluation.scoring.dataset import score_report

    rows = index_rows(ds)
    space = toy_label_space()
    texts = []
    for r in rows:
        wrong = next(c for c in range(6) if c != r["label"] and c not in r["candidates"])
        texts.append(f"a {space.names[r['label']]} or a {space.names[wrong]}")
    report = validate(ds, _preds(tmp_path, ds, text=texts))
    assert report.aligned.predicted.tolist() == [r["answer"] for r in rows]
    configs = next(iter(score_report(report, "m")["datasets"].values()))["configs"]
    full, k3 = configs["toy"]["text_rules"], configs["toy-k3"]["text_rules"]
    assert full["inclusion"] == 1.0 and full["strict"] == 0.0  # whole label space: a hedge
    assert k3["inclusion"] == k3["strict"] == 1.0  # the other class is no candidate


def test_the_goldfish_in_a_fish_tank_counts_by_inclusion() -> None:
    """The issue's case: "tank" is a class too, so the strict matcher answers none."""
    from vlmrobust.core.classes import load_imagenet_classes
    from vlmrobust.core.text.class_matcher import TextRule

    classes = load_imagenet_classes()
    m = ClassMatcher([c.clip_name for c in classes], [c.lemmas for c in classes])
    text = "A goldfish swimming in a fish tank"
    assert m.answer(text, 1) == 1
    assert m.answer(text, 1, rule=TextRule("strict")) is None
    assert m.answer(text, 1, rule=TextRule("strict", synonyms=True)) is None


def test_open_world_names_the_label_anywhere(ds: Path, tmp_path: Path) -> None:
    import yaml

    rows = index_rows(ds)
    space = toy_label_space()
    texts = [f"maybe a {space.names[(r['label'] + 1) % 6]} or a {space.names[r['label']]}"
             if i % 3 else "a sunny day" for i, r in enumerate(rows)]
    p = _preds(tmp_path, ds, text=texts)
    meta_path = p.with_name(p.name + ".meta.yaml")
    meta = yaml.safe_load(meta_path.read_text())
    meta["mode"] = "open-world"
    meta_path.write_text(yaml.safe_dump(meta))
    predicted = validate(ds, p).aligned.predicted.tolist()
    assert predicted == [r["answer"] if i % 3 else -1 for i, r in enumerate(rows)]


def test_prediction_is_a_class_index_and_must_agree_with_the_text(ds: Path, tmp_path: Path) -> None:
    rows = index_rows(ds)
    p = _preds(tmp_path, ds, prediction=[r["answer"] for r in rows])
    assert validate(ds, p).aligned.predicted.tolist() == [r["answer"] for r in rows]
    bad = [r["answer"] for r in rows]
    bad[12] = 3  # a K-config row has 3 options
    with pytest.raises(SubmissionError, match=r"prediction out of range.*row 12"):
        validate(ds, _preds(tmp_path, ds, prediction=bad, name="q.parquet"))
    space = toy_label_space()
    texts = [space.names[r["label"]] for r in rows]
    forged = [(r["answer"] + 1) % r["k"] for r in rows]
    with pytest.raises(SubmissionError, match="prediction disagrees with text"):
        validate(ds, _preds(tmp_path, ds, prediction=forged, text=texts, name="f.parquet"))


def test_mcq_datasets_are_indexed_as_before(tmp_path: Path) -> None:
    index = load_dataset_index(write_mcq(tmp_path / "mcq", n=4, k=5))
    assert index.kind == MCQ and not index.label_spaces and index.labels is None
    assert index.options is not None and index.n_options.tolist() == [5] * 8


def test_a_kind_validate_cannot_read_is_refused_in_one_line(ds: Path, tmp_path: Path) -> None:
    import json
    import shutil

    copy = tmp_path / "ds"
    shutil.copytree(ds, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["kind"] = "retrieval"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(VlmrobustError, match="kind 'retrieval' cannot be validated") as err:
        load_dataset_index(copy)
    assert "\n" not in str(err.value)


# ---- the matcher's word index never changes an answer -------------------------------------


def _reference(m: ClassMatcher, text: str, candidates: list[int] | None) -> int | None:
    """Stages 2 and 3 of match_option over every name, without the word index."""
    owners = candidates if candidates is not None else range(len(m.names))
    named = [(fold(m.names[c]), c) for c in owners if fold(m.names[c])]
    both = list(dict.fromkeys([*named, *((fold(s), c) for c in owners for s in m.synonyms[c]
                                         if fold(s))]))
    body = _prepare(text)
    found = _by_names(body, _unambiguous(named))
    return found if found is not None else _by_names(body, _unambiguous(both))


def _imagenet_matcher() -> ClassMatcher:
    from vlmrobust.core.classes import load_imagenet_classes

    classes = load_imagenet_classes()
    return ClassMatcher([c.name for c in classes],
                        [tuple(dict.fromkeys((c.clip_name, *c.lemmas))) for c in classes])


MATCHER = _imagenet_matcher()
_WORDS = ["the answer is", "a", "or", "not", "photo of", "it looks like", ".", ",", "s", "es", "ies"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a cue that ends inside a word ("answer isespresso machine"): the reference reads
# after the cue, so the index must key the words after it too
@example(parts=["the answer is", MATCHER.names[550]], cands=None)
@example(parts=["the answer is", MATCHER.names[550]], cands=[550, 3])
@given(st.lists(st.one_of(st.integers(0, 999).map(lambda i: MATCHER.names[i]),
                          st.integers(0, 999).map(lambda i: (MATCHER.synonyms[i] or ("x",))[-1]),
                          st.sampled_from(_WORDS)), min_size=1, max_size=6),
       st.one_of(st.none(), st.lists(st.integers(0, 999), min_size=2, max_size=20, unique=True)))
def test_class_matcher_equals_the_unindexed_matcher(parts: list[str], cands: list[int] | None) -> None:
    text = " ".join(parts).replace(" s ", "s ").replace(" es", "es").replace(" ies", "ies")
    assert MATCHER.match(text, cands) == _reference(MATCHER, text, cands)
