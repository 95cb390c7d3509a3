"""Text that reaches a page, an SVG chart, a JSON download or a terminal
(issue 28.15): metadata text holds no control characters.

One control character in a display name made every shared chart ill-formed
XML (XML 1.0 forbids most of C0), and in a terminal ESC starts an escape
sequence. Refused: C0 controls (tab, newline and carriage return too, unless
the field is multi-line text such as BibTeX), DEL, C1 controls, lone
surrogates, the noncharacters U+FFFE/U+FFFF, and the bidirectional overrides
that reorder what a reader sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from vlmrobust.core.errors import VlmrobustError

_BIDI = "\u202a-\u202e\u2066-\u2069"
_SINGLE = re.compile(f"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff{_BIDI}]")
_MULTI = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff{_BIDI}]")


def control_char(text: str, multiline: bool = False) -> str | None:
    """The first forbidden character of ``text`` as ``U+XXXX at position N``, or None.

    >>> control_char("Lite two"), control_char("Lite\\x01two"), control_char("a\\nb", multiline=True)
    (None, 'U+0001 at position 4', None)
    """
    m = (_MULTI if multiline else _SINGLE).search(text)
    return None if m is None else f"U+{ord(m.group()):04X} at position {m.start()}"


def check_text_fields(obj: Any, where: str, error: type[VlmrobustError] = VlmrobustError,
                      multiline: Iterable[str] = ()) -> None:
    """Refuse a control character in any key or text value of ``obj`` (mappings
    and lists walked; ``multiline`` names top-level keys whose text may hold tab
    and line breaks). The message names the field and the character."""
    multi = frozenset(multiline)
    stack: list[tuple[Any, str, bool]] = [(obj, "", False)]
    while stack:
        value, field, lines = stack.pop()
        if isinstance(value, str):
            bad = control_char(value, lines)
            if bad is not None:
                raise error(f"{where}: {field or '(top level)'}: holds the control character "
                            f"{bad}; names, ids and versions must be printable single-line text")
        elif isinstance(value, Mapping):
            for k, v in value.items():
                key = str(k)
                bad = control_char(key)
                if bad is not None:
                    raise error(f"{where}: the key {key!r} holds the control character {bad}; "
                                "remove it")
                sub = f"{field}.{key}" if field else key
                stack.append((v, sub, not field and key in multi))
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{field}[{i}]", lines) for i, v in enumerate(value))


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters; a huge int is described, since
    printing one beyond 4300 digits raises (and helps nobody).

    >>> short_repr(10 ** 400), short_repr("x" * 50, 8)
    ('an integer of 401 digits', "'xxxxxx…")
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        digits = len(str(abs(value))) if value.bit_length() < 14_000 else round(value.bit_length() * 0.30103)
        return f"an integer of {'~' if value.bit_length() >= 14_000 else ''}{digits} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
