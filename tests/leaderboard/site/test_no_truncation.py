"""The site shows model names and column headers whole (issue 27.8): three
models whose names differ only at the end, and the Bench-C table's
"Destructive RAS" headers, are never cut off. Checked in the stylesheet and
the rendered HTML, and measured in a real headless Chromium."""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.leaderboard.site.test_browser import driver  # noqa: F401  (the headless Chromium fixture)
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import publish_site
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission

CSS = Path(__file__).resolve().parents[3] / "leaderboard" / "static" / "style.css"
NAMES = ("classifier:efficientnet-lite0 (ImageNet-1k, 224 px, reference run A)",
         "classifier:efficientnet-lite0 (ImageNet-1k, 224 px, reference run B)",
         "classifier:efficientnet-lite0 (ImageNet-1k, 224 px, reference run C)")


@pytest.fixture(scope="module")
def long_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("long-names")
    subs = root / "submissions"
    for i, name in enumerate(NAMES):
        meta, scores = synthetic_submission(i, "classifier", name=name)
        meta["vision_encoder"] = "efficientnet-lite0-with-a-rather-long-encoder-identifier"
        write_submission(subs, meta, scores)
    publish_site(load_submissions(subs), root / "site", version="1")
    return root / "site"


def _rules(selector: str) -> list[str]:
    css = re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.S)
    return [body for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)
            if selector in [s.strip() for s in sel.split(",")]]


def test_stylesheet_clips_no_name_or_header() -> None:
    css = CSS.read_text()
    assert "text-overflow" not in css
    for selector in ("td.name", "td.enc", "th", 'th[data-type="num"]'):
        for body in _rules(selector):
            assert "overflow: hidden" not in body, selector
            if selector.startswith("th"):
                assert "max-width" not in body, selector
    assert any("white-space: normal" in b for b in _rules("td.name"))


def test_rendered_pages_hold_the_whole_texts(long_site: Path) -> None:
    index = (long_site / "index.html").read_text()
    for name in NAMES:
        assert f">{name}<" in index.replace("&#39;", "'")
    bench = (long_site / "bench-c.html").read_text()
    assert "Destructive RAS (plain)" in bench and "Destructive RAS (κ)" in bench


@pytest.fixture(scope="module")
def long_url(long_site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(long_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


# Every name cell and header: its content fits its box (nothing clipped or
# spilling over), and a name cell shows its whole text.
_CLIPPED = """
return Array.from(document.querySelectorAll(arguments[0])).map(el => {
  const cs = getComputedStyle(el);
  return [el.textContent.trim(), el.scrollWidth, el.clientWidth, cs.textOverflow, cs.overflowX];
});
"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize(("page", "selector"), [
    ("index.html", "#overview td.name:not(.enc)"), ("index.html", "#overview thead th"),
    ("index.html", "#overview td.enc"), ("bench-c.html", "thead th"),
])
def test_nothing_is_cut_off_in_a_browser(driver: Any, long_url: str,  # noqa: F811
                                         page: str, selector: str) -> None:
    driver.get(long_url + page)
    cells = driver.execute_script(_CLIPPED, selector)
    assert cells, selector
    for text, scroll, client, text_overflow, _overflow_x in cells:
        assert scroll <= client + 1, (page, text, scroll, client)
        assert text_overflow != "ellipsis", (page, text)
    if selector.endswith("td.name:not(.enc)"):
        assert sorted(c[0] for c in cells) == sorted(NAMES)
    if page == "bench-c.html":
        assert {"Destructive RAS (plain)", "Destructive RAS (κ)"} <= {c[0] for c in cells}
