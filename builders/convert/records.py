"""One converted question and the per-row parsing shared by every reader:
option letters, answer letters, base64 / byte images, multi-image tiling.

Every parse error is raised as :class:`RowError` carrying the source's own
index, so that a reader can report all bad rows of a file at once.
"""

from __future__ import annotations

import ast
import base64
import binascii
import io
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LETTERS = string.ascii_uppercase
# "(A) text" / "A. text" / "A: text" prefixes of MME-RealWorld-style option strings
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Z])\)?[.:)]?\s+")


class RowError(ValueError):
    """A bad source row: ``index`` is the source's own index."""

    def __init__(self, index: str, reason: str) -> None:
        super().__init__(f"index {index}: {reason}")
        self.index = index
        self.reason = reason


@dataclass(frozen=True)
class McqRecord:
    """One converted question. ``images`` are encoded image bytes in order
    (several for multi-image questions); ``answer`` indexes ``options``."""

    index: str
    images: tuple[bytes, ...]
    question: str
    options: tuple[str, ...]
    answer: int
    category: str | None = None
    l2_category: str | None = None
    hint: str | None = None

    def __post_init__(self) -> None:
        if not self.index:
            raise ValueError("index must not be empty")
        if not self.images:
            raise ValueError(f"index {self.index}: no image")
        if len(self.options) < 2:
            raise ValueError(f"index {self.index}: needs at least 2 options, got "
                             f"{len(self.options)}")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"index {self.index}: answer {self.answer} outside the options")


def is_missing(value: Any) -> bool:
    """Empty cell: None, NaN or a blank string (pandas writes NaN as '')."""
    if value is None:
        return True
    if isinstance(value, float) and value != value:
        return True
    return isinstance(value, str) and not value.strip()


def text(value: Any) -> str | None:
    return None if is_missing(value) else str(value).strip()


def letter_options(row: Mapping[str, Any], columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """(letters, texts) of the non-empty option columns, in letter order: the
    options a VLMEvalKit prompt shows (missing letters are skipped)."""
    letters, texts = [], []
    for col in columns:
        value = row.get(col)
        if not is_missing(value):
            letters.append(col)
            texts.append(str(value).strip())
    return letters, texts


def listed_options(value: Any, index: str) -> tuple[list[str], list[str]]:
    """Options given as one list (a Python/JSON list literal or a real list) of
    strings like "(A) text"; the prefix letters are checked to run A, B, ..."""
    items = value
    if isinstance(value, str):
        try:
            items = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise RowError(index, f"options {value[:60]!r} are not a list literal") from None
    if not isinstance(items, (list, tuple)):
        raise RowError(index, "options are not a list")
    letters, texts = [], []
    for i, item in enumerate(items):
        s = str(item).strip()
        m = _OPTION_PREFIX.match(s)
        if m and m.group(1) == LETTERS[i]:
            s = s[m.end():]
        letters.append(LETTERS[i])
        texts.append(s.strip())
    return letters, texts


def answer_index(value: Any, letters: Sequence[str], index: str) -> int:
    """Position of the answer letter among the row's present option letters.

    >>> answer_index("C", ["A", "B", "C"], "7")
    2
    >>> answer_index(" b ", ["A", "B"], "7")
    1
    """
    if is_missing(value):
        raise RowError(index, "answer is empty")
    v = str(value).strip().upper()
    if v.startswith("(") and v.endswith(")"):
        v = v[1:-1]
    if v not in letters:
        have = ", ".join(letters) or "none"
        raise RowError(index, f"answer {str(value).strip()!r} is not one of the row's option "
                              f"letters ({have})")
    return list(letters).index(v)


def decode_b64(value: str, index: str) -> bytes:
    try:
        return base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise RowError(index, "image is not valid base64") from None


def image_list(value: Any, index: str) -> list[bytes]:
    """VLMEvalKit's ``image`` cell: one base64 string, or a list literal of
    them (multi-image questions such as LEGO-Puzzles), order kept."""
    if isinstance(value, (bytes, bytearray)):
        return [bytes(value)]
    if is_missing(value):
        raise RowError(index, "image is empty")
    s = str(value).strip()
    if s.startswith("["):
        try:
            items = ast.literal_eval(s)
        except (ValueError, SyntaxError):
            raise RowError(index, "image list is not a valid list literal") from None
        if not isinstance(items, list) or not items:
            raise RowError(index, "image list is empty")
        return [decode_b64(str(x), index) for x in items]
    return [decode_b64(s, index)]


def check_image(data: bytes, index: str, max_pixels: int) -> tuple[int, int]:
    """Decode fully (a truncated file fails here, not in a model); returns the size."""
    from PIL import Image

    from vlmrobust.core.files.bounded import image_decode_errors

    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.width * im.height > max_pixels:
                raise RowError(index, f"image of {im.width}x{im.height} exceeds "
                                      f"{max_pixels} pixels")
            im.load()
            return im.size
    except image_decode_errors() as exc:
        if isinstance(exc, RowError):
            raise
        if isinstance(exc, Image.DecompressionBombError):  # PIL's own bound, met in open()
            raise RowError(index, f"image exceeds {max_pixels} pixels "
                                  "(a decompression bomb)") from None
        raise RowError(index, f"image cannot be decoded ({type(exc).__name__})") from None


def tile(images: Sequence[bytes], gap: int = 8) -> bytes:
    """Several images side by side, left to right on white with ``gap`` px between,
    bottom-padded to the tallest, as one PNG: the single ``image`` a one-image
    model sees for a multi-image question (VLMEvalKit concatenates likewise)."""
    from PIL import Image

    pics = []
    for data in images:
        with Image.open(io.BytesIO(data)) as im:
            pics.append(im.convert("RGB"))
    width = sum(p.width for p in pics) + gap * (len(pics) - 1)
    height = max(p.height for p in pics)
    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    x = 0
    for p in pics:
        canvas.paste(p, (x, 0))
        x += p.width + gap
    buf = io.BytesIO()
    canvas.save(buf, "PNG", optimize=False)
    return buf.getvalue()
