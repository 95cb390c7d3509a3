"""The ``sensitivity`` block of a Bench-C ``scores.json``: seed 003's test that
RAS is more sensitive to visual quality than ΔAcc (§6.2, Appendix 9.2, Table 2),
by :func:`vlmrobust.metrics.bench_c.sensitivity.ras_sensitivity`.

Pairs are a question's copies of one corruption at adjacent severities
ℓ = m → m + 1 (the seed's "adjacent severity levels"); severities one apart
only, so a build without every level has fewer pairs (none with levels 1 and 3
alone). Without logits there is no RAS and the block is null."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation.validate.dataset_index import CLEAN, question_keys
from vlmrobust.metrics.bench_c.ras import pair_metrics
from vlmrobust.metrics.bench_c.sensitivity import ras_sensitivity

HYPOTHESIS = "H0: E[|z_RAS|] <= E[|z_delta_acc|]; one-sided paired t-test over corruption types"
PAIRS = ("a question's copies of one corruption at severities m -> m+1; RAS and delta_acc with "
         "severity m as the reference and m+1 as the corrupted copy")
Z = "within a corruption over its pairs: (x - mean)/sd (ddof 1); E[|z|] the mean |z|"


def adjacent_pairs(index: Any) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Rows (lower, upper) of every (question, corruption, m) whose copies at
    severities m and m + 1 are both in the dataset, in row order of the lower copy.

    Two questions from different sources sharing a ``source_id`` stay apart
    (:func:`question_keys`)."""
    cols = index.columns
    keys = question_keys(index)
    corruption = cols["corruption"].tolist()
    severity = [int(s) for s in cols["severity"].tolist()]
    at: dict[tuple[tuple[str, str], str, int], int] = {}
    for i, (k, c, s) in enumerate(zip(keys, corruption, severity, strict=True)):
        if c != CLEAN:
            at.setdefault((k, c, s), i)
    lower, upper = [], []
    for (k, c, s), i in sorted(at.items(), key=lambda kv: kv[1]):
        j = at.get((k, c, s + 1))
        if j is not None:
            lower.append(i)
            upper.append(j)
    return np.asarray(lower, dtype=np.int64), np.asarray(upper, dtype=np.int64)


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)


def sensitivity(index: Any, probs: NDArray[np.float64] | None,
                full: NDArray[np.bool_] | None = None) -> dict[str, Any] | None:
    """The block: per corruption E[|z_RAS|], E[|z_ΔAcc|] and its pair count; the
    corruptions in the test, their mean E[|z|]s, t, df and the one-sided p;
    corruptions left out (a metric with no spread has no z-score). ``full``: the
    rows with every option's log-prob observed (a pair with another row is left
    out: evaluation/predictions/truncation.py)."""
    if probs is None:
        return None
    lo, hi = adjacent_pairs(index)
    if full is not None:
        keep = full[lo] & full[hi]
        lo, hi = lo[keep], hi[keep]
    y = index.answer
    m = pair_metrics(probs[lo], probs[hi], y[lo], index.n_options[lo])
    res = ras_sensitivity(m.ras, m.delta_acc, index.columns["corruption"][lo])
    per = {g: {"n_pairs": n, "e_abs_z_ras": _num(r), "e_abs_z_delta_acc": _num(a)}
           for g, n, r, a in zip(res.groups, res.n_pairs, res.e_abs_z_ras,
                                 res.e_abs_z_delta_acc, strict=True)}
    return {"source": "seed 003 §6.2, Appendix 9.2, Table 2", "hypothesis": HYPOTHESIS,
            "pairs": PAIRS, "z": Z, "n_pairs": int(lo.size), "corruptions": per,
            "tested": list(res.tested),
            "left_out": [g for g in res.groups if g not in res.tested],
            "e_abs_z_ras": res.mean_e_abs_z_ras, "e_abs_z_delta_acc": res.mean_e_abs_z_delta_acc,
            "t": res.t, "df": res.df, "p": res.p}
