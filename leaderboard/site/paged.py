"""Tables too long for one page (issue 37.2): the page holds the first
:data:`PAGE_ROWS` rows, rendered server-side so that it reads without
JavaScript, and every row sits in one compact JSON file that the site script
sorts, filters and pages through. Both come from the same :class:`Cell` values,
so the two renderings cannot drift apart.

A cell in the JSON is a list, trailing defaults dropped:
``[v, t, c, h, a, m, s]`` = sort key (``data-v``), text, class, title, link
(site-root relative), marks (spans after the text: ``[class, text, title]``; an empty class is plain text) and
per-strategy variants (``[v, t]``, or ``[v, t, h, tone]`` where the title and
colour change too: the overview's strategy switch). The
script writes every string with ``textContent``: submission text stays text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PAGE_ROWS = 25  # 400 models: 6 kB an overview row, so about 170 kB a page
Mark = tuple[str, str, str]  # (class, text, title) of a span after the cell text
# per strategy: (data-v, text) or (data-v, text, title, tone class); a pair keeps the
# cell's own title and class (an accuracy's interval note does not change with it)
Variant = tuple[str, ...]


@dataclass(frozen=True)
class Cell:
    """One table cell; ``v`` is its raw sort key ("" = not measured)."""

    v: str
    t: str
    c: str = ""
    h: str = ""
    a: str = ""
    m: tuple[Mark, ...] = ()
    s: tuple[Variant, ...] = ()

    def __post_init__(self) -> None:
        for name in ("v", "t", "c", "h", "a"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Cell.{name} must be a string, got {getattr(self, name)!r}")
        bad = [x for x in self.s if len(x) not in (2, 4)]
        if bad:
            raise ValueError(f"Cell.s variants are (v, t) or (v, t, title, tone), got {bad!r}")
        if self.a.startswith(("/", "\\")) or ":" in self.a.split("/", 1)[0]:
            raise ValueError(f"Cell.a must be a site-relative path, got {self.a!r}")

    def packed(self) -> list[Any]:
        """The JSON list, trailing defaults dropped.

        >>> Cell("0.5", "50.0").packed(), Cell("", "—", c="t", m=(("tie", "=", ""),)).packed()
        (['0.5', '50.0'], ['', '—', 't', '', '', [['tie', '=', '']]])
        """
        out: list[Any] = [self.v, self.t, self.c, self.h, self.a,
                          [list(x) for x in self.m], [list(x) for x in self.s]]
        while len(out) > 2 and not out[-1]:
            out.pop()
        return out


@dataclass(frozen=True)
class Row:
    """A table row: its ``data-*`` attributes (filters) and its cells."""

    attrs: Mapping[str, str]
    cells: tuple[Cell, ...]

    def __post_init__(self) -> None:
        bad = [k for k in self.attrs if not k.replace("-", "").isalnum() or k != k.lower()]
        if bad:
            raise ValueError(f"Row attribute names must be lower-case words, got {bad!r}")


def rows_json(rows: Sequence[Row]) -> bytes:
    """The JSON file of every row, compact and deterministic.

    >>> rows_json([Row({"model": "m"}, (Cell("1", "1"),))])
    b'{"schema_version":1,"rows":[{"a":{"model":"m"},"c":[["1","1"]]}]}\\n'
    """
    body = {"schema_version": 1,
            "rows": [{"a": dict(r.attrs), "c": [c.packed() for c in r.cells]} for r in rows]}
    return (json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            + "\n").encode("utf-8")


def first_page(rows: Sequence[Row]) -> Sequence[Row]:
    return rows[:PAGE_ROWS]
