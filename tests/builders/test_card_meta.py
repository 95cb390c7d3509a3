"""Hub-ready dataset cards: the YAML header from DatasetCardData, the shared
sections, ClassLabel columns, and the offline check that stands in for
DatasetCard.validate() (which posts to the hub)."""

from __future__ import annotations

import io
import socket
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest
import yaml
from PIL import Image

from vlmrobust.benchmarks.citations import CITATIONS, for_family
from vlmrobust.builders import card_meta
from vlmrobust.builders.bench_c.build import features as bench_c_features
from vlmrobust.builders.card_meta import CardError, validate_card
from vlmrobust.builders.imagenet_mcq.build import features as mcq_features
from vlmrobust.builders.imagewikiqa.build import features as iwqa_features
from vlmrobust.core.writer import BuildInfo, write_dataset
from vlmrobust.evaluation.validate.dataset_index import load_dataset_index


def _png(seed: int) -> bytes:
    arr = np.random.default_rng(seed).integers(0, 255, size=(4, 4, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _core(i: int) -> dict[str, Any]:
    return {"id": f"q{i:03d}", "image": {"bytes": _png(i), "path": None},
            "question": "What is this?", "options": ["a", "b", "c", "d"], "answer": i % 4}


def _rows(family: str, n: int) -> list[dict[str, Any]]:
    if family == "imagenet-mcq":
        return [{**_core(i), "options": ["tench", "goldfish", "a", "b", "c"], "answer": 0,
                 "label": 0, "option_class_ids": [0, 1, 2, 3, 4], "variant": "sample-photo",
                 "distractors": "random"} for i in range(n)]
    if family == "imagewikiqa":
        return [{**_core(i), "label": 1, "wnid": "n01443537", "reference": "r"}
                for i in range(n)]
    cors = [("none", 0), ("fog", 1), ("fog", 3)]
    return [{**_core(i), "id": f"q{i // 3}/{cors[i % 3][0]}/{cors[i % 3][1]}",
             "source_id": f"q{i // 3}", "source": "toy", "category": "c",
             "corruption": cors[i % 3][0], "severity": cors[i % 3][1], "kappa": 0.5}
            for i in range(n)]


FEATURES = {"imagenet-mcq": mcq_features, "imagewikiqa": iwqa_features,
            "bench-c": lambda: bench_c_features(False, ("fog", "snow"))}


def _build(out: Path, family: str, n: int = 6) -> Path:
    feats = FEATURES[family]()
    body = "# toy\n\n" + card_meta.common_sections(
        family, licences=[("toy", "cc-by-4.0", "test images")])
    write_dataset(out, configs={"default": _rows(family, n)}, features=feats, card=body,
                  info=BuildInfo(family, "0.1.0", 0, sample=True),
                  card_header=card_meta.header(family, sample=True, features=feats))
    return out


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("family", ["imagenet-mcq", "bench-c", "imagewikiqa"])
def test_built_card_is_hub_ready_offline(tmp_path: Path, family: str, no_network: None) -> None:
    out = _build(tmp_path / family, family)
    text = (out / "README.md").read_text(encoding="utf-8")
    data = validate_card(text)
    assert data["license"] == "other" and data["license_name"] and data["license_link"]
    assert data["size_categories"] == ["n<1K"]
    assert data["pretty_name"].endswith("(embedded sample)")
    assert data["task_categories"] and data["source_datasets"]
    assert data["configs"][0]["config_name"] == "default"
    body = text.split("---\n", 2)[2]
    assert "## How to evaluate" in body and body.count("vlmrobust ") >= 3
    for cmd in ("vlmrobust predict", "vlmrobust score", "vlmrobust submit"):
        assert cmd in body
    assert "## Licences" in body and "| toy | cc-by-4.0 | test images |" in body
    for c in for_family(family):
        assert c.bibtex in body  # the seed papers' BibTeX, verbatim
    # the header's features name the ClassLabel columns, so the hub viewer does too
    feats = datasets.Features._from_yaml_list(data["dataset_info"]["features"])
    assert feats == FEATURES[family]()


def test_classlabel_columns_load_as_indices_with_names(tmp_path: Path) -> None:
    mcq = datasets.load_dataset(str(_build(tmp_path / "m", "imagenet-mcq")), "default",
                                split="test")
    label = mcq.features["label"]
    assert isinstance(label, datasets.ClassLabel) and label.num_classes == 1000
    assert mcq[0]["label"] == 0 and label.int2str(0) == "tench"
    bc_dir = _build(tmp_path / "b", "bench-c")
    bc = datasets.load_dataset(str(bc_dir), "default", split="test")
    cor = bc.features["corruption"]
    assert isinstance(cor, datasets.ClassLabel) and cor.names == ["none", "fog", "snow"]
    assert [cor.int2str(r["corruption"]) for r in bc][:3] == ["none", "fog", "fog"]
    # the scorer's index reads names, as before ClassLabel
    index = load_dataset_index(bc_dir)
    assert index.columns["corruption"].tolist() == ["none", "fog", "fog"] * 2


def _card(**fields: Any) -> str:
    data = card_meta.card_data("imagewikiqa", 10, sample=False).to_dict()
    data["configs"] = [{"config_name": "default",
                        "data_files": [{"split": "test", "path": "data/default/*.parquet"}]}]
    data.update(fields)
    data = {k: v for k, v in data.items() if v is not None}
    return "---\n" + yaml.safe_dump(data, sort_keys=False) + "---\n\n# card\n"


def test_valid_header_passes() -> None:
    assert validate_card(_card())["pretty_name"].startswith("ImageWikiQA")


@pytest.mark.parametrize(("fields", "problem"), [
    ({"license": "free-for-all"}, "not a hub licence identifier"),
    ({"license_name": None}, "needs license_name and license_link"),
    ({"size_categories": ["tiny"]}, "is not one of"),
    ({"task_categories": ["image-mcq"]}, "unknown task 'image-mcq'"),
    ({"pretty_name": None}, "missing pretty_name"),
    ({"source_datasets": None}, "missing source_datasets"),
    ({"configs": None}, "missing configs"),
    ({"dataset_info": {"features": [{"name": "label", "dtype": "no-such-type"}]}},
     "dataset_info.features"),
])
def test_invalid_headers_are_refused(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(CardError, match=problem):
        validate_card(_card(**fields))


def test_size_categories_match_datasets_list() -> None:
    allowed = card_meta._size_categories()
    for n in (0, 999, 1000, 9_999, 10**5, 10**6, 5 * 10**8):
        assert card_meta.size_category(n) in allowed


def test_hub_validate_needs_the_network(no_network: None) -> None:
    """Why validate_card exists: the hub's own DatasetCard.validate() posts the card
    to huggingface.co, which an offline build cannot reach."""
    from huggingface_hub import DatasetCard

    card = DatasetCard(_card())
    with pytest.raises(Exception):  # noqa: B017 - whatever the HTTP stack raises offline
        card.validate()


def test_every_family_cites_its_seed_paper() -> None:
    keys = {f: {c.key for c in for_family(f)} for f in card_meta.FAMILIES}
    assert "sui2025benchc" in keys["bench-c"] and "zhang2024why" in keys["imagewikiqa"]
    assert "taori2020measuring" in keys["imagenet-mcq"]
    assert len({c.key for c in CITATIONS}) == len(CITATIONS)
