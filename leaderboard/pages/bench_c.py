"""What the site shows of Bench-C: the corruption order, per-corruption means,
the mean corruption × severity heat maps over models (a model's own maps are drawn
by the site script from its page's table of every cell) and the Bench-C page's two
model tables as :class:`.paged.Row` cells (the aggregate table and seed 003's
sensitivity / accuracy-gain table; the page renders the first page of each, the
site script pages through data/bench-c*.json; issue 37.2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from markupsafe import Markup

from vlmrobust.leaderboard.board import BENCH_C, Leaderboard
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.pages.formatting import data_v, num, pct, pvalue, signed, tone
from vlmrobust.leaderboard.site.paged import Cell, Row
from vlmrobust.leaderboard.submission import QUADRANTS, TRANSITIONS, Submission

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
