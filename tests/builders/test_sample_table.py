"""Reading a sample table: the round trip, bad rows named by file and row, and
files that changed or went missing after the table was written."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pytest
from PIL import Image

from tests.fixtures.sample import PHOTO_ROWS
from vlmrobust.builders.sample import COLUMNS, SAMPLE_CSV, SampleImage, read_sample_table
from vlmrobust.builders.sample.render import encode_png
from vlmrobust.core.errors import SourceError


def _write_table(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "sample.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _good_row(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "images" / "photo").mkdir(parents=True)
    data = encode_png(Image.new("RGB", (8, 8), (10, 20, 30)))
    (tmp_path / "images" / "photo" / "x.png").write_bytes(data)
    return {
        "key": "photo-test-x",
        "path": "images/photo/x.png",
        "class_index": "281",
        "wnid": "n02123045",
        "class_name": "tabby cat",
        "group": "photo",
        "style": "photo",
        "origin_package": "test",
        "origin_path": "x.png",
        "licence": "CC0-1.0",
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def test_read_table_round_trip(tmp_path: Path) -> None:
    row = _good_row(tmp_path)
    (image,) = read_sample_table(_write_table(tmp_path, [row]))
    assert image == SampleImage(
        key="photo-test-x",
        path=tmp_path / "images/photo/x.png",
        class_index=281,
        group="photo",
        style="photo",
        origin_package="test",
        origin_path="x.png",
        licence="CC0-1.0",
        wnid="n02123045",
        class_name="tabby cat",
        sha256=row["sha256"],
    )
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("class_index", "1000", r"row 2: .*class index 1000"),
        ("class_index", "cat", r"row 2: invalid literal"),
        ("group", "drawing", r"row 2: .*group 'drawing'"),
        ("key", "photo x", r"row 2: bad sample key"),
        ("path", "../escape.png", r"row 2: path '../escape.png' must be relative"),
        ("sha256", "abc", r"row 2: .*sha256"),
        ("licence", " ", r"row 2: .*empty licence"),
    ],
)
def test_bad_rows_name_file_and_row(tmp_path: Path, field: str, value: str, message: str) -> None:
    row = _good_row(tmp_path) | {field: value}
    path = _write_table(tmp_path, [row])
    with pytest.raises(SourceError, match=message) as err:
        read_sample_table(path)
    assert str(path) in str(err.value)


def test_duplicate_keys_and_bad_header_are_refused(tmp_path: Path) -> None:
    row = _good_row(tmp_path)
    with pytest.raises(SourceError, match="row 3: duplicate key"):
        read_sample_table(_write_table(tmp_path, [row, row]))
    bad = tmp_path / "bad.csv"
    bad.write_text("key,path\nphoto-a-b,x.png\n", encoding="utf-8")
    with pytest.raises(SourceError, match="header must be"):
        read_sample_table(bad)
    with pytest.raises(SourceError, match="cannot read the sample table"):
        read_sample_table(tmp_path / "missing.csv")


def test_changed_or_missing_file_is_detected(tmp_path: Path) -> None:
    (image,) = read_sample_table(_write_table(tmp_path, [_good_row(tmp_path)]))
    image.path.write_bytes(image.path.read_bytes() + b"\0")
    with pytest.raises(SourceError, match="does not match its sha256"):
        image.read_bytes()
    image.path.unlink()
    with pytest.raises(SourceError, match="is missing"):
        image.read_bytes()


def test_copy_of_the_sample_still_loads(tmp_path: Path) -> None:
    # the table is relocatable: paths resolve against the table's own folder
    shutil.copy(SAMPLE_CSV, tmp_path / "sample.csv")
    first = PHOTO_ROWS[0]
    target = tmp_path / first.path.relative_to(SAMPLE_CSV.parent)
    target.parent.mkdir(parents=True)
    shutil.copy(first.path, target)
    copy = read_sample_table(tmp_path / "sample.csv")
    assert copy[0].read_bytes() == first.read_bytes()
