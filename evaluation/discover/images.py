"""The images a questioner asks about: the PNG / JPEG / WebP files of one
folder (not its subfolders), in name order. An image's reference in records is
its file name; its sha256 travels with it, so a record names exactly the bytes
it was about."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import MIB, image_decode_errors, read_bytes_bounded

SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
MAX_IMAGE_BYTES = 64 * MIB
MAX_IMAGES = 1_000_000


@dataclass(frozen=True)
class ImageRef:
    name: str
    path: Path

    def load(self) -> tuple[Any, str]:
        """(PIL RGB image, sha256 of the file's bytes)."""
        from PIL import Image

        data = read_bytes_bounded(self.path, MAX_IMAGE_BYTES, "image")
        try:
            with Image.open(io.BytesIO(data)) as im:
                rgb = im.convert("RGB")
        except image_decode_errors() as exc:
            first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise VlmrobustError(f"{self.path}: not a readable image ({first}); remove it or "
                                 "replace it with a PNG/JPEG") from None
        return rgb, hashlib.sha256(data).hexdigest()


def list_images(folder: Path, limit: int | None = None) -> list[ImageRef]:
    """The image files of ``folder`` in name order (at most ``limit``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise VlmrobustError(f"{folder}: not a folder of images; give --images DIR")
    refs = []
    for p in sorted(folder.iterdir()):
        if p.suffix.lower() in SUFFIXES and p.is_file():
            refs.append(ImageRef(p.name, p))
            if len(refs) > MAX_IMAGES:
                raise VlmrobustError(f"{folder}: more than {MAX_IMAGES} images; "
                                     "split the folder")
    if not refs:
        raise VlmrobustError(f"{folder}: no .png/.jpg/.jpeg/.webp files")
    return refs[:limit] if limit is not None else refs


PLANTED = "discover planted"


def write_planted_images(out: Path, n: int, seed: int = 0) -> list[Path]:
    """n planted scenes (:mod:`.planted`) as PNG files ``planted-0000.png`` ...,
    written whole into ``out`` (absent, empty or an earlier planted folder:
    vlmrobust.core.files.owned)."""
    from vlmrobust.core.files.owned import check_owned_folder, owned_directory
    from vlmrobust.evaluation.discover.planted import draw, scene_for

    if not 1 <= n <= 100_000:
        raise VlmrobustError(f"--n {n}: give 1 to 100000 images")
    check_owned_folder(out, "--out", PLANTED)
    names = [f"planted-{i:04d}.png" for i in range(n)]
    with owned_directory(out, PLANTED) as tmp:
        for i, name in enumerate(names):
            draw(scene_for(i, seed)).save(tmp / name, format="PNG", optimize=False,
                                          compress_level=6)
    return [out / name for name in names]
