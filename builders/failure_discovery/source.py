"""Reading a failure-discovery source: records JSONL files (``discover sample``
output or a ``discover train`` journal) and the images folder they name. Every
image's bytes are checked against the ``image_sha256`` its records carry, so a
dataset row always shows what the answerer and verifier were shown."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders.image_files import checked_image
from vlmrobust.core.discover_records import DiscoveryRecord, iter_records
from vlmrobust.core.errors import SourceError, SpecError

MAX_RECORDS = 2_000_000  # question slots over all files of one build
MAX_FILES = 10_000


@dataclass(frozen=True)
class FailureSpec:
    name: str
    version: str
    seed: int
    records: str  # under --source-root: a .jsonl file, or a folder whose *.jsonl are read
    images: str  # under --source-root: the folder the records' image names are in
    n_options: int = 4

    def __post_init__(self) -> None:
        if not self.name or not self.version:
            raise ValueError("name and version must not be empty")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")
        if isinstance(self.n_options, bool) or not isinstance(self.n_options, int) \
                or not 3 <= self.n_options <= 26:
            raise ValueError(f"n_options must be an integer in 3..26 (the correct answer, the "
                             f"answerer's wrong one and distractors), got {self.n_options!r}")
        for key in ("records", "images"):
            value = getattr(self, key)
            if not isinstance(value, str) or not value or Path(value).is_absolute() \
                    or ".." in Path(value).parts:
                raise ValueError(f"{key} must be a relative path under --source-root")


def parse_spec(raw: Mapping[str, Any], spec_path: Path) -> FailureSpec:
    """The YAML mapping, checked; any problem is one SpecError naming the file."""
    try:
        return FailureSpec(str(raw["name"]), str(raw["version"]), raw.get("seed", 0),
                           raw.get("records", "records"), raw.get("images", "images"),
                           raw.get("n_options", 4))
    except (ValueError, KeyError) as exc:
        raise SpecError(f"{spec_path}: {exc}") from None


@dataclass(frozen=True)
class Source:
    records: tuple[DiscoveryRecord, ...]
    files: tuple[Path, ...]  # the records files, in reading order
    images: Mapping[str, bytes]  # image file name -> its bytes (sha256 checked)


def record_files(root: Path, spec: FailureSpec) -> list[Path]:
    path = root / spec.records
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise SourceError(f"{path}: no records file or folder; fix: put the JSONL of `vlmrobust "
                          f"discover sample` (or a run's journal.jsonl) there, or set records: "
                          f"in the spec")
    files = sorted(p for p in path.iterdir() if p.suffix == ".jsonl" and p.is_file())
    if not files:
        raise SourceError(f"{path}: no *.jsonl records files")
    if len(files) > MAX_FILES:
        raise SourceError(f"{path}: more than {MAX_FILES} records files; merge them")
    return files


def _image(folder: Path, name: str, sha: str, where: str) -> bytes:
    if Path(name).name != name or name in ("", ".", ".."):
        raise SourceError(f"{where}: image {name!r} is not a file name; records name images "
                          "by their file name in the --images folder")
    path = folder / name
    if not path.is_file():
        raise SourceError(f"{where}: image {name!r} is not in {folder}; fix: set images: in "
                          "the spec to the folder `discover sample --images` read")
    data, _ = checked_image(path, "discover image", "use the images the records were made from")
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        raise SourceError(f"{where}: {path} has sha256 {got[:12]}…, the record says {sha[:12]}…; "
                          "fix: use the images the records were made from")
    return data


def read_source(root: Path, spec: FailureSpec, limit: int | None = None) -> Source:
    """Every record of every file (at most ``limit`` per file), and each named
    image once, its bytes checked against the records' sha256."""
    files = record_files(root, spec)
    folder = root / spec.images
    if not folder.is_dir():
        raise SourceError(f"{folder}: no images folder; fix: set images: in the spec")
    records: list[DiscoveryRecord] = []
    images: dict[str, bytes] = {}
    shas: dict[str, tuple[str, Path]] = {}
    for path in files:
        for i, rec in enumerate(iter_records(path)):
            if limit is not None and i >= limit:
                break
            seen = shas.get(rec.image)
            if seen is None:
                where = f"{path} (completion {rec.completion_id}, slot {rec.slot})"
                images[rec.image] = _image(folder, rec.image, rec.image_sha256, where)
                shas[rec.image] = (rec.image_sha256, path)
            elif seen[0] != rec.image_sha256:
                raise SourceError(f"{path}: image {rec.image!r} has sha256 {rec.image_sha256[:12]}…"
                                  f" here and {seen[0][:12]}… in {seen[1]}; records of different "
                                  "image folders cannot share one build")
            records.append(rec)
            if len(records) > MAX_RECORDS:
                raise SourceError(f"{path}: more than {MAX_RECORDS} records in all; build from "
                                  "fewer files or use --limit")
    if not records:
        raise SourceError(f"{root / spec.records}: no records")
    return Source(tuple(records), tuple(files), images)


def fingerprints(files: Sequence[Path], root: Path) -> dict[str, str]:
    from vlmrobust.core.fingerprint import file_sha256

    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}
