"""Bench-C statistics beyond the point estimates (issue 22, items 4 and 10):

- ``intervals``: percentile bootstrap intervals of every aggregate (κ-weighted
  and plain, clean and corrupted, destructive and corrective RAS), resampling
  **source questions** with all their copies (vlmrobust.metrics.clustered):
  the 95 corrupted copies of a question are not independent samples;
- ``corruption_effect`` (not a seed analysis; seed 003's sensitivity analysis
  is evaluation/scoring/bench_c/sensitivity.py): per corruption, the mean per-question
  change of Acc, S and C, its z-score among the model's corruptions, and a
  two-sided paired t-test of the corrupted against the clean copy
  (scipy.stats.ttest_rel over questions; each question's copies of that
  corruption averaged first, so the test is not inflated by the copies);
- ``accuracy_gain``: seed 003's Table 3: the subtle-corruption cells (ℓ = 1)
  where corruption *raised* accuracy (plain ΔAcc = (WR − RW)/N > 0) with the
  sign of the cell's mean ΔS and ΔC, named by the behaviour-quadrant rule.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.metrics.bench_c.ras import CORRECTIVE, DESTRUCTIVE
from vlmrobust.metrics.clustered import (
    cell_mean_replicates,
    cluster_ids,
    cluster_multiplicities,
    percentile_interval,
)
from vlmrobust.metrics.paired import paired_t, z_scores

N_RESAMPLES = 1000
LEVEL = 0.95
# (metric of the corrupted copy, the same metric of the clean copy)
EFFECT_METRICS = (("acc", "acc_clean"), ("S", "S_clean"), ("C", "C_clean"))


def _ci(rep: NDArray[np.float64]) -> list[float] | None:
    ci = percentile_interval(rep, LEVEL)
    return None if ci is None else [ci[0], ci[1]]


def question_clusters(index: Any) -> NDArray[np.int64] | None:
    """The source question (cluster) of every row of a Bench-C index, None for
    other datasets."""
    from vlmrobust.evaluation.validate.dataset_index import question_keys

    if not {"source_id", "corruption"} <= set(index.columns):
        return None
    return cluster_ids(question_keys(index))[0]


def clustered_mean_ci(values: NDArray[np.float64], clusters: NDArray[np.int64], seed: int,
                      ) -> tuple[float | None, float | None]:
    """Interval of a plain mean over rows, resampling their clusters."""
    if values.size == 0:
        return None, None
    dense, q = cluster_ids(clusters)
    w = cluster_multiplicities(q, N_RESAMPLES, seed)
    rep = cell_mean_replicates(values, np.ones(values.shape), np.zeros(values.shape, np.int64),
                               dense, 1, w)
    ci = percentile_interval(rep, LEVEL)
    return (None, None) if ci is None else ci


def intervals(values: Mapping[str, NDArray[np.float64]], kappa: NDArray[np.float64],
              cells: NDArray[np.int64], n_cells: int, pair_clusters: NDArray[np.int64],
              trans: NDArray[np.int8], clean: Mapping[str, NDArray[np.float64]],
              clean_kappa: NDArray[np.float64], clean_clusters: NDArray[np.int64],
              n_clusters: int, seed: int, on: Mapping[str, NDArray[np.bool_]] | None = None,
              clean_on: Mapping[str, NDArray[np.bool_]] | None = None) -> dict[str, Any]:
    """The ``intervals`` block: one draw of question multiplicities shared by every
    metric (a joint bootstrap), applied to the pairs' and the clean rows' sums;
    ``on`` / ``clean_on``: per metric the pairs / clean rows it is computed over
    (default all; truncated rows left out: evaluation/predictions/truncation.py)."""
    on, clean_on = dict(on or {}), dict(clean_on or {})
    w = cluster_multiplicities(n_clusters, N_RESAMPLES, seed)
    out: dict[str, Any] = {"over": "source questions", "n_questions": n_clusters,
                           "n_resamples": N_RESAMPLES, "level": LEVEL}
    subsets = {"destructive_ras": np.isin(trans, DESTRUCTIVE),
               "corrective_ras": np.isin(trans, CORRECTIVE)}
    for label, weigh in (("kappa_weighted", kappa), ("plain", np.ones(kappa.shape))):
        block: dict[str, Any] = {}
        for name, v in values.items():
            m = on.get(name, np.ones(v.shape, dtype=bool))
            block[name] = _ci(cell_mean_replicates(v[m], weigh[m], cells[m], pair_clusters[m],
                                                   n_cells, w))
        if "ras" in values:
            for name, sel in subsets.items():
                sel = sel & on.get("ras", np.ones(sel.shape, dtype=bool))
                block[name] = _ci(cell_mean_replicates(values["ras"][sel], weigh[sel], cells[sel],
                                                       pair_clusters[sel], n_cells, w))
        cw = clean_kappa if label == "kappa_weighted" else np.ones(clean_kappa.shape)
        zeros = np.zeros(clean_clusters.shape, dtype=np.int64)
        every = np.ones(clean_clusters.shape, dtype=bool)
        block["clean"] = {k: _ci(cell_mean_replicates(
            v[m], cw[m], zeros[m], clean_clusters[m], 1, w))
            for k, v in clean.items() for m in [clean_on.get(k, every)]}
        out[label] = block
    return out


def _question_means(x: NDArray[np.float64], clusters: NDArray[np.int64], n: int,
                    ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    cnt = np.bincount(clusters, minlength=n)
    tot = np.bincount(clusters, weights=x, minlength=n)
    held = cnt > 0
    return tot[held] / cnt[held], held


def corruption_effect(values: Mapping[str, NDArray[np.float64]], corruption: Sequence[str],
                      pair_clusters: NDArray[np.int64], n_clusters: int,
                      on: Mapping[str, NDArray[np.bool_]] | None = None) -> dict[str, Any]:
    """Per corruption and for all corruptions together: for Acc, S and C, the mean
    per-question change (corrupted − clean; each question's copies averaged
    first), its z-score among the model's corruptions, and the paired t-test
    (t, df, p) of the per-question corrupted means against the clean values."""
    corr = np.asarray(corruption, dtype=object)
    names = sorted(set(corr.tolist()))
    out: dict[str, Any] = {"unit": "source question (copies averaged)",
                           "test": "two-sided paired t-test, corrupted vs clean "
                                   "(scipy.stats.ttest_rel); not seed 003's sensitivity analysis",
                           "z": "z-score of the mean change among this model's corruptions"}
    for metric, clean_name in EFFECT_METRICS:
        if metric not in values or (clean_name not in values and metric != "acc"):
            out[metric] = None
            continue
        corrupted = values[metric]
        clean = (values[clean_name] if clean_name in values
                 else values["acc"] - values["delta_acc"])
        rows: dict[str, dict[str, Any]] = {}
        for name in [*names, "all"]:
            sel = np.ones(corr.shape, bool) if name == "all" else corr == name
            sel = sel & (on or {}).get(metric, np.ones(corr.shape, bool))
            d, held = _question_means(corrupted[sel], pair_clusters[sel], n_clusters)
            o, _ = _question_means(clean[sel], pair_clusters[sel], n_clusters)
            t = paired_t(d, o)
            rows[name] = {"n_questions": int(held.sum()), "mean_change": t.mean_difference,
                          "t": t.statistic, "df": t.df, "p": t.p_value, "z": None}
        z = z_scores([rows[n]["mean_change"] for n in names])
        for n, zv in zip(names, z.tolist(), strict=True):
            rows[n]["z"] = None if np.isnan(zv) else float(zv)
        out[metric] = rows
    return out


QUADRANT_OF_SIGNS = {(True, True): "degraded", (False, True): "overconfident",
                     (True, False): "hesitant", (False, False): "stable"}


# Table 3: "all cases where subtle corruptions (ℓ = 1) lead to an unexpected
# overall increase in accuracy" (seed 003, Appendix 9.3).
SUBTLE_SEVERITY = 1


def accuracy_gain(cells: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Seed 003's Table 3: the cells at severity ℓ = 1 whose plain ΔAcc is positive
    (a subtle corruption raised accuracy), each with WR, RW, ΔAcc = (WR − RW)/N
    and the category of its mean ΔS and ΔC by the quadrant rule (ΔS > 0 and
    ΔC > 0 degraded, ΔS ≤ 0 < ΔC overconfident, ΔC ≤ 0 < ΔS hesitant, both ≤ 0
    stable); category null without logits. Cells at ℓ ≥ 2 are not listed.

    >>> accuracy_gain([{"corruption": "fog", "severity": 1, "n": 10,
    ...                 "transitions": {"RR": 5, "RW": 1, "WR": 3, "WW": 1},
    ...                 "plain": {"delta_acc": 0.2, "delta_S": 0.1, "delta_C": -0.05}}])[0]["category"]
    'hesitant'
    """
    out = []
    for c in cells:
        plain = c.get("plain") or {}
        dacc = plain.get("delta_acc")
        if c["severity"] != SUBTLE_SEVERITY or dacc is None or dacc <= 0:
            continue
        ds, dc = plain.get("delta_S"), plain.get("delta_C")
        t = c.get("transitions") or {}
        out.append({"corruption": c["corruption"], "severity": c["severity"], "n": c["n"],
                    "WR": t.get("WR"), "RW": t.get("RW"), "delta_acc": dacc,
                    "delta_S": ds, "delta_C": dc,
                    "category": None if ds is None or dc is None
                    else QUADRANT_OF_SIGNS[(ds > 0, dc > 0)]})
    return out


class Pairing:
    """Each corrupted row of a Bench-C index with its clean row, its
    (corruption, severity) cell, κ and its source question (cluster): what the
    scorer pairs (evaluation/scoring/dataset.py), computed once per dataset index."""

    def __init__(self, index: Any) -> None:
        from vlmrobust.evaluation.validate.dataset_index import CLEAN, clean_rows_of, question_keys

        cols = index.columns
        keys = question_keys(index)
        clean_of = clean_rows_of(index)
        corruption = cols["corruption"]
        self.d_rows = np.flatnonzero(corruption != CLEAN)
        self.o_rows = np.fromiter((clean_of[keys[i]] for i in self.d_rows.tolist()),
                                  dtype=np.int64, count=self.d_rows.size)
        cell_keys = list(zip(corruption[self.d_rows].tolist(),
                             cols["severity"][self.d_rows].tolist(), strict=True))
        self.cell_keys = sorted(set(cell_keys))
        cell_id = {k: i for i, k in enumerate(self.cell_keys)}
        self.cells = np.fromiter((cell_id[k] for k in cell_keys), dtype=np.int64,
                                 count=len(cell_keys))
        kappa = (cols["kappa"].astype(np.float64) if "kappa" in cols
                 else np.ones(index.n_rows))
        self.kappa = kappa[self.d_rows]
        self.clusters, self.n_clusters = cluster_ids([keys[i] for i in self.d_rows.tolist()])

    def values(self, correct: NDArray[np.bool_]) -> dict[str, NDArray[np.float64]]:
        """Per pair: acc of the corrupted copy and ΔAcc, from per-row correctness."""
        ok_d = correct[self.d_rows].astype(np.float64)
        return {"acc": ok_d, "delta_acc": ok_d - correct[self.o_rows].astype(np.float64)}


_PAIRINGS: dict[int, tuple[weakref.ref[Any], Pairing]] = {}


def pairing_for(index: Any) -> Pairing:
    """The :class:`Pairing` of ``index``, computed once while the index lives (the
    leaderboard re-scores every submission of a build against one shared index)."""
    hit = _PAIRINGS.get(id(index))
    if hit is not None and hit[0]() is index:
        return hit[1]
    for key in [k for k, (ref, _) in _PAIRINGS.items() if ref() is None]:
        del _PAIRINGS[key]
    pairing = Pairing(index)
    _PAIRINGS[id(index)] = (weakref.ref(index), pairing)
    return pairing
