"""Seed 002 Fig. 4 on the Classification page: per label-set-size chart, each
model's error rate as a multiple of the reference CLIP's at every K
(:func:`vlmrobust.metrics.lines.error_gap.relative_error_gap`).

The seed divides LLaVA1.5-7B's error by its own vision encoder's (CLIP-L); a
leaderboard has no such pairing for every model, so the reference is the
``clip``-family model with the highest accuracy at the chart's largest K (ties:
by name), named above the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlmrobust.metrics.lines.error_gap import relative_error_gap

REFERENCE_FAMILY = "clip"


@dataclass(frozen=True)
class ErrorGaps:
    """One chart's gaps: ``reference`` (a submission), and per other model
    its gap at each K both have a point for."""

    reference: Any
    rows: tuple[tuple[Any, dict[int, float]], ...]


def reference_model(rows: Sequence[tuple[Any, Mapping[int, float]]]) -> Any | None:
    """The clip model with the highest accuracy at the largest K among the
    chart's clip models (None without one)."""
    clips = [(s, pts) for s, pts in rows if s.meta.family == REFERENCE_FAMILY and pts]
    if not clips:
        return None
    top = max(max(pts) for _, pts in clips)
    at_top = [(s, pts[top]) for s, pts in clips if top in pts]
    return min(at_top, key=lambda sa: (-sa[1], s_name(sa[0])))[0] if at_top else None


def s_name(s: Any) -> str:
    return str(s.meta.name)


def error_gaps(rows: Sequence[tuple[Any, Mapping[int, float]]]) -> ErrorGaps | None:
    """Every non-reference model's relative error gap per shared K; None when
    the chart has no clip model."""
    ref = reference_model(rows)
    if ref is None:
        return None
    ref_pts = next(pts for s, pts in rows if s is ref)
    out = []
    for s, pts in rows:
        ks = sorted(k for k in pts if k in ref_pts)
        if s is ref or not ks:
            continue
        gaps = relative_error_gap([pts[k] for k in ks], [ref_pts[k] for k in ks])
        out.append((s, {k: float(g) for k, g in zip(ks, gaps.tolist(), strict=True)}))
    return ErrorGaps(ref, tuple(out))

