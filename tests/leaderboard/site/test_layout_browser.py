"""Issue 37.3: every page laid out in Chromium at 1,400 and 390 px wide. Nothing
overflows the window sideways; a box narrower than its table says so with a
visible cue; every chart point lies inside its chart, and the charts that promise
one point per model show every model (the Bench-C scatter showed 2 points for 3
models: a model without corrective RAS was dropped)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.browser import chromium, serve
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import publish_site
from vlmrobust.leaderboard.synthetic import REAL_VARIANTS, synthetic_submission, write_submission

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N = 7
WIDTHS = (1400, 390)
PAGES = ("index.html", "robustness.html", "bench-c.html", "holistic.html",
         "classification.html", "failure-modes.html", "releases.html", "submit.html",
         "about.html", "models/clip-0001.html", "models/vlm-0002.html")

# Per page: [page overflow px, boxes wider than their table without a visible cue,
# chart points outside their chart, charts whose right edge leaves the window].
LAYOUT_JS = """
const vw = document.documentElement.clientWidth;
const noCue = [];
document.querySelectorAll('main *').forEach(e => {
  const ox = getComputedStyle(e).overflowX;
  if ((ox === 'auto' || ox === 'scroll') && e.scrollWidth - e.clientWidth > 1) {
    const cue = e.previousElementSibling;
    const shown = cue && cue.classList.contains('scroll-cue') && !cue.hidden
      && cue.offsetHeight > 0 && cue.textContent.trim().length > 0;
    if (!(e.classList.contains('scrolls') && shown)) noCue.push(e.className + ' ' + e.id);
  }
});
const outside = [];
document.querySelectorAll('svg .pt').forEach(p => {
  const s = p.ownerSVGElement.getBoundingClientRect(), b = p.getBoundingClientRect();
  if (s.width === 0) return;  // inside a closed <details>
  if (b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5
      || b.bottom > s.bottom + 0.5)
    outside.push((p.querySelector('title') || {}).textContent);
});
const wide = [];
document.querySelectorAll('main svg').forEach(s => {
  const r = s.getBoundingClientRect();
  if (r.width > 0 && !s.closest('.wrap') && r.right > vw + 0.5) wide.push(s.getAttribute('aria-label'));
});
const past = [];
document.querySelectorAll('body *').forEach(e => {
  const r = e.getBoundingClientRect();
  let p = e.parentElement, scrolled = false;
  for (; p; p = p.parentElement) {
    const ox = getComputedStyle(p).overflowX;
    if (ox === 'auto' || ox === 'scroll' || ox === 'hidden') { scrolled = true; break; }
  }
  if (!scrolled && r.width > 0 && r.right > vw + 0.5 && past.length < 4)
    past.push(e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 30));
});
return [document.documentElement.scrollWidth - vw, noCue, outside, wide, past];
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layout-site")
    subs = root / "submissions"
    for i in range(N):
        meta, scores = synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3],
                                            variants=REAL_VARIANTS)
        if i == 3:
            # every clean answer right: corrective RAS (over WR ∪ WW) is undefined
            scores["datasets"]["bench-c"]["bench_c"]["aggregate"]["corrective_ras"] = None
        if i == 1:
            # plain numbers on the first cells, with the printing's edge cases: a
            # tie at the third decimal (0.0625: Python rounds to even, JS's toFixed
            # away from zero), minus zero after rounding, a huge and a tiny value
            for cell, (d_acc, ras) in zip(scores["datasets"]["bench-c"]["bench_c"]["cells"],
                                         [(-0.0001, 0.0625), (0.00049999, -0.0004),
                                          (-0.0625, 0.1875), (0.99995, -1.9999)],
                                         strict=False):
                cell["plain"] = {"delta_acc": d_acc, "ras": ras, "S": 0.4, "C": 0.3}
        if i == 4:
            # a perfect score sits at probit(100%) = ∞: drawn clipped at the edge
            cfg = scores["datasets"]["imagenet-mcq"]["configs"]["imagenet-r-wordnet"]
            cfg.update(accuracy=1.0, accuracy_ci=[1.0, 1.0])
        write_submission(subs, meta, scores)
    publish_site(load_submissions(subs), root / "site", version="1")
    return root / "site"


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    with serve(site) as url:
        yield url


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as drv:
        yield drv


def _show(driver: Any, url: str, width: int) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1,
                            "mobile": False})
    driver.get(url)
    # shared charts become inline SVG once loaded (lazy ones once made eager)
    driver.execute_script("document.querySelectorAll('img.inline').forEach(i => {"
                          " i.loading = 'eager'; });"
                          "document.querySelectorAll('details').forEach(d => d.open = true);")
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.querySelectorAll('img.inline').length") == 0)
    driver.execute_script("window.dispatchEvent(new Event('resize'));")


@pytest.mark.parametrize("width", WIDTHS)
def test_no_overflow_without_a_scroll_cue(driver: Any, base_url: str, width: int) -> None:
    problems = {}
    for page in PAGES:
        _show(driver, base_url + page, width)
        over, no_cue, outside, wide, past = driver.execute_script(LAYOUT_JS)
        if over > 0 or no_cue or outside or wide:
            problems[page] = {"page overflow px": over, "past the window": past,
                              "no scroll cue": no_cue,
                              "points outside their chart": outside[:3],
                              "charts past the window": wide}
    assert not problems, json.dumps(problems, indent=1, ensure_ascii=False)


def test_bench_c_scatter_shows_every_model(driver: Any, base_url: str) -> None:
    _show(driver, base_url + "bench-c.html", 1400)
    rows, points = driver.execute_script(
        "return [document.querySelectorAll('#benchc tbody tr').length,"
        " Array.from(document.querySelectorAll('.plots > figure > svg.plot'))[0]"
        ".querySelectorAll('circle.pt').length];")
    assert rows == N and points == N


def test_clipped_point_is_marked_and_points_take_focus(driver: Any, base_url: str) -> None:
    from selenium.webdriver.common.by import By

    _show(driver, base_url + "robustness.html", 1400)
    clipped = driver.execute_script(
        "return Array.from(document.querySelectorAll('svg circle.pt.clipped'))"
        ".map(c => c.querySelector('title').textContent);")
    assert clipped and all("clipped to the edge" in t for t in clipped)
    assert driver.execute_script("return document.querySelectorAll('svg path.clip').length") \
        >= len(clipped)
    # legends list drawn lines only: no entry for a family without points or line
    point = driver.find_element(By.CSS_SELECTOR, "svg.plot circle.pt[tabindex='0']")
    driver.execute_script("arguments[0].focus();", point)
    tip = driver.find_element(By.CSS_SELECTOR, "div.tip")
    assert tip.is_displayed()
    assert tip.text == point.find_element(By.TAG_NAME, "title").get_attribute("textContent")


def test_model_heat_maps_are_drawn_from_the_cells_table(driver: Any, base_url: str,
                                                       site: Path) -> None:
    """Issue 37.2: no per-model heat-map files; the script draws the two maps from
    the page's table of every cell, with the colours of charts/svg.py."""
    from vlmrobust.leaderboard.charts.svg import diverging_colour

    assert not (site / "plots" / "bench-c").exists()
    _show(driver, base_url + "models/clip-0001.html", 1400)
    maps = driver.execute_script(
        "return Array.from(document.querySelectorAll('figure.heatmap svg')).map(s =>"
        " Array.from(s.querySelectorAll('rect.cell')).map(r => [r.getAttribute('fill'),"
        " r.querySelector('title').textContent]));")
    assert [len(m) for m in maps] == [95, 95]
    cells = driver.execute_script(
        "return Array.from(document.querySelectorAll('#bench-c-cells tbody tr')).map(r =>"
        " [r.cells[0].textContent, r.cells[1].textContent,"
        "  r.cells[6].getAttribute('data-v'), r.cells[4].getAttribute('data-v')]);")
    by_label = {t: f for f, t in maps[0]}
    for name, sev, ras, _ in cells:
        label = f"{name}, severity {sev}: " + ("n/a" if ras == "" else f"{float(ras):.3f}")
        assert by_label[label] == diverging_colour(float(ras) if ras else None, 1.0)


def test_model_cells_table_is_filled_as_python_prints_it(driver: Any, base_url: str,
                                                        site: Path) -> None:
    """Issue 37.2: a model page holds its table of every Bench-C cell as data;
    site.js writes the rows. Every cell reads as formatting.py prints the
    submission's number (ties and minus zero included), sorts by value, and the
    no-script note goes away."""
    from selenium.webdriver.common.by import By

    from vlmrobust.leaderboard.load import load_submissions
    from vlmrobust.leaderboard.pages.bench_c import CELL_COLUMNS
    from vlmrobust.leaderboard.pages.formatting import num, signed

    page = (site / "models" / "clip-0001.html").read_text()
    assert "<td" not in page.split('id="bench-c-cells"')[1].split("</table>")[0]
    (sub,) = [s for s in load_submissions(site.parent / "submissions") if s.model_id == "clip-0001"]
    bc = sub.datasets["bench-c"].bench_c
    assert bc is not None
    want = [[c.corruption, str(c.severity), str(c.n)] + [
        signed(v, 1, 100.0) if fmt == "pp" else num(v, 3)
        for _, fmt, wt, k in CELL_COLUMNS
        for v in [(c.plain if wt == "plain" else c.metrics).get(k)]] for c in bc.cells]
    assert [want[0][3], want[0][5], want[1][3], want[1][5]] == ["−0.0", "0.062", "+0.0", "-0.000"]
    _show(driver, base_url + "models/clip-0001.html", 1400)
    got = driver.execute_script(
        "return Array.from(document.querySelectorAll('#bench-c-cells tbody tr')).map(r =>"
        " Array.from(r.cells).map(c => c.textContent));")
    assert got == want
    assert not driver.find_element(By.ID, "bench-c-cells-nojs").is_displayed()
    # sorting by RAS κ (descending first) orders the rows by the number
    driver.find_element(By.CSS_SELECTOR, "#bench-c-cells thead th:nth-child(7)").click()
    keys = driver.execute_script(
        "return Array.from(document.querySelectorAll('#bench-c-cells tbody tr'))"
        ".map(r => r.cells[6].getAttribute('data-v'));")
    values = [float(k) for k in keys if k != ""]
    assert values == sorted(values, reverse=True) and len(values) == len(bc.cells)
