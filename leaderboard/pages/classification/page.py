"""What the Classification page (``classification.html``) shows, built from
the :class:`~.classification.ClassificationBoard` and the submissions (pure):

- seed 002 Table 1: every model's full-label-space accuracy per dataset
  variant, with its setting (open world, closed world, CLIP's argmax);
- effective robustness on full-label-space accuracy against its own reference
  line (probit charts and the lines' table, as the robustness page draws them);
- seed 002 Fig. 2: accuracy against the label-set size K, one line per model
  family (the mean of its models) per variant, and each model's points; and
  Fig. 4: each model's error rate as a multiple of the reference CLIP's per K
  (:mod:`.error_gaps`);
- seed 001 Fig. 5 / Table IV: ECE and NLL before and after the temperature
  fitted on half of ImageNet val, per variant;
- where computed, top-1 over every valid label and ImageNet-Vid-Robust's benign and
  pm-k accuracy over anchors (their own tables and CSV columns);
- downloads: ``classification.csv`` (every config of every model) and, per
  re-scored submission, its per-class accuracies
  (``downloads/<model page stem>/<dataset>.per-class.csv``).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

import numpy as np

from vlmrobust.core.kinds import CLASSIFICATION, dataset_kind
from vlmrobust.leaderboard.board import Leaderboard, family_key, variant_key
from vlmrobust.leaderboard.charts import probit as probit_chart
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.charts.error_gaps import error_gaps
from vlmrobust.leaderboard.charts.fit_plots import shift_charts
from vlmrobust.leaderboard.pages.classification.numbers import (
    LABEL_SPACE,
    ClassificationBoard,
    full_configs,
    k_points,
    variants,
)
from vlmrobust.leaderboard.site.downloads import to_csv
from vlmrobust.leaderboard.submission import ConfigScore, DatasetScores

CONFIG_COLUMNS = ["model_id", "name", "family", "setting", "prompt_id", "dataset", "config", "variant",
                  "over", "k", "n_classes", "n", "accuracy", "accuracy_ci_low", "accuracy_ci_high",
                  "mean_per_class_accuracy", "ece", "nll", "temperature", "ece_ts", "nll_ts", "er"]
# Written only when some config has them: accuracy over the valid labels of multi-label
# rows (ImageNet val's clean labels, Vid-Robust's), and Vid-Robust's benign / pm-k accuracy.
# Text-answered configs: seed 002 Table 8's accuracy with synonyms and the strict matcher's.
TEXT_RULE_COLUMNS = {"accuracy_synonyms": "inclusion+synonyms", "accuracy_strict": "strict",
                     "accuracy_strict_synonyms": "strict+synonyms"}
OPTIONAL_COLUMNS = {"accuracy_ci_high": list(TEXT_RULE_COLUMNS),
                    "mean_per_class_accuracy": ["accuracy_valid_labels", "anchors", "benign_accuracy",
                                                "benign_accuracy_ci_low", "benign_accuracy_ci_high",
                                                "pmk_accuracy", "pmk_accuracy_ci_low",
                                                "pmk_accuracy_ci_high"]}
PER_CLASS_COLUMNS = ["dataset", "config", "variant", "class_id", "class_name", "n", "accuracy"]


def _stem(lb: Leaderboard, model_id: str) -> str:
    return lb.pages[model_id].rsplit("/", 1)[-1].removesuffix(".html")


def per_class_records(ev: Any, key: str) -> list[dict[str, Any]]:
    """Per full-label-space config and class: rows and accuracy, from a
    re-scored submission's evidence (its dataset index and per-row correctness);
    classes without rows are left out. Empty when the evidence lacks them."""
    index, correct = getattr(ev, "index", None), getattr(ev, "correct", None)
    if index is None or correct is None or dataset_kind(index.manifest) != CLASSIFICATION:
        return []
    labels = getattr(index, "labels", None)
    labels = index.answer if labels is None else labels
    candidates = getattr(index, "candidates", None)
    spaces = getattr(index, "label_spaces", None) or {}
    variant_col = index.columns.get("variant")
    out = []
    for config in index.configs:
        rows = np.flatnonzero(index.config == config)
        recorded = (index.manifest.get("label_spaces") or {}).get(config) or {}
        n_classes = len(spaces[config]) if config in spaces else recorded.get("n_classes")
        if not rows.size or (candidates is not None and len(candidates[rows[0]])) or (
                n_classes is not None and int(index.n_options[rows[0]]) != n_classes):
            continue  # a K-option config: per-class accuracy is over the label space only
        y = np.asarray(labels[rows], dtype=np.int64)
        ok = np.asarray(correct[rows], dtype=np.float64)
        n = np.bincount(y)
        hits = np.bincount(y, weights=ok, minlength=n.size)
        names = spaces[config].names if config in spaces else ()
        variant = str(variant_col[rows[0]]) if variant_col is not None and rows.size else None
        for c in np.flatnonzero(n).tolist():
            out.append({"dataset": key, "config": config, "variant": variant, "class_id": c,
                        "class_name": names[c] if c < len(names) else None, "n": int(n[c]),
                        "accuracy": float(hits[c] / n[c])})
    return out


def csv_columns(records: list[dict[str, Any]]) -> list[str]:
    """CONFIG_COLUMNS, with each optional column after its anchor column where
    some record has a value for it.

    >>> cols = csv_columns([{"accuracy_valid_labels": 0.5}])
    >>> cols[cols.index("mean_per_class_accuracy"):][:3], "anchors" in cols
    (['mean_per_class_accuracy', 'accuracy_valid_labels', 'ece'], False)
    """
    out = []
    for col in CONFIG_COLUMNS:
        out.append(col)
        out += [c for c in OPTIONAL_COLUMNS.get(col, ()) if any(r.get(c) is not None for r in records)]
    return out


def _extras(c: ConfigScore) -> dict[str, Any]:
    """A config's optional CSV fields (None where it has none)."""
    p = c.perturbation
    out: dict[str, Any] = {"accuracy_valid_labels": c.accuracy_valid_labels}
    out.update({col: c.text_rules.get(rule) for col, rule in TEXT_RULE_COLUMNS.items()})
    out.update(anchors=p.anchors if p else None, benign_accuracy=p.benign if p else None,
               pmk_accuracy=p.pmk if p else None)
    for name, ci in (("benign_accuracy", p.benign_ci if p else None), ("pmk_accuracy", p.pmk_ci if p else None)):
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = ci if ci else (None, None)
    return out


def _er_of(board: ClassificationBoard, key: str, model_id: str, config: str) -> float | None:
    vals = board.er[key].er.get(model_id, ())
    return next((v.er for v in vals if v.shift == config), None)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One Table 1 cell: a variant's accuracy, pooled (n-weighted) over its
    configs where it has several (3DCC's corruption × severity cells)."""

    accuracy: float | None
    n: int
    n_classes: int | None
    configs: int
    accuracy_ci: tuple[float, float] | None = None
    mean_per_class: float | None = None


def variant_cells(d: DatasetScores) -> dict[str, Cell]:
    by_variant: dict[str, list[ConfigScore]] = defaultdict(list)
    for c in full_configs(d):
        by_variant[str(c.variant)].append(c)
    out = {}
    for v, cs in by_variant.items():
        if len(cs) == 1:
            c = cs[0]
            out[v] = Cell(c.accuracy, c.n, c.n_classes, 1, c.accuracy_ci, c.mean_per_class)
            continue
        scored = [c for c in cs if c.accuracy is not None]
        n = sum(c.n for c in scored)
        acc = sum((c.accuracy or 0.0) * c.n for c in scored) / n if n else None
        out[v] = Cell(acc, n, cs[0].n_classes, len(cs))
    return out


def _family_colours(lb: Leaderboard) -> dict[str, str]:
    return probit_chart.colours(sorted({s.meta.family for s in lb.submissions}, key=family_key))


def classification_page(lb: Leaderboard) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(template context, files: SVG charts and downloads) of the page; an
    empty context (``board`` None) when no submission has a classification section."""
    board = lb.classification
    if board is None:
        # the page links the download whatever it holds
        return ({"board": None, "per_class_links": {}, "valid_rows": [], "vid_rows": []},
                {"classification.csv": to_csv(CONFIG_COLUMNS, []).encode()})
    files: dict[str, bytes] = {}
    sections = board.sections(lb.submissions)
    cols = variants(sections)
    table = []
    records = []
    colours = _family_colours(lb)
    curves: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    k_rows: dict[tuple[str, str], list[tuple[Any, dict[int, float]]]] = defaultdict(list)
    calibration: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
    cal_points: list[tuple[str, float, float]] = []
    valid_rows: list[tuple[Any, DatasetScores, ConfigScore]] = []
    vid_rows: list[tuple[Any, DatasetScores, ConfigScore]] = []
    for s, d in sections:
        full = variant_cells(d)
        table.append({"s": s, "d": d, "setting": board.settings.get(s.model_id, ""),
                      "cells": [full.get(v) for v in cols]})
        for c in d.configs:
            ci = c.accuracy_ci
            records.append({
                "model_id": s.model_id, "name": s.meta.name, "family": s.meta.family,
                "setting": board.settings.get(s.model_id), "prompt_id": s.meta.prompt_id,
                "dataset": d.key, "config": c.config, "variant": c.variant, "over": c.over, "k": c.k,
                "n_classes": c.n_classes, "n": c.n, "accuracy": c.accuracy,
                "accuracy_ci_low": ci[0] if ci else None, "accuracy_ci_high": ci[1] if ci else None,
                "mean_per_class_accuracy": c.mean_per_class, **_extras(c),
                **{k: c.calibration.get(k) for k in ("ece", "nll", "temperature", "ece_ts", "nll_ts")},
                "er": (_er_of(board, d.key, s.model_id, c.config)
                       if c.over == LABEL_SPACE and c.variant is not None else None)})
            if c.over == LABEL_SPACE and c.accuracy_valid_labels is not None:
                valid_rows.append((s, d, c))
            if c.over == LABEL_SPACE and c.perturbation is not None:
                vid_rows.append((s, d, c))
            if c.over == LABEL_SPACE and c.calibration.get("ece") is not None:
                calibration[str(c.variant)].append((s, c))
                before, after = c.calibration.get("ece"), c.calibration.get("ece_ts")
                if before is not None and after is not None:
                    cal_points.append((f"{s.meta.name} · {c.variant}", before, after))
        per_model: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
        for p in k_points(d, s.model_id):
            per_model[(d.key, p.variant)][p.k] = p.accuracy
        for where, pts in per_model.items():
            k_rows[where].append((s, pts))
            for k, acc in pts.items():
                curves[where][s.meta.family].append((k, acc))
        ev = s.evidence.get(d.key)
        per_class = per_class_records(ev, d.key) if ev is not None else []
        if per_class:
            files[f"downloads/{_stem(lb, s.model_id)}/{d.key}.per-class.csv"] = to_csv(
                PER_CLASS_COLUMNS, per_class).encode("utf-8")
    k_charts = []
    for i, ((key, variant), fams) in enumerate(sorted(curves.items(), key=lambda kv: (kv[0][0], variant_key(kv[0][1])))):
        series = []
        for fam in sorted(fams, key=family_key):
            by_k: dict[int, list[float]] = defaultdict(list)
            for k, acc in fams[fam]:
                by_k[k].append(acc)
            series.append((f"{fam} (mean of {len({m.model_id for m, _ in k_rows[(key, variant)] if m.meta.family == fam})})",
                           colours.get(fam, "#555555"),
                           [(float(k), float(np.mean(v))) for k, v in sorted(by_k.items())]))
        path = f"plots/classification/k-curve-{i:03d}.svg"
        files[path] = str(svg.log_curves(series, x_label="classes to choose from (K)",
                                         y_label="top-1 accuracy", title=f"{key} · {variant}")).encode("utf-8")
        ks = sorted({k for _, pts in k_rows[(key, variant)] for k in pts})
        k_charts.append({"title": f"{key} · {variant}", "path": path, "ks": ks,
                         "rows": k_rows[(key, variant)], "gaps": error_gaps(k_rows[(key, variant)])})
    er_charts: list[dict[str, Any]] = []
    for key in board.datasets:
        for _, charts in shift_charts(dataclasses.replace(lb, fits=board.er[key].fits)):
            for c in charts:
                c["path"] = f"plots/classification/er-{len(er_charts):03d}.svg"
                files[c["path"]] = str(c.pop("svg")).encode("utf-8")
                er_charts.append(c)
    if cal_points:
        files["plots/classification/ece-ts.svg"] = str(svg.linear_scatter(
            cal_points, x_label="ECE (T = 1)", y_label="ECE after seed 001's temperature",
            title="calibration before / after temperature scaling")).encode("utf-8")
    files["classification.csv"] = to_csv(csv_columns(records), records).encode("utf-8")
    per_class_links = {s.model_id: f"downloads/{_stem(lb, s.model_id)}/{d.key}.per-class.csv"
                       for s, d in sections
                       if f"downloads/{_stem(lb, s.model_id)}/{d.key}.per-class.csv" in files}
    context = {"board": board, "variants_cols": cols, "table": table, "er_charts": er_charts,
               "mean_er": {k: board.er[k].mean_er for k in board.datasets},
               "k_charts": k_charts,
               "calibration": sorted(calibration.items(), key=lambda kv: variant_key(kv[0])),
               "ece_plot": "plots/classification/ece-ts.svg" if cal_points else None,
               "per_class_links": per_class_links,
               "valid_rows": sorted(valid_rows, key=lambda r: variant_key(str(r[2].variant))),
               "vid_rows": vid_rows}
    return context, files
