"""What the site shows of Bench-C: the corruption order, per-corruption means and
the mean corruption × severity heat maps over models (a model's own maps are drawn
by the site script from its page's table of every cell)."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from vlmrobust.leaderboard.board import BENCH_C
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.submission import Submission

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
