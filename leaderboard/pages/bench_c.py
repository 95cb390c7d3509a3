"""What the site shows of Bench-C: the corruption order, per-corruption means,
the mean corruption × severity heat maps over models (a model's own maps are drawn
by the site script from its page's table of every cell) and the Bench-C page's two
model tables as :class:`.paged.Row` cells (the aggregate table and seed 003's
sensitivity / accuracy-gain table; the page renders the first page of each, the
site script pages through data/bench-c*.json; issue 37.2)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from vlmrobust.leaderboard.board import BENCH_C, Leaderboard
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.pages.formatting import data_v, num, pct, pvalue, signed, tone
from vlmrobust.leaderboard.site.paged import Cell, Row
from vlmrobust.leaderboard.submission import QUADRANTS, TRANSITIONS, BenchCScores, Submission

# imagecorruptions' order (Hendrycks & Dietterich 2019: noise, blur, weather, digital, extra).
CORRUPTIONS = ("gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
               "motion_blur", "zoom_blur", "snow", "frost", "fog", "brightness", "contrast",
               "elastic_transform", "pixelate", "jpeg_compression", "speckle_noise",
               "gaussian_blur", "spatter", "saturate")
SEVERITIES = (1, 2, 3, 4, 5)


def corruption_order(names: set[str]) -> list[str]:
    return [c for c in CORRUPTIONS if c in names] + sorted(names - set(CORRUPTIONS))


def mean_maps(subs: Sequence[Submission]) -> tuple[Markup, Markup] | None:
    sums: dict[str, dict[tuple[str, int], list[float]]] = {"ras": {}, "delta_acc": {}}
    for s in subs:
        d = s.datasets.get(BENCH_C)
        if d is None or d.bench_c is None:
            continue
        for c in d.bench_c.cells:
            for k in sums:
                v = c.metrics.get(k)
                if v is not None:
                    sums[k].setdefault((c.corruption, c.severity), []).append(v)
    if not sums["ras"] and not sums["delta_acc"]:
        return None
    rows = corruption_order({k[0] for m in sums.values() for k in m})
    mean = {k: {cell: sum(v) / len(v) for cell, v in m.items()} for k, m in sums.items()}
    vals: dict[str, dict[tuple[str, int], float | None]] = {
        k: dict(v) for k, v in mean.items()}
    return (svg.heatmap(rows, SEVERITIES, vals["ras"], title="mean RAS over models", vmax=1.0),
            svg.heatmap(rows, SEVERITIES, vals["delta_acc"], title="mean ΔAcc over models",
                        vmax=1.0))


def per_corruption(s: Submission) -> list[tuple[str, dict[str, float | None]]]:
    """Bench-C metrics per corruption: plain means over the severities present."""
    d = s.datasets.get(BENCH_C)
    if d is None or d.bench_c is None:
        return []
    out = []
    for c in corruption_order({x.corruption for x in d.bench_c.cells}):
        cells = [x for x in d.bench_c.cells if x.corruption == c]
        means: dict[str, float | None] = {}
        for k in ("acc", "delta_acc", "ras", "delta_S", "delta_C"):
            vals = [v for x in cells if (v := x.metrics.get(k)) is not None]
            means[k] = sum(vals) / len(vals) if vals else None
        out.append((c, means))
    return out


# The value columns of a model page's table of every corruption × severity cell,
# after corruption, severity and N: (header, format, weighting, metric). Formats
# are site.js's: "pp" signed percentage points (formatting.signed(v, 1, 100)),
# "f3" three decimals (formatting.num). Heat maps read columns 4 and 6.
CELL_COLUMNS = (
    ("ΔAcc plain", "pp", "plain", "delta_acc"), ("ΔAcc κ", "pp", "kappa", "delta_acc"),
    ("RAS plain", "f3", "plain", "ras"), ("RAS κ", "f3", "kappa", "ras"),
    ("Destructive plain", "f3", "plain", "destructive_ras"),
    ("Destructive κ", "f3", "kappa", "destructive_ras"),
    ("Corrective plain", "f3", "plain", "corrective_ras"),
    ("Corrective κ", "f3", "kappa", "corrective_ras"),
    ("S⁽ᵒ⁾", "f3", "plain", "S_clean"), ("S⁽ᵈ⁾", "f3", "plain", "S"),
    ("C⁽ᵒ⁾", "f3", "plain", "C_clean"), ("C⁽ᵈ⁾", "f3", "plain", "C"))


def _printed(v: float | None, fmt: str) -> float | None:
    """The number as the page prints it (percentage points for "pp"), so site.js
    only re-prints a decimal with as many digits and never rounds a second time;
    None when not measured. -0.0 stays -0.0 ("−0.0", as signed() prints it).

    >>> _printed(-0.03168, "pp"), _printed(0.0625, "f3"), _printed(None, "f3")
    (-3.2, 0.062, None)
    """
    text = signed(v, 1, 100.0) if fmt == "pp" else num(v, 3)
    return None if text == "—" else float(text.replace("−", "-"))


def cell_rows(bc: BenchCScores) -> Markup:
    """The table of every cell as data for site.js to fill (issue 37.2): one array
    per cell, ``[corruption, severity, N, *CELL_COLUMNS values as printed]``, as
    JSON safe inside a single-quoted attribute. As HTML the table was half of a
    model page (43 kB of 81 kB on the demo's classifiers); its sort keys were 6
    significant digits, now the printed digits (equal cells keep their order).

    >>> from vlmrobust.leaderboard.submission import BenchCCell
    >>> cell = BenchCCell("fog", 2, 40, {"ras": 0.123456789, "delta_acc": -0.25}, {}, {},
    ...                   plain={"ras": None})
    >>> str(cell_rows(BenchCScores(None, (cell,), {}, {}, {})))[:39]
    '[["fog",2,40,null,-25.0,null,0.123,null'
    >>> print(cell_rows(BenchCScores(None, (BenchCCell("a'<b", 1, 1, {}, {}, {}),), {}, {}, {})))
    [["a\\u0027\\u003cb",1,1,null,null,null,null,null,null,null,null,null,null,null,null]]
    """
    rows = [[c.corruption, c.severity, c.n,
             *(_printed((c.plain if wt == "plain" else c.metrics).get(k), fmt)
               for _, fmt, wt, k in CELL_COLUMNS)] for c in bc.cells]
    return htmlsafe_json_dumps(rows, dumps=json.dumps, separators=(",", ":"),
                               ensure_ascii=False, allow_nan=False)


Fmt = Callable[[float | None], str]


def _pp(v: float | None) -> str:
    return signed(v, 1, 100.0)


def _num3(v: float | None) -> str:
    return num(v, 3)


def _value(v: float | None, fmt: Fmt, *, cls: str = "", ci: Sequence[float] | None = None,
           ) -> Cell:
    title = f"interval {fmt(ci[0])} … {fmt(ci[1])}" if ci else ""
    return Cell(data_v(v), fmt(v), c=cls, h=title)


def _count(counts: Mapping[str, int], key: str) -> Cell:
    v = counts.get(key)
    return Cell(data_v(v), "—" if v is None else str(v))


def _model(lb: Leaderboard, s: Submission) -> Cell:
    return Cell(s.meta.name, s.meta.name, c="t name", a=lb.pages[s.model_id])


def aggregate_rows(lb: Leaderboard, subs: Sequence[Submission]) -> list[Row]:
    """One row per model of the aggregate table, in header order."""
    out = []
    for s in subs:
        bc = s.datasets[BENCH_C].bench_c
        assert bc is not None
        a, p = bc.aggregate, bc.plain_aggregate
        cp = bc.clean.get("plain", {})
        iv = bc.extras.intervals.get("kappa_weighted", {}) if bc.extras else {}
        cells = [_model(lb, s),
                 Cell(s.meta.family, "", c="t", m=((f"fam fam-{s.meta.family}",
                                                    s.meta.family, ""),)),
                 _value(cp.get("acc"), pct), _value(bc.clean_accuracy, pct),
                 _value(p.get("acc"), pct), _value(a.get("acc"), pct, ci=iv.get("acc")),
                 _value(p.get("delta_acc"), _pp, cls=tone(p.get("delta_acc"))),
                 _value(a.get("delta_acc"), _pp, cls=tone(a.get("delta_acc")),
                        ci=iv.get("delta_acc"))]
        for k in ("ras", "destructive_ras", "corrective_ras"):
            cells += [_value(p.get(k), _num3), _value(a.get(k), _num3, ci=iv.get(k))]
        cells += [_value(p.get(k), _num3)
                  for k in ("S_clean", "S", "delta_S", "C_clean", "C", "delta_C")]
        cells += [_count(bc.quadrants, q) for q in QUADRANTS]
        cells += [_count(bc.transitions, t) for t in TRANSITIONS]
        out.append(Row({"model": s.model_id}, tuple(cells)))
    return out


def sensitivity_rows(lb: Leaderboard, subs: Sequence[Submission]) -> list[Row]:
    """One row per model of seed 003's Table 2 (sensitivity) and Table 3 (cells at
    ℓ = 1 where corruption raised accuracy, by quadrant)."""
    out = []
    for s in subs:
        bc = s.datasets[BENCH_C].bench_c
        assert bc is not None
        ex = bc.extras
        r = ex.sensitivity if ex else {}
        cells = [_model(lb, s)]
        cells += [_value(r.get(k), _num3) for k in ("e_abs_z_ras", "e_abs_z_delta_acc", "t")]
        df = r.get("df")
        cells += [Cell(data_v(df), str(df) if r and df is not None else "—"),
                  _value(r.get("p"), pvalue)]
        gains = ex.accuracy_gain if ex else ()
        cells.append(Cell(str(len(gains)) if ex else "", str(len(gains)) if ex else "—"))
        for q in QUADRANTS:
            k = sum(1 for g in gains if g.get("category") == q)
            cells.append(Cell(str(k) if ex else "", str(k) if ex else "—"))
        out.append(Row({"model": s.model_id}, tuple(cells)))
    return out
