"""Zero-shot retrieval on the leaderboard: the checked read of a retrieval
config's Recall@K out of scores.json (:func:`load_retrieval`), and one table per
retrieval config on the Holistic page (registered in its section registry):
Recall@1/5/10 image→text and text→image, each with its bootstrap interval in
the cell's title. Numbers come from the re-scored submissions
(vlmrobust.leaderboard.trust.verify recomputes them from the stored embeddings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.pages.formatting import data_v, pct
from vlmrobust.leaderboard.pages.holistic.table import SECTIONS, Cell, Section, grouped, make_row

DIRECTIONS = (("image_to_text", "image→text"), ("text_to_image", "text→image"))
KS = (1, 5, 10)


def load_retrieval(w: Where, c: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """direction -> {"recall@K": value in [0, 1] or None, "recall@K_ci": (lo, hi) or None}."""
    out: dict[str, dict[str, Any]] = {}
    for d, _ in DIRECTIONS:
        dw = f"{where}.{d}"
        block = w.mapping(c.get(d) or {}, dw)
        vals: dict[str, Any] = {}
        for k in KS:
            vals[f"recall@{k}"] = w.number(block, f"recall@{k}", dw, lo=0.0, hi=1.0)
            ci = block.get(f"recall@{k}_ci")
            if ci is not None:
                if (not isinstance(ci, list) or len(ci) != 2 or any(
                        isinstance(x, bool) or not isinstance(x, int | float) for x in ci)
                        or not 0.0 <= ci[0] <= ci[1] <= 1.0):
                    raise w.fail(f"{dw}.recall@{k}_ci", f"{ci!r} is not an interval in [0, 1]",
                                 "rescore the submission")
                ci = (float(ci[0]), float(ci[1]))
            vals[f"recall@{k}_ci"] = ci
        out[d] = vals
    return out


def _cell(block: Mapping[str, Any], k: int) -> Cell:
    v = block.get(f"recall@{k}")
    ci = block.get(f"recall@{k}_ci")
    title = f"95% CI {pct(ci[0])} … {pct(ci[1])} (bootstrap over images)" if ci else ""
    return Cell(pct(v), data_v(v), title)


@SECTIONS.register("retrieval")
def retrieval_sections(lb: Leaderboard) -> list[Section]:
    """One table per (dataset, retrieval config) that any submission answers."""
    found: dict[tuple[str, str], list[Any]] = {}
    for s in lb.submissions:
        for key, d in s.datasets.items():
            for c in d.configs:
                if c.retrieval:
                    found.setdefault((key, c.config), []).append((s, c))
    out = []
    for (key, config), entries in sorted(found.items()):
        rows = [make_row(lb, s, [_cell(c.retrieval[d], k) for d, _ in DIRECTIONS for k in KS])
                for s, c in entries]
        n = sorted({c.n for _, c in entries})
        out.append(Section(
            f"retrieval-{config}", f"Zero-shot retrieval: {key} / {config}",
            "Recall@K as CLIP_benchmark computes it, from the submitted image and caption "
            "embeddings (cosine similarity): image→text, the share of images with one of their "
            "captions among their K nearest captions; text→image, the share of captions whose "
            f"image is among their K nearest images. {' / '.join(f'{i:,}' for i in n)} images.",
            tuple(f"R@{k} {label}" for _, label in DIRECTIONS for k in KS), grouped(rows)))
    return out
