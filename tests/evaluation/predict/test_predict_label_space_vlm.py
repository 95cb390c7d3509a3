"""A vlm over a whole label space (issue 23 item 3) on a tiny random LLaVA:
likelihood over every class name, closed-world generation with every name in
the prompt (fixed or seeded random order), open world, and the refusal of a
model whose context cannot hold the label space."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.fixtures import vlm as vlm_fixtures
from tests.fixtures.classification import index_rows, toy_label_space, write_classification
from tests.fixtures.label_space import imagenet_space, photos
from tests.fixtures.label_space import write_classification as write_space
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.text.class_matcher import ClassMatcher
from vlmrobust.core.text.matcher import names_in_text
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.models import load_adapter
from vlmrobust.models.label_space_prompts import LABEL_SPACE_PROMPTS
from vlmrobust.models.vlm import VlmAdapter

SPACE = toy_label_space()
DEFAULT_QUESTION = LABEL_SPACE_PROMPTS["what-type"].question


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return vlm_fixtures.make_llava(tmp_path_factory.mktemp("llava") / "m")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_classification(tmp_path_factory.mktemp("ds") / "ds", n=4, k=3)


def _table(path: Path) -> list[dict[str, Any]]:
    return list(pq.read_table(path).to_pylist())


def _rows_with_images(dataset: Path) -> list[dict[str, Any]]:
    from vlmrobust.core.datadir import config_names, read_table

    out = []
    for config in config_names(dataset):
        out += read_table(dataset, config, columns=["id", "image", "label", "candidates"]).to_pylist()
    return out


@pytest.mark.parametrize("mode", ["likelihood:sum", "likelihood:avg"])
def test_likelihood_over_class_names_equals_the_readers_option_scores(
        llava: Path, dataset: Path, tmp_path: Path, mode: str) -> None:
    out = predict_dataset(RunSpec(
        f"vlm:{llava}", dataset, tmp_path / "p.parquet", progress=False,
        reader=ReaderOptions(mode=mode), backend=BackendOptions(device="cpu", threads=1)))
    got = _table(out)
    expected = index_rows(dataset)
    assert [len(r["logits"]) for r in got] == [e["k"] for e in expected] == [6] * 4 + [3] * 4
    adapter = load_adapter(f"vlm:{llava}", device="cpu", mode=mode)
    assert isinstance(adapter, VlmAdapter)
    mcq = [{"id": r["id"], "image": r["image"], "question": DEFAULT_QUESTION,
            "options": [SPACE.names[c] for c in (r["candidates"] or range(len(SPACE)))]}
           for r in _rows_with_images(dataset)]
    want = [r.logits for r in adapter.read(mcq)]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g["logits"], w, rtol=1e-5, atol=1e-5)
    assert all(r["prompt_text"].rstrip().endswith("ASSISTANT:") and DEFAULT_QUESTION in r["prompt_text"]
               for r in got)
    assert read_prediction_meta(out)["prompt_id"] == "what-type"


@pytest.mark.parametrize("order", ["fixed", "random"])
def test_closed_world_lists_every_class_and_matches_the_output(
        llava: Path, dataset: Path, tmp_path: Path, order: str) -> None:
    kw: dict[str, Any] = {"class_order": order} if order == "fixed" else {}  # random: the default
    out = predict_dataset(RunSpec(
        f"vlm:{llava}", dataset, tmp_path / "p.parquet", progress=False,
        reader=ReaderOptions(mode="generate", **kw), backend=BackendOptions(device="cpu", threads=1)))
    got = _table(out)
    matcher = ClassMatcher.for_space(SPACE)
    orders = set()
    for row, e in zip(got, index_rows(dataset), strict=True):
        names = [SPACE.names[c] for c in (e["candidates"] or range(len(SPACE)))]
        listed = row["prompt_text"].split("Choose one from ", 1)[1].split(".", 1)[0].split(", ")
        assert sorted(listed) == sorted(names)
        orders.add(tuple(listed) == tuple(names))
        found = matcher.answer(row["text"], e["label"], e["candidates"] or None)
        want = found if found is None or not e["candidates"] else e["candidates"].index(found)
        assert row["prediction"] == want
    assert orders == {True} if order == "fixed" else False in orders
    assert read_prediction_meta(out)["class_order"] == order
    if order == "random":  # seeded per row: the same prompts on a second run
        again = predict_dataset(RunSpec(
            f"vlm:{llava}", dataset, tmp_path / "q.parquet", progress=False,
            reader=ReaderOptions(mode="generate", class_order="random"),
            backend=BackendOptions(device="cpu", threads=1)))
        assert [r["prompt_text"] for r in _table(again)] == [r["prompt_text"] for r in got]


def test_open_world_asks_the_question_alone(llava: Path, dataset: Path, tmp_path: Path) -> None:
    out = predict_dataset(RunSpec(
        f"vlm:{llava}", dataset, tmp_path / "p.parquet", progress=False, configs="toy-k3",
        reader=ReaderOptions(mode="open-world"), backend=BackendOptions(device="cpu", threads=1)))
    for row, e in zip(_table(out), [e for e in index_rows(dataset) if e["config"] == "toy-k3"],
                      strict=True):
        assert "Choose one" not in row["prompt_text"] and DEFAULT_QUESTION in row["prompt_text"]
        c = SPACE.classes[e["label"]]
        hit = names_in_text(row["text"], (c.name, *c.synonyms))
        assert row["prediction"] == (e["answer"] if hit else None)


def test_a_context_too_short_for_the_label_space_is_refused(llava: Path, tmp_path: Path) -> None:
    ds = write_space(tmp_path / "ds", {"in1k": imagenet_space()},
                     {"in1k": [{"id": "a", "image": photos()[0], "label": 281}]})
    out = tmp_path / "p.parquet"
    with pytest.raises(VlmrobustError) as err:
        predict_dataset(RunSpec(
            f"vlm:{llava}", ds, out, progress=False, reader=ReaderOptions(mode="generate"),
            backend=BackendOptions(device="cpu")))
    msg = str(err.value)
    assert "\n" not in msg and "1000 classes" in msg and "max_position_embeddings 512" in msg
    assert not out.exists() and not list(tmp_path.glob(".p.parquet.partial"))
    # lettering a 1,000-class row is refused before the model loads
    with pytest.raises(VlmrobustError, match="letters at most 26"):
        predict_dataset(RunSpec(
            f"vlm:{llava}", ds, out, progress=False, reader=ReaderOptions(mode="letter"),
            backend=BackendOptions(device="cpu")))
    # the likelihood call holds the question and one name: within the context
    adapter = load_adapter(f"vlm:{llava}", device="cpu", mode="likelihood:sum")
    assert isinstance(adapter, VlmAdapter)
    row = {"id": "a", "image": photos()[0], "label": 281}
    adapter.preflight([row], imagenet_space())


def test_class_order_outside_closed_world_is_refused(llava: Path, dataset: Path,
                                                     tmp_path: Path) -> None:
    with pytest.raises(VlmrobustError, match="--class-order"):
        predict_dataset(RunSpec(
            f"vlm:{llava}", dataset, tmp_path / "p.parquet", progress=False,
            reader=ReaderOptions(mode="likelihood:sum", class_order="random"),
            backend=BackendOptions(device="cpu")))
    assert not list(tmp_path.iterdir())
