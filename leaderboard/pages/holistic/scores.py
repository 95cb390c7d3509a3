"""What the Holistic page reads of a re-scored dataset section beyond accuracy:
the ``shape_bias`` block of cue-conflict datasets
(vlmrobust.evaluation.scoring.shape_bias), checked field by field."""

from __future__ import annotations

from typing import Any

from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.score_records import ShapeBiasScore


def load_shape_bias(w: Where, raw: Any, where: str) -> dict[str, ShapeBiasScore]:
    """{config: ShapeBiasScore} from a section's ``shape_bias`` (None: {})."""
    if raw is None:
        return {}
    out: dict[str, ShapeBiasScore] = {}
    for config, block in w.mapping(raw, where).items():
        cw = f"{where}.{config}"
        b = w.mapping(block, cw)
        ci_raw = b.get("shape_bias_ci")
        ci: tuple[float, float] | None = None
        if ci_raw is not None:
            if (not isinstance(ci_raw, list) or len(ci_raw) != 2 or any(
                    isinstance(x, bool) or not isinstance(x, int | float) for x in ci_raw)
                    or not 0.0 <= ci_raw[0] <= ci_raw[1] <= 1.0):
                raise w.fail(f"{cw}.shape_bias_ci", f"{ci_raw!r} is not an interval in [0, 1]",
                             "rescore the submission")
            ci = (float(ci_raw[0]), float(ci_raw[1]))
        try:
            out[str(config)] = ShapeBiasScore(
                n=int(w.integer(b, "n", cw) or 0), n_conflict=int(w.integer(b, "n_conflict", cw) or 0),
                shape_decisions=int(w.integer(b, "shape_decisions", cw) or 0),
                texture_decisions=int(w.integer(b, "texture_decisions", cw) or 0),
                shape_bias=w.number(b, "shape_bias", cw, lo=0.0, hi=1.0), shape_bias_ci=ci,
                shape_accuracy=w.number(b, "shape_accuracy", cw, lo=0.0, hi=1.0),
                texture_accuracy=w.number(b, "texture_accuracy", cw, lo=0.0, hi=1.0))
        except ValueError as exc:
            raise w.fail(cw, str(exc), "rescore the submission") from None
    return out
