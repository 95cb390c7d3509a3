"""Marks that make the charts readable (issue 37.3): titles that fit their chart,
points a keyboard can reach, and a visible mark on points the axis range clips.

Accuracy axes are probit (or logit): Φ⁻¹(100%) is infinite, so the transform
clips a perfect score to 1 − 10⁻⁶ (metrics/transforms.py), which would stretch
the axis to ≈ 4.75 and still leave the point on its edge with nothing saying so.
Here such a point is pinned to the edge of a frame fitted to the other points and
drawn as an arrow pointing off the chart, its tooltip saying it is clipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import escape

# Bold 11 px system-ui averages about 0.62 em a character: enough to tell
# whether a title fits without measuring text.
CHAR_EM = 0.62
TITLE_PX = 11
MIN_TITLE_PX = 8
# A point at or beyond this distance from 0 or 1 is "at 0% / 100%" (the
# transforms clip at 10⁻⁶).
EDGE = 1e-6


def title_marks(title: str, width: int, left: int, top: int) -> list[str]:
    """One or two bold ``<text>`` lines holding ``title`` whole inside ``width``:
    at the plot's left edge when it fits there, else from x = 4 in a smaller font,
    else wrapped at a space into two lines above ``top``.

    >>> title_marks("short", 360, 58, 26)
    ['<text x="58" y="16" font-weight="bold">short</text>']
    >>> len(title_marks("a " * 60, 360, 58, 26))
    2
    """
    n = max(len(title), 1)
    if n * CHAR_EM * TITLE_PX <= width - left - 4:
        return [f'<text x="{left}" y="16" font-weight="bold">{escape(title)}</text>']
    room = width - 8
    size = int(room / (n * CHAR_EM))
    if size >= MIN_TITLE_PX:
        size = min(size, TITLE_PX)
        return [f'<text x="4" y="16" font-weight="bold" font-size="{size}">{escape(title)}'
                "</text>"]
    per_line = int(room / (CHAR_EM * 9))
    cut = title.rfind(" ", 0, per_line)
    cut = cut if cut > 0 else per_line
    lines = (title[:cut], title[cut:].strip())
    y0 = max(10, top - 15)
    return [f'<text x="4" y="{y0 + 11 * i}" font-weight="bold" font-size="9">{escape(t)}</text>'
            for i, t in enumerate(lines)]


def at_edge(acc: float) -> int:
    """−1 at 0%, +1 at 100%, else 0.

    >>> at_edge(1.0), at_edge(0.0), at_edge(0.5)
    (1, -1, 0)
    """
    return 1 if acc >= 1 - EDGE else -1 if acc <= EDGE else 0


def inner_range(values: Sequence[float], edges: Sequence[int]) -> list[float]:
    """The transformed values that set the axis range: those not at an edge (all of
    them when every value is at one)."""
    inner = [v for v, e in zip(values, edges, strict=True) if e == 0]
    return inner or list(values)


def pin(v: float, edge: int, lo: float, hi: float) -> float:
    """Where an edge point is drawn: the frame's end on its side."""
    return hi if edge > 0 else lo if edge < 0 else v


def clip_mark(cx: float, cy: float, ex: int, ey: int, colour: str) -> str:
    """A small arrow beside a point pinned to the frame edge, pointing off the
    chart (up for 100% on y, right for 100% on x; down / left for 0%)."""
    out = []
    if ey:
        tip = cy - 11 if ey > 0 else cy + 11
        base = cy - 6 if ey > 0 else cy + 6
        out.append(f'<path class="clip" d="M{cx:.1f} {tip:.1f}L{cx - 4:.1f} {base:.1f}'
                   f'H{cx + 4:.1f}z" fill="{colour}"/>')
    if ex:
        tip = cx + 11 if ex > 0 else cx - 11
        base = cx + 6 if ex > 0 else cx - 6
        out.append(f'<path class="clip" d="M{tip:.1f} {cy:.1f}L{base:.1f} {cy - 4:.1f}'
                   f'V{cy + 4:.1f}z" fill="{colour}"/>')
    return "".join(out)


def clip_note(ex: int, ey: int, x_name: str, y_name: str, transform: str) -> str:
    """The tooltip's words for a clipped point ('' when none).

    >>> clip_note(0, 1, "ref", "shift", "probit")
    ' (shift at 100%: off the probit scale, clipped to the edge)'
    """
    parts = [f"{name} at {'100' if e > 0 else '0'}%" for name, e in ((x_name, ex), (y_name, ey))
             if e]
    return (f" ({', '.join(parts)}: off the {transform} scale, clipped to the edge)"
            if parts else "")
