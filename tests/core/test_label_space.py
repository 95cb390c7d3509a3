"""The label-space contract: stored once per config, checked on read, covered
by the fingerprint; the kind a manifest declares."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.kinds import CLASSIFICATION, MCQ, OOD, dataset_kind
from vlmrobust.core.label_space import ClassEntry, LabelSpace, read_label_space
from vlmrobust.core.writer import BuildInfo, write_dataset


def _png(shade: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (shade, shade, shade)).save(buf, format="PNG")
    return buf.getvalue()


def _features(ood: bool = False) -> Any:
    from datasets import Features, Value
    from datasets import Image as HFImage

    cols = {"id": Value("string"), "image": HFImage(), "label": Value("int32")}
    if ood:
        cols["is_ood"] = Value("bool")
    return Features(cols)


SPACE = LabelSpace("toy", (ClassEntry("cat", ("kitty",), "n02123045", (281,)),
                           ClassEntry("dog", (), None, (207, 208)), ClassEntry("fox")))


def _rows(n: int = 3) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "image": {"bytes": _png(i * 40), "path": None}, "label": i % 3}
            for i in range(n)]


def _build(out: Path, space: LabelSpace = SPACE, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return write_dataset(out, configs={"val": rows or _rows()}, features=_features(), card="toy",
                         info=BuildInfo("toy", "1", 0), kind=CLASSIFICATION, label_spaces={"val": space})


def test_label_space_is_stored_once_and_read_back(tmp_path: Path) -> None:
    manifest = _build(tmp_path / "ds")
    assert dataset_kind(manifest) == CLASSIFICATION
    rec = manifest["label_spaces"]["val"]
    assert rec["n_classes"] == 3 and rec["file"] == "label_spaces/val.json"
    assert read_label_space(tmp_path / "ds", "val") == SPACE
    # rows carry the label only: no class name is repeated per row
    import pyarrow.parquet as pq

    table = pq.read_table(next((tmp_path / "ds" / "data" / "val").glob("*.parquet")))
    assert table.column_names == ["id", "image", "label"]


def test_load_dataset_gives_labels_that_index_the_label_space(tmp_path: Path) -> None:
    from datasets import load_dataset

    _build(tmp_path / "ds")
    ds = load_dataset(str(tmp_path / "ds"), "val", split="test", cache_dir=str(tmp_path / "hf"))
    names = read_label_space(tmp_path / "ds", "val").names
    assert [names[r["label"]] for r in ds] == ["cat", "dog", "fox"]


def test_fingerprint_covers_the_label_space(tmp_path: Path) -> None:
    a = _build(tmp_path / "a")["fingerprint"]
    b = _build(tmp_path / "b")["fingerprint"]
    renamed = LabelSpace("toy", (ClassEntry("cat"), ClassEntry("dog"), ClassEntry("wolf")))
    c = _build(tmp_path / "c", renamed)["fingerprint"]
    assert a == b != c


def test_a_changed_label_space_file_is_refused(tmp_path: Path) -> None:
    _build(tmp_path / "ds")
    path = tmp_path / "ds" / "label_spaces" / "val.json"
    doc = json.loads(path.read_text())
    doc["classes"][2]["name"] = "wolf"
    path.write_text(json.dumps(doc))
    with pytest.raises(VlmrobustError, match="label space changed after the build"):
        read_label_space(tmp_path / "ds", "val")
    path.unlink()
    with pytest.raises(VlmrobustError, match="is missing"):
        read_label_space(tmp_path / "ds", "val")


def test_a_label_outside_the_space_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    rows = _rows()
    rows[1]["label"] = 3
    with pytest.raises(ValueError, match=r"row 1: label 3 is not an index in 0..2"):
        _build(tmp_path / "ds", rows=rows)
    assert not (tmp_path / "ds").exists()


def test_ood_rows_take_label_minus_one_and_only_they() -> None:
    rows = [{"id": "i", "image": {"bytes": _png(1), "path": None}, "label": 0, "is_ood": False},
            {"id": "o", "image": {"bytes": _png(2), "path": None}, "label": -1, "is_ood": True}]
    info = BuildInfo("toy", "1", 0)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        m = write_dataset(Path(tmp) / "ok", configs={"c": rows}, features=_features(True), card="x",
                          info=info, kind=OOD, label_spaces={"c": SPACE})
        assert m["kind"] == OOD and m["configs"] == {"c": 2}
        rows[0]["label"] = -1
        with pytest.raises(ValueError, match="row 0: label -1"):
            write_dataset(Path(tmp) / "bad", configs={"c": rows}, features=_features(True),
                          card="x", info=info, kind=OOD, label_spaces={"c": SPACE})


def test_kind_and_label_space_are_checked_up_front(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a label space"):
        write_dataset(tmp_path / "x", configs={"val": _rows()}, features=_features(), card="x",
                      info=BuildInfo("toy", "1", 0), kind=CLASSIFICATION)
    with pytest.raises(VlmrobustError, match="unknown question kind"):
        write_dataset(tmp_path / "x", configs={"val": _rows()}, features=_features(), card="x",
                      info=BuildInfo("toy", "1", 0), kind="classify")
    assert dataset_kind({}) == MCQ


@pytest.mark.parametrize("classes, match", [
    ((ClassEntry("cat"), ClassEntry("Cat ")), "share the name"),
    ((ClassEntry("cat"),), "has 1 classes"),
])
def test_label_space_refuses_ambiguous_or_tiny_spaces(classes: tuple[ClassEntry, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LabelSpace("bad", classes)


def test_group_rule_round_trips_and_is_checked() -> None:
    ls = LabelSpace("cue", SPACE.classes, "mean-prob")
    assert LabelSpace.from_json_bytes(ls.to_json_bytes(), "x").group_rule == "mean-prob"
    assert ls.sha256() != SPACE.sha256()
    with pytest.raises(ValueError, match="group_rule"):
        LabelSpace("cue", SPACE.classes, "mean")


def test_class_entry_checks() -> None:
    with pytest.raises(ValueError, match="not n########"):
        ClassEntry("cat", wnid="cat")
    with pytest.raises(ValueError, match=r"not in 0\.\.999"):
        ClassEntry("cat", imagenet_ids=(1000,))
    with pytest.raises(ValueError, match="control characters"):
        ClassEntry("ca\x00t")
