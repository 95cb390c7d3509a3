"""Choosing a reader by its mode name. Above the readers it registers, so that
:mod:`vlmrobust.models.readers.base` (their shared contract) imports none of them
(issue 38.4: no import circles)."""

from __future__ import annotations

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.readers import generate, letter, likelihood  # noqa: F401  (registration)
from vlmrobust.models.readers.base import DEFAULT_MODE, READERS, Reader, ReadOptions


def parse_mode(mode: str | None, options: ReadOptions | None = None) -> Reader:
    """The reader for ``mode`` (default ``letter``); a bad mode fails in one line.

    >>> parse_mode("likelihood:avg").mode
    'likelihood:avg'
    """
    mode = DEFAULT_MODE if mode is None else mode
    name, sep, arg = mode.partition(":")
    if name not in READERS:
        raise VlmrobustError(f"--mode {mode!r}: {READERS.unknown_message(name)}")
    reader = READERS.get(name).build(arg if sep else None, options or ReadOptions())
    if not reader.decides and options is not None and options != ReadOptions():
        raise VlmrobustError(f"--max-new-tokens, --stop and --answer-cue apply to --mode "
                             f"generate / open-world, not {reader.mode}")
    return reader
