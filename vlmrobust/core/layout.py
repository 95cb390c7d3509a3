"""Names inside a built dataset directory and the parquet options its shards are
written and read with: the one place the writer, the reader (datadir), the
fingerprint and the label spaces agree on, so none of them imports another for a
constant (issue 38.4: no import circles)."""

from __future__ import annotations

from typing import Any

SPLIT = "test"
MANIFEST = "manifest.json"
LABEL_SPACE_DIR = "label_spaces"
# Parquet's CRC32 of every page: every parquet file the project writes carries
# one and every read of a predictions file or dataset shard verifies it, so a
# damaged copy is refused instead of scored (issue 28.11). Files written without
# checksums (older builds, other tools) have none to verify and read as before.
WRITE_CHECKSUMS: dict[str, Any] = {"write_page_checksum": True}
READ_CHECKSUMS: dict[str, Any] = {"page_checksum_verification": True}


def label_space_file(config: str) -> str:
    """Path of a config's label space, relative to the dataset directory."""
    return f"{LABEL_SPACE_DIR}/{config}.json"
