"""The site check: parse every built HTML page and SVG file (any quoting, any
case) and refuse anything outside an allow-list of elements, attributes and URL
schemes. Escaping is the first line of defence; this is the second: a template
or SVG mistake that let submission text become markup fails the build instead of
shipping a page that redirects (``<meta http-equiv=refresh>``), overlays links
or runs script.

The allow-list is what the templates and :mod:`vlmrobust.leaderboard.charts.svg` emit,
nothing more: no event handlers, no ``style`` attributes, one ``<script>``: the
site's own ``site.js`` at the site's root, empty (or, inline, the site's own
text), one stylesheet: ``style.css`` at the root (or an inline ``<style>`` of the
site's own text), one ``<meta http-equiv>`` (the Content-Security-Policy).
Resources (``src``, ``<link href>``) are local or the empty ``data:,`` favicon; only ``<a href>`` may leave the site (https/http links
to papers, code and weights), and it must carry ``rel="noopener noreferrer"``.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable, Mapping
from html.parser import HTMLParser
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from vlmrobust.core.errors import VlmrobustError

# The site's one script and stylesheet, files at its root that every page loads.
SCRIPT_FILE, STYLE_FILE = "site.js", "style.css"


class SiteCheckError(VlmrobustError):
    """A built page holds markup outside the allow-list or a broken link."""


_COMMON = frozenset({"class", "id", "title", "lang", "role", "hidden", "tabindex",
                     "aria-label", "aria-current", "aria-sort", "aria-live", "aria-hidden"})
_SVG_COMMON = frozenset({"class", "role", "aria-label", "x", "y", "x1", "x2", "y1", "y2",
                         "cx", "cy", "r", "d", "width", "height", "fill", "stroke",
                         "stroke-width", "stroke-dasharray", "transform", "text-anchor",
                         "dominant-baseline", "font-weight", "font-size", "font-family",
                         "opacity", "fill-opacity", "tabindex"})
# element -> attributes allowed on it besides _COMMON (HTML) and data-* attributes.
HTML_ELEMENTS: Mapping[str, frozenset[str]] = {
    **{t: frozenset() for t in (
        "html", "head", "title", "body", "header", "nav", "main", "footer", "section",
        "h1", "h2", "h3", "h4", "p", "div", "span", "b", "i", "em", "strong", "small",
        "code", "pre", "sub", "sup", "wbr", "br", "ul", "ol", "li", "dl", "dt", "dd",
        "table", "thead", "tbody", "tr", "summary", "figure", "figcaption",
        "abbr", "kbd", "output", "style")},
    "script": frozenset({"src"}),
    "meta": frozenset({"charset", "name", "content", "http-equiv"}),
    "link": frozenset({"rel", "href"}),
    "a": frozenset({"href", "download", "rel"}),
    "img": frozenset({"src", "alt", "width", "height", "loading", "decoding"}),
    "th": frozenset({"scope", "colspan", "rowspan"}),
    "td": frozenset({"colspan", "rowspan"}),
    "label": frozenset({"for"}),
    "input": frozenset({"type", "placeholder", "autocomplete", "spellcheck", "value"}),
    "select": frozenset(),
    "details": frozenset({"open"}),
    "option": frozenset({"value", "selected"}),
    "button": frozenset({"type"}),
}
SVG_ELEMENTS: Mapping[str, frozenset[str]] = {
    "svg": frozenset({"xmlns", "viewbox"}),
    **{t: frozenset() for t in ("g", "rect", "line", "circle", "path", "text", "title")},
}
_VOID = frozenset({"meta", "link", "img", "br", "wbr", "input"})
_INPUT_TYPES = frozenset({"search", "checkbox", "text"})
_META_NAMES = frozenset({"viewport", "referrer"})
_DATA_ATTR = re.compile(r"^data-[a-z0-9-]{1,40}$")


_WS = "\t\n\f\r "
_ATTR = (rf"[^{_WS}/\"'>=<]+(?:[{_WS}]*=[{_WS}]*(?:\"[^\"]*\"|'[^']*'|[^{_WS}\"'=<>`]+))?")
# One tag, comment or doctype. Attribute values in any quoting; anything else
# that starts with "<" fails the check (stricter than a browser, which would
# treat a stray "<" as text).
_TAG = re.compile(rf"<(?:(?P<comment>!--)|(?P<decl>![^>]*)>|(?P<end>/)?(?P<name>[A-Za-z][A-Za-z0-9-]*)"
                  rf"(?P<attrs>(?:[{_WS}]+{_ATTR})*)[{_WS}]*(?P<selfclose>/)?>)")
_ATTR_RE = re.compile(rf"([^{_WS}/\"'>=<]+)(?:[{_WS}]*=[{_WS}]*(\"[^\"]*\"|'[^']*'|[^{_WS}\"'=<>`]+))?")
_RAW_END = {"script": re.compile(r"</script[\t\n\f\r />]", re.IGNORECASE),
            "style": re.compile(r"</style[\t\n\f\r />]", re.IGNORECASE)}


def _unquote(v: str) -> str:
    if v[:1] in ("\"", "'"):
        v = v[1:-1]
    return html.unescape(v) if "&" in v else v


def tokenize(checker: _Checker, text: str) -> None:
    """Drive ``checker`` like :meth:`HTMLParser.feed`, but faster on our pages:
    one regex per tag. Text between tags must hold no ``<`` at all (the templates
    escape every one), so a tag this tokenizer does not see cannot exist."""
    pos = 0
    find, match = text.find, _TAG.match
    end_tag, start_tag = checker.handle_endtag, checker.handle_starttag
    while True:
        lt = find("<", pos)
        if lt < 0:
            break
        m = match(text, lt)
        if m is None:
            checker.where = (text, lt)
            raise checker.fail(f"a '<' that starts no well-formed tag: {text[lt:lt + 40]!r}")
        name, pos = m.group("name"), m.end()
        if name is None:
            checker.where = (text, lt)
            if m.group("comment"):
                checker.handle_comment("")
            checker.handle_decl(m.group("decl")[1:])
            continue
        name = name.lower()
        raw_attrs = m.group("attrs")
        if m.group("end"):
            if raw_attrs:
                checker.where = (text, lt)
                raise checker.fail(f"attributes on the end tag </{name}>")
            end_tag(name)
            continue
        checker.where = (text, lt)
        attrs: list[tuple[str, str | None]] = [
            (a.lower(), _unquote(v)) for a, v in _ATTR_RE.findall(raw_attrs)] if raw_attrs else []
        if m.group("selfclose"):
            checker.handle_startendtag(name, attrs)
            continue
        start_tag(name, attrs)
        if name in _RAW_END and checker.svg_depth == 0:
            end = _RAW_END[name].search(text, pos)
            if end is None:
                raise checker.fail(f"unterminated <{name}>")
            checker.handle_data(text[pos:end.start()])
            pos = end.start()


class _Checker(HTMLParser):
    def __init__(self, rel: str, svg_file: bool, scripts: Iterable[str], styles: Iterable[str],
                 csp: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.rel = rel
        self.svg_depth = 1 if svg_file else 0
        self.svg_file = svg_file
        self.scripts = set(scripts)
        self.styles = set(styles)
        self.csp = csp
        self.raw: str | None = None  # text of the open <script>/<style>
        self.links: list[tuple[str, str, str]] = []  # (element, attribute, url)
        self.counts: dict[str, int] = {}
        self.in_head = False
        self.csp_seen = 0
        self.where: tuple[str, int] | None = None  # (text, offset) for the fast tokenizer
        self.script_src = False

    def fail(self, what: str) -> SiteCheckError:
        if self.where is not None:
            text, offset = self.where
            line, col = text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset) - 1
        else:
            line, col = self.getpos()
        return SiteCheckError(f"{self.rel}:{line}:{col}: {what}; submission text reached the "
                              "markup unescaped: this is a bug, please report it")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)
        if tag in ("script", "style"):
            self.raw = ""
        if tag == "svg" and not self.svg_file:
            self.svg_depth += 1
        if tag == "head":
            self.in_head = True

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self.raw is not None:
            allowed = self.scripts if tag == "script" else self.styles
            if tag == "script" and self.script_src:
                allowed = {""}  # a script file's element holds no text
            if self.raw not in allowed:
                raise self.fail(f"<{tag}> holds text that is not the site's own {tag}")
            self.raw = None
        if tag == "svg" and not self.svg_file:
            self.svg_depth -= 1
        if tag == "head":
            self.in_head = False

    def handle_data(self, data: str) -> None:
        if self.raw is not None:
            self.raw += data

    def handle_comment(self, data: str) -> None:
        raise self.fail("a comment (none are emitted)")

    def handle_pi(self, data: str) -> None:
        raise self.fail("a processing instruction")

    def unknown_decl(self, data: str) -> None:
        raise self.fail(f"declaration {data[:40]!r}")

    def handle_decl(self, decl: str) -> None:
        if decl.lower() != "doctype html" or self.svg_file:
            raise self.fail(f"declaration {decl[:40]!r}")

    def _element(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        in_svg = self.svg_depth > 0 or tag == "svg"
        table = SVG_ELEMENTS if in_svg else HTML_ELEMENTS
        if tag not in table:
            raise self.fail(f"element <{tag}> is not allowed"
                            f"{' inside <svg>' if in_svg and tag in HTML_ELEMENTS else ''}")
        self.counts[tag] = self.counts.get(tag, 0) + 1
        allowed = table[tag] | (_SVG_COMMON if in_svg else _COMMON)
        seen: set[str] = set()
        values: dict[str, str] = {}
        for name, value in attrs:
            if name in seen:
                raise self.fail(f"duplicate attribute {name!r} on <{tag}>")
            seen.add(name)
            if name not in allowed and (in_svg or not _DATA_ATTR.match(name)):
                raise self.fail(f"attribute {name!r} is not allowed on <{tag}>")
            values[name] = value or ""
        if tag == "style" and attrs:
            raise self.fail("<style> takes no attributes")
        if tag == "script":
            self.script_src = "src" in values
            if self.script_src and self._resolved(values["src"]) != SCRIPT_FILE:
                raise self.fail(f"<script src={values['src']!r}> is not the site's {SCRIPT_FILE}")
        if tag == "meta":
            self._meta(values)
        elif tag == "input" and values.get("type") not in _INPUT_TYPES:
            raise self.fail(f"<input type={values.get('type')!r}> is not allowed")
        if tag == "svg" and in_svg and values.get("xmlns") not in (None,
                                                                     "http://www.w3.org/2000/svg"):
            raise self.fail("unexpected SVG namespace")
        for name in ("href", "src"):
            if name in values:
                self._url(tag, name, values[name], values)

    def _resolved(self, url: str) -> str | None:
        return _resolve(self.rel, url)

    def _meta(self, values: Mapping[str, str]) -> None:
        if not self.in_head:
            raise self.fail("<meta> outside <head>")
        equiv = values.get("http-equiv")
        if equiv is not None:
            if equiv.lower() != "content-security-policy" or values.get("content") != self.csp:
                raise self.fail(f"<meta http-equiv={equiv!r}> is not the page's "
                                "Content-Security-Policy")
            self.csp_seen += 1
        elif "name" in values and values["name"] not in _META_NAMES:
            raise self.fail(f"<meta name={values['name']!r}> is not allowed")

    def _url(self, tag: str, attr: str, url: str, values: Mapping[str, str]) -> None:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if tag == "link":
            if values.get("rel") == "stylesheet" and self._resolved(url) == STYLE_FILE:
                self.counts["style"] = self.counts.get("style", 0) + 1
                self.links.append((tag, attr, url))
                return
            if url != "data:," or values.get("rel") != "icon":
                raise self.fail(f"<link href={url!r}>: only the empty data: favicon and the "
                                f"site's {STYLE_FILE} are allowed")
            return
        if tag == "a" and scheme in ("http", "https") and parts.netloc:
            if not {"noopener", "noreferrer"} <= set(values.get("rel", "").split()):
                raise self.fail(f"external link {url!r} without rel=\"noopener noreferrer\"")
            return
        if scheme or parts.netloc or url.strip().startswith(("//", "\\")):
            raise self.fail(f"<{tag} {attr}={url!r}>: URL scheme {scheme or '//'!r} is not "
                            "allowed (local paths only; external links only on <a>, "
                            "http(s))")
        self.links.append((tag, attr, url))


def _resolve(rel: str, url: str) -> str | None:
    """``url`` as a path from the site's root, seen from page ``rel`` (None: not a
    plain relative path)."""
    parts = urlsplit(url.strip())
    if parts.scheme or parts.netloc or parts.query or parts.fragment or not parts.path:
        return None
    return os.path.normpath((PurePosixPath(rel).parent / parts.path).as_posix()).replace(
        os.sep, "/")


def check_page(rel: str, text: str, *, scripts: Iterable[str] = (), styles: Iterable[str] = (),
               csp: str | None = None, parser: str = "fast") -> list[str]:
    """Check one page (``.html``) or SVG file (``.svg``); return its local link targets
    resolved against ``rel``. Raises :class:`SiteCheckError` on the first violation.
    ``parser``: "fast" (:func:`tokenize`) or "stdlib" (:class:`html.parser.HTMLParser`,
    which browsers' leniency resembles more; the tests run both)."""
    svg_file = rel.endswith(".svg")
    c = _Checker(rel, svg_file, scripts, styles, csp)
    if parser == "stdlib":
        c.feed(text)
        c.close()
    elif parser == "fast":
        tokenize(c, text)
    else:
        raise ValueError(f"unknown parser {parser!r}")
    if c.raw is not None:
        raise c.fail("unterminated <script> or <style>")
    if not svg_file and (c.counts.get("script", 0) > 1 or c.counts.get("style", 0) > 1):
        raise c.fail("more than one <script> or <style>")
    if not svg_file and csp is not None and c.csp_seen != 1:
        raise c.fail(f"{c.csp_seen} Content-Security-Policy <meta> elements (want 1)")
    out = []
    for _, _, url in c.links:
        path = urlsplit(url).path
        target = (PurePosixPath(rel).parent / path).as_posix() if path else rel
        out.append(os.path.normpath(target).replace(os.sep, "/"))
    return out


# Characters a browser reports as parse errors: C0 controls but the whitespace
# ones, DEL, C1 controls, lone surrogates and noncharacters. In an SVG (XML) most
# of them make the whole chart fail to render (issue 28.15).
_BAD_CHAR = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]")


def check_characters(rel: str, text: str) -> None:
    """Refuse a character no page or chart may hold, naming its line and column."""
    m = _BAD_CHAR.search(text)
    if m is not None:
        line = text.count("\n", 0, m.start()) + 1
        col = m.start() - text.rfind("\n", 0, m.start()) - 1
        raise SiteCheckError(f"{rel}:{line}:{col}: the character U+{ord(m.group()):04X} is not "
                             "allowed in HTML or XML; submission text reached the page unchecked: "
                             "this is a bug, please report it")


def check_xml(rel: str, text: str) -> None:
    """Parse an SVG file as XML, as a browser does: an ill-formed chart shows a
    parse error instead of the chart. Runs after :func:`check_page`, which has
    already refused any DOCTYPE or entity declaration (nothing to expand)."""
    import xml.etree.ElementTree as ET

    try:
        ET.fromstring(text)
    except ET.ParseError as exc:
        raise SiteCheckError(f"{rel}: not well-formed XML ({exc}); a browser would show a parse "
                             "error instead of the chart: this is a bug, please report it") from None


def check_files(files: Mapping[str, bytes], *, scripts: Iterable[str], styles: Iterable[str],
                csp: str | None, parser: str = "fast") -> None:
    """Every ``.html`` and ``.svg`` file holds only characters HTML and XML allow
    and passes :func:`check_page`, every SVG parses as XML, and every local link
    resolves to a file of the site. (HTML pages are HTML5, whose void elements
    and boolean attributes are not XML: :func:`check_page` is their parse.)"""
    scripts, styles = list(scripts), list(styles)
    for rel, allowed in ((SCRIPT_FILE, scripts), (STYLE_FILE, styles)):
        if rel in files and files[rel].decode("utf-8", "replace") not in allowed:
            raise SiteCheckError(f"{rel} is not the site's own {rel}; this is a bug, please "
                                 "report it")
    for rel in sorted(files):
        if not rel.endswith((".html", ".svg")):
            continue
        try:
            text = files[rel].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SiteCheckError(f"{rel}: not UTF-8 ({exc}); this is a bug") from None
        check_characters(rel, text)
        targets = check_page(rel, text, scripts=scripts, styles=styles,
                             csp=None if rel.endswith(".svg") else csp, parser=parser)
        if rel.endswith(".svg"):
            check_xml(rel, text)
        for target in targets:
            if target not in files:
                raise SiteCheckError(f"{rel} links to missing {target!r}; this is a bug, "
                                     "please report it")
