"""The photo table of the embedded sample: the record type and its reader. The
rows, their licences and the curation notes (what was left out and why) live in
``data/photos.yaml``; this module holds what YAML cannot say (the key scheme and
the checks). Used only by ``collect.py`` and ``photos.py``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any

from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import MAX_META_BYTES, read_yaml_bounded

PHOTOS_YAML = Path(__file__).resolve().parent / "data" / "photos.yaml"
#: Short source names used in sample keys ("photo-skimage-chelsea").
KEY_PREFIX = {
    "scikit-image": "skimage",
    "scikit-learn": "sklearn",
    "matplotlib": "matplotlib",
    "debian:opencv-doc": "opencv",
    "debian:tuxpaint-stamps-default": "tuxpaint",
}
_TOP_KEYS = ("licences", "photos")


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise ValueError(f"{what} must be a one-line non-empty text, not {value!r}")
    return value


@dataclass(frozen=True)
class PhotoSource:
    """One photo: ``package`` is the distribution that ships it (a PyPI name,
    or ``debian:<package>``), ``path`` the file inside that package's root
    (see ``packages.package_root``), ``crop`` an optional (left, top, right,
    bottom) box for files that hold several panels."""

    name: str
    package: str
    path: str
    class_index: int
    label_word: str
    licence: str
    crop: tuple[int, int, int, int] | None = None

    def __post_init__(self) -> None:
        name = _text(self.name, "name")
        if not all(c.isalnum() or c == "-" for c in name):
            raise ValueError(f"bad photo name {name!r}: letters, digits and '-'")
        if isinstance(self.class_index, bool) or not isinstance(self.class_index, int):
            raise ValueError(f"class index of {name} must be an integer, not {self.class_index!r}")
        if not 0 <= self.class_index < 1000:
            raise ValueError(f"class index {self.class_index} of {name} outside 0..999")
        if self.package not in KEY_PREFIX:
            raise ValueError(f"unknown package {self.package!r}; add it to KEY_PREFIX")
        path = PurePosixPath(_text(self.path, "path"))
        # The path is joined to the package root: it must stay inside it.
        if path.is_absolute() or ".." in path.parts or "\\" in self.path:
            raise ValueError(f"path {self.path!r} of {name} must be relative, '/'-separated, no '..'")
        _text(self.label_word, "label_word")
        _text(self.licence, "licence")
        if self.crop is not None:
            if (
                not isinstance(self.crop, tuple)
                or len(self.crop) != 4
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in self.crop)
            ):
                raise ValueError(f"crop of {name} must be 4 integers [left, top, right, bottom]")
            left, top, right, bottom = self.crop
            if not (0 <= left < right and 0 <= top < bottom):
                raise ValueError(f"bad crop {self.crop} for {name}")

    @property
    def key(self) -> str:
        return f"photo-{KEY_PREFIX[self.package]}-{self.name}"


_FIELDS = tuple(f.name for f in fields(PhotoSource))
_REQUIRED = tuple(f for f in _FIELDS if f != "crop")


def _row(raw: object, licences: Mapping[str, str], where: str) -> PhotoSource:
    if not isinstance(raw, Mapping):
        raise SourceError(f"{where}: expected a mapping of {', '.join(_REQUIRED)}; fix the row")
    unknown = sorted(str(k) for k in raw if k not in _FIELDS)
    if unknown:
        raise SourceError(f"{where}: unknown key {', '.join(unknown)}; use only {', '.join(_FIELDS)}")
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise SourceError(f"{where}: missing {', '.join(missing)}; add it to the row")
    values: dict[str, Any] = dict(raw)
    licence = values["licence"]
    if not isinstance(licence, str) or licence not in licences:
        raise SourceError(
            f"{where}: licence {licence!r} is not in `licences`; use one of {', '.join(licences)}"
        )
    values["licence"] = licences[licence]
    crop = values.get("crop")
    if isinstance(crop, list):
        values["crop"] = tuple(crop)
    try:
        return PhotoSource(**values)
    except ValueError as exc:
        raise SourceError(f"{where}: {exc}; fix the row") from None


def load_photos(path: Path = PHOTOS_YAML) -> tuple[PhotoSource, ...]:
    """The photo rows of ``path`` in file order; a malformed row, a licence that
    is not declared, or a file/key listed twice is one SourceError line."""
    doc = read_yaml_bounded(path, MAX_META_BYTES, "photo table", SourceError)
    if not isinstance(doc, Mapping) or set(doc) != set(_TOP_KEYS):
        raise SourceError(f"{path}: expected exactly the top-level keys {', '.join(_TOP_KEYS)}")
    licences, rows = doc["licences"], doc["photos"]
    if not isinstance(licences, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in licences.items()
    ):
        raise SourceError(f"{path}: `licences` must map short names to licence texts")
    if not isinstance(rows, list) or not rows:
        raise SourceError(f"{path}: `photos` must be a non-empty list of rows")
    photos: list[PhotoSource] = []
    seen_file: dict[tuple[str, str, object], int] = {}
    seen_key: dict[str, int] = {}
    for number, raw in enumerate(rows, start=1):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        where = f"{path}: photos row {number}" + (f" ({name})" if isinstance(name, str) else "")
        photo = _row(raw, licences, where)
        file = (photo.package, photo.path, photo.crop)
        if file in seen_file:
            raise SourceError(
                f"{where}: {photo.package} {photo.path} is already row {seen_file[file]}; "
                "list each file once"
            )
        if photo.key in seen_key:
            raise SourceError(
                f"{where}: key {photo.key} is already row {seen_key[photo.key]}; rename one"
            )
        seen_file[file], seen_key[photo.key] = number, number
        photos.append(photo)
    return tuple(photos)


PHOTOS: tuple[PhotoSource, ...] = load_photos()
