"""Reading a source image file for a dataset: its bytes, bounded, once PIL has
decoded them (a broken file is refused in one line naming it); the bytes are
stored as published, never re-encoded, so fingerprints are stable."""

from __future__ import annotations

import io
from pathlib import Path

from vlmrobust.core.errors import SourceError, VlmrobustError
from vlmrobust.core.files.bounded import MIB, image_decode_errors, read_bytes_bounded

#: The largest source image read (published images are a few hundred KB).
MAX_IMAGE_BYTES = 64 * MIB


def checked_image(path: Path, what: str = "image", fix: str = "restore the file from its release",
                  error: type[VlmrobustError] = SourceError) -> tuple[bytes, str | None]:
    """``(bytes, PIL format)`` of the image at ``path``, read with a size bound and
    decoded once; an unreadable one raises ``error`` naming the file and ``fix``."""
    from PIL import Image

    data = read_bytes_bounded(path, MAX_IMAGE_BYTES, what, error)
    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt = im.format
            im.load()
    except image_decode_errors() as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise error(f"{path}: not a readable image ({first}); fix: {fix}") from None
    return data, fmt
