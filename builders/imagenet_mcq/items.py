"""Source images as question items: label cleaning, seeded selection, image
bytes kept as the source has them."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.image_files import MAX_IMAGE_BYTES
from vlmrobust.builders.imagenet_mcq.seeding import derive_seed
from vlmrobust.core.errors import SourceError
from vlmrobust.core.files.bounded import read_bytes_bounded

KEEP_FORMATS = ("JPEG", "PNG")


@dataclass(frozen=True)
class Item:
    """One image of one variant: ``label`` is the answer, ``valid`` every label
    that must never be a distractor (ReaL / clean-label multi-labels)."""

    variant: str
    key: str
    path: Path
    label: int
    valid: frozenset[int]

    def __post_init__(self) -> None:
        if self.label not in self.valid:
            raise ValueError(f"{self.key}: answer {self.label} not among valid labels")
        if not self.key:
            raise ValueError("item key must not be empty")


def clean_items(
    variant: str, sources: Iterable[tuple[str, Path, Sequence[int]]], space: Sequence[int]
) -> tuple[list[Item], int]:
    """Items from ``(key, path, labels)``; labels[0] is the answer. Images with
    no valid label are dropped (returns the number dropped). An answer outside
    the label space is a source error."""
    allowed = frozenset(space)
    items: list[Item] = []
    dropped = 0
    for key, path, labels in sources:
        if not labels:
            dropped += 1
            continue
        if labels[0] not in allowed:
            raise SourceError(
                f"{path}: label {labels[0]} of {key!r} is not in the {variant} label space; "
                "fix the label table or the variant name"
            )
        items.append(Item(variant, key, Path(path), int(labels[0]), frozenset(int(x) for x in labels)))
    return items, dropped


def select_items(items: Sequence[Item], n: int, seed: int) -> list[Item]:
    """A seeded subset of ``n`` items (all if fewer), returned in key order.

    Ranking by sha256(seed, variant, key) makes the choice of one image
    independent of the others: adding an image only adds it or displaces one.
    """
    ranked = sorted(items, key=lambda it: (derive_seed(seed, it.variant, it.key, "select"), it.key))
    chosen = ranked[:n]
    return sorted(chosen, key=lambda it: it.key)


def image_bytes(path: Path) -> bytes:
    """The file's bytes if it is a JPEG or PNG that decodes (no re-encoding, so
    fingerprints are stable), else a PNG with fixed parameters."""
    from PIL import Image

    data = read_bytes_bounded(path, MAX_IMAGE_BYTES, "image", SourceError)
    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format
            im.load()
            if fmt in KEEP_FORMATS:
                return data
            buf = io.BytesIO()
            im.convert("RGB").save(buf, format="PNG", optimize=False, compress_level=6)
            return buf.getvalue()
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise SourceError(
            f"{path}: cannot decode image ({exc}); replace or remove the file and rebuild"
        ) from None


def stored_bytes(path: Path) -> bytes:
    """What :func:`image_bytes` returns, for a file that :func:`check_images`
    has already decoded: JPEG and PNG are recognised from the header and kept
    as they are (no decode), so a build decodes each image once however many
    strategies write it; other formats are converted as before."""
    from PIL import Image

    data = read_bytes_bounded(path, MAX_IMAGE_BYTES, "image", SourceError)
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.format in KEEP_FORMATS:
                return data
    except (OSError, ValueError, Image.DecompressionBombError):
        pass  # image_bytes raises the one-line error
    return image_bytes(path)


def check_images(items: Sequence[Item], progress: bool, desc: str) -> str:
    """Decode every item's image (a clear error names the first bad file) and
    return the variant's source fingerprint: sha256 over (key, labels, bytes)."""
    from tqdm import tqdm

    h = hashlib.sha256()
    for it in tqdm(items, desc=desc, unit="img", disable=not progress):
        data = image_bytes(it.path)
        head = f"{it.key}\0{it.label}\0{','.join(map(str, sorted(it.valid)))}\0"
        h.update(head.encode("utf-8") + hashlib.sha256(data).digest())
    return h.hexdigest()
