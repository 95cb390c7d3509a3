"""Clean→corrupted pair metrics of Bench-C (the RAS paper).

For a question with clean distribution p⁽ᵒ⁾ and corrupted p⁽ᵈ⁾:

    ΔS   = S(p⁽ᵈ⁾) − S(p⁽ᵒ⁾)                       (uncertainty shift)
    ΔC   = C⁽ᵈ⁾ − C⁽ᵒ⁾                              (calibration-error shift)
    ΔAcc = 1[ŷ⁽ᵈ⁾ = y] − 1[ŷ⁽ᵒ⁾ = y]
    RAS  = −ΔC − [ΔC]₊·[−ΔS]₊ − [ΔS]₊·[−ΔC]₊

The penalty terms are products, which keeps RAS in [−2, 1]: ΔC, ΔS ∈ [−1, 1],
the first product is non-zero only when ΔC > 0 (then RAS ≥ −ΔC − ΔC·1 ≥ −2)
and the second only when ΔC < 0 (then RAS ≤ −ΔC − 0 ≤ 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vlmrobust.metrics.uncertainty import calibration_error, normalized_entropy

QUADRANTS = ("degraded", "overconfident", "hesitant", "stable")
TRANSITIONS = ("RR", "RW", "WR", "WW")
# RR, RW: the clean answer was right; WR, WW: it was wrong.
DESTRUCTIVE = (0, 1)
CORRECTIVE = (2, 3)


def _deltas(delta_s: ArrayLike, delta_c: ArrayLike) -> tuple[NDArray[np.float64], ...]:
    ds = np.asarray(delta_s, dtype=np.float64)
    dc = np.asarray(delta_c, dtype=np.float64)
    if ds.shape != dc.shape:
        raise ValueError(f"delta_s and delta_c must have one shape, got {ds.shape} and {dc.shape}")
    for name, arr in (("delta_s", ds), ("delta_c", dc)):
        bad = ~((arr >= -1.0) & (arr <= 1.0))
        if bad.any():
            raise ValueError(f"{name} must be in [-1, 1], got {arr[bad].flat[0]!r}")
    return ds, dc


def ras(delta_s: ArrayLike, delta_c: ArrayLike) -> NDArray[np.float64]:
    """RAS = −ΔC − [ΔC]₊·[−ΔS]₊ − [ΔS]₊·[−ΔC]₊ ∈ [−2, 1].

    >>> ras([0.0, -0.5, -1.0, 0.2], [-1.0, 1.0, 1.0, -0.5]).tolist()
    [1.0, -1.5, -2.0, 0.4]
    """
    ds, dc = _deltas(delta_s, delta_c)
    pos = np.maximum
    out = -dc - pos(dc, 0.0) * pos(-ds, 0.0) - pos(ds, 0.0) * pos(-dc, 0.0)
    return np.asarray(out + 0.0, dtype=np.float64)  # + 0.0 turns −0.0 into 0.0


def quadrant(delta_s: ArrayLike, delta_c: ArrayLike) -> NDArray[np.int8]:
    """Behaviour quadrant index into :data:`QUADRANTS`:
    0 degraded (ΔS > 0, ΔC > 0), 1 overconfident (ΔS ≤ 0, ΔC > 0),
    2 hesitant (ΔS > 0, ΔC ≤ 0), 3 stable (ΔS ≤ 0, ΔC ≤ 0).

    >>> quadrant([0.1, -0.1, 0.1, 0.0], [0.1, 0.1, 0.0, -0.1]).tolist()
    [0, 1, 2, 3]
    """
    ds, dc = _deltas(delta_s, delta_c)
    return np.asarray(np.where(dc > 0, 0, 2) + np.where(ds > 0, 0, 1), dtype=np.int8)


def transition(correct_clean: ArrayLike, correct_corrupted: ArrayLike) -> NDArray[np.int8]:
    """Transition index into :data:`TRANSITIONS` (clean letter, corrupted letter;
    R right, W wrong): 0 RR, 1 RW, 2 WR, 3 WW.

    >>> transition([1, 1, 0, 0], [1, 0, 1, 0]).tolist()
    [0, 1, 2, 3]
    """
    o = np.asarray(correct_clean).astype(bool)
    d = np.asarray(correct_corrupted).astype(bool)
    if o.shape != d.shape:
        raise ValueError(f"clean and corrupted indicators differ in shape: {o.shape} vs {d.shape}")
    return np.asarray(np.where(o, 0, 2) + np.where(d, 0, 1), dtype=np.int8)


def delta_accuracy(correct_clean: ArrayLike, correct_corrupted: ArrayLike) -> NDArray[np.float64]:
    """ΔAcc = 1[ŷ⁽ᵈ⁾ = y] − 1[ŷ⁽ᵒ⁾ = y] ∈ {−1, 0, 1}.

    >>> delta_accuracy([1, 1, 0], [1, 0, 1]).tolist()
    [0.0, -1.0, 1.0]
    """
    o = np.asarray(correct_clean).astype(np.float64)
    d = np.asarray(correct_corrupted).astype(np.float64)
    if o.shape != d.shape:
        raise ValueError(f"clean and corrupted indicators differ in shape: {o.shape} vs {d.shape}")
    return d - o


def counts(codes: ArrayLike, names: tuple[str, ...]) -> dict[str, int]:
    """How many codes fall in each named class (codes index ``names``).

    >>> counts([0, 0, 3], QUADRANTS)
    {'degraded': 2, 'overconfident': 0, 'hesitant': 0, 'stable': 1}
    """
    c = np.bincount(np.asarray(codes, dtype=np.int64), minlength=len(names))
    if c.size > len(names):
        raise ValueError(f"codes must be < {len(names)}")
    return {name: int(v) for name, v in zip(names, c, strict=True)}


@dataclass(frozen=True)
class PairMetrics:
    """Per-pair arrays for clean/corrupted pairs (all of one length N)."""

    s_clean: NDArray[np.float64]
    s_corrupted: NDArray[np.float64]
    c_clean: NDArray[np.float64]
    c_corrupted: NDArray[np.float64]
    correct_clean: NDArray[np.bool_]
    correct_corrupted: NDArray[np.bool_]

    def __post_init__(self) -> None:
        n = self.s_clean.shape
        for name in ("s_corrupted", "c_clean", "c_corrupted", "correct_clean", "correct_corrupted"):
            if getattr(self, name).shape != n:
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected {n}")

    @property
    def delta_s(self) -> NDArray[np.float64]:
        return self.s_corrupted - self.s_clean

    @property
    def delta_c(self) -> NDArray[np.float64]:
        return self.c_corrupted - self.c_clean

    @property
    def delta_acc(self) -> NDArray[np.float64]:
        return delta_accuracy(self.correct_clean, self.correct_corrupted)

    @property
    def ras(self) -> NDArray[np.float64]:
        return ras(self.delta_s, self.delta_c)

    @property
    def quadrant(self) -> NDArray[np.int8]:
        return quadrant(self.delta_s, self.delta_c)

    @property
    def transition(self) -> NDArray[np.int8]:
        return transition(self.correct_clean, self.correct_corrupted)


def pair_metrics(
    probs_clean: ArrayLike,
    probs_corrupted: ArrayLike,
    labels: ArrayLike,
    n_options: ArrayLike | None = None,
) -> PairMetrics:
    """S, C and correctness for each (clean, corrupted) pair of rows.

    >>> m = pair_metrics([[0.9, 0.1]], [[0.5, 0.5]], [0])
    >>> m.delta_s.round(4).tolist(), m.delta_c.round(4).tolist(), m.ras.round(4).tolist()
    ([0.531], [0.4], [-0.4])
    """
    po = np.asarray(probs_clean, dtype=np.float64)
    pd = np.asarray(probs_corrupted, dtype=np.float64)
    if po.shape != pd.shape:
        raise ValueError(f"clean and corrupted probs differ in shape: {po.shape} vs {pd.shape}")
    y = np.asarray(labels)
    return PairMetrics(
        s_clean=normalized_entropy(po, n_options),
        s_corrupted=normalized_entropy(pd, n_options),
        c_clean=calibration_error(po, y),
        c_corrupted=calibration_error(pd, y),
        correct_clean=po.argmax(axis=1) == y,
        correct_corrupted=pd.argmax(axis=1) == y,
    )
