"""The ``bench_c`` block of scores.json (docs/internals.md): per (corruption,
severity) cell κ-weighted and plain means of the pair metrics of each corrupted
row against the clean copy of its question, quadrant and transition counts,
per-category blocks, clustered intervals, seed 003's sensitivity analysis
(bench_c_sensitivity) and the corruption-effect t-tests (bench_c_stats)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation.predictions.truncation import partial_rows, undetermined_rows
from vlmrobust.evaluation.scoring.bench_c import sensitivity as bench_c_sensitivity
from vlmrobust.evaluation.scoring.bench_c import stats as bench_c_stats
from vlmrobust.evaluation.scoring.bench_c.stats import question_clusters
from vlmrobust.evaluation.scoring.common import DEFAULT_SEED, derived_seed
from vlmrobust.evaluation.scoring.common import json_num as _num
from vlmrobust.evaluation.validate.check import ValidationReport
from vlmrobust.evaluation.validate.dataset_index import CLEAN, clean_rows_of, question_keys
from vlmrobust.metrics.bench_c import aggregate as aggregate_metrics
from vlmrobust.metrics.bench_c.aggregate import (
    kappa_weighted_cell_means,
    kappa_weighted_mean,
    mean_over_cells,
)
from vlmrobust.metrics.bench_c.ras import (
    CORRECTIVE,
    DESTRUCTIVE,
    QUADRANTS,
    TRANSITIONS,
    counts,
    pair_metrics,
)
from vlmrobust.metrics.uncertainty import softmax

BENCH_C_PAIR_METRICS = ("acc", "delta_acc", "S", "S_clean", "delta_S", "C", "C_clean", "delta_C",
                        "ras")
ACC_METRICS = ("acc", "delta_acc")  # read from answers: kept on truncated rows
BENCH_C_NOTE = ("Top-level cell and aggregate metrics are κ-weighted (Σκ·x/Σκ per cell, then the "
                "mean over cells); every cell and aggregate also has 'plain': unweighted means "
                "over the cell's questions, as in the paper's per-cell tables. S_clean/C_clean "
                "are the clean copy's S and C over the same questions; destructive_ras (RR ∪ RW) "
                "and corrective_ras (WR ∪ WW) are per cell too.")


def pair_masks(report: ValidationReport, o_rows: NDArray[np.int64], d_rows: NDArray[np.int64]
               ) -> tuple[dict[str, NDArray[np.bool_]], NDArray[np.bool_], NDArray[np.bool_]]:
    """Per metric the pairs it is computed over: Acc and ΔAcc over pairs whose
    two answers are determined, S, C, RAS and the quadrants over pairs whose two
    rows had every option observed (evaluation/predictions/truncation.py); and
    per row whether it is determined / full."""
    a, index = report.aligned, report.index
    full = ~partial_rows(a.truncated, index.n_rows)
    det = ~undetermined_rows(a.truncated, index.n_options, a.from_text)
    by_acc, by_prob = det[o_rows] & det[d_rows], full[o_rows] & full[d_rows]
    on = {name: by_acc if name in ACC_METRICS else by_prob for name in BENCH_C_PAIR_METRICS}
    return on, det, full


def _bench_c_block(sel: NDArray[np.bool_], values: Mapping[str, NDArray[np.float64]],
                   w: NDArray[np.float64], cells: NDArray[np.int64],
                   cell_keys: list[tuple[str, int]], trans: NDArray[np.int8],
                   quad: NDArray[np.int8] | None, on: Mapping[str, NDArray[np.bool_]]
                   ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cells and aggregate over the pairs ``sel`` (all pairs, or one category's),
    each metric over those of them in ``on[metric]`` (:func:`pair_masks`)."""
    full = on["ras"]
    n_cells = len(cell_keys)
    c = cells[sel]
    weighted: dict[str, NDArray[np.float64]] = {}
    plain: dict[str, NDArray[np.float64]] = {}
    for name, v in values.items():
        m = sel & on[name]
        weighted[name] = kappa_weighted_cell_means(v[m], w[m], cells[m], n_cells)
        plain[name] = aggregate_metrics.plain_cell_means(v[m], cells[m], n_cells)
    if "ras" in values:
        for subset, codes in (("destructive_ras", DESTRUCTIVE), ("corrective_ras", CORRECTIVE)):
            part = sel & full & np.isin(trans, codes)
            weighted[subset] = kappa_weighted_cell_means(values["ras"][part], w[part], cells[part],
                                                         n_cells)
            plain[subset] = aggregate_metrics.plain_cell_means(values["ras"][part], cells[part], n_cells)
    names = [*BENCH_C_PAIR_METRICS, "destructive_ras", "corrective_ras"]
    cell_n = np.bincount(c, minlength=n_cells)
    # per-cell class counts in one pass: row = cell, column = class code
    det = sel & on["acc"]
    t_counts = np.bincount(cells[det] * 4 + trans[det], minlength=n_cells * 4).reshape(n_cells, 4)
    q_counts = (np.bincount(cells[sel & full] * 4 + quad[sel & full],
                            minlength=n_cells * 4).reshape(n_cells, 4)
                if quad is not None else None)
    out_cells = []
    for i, (corr, sev) in enumerate(cell_keys):
        if cell_n[i] == 0:
            continue
        cell: dict[str, Any] = {"corruption": corr, "severity": int(sev), "n": int(cell_n[i])}
        cell.update({k: _num(weighted[k][i]) if k in weighted else None for k in names})
        cell["plain"] = {k: _num(plain[k][i]) if k in plain else None for k in names}
        cell["quadrants"] = (dict(zip(QUADRANTS, map(int, q_counts[i]), strict=True))
                             if q_counts is not None else None)
        cell["transitions"] = dict(zip(TRANSITIONS, map(int, t_counts[i]), strict=True))
        out_cells.append(cell)
    aggregate: dict[str, Any] = {k: _num(mean_over_cells(weighted[k])) if k in weighted else None
                                 for k in names}
    aggregate["plain"] = {k: _num(mean_over_cells(plain[k])) if k in plain else None
                          for k in names}
    aggregate["quadrants"] = counts(quad[sel & full], QUADRANTS) if quad is not None else None
    aggregate["transitions"] = counts(trans[det], TRANSITIONS)
    return out_cells, aggregate


def bench_c_scores(report: ValidationReport, seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The ``bench_c`` block (docs/internals.md). Per (corruption, severity)
    cell: κ-weighted means of Acc, ΔAcc, S, S_clean, ΔS, C, C_clean, ΔC, RAS
    and destructive / corrective RAS (top level), the same as plain means
    (``plain``), and quadrant / transition counts; aggregates are means over
    cells (see vlmrobust.metrics.bench_c.aggregate for the Σκ normaliser). The same
    block is repeated for every source ``category`` under ``categories``.

    Each corrupted row is paired with the clean row of its question,
    ``(source, source_id)`` (a source_id is unique only within its source); κ is
    the corrupted row's (every copy of a question carries the same κ; weight 1
    when the dataset has no κ column). ``clean_accuracy`` is the κ-weighted
    accuracy over clean rows, ``clean`` holds plain and κ-weighted clean Acc,
    S and C. Destructive (corrective) RAS of a cell is over its RR ∪ RW
    (WR ∪ WW) pairs; cells without such pairs are null and left out of the
    mean over cells. Without logits S, C, RAS and the quadrants are null."""
    index = report.index
    cols = index.columns
    if not {"source_id", "corruption", "severity"} <= set(cols):
        return None
    corruption = cols["corruption"]
    kappa = cols["kappa"].astype(np.float64) if "kappa" in cols else np.ones(index.n_rows)
    is_clean = corruption == CLEAN
    clean_rows = np.flatnonzero(is_clean)
    clean_of = clean_rows_of(index)
    keys = question_keys(index)
    d_rows = np.flatnonzero(~is_clean)
    o_rows = np.fromiter((clean_of[keys[i]] for i in d_rows.tolist()), dtype=np.int64,
                         count=d_rows.size)
    y = index.answer
    ok = report.aligned.predicted == y
    keys = list(zip(corruption[d_rows].tolist(), cols["severity"][d_rows].tolist(), strict=True))
    cell_keys = sorted(set(keys))
    cell_id = {k: i for i, k in enumerate(cell_keys)}
    cells = np.fromiter((cell_id[k] for k in keys), dtype=np.int64, count=len(keys))
    w = kappa[d_rows]
    ok_o, ok_d = ok[o_rows].astype(np.float64), ok[d_rows].astype(np.float64)
    trans = np.asarray(np.where(ok_o > 0, 0, 2) + np.where(ok_d > 0, 0, 1), dtype=np.int8)
    values: dict[str, NDArray[np.float64]] = {"acc": ok_d, "delta_acc": ok_d - ok_o}
    quad: NDArray[np.int8] | None = None
    logits = report.aligned.logits
    s_all = c_all = None
    probs = None
    if logits is not None:
        probs = softmax(logits)
        m = pair_metrics(probs[o_rows], probs[d_rows], y[d_rows], index.n_options[d_rows])
        values.update(S=m.s_corrupted, S_clean=m.s_clean, delta_S=m.delta_s, C=m.c_corrupted,
                      C_clean=m.c_clean, delta_C=m.delta_c, ras=m.ras)
        quad = m.quadrant
        clean_m = pair_metrics(probs[clean_rows], probs[clean_rows], y[clean_rows],
                               index.n_options[clean_rows])
        s_all, c_all = clean_m.s_clean, clean_m.c_clean

    on, det, full = pair_masks(report, o_rows, d_rows)
    c_det, c_full = det[clean_rows], full[clean_rows]

    def clean_block(rows_sel: NDArray[np.bool_]) -> dict[str, Any]:
        k = kappa[clean_rows]
        a, f = rows_sel & c_det, rows_sel & c_full
        out: dict[str, Any] = {"n_questions": int(rows_sel.sum())}
        for label, weigh in (("plain", np.ones(k.shape)), ("kappa_weighted", k)):
            part = {"acc": _num(kappa_weighted_mean(ok[clean_rows][a].astype(np.float64),
                                                    weigh[a]))}
            part["S"] = _num(kappa_weighted_mean(s_all[f], weigh[f])) if s_all is not None else None
            part["C"] = _num(kappa_weighted_mean(c_all[f], weigh[f])) if c_all is not None else None
            out[label] = part
        return out

    all_pairs = np.ones(d_rows.size, dtype=bool)
    out_cells, aggregate = _bench_c_block(all_pairs, values, w, cells, cell_keys, trans, quad, on)
    categories: dict[str, Any] = {}
    if "category" in cols:
        cat_d = cols["category"][d_rows]
        cat_o = cols["category"][clean_rows]
        for cat in sorted(set(cat_o.tolist())):
            cat_cells, cat_agg = _bench_c_block(cat_d == cat, values, w, cells, cell_keys, trans,
                                                quad, on)
            block = clean_block(cat_o == cat)
            categories[str(cat)] = {"clean": block,
                                    "clean_accuracy": block["kappa_weighted"]["acc"],
                                    "cells": cat_cells, "aggregate": cat_agg}
    clean = clean_block(np.ones(clean_rows.size, dtype=bool))
    qc = question_clusters(index)
    assert qc is not None
    clean_values = {"acc": ok[clean_rows].astype(np.float64),
                    **({"S": s_all, "C": c_all} if s_all is not None and c_all is not None else {})}
    return {
        "note": BENCH_C_NOTE,
        "clean_accuracy": clean["kappa_weighted"]["acc"],
        "clean": clean,
        "cells": out_cells,
        "aggregate": aggregate,
        "categories": categories,
        "intervals": bench_c_stats.intervals(
            values, w, cells, len(cell_keys), qc[d_rows], trans, clean_values, kappa[clean_rows],
            qc[clean_rows], int(qc.max()) + 1 if qc.size else 0,
            derived_seed(seed, "bench-c", "questions"), on,
            {"acc": c_det, "S": c_full, "C": c_full}),
        "sensitivity": bench_c_sensitivity.sensitivity(index, probs, full),
        "corruption_effect": bench_c_stats.corruption_effect(
            values, corruption[d_rows].tolist(), qc[d_rows], int(qc.max()) + 1 if qc.size else 0,
            on),
        **({} if report.aligned.truncated is None else {"truncated_excluded": {
            "pairs_probability": int((~on["ras"]).sum()),
            "pairs_accuracy": int((~on["acc"]).sum())}}),
        "accuracy_gain": bench_c_stats.accuracy_gain(out_cells),
    }


