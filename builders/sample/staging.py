"""Producing the sample's files: an ``Item`` per file, rendered into a staging
folder (reused by a rerun while its source is unchanged), the table listing
them, and the final swap into ``images/`` and ``sample.csv``."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from tqdm import tqdm

from vlmrobust.builders.sample import COLUMNS
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.files.atomic import write_bytes_atomic, write_text_atomic
from vlmrobust.core.files.swap import recover, swap_in
from vlmrobust.core.fingerprint import file_sha256

#: Bump when rendering changes, so that staged files of older runs are redone.
RENDER_VERSION = "1"


@dataclass(frozen=True)
class Item:
    """One file to produce: where it goes, what it shows and how to make it."""

    key: str
    rel_path: str
    class_index: int
    group: str
    style: str
    origin_package: str
    origin_path: str
    licence: str
    source_file: Path
    make: Callable[[], bytes]


def produce(items: Sequence[Item], staging: Path, progress: bool) -> dict[str, str]:
    """Write every item under ``staging`` (reusing files whose source and
    render version are unchanged) and return key -> sha256 of the output."""
    hashes: dict[str, str] = {}
    for item in tqdm(items, desc="sample images", unit="img", disable=not progress):
        target = staging / item.rel_path
        stamp = target.with_name(target.name + ".src")
        want = json.dumps(
            [RENDER_VERSION, item.style, file_sha256(item.source_file), item.origin_path]
        )
        if not (target.is_file() and stamp.is_file() and stamp.read_text(encoding="utf-8") == want):
            data = item.make()
            with Image.open(io.BytesIO(data)) as im:
                im.verify()
            write_bytes_atomic(target, data)
            write_text_atomic(stamp, want)
        hashes[item.key] = file_sha256(target)
    return hashes


def table_text(items: Sequence[Item], hashes: dict[str, str]) -> str:
    classes = load_imagenet_classes()
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for it in items:
        cls = classes[it.class_index]
        writer.writerow(
            [
                it.key,
                it.rel_path,
                it.class_index,
                cls.wnid,
                cls.name,
                it.group,
                it.style,
                it.origin_package,
                it.origin_path,
                it.licence,
                hashes[it.key],
            ]
        )
    return buf.getvalue()


def install(staging: Path, out: Path, table: str) -> None:
    """Swap the staged images in for ``out/images`` and write the table."""
    new_images = staging / "images"
    for stamp in new_images.rglob("*.src"):
        stamp.unlink()
    images = out / "images"
    recover(images)  # a killed earlier install: the previous images go back first
    swap_in(new_images, images)  # one exchange; see vlmrobust.core.files.swap
    write_text_atomic(out / "sample.csv", table)
    shutil.rmtree(staging, ignore_errors=True)
