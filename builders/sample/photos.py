"""Photo items of the embedded sample: one per photo table entry, copied byte
for byte when small enough, otherwise re-encoded (cut-outs flattened on white)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from vlmrobust.builders.sample.packages import package_root
from vlmrobust.builders.sample.photo_sources import PhotoSource
from vlmrobust.builders.sample.render import (
    downscale_photo,
    encode_png,
    flatten_cutout,
    is_cutout,
)
from vlmrobust.builders.sample.staging import Item
from vlmrobust.core.errors import SourceError

#: Photos are copied byte for byte when they are JPEG/PNG at most this large.
PHOTO_KEEP_MAX_BYTES = 600_000
PHOTO_KEEP_MAX_SIDE = 1024


def photo_item(photo: PhotoSource, debian_roots: dict[str, Path]) -> Item:
    root, prefix = package_root(photo.package, debian_roots)
    src = root / photo.path
    if not src.is_file():
        raise SourceError(f"{src}: photo {photo.key} not found; reinstall {photo.package}")
    with Image.open(src) as im:
        fmt, size, cutout = im.format, im.size, is_cutout(im)
    keep = (
        not cutout
        and photo.crop is None
        and fmt in ("JPEG", "PNG")
        and src.stat().st_size <= PHOTO_KEEP_MAX_BYTES
        and max(size) <= PHOTO_KEEP_MAX_SIDE
    )
    ext = {"JPEG": "jpg", "PNG": "png"}.get(fmt or "", "png") if keep else "png"

    def make() -> bytes:
        if keep:
            return src.read_bytes()
        with Image.open(src) as im:
            im.load()
            if cutout:
                return encode_png(downscale_photo(flatten_cutout(im)))
            return encode_png(downscale_photo(im.crop(photo.crop) if photo.crop else im))

    return Item(
        key=photo.key,
        rel_path=f"images/photo/{photo.key}.{ext}",
        class_index=photo.class_index,
        group="photo",
        style="cutout" if cutout else "photo",
        origin_package=photo.package,
        origin_path=f"{prefix}/{photo.path}"
        + (f"#crop={','.join(map(str, photo.crop))}" if photo.crop else ""),
        licence=photo.licence,
        source_file=src,
        make=make,
    )
