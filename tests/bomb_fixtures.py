"""A decompression bomb: a PNG whose header claims 60,000 x 60,000 pixels
(3.6 billion) in a few dozen bytes, as the hostile suite's 426 KB file did.
PIL refuses it from the header alone (``DecompressionBombError``)."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(side: int = 60_000) -> bytes:
    """A grey-scale PNG header of ``side`` x ``side`` pixels with one empty IDAT."""
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(b"")) + _chunk(b"IEND", b""))
