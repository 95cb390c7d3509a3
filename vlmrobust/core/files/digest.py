"""sha256 of a file, read in chunks: below the fingerprints and the owned-folder
marks alike, so :mod:`vlmrobust.core.files` needs nothing above it."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
