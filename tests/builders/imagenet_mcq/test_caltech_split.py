"""Caltech101's test split as seed 002 counts it (issue 33 item 5): "4,331 test
images from ... 101 classes" (§2.2), Table 7 "4.3K" train / "4.3K" validation:
the seed authors' per-class half split (their ``caltech.jsonl``) when it is in
the source root, else a seeded floor(n/2) per class; the 30-per-class protocol
(the old default) stays as ``caltech_split: first30``. Tiny fake layouts in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.classification_layouts import img, raw_spec
from vlmrobust.builders.classification.build import build
from vlmrobust.builders.classification.layouts_other import read_caltech101
from vlmrobust.builders.classification.spec import parse_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.core.errors import SourceError, SpecError

SIZES = {"BACKGROUND_Google": 3, "Faces": 4, "ant": 5, "bonsai": 7}


def _layout(root: Path, sizes: dict[str, int] = SIZES) -> Path:
    d = root / "caltech101" / "101_ObjectCategories"
    for j, (cls, n) in enumerate(sizes.items()):
        for i in range(n):
            img(d / cls / f"image_{i + 1:04d}.jpg", 700 + 50 * j + i, size=8)
    return root


def _split_file(root: Path, test: set[str], where: str = "caltech101") -> None:
    """The seed authors' format: one JSON object per image, path and split."""
    d = root / "caltech101" / "101_ObjectCategories"
    lines = []
    for sub in sorted(p for p in d.iterdir() if p.name != "BACKGROUND_Google"):
        for p in sorted(sub.iterdir()):
            key = f"{sub.name}/{p.name}"
            lines.append(json.dumps({"image": f"./data/Caltech101/101_ObjectCategories/{key}",
                                     "label": sub.name, "split": "test" if key in test else "train"}))
    (root / where / "caltech.jsonl").write_text("\n".join(lines) + "\n")


def _by_class(src: object) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for it in src.items:  # type: ignore[attr-defined]
        cls, name = it.key.split("/")
        out.setdefault(cls, []).append(name)
    return out


def test_without_the_seed_list_each_class_gives_floor_half_by_a_seeded_draw(tmp_path: Path) -> None:
    root = _layout(tmp_path)
    src = read_caltech101(root, "auto", seed=3)
    got = _by_class(src)
    assert {c: len(v) for c, v in got.items()} == {"Faces": 2, "ant": 2, "bonsai": 3}
    assert src.notes["caltech_split"] == "half" and len(src.items) == 7
    assert _by_class(read_caltech101(root, "half", seed=3)) == got  # same seed, same split
    others = [_by_class(read_caltech101(root, "half", seed=s)) for s in range(4, 12)]
    assert any(o != got for o in others)  # the draw follows the seed, not file-name order
    assert src.space.names == ("off-center face", "ant", "bonsai")


def test_the_seed_authors_list_gives_exactly_its_test_images(tmp_path: Path) -> None:
    root = _layout(tmp_path)
    test = {"Faces/image_0001.jpg", "Faces/image_0004.jpg", "ant/image_0002.jpg",
            "ant/image_0003.jpg", "ant/image_0005.jpg", "bonsai/image_0007.jpg"}
    _split_file(root, test)
    for rule in ("auto", "seed-list"):
        src = read_caltech101(root, rule)
        assert {it.key for it in src.items} == test and src.notes["caltech_split"] == "seed-list"
    # the list may sit in the source root too; half / first30 ignore it
    (root / "caltech101" / "caltech.jsonl").rename(root / "caltech.jsonl")
    assert {it.key for it in read_caltech101(root, "auto").items} == test
    assert len(read_caltech101(root, "half").items) == 7


def test_seed_list_without_the_file_or_with_a_missing_image_is_refused(tmp_path: Path) -> None:
    root = _layout(tmp_path)
    with pytest.raises(SourceError, match=r"no caltech\.jsonl .*caltech_split: half"):
        read_caltech101(root, "seed-list")
    _split_file(root, {"ant/image_0001.jpg", "bonsai/image_0002.jpg"})
    (root / "caltech101/101_ObjectCategories/bonsai/image_0002.jpg").unlink()
    with pytest.raises(SourceError, match=r"bonsai/image_0002\.jpg .*is missing") as err:
        read_caltech101(root, "auto")
    assert "\n" not in str(err.value)
    (root / "caltech101" / "caltech.jsonl").write_text('{"image": "x/cow/image_0001.jpg", '
                                                       '"split": "test"}\n')
    with pytest.raises(SourceError, match="class 'cow' has no folder"):
        read_caltech101(root, "auto")
    (root / "caltech101" / "caltech.jsonl").write_text("not json\n")
    with pytest.raises(SourceError, match="line 1 is not"):
        read_caltech101(root, "auto")


def test_first30_keeps_the_old_protocol(tmp_path: Path) -> None:
    root = _layout(tmp_path, {"ant": 32, "bonsai": 31})
    src = read_caltech101(root, "first30")
    assert {it.key for it in src.items} == {"ant/image_0031.jpg", "ant/image_0032.jpg",
                                            "bonsai/image_0031.jpg"}
    assert src.notes["caltech_split"] == "first30"
    with pytest.raises(SourceError, match="none left after the first 30"):
        read_caltech101(_layout(tmp_path / "small"), "first30")


def test_the_spec_names_the_rule_and_the_card_and_manifest_state_it(tmp_path: Path) -> None:
    assert parse_spec(raw_spec(), Path("x.yaml")).caltech_split == "auto"
    with pytest.raises(SpecError, match="caltech_split 'thirty' is not one of"):
        parse_spec(raw_spec(caltech_split="thirty"), Path("x.yaml"))
    root = _layout(tmp_path / "src")
    m = build(raw_spec(variants=["caltech101"], label_set_sizes=[2]), Path("x.yaml"),
              BuildOptions(out=tmp_path / "out", source_root=root, progress=False))
    assert m["configs"]["caltech101"] == 7 and m["caltech_split"] == "half"
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Caltech101 test split (`caltech_split`): **deviation:** per class floor(n/2)" in card
    # scores.json states the build's choices beside the numbers
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.fixtures.classification import index_rows, perfect_logits
    from tests.fixtures.score import write_meta
    from vlmrobust.evaluation.schemas import check_schema
    from vlmrobust.evaluation.scoring.dataset import score_report
    from vlmrobust.evaluation.validate.check import validate

    rows = index_rows(tmp_path / "out")
    p = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": [r["id"] for r in rows], "logits": perfect_logits(rows)}), p)
    write_meta(p, tmp_path / "out")
    doc = score_report(validate(tmp_path / "out", p))
    section = next(iter(doc["datasets"].values()))
    assert section["dataset_protocol"] == {"class_names": "openai", "caltech_split": "half"}
    check_schema(doc, "scores", "scores.json")
