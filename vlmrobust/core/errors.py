"""The one exception type the CLI turns into a one-line message and exit code 1,
and :func:`printable`, which keeps any message (and the paths in it) on one line."""

from __future__ import annotations

import re

# What a terminal interprets or breaks lines on: C0 (ESC, newline), DEL, C1, the
# Unicode line/paragraph separators, bidi overrides, lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    code = ord(c)
    return _NAMED.get(c) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: object) -> str:
    r"""``text`` with every control, line-breaking and bidi character escaped, so
    that a path holding ESC or a newline prints as one inert line. Idempotent.

    >>> printable("out/\x1b[31mred\nx.json")
    'out/\\x1b[31mred\\nx.json'
    >>> printable(printable("a\nb")) == printable("a\nb")
    True
    """
    return _UNPRINTABLE.sub(_escape, str(text))


class VlmrobustError(Exception):
    """A user-facing failure: the message names the file/row at fault and the fix.
    Its text is :func:`printable`: whatever path it names, it stays one line."""

    def __str__(self) -> str:
        return printable(super().__str__())


class SourceError(VlmrobustError):
    """A source folder, file or label table is missing or malformed."""


class SpecError(VlmrobustError):
    """A benchmark spec (YAML) is invalid."""


class SubmissionError(VlmrobustError):
    """A predictions file or submission does not match its dataset."""


class UnsupportedReaderError(VlmrobustError):
    """A backend cannot serve the answer mode asked for (a server without logprobs
    asked for letter log-probs): ``vlmrobust eval`` lists the dataset as skipped
    with this reason instead of failing the suite."""
