"""The photo table of the sample (builders/sample/data/photos.yaml): the shipped
file reads back, and a malformed one is refused in one line naming the file,
the row and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlmrobust.builders.sample.photo_sources import PHOTOS, PHOTOS_YAML, PhotoSource, load_photos
from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import MAX_META_BYTES

HEADER = """\
licences:
  cc0: "CC0-1.0 (test)"
  navy: Public domain
photos:
"""
CHELSEA = (
    "  - {name: chelsea, package: scikit-image, path: data/chelsea.png, class_index: 281,"
    " label_word: tabby, licence: cc0}\n"
)
LIGHTHOUSE = (
    "  - name: lighthouse\n    package: debian:opencv-doc\n    path: opencv4/html/04.jpg\n"
    "    class_index: 437\n    label_word: beacon\n    licence: navy\n    crop: [0, 0, 512, 466]\n"
)


def _table(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "photos.yaml"
    path.write_text(header + "".join(rows), encoding="utf-8")
    return path


def _refused(path: Path, match: str) -> str:
    with pytest.raises(SourceError, match=match) as info:
        load_photos(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message


def test_shipped_table_reads_back() -> None:
    assert load_photos(PHOTOS_YAML) == PHOTOS
    assert len({p.key for p in PHOTOS}) == len(PHOTOS) == 101
    assert len({(p.package, p.path, p.crop) for p in PHOTOS}) == len(PHOTOS)
    # Licences are resolved to their texts, never left as the short names.
    assert all(" " in p.licence for p in PHOTOS)


def test_rows_written_by_hand(tmp_path: Path) -> None:
    photos = load_photos(_table(tmp_path, CHELSEA, LIGHTHOUSE))
    assert photos == (
        PhotoSource("chelsea", "scikit-image", "data/chelsea.png", 281, "tabby", "CC0-1.0 (test)"),
        PhotoSource("lighthouse", "debian:opencv-doc", "opencv4/html/04.jpg", 437, "beacon",
                    "Public domain", crop=(0, 0, 512, 466)),
    )
    assert photos[1].key == "photo-opencv-lighthouse"


def test_unknown_key_names_file_and_row(tmp_path: Path) -> None:
    bad = CHELSEA.replace("chelsea,", "cat,").replace("label_word:", "label:")
    message = _refused(_table(tmp_path, LIGHTHOUSE, bad), r"photos row 2 \(cat\): unknown key label")
    assert "use only name, package" in message


def test_missing_field_names_file_and_row(tmp_path: Path) -> None:
    bad = CHELSEA.replace(" label_word: tabby,", "")
    _refused(_table(tmp_path, bad), r"photos row 1 \(chelsea\): missing label_word; add it")


@pytest.mark.parametrize(
    ("index", "match"),
    [("1000", "outside 0..999"), ("-1", "outside 0..999"), ('"281"', "must be an integer"),
     ("true", "must be an integer"), ("2.5", "must be an integer")],
)
def test_bad_class_index_names_file_and_row(tmp_path: Path, index: str, match: str) -> None:
    bad = CHELSEA.replace("class_index: 281", f"class_index: {index}")
    message = _refused(_table(tmp_path, LIGHTHOUSE, bad), r"photos row 2 \(chelsea\): .*" + match)
    assert message.endswith("fix the row")


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [("licence: cc0", "licence: cc-by", "licence 'cc-by' is not in `licences`; use one of cc0, navy"),
     ("data/chelsea.png", "../../etc/passwd", "must be relative"),
     ("data/chelsea.png", "/etc/passwd", "must be relative"),
     ("scikit-image", "pillow", "unknown package 'pillow'"),
     ("name: chelsea", "name: chel sea", "bad photo name"),
     ("label_word: tabby", "label_word: ''", "label_word must be"),
     ("licence: cc0}", "licence: cc0, crop: [0, 0, 10]}", "crop of chelsea must be 4 integers"),
     ("licence: cc0}", "licence: cc0, crop: [5, 0, 5, 10]}", "bad crop")],
)
def test_bad_values_name_file_and_row(tmp_path: Path, old: str, new: str, match: str) -> None:
    _refused(_table(tmp_path, CHELSEA.replace(old, new)), r"photos row 1 .*" + match)


def test_duplicate_paths_and_keys_are_refused(tmp_path: Path) -> None:
    same_file = CHELSEA.replace("name: chelsea", "name: cat")
    _refused(_table(tmp_path, CHELSEA, LIGHTHOUSE, same_file),
             r"photos row 3 \(cat\): scikit-image data/chelsea.png is already row 1; list each file once")
    same_key = CHELSEA.replace("data/chelsea.png", "data/cat.png")
    _refused(_table(tmp_path, CHELSEA, same_key),
             r"photos row 2 \(chelsea\): key photo-skimage-chelsea is already row 1; rename one")
    # Another panel of the same file is another photo.
    other_panel = LIGHTHOUSE.replace("lighthouse", "lighthouse-2").replace("[0, 0, 512", "[512, 0, 1024")
    assert len(load_photos(_table(tmp_path, LIGHTHOUSE, other_panel))) == 2


def test_bad_file_shapes_are_refused(tmp_path: Path) -> None:
    _refused(_table(tmp_path, "  - just a string\n"), r"photos row 1: expected a mapping")
    _refused(_table(tmp_path, header="photos:\n  - {}\n"), "expected exactly the top-level keys")
    _refused(_table(tmp_path, header=HEADER + "  []\n"), "must be a non-empty list")
    _refused(_table(tmp_path, header=HEADER.replace("cc0: ", "cc0: [x]  #")), "must map short names")
    _refused(_table(tmp_path, CHELSEA, "  - {name: [unclosed\n"), "not valid YAML")
    big = _table(tmp_path, CHELSEA, "# " + "x" * MAX_META_BYTES + "\n")
    _refused(big, f"more than the {MAX_META_BYTES} allowed")
