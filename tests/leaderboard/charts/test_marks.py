"""Issue 37.3: charts people can read. Titles fit their chart, legends list only
what is drawn, points at 0% / 100% are marked as clipped, every point takes
keyboard focus, and a scatter of N models draws N points even when a coordinate
is undefined."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from scipy.special import ndtri

from vlmrobust.leaderboard.charts import marks, svg
from vlmrobust.leaderboard.charts.probit import ChartLine, ChartPoint, shift_chart

NS = "{http://www.w3.org/2000/svg}"
# the failure-modes chart's title, cut to "(seed 004 " before
LONG_TITLE = "FDR against the number of questions (seed 004 Fig. 4)"


def _root(markup: object) -> ET.Element:
    return ET.fromstring(str(markup))


def _title_right_edges(root: ET.Element) -> list[float]:
    """Right end of each bold text at its font size (0.62 em a character)."""
    out = []
    for t in root.iter(f"{NS}text"):
        if t.get("font-weight") == "bold":
            size = float(t.get("font-size") or 11)
            out.append(float(t.get("x", "0")) + len(t.text or "") * marks.CHAR_EM * size)
    return out


def test_long_titles_fit_their_chart() -> None:
    chart = _root(svg.log_curves([("rl · answerer", "#000", [(6, 0.5), (128, 0.2)])],
                                 x_label="question slots asked (record order)",
                                 y_label="FDR", title=LONG_TITLE))
    width = float(chart.get("width", "0"))
    edges = _title_right_edges(chart)
    assert edges and max(edges) <= width
    assert "".join(t.text or "" for t in chart.iter(f"{NS}text")
                   if t.get("font-weight") == "bold").replace(" ", "") == \
        LONG_TITLE.replace(" ", "")
    for n in (80, 140):  # wrapped, still whole
        lines = marks.title_marks("word " * (n // 5), 360, 58, 26)
        assert 1 <= len(lines) <= 2


def test_log_curves_x_label_clear_of_the_legend() -> None:
    chart = _root(svg.log_curves([("a", "#000", [(2, 0.5), (9, 0.2)]),
                                  ("b", "#111", [(2, 0.4), (9, 0.3)])],
                                 x_label="K", y_label="acc", title="t"))
    ys = {t.text: float(t.get("y", "0")) for t in chart.iter(f"{NS}text")}
    assert ys["K"] + 10 <= min(ys["a"], ys["b"])


def test_legend_lists_only_drawn_lines() -> None:
    points = [ChartPoint("m1", "clip", 0.6, 0.5, False), ChartPoint("m2", "clip", 0.7, 0.6, False),
              ChartPoint("m3", "vlm", 0.8, 0.7, False)]
    lines = [ChartLine("clip line", 1.0, -0.2, "#E69F00"),
             ChartLine("far away", 0.0, 50.0, "#009E73")]  # never inside the frame
    chart = _root(shift_chart(points, lines, group_colours={
        "classifier": "#0072B2", "clip": "#E69F00", "vlm": "#009E73", "other": "#CC79A7"},
        chance=None, transform="probit", x_name="ref", y_name="shift", title="t",
        identity=False))
    legend = [t.text for t in chart.iter(f"{NS}text") if t.get("x") == "86"]
    # no reference line drawn, no classifier/other points or lines: not listed;
    # vlm has points but its line is off the chart: listed as points
    assert legend == ["clip", "vlm (points, no line)"]


def test_points_at_100_percent_are_marked_clipped() -> None:
    pts = [("a", 0.5, 0.3, True), ("b", 0.8, 1.0, False), ("c", 0.7, 0.6, False)]
    chart = _root(svg.probit_scatter(pts, slope=None, intercept=None, chance=0.2,
                                     transform="probit", x_name="ref", y_name="shift",
                                     title="t"))
    circles = chart.findall(f"{NS}circle")
    clipped = [c for c in circles if "clipped" in (c.get("class") or "").split()]
    assert len(clipped) == 1
    title = clipped[0].find(f"{NS}title")
    assert title is not None and "shift at 100%" in (title.text or "")
    assert len(chart.findall(f"{NS}path[@class='clip']")) == 1
    # the axis is fitted to the other points: probit(0.8) stays well inside, and the
    # clipped point sits on the frame's top edge
    f = svg.Frame(0, 1, 0, 1)
    top = f.top
    assert abs(float(clipped[0].get("cy", "nan")) - top) < 0.06
    assert max(ndtri([0.5, 0.3, 0.8, 0.7, 0.6, 0.2])) < 1.0


def test_every_point_takes_focus() -> None:
    chart = _root(svg.probit_scatter([("a", 0.5, 0.3, True), ("b", 0.8, 0.6, False)],
                                     slope=1.0, intercept=0.0, chance=0.2, transform="probit",
                                     x_name="r", y_name="s", title="t"))
    assert [c.get("tabindex") for c in chart.findall(f"{NS}circle")] == ["0", "0"]


def test_scatter_draws_a_point_with_an_undefined_coordinate() -> None:
    # the demo's Bench-C scatter: 3 models, one without corrective RAS
    pts = [("lite0", -0.146, None), ("lite1", -0.276, -0.146), ("lite2", -0.108, -0.084)]
    chart = _root(svg.linear_scatter(pts, x_label="x", y_label="y", title="t",
                                     undefined="undefined (no such questions)"))
    circles = chart.findall(f"{NS}circle")
    assert len(circles) == 3
    na = [c for c in circles if "na" in (c.get("class") or "").split()]
    assert len(na) == 1 and na[0].get("fill") == "#fff"
    title = na[0].find(f"{NS}title")
    assert title is not None and title.text == "lite0: -0.146, undefined (no such questions)"
    f = svg.Frame(0, 1, 0, 1)
    assert float(na[0].get("cy", "nan")) == f.height - f.bottom
