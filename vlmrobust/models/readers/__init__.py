"""Readers (answer modes) over the backend primitives; importing the package
registers every reader in :data:`vlmrobust.models.readers.base.READERS`."""

from vlmrobust.models.readers import generate, letter, likelihood  # noqa: F401  (registration)
from vlmrobust.models.readers.base import (
    READERS,
    Reader,
    Reading,
    ReadOptions,
    parse_mode,
    refuse_missing,
)

__all__ = ["READERS", "ReadOptions", "Reader", "Reading", "parse_mode", "refuse_missing"]
