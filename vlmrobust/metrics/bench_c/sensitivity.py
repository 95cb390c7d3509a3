"""Seed 003's sensitivity analysis of RAS against ΔAcc (§6.2, Appendix 9.2, Table 2).

The seed (§6.2): "For each model and corruption type, we compute the mean
absolute z-score of RAS and ΔAcc. across adjacent severity levels (i.e.,
ℓ = m → m + 1), denoted as E[|z_RAS|] and E[|z_ΔAcc.|]. A one-sided paired
t-test evaluates the hypothesis H0: E[|z_RAS|] ≤ E[|z_ΔAcc.|]". Table 2 gives one
row per model: the two means, t and p, where p = P(T₁₈ ≥ t) over the 19
corruption types (df 18) in all 13 rows.

How the quantities are read (the seed names them, it prints no formula):

- a *pair* is one question and corruption at adjacent severities ℓ = m → m + 1:
  RAS and ΔAcc are Eq. 10 and ΔAcc with the severity-m distribution in the role
  of the reference p⁽ᵒ⁾ and severity m + 1 in the role of p⁽ᵈ'ˡ⁾ (the arrow is the
  clean → corrupted arrow of §5 shifted by one level); for ΔAcc this equals
  ΔAcc⁽ᵈ'ᵐ⁺¹⁾ − ΔAcc⁽ᵈ'ᵐ⁾ against the clean copy, so only RAS depends on the reading;
- *z-score normalized* (Table 2's caption): within one corruption type, each
  pair's value minus the mean over the corruption's pairs (questions × steps m),
  over their sample standard deviation (ddof = 1, :func:`z_scores`);
- E[|z|]: the mean of |z| over those pairs. A metric with no spread in a
  corruption (no prediction flips between adjacent levels, say) has no z-score:
  that corruption is left out of the test and counted.

E[|z|] = E|x − x̄|/sd(x) does not depend on the metric's scale: it is small for
a metric that moves on a few pairs only (ΔAcc ∈ {−1, 0, 1} flips on a few) and
about √(2/π) ≈ 0.80 for one that moves on every pair roughly normally.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from vlmrobust.metrics.paired import paired_t, z_scores


def mean_abs_z(values: ArrayLike) -> float | None:
    """E[|z|] = mean |x − x̄| / sd(x) (sample sd, ddof = 1); None with fewer than
    2 values or no spread.

    >>> round(mean_abs_z([0.0, 0.0, 0.0, 1.0]), 4)   # |z| = (0.5, 0.5, 0.5, 1.5)
    0.75
    >>> mean_abs_z([1.0, 1.0]) is None
    True
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"values must be finite, got {float(x[~np.isfinite(x)][0])!r}")
    z = z_scores(x)
    return None if np.isnan(z).any() else float(np.abs(z).mean())


def one_sided_p(t: float, df: int) -> float:
    """P(T ≥ t) for Student's t with ``df`` degrees of freedom: the p-value of a
    one-sided ("greater") test. Table 2, Eagle-X5: t = 51.215, df = 18.

    >>> f"{one_sided_p(51.215, 18):.2e}"
    '2.95e-21'
    """
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df!r}")
    if not np.isfinite(t):
        raise ValueError(f"t must be finite, got {t!r}")
    return float(stats.t.sf(t, df))


@dataclass(frozen=True)
class Sensitivity:
    """Per group (corruption type): E[|z_RAS|], E[|z_ΔAcc|] and the number of
    pairs; the groups in the test, their mean E[|z|]s and the one-sided paired t-test."""

    groups: tuple[str, ...]
    n_pairs: tuple[int, ...]
    e_abs_z_ras: tuple[float | None, ...]
    e_abs_z_delta_acc: tuple[float | None, ...]
    tested: tuple[str, ...]          # groups with both E[|z|] defined
    mean_e_abs_z_ras: float | None
    mean_e_abs_z_delta_acc: float | None
    t: float | None
    df: int
    p: float | None

    def __post_init__(self) -> None:
        n = len(self.groups)
        for name in ("n_pairs", "e_abs_z_ras", "e_abs_z_delta_acc"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries for {n} groups")
        if self.p is not None and not 0.0 <= self.p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {self.p!r}")
        if not set(self.tested) <= set(self.groups):
            raise ValueError(f"tested groups {sorted(set(self.tested) - set(self.groups))} unknown")


def ras_sensitivity(ras: ArrayLike, delta_acc: ArrayLike, group: ArrayLike) -> Sensitivity:
    """Seed 003's test of H0: E[|z_RAS|] ≤ E[|z_ΔAcc|] from per-pair RAS and ΔAcc
    (one pair = a question and corruption at severities m → m + 1) and each
    pair's group (corruption type). With dᵢ = E[|z_RAS|]ᵢ − E[|z_ΔAcc|]ᵢ over the
    n groups where both are defined: t = d̄ / (sd(d)/√n), df = n − 1,
    p = P(T_df ≥ t) (scipy.stats.ttest_rel(..., alternative="greater")); t and p
    are None when n < 2 or the dᵢ have no spread.

    >>> ras = [0.1, -0.2, 0.3, 0.2, -0.1, 0.0, -0.1, 0.2, -0.3, 0.25, 0.05, -0.15, 0.1, 0.2]
    >>> dacc = [0, 0, 0, 1, 0, 0, 0, 0, -1, 1, 0, 0, 0, 0]    # "c": no flip, no z
    >>> r = ras_sensitivity(ras, dacc, ["a"] * 6 + ["b"] * 6 + ["c"] * 2)
    >>> r.tested, [round(v, 3) for v in r.e_abs_z_ras], r.e_abs_z_delta_acc[2]
    (('a', 'b'), [0.802, 0.821, 0.707], None)
    >>> round(r.t, 3), r.df, round(r.p, 3)
    (2.405, 1, 0.125)
    """
    r = np.asarray(ras, dtype=np.float64)
    a = np.asarray(delta_acc, dtype=np.float64)
    g = np.asarray(group, dtype=object)
    if not (r.shape == a.shape == g.shape) or r.ndim != 1:
        raise ValueError(f"ras, delta_acc and group must be 1-D of one length, got "
                         f"{r.shape}, {a.shape} and {g.shape}")
    bad = ~((r >= -2.0) & (r <= 1.0))  # a pair's RAS is an Eq. 10 value
    if bad.any():
        raise ValueError(f"ras must be RAS values in [-2, 1], got {float(r[bad][0])!r}")
    bad = ~np.isin(a, (-1.0, 0.0, 1.0))
    if bad.any():
        raise ValueError(f"delta_acc must be -1, 0 or 1, got {float(a[bad][0])!r}")
    names = tuple(sorted({str(x) for x in g.tolist()}))
    gs = np.asarray([str(x) for x in g.tolist()], dtype=object)
    n_pairs, e_r, e_a = [], [], []
    for name in names:
        sel = gs == name
        n_pairs.append(int(sel.sum()))
        e_r.append(mean_abs_z(r[sel]))
        e_a.append(mean_abs_z(a[sel]))
    tested = [i for i in range(len(names)) if e_r[i] is not None and e_a[i] is not None]
    x = np.array([e_r[i] for i in tested], dtype=np.float64)
    y = np.array([e_a[i] for i in tested], dtype=np.float64)
    t = p = None
    if x.size >= 2:
        res = paired_t(x, y)
        if res.statistic is not None:
            t, p = res.statistic, one_sided_p(res.statistic, res.df)
    return Sensitivity(
        groups=names, n_pairs=tuple(n_pairs), e_abs_z_ras=tuple(e_r), e_abs_z_delta_acc=tuple(e_a),
        tested=tuple(names[i] for i in tested),
        mean_e_abs_z_ras=float(x.mean()) if x.size else None,
        mean_e_abs_z_delta_acc=float(y.mean()) if y.size else None,
        t=t, df=max(x.size - 1, 0), p=p)
