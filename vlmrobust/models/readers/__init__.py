"""Readers (answer modes) over the backend primitives; importing the package
registers every reader in :data:`vlmrobust.models.readers.base.READERS`."""

from vlmrobust.models.readers.base import (
    READERS,
    Reader,
    Reading,
    ReadOptions,
    refuse_missing,
)
from vlmrobust.models.readers.modes import parse_mode

__all__ = ["READERS", "ReadOptions", "Reader", "Reading", "parse_mode", "refuse_missing"]
