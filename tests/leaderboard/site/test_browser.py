"""The published site in a real headless Chromium (Debian's chromium + chromedriver,
driven by Selenium), served from a local http.server on 127.0.0.1.

Install the browser with: apt-get install -y chromium chromium-driver
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.browser import CHROMEDRIVER, chromium, require_browser, serve
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import publish_site
from vlmrobust.leaderboard.synthetic import REAL_VARIANTS, synthetic_submission, write_submission

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
# Would set a global, open an alert, or load /x if any of it ran as markup.
XSS = ('<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2">'
       "\"'&amp;</td>")
N_PLAIN = 9


# A variant name is submission data: it reaches column headers, ER tables and SVG
# tooltips. This one would redirect the page and draw a full-page link if it were markup.
HOSTILE_VARIANT = ('<meta http-equiv="refresh" content="0;url=about:blank">'
                   '<a href="https://evil.example" style="position:fixed;inset:0">pwn</a>')
VARIANTS = (*REAL_VARIANTS[:5], HOSTILE_VARIANT)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("browser-site")
    subs = root / "submissions"
    for i in range(N_PLAIN):
        meta, scores = synthetic_submission(
            i, ("classifier", "clip", "vlm")[i % 3], variants=VARIANTS,
            strategies=("random", "wordnet"))
        if i == 1:
            meta.update(paper_url="https://arxiv.org/abs/2103.00020",
                        bibtex="@article{x, title={<b>x</b>}}")
        if i == 2:
            del scores["datasets"]["bench-c"]
        write_submission(subs, meta, scores)
    meta, scores = synthetic_submission(N_PLAIN, "vlm", variants=VARIANTS,
                                        strategies=("random", "wordnet"), name=XSS)
    meta.update(model_id="evil-model", vision_encoder=XSS, prompt_id=XSS, adapter=XSS)
    scores["model_id"] = "evil-model"
    write_submission(subs, meta, scores)
    publish_site(load_submissions(subs), root / "site", version="1")
    return root / "site", N_PLAIN + 1


@pytest.fixture(scope="module")
def base_url(site: tuple[Path, int]) -> Iterator[str]:
    with serve(site[0]) as url:
        yield url


def test_missing_browser_fails_with_install_hint(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium chromium-driver"):
        require_browser(str(tmp_path / "chromium"), CHROMEDRIVER)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), logs=True) as drv:
        yield drv


def _open(driver: Any, url: str) -> None:
    driver.get(url)
    assert driver.execute_script("return document.readyState") == "complete"


def _column(driver: Any, idx: int) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".filter(r => !r.hidden).map(r => r.cells[arguments[0]].getAttribute('data-v'));", idx))


def _heads(driver: Any) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview thead th'))"
        ".map(h => h.textContent.trim());"))


def _visible(driver: Any) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".filter(r => !r.hidden && r.offsetParent !== null)"
        ".map(r => r.getAttribute('data-model'));"))


def _sorted_ok(values: list[str], numeric: bool, descending: bool) -> bool:
    present = [v for v in values if v != ""]
    # "not measured" always sorts last, whatever the direction
    if values[:len(present)] != present:
        return False
    keys: list[Any] = [float(v) for v in present] if numeric else [v.lower() for v in present]
    return keys == sorted(keys, reverse=descending)


def test_overview_ranked_and_every_column_sorts(driver: Any, base_url: str,
                                                site: tuple[Path, int], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(driver, base_url + "index.html")
    rows = driver.find_elements(By.CSS_SELECTOR, "#overview tbody tr")
    assert len(rows) == site[1]
    # The page's own order is the rank by the headline ER (numbers first, then "—").
    ranks = _column(driver, 0)
    assert _sorted_ok(ranks, numeric=True, descending=False) and ranks[0] == "1"
    heads = driver.find_elements(By.CSS_SELECTOR, "#overview thead th")
    assert len(heads) == len(_heads(driver)) > 10
    for idx, header in enumerate(heads):
        numeric = header.get_attribute("data-type") == "num"
        header.click()
        first = "descending" if numeric else "ascending"
        assert header.get_attribute("aria-sort") == first, _heads(driver)[idx]
        assert _sorted_ok(_column(driver, idx), numeric, first == "descending"), \
            _heads(driver)[idx]
        header.click()
        assert _sorted_ok(_column(driver, idx), numeric, first != "descending"), \
            _heads(driver)[idx]
    # Sorting moves whole rows: the model link stays with its numbers.
    first_row = driver.find_element(By.CSS_SELECTOR, "#overview tbody tr")
    assert first_row.get_attribute("data-model") in first_row.find_element(
        By.TAG_NAME, "a").get_attribute("href")

    _open(driver, base_url + "index.html")
    shot = tmp_path / "leaderboard-overview.png"
    assert driver.save_screenshot(str(shot))
    artifacts = REPO / "build" / "artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, artifacts / "leaderboard-overview.png")
    assert shot.stat().st_size > 10_000


def test_search_and_filters_hide_rows(driver: Any, base_url: str,
                                      site: tuple[Path, int]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(driver, base_url + "index.html")
    box = driver.find_element(By.ID, "q")
    box.send_keys("synthetic clip")
    assert sorted(_visible(driver)) == ["clip-0001", "clip-0004", "clip-0007"]
    assert driver.find_element(By.ID, "shown").text == f"3 of {site[1]} models"
    box.clear()
    box.send_keys("script")  # the hostile name is searchable as the text it is
    assert _visible(driver) == ["evil-model"]
    box.clear()
    box.send_keys("x")
    box.clear()
    driver.execute_script("document.getElementById('q').dispatchEvent(new Event('input'));")
    assert len(_visible(driver)) == site[1]
    Select(driver.find_element(By.ID, "family")).select_by_value("vlm")
    assert sorted(_visible(driver)) == ["evil-model", "vlm-0002", "vlm-0005", "vlm-0008"]
    size = driver.find_element(By.CSS_SELECTOR, "tr[data-model='vlm-0005']").get_attribute(
        "data-size")
    Select(driver.find_element(By.ID, "size")).select_by_value(size)
    same = _visible(driver)
    assert "vlm-0005" in same and all(driver.find_element(
        By.CSS_SELECTOR, f"tr[data-model='{m}']").get_attribute("data-size") == size
        for m in same)
    Select(driver.find_element(By.ID, "family")).select_by_value("")
    Select(driver.find_element(By.ID, "size")).select_by_value("")
    prompt = Select(driver.find_element(By.ID, "prompt"))
    labels = [o.text for o in prompt.options]
    assert XSS in labels  # the hostile prompt id is an option's text, not markup
    prompt.select_by_visible_text(XSS)
    assert _visible(driver) == ["evil-model"]


def test_strategy_switch_changes_the_er_column(driver: Any, base_url: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(driver, base_url + "index.html")
    er = _heads(driver).index("ER (pp)")
    before = driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".map(r => [r.cells[arguments[0]].getAttribute('data-v'), r.cells[arguments[0]]"
        ".textContent]);", er)
    switch = Select(driver.find_element(By.ID, "strategy"))
    assert [o.text for o in switch.options] == ["wordnet", "random"]  # headline first
    switch.select_by_visible_text("random")
    after = driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".map(r => [r.cells[arguments[0]].getAttribute('data-v'), r.cells[arguments[0]]"
        ".textContent]);", er)
    assert len(after) == len(before) and after != before
    for raw, text in after:  # the shown text is the switched value, in pp
        assert text == "—" if raw == "" else abs(float(text.replace("−", "-")) -
                                                  100 * float(raw)) < 0.051
    switch.select_by_visible_text("wordnet")
    assert driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".map(r => [r.cells[arguments[0]].getAttribute('data-v'), r.cells[arguments[0]]"
        ".textContent]);", er) == before


def test_partial_and_provenance_marks(driver: Any, base_url: str) -> None:
    from selenium.webdriver.common.by import By

    _open(driver, base_url + "index.html")
    status = driver.find_element(By.CSS_SELECTOR, "#overview tr[data-model='vlm-0002'] td.status")
    assert "self-reported" in status.text and "partial" in status.text
    assert "no Bench-C" in status.text
    # partial per model kind (issue 37.4): a CLIP model answers every family, so
    # this one, with ImageNet-MCQ, Bench-C and ImageWikiQA only, lacks retrieval
    clip = driver.find_element(By.CSS_SELECTOR, "#overview tr[data-model='clip-0001'] td.status")
    assert "no Retrieval" in clip.text and "no Bench-C" not in clip.text
    _open(driver, base_url + "models/clip-0001.html")
    link = driver.find_element(By.CSS_SELECTOR, "p.links a")
    assert (link.text, link.get_attribute("href")) == ("paper", "https://arxiv.org/abs/2103.00020")
    assert "noopener" in link.get_attribute("rel")
    assert driver.find_element(By.CSS_SELECTOR, "details.bibtex pre").text == \
        "@article{x, title={<b>x</b>}}"


def inlined(driver: Any) -> None:
    """Wait until every shared chart of the page is inline SVG (site.js fetches
    each once its picture has loaded)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("document.querySelectorAll('img.inline').forEach(i => {"
                          " i.loading = 'eager'; });")  # lazy: off-screen ones wait
    WebDriverWait(driver, 30).until(
        lambda d: d.execute_script("return document.querySelectorAll('img.inline').length") == 0)


def test_plots_render_with_size(driver: Any, base_url: str, site: tuple[Path, int]) -> None:
    _open(driver, base_url + "robustness.html")
    inlined(driver)
    sizes = driver.execute_script(
        "return Array.from(document.querySelectorAll('figure')).map(f => {"
        " const s = f.querySelector('svg.plot').getBoundingClientRect();"
        " return [s.width, s.height, f.querySelectorAll('svg.plot circle.pt[tabindex]').length,"
        " f.querySelector('figcaption a').getAttribute('href')]; });")
    # one chart per (strategy, shift): 2 strategies × 5 shifts, each with the
    # reference line and the three families' lines; the VLMs ran two prompts, so
    # each shift also has a prompt chart (reference + the one prompt with a line).
    # Each is a shared SVG file that the page inlines, every point focusable.
    assert len(sizes) == 20
    assert all(w > 100 and h > 100 and n >= 3 for w, h, n, _ in sizes), sizes[:3]
    ns = "{http://www.w3.org/2000/svg}"
    charts = [ET.parse(site[0] / src).getroot() for *_, src in sizes]
    assert all(len(c.findall(f"{ns}circle")) >= 3 for c in charts)
    assert sorted(len([x for x in c.findall(f"{ns}line")
                       if "fit" in (x.get("class") or "").split()]) for c in charts) == \
        [2] * 10 + [4] * 10
    _open(driver, base_url + "bench-c.html")
    inlined(driver)  # the scatter draws every model: a shared file (issue 37.2)
    visible = driver.execute_script(
        "return Array.from(document.querySelectorAll('.plots > figure > svg.plot'))"
        ".filter(s => s.getBoundingClientRect().width > 0)"
        ".map(s => s.querySelectorAll('g.cells path, circle.pt').length);")
    # destructive-vs-corrective scatter + mean RAS + mean ΔAcc heat maps
    assert visible[:3] == [N_PLAIN, 95, 95]
    _open(driver, base_url + "models/clip-0001.html")
    inlined(driver)
    model_plots = driver.execute_script(
        "return Array.from(document.querySelectorAll('.overlay')).map(o => {"
        "const i = o.querySelector('svg.plot').getBoundingClientRect();"
        "const s = o.querySelector('svg.marker').getBoundingClientRect();"
        "return [i.left, i.top, i.width, s.left, s.top, s.width,"
        " o.querySelectorAll('svg.marker circle.me').length]; });")
    # 5 probit plots (overview strategy): the marker lies exactly over the shared plot
    assert len(model_plots) == 5
    for il, it, iw, sl, st_, sw, me in model_plots:
        assert (il, it, iw) == (sl, st_, sw) and iw > 100 and me == 1


def _page_logs(driver: Any, url: str) -> tuple[list[dict[str, Any]], list[str]]:
    driver.get_log("browser")
    driver.get_log("performance")
    _open(driver, url)
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true);"
                          "window.scrollTo(0, document.body.scrollHeight);")
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    urls += driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name);")
    return errors, urls


def test_no_console_errors_and_no_foreign_requests(driver: Any, base_url: str,
                                                    site: tuple[Path, int]) -> None:
    pages = ["index.html", "robustness.html", "bench-c.html", "releases.html", "submit.html",
             "about.html", "models/classifier-0000.html", "models/evil-model.html"]
    for page in pages:
        errors, urls = _page_logs(driver, base_url + page)
        assert errors == [], f"{page}: {errors}"
        assert urls, "the performance log should at least see the page itself"
        foreign = [u for u in urls if not (u.startswith(base_url) or u.startswith("data:"))]
        assert foreign == [], f"{page} requested {foreign}"
        # Only files of the site: the page itself and its shared plots.
        for u in urls:
            if u.startswith(base_url):
                assert (site[0] / u.removeprefix(base_url)).is_file(), u
        if page == "index.html":  # the page, its rows, script and styles (issue 37.2)
            assert {u for u in urls if u.startswith(base_url)} == {
                base_url + p for p in (page, "data/overview.json", "site.js", "style.css")}


def test_injected_markup_is_text_and_runs_nothing(driver: Any, base_url: str) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    for page in ("index.html", "models/evil-model.html", "bench-c.html", "robustness.html",
                 "models/clip-0001.html"):
        _open(driver, base_url + page)
        with pytest.raises(NoAlertPresentException):
            _ = driver.switch_to.alert.text
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
        assert driver.execute_script(
            "return document.querySelectorAll('main script, td script, td img, "
            "main meta, body meta, a[href^=\"https://evil\"]').length") == 0
        assert driver.current_url == base_url + page  # no refresh redirect
    _open(driver, base_url + "index.html")
    assert HOSTILE_VARIANT in _heads(driver)  # the planted variant name is a header's text
    link = driver.find_element(By.CSS_SELECTOR, "#overview tr[data-model='evil-model'] a")
    assert link.text == XSS
    _open(driver, base_url + "models/clip-0001.html")
    shifts = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#er tbody td:nth-child(2)")]
    assert HOSTILE_VARIANT in shifts
    _open(driver, base_url + "models/evil-model.html")
    assert driver.find_element(By.TAG_NAME, "h2").text == XSS
    dds = [d.text for d in driver.find_elements(By.CSS_SELECTOR, "dl.meta dd")]
    assert dds.count(XSS) == 3  # vision encoder, prompt, adapter
