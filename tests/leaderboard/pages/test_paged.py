"""Issue 37.2: the overview holds its first page of rows and data/overview.json
every row, from the same cells, so the page reads without JavaScript and stays
small however many models there are."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.paged import PAGE_ROWS, Cell, Row, rows_json
from vlmrobust.leaderboard.site.render import OVERVIEW_ROWS, render_site
from vlmrobust.leaderboard.synthetic import write_synthetic_submissions
from vlmrobust.leaderboard.trust.baselines import load_baselines

N = PAGE_ROWS + 23


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("paged") / "subs"
    write_synthetic_submissions(root, N)
    return render_site(aggregate(load_submissions(root), load_baselines(None)))


def test_first_page_in_the_html_every_row_in_the_json(files: dict[str, bytes]) -> None:
    index = files["index.html"].decode()
    rows = json.loads(files[OVERVIEW_ROWS])["rows"]
    assert len(rows) == N
    html_rows = re.findall(r'<tr data-model="([^"]*)"[^>]*>(.*?)</tr>', index, re.S)
    assert len(html_rows) == PAGE_ROWS
    # the same models in the same (rank) order, and the same sort keys and texts
    assert [m for m, _ in html_rows] == [r["a"]["model"] for r in rows[:PAGE_ROWS]]
    for (_, tr), row in zip(html_rows, rows, strict=False):
        keys = [html.unescape(v) for v in re.findall(r'<td[^>]* data-v="([^"]*)"', tr)]
        assert keys == [c[0] for c in row["c"]]
    ranks = [float(r["c"][0][0]) for r in rows if r["c"][0][0]]
    assert ranks == sorted(ranks) and len(ranks) > PAGE_ROWS
    # the reader without JavaScript is told where the other rows are
    assert f"The first {PAGE_ROWS} of {N} models" in index


def test_index_stays_small(files: dict[str, bytes]) -> None:
    """The page does not grow with the models past the first page."""
    per_row = len(files[OVERVIEW_ROWS]) / N
    assert len(files["index.html"]) < 40_000 + PAGE_ROWS * 2.5 * per_row


def test_cells_are_checked_and_packed() -> None:
    assert Cell("1", "1", a="models/m.html").packed() == ["1", "1", "", "", "models/m.html"]
    with pytest.raises(ValueError, match="site-relative"):
        Cell("1", "x", a="https://evil.example/")
    with pytest.raises(ValueError, match="site-relative"):
        Cell("1", "x", a="javascript:alert(1)")
    with pytest.raises(TypeError, match=r"Cell\.v"):
        Cell(0.5, "x")
    with pytest.raises(ValueError, match="lower-case"):
        Row({"onclick": "x", "Bad": "y"}, ())
    text = "<script>alert(1)</script>"
    packed = json.loads(rows_json([Row({"model": text}, (Cell("", text),))]))
    assert packed["rows"][0]["c"][0][1] == text  # JSON text, written with textContent


def test_render_site_without_index_rows_is_refused(tmp_path: Path) -> None:
    """check_site counts the page's rows against the JSON's."""
    from vlmrobust.leaderboard.site.publish import PublishError, check_site

    root = tmp_path / "subs"
    write_synthetic_submissions(root, 3)
    files = render_site(aggregate(load_submissions(root), load_baselines(None)))
    files[OVERVIEW_ROWS] = rows_json([])
    (tmp_path / "site").mkdir()
    for rel, data in files.items():
        (tmp_path / "site" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "site" / rel).write_bytes(data)
    with pytest.raises(PublishError, match="overview rows"):
        check_site(tmp_path / "site", files, 3)


def _table(n: int, cell: str = '<td data-v="{i}" title="t{i}">{i}<span class="tie">≈</span></td>'
           ) -> str:
    rows = "".join(f'<tr data-model="m{i}">\n<td class="t name" data-v="M &amp; {i}">'
                   f'<a href="models/m{i}.html">M &amp; {i}</a></td>' + cell.format(i=i)
                   + "</tr>\n" for i in range(n))
    return ('<h3>x</h3>\n<div class="wrap"><table class="sortable">\n<thead><tr><th>Model</th>'
            f"<th>v</th></tr></thead>\n<tbody>\n{rows}</tbody></table></div>")


def test_long_rendered_tables_keep_their_first_page() -> None:
    """classification.html and holistic.html: a sortable table longer than a page
    keeps its first page (the same markup) and moves every row to a JSON file."""
    from vlmrobust.leaderboard.site.paged import page_tables

    html = _table(PAGE_ROWS + 9)
    out, files = page_tables("classification.html", html, "")
    assert list(files) == ["data/classification-0.json"]
    rows = json.loads(files["data/classification-0.json"])["rows"]
    assert len(rows) == PAGE_ROWS + 9
    assert rows[3]["a"] == {"model": "m3"}
    assert rows[3]["c"] == [["M & 3", "M & 3", "t name", "", "models/m3.html"],
                            ["3", "3", "", "t3", "", [["tie", "≈", ""]]]]
    kept = re.findall(r"<tr data-model=.*?</tr>", out, re.S)
    assert len(kept) == PAGE_ROWS
    # the first page is the original markup, attribute for attribute
    assert kept[0].replace("\n", "") == re.findall(r"<tr data-model=.*?</tr>", html, re.S)[0] \
        .replace("\n", "")
    assert 'data-rows="data/classification-0.json"' in out and 'id="classification-t0-pager"' in out
    # short tables and cells the model cannot carry stay whole
    assert page_tables("holistic.html", _table(PAGE_ROWS), "") == (_table(PAGE_ROWS), {})
    # a download link (classification's per-class CSVs) keeps its download attribute
    dl = _table(PAGE_ROWS + 1, '<td class="t"><a href="downloads/m{i}.csv" download>csv</a></td>')
    out, files = page_tables("classification.html", dl, "")
    assert json.loads(files["data/classification-0.json"])["rows"][0]["c"][1] == \
        ["csv", "csv", "t", "", "downloads/m0.csv", [], [], 1]
    assert '<a href="downloads/m0.csv" download>csv</a>' in out
    odd = _table(PAGE_ROWS + 1, '<td data-v="{i}"><b>{i}</b></td>')
    assert page_tables("holistic.html", odd, "") == (odd, {})
