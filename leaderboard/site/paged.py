"""Tables too long for one page (issue 37.2): the page holds the first
:data:`PAGE_ROWS` rows, rendered server-side so that it reads without
JavaScript, and every row sits in one compact JSON file that the site script
sorts, filters and pages through. Both come from the same :class:`Cell` values,
so the two renderings cannot drift apart.

A cell in the JSON is a list, trailing defaults dropped:
``[v, t, c, h, a, m, s, d]`` = sort key (``data-v``), text, class, title, link
(site-root relative; ``d`` = 1: a download link), marks (spans after the text: ``[class, text, title]``; an empty class is plain text) and
per-strategy variants (``[v, t]``, or ``[v, t, h, tone]`` where the title and
colour change too: the overview's strategy switch). The
script writes every string with ``textContent``: submission text stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from markupsafe import escape

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
    d: bool = False  # the link is a download (<a download>)

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
                          [list(x) for x in self.m], [list(x) for x in self.s], int(self.d)]
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


class _Unsupported(Exception):
    """A row holds markup the cell model does not carry: that table stays whole."""


class _RowParser(HTMLParser):
    """The rows of one rendered ``<tbody>`` as :class:`Row` values: ``<tr data-*>``,
    ``<td class data-v title>`` holding text, one ``<a href>`` and ``<span class
    title>`` marks (the markup the site's sortable tables use)."""

    def __init__(self, root: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = root
        self.rows: list[Row] = []
        self.attrs: dict[str, str] = {}
        self.cells: list[Cell] = []
        self.td: dict[str, str] | None = None
        self.text: list[str] = []
        self.href = ""
        self.download = False
        self.marks: list[Mark] = []
        self.span: tuple[str, str] | None = None
        self.text_before_span = ""
        self.in_a = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and self.td is None:
            if any(not k.startswith("data-") for k in a):
                raise _Unsupported("tr attributes")
            self.attrs, self.cells = {k[5:]: v for k, v in a.items()}, []
        elif tag == "td" and self.td is None:
            if set(a) - {"class", "data-v", "title"}:
                raise _Unsupported("td attributes")
            self.td, self.text, self.href, self.marks = a, [], "", []
            self.download = False
        elif tag == "a" and self.td is not None and not self.href and not self.marks \
                and set(a) in ({"href"}, {"href", "download"}) and not a.get("download"):
            self.href, self.in_a = a["href"].removeprefix(self.root), True
            self.download = "download" in a
        elif tag == "span" and self.td is not None and self.span is None \
                and set(a) <= {"class", "title"} and a.get("class"):
            self.span = (a["class"], a.get("title", ""))
            self.text_before_span = "".join(self.text)
        elif tag != "wbr":
            raise _Unsupported(f"<{tag}> in a cell")

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self.in_a = False
        elif tag == "span" and self.span is not None:
            body = "".join(self.text)[len(self.text_before_span):]
            self.text = [self.text_before_span]
            self.marks.append((self.span[0], body, self.span[1]))
            self.span = None
        elif tag == "td" and self.td is not None:
            text = "".join(self.text)
            td = self.td
            v = td.get("data-v", text.strip())
            self.cells.append(Cell(v, text, c=td.get("class", ""), h=td.get("title", ""),
                                   a=self.href, m=tuple(self.marks), d=self.download))
            self.td = None
        elif tag == "tr" and self.td is None:
            self.rows.append(Row(self.attrs, tuple(self.cells)))

    def handle_data(self, data: str) -> None:
        if self.td is not None:
            if self.marks and self.span is None and data.strip():
                raise _Unsupported("text after a mark")
            self.text.append(data)
        elif data.strip():
            raise _Unsupported("text between cells")


_TABLE = re.compile(r'(<div class="wrap">\s*)?<table( id="[^"]*")? class="sortable">(.*?)'
                    r"<tbody>\n?(.*?)</tbody>", re.S)


def page_tables(page: str, html: str, root: str) -> tuple[str, dict[str, bytes]]:
    """Every sortable table of a rendered page with more than :data:`PAGE_ROWS`
    rows keeps its first page and moves all its rows to ``data/<page>-<k>.json``
    for the site script (classification.html and holistic.html hold one row per
    model and dataset: 1.1 MB and 0.56 MB at 400 models). A table whose cells hold
    markup the cell model does not carry stays whole. Returns (html, files)."""
    files: dict[str, bytes] = {}
    stem = page.removesuffix(".html").replace("/", "-")

    def one(m: re.Match[str]) -> str:
        if m.group(4).count("<tr") <= PAGE_ROWS:
            return m.group(0)
        parser = _RowParser(root)
        try:
            parser.feed(m.group(4))
            parser.close()
        except (_Unsupported, ValueError, TypeError):
            return m.group(0)
        rows = parser.rows
        k = len(files)
        rel = f"data/{stem}-{k}.json"
        files[rel] = rows_json(rows)
        # a table keeps its own id (pages link to it); the pager is named after it
        ident = m.group(2)[5:-1] if m.group(2) else f"{stem}-t{k}"
        head = m.group(3)
        first = "".join(_row_html(r, root) for r in rows[:PAGE_ROWS])
        pager = (f'<p class="note paged-note" id="{ident}-nojs">The first {PAGE_ROWS} of '
                 f"{len(rows)} rows; the others load with JavaScript, and every one is in the "
                 f'downloads.</p>\n<div class="pager" id="{ident}-pager" hidden><button '
                 'type="button" data-go="-1">‹ previous</button> <output></output> <button '
                 'type="button" data-go="1">next ›</button></div>\n')
        return (f'{pager}{m.group(1) or ""}<table id="{ident}" class="sortable" '
                f'data-rows="{root}{rel}" data-root="{root}" data-page="{PAGE_ROWS}">{head}'
                f"<tbody>\n{first}")

    out = _TABLE.sub(one, html)
    return out, files


def _row_html(r: Row, root: str) -> str:
    """One row as the template's paged.row macro writes it."""
    parts = ["<tr", *(f' data-{k}="{escape(v)}"' for k, v in r.attrs.items()), ">"]
    for c in r.cells:
        parts.append("<td")
        if c.c:
            parts.append(f' class="{escape(c.c)}"')
        parts.append(f' data-v="{escape(c.v)}"')
        if c.h:
            parts.append(f' title="{escape(c.h)}"')
        parts.append(">")
        dl = " download" if c.d else ""
        parts.append(f'<a href="{escape(root + c.a)}"{dl}>{escape(c.t)}</a>' if c.a
                     else str(escape(c.t)))
        for cls, text, title in c.m:
            parts.append(f'<span class="{escape(cls)}"' + (f' title="{escape(title)}"' if title
                                                            else "") + f">{escape(text)}</span>"
                         if cls else str(escape(text)))
        parts.append("</td>")
    parts.append("</tr>\n")
    return "".join(parts)
