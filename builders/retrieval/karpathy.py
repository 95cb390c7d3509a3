"""Readers for the image-caption retrieval sets in Karpathy's published layout
(Karpathy & Fei-Fei 2015, "caption_datasets.zip"), the splits CLIP_benchmark
and the CLIP papers report zero-shot retrieval on.

``read_karpathy(source, root) -> KarpathySplit`` returns the ``test`` split's
images (in the split file's order) with their captions. ``root`` is a source
root holding the set under one of :data:`SOURCE_DIRS` (first match wins), or
the set's own folder.

Layouts:

- ``flickr30k``: ``dataset_flickr30k.json`` and the Flickr30K images as their
  authors release them, ``flickr30k-images/<filename>`` (e.g.
  ``flickr30k-images/1000092795.jpg``); the test split is 1,000 images.
- ``mscoco`` (the "5k test" split): ``dataset_coco.json`` and the COCO 2014
  images under their ``filepath`` folder, ``val2014/<filename>`` (e.g.
  ``val2014/COCO_val2014_000000391895.jpg``; ``train2014/`` is read where an
  entry names it); the test split is 5,000 images, all from val2014.

The split files hold ``{"images": [{"split", "filename", "filepath" (COCO
only), "imgid", "cocoid" (COCO only), "sentences": [{"raw", ...}, ...]},
...], "dataset": "flickr30k"|"coco"}``. Only ``split == "test"`` entries are
read; every caption of an image is kept (COCO's 5k test has 25,010: a few
images have six or seven), as CLIP_benchmark's Karpathy-test files do.
A caption is its ``raw`` text with runs of white space made one space and
the ends stripped (COCO's raw captions carry trailing spaces and newlines).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import parse_json_bounded, read_bytes_bounded


@dataclass(frozen=True)
class Layout:
    """What a retrieval source looks like on disk."""

    source: str
    split_file: str  # Karpathy's JSON beside the images
    dataset_key: str  # its "dataset" value
    image_dir: str  # where the images are when an entry has no filepath
    id_prefix: str
    example: str  # one line naming the expected layout, for errors

    def image_path(self, folder: Path, entry: Mapping[str, Any]) -> Path:
        sub = entry.get("filepath") or self.image_dir
        return folder / str(sub) / str(entry["filename"])


LAYOUTS = {
    "flickr30k": Layout("flickr30k", "dataset_flickr30k.json", "flickr30k", "flickr30k-images",
                        "flickr30k", "dataset_flickr30k.json + flickr30k-images/<filename>.jpg"),
    "mscoco": Layout("mscoco", "dataset_coco.json", "coco", "val2014", "mscoco",
                     "dataset_coco.json + val2014/COCO_val2014_<id>.jpg"),
}
#: folder names searched under a source root, per source
SOURCE_DIRS = {"flickr30k": ("flickr30k", "Flickr30k", "flickr30k_karpathy"),
               "mscoco": ("mscoco", "coco", "COCO", "coco2014")}
# Karpathy's dataset_coco.json is ~140 MB (123,287 images, ~17M JSON values).
MAX_SPLIT_FILE_BYTES = 512 * 1024 * 1024
MAX_SPLIT_FILE_VALUES = 40_000_000
MAX_CAPTIONS = 32  # per image; Karpathy's files have at most 7
MAX_CAPTION_CHARS = 2_000
# a file name or folder of the split file: no separators, no parent references
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")


@dataclass(frozen=True)
class KarpathyImage:
    """One test image: ``key`` unique over the dataset directory (``<source>-<id>``)."""

    key: str
    path: Path
    filename: str
    source_id: int
    captions: tuple[str, ...]


@dataclass(frozen=True)
class KarpathySplit:
    source: str
    folder: Path
    split_file: Path
    images: tuple[KarpathyImage, ...]

    @property
    def n_captions(self) -> int:
        return sum(len(i.captions) for i in self.images)


def source_dir(source: str, root: Path | str) -> Path:
    """The folder of ``source`` under ``root`` (one of :data:`SOURCE_DIRS`), or
    ``root`` itself when its split file is there; else a one-line refusal that
    names the expected layout."""
    layout = _layout(source)
    root = Path(root)
    for name in (*SOURCE_DIRS[source], ""):
        d = root / name if name else root
        if (d / layout.split_file).is_file():
            return d
    raise SourceError(
        f"{root}: no {source} layout found (looked for {layout.split_file} in "
        f"{', '.join(SOURCE_DIRS[source])}/ and in the root); expected Karpathy's split file "
        f"beside the images: {layout.example} (see builders/retrieval/karpathy.py)")


def _layout(source: str) -> Layout:
    if source not in LAYOUTS:
        raise SourceError(f"unknown retrieval source {source!r}; known: {', '.join(LAYOUTS)}")
    return LAYOUTS[source]


def normalise_caption(raw: str) -> str:
    """Runs of white space -> one space, ends stripped.

    >>> normalise_caption("A man riding a wave  on top of a surfboard.\\n")
    'A man riding a wave on top of a surfboard.'
    """
    return " ".join(raw.split())


def _bad(split_file: Path, where: str, problem: str, layout: Layout) -> SourceError:
    return SourceError(f"{split_file}: {where}: {problem}; expected Karpathy's layout "
                       f"({{\"images\": [{{\"split\", \"filename\", \"sentences\": [{{\"raw\"}}]}}]}}: "
                       f"{layout.example}, see builders/retrieval/karpathy.py)")


def _entry(split_file: Path, i: int, e: Any, layout: Layout) -> tuple[str, str | None, list[str], int]:
    """(filename, filepath, captions, source id) of images[i], checked."""
    where = f"images[{i}]"
    if not isinstance(e, Mapping):
        raise _bad(split_file, where, f"is a {type(e).__name__}, not an object", layout)
    filename, filepath, sentences = e.get("filename"), e.get("filepath"), e.get("sentences")
    if not isinstance(filename, str) or not _SAFE_NAME.fullmatch(filename) or filename in (".", ".."):
        raise _bad(split_file, f"{where}.filename", f"{filename!r} is not a plain file name",
                   layout)
    if filepath is not None and (not isinstance(filepath, str) or not _SAFE_NAME.fullmatch(filepath)
                                 or filepath in (".", "..")):
        raise _bad(split_file, f"{where}.filepath", f"{filepath!r} is not a plain folder name",
                   layout)
    if not isinstance(sentences, list) or not sentences:
        raise _bad(split_file, f"{where}.sentences", "missing or empty", layout)
    if len(sentences) > MAX_CAPTIONS:
        raise _bad(split_file, f"{where}.sentences", f"{len(sentences)} captions, more than "
                   f"{MAX_CAPTIONS}", layout)
    captions = []
    for j, s in enumerate(sentences):
        raw = s.get("raw") if isinstance(s, Mapping) else None
        if not isinstance(raw, str) or not normalise_caption(raw) or len(raw) > MAX_CAPTION_CHARS:
            raise _bad(split_file, f"{where}.sentences[{j}].raw",
                       f"expected caption text of 1-{MAX_CAPTION_CHARS} characters, got "
                       f"{str(raw)[:40]!r}", layout)
        captions.append(normalise_caption(raw))
    raw_id = e.get("cocoid", e.get("imgid")) if layout.source == "mscoco" else None
    if layout.source == "flickr30k":  # Flickr30K's image id is its file stem
        stem = filename.rsplit(".", 1)[0]
        raw_id = int(stem) if stem.isdigit() else e.get("imgid")
    if isinstance(raw_id, bool) or not isinstance(raw_id, int) or raw_id < 0:
        raise _bad(split_file, where, f"no image id (cocoid/imgid), got {raw_id!r}", layout)
    return filename, filepath, captions, raw_id


def read_karpathy(source: str, root: Path | str, split: str = "test",
                  limit: int | None = None) -> KarpathySplit:
    """The ``split`` images of ``source`` under ``root`` (see the module doc), in
    the split file's order; ``limit`` keeps the first ones. Every image file
    must exist; a wrong layout is refused in one line naming the expected one."""
    layout = _layout(source)
    folder = source_dir(source, root)
    split_file = folder / layout.split_file
    data = parse_json_bounded(
        read_bytes_bounded(split_file, MAX_SPLIT_FILE_BYTES, "Karpathy split file", SourceError),
        str(split_file), SourceError, max_depth=8, max_nodes=MAX_SPLIT_FILE_VALUES)
    if not isinstance(data, Mapping) or not isinstance(data.get("images"), list):
        raise _bad(split_file, "(top level)", "no \"images\" list", layout)
    named = data.get("dataset")
    if named is not None and named != layout.dataset_key:
        raise SourceError(f"{split_file}: says \"dataset\": {named!r}, not {layout.dataset_key!r}; "
                          f"put {source}'s own split file there ({layout.example})")
    images: list[KarpathyImage] = []
    seen: dict[str, int] = {}
    for i, e in enumerate(data["images"]):
        if not isinstance(e, Mapping) or e.get("split") != split:
            if isinstance(e, Mapping) and not isinstance(e.get("split"), str):
                raise _bad(split_file, f"images[{i}].split", f"{e.get('split')!r} is not a split "
                           "name (train/val/test/restval)", layout)
            if not isinstance(e, Mapping):
                raise _bad(split_file, f"images[{i}]", f"is a {type(e).__name__}, not an object",
                           layout)
            continue
        filename, filepath, captions, source_id = _entry(split_file, i, e, layout)
        key = f"{layout.id_prefix}-{source_id}"
        if key in seen:
            raise _bad(split_file, f"images[{i}]", f"image id {source_id} repeats images"
                       f"[{seen[key]}]", layout)
        seen[key] = i
        path = layout.image_path(folder, {"filename": filename, "filepath": filepath})
        if not path.is_file():
            raise SourceError(f"{path}: missing image of {split_file.name} images[{i}]; put the "
                              f"{source} images where the layout expects them ({layout.example})")
        images.append(KarpathyImage(key, path, filename, source_id, tuple(captions)))
        if limit is not None and len(images) >= limit:
            break
    if not images:
        raise SourceError(f"{split_file}: no image has \"split\": {split!r}; is this Karpathy's "
                          f"{layout.split_file}?")
    return KarpathySplit(source, folder, split_file, tuple(images))


def caption_counts(images: Sequence[KarpathyImage]) -> dict[int, int]:
    """How many images have each number of captions (for the card).

    >>> caption_counts([KarpathyImage("a", Path("a"), "a", 1, ("x",) * 5),
    ...                 KarpathyImage("b", Path("b"), "b", 2, ("y",) * 6)])
    {5: 1, 6: 1}
    """
    out: dict[int, int] = {}
    for im in images:
        out[len(im.captions)] = out.get(len(im.captions), 0) + 1
    return dict(sorted(out.items()))
