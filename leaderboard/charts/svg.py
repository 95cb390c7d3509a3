"""Hand-written SVG: probit scatter plots with baseline lines, plain scatter plots and
corruption × severity heat maps. Every interpolated text goes through
:func:`markupsafe.escape` (labels, axis names, variant and transform names alike:
a variant name is submission data); numbers are formatted here. The functions
return :class:`Markup` so the autoescaping templates embed them as they are, and
the same markup is a valid standalone ``.svg`` file."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from vlmrobust.leaderboard.charts import marks
from vlmrobust.leaderboard.fits import lines as fit

# Accuracy ticks for transformed axes: probit squeezes the middle, so the ends get more.
ACC_TICKS = (0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
# Presentation attributes rather than a style attribute: the site check allows no
# inline style, and a standalone .svg file gets no page CSS.
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


def _n(x: float) -> str:
    """Compact coordinates keep pages with many plots small."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


@dataclass(frozen=True)
class Frame:
    """Maps data coordinates into a w × h box with margins (y grows upwards)."""

    x0: float
    x1: float
    y0: float
    y1: float
    width: int = 360
    height: int = 320
    left: int = 58
    right: int = 12
    top: int = 26
    bottom: int = 40

    def __post_init__(self) -> None:
        if not (self.x1 > self.x0 and self.y1 > self.y0):
            raise ValueError("empty data range")

    def px(self, x: float) -> float:
        w = self.width - self.left - self.right
        return self.left + (x - self.x0) / (self.x1 - self.x0) * w

    def py(self, y: float) -> float:
        h = self.height - self.top - self.bottom
        return self.top + h - (y - self.y0) / (self.y1 - self.y0) * h


def _padded(lo: float, hi: float, pad: float = 0.08) -> tuple[float, float]:
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    span = hi - lo
    return lo - pad * span, hi + pad * span


def spaced(positions: Sequence[float], min_gap: float) -> list[bool]:
    """Which labels to draw so that drawn neighbours are at least ``min_gap`` px
    apart (greedy from the first); probit axes crowd the middle ticks.

    >>> spaced([0, 5, 12, 30, 31], 10)
    [True, False, True, True, False]
    """
    keep, last = [], -float("inf")
    for p in positions:
        ok = abs(p - last) >= min_gap
        keep.append(ok)
        if ok:
            last = p
    return keep


def _axes(f: Frame, xticks: Sequence[tuple[float, str]], yticks: Sequence[tuple[float, str]],
          xlabel: str, ylabel: str, title: str) -> list[str]:
    out = [f'<rect x="{f.left}" y="{f.top}" width="{f.width - f.left - f.right}" '
           f'height="{f.height - f.top - f.bottom}" fill="#fff" stroke="#999"/>']
    xs = [f.px(v) for v, _ in xticks]
    # grid lines for every tick; labels only where they do not overlap (~6 px/char)
    for (_, lab), px, show in zip(xticks, xs, spaced(xs, 26), strict=True):
        x = _n(px)
        out.append(f'<line x1="{x}" x2="{x}" y1="{f.top}" y2="{f.height - f.bottom}" '
                   'stroke="#eee"/>')
        if show:
            out.append(f'<text x="{x}" y="{f.height - f.bottom + 13}" text-anchor="middle">'
                       f"{escape(lab)}</text>")
    ys = [f.py(v) for v, _ in yticks]
    for (_, lab), py, show in zip(yticks, ys, spaced(ys, 11), strict=True):
        y = _n(py)
        out.append(f'<line x1="{f.left}" x2="{f.width - f.right}" y1="{y}" y2="{y}" '
                   'stroke="#eee"/>')
        if show:
            out.append(f'<text x="{f.left - 4}" y="{y}" text-anchor="end" '
                       f'dominant-baseline="middle">{escape(lab)}</text>')
    out.append(f'<text x="{_n((f.left + f.width - f.right) / 2)}" y="{f.height - 6}" '
               f'text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(11 {_n((f.top + f.height - f.bottom) / 2)}) '
               f'rotate(-90)" text-anchor="middle">{escape(ylabel)}</text>')
    out += marks.title_marks(title, f.width, f.left, f.top)
    return out


def _svg(f: Frame, body: list[str], label: str, cls: str = "plot") -> Markup:
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" role="img" '
        f'aria-label="{escape(label)}" width="{f.width}" height="{f.height}" '
        f'viewBox="0 0 {f.width} {f.height}" {FONT}>' + "".join(body) + "</svg>")


def _clip_line(f: Frame, a: float, b: float) -> tuple[float, float, float, float] | None:
    """Segment of y = a·x + b inside the frame (clipped against the y range)."""
    xs = [f.x0, f.x1]
    if a != 0:
        xs += [(f.y0 - b) / a, (f.y1 - b) / a]
    inside = sorted(x for x in xs if f.x0 - 1e-9 <= x <= f.x1 + 1e-9
                    and f.y0 - 1e-9 <= a * x + b <= f.y1 + 1e-9)
    if len(inside) < 2:
        return None
    return inside[0], a * inside[0] + b, inside[-1], a * inside[-1] + b


def _probit_frame(points: Sequence[tuple[str, float, float, bool]], chance: float,
                  transform: str) -> tuple[Frame, list[float], list[float], list[tuple[int, int]]]:
    """The frame, each point's drawn (x, y) (the chance point last) and which edge
    each point is pinned to: 0% / 100% leave the frame to the other points
    (:mod:`.marks`)."""
    # One vectorised transform per plot: per-point scalar calls dominated a 200-model build.
    tx = fit.transform([p[1] for p in points] + [chance], transform).tolist()
    ty = fit.transform([p[2] for p in points] + [chance], transform).tolist()
    edges = [(marks.at_edge(p[1]), marks.at_edge(p[2])) for p in points] + [(0, 0)]
    lo, hi = _padded(min(*marks.inner_range(tx, [e[0] for e in edges]),
                         *marks.inner_range(ty, [e[1] for e in edges])),
                     max(*marks.inner_range(tx, [e[0] for e in edges]),
                         *marks.inner_range(ty, [e[1] for e in edges])))
    tx = [marks.pin(v, e[0], lo, hi) for v, e in zip(tx, edges, strict=True)]
    ty = [marks.pin(v, e[1], lo, hi) for v, e in zip(ty, edges, strict=True)]
    return Frame(lo, hi, lo, hi), tx, ty, edges[:-1]


def _point(f: Frame, x: float, y: float, label: str, x_name: str, y_name: str, ar: float,
           ash: float, base: bool, me: bool, edge: tuple[int, int] = (0, 0),
           transform: str = "probit") -> str:
    colour = "#ff7f0e" if me else "#1f77b4"
    cx, cy = f.px(x), f.py(y)
    note = marks.clip_note(*edge, x_name, y_name, transform)
    return (f'<circle class="pt{" me" if me else ""}{" clipped" if note else ""}" '
            f'cx="{_n(cx)}" cy="{_n(cy)}" r="{6 if me else 4}" '
            f'fill="{colour if base else "#fff"}" stroke="{colour}" stroke-width="1.5" '
            f'tabindex="0"><title>{escape(label)}: {escape(x_name)} {ar * 100:.1f}%, '
            f"{escape(y_name)} {ash * 100:.1f}%{' (baseline)' if base else ''}{escape(note)}"
            "</title></circle>" + (marks.clip_mark(cx, cy, *edge, colour) if note else ""))


def probit_marker(points: Sequence[tuple[str, float, float, bool]], index: int, *,
                  chance: float, transform: str, x_name: str, y_name: str,
                  title: str) -> Markup:
    """A transparent SVG of exactly the size and frame of :func:`probit_scatter`
    for the same points, holding only point ``index`` (highlighted): laid over the
    shared family plot, it marks one model without copying the family's points
    into every model page."""
    f, tx, ty, edges = _probit_frame(points, chance, transform)
    label, ar, ash, base = points[index]
    body = [_point(f, tx[index], ty[index], label, x_name, y_name, ar, ash, base, True,
                   edges[index], transform)]
    return _svg(f, body, f"{label} on {title}", cls="marker")


def probit_scatter(points: Sequence[tuple[str, float, float, bool]], *, slope: float | None,
                   intercept: float | None, chance: float, transform: str, x_name: str,
                   y_name: str, title: str, highlight: int | None = None) -> Markup:
    """Reference accuracy (x) vs shifted accuracy (y) on transformed axes labelled
    in accuracy. ``points``: (label, acc_ref, acc_shift, is_baseline); filled =
    baseline; ``highlight`` indexes one point drawn larger, in orange, on top.
    Draws y = x (dashed), the baseline line when given, and the random-guess point
    (1/K, 1/K)."""
    f, tx, ty, edges = _probit_frame(points, chance, transform)
    lo, hi = f.x0, f.x1
    tticks = fit.transform(list(ACC_TICKS), transform).tolist()
    tc = tx[-1]
    ticks = [(v, f"{a * 100:g}%") for a, v in zip(ACC_TICKS, tticks, strict=True)
             if lo <= v <= hi]
    body = _axes(f, ticks, ticks, f"{x_name} accuracy ({transform} scale)",
                 f"{y_name} accuracy", title)
    tr = escape(transform)
    seg = _clip_line(f, 1.0, 0.0)
    if seg:
        body.append(f'<line class="identity" x1="{_n(f.px(seg[0]))}" y1="{_n(f.py(seg[1]))}" '
                    f'x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" stroke="#888" '
                    'stroke-dasharray="4 3"><title>y = x</title></line>')
    if slope is not None and intercept is not None:
        seg = _clip_line(f, slope, intercept)
        if seg:
            body.append(
                f'<line class="fit" x1="{_n(f.px(seg[0]))}" y1="{_n(f.py(seg[1]))}" '
                f'x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" stroke="#d62728" '
                f'stroke-width="2"><title>baseline: {tr}(y) = {slope:.3f}·'
                f"{tr}(x) {'+' if intercept >= 0 else '−'} {abs(intercept):.3f}"
                "</title></line>")
    cx, cy = _n(f.px(tc)), _n(f.py(tc))
    body.append(f'<path class="chance" d="M{cx} {float(cy) - 6:.1f}l5 6l-5 6l-5 -6z" '
                f'fill="#7f7f7f"><title>random guess ({chance * 100:g}%)</title></path>')
    marked = ""
    for i, (label, ar, ash, base) in enumerate(points):
        circle = _point(f, tx[i], ty[i], label, x_name, y_name, ar, ash, base, i == highlight,
                        edges[i], transform)
        if i == highlight:
            marked = circle  # drawn last so no other point hides it
        else:
            body.append(circle)
    body.append(marked)
    return _svg(f, body, title)


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[tuple[float, str]]:
    """Round tick values (1, 2 or 5 × 10^k apart) inside [lo, hi], labelled with just
    enough decimals.

    >>> [lab for _, lab in nice_ticks(-0.16, 0.02)]
    ['-0.15', '-0.10', '-0.05', '0.00']
    """
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    first = math.ceil(lo / step)
    out = []
    k = first
    while k * step <= hi + 1e-12:
        v = k * step if k else 0.0  # k = 0 would print as "-0.00" via -0.0 * step
        out.append((v, f"{v:.{decimals}f}"))
        k += 1
    return out


def linear_scatter(points: Sequence[tuple[str, float | None, float | None]], *, x_label: str,
                   y_label: str, title: str, identity: bool = True,
                   point_colours: Sequence[str] = (),
                   lines: Sequence[tuple[str, float, float, str]] = (),
                   undefined: str = "undefined") -> Markup:
    """Plain scatter on linear axes (e.g. destructive vs corrective RAS);
    ``point_colours`` (one per point) and ``lines`` ((label, slope, intercept,
    colour), drawn y = slope·x + intercept) are optional. Every point is drawn: one
    whose x or y is None (``undefined`` says why) is a hollow point on that axis'
    low edge, so a chart of N models always shows N points."""
    defined = [(p[1], p[2]) for p in points]
    xs = [x for x, _ in defined if x is not None]
    ys = [y for _, y in defined if y is not None]
    if not xs and not ys:
        f = Frame(0.0, 1.0, 0.0, 1.0)
        return _svg(f, [*_axes(f, [], [], x_label, y_label, title),
                        f'<text x="{f.width // 2}" y="{f.height // 2}" text-anchor="middle">'
                        "no data</text>"], title)
    vals = xs + ys
    lo, hi = _padded(min(vals), max(vals))
    f = Frame(lo, hi, lo, hi)
    ticks = nice_ticks(lo, hi)
    body = _axes(f, ticks, ticks, x_label, y_label, title)
    seg = _clip_line(f, 1.0, 0.0) if identity else None
    if seg:
        body.append(f'<line class="identity" x1="{_n(f.px(seg[0]))}" y1="{_n(f.py(seg[1]))}" '
                    f'x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" stroke="#888" '
                    'stroke-dasharray="4 3"/>')
    for label, slope, intercept, colour in lines:
        seg = _clip_line(f, slope, intercept)
        if seg:
            body.append(f'<line class="fit" x1="{_n(f.px(seg[0]))}" y1="{_n(f.py(seg[1]))}" '
                        f'x2="{_n(f.px(seg[2]))}" y2="{_n(f.py(seg[3]))}" stroke="{colour}" '
                        f'stroke-width="1.5"><title>{escape(label)}: y = {slope:.3f}·x '
                        f'{"+" if intercept >= 0 else "−"} {abs(intercept):.3f}</title></line>')
    for i, (label, x, y) in enumerate(points):
        colour = point_colours[i] if i < len(point_colours) else "#1f77b4"
        na = x is None or y is None
        shown = ", ".join(f"{undefined}" if v is None else f"{v:.3f}" for v in (x, y))
        # an undefined coordinate sits on the frame's low edge, hollow
        cx = f.px(x) if x is not None else f.left
        cy = f.py(y) if y is not None else f.height - f.bottom
        body.append(f'<circle class="pt{" na" if na else ""}" cx="{_n(cx)}" cy="{_n(cy)}" '
                    f'r="4" fill="{"#fff" if na else colour}" stroke="{colour}" '
                    f'stroke-width="1.5" tabindex="0"><title>{escape(label)}: {escape(shown)}'
                    "</title></circle>")
    return _svg(f, body, title)


_POS = (0x21 - 255, 0x66 - 255, 0xAC - 255)
_NEG = (0xD6 - 255, 0x60 - 255, 0x4D - 255)


def diverging_colour(v: float | None, vmax: float) -> str:
    """Red (negative) – white (0) – blue (positive); grey when missing.

    >>> diverging_colour(0.0, 1.0), diverging_colour(-1.0, 1.0), diverging_colour(None, 1.0)
    ('#ffffff', '#d6604d', '#dddddd')
    """
    if v is None or not math.isfinite(v):
        return "#dddddd"
    s = max(-1.0, min(1.0, v / vmax)) if vmax > 0 else 0.0
    r, g, b = _POS if s > 0 else _NEG
    a = abs(s)
    return f"#{round(255 + r * a):02x}{round(255 + g * a):02x}{round(255 + b * a):02x}"


def heatmap(rows: Sequence[str], cols: Sequence[int],
            values: dict[tuple[str, int], float | None], *, title: str, vmax: float,
            cell_text: bool = True, cell: int = 26) -> Markup:
    """Corruption (rows) × severity (columns) heat map on a symmetric diverging scale
    [−vmax, vmax]; every cell has a tooltip, and optionally its value printed."""
    left, top = 120, 30
    width = left + cell * len(cols) + 10
    height = top + 14 * len(rows) + 24 if not cell_text else top + 16 * len(rows) + 24
    rh = 14 if not cell_text else 16
    f = Frame(0.0, 1.0, 0.0, 1.0, width=width, height=height)
    body = [f'<text x="4" y="14" font-weight="bold">{escape(title)}</text>']
    for j, c in enumerate(cols):
        body.append(f'<text x="{left + j * cell + cell // 2}" y="{top - 4}" '
                    f'text-anchor="middle">{c}</text>')
    # Shared attributes live on the groups and cells are short paths: a model's two
    # maps are 190 cells, and per-cell bytes decide the site's size at 400 models.
    # The row label beside each row names the corruption, so tooltips give severity
    # and value only.
    cells, texts = ['<g class="cells">'], ['<g text-anchor="middle" font-size="8">']
    for i, r in enumerate(rows):
        y = top + i * rh
        label = str(escape(r))  # once per row: this loop dominates a 200-model build
        body.append(f'<text x="{left - 4}" y="{y + rh - 4}" text-anchor="end">{label}</text>')
        for j, c in enumerate(cols):
            v = values.get((r, c))
            shown = "n/a" if v is None else f"{v:.3f}"
            x = left + j * cell
            cells.append(f'<path d="M{x} {y}h{cell - 1}v{rh - 1}h{1 - cell}z" '
                         f'fill="{diverging_colour(v, vmax)}"><title>severity {c}: {shown}'
                         "</title></path>")
            if cell_text and v is not None:
                texts.append(f'<text x="{x + cell // 2}" y="{y + rh - 4}">{v:.2f}</text>')
    body += [*cells, "</g>"]
    if len(texts) > 1:
        body += [*texts, "</g>"]
    body.append(f'<text x="{left}" y="{height - 6}">severity →  scale ±{vmax:g}</text>')
    return _svg(f, body, title)


def log_curves(series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]], *,
               x_label: str, y_label: str, title: str) -> Markup:
    """Lines through points on a log₁₀ x axis (seed 002 Fig. 2: accuracy against
    the number of classes K) and a linear y axis in [0, 1]; one series is
    (label, colour, [(x, y), ...]) with x > 0, drawn in x order with a legend.

    >>> '<path class="curve"' in log_curves([("clip", "#000", [(2, 0.9), (1000, 0.6)])],
    ...                           x_label="K", y_label="accuracy", title="t")
    True
    """
    xs = [x for _, _, pts in series for x, _ in pts if x > 0]
    if not xs:
        f = Frame(0.0, 1.0, 0.0, 1.0)
        return _svg(f, [*_axes(f, [], [], x_label, y_label, title),
                        f'<text x="{f.width // 2}" y="{f.height // 2}" text-anchor="middle">'
                        "no data</text>"], title)
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    lo, hi = (lo - 0.5, hi + 0.5) if hi - lo < 1e-9 else (lo - 0.08 * (hi - lo), hi + 0.08 * (hi - lo))
    f = Frame(lo, hi, 0.0, 1.0, height=330 + 14 * len(series), bottom=50 + 14 * len(series))
    xticks = [(math.log10(v), f"{v:g}") for v in sorted(set(xs))]
    body = _axes(f, xticks, [(v / 5, f"{v * 20}%") for v in range(6)], x_label, y_label, title)
    # _axes puts the x label at the very bottom, where the legend goes
    body = [b.replace(f'y="{f.height - 6}"', f'y="{f.height - f.bottom + 28}"', 1)
            if b.endswith(f"{escape(x_label)}</text>") else b for b in body]
    for i, (label, colour, pts) in enumerate(series):
        drawn = sorted((math.log10(x), y) for x, y in pts if x > 0)
        # a path, not a polyline: the site check allows few SVG elements
        coords = " L".join(f"{_n(f.px(x))} {_n(f.py(y))}" for x, y in drawn)
        body.append(f'<path class="curve" d="M{coords}" fill="none" stroke="{escape(colour)}" '
                    'stroke-width="1.5"/>')
        for x, y in drawn:
            body.append(f'<circle class="pt" cx="{_n(f.px(x))}" cy="{_n(f.py(y))}" r="3" '
                        f'fill="{escape(colour)}" tabindex="0">'
                        f"<title>{escape(label)}: K = {10 ** x:g}, {y:.3f}</title></circle>")
        ly = f.height - 14 * (len(series) - i) + 6
        body.append(f'<line x1="{f.left}" x2="{f.left + 16}" y1="{ly - 4}" y2="{ly - 4}" '
                    f'stroke="{escape(colour)}" stroke-width="2"/>'
                    f'<text x="{f.left + 22}" y="{ly}">{escape(label)}</text>')
    return _svg(f, body, title)
