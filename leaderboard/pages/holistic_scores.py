"""What the Holistic page reads of a re-scored dataset section beyond accuracy:
the ``shape_bias`` block of cue-conflict datasets
(vlmrobust.evaluation.scoring.shape_bias), checked field by field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlmrobust.leaderboard.fields import Where


@dataclass(frozen=True)
class ShapeBiasScore:
    """One config's shape-bias numbers (see vlmrobust.evaluation.scoring.shape_bias)."""

    n: int
    n_conflict: int
    shape_decisions: int
    texture_decisions: int
    shape_bias: float | None
    shape_bias_ci: tuple[float, float] | None
    shape_accuracy: float | None
    texture_accuracy: float | None

    def __post_init__(self) -> None:
        if not 0 <= self.n_conflict <= self.n:
            raise ValueError("n_conflict must lie in [0, n]")
        if min(self.shape_decisions, self.texture_decisions) < 0 or \
                self.shape_decisions + self.texture_decisions > self.n_conflict:
            raise ValueError("shape + texture decisions must lie within the conflict stimuli")


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
