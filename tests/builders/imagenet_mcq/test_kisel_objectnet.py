"""Done-when: Kisel et al.'s clean_validation.csv in its published format builds
(only listed images, every proposed label valid, the stated answer rule), and
ObjectNet questions from fixtures in the release's mappings/ layout are asked in
ObjectNet's own class names ("chair", not "barber chair")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders.imagenet_mcq.test_sources import CLASSES, _img, make_sources, raw_spec
from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagenet_mcq.build import build
from vlmrobust.builders.labels import read_kisel_csv
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import SourceError

# Written by hand in the published layout; multi-label rows quote their list, one
# row's original label is not proposed (00000008: 415 -> 700), one has three labels.
KISEL = """id,original_label,proposed_labels,validation
ILSVRC2012_val_00000002.JPEG,970,"795, 970",+
ILSVRC2012_val_00000003.JPEG,230,230,*
ILSVRC2012_val_00000005.JPEG,516,"516, 850",+
ILSVRC2012_val_00000008.JPEG,415,700,+
ILSVRC2012_val_00000010.JPEG,332,332,*
ILSVRC2012_val_00000017.JPEG,108,"327, 108",+
ILSVRC2012_val_00000026.JPEG,846,"619, 526, 846",+
ILSVRC2012_val_00000029.JPEG,55,"64, 55",+
"""
LISTED = {"ILSVRC2012_val_000000" + n + ".JPEG": labels for n, labels in (
    ("02", (795, 970)), ("03", (230,)), ("05", (516, 850)), ("08", (700,)), ("10", (332,)),
    ("17", (327, 108)), ("26", (619, 526, 846)), ("29", (64, 55)))}
ANSWER = {"ILSVRC2012_val_00000002.JPEG": 970, "ILSVRC2012_val_00000003.JPEG": 230,
          "ILSVRC2012_val_00000005.JPEG": 516, "ILSVRC2012_val_00000008.JPEG": 700,
          "ILSVRC2012_val_00000010.JPEG": 332, "ILSVRC2012_val_00000017.JPEG": 108,
          "ILSVRC2012_val_00000026.JPEG": 846, "ILSVRC2012_val_00000029.JPEG": 55}


def test_read_kisel_csv_and_its_errors(tmp_path: Path) -> None:
    p = tmp_path / "clean_validation.csv"
    p.write_text(KISEL)
    got = read_kisel_csv(p)
    assert got == {k.removesuffix(".JPEG"): v for k, v in LISTED.items()}
    p.write_text("file,labels\nx,1\n")
    with pytest.raises(SourceError, match="row 1 must be the header 'id,original_label"):
        read_kisel_csv(p)
    p.write_text(KISEL.replace('"64, 55"', "64, 55"))
    with pytest.raises(SourceError, match=r"row 9 has 5 fields.*quote"):
        read_kisel_csv(p)
    p.write_text(KISEL.replace("230,230,*", "230,1234,*"))
    with pytest.raises(SourceError, match=r"row 3 proposed_labels: label '1234'"):
        read_kisel_csv(p)


def test_kisel_csv_builds_only_listed_images(tmp_path: Path) -> None:
    root = make_sources(tmp_path / "src")
    (root / "clean_validation.csv").write_text(KISEL)  # found by clean_labels: auto
    spec = {**raw_spec(["random", "wordnet"]), "clean_labels": "auto"}
    out = tmp_path / "ds"
    manifest = build(spec, Path("s.yaml"), BuildOptions(out=out, source_root=root,
                                                        progress=False))
    assert "clean_validation.csv (Kisel et al., Flaws of ImageNet), 8 listed images" in \
        manifest["clean_labels"]
    card = (out / "README.md").read_text()
    assert "clean_validation.csv (Kisel et al., Flaws of ImageNet), 8 listed images" in card
    assert "original ImageNet label when it is among its valid labels" in card
    for strategy in ("random", "wordnet"):
        rows = read_table(out, f"imagenet-val-{strategy}").to_pylist()
        assert sorted(r["source_file"] for r in rows) == sorted(LISTED)  # absent: absent
        for r in rows:
            valid = set(LISTED[r["source_file"]])
            assert r["label"] == ANSWER[r["source_file"]]
            assert r["option_class_ids"][r["answer"]] == r["label"]
            # no option of a multi-label image is another of its valid labels
            assert [c in valid for c in r["option_class_ids"]].count(True) == 1
    for config in manifest["configs"]:
        assert all(r["source_file"] for r in read_table(out, config).to_pylist())


def _objectnet(root: Path) -> Path:
    """An ObjectNet release in miniature: images/<folder>/*.png and the two
    mappings/ JSON files (ObjectNet name -> '; '-joined ILSVRC labels, folder -> name)."""
    mapping = {"Chair": (423, 559, 765), "Still Camera": (732, 759), "Tie": (457, 906),
               "Banana": (954,), "Mug": (504,), "Bench": (703,), "TV": (851,)}
    on = root / "objectnet"
    folders = {"chair": "Chair", "still_camera": "Still Camera", "tie": "Tie",
               "banana": "Banana", "mug": "Mug", "bench": "Bench", "tv": "TV",
               "dish_soap": "Dish soap"}  # a class that maps to no IN-1k class
    for j, folder in enumerate(folders):
        for i in range(3):
            _img(on / "images" / folder / f"{i:04d}.png", 500 + 10 * j + i, "PNG")
    (on / "mappings").mkdir(parents=True)
    (on / "mappings" / "objectnet_to_imagenet_1k.json").write_text(json.dumps(
        {n: "; ".join(CLASSES[c].label for c in ids) for n, ids in mapping.items()}))
    (on / "mappings" / "folder_to_objectnet_label.json").write_text(json.dumps(folders))
    return root


def build_objectnet_mcq(root: Path, out: Path) -> dict[str, Any]:
    """ImageNet-MCQ (random, wordnet) over imagenet-val and the ObjectNet
    fixture above, built from sources under ``root`` into ``out``."""
    import shutil

    make_sources(root)
    shutil.rmtree(root / "objectnet")
    _objectnet(root)
    raw = raw_spec(["random", "wordnet"])
    raw["variants"] = [v for v in raw["variants"] if v["name"] in ("imagenet-val", "objectnet")]
    raw["questions_per_variant"] = 30
    return build(raw, Path("s.yaml"), BuildOptions(out=out, source_root=root, progress=False))


def test_objectnet_asks_chair_in_objectnet_names(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    manifest = build_objectnet_mcq(tmp_path / "src", out)
    assert manifest["label_space_sizes"]["objectnet"] == 7  # ObjectNet classes, not IN-1k
    names = {"chair", "still Camera", "tie", "banana", "mug", "bench", "TV"}
    group = {423: "chair", 559: "chair", 765: "chair", 732: "still Camera",
             759: "still Camera", 457: "tie", 906: "tie", 954: "banana", 504: "mug",
             703: "bench", 851: "TV"}
    for strategy in ("random", "wordnet"):
        rows = read_table(out, f"objectnet-{strategy}").to_pylist()
        assert len(rows) == 21
        chairs = [r for r in rows if r["source_file"].startswith("chair/")]
        assert len(chairs) == 3
        for r in chairs:
            assert r["options"][r["answer"]] == "chair"
        for r in rows:
            assert set(r["options"]) <= names and len(set(r["options"])) == 5
            assert not {"barber chair", "folding chair", "Polaroid camera", "bow tie"} & \
                set(r["options"])
            # no distractor from the answer's ObjectNet class, one option per class
            assert [group[c] for c in r["option_class_ids"]] == r["options"]
            assert r["options"][r["answer"]] == group[r["label"]]
