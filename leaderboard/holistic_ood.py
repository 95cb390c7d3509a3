"""The Holistic page's OOD-detection section (seed 001 Figs. 3-4): per model
with an ood run, ID accuracy beside each OOD set's AUROC and FPR@95 and NINCO's
class-mean AUROC, from the re-scored ``ood`` block
(vlmrobust.evaluation.ood_score; leaderboard/ood_scores.py). Registered as the
``ood`` section of :data:`vlmrobust.leaderboard.holistic.SECTIONS`."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from vlmrobust.leaderboard import svg
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.formatting import data_v, pct
from vlmrobust.leaderboard.holistic import SECTIONS, Cell, Section, acc_cell, grouped, make_row
from vlmrobust.leaderboard.ood_scores import OodScores, OodSetScore
from vlmrobust.leaderboard.submission import Submission

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
    return (*cols, "mean AUROC %", "mean FPR@95 %")


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
    cells += [Cell(pct(o.mean_auroc), data_v(o.mean_auroc), f"{score}; mean over the sets scored"),
              Cell(pct(o.mean_fpr95), data_v(o.mean_fpr95), f"{score}; mean over the sets scored")]
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
        charts = tuple(ood_chart(runs, name, metric) for name in sets
                       for metric in (("auroc", "class_mean_auroc") if name in class_mean
                                      else ("auroc",)))
        out.append(Section(
            f"ood-{key}", f"OOD detection: {key}",
            "How well a model's confidence over the ImageNet-1k label space separates ImageNet "
            "val (ID) from each OOD set (seed 001 Figs. 3-4): AUROC with ID as positives, "
            "FPR@95 = the share of OOD images at or above the threshold keeping 95% of ID (lower "
            "is better), and NINCO's class-mean AUROC (each class against all ID, averaged). "
            "Scores: MCM (max softmax of cosine / τ, τ = 1, CLIP's logit scale undone) for "
            "zero-shot CLIP, MSP for classifiers, fine-tuned models and VLMs; hover a cell for "
            "its score, row counts and 95% bootstrap interval. ID accuracy is top-1 over the "
            "ID rows; the charts plot each set's AUROC (and NINCO's class-mean AUROC) against "
            "it, one point per model.",
            ood_columns(sets, class_mean), grouped(rows), charts=charts))
    return out


def ood_chart(runs: Sequence[tuple[Submission, OodScores]], name: str, metric: str) -> Markup:
    """Seed 001 Figs. 3-4 for one OOD set: each model's ID accuracy (x) against
    its AUROC (or class-mean AUROC) on the set (y)."""
    what = "class-mean AUROC" if metric == "class_mean_auroc" else "AUROC"
    points = []
    for s, o in runs:
        block = o.sets.get(name)
        y = getattr(block, metric) if block is not None else None
        if o.id_accuracy is not None and y is not None:
            points.append((s.meta.name, o.id_accuracy, y))
    return svg.linear_scatter(points, x_label="ID accuracy (ImageNet val, top-1)",
                              y_label=f"{name} {what}", title=f"{name}: {what} vs ID accuracy",
                              identity=False)
