"""Scoring: a validated predictions file -> ``scores.json`` (schema_version 1,
docs/internals.md) and, beside it, the per-row results (:mod:`.row_results`).
Nothing is written unless validation passes; both files are written
atomically. The core, :func:`score_report`, works on in-memory arrays so that
a Bench-C-sized submission scores in well under a second.

A row with ``text`` is answered by what vlmrobust.core.matcher reads in it
(validation has refused a ``prediction`` that says otherwise); a text that
answers no option is wrong and counted in ``no_answer``. Without logits there
is accuracy only (no calibration, S, C or RAS).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation import bench_c_stats
from vlmrobust.evaluation.bench_c_stats import clustered_mean_ci, question_clusters
from vlmrobust.evaluation.dataset_index import CLEAN, DatasetIndex, clean_rows_of, question_keys
from vlmrobust.evaluation.predictions_read import PredictionsFile, predictions_from_table
from vlmrobust.evaluation.validate import ValidationReport, validate, validate_against
from vlmrobust.metrics import aggregate as aggregate_metrics
from vlmrobust.metrics.accuracy import accuracy, accuracy_ci
from vlmrobust.metrics.aggregate import (
    kappa_weighted_cell_means,
    kappa_weighted_mean,
    mean_over_cells,
)
from vlmrobust.metrics.calibration import (
    calibration_report,
    reference_temperature,
    scaled_calibration,
)
from vlmrobust.metrics.factors import factor_accuracies
from vlmrobust.metrics.ras import (
    CORRECTIVE,
    DESTRUCTIVE,
    QUADRANTS,
    TRANSITIONS,
    counts,
    pair_metrics,
)
from vlmrobust.metrics.uncertainty import softmax

SCHEMA_VERSION = 1
DEFAULT_SEED = 0
CELL_METRICS = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras")


def derived_seed(seed: int, *parts: str) -> int:
    """A per-item seed from a hash of (seed, parts): no global RNG, stable across runs.

    >>> derived_seed(0, "cfg") == derived_seed(0, "cfg") != derived_seed(1, "cfg")
    True
    """
    digest = hashlib.sha256(json.dumps([seed, *parts]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def _num(x: float | np.floating[Any]) -> float | None:
    """JSON number, or null where undefined (NaN)."""
    v = float(x)
    return None if math.isnan(v) else v


def _only_value(values: NDArray[Any]) -> Any:
    uniq = list(dict.fromkeys(values.tolist()))
    return uniq[0] if len(uniq) == 1 else None


FACTOR_VARIANT = "imagenet-val"


def _factor_scores(report: ValidationReport, rows: NDArray[np.int64], correct: NDArray[np.bool_],
                   annotations: Mapping[str, frozenset[str]] | None) -> dict[str, Any] | None:
    """ImageNet-X accuracy per factor on an imagenet-val config, joined on
    ``source_file`` (vlmrobust.metrics.factors); None where it does not apply."""
    cols = report.index.columns
    if annotations is None or "source_file" not in cols or "variant" not in cols:
        return None
    if _only_value(cols["variant"][rows]) != FACTOR_VARIANT:
        return None
    keys = [str(k) for k in cols["source_file"][rows].tolist()]
    return factor_accuracies(correct, keys, annotations)


def _config_scores(report: ValidationReport, rows: NDArray[np.int64], config: str, seed: int,
                   annotations: Mapping[str, frozenset[str]] | None = None,
                   clusters: NDArray[np.int64] | None = None) -> dict[str, Any]:
    index = report.index
    y = index.answer[rows]
    correct = report.aligned.predicted[rows] == y
    if clusters is None:
        lo, hi = accuracy_ci(correct, seed=derived_seed(seed, "accuracy", config))
    else:  # Bench-C: a question's copies are one sample (bench_c_stats)
        lo, hi = clustered_mean_ci(correct.astype(np.float64), clusters[rows],
                                   derived_seed(seed, "accuracy", config))
    out: dict[str, Any] = {"n": int(rows.size), "accuracy": _num(accuracy(correct)), "accuracy_ci": [_num(lo), _num(hi)],
                           "no_answer": int(report.aligned.no_answer[rows].sum())}
    if index.name == "imagenet-mcq":
        out["variant"] = _only_value(index.columns["variant"][rows]) if "variant" in index.columns else None
        out["strategy"] = (_only_value(index.columns["distractors"][rows])
                           if "distractors" in index.columns else None)
        factors = _factor_scores(report, rows, correct, annotations)
        if factors is not None:
            out["factors"] = factors
    logits = report.aligned.logits
    if logits is not None:
        cal = calibration_report(logits[rows], y, seed=derived_seed(seed, "temperature", config))
        out.update(ece=cal.ece, nll=cal.nll, ece_ts=cal.ece_ts, nll_ts=cal.nll_ts, temperature=cal.temperature,
                   ts_note=cal.ts_reason)
    else:
        out.update(ece=None, nll=None, ece_ts=None, nll_ts=None, temperature=None, ts_note=None)
    return out


BENCH_C_PAIR_METRICS = ("acc", "delta_acc", "S", "S_clean", "delta_S", "C", "C_clean", "delta_C",
                        "ras")
BENCH_C_NOTE = ("Top-level cell and aggregate metrics are κ-weighted (Σκ·x/Σκ per cell, then the "
                "mean over cells); every cell and aggregate also has 'plain': unweighted means "
                "over the cell's questions, as in the paper's per-cell tables. S_clean/C_clean "
                "are the clean copy's S and C over the same questions; destructive_ras (RR ∪ RW) "
                "and corrective_ras (WR ∪ WW) are per cell too.")


def _bench_c_block(sel: NDArray[np.bool_], values: Mapping[str, NDArray[np.float64]],
                   w: NDArray[np.float64], cells: NDArray[np.int64],
                   cell_keys: list[tuple[str, int]], trans: NDArray[np.int8],
                   quad: NDArray[np.int8] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cells and aggregate over the pairs ``sel`` (all pairs, or one category's)."""
    n_cells = len(cell_keys)
    c = cells[sel]
    weighted: dict[str, NDArray[np.float64]] = {}
    plain: dict[str, NDArray[np.float64]] = {}
    for name, v in values.items():
        weighted[name] = kappa_weighted_cell_means(v[sel], w[sel], c, n_cells)
        plain[name] = aggregate_metrics.plain_cell_means(v[sel], c, n_cells)
    if "ras" in values:
        for subset, codes in (("destructive_ras", DESTRUCTIVE), ("corrective_ras", CORRECTIVE)):
            part = sel & np.isin(trans, codes)
            weighted[subset] = kappa_weighted_cell_means(values["ras"][part], w[part], cells[part],
                                                         n_cells)
            plain[subset] = aggregate_metrics.plain_cell_means(values["ras"][part], cells[part], n_cells)
    names = [*BENCH_C_PAIR_METRICS, "destructive_ras", "corrective_ras"]
    cell_n = np.bincount(c, minlength=n_cells)
    # per-cell class counts in one pass: row = cell, column = class code
    t_counts = np.bincount(c * 4 + trans[sel], minlength=n_cells * 4).reshape(n_cells, 4)
    q_counts = (np.bincount(c * 4 + quad[sel], minlength=n_cells * 4).reshape(n_cells, 4)
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
    aggregate["quadrants"] = counts(quad[sel], QUADRANTS) if quad is not None else None
    aggregate["transitions"] = counts(trans[sel], TRANSITIONS)
    return out_cells, aggregate


def _reference_calibration(report: ValidationReport, configs: dict[str, dict[str, Any]]) -> None:
    """Seed 001's protocol beside the per-config cross-fit: per distractor strategy,
    T is fitted on every row of the reference variant (ImageNet val) and applied
    unchanged to each shifted config (``ece_ref_ts``, ``nll_ref_ts``,
    ``temperature_ref``). On the reference config itself those fields repeat its
    cross-fitted numbers, so no row is scaled by a T it helped fit. Not estimable
    (the reference rows have no errors, T on its bound, or the reference variant
    not scored in this run): None with ``ref_ts_note``."""
    index = report.index
    logits = report.aligned.logits
    ref = index.manifest.get("reference_variant")
    if index.name != "imagenet-mcq" or "variant" not in index.columns:
        return
    variant = index.columns["variant"]
    strategy = (index.columns["distractors"] if "distractors" in index.columns
                else np.full(index.n_rows, "", dtype=object))
    fitted: dict[str, tuple[float | None, str | None]] = {}
    for config, out in configs.items():
        fields: dict[str, Any] = {"ece_ref_ts": None, "nll_ref_ts": None, "temperature_ref": None,
                                  "ref_ts_note": None}
        if logits is None:
            out.update(fields)
            continue
        st = str(out.get("strategy") or "")
        if out.get("variant") == ref:
            fields.update(ece_ref_ts=out["ece_ts"], nll_ref_ts=out["nll_ts"],
                          temperature_ref=out["temperature"], ref_ts_note=out["ts_note"])
            out.update(fields)
            continue
        if st not in fitted:
            rows = np.flatnonzero((variant == ref) & (strategy == st))
            fitted[st] = (reference_temperature(logits[rows], index.answer[rows]) if rows.size
                          else (None, f"not estimable: reference variant {ref!r} ({st}) not scored in this run"))
        t, why = fitted[st]
        if t is None:
            fields["ref_ts_note"] = why
        else:
            rows = np.flatnonzero(index.config == config)
            ece, nll = scaled_calibration(logits[rows], index.answer[rows], t)
            fields.update(ece_ref_ts=_num(ece), nll_ref_ts=_num(nll), temperature_ref=t)
        out.update(fields)


def bench_c_scores(report: ValidationReport, seed: int = DEFAULT_SEED) -> dict[str, Any] | None:
    """The ``bench_c`` block (docs/internals.md). Per (corruption, severity)
    cell: κ-weighted means of Acc, ΔAcc, S, S_clean, ΔS, C, C_clean, ΔC, RAS
    and destructive / corrective RAS (top level), the same as plain means
    (``plain``), and quadrant / transition counts; aggregates are means over
    cells (see vlmrobust.metrics.aggregate for the Σκ normaliser). The same
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
    if logits is not None:
        probs = softmax(logits)
        m = pair_metrics(probs[o_rows], probs[d_rows], y[d_rows], index.n_options[d_rows])
        values.update(S=m.s_corrupted, S_clean=m.s_clean, delta_S=m.delta_s, C=m.c_corrupted,
                      C_clean=m.c_clean, delta_C=m.delta_c, ras=m.ras)
        quad = m.quadrant
        clean_m = pair_metrics(probs[clean_rows], probs[clean_rows], y[clean_rows],
                               index.n_options[clean_rows])
        s_all, c_all = clean_m.s_clean, clean_m.c_clean

    def clean_block(rows_sel: NDArray[np.bool_]) -> dict[str, Any]:
        k = kappa[clean_rows][rows_sel]
        out: dict[str, Any] = {"n_questions": int(rows_sel.sum())}
        for label, weigh in (("plain", np.ones(k.shape)), ("kappa_weighted", k)):
            part = {"acc": _num(kappa_weighted_mean(ok[clean_rows][rows_sel].astype(np.float64),
                                                    weigh))}
            part["S"] = _num(kappa_weighted_mean(s_all[rows_sel], weigh)) if s_all is not None else None
            part["C"] = _num(kappa_weighted_mean(c_all[rows_sel], weigh)) if c_all is not None else None
            out[label] = part
        return out

    all_pairs = np.ones(d_rows.size, dtype=bool)
    out_cells, aggregate = _bench_c_block(all_pairs, values, w, cells, cell_keys, trans, quad)
    categories: dict[str, Any] = {}
    if "category" in cols:
        cat_d = cols["category"][d_rows]
        cat_o = cols["category"][clean_rows]
        for cat in sorted(set(cat_o.tolist())):
            cat_cells, cat_agg = _bench_c_block(cat_d == cat, values, w, cells, cell_keys, trans,
                                                quad)
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
            derived_seed(seed, "bench-c", "questions")),
        "sensitivity": bench_c_stats.sensitivity(values, corruption[d_rows].tolist(), qc[d_rows],
                                                 int(qc.max()) + 1 if qc.size else 0),
        "accuracy_gain": bench_c_stats.accuracy_gain(out_cells),
    }


def _annotations(report: ValidationReport,
                 imagenet_x: Path | str | None) -> Mapping[str, frozenset[str]] | None:
    """ImageNet-X annotations for imagenet-mcq datasets with imagenet-val rows: the
    given file, else the installed ``imagenet-x`` package's, else None."""
    from vlmrobust.evaluation.imagenet_x import load_annotations, packaged_annotations

    cols = report.index.columns
    if report.index.name != "imagenet-mcq" or "source_file" not in cols:
        return None
    if "variant" not in cols or FACTOR_VARIANT not in set(cols["variant"].tolist()):
        return None
    path = Path(imagenet_x) if imagenet_x is not None else packaged_annotations()
    return None if path is None else load_annotations(path)


def score_report(report: ValidationReport, model_id: str | None = None, seed: int = DEFAULT_SEED,
                 imagenet_x: Path | str | None = None) -> dict[str, Any]:
    """scores.json content (one dataset section) for a validated report.
    ``imagenet_x``: ImageNet-X annotations (default: the installed package's) for
    the per-factor accuracies of imagenet-val configs."""
    index = report.index
    manifest = index.manifest
    annotations = _annotations(report, imagenet_x)
    configs = {}
    clusters = question_clusters(index)
    for config in index.configs:
        rows = np.flatnonzero(index.config == config)
        configs[config] = _config_scores(report, rows, config, seed, annotations, clusters)
    _reference_calibration(report, configs)
    section = {
        "dataset": {
            "name": index.name,
            "version": str(manifest.get("spec", {}).get("version", "")),
            "fingerprint": manifest.get("fingerprint"),
            "sample": bool(manifest.get("sample", False)),
        },
        "predictions_sha256": report.sha256,
        "has_logits": report.has_logits,
        "has_text": report.file.has_text,
        "no_answer": int(report.aligned.no_answer.sum()),
        "reference_variant": manifest.get("reference_variant") if index.name == "imagenet-mcq" else None,
        "configs": configs,
        "bench_c": bench_c_scores(report, seed),
    }
    if report.partial is not None:
        section["partial"] = dict(report.partial)
    if model_id is None and report.meta is not None:
        found = report.meta.get("model_id", report.meta.get("model"))
        model_id = str(found) if found is not None else None
    return {"schema_version": SCHEMA_VERSION, "model_id": model_id, "datasets": {index.name: section}}


def score_tables(dataset: Any, manifest: Mapping[str, Any], predictions: Any,
                 model_id: str | None = None, seed: int = DEFAULT_SEED,
                 imagenet_x: Path | str | None = None) -> dict[str, Any]:
    """Score in memory: ``dataset`` a pyarrow Table (id, options or n_options,
    answer, family columns; an optional ``config`` column), ``predictions`` a
    pyarrow Table (id, logits | prediction). Validation applies as for files."""
    config_col = "config" if "config" in dataset.column_names else None
    index = DatasetIndex.from_table(dataset, manifest, config_col)
    pf: PredictionsFile = predictions_from_table(predictions)
    return score_report(validate_against(index, pf), model_id, seed, imagenet_x)


def dumps_scores(scores: Mapping[str, Any]) -> str:
    """Canonical JSON text: numbers as numbers, NaN refused (null instead)."""
    return json.dumps(scores, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def score(dataset_dir: Path | str, predictions: Path | str, out: Path | str, config: str | None = None,
          model_id: str | None = None, seed: int = DEFAULT_SEED,
          imagenet_x: Path | str | None = None) -> dict[str, Any]:
    """Validate ``predictions`` against ``dataset_dir`` and write scores.json to
    ``out`` and the per-row results to :func:`rows_path` (``out``), both
    atomically (the rows first); on any problem raise SubmissionError and write
    nothing. Neither output may be an input (the predictions, their sidecar,
    the dataset) or a directory."""
    from vlmrobust.evaluation.outputs import check_output, write_text_output
    from vlmrobust.evaluation.predictions_meta import sidecar_path
    from vlmrobust.evaluation.row_results import row_results, rows_jsonl, rows_path

    inputs = [Path(predictions), sidecar_path(predictions),
              None if imagenet_x is None else Path(imagenet_x)]
    check_output(Path(out), files=inputs, dirs=[Path(dataset_dir)])
    check_output(rows_path(out), files=inputs, dirs=[Path(dataset_dir)])
    report = validate(dataset_dir, predictions, config)
    scores = score_report(report, model_id, seed, imagenet_x)
    rows_text = rows_jsonl(row_results(report))
    write_text_output(rows_path(out), rows_text)
    write_text_output(Path(out), dumps_scores(scores))
    return scores
