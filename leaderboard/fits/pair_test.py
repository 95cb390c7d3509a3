"""The record of one paired test between adjacent models of a leaderboard column
(:class:`PairTest`), computed by :mod:`vlmrobust.leaderboard.fits.pairwise` and
held by the :class:`~vlmrobust.leaderboard.board.Leaderboard`: below both
(issue 38.4: no import circles)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vlmrobust.metrics.paired import McNemar

ALPHA = 0.05


@dataclass(frozen=True)
class PairTest:
    """One adjacent pair of one column: ``higher`` is ranked just above ``lower``."""

    column: str
    higher: str
    lower: str
    n_shared: int
    difference: float | None  # higher − lower on the shared questions
    ci: tuple[float, float] | None
    p_value: float | None  # what decides the tie
    test: str
    p_bootstrap: float | None = None
    mcnemar: McNemar | None = None
    note: str | None = None

    @property
    def tie(self) -> bool:
        return self.p_value is not None and self.p_value >= ALPHA

    def summary(self) -> str:
        if self.p_value is None:
            return f"no paired test: {self.note or 'not computable'}"
        verdict = "within noise" if self.tie else "significant"
        diff = "" if self.difference is None else f"Δ = {self.difference:+.4g}, "
        return f"{verdict}: {diff}p = {self.p_value:.3g} ({self.test}, n = {self.n_shared})"

    def as_record(self) -> dict[str, Any]:
        return {"column": self.column, "higher": self.higher, "lower": self.lower,
                "n_shared": self.n_shared, "difference": self.difference,
                "ci": None if self.ci is None else list(self.ci), "p_value": self.p_value,
                "test": self.test, "tie": self.tie, "p_bootstrap": self.p_bootstrap,
                "mcnemar_only_higher": None if self.mcnemar is None else self.mcnemar.only_a,
                "mcnemar_only_lower": None if self.mcnemar is None else self.mcnemar.only_b,
                "p_mcnemar": None if self.mcnemar is None else self.mcnemar.p_value,
                "note": self.note}
