"""The Holistic page's OOD-detection section (seed 001 Figs. 3-4): per model
with an ood run, ID accuracy beside each OOD set's AUROC and FPR@95 and NINCO's
class-mean AUROC, from the re-scored ``ood`` block
(vlmrobust.evaluation.scoring.ood; leaderboard/pages/holistic/ood_scores.py). Registered as the
``ood`` section of :data:`vlmrobust.leaderboard.pages.holistic.page.SECTIONS`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from markupsafe import Markup

from vlmrobust.evaluation.scoring.ood import TABLE_IV_SETS
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.charts.probit import ChartLine, ChartPoint, colours, shift_chart
from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.pages.formatting import data_v, pct
from vlmrobust.leaderboard.pages.holistic.ood_scores import OodScores, OodSetScore
from vlmrobust.leaderboard.pages.holistic.table import (
    SECTIONS,
    Cell,
    Section,
    acc_cell,
    grouped,
    make_row,
)
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec

# Seed 001's order of the OOD sets; sets of other builds (the sample) follow by name
SET_ORDER = ("inaturalist", "sun", "places", "textures", "imagenet-o", "ninco")
SCORE_NAMES = {"mcm": "MCM", "msp": "MSP", "max_logit": "max-logit", "energy": "energy"}


def _ci_cell(v: float | None, ci: tuple[float, float] | None, what: str) -> Cell:
    title = f"{what}; 95% CI {pct(ci[0])} … {pct(ci[1])}" if ci else what
    return Cell(pct(v), data_v(v), title)


def ood_columns(sets: list[str], class_mean: set[str]) -> tuple[str, ...]:
    """Column titles: ID accuracy, then per set AUROC and FPR@95 (and class-mean
    AUROC where the set has classes), then the means over sets.

    >>> ood_columns(["sun", "ninco"], {"ninco"})
    ('ID acc. %', 'sun AUROC %', 'sun FPR@95 %', 'ninco AUROC %', 'ninco FPR@95 %', 'ninco class-mean AUROC %', 'mean AUROC %', 'mean FPR@95 %')
    """
    cols = ["ID acc. %"]
    for s in sets:
        cols += [f"{s} AUROC %", f"{s} FPR@95 %"]
        if s in class_mean:
            cols.append(f"{s} class-mean AUROC %")
    return (*cols, "mean AUROC %", "mean FPR@95 %")  # over each run's mean_sets (Table IV's)


def ood_cells(o: OodScores, sets: list[str], class_mean: set[str]) -> list[Cell]:
    """One model's cells, in :func:`ood_columns` order ("—" for a set it lacks)."""
    score = SCORE_NAMES.get(o.score, o.score)
    cells = [acc_cell(o.id_accuracy, f"top-1 over {o.n_id} ID rows")]
    for name in sets:
        s = o.sets.get(name) or OodSetScore(0, None, None, None, None)
        what = f"{score}; {s.n} OOD rows vs {o.n_id} ID"
        cells += [_ci_cell(s.auroc, s.auroc_ci, what), _ci_cell(s.fpr95, s.fpr95_ci, what)]
        if name in class_mean:
            cells.append(_ci_cell(s.class_mean_auroc, s.class_mean_auroc_ci,
                                  f"{score}; mean over {s.n_classes} classes"))
    over = f"{score}; mean over {', '.join(o.mean_sets) or 'no set'}" + (
        "" if set(TABLE_IV_SETS) <= set(o.mean_sets) else
        f" ({sum(n in o.mean_sets for n in TABLE_IV_SETS)} of seed 001 Table IV's 5 sets)")
    cells += [Cell(pct(o.mean_auroc), data_v(o.mean_auroc), over),
              Cell(pct(o.mean_fpr95), data_v(o.mean_fpr95), over)]
    return cells


@SECTIONS.register("ood")
def ood_sections(lb: Leaderboard) -> list[Section]:
    """One section per ood dataset that some submission has."""
    out: list[Section] = []
    keys = sorted({k for s in lb.submissions for k, d in s.datasets.items() if d.ood is not None})
    for key in keys:
        runs = [(s, d.ood) for s in lb.submissions for k, d in s.datasets.items()
                if k == key and d.ood is not None]
        names = {n for _, o in runs for n in o.sets}
        sets = [n for n in SET_ORDER if n in names] + sorted(names - set(SET_ORDER))
        class_mean = {n for _, o in runs for n, s in o.sets.items() if s.class_mean_auroc is not None}
        rows = [make_row(lb, s, ood_cells(o, sets, class_mean)) for s, o in runs]
        charts = tuple(c for name in sets
                       for metric in (("auroc", "fpr95", "class_mean_auroc") if name in class_mean
                                      else ("auroc", "fpr95"))
                       if (c := ood_chart(runs, name, metric, lb.spec)) is not None)
        out.append(Section(
            f"ood-{key}", f"OOD detection: {key}",
            "How well a model's confidence over the ImageNet-1k label space separates ImageNet "
            "val (ID) from each OOD set (seed 001 Figs. 3-4): AUROC with ID as positives, "
            "FPR@95 = the share of OOD images at or above the threshold keeping 95% of ID (lower "
            "is better), and NINCO's class-mean AUROC (each class against all ID, averaged). "
            "Scores: MCM (max softmax of cosine / τ, τ = 1, CLIP's logit scale undone) for "
            "zero-shot CLIP (a CLIP fine-tuned on another set than ImageNet-1k included), MSP for "
            "models trained or fine-tuned on ImageNet-1k and for VLMs (seed 001 §V); hover a "
            "cell for its score, row counts and 95% bootstrap interval. The means average seed "
            "001 Table IV's sets (NINCO, iNaturalist, DTD = textures, Places, SUN) that the "
            "build has; ImageNet-O is reported apart. ID accuracy is top-1 over the "
            "ID rows; the charts plot each set's AUROC and FPR@95 (and NINCO's class-mean AUROC) "
            "against it on probit axes, one point per model, with each group's "
            f"{'Huber-robust' if lb.spec.holistic_fit == 'huber' else 'least-squares'} line "
            f"where it has {lb.spec.min_models} models (seed 001 Figs. 3-4).",
            ood_columns(sets, class_mean), grouped(rows), charts=charts))
    return out


def ood_group(s: Submission) -> str:
    """A model's group on the OOD charts: family, training data, and what it was
    fine-tuned on (seed 001 Fig. 3 draws CLIP by training source, and CLIP-FT by
    fine-tuning set, apart).

    >>> from types import SimpleNamespace as N
    >>> ood_group(N(meta=N(family="clip", training_data="laion-2b", fine_tuned_on="imagenet-1k")))
    'clip · laion-2b → imagenet-1k'
    >>> ood_group(N(meta=N(family="vlm", training_data=None, fine_tuned_on=None)))
    'vlm · training data unstated'
    """
    m = s.meta
    data = getattr(m, "training_data", None) or "training data unstated"
    tuned = getattr(m, "fine_tuned_on", None)
    return f"{m.family} · {data}" + (f" → {tuned}" if tuned else "")


def ood_chart(runs: Sequence[tuple[Submission, OodScores]], name: str, metric: str,
              spec: BaselineSpec) -> Markup | None:
    """Seed 001 Figs. 3-4 for one OOD set: each model's ID accuracy (x) against
    its AUROC, FPR@95 or class-mean AUROC on the set (y), both on probit axes
    ("The x-axis and y-axis are probit transformed"), coloured by :func:`ood_group`,
    with each group's line fitted as seed 001 fits them ("The blue straight lines
    are fit with robust linear regression"; baselines.yaml ``holistic_fit``) where
    the group has ``spec.min_models`` models. None when no model has the metric."""
    what = {"auroc": "AUROC", "fpr95": "FPR@95", "class_mean_auroc": "class-mean AUROC"}[metric]
    points = []
    for s, o in runs:
        block = o.sets.get(name)
        y = getattr(block, metric) if block is not None else None
        if o.id_accuracy is not None and y is not None:
            points.append(ChartPoint(s.meta.name, ood_group(s), o.id_accuracy, y, False))
    if not points:
        return None
    groups = sorted({p.group for p in points})
    palette = colours(groups)
    lines = []
    for g in groups:
        pts = [p for p in points if p.group == g]
        if len(pts) < spec.min_models:
            continue
        a, b = fit.line_params(fit.transform([p.acc_ref for p in pts], spec.transform),
                               fit.transform([p.acc_shift for p in pts], spec.transform),
                               method=spec.holistic_fit)
        if np.isfinite(a) and np.isfinite(b):
            lines.append(ChartLine(f"{g} ({spec.holistic_fit})", float(a), float(b), palette[g]))
    return shift_chart(points, lines, group_colours=palette, chance=None,
                       transform=spec.transform, x_name="ID (ImageNet val, top-1)",
                       y_name=name, y_metric=what, identity=False,
                       title=f"{name}: {what} vs ID accuracy")
