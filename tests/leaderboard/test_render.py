"""Rendering: escaping, CSP, downloads, determinism, SVG geometry."""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.downloads import JSON_ONLY_COLUMNS, as_records
from vlmrobust.leaderboard.site.render import render_site, site_assets
from vlmrobust.leaderboard.synthetic import synthetic_submission, write_submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

SPEC = BaselineSpec(version="t", n_bootstrap=100, min_models=2)
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>\'"&'
FORMULA = '=HYPERLINK("http://evil","click")'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], Path]:
    root = tmp_path_factory.mktemp("render") / "subs"
    for i in range(6):
        write_submission(root, *synthetic_submission(i, ("classifier", "clip", "vlm")[i % 3]))
    meta, scores = synthetic_submission(6, "clip", name=PAYLOAD)
    meta.update(model_id="evil", vision_encoder=FORMULA)
    scores["model_id"] = "evil"
    write_submission(root, meta, scores)
    meta, scores = synthetic_submission(7, "vlm")
    meta["model_id"] = scores["model_id"] = "no-benchc"
    del scores["datasets"]["bench-c"], scores["datasets"]["imagewikiqa"]
    write_submission(root, meta, scores)
    lb = aggregate(load_submissions(root), SPEC)
    return render_site(lb, code_version="9.9"), root


def test_pages_and_rows(site: tuple[dict[str, bytes], Path]) -> None:
    files, _ = site
    assert {"index.html", "robustness.html", "bench-c.html", "releases.html",
            "leaderboard.csv", "leaderboard.json", "models/evil.html",
            "models/no-benchc.html"} <= set(files)
    index = files["index.html"].decode()
    assert len(re.findall(r"<tr data-model=", index)) == 8
    # Not measured → an em dash with an empty sort key, never a fake number.
    row = re.search(r'<tr data-model="no-benchc"[^>]*>(.*?)</tr>', index, re.S)
    assert row is not None
    keys = re.findall(r'<td[^>]* data-v="([^"]*)"', row.group(1))
    assert keys[-5:-1] == ["", "", "", ""]  # Bench-C Acc, ΔAcc, RAS, ImageWikiQA
    assert keys[-1] == "self-reported partial"
    assert "no Bench-C; no ImageWikiQA" in row.group(1)
    # every number of every row is leaderboard.json's (itself checked column by
    # column against the scorer in test_leaderboard_downloads_bench_c)
    table = json.loads(files["leaderboard.json"])
    headline = table["overview_strategy"]
    strategies = sorted({k.split(":")[2] for k in table["columns"] if k.startswith("imagenet-mcq:")},
                        key=lambda st: (st != headline, st))  # the switch: the overview's first
    variants = list(dict.fromkeys(k.split(":")[1] for k in table["columns"] if k.startswith("imagenet-mcq:")))
    n_er = n_bc = 0
    for r in as_records(table):
        tr = re.search(rf'<tr data-model="{re.escape(r["model_id"])}"[^>]*>(.*?)</tr>', index, re.S)
        assert tr is not None
        cells = re.findall(r"<td([^>]*)>", tr.group(1))
        v = [re.search(r'data-v="([^"]*)"', c).group(1) for c in cells]  # type: ignore[union-attr]

        def num(x: str) -> float | None:
            return float(x) if x else None

        assert r["headline_er_strategy"] in (None, headline)
        assert (num(v[5]), num(v[6]), num(v[7])) == (
            r["headline_er_value"], r["headline_er_ci_low"], r["headline_er_ci_high"]), r["model_id"]
        n_er += r["headline_er_value"] is not None
        for j, variant in enumerate(variants):
            sw = dict(re.findall(r'data-s(\d+)="([^"]*)"', cells[8 + j]))
            assert [num(sw[str(i)]) for i in range(len(strategies))] == [
                r.get(f"imagenet-mcq:{variant}:{st}:accuracy") for st in strategies], (r["model_id"], variant)
            assert num(v[8 + j]) == r.get(f"imagenet-mcq:{variant}:{headline}:accuracy")
        bc = [num(x) for x in v[8 + len(variants):8 + len(variants) + 4]]
        assert bc == [r.get("bench-c:kappa_weighted:acc"), r.get("bench-c:kappa_weighted:delta_acc"),
                      r.get("bench-c:kappa_weighted:ras"), r.get("imagewikiqa:accuracy")], r["model_id"]
        n_bc += None not in bc
    # the ER and Bench-C columns were compared on numbers, not only on blanks
    assert n_er >= 4 and n_bc == len(table["rows"]) - 1


def test_model_supplied_text_is_escaped_everywhere(site: tuple[dict[str, bytes], Path]) -> None:
    files, _ = site
    for name, data in files.items():
        if not name.endswith(".html"):
            continue
        text = data.decode()
        assert "<script>alert" not in text and "<img src=x" not in text, name
    index = files["index.html"].decode()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" \
        "&#39;&#34;&amp;" in index
    # Every SVG is well-formed XML and carries the name as text in its tooltips.
    svgs = [files[n].decode() for n in files if n.startswith("plots/fit-")]
    assert svgs
    titles = []
    for s in svgs:
        titles += [t.text or "" for t in ET.fromstring(s).iter(
            "{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith(PAYLOAD + ":") for t in titles)


def test_only_the_sites_script_file_may_run(site: tuple[dict[str, bytes], Path]) -> None:
    """One <script>: the site's site.js at the root, empty; no inline script, and a
    policy that allows none (issue 37.2 moved the script and styles out of every
    page: they were a quarter of a model page)."""
    files, _ = site
    script, style, _ = site_assets()
    assert files["site.js"].decode() == script and files["style.css"].decode() == style
    for name, root in (("index.html", ""), ("models/evil.html", "../")):
        text = files[name].decode()
        assert re.findall(r"<script[^>]*>(.*?)</script>", text, re.S) == [""]
        assert f'<script src="{root}site.js"></script>' in text
        assert f'<link rel="stylesheet" href="{root}style.css">' in text
        csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
        assert csp is not None
        policy = html.unescape(csp.group(1))  # as the browser reads the attribute
        assert "script-src 'self';" in policy and "unsafe-inline'; img" in policy
        assert "default-src 'none'" in policy and "'unsafe-eval'" not in policy
        assert not re.search(r'(?:src|href)="(?:https?:)?//', text)


def test_downloads_keep_full_precision_and_neutralise_formulas(
        site: tuple[dict[str, bytes], Path]) -> None:
    files, root = site
    table = json.loads(files["leaderboard.json"])
    rows = {r["model_id"]: r for r in as_records(table)}
    scores = json.loads((root / "clip-0001" / "scores.json").read_text())
    acc = scores["datasets"]["imagenet-mcq"]["configs"]["sample-rendition-wordnet"]["accuracy"]
    assert rows["clip-0001"]["imagenet-mcq:sample-rendition:wordnet:accuracy"] == acc
    assert rows["evil"]["name"] == PAYLOAD and rows["evil"]["vision_encoder"] == FORMULA
    assert rows["no-benchc"]["bench-c:kappa_weighted:ras"] is None
    assert rows["no-benchc"]["bench-c:plain:ras"] is None
    assert table["fits"] and all(f["transform"] == "probit" for f in table["fits"])
    parsed = list(csv.DictReader(io.StringIO(files["leaderboard.csv"].decode())))
    assert len(parsed) == 8 and list(parsed[0]) == [c for c in table["columns"] if c not in JSON_ONLY_COLUMNS]
    by_id = {r["model_id"]: r for r in parsed}
    assert by_id["evil"]["vision_encoder"] == "'" + FORMULA
    assert float(by_id["clip-0001"]["imagenet-mcq:sample-rendition:wordnet:accuracy"]) == acc
    assert by_id["no-benchc"]["bench-c:kappa_weighted:ras"] == ""


def test_rendering_is_deterministic(site: tuple[dict[str, bytes], Path]) -> None:
    files, root = site
    again = render_site(aggregate(load_submissions(root), SPEC), code_version="9.9")
    assert again == files


def test_probit_scatter_geometry() -> None:
    out = svg.probit_scatter([("a", 0.5, 0.3, True), ("b", 0.8, 0.6, False)], slope=1.0,
                             intercept=0.0, chance=0.2, transform="probit", x_name="ref",
                             y_name="shift", title="t")
    root = ET.fromstring(str(out))
    ns = "{http://www.w3.org/2000/svg}"
    fit_line = root.find(f"{ns}line[@class='fit']")
    ident = root.find(f"{ns}line[@class='identity']")
    assert fit_line is not None and ident is not None
    # slope 1, intercept 0 is the identity: both segments coincide.
    assert [fit_line.get(k) for k in ("x1", "y1", "x2", "y2")] == \
        [ident.get(k) for k in ("x1", "y1", "x2", "y2")]
    circles = root.findall(f"{ns}circle")
    assert [c.get("fill") for c in circles] == ["#1f77b4", "#fff"]  # baseline filled
    # Points sit where the frame maps their probits.
    lo = min(ndtri([0.5, 0.3, 0.8, 0.6, 0.2]))
    hi = max(ndtri([0.5, 0.3, 0.8, 0.6, 0.2]))
    pad = 0.08 * (hi - lo)
    frame = svg.Frame(lo - pad, hi + pad, lo - pad, hi + pad)
    assert float(circles[1].get("cx", "nan")) == pytest.approx(frame.px(float(ndtri(0.8))),
                                                               abs=0.06)
    assert float(circles[1].get("cy", "nan")) == pytest.approx(frame.py(float(ndtri(0.6))),
                                                               abs=0.06)


def test_clip_line_closed_form() -> None:
    f = svg.Frame(0.0, 10.0, 0.0, 10.0)
    assert svg._clip_line(f, 2.0, 0.0) == (0.0, 0.0, 5.0, 10.0)
    assert svg._clip_line(f, 0.0, 3.0) == (0.0, 3.0, 10.0, 3.0)
    assert svg._clip_line(f, 1.0, 20.0) is None


def test_heatmap_cells_and_colours() -> None:
    rows = ["fog", "snow"]
    vals: dict[tuple[str, int], float | None] = {
        (r, s): (s - 3) / 2 for r in rows for s in range(1, 6)}
    vals[("snow", 5)] = None
    out = ET.fromstring(str(svg.heatmap(rows, [1, 2, 3, 4, 5], vals, title="RAS", vmax=1.0)))
    group = next(g for g in out.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "cells")
    cells = list(group.iter("{http://www.w3.org/2000/svg}path"))
    assert len(cells) == 10
    fills = [c.get("fill") for c in cells]
    assert fills[2] == "#ffffff" and fills[0] == svg.diverging_colour(-1.0, 1.0)
    assert fills[4] == svg.diverging_colour(1.0, 1.0) == "#2166ac"
    assert fills[9] == "#dddddd"
    assert np.all([c.find("{http://www.w3.org/2000/svg}title") is not None for c in cells])
    # cell (snow, 2): row 1, column 1 of 26 × 16 px cells from (120, 30)
    assert cells[6].get("d") == "M146 46h25v15h-25z"
    assert cells[6].findtext("{http://www.w3.org/2000/svg}title") == "severity 2: -0.500"


class _Cells(HTMLParser):
    """Text of each overview row's first cell, as a browser would show it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.names: dict[str, str] = {}
        self._row: str | None = None
        self._in_link = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-model"):
            self._row = a["data-model"]
            self.names[self._row] = ""
        elif tag == "a" and self._row is not None and not self.names[self._row]:
            self._in_link = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._in_link = False
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._in_link and self._row is not None:
            self.names[self._row] += data


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
               max_size=40))
def test_any_name_renders_as_exactly_that_text(site: tuple[dict[str, bytes], Path],
                                               name: str) -> None:
    _, root = site
    subs = tuple(s for s in load_submissions(root)
                 if s.model_id in ("clip-0001", "classifier-0000"))
    renamed = tuple(dataclasses.replace(s, meta=dataclasses.replace(s.meta, name=name))
                    if s.model_id == "clip-0001" else s for s in subs)
    index = render_site(aggregate(renamed, SPEC))["index.html"].decode()
    parser = _Cells()
    parser.feed(index)
    assert parser.names["clip-0001"] == name
    assert len(parser.names) == len(subs)


def test_model_page_marks_the_model_in_the_reference_plots(
        site: tuple[dict[str, bytes], Path]) -> None:
    files, _ = site
    page = files["models/clip-0001.html"].decode()
    # One shift (sample-rendition) × the overview strategy: the shared family plot
    # as an image, and over it a marker SVG of the same frame with just this model.
    overlays = re.findall(r'<div class="overlay"><img class="inline" src="\.\./(plots/fit-\d+\.svg)"[^>]*>'
                          r'(<svg .*?</svg>)</div>', page, re.S)
    assert len(overlays) == 1
    path, marker = overlays[0]
    ns = "{http://www.w3.org/2000/svg}"
    shared = ET.fromstring(files[path].decode())
    circles = shared.findall(f"{ns}circle")
    assert len(circles) == 8  # every model, measured against the one reference line
    mine = ET.fromstring(marker)
    assert (mine.get("width"), mine.get("height"), mine.get("viewBox")) == \
        (shared.get("width"), shared.get("height"), shared.get("viewBox"))
    (me,) = mine.findall(f"{ns}circle")
    title = me.find(f"{ns}title")
    assert title is not None and (title.text or "").startswith("Synthetic clip 1:")
    # The marker sits exactly where the shared plot draws this model.
    same = [c for c in circles if (c.findtext(f"{ns}title") or "").startswith("Synthetic clip 1:")]
    assert [(c.get("cx"), c.get("cy")) for c in same] == [(me.get("cx"), me.get("cy"))]


def test_board_without_imagenet_scores(tmp_path: Path) -> None:
    for i in range(3):
        meta, scores = synthetic_submission(i, "vlm")
        del scores["datasets"]["imagenet-mcq"]
        if i == 0:
            del scores["datasets"]["bench-c"]
        write_submission(tmp_path, meta, scores)
    lb = aggregate(load_submissions(tmp_path), SPEC)
    assert lb.fits == () and lb.variants == ()
    files = render_site(lb)
    assert "No ImageNet-MCQ scores among the submissions." in files["robustness.html"].decode()
    index = files["index.html"].decode()
    assert len(re.findall(r"<tr data-model=", index)) == 3
    assert 'data-v=""' in re.search(r'<tr data-model="vlm-0000"[^>]*>(.*?)</tr>', index,
                                     re.S).group(1)  # type: ignore[union-attr]


def test_model_page_tables_hold_the_submissions_numbers(site: tuple[dict[str, bytes], Path]) -> None:
    """A model page's per-config table (n, accuracy and interval, ECE/NLL before and
    after temperature scaling, T) holds its scores.json numbers row by row, and its
    ER table leaderboard.json's ER of each (strategy, shift) with the two accuracies."""
    files, root = site
    scores = json.loads((root / "clip-0001" / "scores.json").read_text())
    row = next(r for r in as_records(json.loads(files["leaderboard.json"])) if r["model_id"] == "clip-0001")
    page = files["models/clip-0001.html"].decode()
    configs = scores["datasets"]["imagenet-mcq"]["configs"]
    for name, c in configs.items():
        tr = re.search(rf'<tr><td class="t">{re.escape(name)}</td>(.*?)</tr>', page, re.S)
        assert tr is not None, name
        got = [float(v) if v else None for v in re.findall(r'data-v="([^"]*)"', tr.group(1))]
        assert got == [c["n"], c["accuracy"], *c["accuracy_ci"], c["ece"], c["nll"], c["ece_ts"],
                       c["nll_ts"], c["temperature"]], name
    er = page.split('<table id="er"')[1].split("</table>")[0]
    shown = 0
    for tr in re.findall(r"<tr><td class=\"t\">(.*?)</tr>", er, re.S):
        strategy, shift = re.findall(r'<td class="t">([^<]*)</td>', '<td class="t">' + tr)[:2]
        v = [float(x) if x else None for x in re.findall(r'data-v="([^"]*)"', tr)]
        ref = next(c for c in configs.values() if c["strategy"] == strategy and c["variant"] == "sample-photo")
        sh = next(c for c in configs.values() if c["strategy"] == strategy and c["variant"] == shift)
        assert v[:3] == [ref["accuracy"], sh["accuracy"], row[f"er:{strategy}:{shift}"]], (strategy, shift)
        shown += v[2] is not None
    assert shown >= 1
