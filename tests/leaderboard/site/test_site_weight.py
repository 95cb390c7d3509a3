"""What a model costs the site (issue 37.2: 400 models under 30 MB, 4,000 under
300 MB, no page over 300 kB). leaderboard.json names each column once (schema 3)
instead of in every row; a model page holds its table of every Bench-C cell as
data for site.js; robustness.html names the first baseline models of a line, not
all. The figures at scale are tests/perf/test_site_size.py's."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site import downloads
from vlmrobust.leaderboard.site.render import render_site
from vlmrobust.leaderboard.synthetic import REAL_VARIANTS, write_synthetic_submissions
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

N = 33  # 11 classifiers: more reference baselines than robustness.html names


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("weight") / "subs"
    write_synthetic_submissions(root, N, variants=REAL_VARIANTS)
    lb = aggregate(load_submissions(root), BaselineSpec(version="t", n_bootstrap=50, min_models=2))
    return render_site(lb, code_version="9.9")


def test_leaderboard_json_rows_are_arrays_under_one_list_of_columns(
        files: dict[str, bytes]) -> None:
    table = json.loads(files["leaderboard.json"])
    assert table["schema_version"] == 3
    columns = table["columns"]
    nested = list(downloads.JSON_ONLY_COLUMNS)
    assert len(set(columns)) == len(columns) and columns[-len(nested):] == nested
    assert len(table["rows"]) == N
    assert all(isinstance(r, list) and len(r) == len(columns) for r in table["rows"])
    # no column name is repeated in a row: the rows' text names none of them
    rows_text = json.dumps(table["rows"])
    assert not [c for c in columns if f'"{c}"' in rows_text]
    pairwise = table["pairwise"]
    assert pairwise["columns"] == list(downloads.PAIRWISE_COLUMNS) and pairwise["rows"]
    assert all(len(r) == len(downloads.PAIRWISE_COLUMNS) for r in pairwise["rows"])
    assert '"higher"' not in json.dumps(pairwise["rows"])


def test_columnar_rows_read_back_as_the_csv(files: dict[str, bytes]) -> None:
    """dict(zip(columns, row)) gives the CSV's row, value for value (the CSV writes
    floats with repr, so the text compares exactly)."""
    table = json.loads(files["leaderboard.json"])
    parsed = list(csv.DictReader(io.StringIO(files["leaderboard.csv"].decode())))
    recs = downloads.as_records(table)
    assert [r["model_id"] for r in recs] == [r["model_id"] for r in parsed]
    for rec, row in zip(recs, parsed, strict=True):
        assert set(row) == set(rec) - set(downloads.JSON_ONLY_COLUMNS)
        for k, text in row.items():
            v = rec[k]
            assert text == ("" if v is None else repr(v) if isinstance(v, float) else str(v)), k
        assert rec["headline_er"]["value"] == rec["headline_er_value"]
    lines = list(csv.DictReader(io.StringIO(files["pairwise.csv"].decode())))
    assert len(lines) == len(table["pairwise"]["rows"])
    tests = downloads.as_records(table["pairwise"])
    assert [t["higher"] for t in tests] == [t["higher"] for t in lines]


def test_leaderboard_json_costs_under_5_kb_a_model(files: dict[str, bytes]) -> None:
    """Six ImageNet variants × 3 strategies, 19 × 5 Bench-C cells: a schema-2 row
    was 10.5 kB (its 176 names 6 kB of it)."""
    rows = json.loads(files["leaderboard.json"])["rows"]
    per_model = len(json.dumps(rows, separators=(",", ":"), ensure_ascii=False)) / N
    assert per_model < 5_000, per_model


def test_as_records_refuses_a_short_row() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 values for 2 columns"):
        downloads.as_records({"columns": ["a", "b"], "rows": [[1]]})


def test_model_page_holds_its_cells_as_data_under_40_kb(files: dict[str, bytes]) -> None:
    """A model with the real variant set and 95 Bench-C cells: 50.7 kB with the
    cells as HTML rows (22 kB of them), 35.4 kB with them as data."""
    page = files["models/classifier-0000.html"].decode()
    table = page.split('id="bench-c-cells"')[1].split("</table>")[0]
    assert "<td" not in table
    rows = json.loads(re.search(r"data-fill='([^']*)'", table).group(1))  # type: ignore[union-attr]
    assert len(rows) == 95 and all(len(r) == 15 for r in rows)
    assert len(files["models/classifier-0000.html"]) < 40_000


def test_robustness_names_ten_baseline_models_a_line(files: dict[str, bytes]) -> None:
    """Every name of every line's baselines grew the page by 4 kB a line at 400
    models (252 kB); now the first ten and a count."""
    page = files["robustness.html"].decode()
    cells = re.findall(r'<td class="t name">(.*?)</td>', page, re.S)
    ref = [c for c in cells if "classifier-" in c]
    assert ref and all(len(re.findall(r"classifier-\d{4}", c)) == 10 for c in ref)
    assert all("… and 1 more (every one in" in c for c in ref)


def test_charts_of_every_model_are_shared_files(files: dict[str, bytes]) -> None:
    """bench-c.html's scatter drew all models inline (17 kB a hundred models); it is
    a plot file the page shows, as holistic.html's OOD and factor charts are."""
    page = files["bench-c.html"].decode()
    assert '<img class="inline" src="plots/bench-c-ras.svg"' in page and "<circle" not in page
    assert files["plots/bench-c-ras.svg"].decode().count("<circle") >= N
