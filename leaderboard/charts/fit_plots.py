"""The probit plots of the fitted lines: one scatter per fit (with the one-point
marker a model page lays over it) and the robustness page's per-shift charts."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from vlmrobust.leaderboard.board import (
    REFERENCE,
    SELF_REPORTED,
    Leaderboard,
    ShiftFit,
    family_key,
)
from vlmrobust.leaderboard.charts import probit as probit_chart
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.fits.shifts import group_value


def _fit_points(f: ShiftFit) -> list[tuple[str, float, float, bool]]:
    return [(p.name, p.acc_ref, p.acc_shift, p.is_baseline) for p in f.points]


def _fit_title(f: ShiftFit) -> str:
    return f"{f.label} line · {f.strategy} · {f.shift}"


def fit_plot(f: ShiftFit) -> Markup:
    return svg.probit_scatter(
        _fit_points(f), slope=f.slope, intercept=f.intercept, chance=f.chance,
        transform=f.transform, x_name=f.reference, y_name=f.shift, title=_fit_title(f))


def fit_marker(f: ShiftFit, model_id: str) -> Markup | None:
    ids = [p.model_id for p in f.points]
    if model_id not in ids:
        return None
    return svg.probit_marker(_fit_points(f), ids.index(model_id), chance=f.chance,
                             transform=f.transform, x_name=f.reference, y_name=f.shift,
                             title=_fit_title(f))


def shift_charts(lb: Leaderboard) -> list[tuple[str, list[dict[str, Any]]]]:
    """Per strategy (headline first): per (reference, shift) one chart with every
    family's points and line, the reference line and y = x, plus one chart per
    family run with several prompts (each prompt's points and line)."""
    # points and lines are coloured by family, or by the value of baselines.yaml's
    # group_by field (a Point's group is then "<field>: <value>", as its line's label)
    fam_colours = probit_chart.colours(
        sorted({s.meta.family for s in lb.submissions}, key=family_key)
        if lb.spec.group_by == "family"
        else sorted({f"{lb.spec.group_by}: {group_value(s.meta, lb.spec.group_by)}"
                     for s in lb.submissions}))
    by_key: dict[tuple[str, str, str], list[ShiftFit]] = {}
    for f in lb.fits:
        by_key.setdefault((f.strategy, f.reference, f.shift), []).append(f)
    out: dict[str, list[dict[str, Any]]] = {}
    for (strategy, ref, shift), fits in by_key.items():
        refit = next(f for f in fits if f.kind == REFERENCE)
        title = f"{strategy} · {ref} → {shift}"
        ref_line = ([probit_chart.ChartLine("reference", refit.line.slope, refit.line.intercept,
                                            probit_chart.REFERENCE_COLOUR, reference=True)]
                    if refit.line else [])
        lines = ref_line + [probit_chart.ChartLine(
            f"{f.label} line", f.line.slope, f.line.intercept,
            fam_colours.get(f.label, probit_chart.SELF_REPORTED_COLOUR))
            for f in fits if f.kind in ("family", "group", SELF_REPORTED) and f.line is not None]
        points = [probit_chart.ChartPoint(p.name, p.group or p.family, p.acc_ref, p.acc_shift,
                                          p.is_baseline) for p in refit.points]
        charts = [{"svg": probit_chart.shift_chart(
            points, lines, group_colours=fam_colours, chance=refit.chance,
            transform=refit.transform, x_name=ref, y_name=shift, title=title),
            "fits": [refit, *(f for f in fits if f.kind in (SELF_REPORTED, "group", "family"))],
            "title": title}]
        for fam in sorted({f.family for f in fits if f.kind == "prompt"}, key=family_key):
            pfits = [f for f in fits if f.kind == "prompt" and f.family == fam]
            pc = probit_chart.colours([f.label for f in pfits])
            base = {p.model_id for p in refit.points if p.is_baseline}
            ptitle = f"{fam} prompts · {strategy} · {shift}"
            charts.append({"svg": probit_chart.shift_chart(
                [probit_chart.ChartPoint(p.name, f.label, p.acc_ref, p.acc_shift,
                                         p.model_id in base) for f in pfits for p in f.points],
                ref_line + [probit_chart.ChartLine(f.label, f.line.slope, f.line.intercept,
                                                   pc[f.label]) for f in pfits if f.line],
                group_colours=pc, chance=refit.chance, transform=refit.transform,
                x_name=ref, y_name=shift, title=ptitle), "fits": pfits,
                "title": ptitle})
        out.setdefault(strategy, []).extend(charts)
    return sorted(out.items(), key=lambda kv: (kv[0] != lb.spec.headline_strategy, kv[0]))
