"""What the Holistic page reads of an ood dataset's re-scored section: its
``ood`` block (vlmrobust.evaluation.scoring.ood), checked field by field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.score_records import OodScores, OodSetScore


def _interval(w: Where, b: Mapping[str, Any], key: str, where: str) -> tuple[float, float] | None:
    raw = b.get(key)
    if raw is None or (isinstance(raw, list) and all(x is None for x in raw)):
        return None
    if (not isinstance(raw, list) or len(raw) != 2
            or any(isinstance(x, bool) or not isinstance(x, int | float) for x in raw)
            or not 0.0 <= raw[0] <= raw[1] <= 1.0):
        raise w.fail(f"{where}.{key}", f"{raw!r} is not an interval in [0, 1]", "rescore the submission")
    return float(raw[0]), float(raw[1])


def load_ood(w: Where, raw: Any, where: str) -> OodScores | None:
    """The section's ``ood`` block (None when it has none)."""
    if raw is None:
        return None
    b = w.mapping(raw, where)
    sets: dict[str, OodSetScore] = {}
    for name, block in w.mapping(b.get("sets") or {}, f"{where}.sets").items():
        sw = f"{where}.sets.{name}"
        s = w.mapping(block, sw)
        sets[str(name)] = OodSetScore(
            n=int(w.integer(s, "n", sw) or 0),
            auroc=w.number(s, "auroc", sw, lo=0.0, hi=1.0), auroc_ci=_interval(w, s, "auroc_ci", sw),
            fpr95=w.number(s, "fpr95", sw, lo=0.0, hi=1.0), fpr95_ci=_interval(w, s, "fpr95_ci", sw),
            class_mean_auroc=w.number(s, "class_mean_auroc", sw, lo=0.0, hi=1.0),
            class_mean_auroc_ci=_interval(w, s, "class_mean_auroc_ci", sw),
            n_classes=w.integer(s, "n_classes", sw, required=False))
    raw_mean = b.get("mean_sets") or []
    if not isinstance(raw_mean, list) or any(str(n) not in sets for n in raw_mean):
        raise w.fail(f"{where}.mean_sets", f"{raw_mean!r} is not a list of the block's sets",
                     "rescore the submission")
    try:
        return OodScores(score=str(w.text(b, "score", where, required=True)),
                         n_id=int(w.integer(b, "n_id", where) or 0),
                         id_accuracy=w.number(b, "id_accuracy", where, lo=0.0, hi=1.0),
                         mean_auroc=w.number(b, "mean_auroc", where, lo=0.0, hi=1.0),
                         mean_fpr95=w.number(b, "mean_fpr95", where, lo=0.0, hi=1.0), sets=sets,
                         mean_sets=tuple(str(n) for n in raw_mean))
    except ValueError as exc:
        raise w.fail(where, str(exc), "rescore the submission") from None
