"""The robustness page's per-shift chart (the seed's Figs. 2-3): every model's
(reference accuracy, shifted accuracy) point coloured by its group, the reference
baseline line, each group's own line, and y = x, on probit axes labelled in
accuracy. Text from submissions is escaped; returns :class:`Markup`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from vlmrobust.leaderboard.charts import marks
from vlmrobust.leaderboard.charts.svg import ACC_TICKS, Frame, _axes, _clip_line, _n, _padded, _svg
from vlmrobust.leaderboard.fits import lines as fit

# Colour-blind-safe (Okabe-Ito); the reference line is black.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442",
           "#999999")
REFERENCE_COLOUR = "#000000"
# The line of reference-family models outside the maintainers' record.
SELF_REPORTED_COLOUR = "#999999"


@dataclass(frozen=True)
class ChartLine:
    label: str
    slope: float
    intercept: float
    colour: str
    reference: bool = False


@dataclass(frozen=True)
class ChartPoint:
    label: str
    group: str
    acc_ref: float
    acc_shift: float
    is_baseline: bool


def colours(groups: Sequence[str]) -> dict[str, str]:
    """A stable colour per group, in the given order.

    >>> colours(["classifier", "clip"])["clip"]
    '#E69F00'
    """
    return {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}


def shift_chart(points: Sequence[ChartPoint], lines: Sequence[ChartLine], *,
                group_colours: dict[str, str], chance: float | None, transform: str, x_name: str,
                y_name: str, title: str, y_metric: str = "accuracy", identity: bool = True
                ) -> Markup:
    """One probit chart for one shift: points by group (filled = a reference
    baseline model), the groups' lines, the reference line (black, thick), y = x
    (dashed grey; ``identity``) and the random-guess diamond (``chance``; None:
    none), with a legend underneath. ``y_metric`` names the y axis' measure
    (accuracy, AUROC, FPR@95: any rate in [0, 1] on the same probit scale)."""
    extra = [] if chance is None else [chance]
    tx = fit.transform([p.acc_ref for p in points] + extra, transform).tolist()
    ty = fit.transform([p.acc_shift for p in points] + extra, transform).tolist()
    tticks = fit.transform(list(ACC_TICKS), transform).tolist()
    # 0% and 100% leave the range to the other points and are pinned to its edge
    edges = [(marks.at_edge(p.acc_ref), marks.at_edge(p.acc_shift)) for p in points]
    edges += [(0, 0)] * len(extra)
    inner = (marks.inner_range(tx, [e[0] for e in edges])
             + marks.inner_range(ty, [e[1] for e in edges]))
    lo, hi = _padded(min(inner), max(inner))
    tx = [marks.pin(v, e[0], lo, hi) for v, e in zip(tx, edges, strict=True)]
    ty = [marks.pin(v, e[1], lo, hi) for v, e in zip(ty, edges, strict=True)]
    f0 = Frame(lo, hi, lo, hi)
    drawn = [ln for ln in lines if _clip_line(f0, ln.slope, ln.intercept)]
    # The legend lists what is drawn: lines that cross the frame, and groups with
    # points but no drawn line as a point swatch (issue 37.3: it listed every family).
    items: list[tuple[str, str, float, str]] = []
    items += [(REFERENCE_COLOUR, "reference line (filled: its models)", 3.0, "")
              for ln in drawn if ln.reference][:1]
    by_colour = {ln.colour for ln in drawn if not ln.reference}
    with_points = {p.group for p in points}
    for g, c in group_colours.items():
        if c in by_colour:
            items.append((c, g, 1.5, ""))
        elif g in with_points:
            items.append((c, f"{g} (points, no line)", 0.0, ""))
    items += [("#888", "y = x", 1.0, ' stroke-dasharray="4 3"')] if identity else []
    if any(e != (0, 0) for e in edges):
        items.append(("#444", "at 0% or 100%: clipped to the edge", -1.0, ""))
    legend_rows = len(items) + 1
    f = Frame(lo, hi, lo, hi, width=420, height=380 + 14 * legend_rows, bottom=40 + 14 * legend_rows)
    ticks = [(v, f"{a * 100:g}%") for a, v in zip(ACC_TICKS, tticks, strict=True)
             if lo <= v <= hi]
    body = _axes(f, ticks, ticks, f"{x_name} accuracy ({transform} scale)",
                 f"{y_name} {y_metric}", title)
    # _axes puts the x label at the very bottom; move it above the legend.
    body = [b.replace(f'y="{f.height - 6}"', f'y="{f.height - f.bottom + 28}"', 1)
            if 'text-anchor="middle">' in b and f'y="{f.height - 6}"' in b else b for b in body]
    seg = _clip_line(f, 1.0, 0.0) if identity else None
    if seg:
        body.append(f'<line class="identity" x1="{_n(f.px(seg[0]))}" y1="{_n(f.py(seg[1]))}" '
                    f'x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" stroke="#888" '
                    'stroke-dasharray="4 3"><title>y = x</title></line>')
    for ln in sorted(lines, key=lambda x: x.reference):  # reference drawn last, on top
        seg = _clip_line(f, ln.slope, ln.intercept)
        if not seg:
            continue
        sign = "+" if ln.intercept >= 0 else "−"
        body.append(
            f'<line class="fit{" ref" if ln.reference else ""}" x1="{_n(f.px(seg[0]))}" '
            f'y1="{_n(f.py(seg[1]))}" x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" '
            f'stroke="{ln.colour}" stroke-width="{3 if ln.reference else 1.5}">'
            f"<title>{escape(ln.label)}: {escape(transform)}(y) = {ln.slope:.3f}·"
            f"{escape(transform)}(x) "
            f"{sign} {abs(ln.intercept):.3f}</title></line>")
    if chance is not None:
        cx, cy = f.px(tx[-1]), f.py(ty[-1])
        body.append(f'<path class="chance" d="M{_n(cx)} {_n(cy - 6)}l5 6l-5 6l-5 -6z" '
                    f'fill="#7f7f7f"><title>random guess ({chance * 100:g}%)</title></path>')
    for i, p in enumerate(points):
        c = group_colours.get(p.group, "#444")
        cx, cy = f.px(tx[i]), f.py(ty[i])
        note = marks.clip_note(*edges[i], x_name, y_name, transform)
        body.append(
            f'<circle class="pt{" clipped" if note else ""}" cx="{_n(cx)}" cy="{_n(cy)}" r="4" '
            f'fill="{c if p.is_baseline else "#fff"}" stroke="{c}" stroke-width="1.5" '
            f'tabindex="0"><title>{escape(p.label)}: {escape(x_name)} {p.acc_ref * 100:.1f}%, '
            f"{escape(y_name)} {p.acc_shift * 100:.1f}% ({escape(p.group)}"
            f"{', reference baseline' if p.is_baseline else ''}){escape(note)}</title></circle>"
            + (marks.clip_mark(cx, cy, *edges[i], c) if note else ""))
    y = f.height - f.bottom + 46
    for colour, label, width, dash in items:
        if width > 0:
            body.append(f'<line x1="{f.left}" x2="{f.left + 22}" y1="{y - 4}" y2="{y - 4}" '
                        f'stroke="{colour}" stroke-width="{width}"{dash}/>')
        elif width == 0:  # a group drawn as points only
            body.append(f'<circle cx="{f.left + 11}" cy="{y - 4}" r="4" fill="#fff" '
                        f'stroke="{colour}" stroke-width="1.5"/>')
        else:
            body.append(marks.clip_mark(f.left + 11, y + 2, 0, 1, colour))
        body.append(f'<text x="{f.left + 28}" y="{y}">{escape(label)}</text>')
        y += 14
    return _svg(f, body, title)
