"""On-disk source readers on tiny fake layouts with real JPEG/PNG files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from vlmrobust.builders.sources import (
    SourceImage,
    load_clean_labels,
    read_val_label_file,
    read_variant,
    variant_dir,
)
from vlmrobust.core.classes import class_by_wnid, label_space
from vlmrobust.core.errors import SourceError, VlmrobustError

TENCH, GOLDFISH, STINGRAY = "n01440764", "n01443537", "n01498041"  # 0, 1, 6
NOT_IN_1K = "n02084071"  # dog: a WordNet synset, not an IN-1k class


def _img(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    im = Image.new("RGB", (8, 8), (seed * 37 % 256, 100, 200))
    im.save(path, format="PNG" if path.suffix.lower() == ".png" else "JPEG")
    return path


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _class_folders(d: Path, wnids: list[str], n: int = 2, ext: str = ".JPEG") -> None:
    for j, w in enumerate(wnids):
        for i in range(n):
            _img(d / w / f"img_{j}_{i}{ext}", seed=i + j)


def _one_line(err: pytest.ExceptionInfo[BaseException]) -> str:
    msg = str(err.value)
    assert "\n" not in msg and "fix" in msg
    return msg


# ------------------------------------------------------------------ ImageNet val


def test_val_class_folders_sorted_and_labelled(tmp_path):
    d = tmp_path / "val"
    _class_folders(d, [GOLDFISH, TENCH])
    (d / TENCH / "README.txt").write_text("not an image")
    (d / TENCH / ".hidden.JPEG").write_bytes(b"")
    out = read_variant("imagenet-val", d)
    assert [s.key for s in out] == sorted(s.key for s in out)
    assert [s.key for s in out] == [
        f"{TENCH}/img_1_0.JPEG", f"{TENCH}/img_1_1.JPEG", f"{GOLDFISH}/img_0_0.JPEG", f"{GOLDFISH}/img_0_1.JPEG",
    ]
    assert [s.labels for s in out] == [(0,), (0,), (1,), (1,)]
    assert all(s.path.is_file() and s.path.parent.name == s.key.split("/")[0] for s in out)
    # Same answer through a source root that holds the variant folder.
    assert read_variant("imagenet-val", tmp_path) == out
    assert read_variant("imagenet-val", d) == out  # deterministic


def test_val_flat_with_kaggle_solution_csv(tmp_path):
    d = tmp_path / "imagenet-val"
    for i in (1, 2, 3):
        _img(d / f"ILSVRC2012_val_{i:08d}.JPEG", seed=i)
    (d / "LOC_val_solution.csv").write_text(
        "ImageId,PredictionString\n"
        f"ILSVRC2012_val_00000003,{STINGRAY} 1 2 3 4 {STINGRAY} 5 6 7 8\n"
        f"ILSVRC2012_val_00000001,{TENCH} 1 2 3 4\n"
        f"ILSVRC2012_val_00000002,{GOLDFISH} 1 2 3 4\n"
    )
    out = read_variant("imagenet-val", tmp_path)
    assert [(s.key, s.labels) for s in out] == [
        ("ILSVRC2012_val_00000001.JPEG", (0,)),
        ("ILSVRC2012_val_00000002.JPEG", (1,)),
        ("ILSVRC2012_val_00000003.JPEG", (6,)),
    ]


def test_val_flat_kaggle_layout_finds_csv_at_root(tmp_path):
    d = tmp_path / "ILSVRC" / "Data" / "CLS-LOC" / "val"
    _img(d / "ILSVRC2012_val_00000001.JPEG")
    (tmp_path / "LOC_val_solution.csv").write_text(f"ImageId,PredictionString\nILSVRC2012_val_00000001,{STINGRAY} 1 2 3 4\n")
    assert [s.labels for s in read_variant("imagenet-val", tmp_path)] == [(6,)]  # not the shipped 65


def test_val_flat_with_val_txt_and_explicit_label_file(tmp_path):
    d = tmp_path / "flat"
    _img(d / "ILSVRC2012_val_00000007.JPEG")
    _img(d / "ILSVRC2012_val_00000009.JPEG")
    (tmp_path / "val.txt").write_text("ILSVRC2012_val_00000007.JPEG 334\n# comment\nILSVRC2012_val_00000009.JPEG n01440764\n")
    out = read_variant("imagenet-val", d)  # val.txt found one level up
    assert [s.labels for s in out] == [(334,), (0,)]
    other = tmp_path / "mine.txt"
    other.write_text("ILSVRC2012_val_00000007 5\nILSVRC2012_val_00000009 6\n")
    assert [s.labels for s in read_variant("imagenet-val", d, label_file=other)] == [(5,), (6,)]


def test_val_flat_without_label_file_uses_shipped_val_labels(tmp_path):
    d = tmp_path / "val"
    for i in (1, 8):
        _img(d / f"ILSVRC2012_val_{i:08d}.JPEG")
    assert [s.labels for s in read_variant("imagenet-val", d)] == [(65,), (415,)]


def test_val_flat_label_file_mismatch_errors(tmp_path):
    d = tmp_path / "val"
    _img(d / "ILSVRC2012_val_00000001.JPEG")
    _img(d / "ILSVRC2012_val_00000002.JPEG")
    (d / "val.txt").write_text("ILSVRC2012_val_00000001.JPEG 3\n")
    before = _snapshot(tmp_path)
    with pytest.raises(SourceError) as err:
        read_variant("imagenet-val", d)
    assert "ILSVRC2012_val_00000002.JPEG" in _one_line(err) and "val.txt" in str(err.value)
    (d / "val.txt").write_text("ILSVRC2012_val_00000001.JPEG 3\nILSVRC2012_val_00000002.JPEG 1000\n")
    with pytest.raises(SourceError, match=r"val\.txt: line 2.*'1000'"):
        read_variant("imagenet-val", d)
    (d / "val.txt").write_text("ILSVRC2012_val_00000001.JPEG\n")
    with pytest.raises(SourceError, match=r"line 1 is not"):
        read_variant("imagenet-val", d)
    (d / "val.txt").unlink()
    (d / "LOC_val_solution.csv").write_text("id,label\nILSVRC2012_val_00000001,n01440764\n")
    with pytest.raises(SourceError, match=r"row 1 must be the header"):
        read_variant("imagenet-val", d)
    (d / "LOC_val_solution.csv").write_text(f"ImageId,PredictionString\nILSVRC2012_val_00000001,{NOT_IN_1K} 1 2 3 4\n")
    with pytest.raises(SourceError, match=rf"row 2: {NOT_IN_1K} is not an ImageNet-1k wnid"):
        read_variant("imagenet-val", d)
    (d / "LOC_val_solution.csv").unlink()
    # The readers wrote nothing: only the two images are left, untouched.
    assert _snapshot(tmp_path) == {k: v for k, v in before.items() if not k.endswith("val.txt")}
    assert len(_snapshot(tmp_path)) == 2


def test_read_val_label_file_both_formats(tmp_path):
    csv_file = tmp_path / "LOC_val_solution.csv"
    csv_file.write_text(f"ImageId,PredictionString\nILSVRC2012_val_00000005,{GOLDFISH} 0 0 1 1\n")
    assert read_val_label_file(csv_file) == {"ILSVRC2012_val_00000005": 1}
    txt = tmp_path / "labels.txt"
    txt.write_text("a/b/x.JPEG 12\n\ny.png n01440764\n")
    assert read_val_label_file(txt) == {"x": 12, "y": 0}


# ------------------------------------------------------------------ clean labels


def test_clean_label_json_multi_labels_relabel_and_drop(tmp_path):
    d = tmp_path / "val"
    _class_folders(d, [TENCH], n=4)
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({
        "img_0_0.JPEG": [5, 0],  # own label valid: first, others after
        "img_0_1": [GOLDFISH],  # relabelled (wnid accepted, extension optional)
        f"{TENCH}/img_0_2.JPEG": [],  # no valid label: dropped
        "img_0_3.JPEG": [0],
    }))
    out = read_variant("imagenet-val", d, clean_labels=clean)
    assert [(s.key.split("/")[1], s.labels) for s in out] == [
        ("img_0_0.JPEG", (0, 5)), ("img_0_1.JPEG", (1,)), ("img_0_3.JPEG", (0,)),
    ]
    # A mapping works as well as a file.
    assert read_variant("imagenet-val", d, clean_labels=json.loads(clean.read_text())) == out


def test_real_labels_by_filename(tmp_path):
    d = tmp_path / "val"
    for i in (1, 2, 8):
        _img(d / f"ILSVRC2012_val_{i:08d}.JPEG")
    out = read_variant("imagenet-val", d, clean_labels="real")
    # val 1: ReaL has no valid label -> dropped; val 2: 970 (own) + 795; val 8: own 415 invalid -> 700.
    assert [(s.key, s.labels) for s in out] == [
        ("ILSVRC2012_val_00000002.JPEG", (970, 795)),
        ("ILSVRC2012_val_00000008.JPEG", (700,)),
    ]
    real_json = tmp_path / "real.json"
    real_json.write_text(json.dumps([[3]] + [[970, 4]] + [[]] * 5 + [[9]] + [[]] * 49992))
    out = read_variant("imagenet-val", d, clean_labels=real_json)
    assert [s.labels for s in out] == [(3,), (970, 4), (9,)]


def test_clean_labels_errors(tmp_path):
    d = tmp_path / "val"
    _class_folders(d, [TENCH], n=2)
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"img_0_0.JPEG": [0]}))
    # a clean-label subset (Kisel et al.): an image it does not list is not in the set
    assert [s.key for s in read_variant("imagenet-val", d, clean_labels=clean)] == [
        f"{TENCH}/img_0_0.JPEG"]
    clean.write_text(json.dumps({"img_0_0.JPEG": 0}))
    with pytest.raises(SourceError, match="not a list"):
        load_clean_labels(clean)
    clean.write_text(json.dumps({"img_0_0.JPEG": [1000]}))
    with pytest.raises(SourceError, match="'1000'"):
        load_clean_labels(clean)
    clean.write_text("[1, 2")
    with pytest.raises(SourceError, match="not a readable JSON"):
        load_clean_labels(clean)
    clean.write_text(json.dumps({"a/x.JPEG": [1], "b/x.JPEG": [2]}))
    with pytest.raises(SourceError, match="listed twice"):
        load_clean_labels(clean)
    with pytest.raises(SourceError, match="not found"):
        load_clean_labels(tmp_path / "missing.json")


def test_clean_labels_do_not_apply_to_other_variants(tmp_path):
    _class_folders(tmp_path / "imagenet-r", [GOLDFISH], n=1)
    out = read_variant("imagenet-r", tmp_path, clean_labels={"img_0_0": []})
    assert [s.labels for s in out] == [(1,)]


# ------------------------------------------------------------------ V2, R, A, Sketch


def test_imagenet_v2_index_folders(tmp_path):
    d = tmp_path / "imagenetv2-matched-frequency-format-val"
    _img(d / "0" / "a.jpeg")
    _img(d / "999" / "b.jpeg")
    _img(d / "10" / "c.jpeg")
    out = read_variant("imagenet-v2", tmp_path)
    assert [(s.key, s.labels) for s in out] == [("0/a.jpeg", (0,)), ("10/c.jpeg", (10,)), ("999/b.jpeg", (999,))]
    for bad in ("1000", "007", "misc"):
        (d / bad).mkdir()
        with pytest.raises(SourceError, match=rf"{bad}: imagenet-v2 class folders are named 0\.\.999"):
            read_variant("imagenet-v2", tmp_path)
        (d / bad).rmdir()


@pytest.mark.parametrize("variant", ["imagenet-r", "imagenet-a"])
def test_imagenet_r_and_a_wnid_folders_in_label_space(tmp_path, variant):
    d = tmp_path / variant
    _class_folders(d, [STINGRAY], n=3, ext=".jpg")
    out = read_variant(variant, tmp_path)
    assert [s.labels for s in out] == [(6,)] * 3
    # tench is in neither 200-class space
    (d / TENCH).mkdir()
    with pytest.raises(SourceError) as err:
        read_variant(variant, tmp_path)
    assert TENCH in _one_line(err) and "label space" in str(err.value)
    (d / TENCH).rmdir()
    (d / NOT_IN_1K).mkdir()
    with pytest.raises(SourceError, match="not an ImageNet-1k class"):
        read_variant(variant, tmp_path)
    (d / NOT_IN_1K).rmdir()
    (d / "extras").mkdir()
    with pytest.raises(SourceError, match="extras: unexpected folder"):
        read_variant(variant, tmp_path)


def test_imagenet_sketch_layouts(tmp_path):
    _class_folders(tmp_path / "imagenet-sketch" / "sketch", [TENCH, GOLDFISH], n=1)
    out = read_variant("imagenet-sketch", tmp_path)
    assert [(s.key, s.labels) for s in out] == [(f"{TENCH}/img_0_0.JPEG", (0,)), (f"{GOLDFISH}/img_1_0.JPEG", (1,))]
    assert read_variant("imagenet-sketch", tmp_path / "imagenet-sketch") == out
    assert read_variant("imagenet-sketch", tmp_path / "imagenet-sketch" / "sketch") == out
    assert variant_dir("imagenet-sketch", tmp_path) == tmp_path / "imagenet-sketch" / "sketch"


# ------------------------------------------------------------------ ObjectNet


def _objectnet(root: Path, with_mappings: bool = True) -> Path:
    base = root / "objectnet-1.0"
    _img(base / "images" / "alarm_clock" / "0a1.png", seed=1)
    _img(base / "images" / "alarm_clock" / "0a0.png", seed=2)
    _img(base / "images" / "banana" / "b.png", seed=3)
    _img(base / "images" / "air_freshener" / "c.png", seed=4)  # no IN-1k counterpart
    if with_mappings:
        m = base / "mappings"
        m.mkdir()
        (m / "objectnet_to_imagenet_1k.json").write_text(
            json.dumps({"Alarm clock": "analog clock; digital clock", "Banana": "banana"})
        )
        (m / "folder_to_objectnet_label.json").write_text(
            json.dumps({"alarm_clock": "Alarm clock", "banana": "Banana", "air_freshener": "Air freshener"})
        )
    return base


def test_objectnet_reads_mapped_folders_only(tmp_path):
    base = _objectnet(tmp_path / "objectnet")
    out = read_variant("objectnet", tmp_path)
    assert [(s.key, s.labels) for s in out] == [
        ("alarm_clock/0a0.png", (409, 530)), ("alarm_clock/0a1.png", (409, 530)), ("banana/b.png", (954,)),
    ]
    assert read_variant("objectnet", base) == out
    # The label space is found from the same source root.
    assert label_space("objectnet", objectnet_mapping=tmp_path) == (409, 530, 954)
    assert all(isinstance(s, SourceImage) and s.path.suffix == ".png" for s in out)


def test_objectnet_errors(tmp_path):
    _objectnet(tmp_path / "objectnet", with_mappings=False)
    with pytest.raises(SourceError) as err:
        read_variant("objectnet", tmp_path)
    assert "mappings" in _one_line(err)
    tmp2 = tmp_path / "b"
    base = _objectnet(tmp2 / "objectnet")
    _img(base / "images" / "spaceship" / "x.png")
    with pytest.raises(SourceError, match="spaceship: not an ObjectNet class folder"):
        read_variant("objectnet", tmp2)
    tmp3 = tmp_path / "c"
    base = _objectnet(tmp3 / "objectnet")
    (base / "mappings" / "folder_to_objectnet_label.json").write_text('["a", "b"]')
    with pytest.raises(SourceError) as err:
        read_variant("objectnet", tmp3)
    assert "folder_to_objectnet_label.json" in _one_line(err)


# ------------------------------------------------------------------ general errors


def test_missing_and_empty_roots(tmp_path):
    with pytest.raises(SourceError, match="source folder not found"):
        read_variant("imagenet-r", tmp_path / "nope")
    with pytest.raises(SourceError) as err:
        read_variant("imagenet-a", tmp_path)
    assert str(tmp_path / "imagenet-a") in _one_line(err)
    (tmp_path / "imagenet-a" / STINGRAY).mkdir(parents=True)
    with pytest.raises(SourceError, match="no imagenet-a images"):
        read_variant("imagenet-a", tmp_path)
    (tmp_path / "imagenet-val").mkdir()
    with pytest.raises(SourceError, match="no images and no class folders"):
        read_variant("imagenet-val", tmp_path)
    with pytest.raises(VlmrobustError, match="unknown variant"):
        read_variant("imagenet-c", tmp_path)


def test_source_image_validation():
    with pytest.raises(ValueError):
        SourceImage("a.png", Path("a.png"), (1, 1))
    with pytest.raises(ValueError):
        SourceImage("a.png", Path("a.png"), (1000,))
    with pytest.raises(ValueError):
        SourceImage("/abs.png", Path("/abs.png"), (1,))
    assert class_by_wnid(STINGRAY).index == 6


def test_cli_checks_a_layout(tmp_path, capsys):
    from vlmrobust.builders.sources import main

    _class_folders(tmp_path / "imagenet-r", [GOLDFISH, STINGRAY], n=2)
    assert main(["imagenet-r", str(tmp_path)]) == 0
    assert "imagenet-r: 4 images, 2 classes, 0 with several valid labels" in capsys.readouterr().out
    assert main(["imagenet-a", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
