"""Issue 37.2 in Chromium: an overview of more models than one page holds. The
page arrives with its first page of rows; the script loads data/overview.json and
then sorts, filters, switches strategy and pages over every model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.browser import chromium, serve
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.paged import PAGE_ROWS
from vlmrobust.leaderboard.site.publish import build_site
from vlmrobust.leaderboard.synthetic import write_synthetic_submissions

pytestmark = [pytest.mark.browser, pytest.mark.slow]

N = 2 * PAGE_ROWS + 17


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paged-site")
    write_synthetic_submissions(root / "subs", N, strategies=("random", "wordnet"))
    build_site(load_submissions(root / "subs"), root / "site")
    return root / "site"


@pytest.fixture(scope="module")
def page(site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with serve(site) as url, chromium(tmp_path_factory.mktemp("profile")) as drv:
        drv.get(url + "index.html")
        yield drv


def _loaded(driver: Any) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "const t = document.getElementById('overview');"
        "return !!(t.paged && t.paged.rows);"))


def _rows(driver: Any, col: int = 0) -> list[tuple[str, str]]:
    return [tuple(x) for x in driver.execute_script(
        "return Array.from(document.querySelectorAll('#overview tbody tr'))"
        ".map(r => [r.getAttribute('data-model'), r.cells[arguments[0]].getAttribute('data-v')]);",
        col)]


def test_pages_sort_and_filter_over_every_model(page: Any, site: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _loaded(page)
    every = json.loads((site / "data" / "overview.json").read_text())["rows"]
    ranked = [r["a"]["model"] for r in every]
    pager = page.find_element(By.ID, "overview-pager")
    assert pager.is_displayed() and not page.find_element(By.ID, "overview-nojs").is_displayed()
    assert [m for m, _ in _rows(page)] == ranked[:PAGE_ROWS]
    assert pager.find_element(By.TAG_NAME, "output").text == f"1–{PAGE_ROWS} of {N}"
    prev, nxt = pager.find_elements(By.TAG_NAME, "button")
    nxt.click()
    nxt.click()
    assert [m for m, _ in _rows(page)] == ranked[2 * PAGE_ROWS:]
    assert not nxt.is_enabled() and prev.is_enabled()
    # sorting by params puts the largest of all N models first, not of one page
    heads = page.find_elements(By.CSS_SELECTOR, "#overview thead th")
    params = [h.text for h in heads].index("Params")
    heads[params].click()
    top = max(every, key=lambda r: float(r["c"][params][0]))["a"]["model"]
    assert _rows(page, params)[0][0] == top
    assert pager.find_element(By.TAG_NAME, "output").text.startswith("1–")
    # a filter counts over every row
    Select(page.find_element(By.ID, "family")).select_by_value("clip")
    clips = [r for r in every if r["a"]["family"] == "clip"]
    assert page.find_element(By.ID, "shown").text == f"{len(clips)} of {N} models"
    assert {m for m, _ in _rows(page)} <= {r["a"]["model"] for r in clips}
    assert len(_rows(page)) == min(PAGE_ROWS, len(clips))
    # the strategy switch changes the ER column of a row beyond the first page too
    Select(page.find_element(By.ID, "family")).select_by_value("")
    er = [h.text for h in heads].index("ER (pp)")
    nxt.click()
    before = dict(_rows(page, er))
    Select(page.find_element(By.ID, "strategy")).select_by_visible_text("random")
    after = dict(_rows(page, er))
    model = next(m for m in after if m in before and after[m] != before[m])
    row = next(r for r in every if r["a"]["model"] == model)
    assert after[model] == row["c"][er][6][1][0]  # the random variant's sort key
