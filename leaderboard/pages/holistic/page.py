"""The "Holistic" page (seed 001's other axes): shape bias on cue-conflict
stimuli (its Table I), ImageNet-X factor accuracies and factor-level effective
robustness (§IV), and what other modules register (OOD detection, retrieval).
Every number comes from the re-scored submissions (vlmrobust.leaderboard.trust.verify).

A section is a table of models; rows carry the model-group fields of their
metadata (architecture, training data, loss, fine-tuning, training size) and
are grouped by them. Sections come from :data:`SECTIONS` (name -> function of
the leaderboard returning sections), shown in :data:`ORDER` then by name, so
another axis adds its section by registering a function, never by editing this
page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from vlmrobust.leaderboard.board import IMAGENET, Leaderboard
from vlmrobust.leaderboard.charts.probit import (
    REFERENCE_COLOUR,
    ChartLine,
    ChartPoint,
    colours,
    shift_chart,
)
from vlmrobust.leaderboard.fits.factor_intervals import factor_er_intervals
from vlmrobust.leaderboard.pages.formatting import data_v, pct
from vlmrobust.leaderboard.pages.holistic import corruption_3d as holistic_3dcc  # noqa: F401  (their sections register)
from vlmrobust.leaderboard.pages.holistic import ood as holistic_ood  # noqa: F401  (their sections register)
from vlmrobust.leaderboard.pages.holistic.table import (
    ORDER,
    SECTIONS,
    Cell,
    Section,
    acc_cell,
    er_ci_cell,
    group_label,
    grouped,
    make_row,
)
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.metrics.lines.factor_er import FactorLine, factor_effective_robustness
from vlmrobust.metrics.lines.factors import NAMED_FACTORS

SHAPE_CONFIG = "cue-conflict"
STYLIZED_CONFIG = "stylized-imagenet"
ANNOTATED = "annotated"
FIT_NAMES = {"huber": "Huber-robust regression, as seed 001 Fig. 1",
             "least-squares": "least squares, not seed 001's robust regression "
                              "(baselines.yaml holistic_fit)"}


@SECTIONS.register("shape-bias")
def shape_bias_sections(lb: Leaderboard) -> list[Section]:
    """Seed 001 Table I: shape bias with its bootstrap interval, shape and
    texture accuracy, and 16-class accuracy, per model with a cue-conflict run."""
    found = [(s, d) for s in lb.submissions for d in s.datasets.values()
             if SHAPE_CONFIG in d.shape_bias]
    if not found:
        return []
    stylized = any(c.config == STYLIZED_CONFIG for _, d in found for c in d.configs)
    rows = []
    for s, d in found:
        b = d.shape_bias[SHAPE_CONFIG]
        acc = {c.config: c.accuracy for c in d.configs}
        ci = f"{pct(b.shape_bias_ci[0])} … {pct(b.shape_bias_ci[1])}" if b.shape_bias_ci else "—"
        cells = [Cell(pct(b.shape_bias), data_v(b.shape_bias),
                      f"{b.shape_decisions} shape / {b.texture_decisions} texture decisions"),
                 Cell(ci, data_v(b.shape_bias_ci[0] if b.shape_bias_ci else None)),
                 acc_cell(b.shape_accuracy), acc_cell(b.texture_accuracy),
                 acc_cell(acc.get(SHAPE_CONFIG)), Cell(str(b.n_conflict), str(b.n_conflict))]
        if stylized:
            cells.append(acc_cell(acc.get(STYLIZED_CONFIG)))
        rows.append(make_row(lb, s, cells))
    columns = ("Shape bias %", "95% CI", "Shape acc. %", "Texture acc. %", "16-class acc. %",
               "Conflict stimuli") + (("Stylized-ImageNet acc. %",) if stylized else ())
    return [Section(
        "shape-bias", "Shape vs texture bias (cue-conflict)",
        "Shape bias = shape decisions / (shape + texture decisions) over the cue-conflict "
        "stimuli whose shape and texture categories differ (model-vs-human; seed 001 Table I). "
        "Shape and texture accuracy are those decisions over all stimuli (model-vs-human's "
        "fraction-correct-shape / -texture); 16-class accuracy is against the shape label. "
        "Classifiers decide by the mean probability of each category's ImageNet classes, CLIP "
        "over the 16 category names, VLMs over the 16 names as options.",
        columns, grouped(rows))]


def _factor_sources(lb: Leaderboard) -> dict[tuple[str, str], dict[str, Any]]:
    """(dataset, config) -> {model id: ConfigScore} for configs with factors
    (imagenet-mcq: the overview's strategy only)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for s in lb.submissions:
        for key, d in s.datasets.items():
            for c in d.configs:
                if not c.factors or ANNOTATED not in c.factors:
                    continue
                if key == IMAGENET and (c.strategy or "") != lb.strategy:
                    continue
                out.setdefault((key, c.config), {})[s.model_id] = c
    return out


def _baseline(lb: Leaderboard, key: str, models: Mapping[str, Any]) -> list[str]:
    """The reference line's models among ``models`` (the baselines.yaml rule;
    with a maintainers' record, only the runs it covers)."""
    subs = {s.model_id: s for s in lb.submissions}
    ids = lb.spec.reference_ids({m: subs[m].meta.family for m in models},
                                {m: subs[m].meta.training_data for m in models})
    if lb.record is None:
        return ids
    rec = lb.record
    return [m for m in ids if key in subs[m].evidence
            and rec.covers(m, key, subs[m].evidence[key].predictions_sha256)]


@SECTIONS.register("imagenet-x")
def factor_sections(lb: Leaderboard) -> list[Section]:
    """Per source config: accuracy on seed 001's 10 ImageNet-X factors, and the
    factor-level ER against lines fitted on the reference models."""
    subs = {s.model_id: s for s in lb.submissions}
    out: list[Section] = []
    for (key, config), by_model in sorted(_factor_sources(lb).items()):
        factors = [f for f in NAMED_FACTORS if any(f in c.factors for c in by_model.values())]
        n_of = {f: max(c.factors.get(f, (0, None))[0] for c in by_model.values())
                for f in (*factors, ANNOTATED)}
        what = ("5-option multiple choice on the build's imagenet-val sample" if key == IMAGENET
                else "over the full label space")
        acc_rows = [make_row(lb, subs[m], [acc_cell(c.factors.get(f, (0, None))[1],
                                                    f"{c.factors.get(f, (0, None))[0]} images")
                                           for f in (ANNOTATED, *factors)])
                    for m, c in by_model.items()]
        out.append(Section(
            f"factors-{len(out)}", f"ImageNet-X factor accuracy: {key} / {config}",
            f"Accuracy ({what}) on the images whose ImageNet-X top factor is each of seed 001's "
            "10 factors (imagenet-x's top-factor annotations, prototypes removed; joined on "
            "source_file). Column headers give the images per factor: a rare factor rests on "
            "few.", (f"all annotated (n={n_of[ANNOTATED]})",
                     *[f"{f} (n={n_of[f]})" for f in factors]), grouped(acc_rows)))
        overall = {m: c.factors[ANNOTATED][1] for m, c in by_model.items()}
        accs = {m: {f: c.factors.get(f, (0, None))[1] for f in factors}
                for m, c in by_model.items()}
        base = _baseline(lb, key, by_model)
        lines = factor_effective_robustness(overall, accs, base, factors, lb.spec.transform,
                                            lb.spec.holistic_fit)
        cis = factor_er_intervals({m: c.factors for m, c in by_model.items()}, lines, factors,
                                  lb.spec, key, config)
        er_rows = [make_row(lb, subs[m], [er_ci_cell(lines[f].er.get(m), cis[f][m],
                                                     lb.spec.level) for f in factors])
                   for m in by_model]
        notes = tuple(
            f"{f}: " + (f"{lb.spec.transform}(acc_f) = {ln.fit.slope:.3f}·{lb.spec.transform}"
                        f"(acc_all) {ln.fit.intercept:+.3f} ({lb.spec.holistic_fit}) over "
                        f"{ln.fit.n_models} reference models ({', '.join(ln.baseline)})"
                        if ln.fit is not None
                        else f"no line: {ln.reason}")
            for f, ln in lines.items())
        chance = 1 / 5 if key == IMAGENET else 1 / 1000
        charts = tuple(
            _factor_chart(f, lines[f], overall, accs, subs, base, chance, lb.spec.transform)
            for f in factors)
        out.append(Section(
            f"factor-er-{len(out)}", f"Factor-level effective robustness: {key} / {config}",
            "Per factor, the reference models' (factor accuracy, overall ImageNet-X accuracy) "
            f"points are fitted by a line on {lb.spec.transform} axes ({lb.spec.reference_label}; "
            f"{FIT_NAMES[lb.spec.holistic_fit]}; seed 001 §IV); a model's factor ER is its "
            "factor accuracy above that line, in "
            f"points, with its {lb.spec.level:.0%} percentile interval from a joint bootstrap "
            f"({lb.spec.n_bootstrap} resamples) over the model's annotated images (overall and "
            "factor accuracy from the same redrawn images) and the reference models.",
            tuple(factors), grouped(er_rows), notes, charts))
    return out


def _factor_chart(factor: str, line: FactorLine, overall: Mapping[str, float | None],
                  accs: Mapping[str, Mapping[str, float | None]],
                  subs: Mapping[str, Submission], base: Sequence[str], chance: float,
                  transform: str) -> Markup:
    """Seed 001 §IV's chart for one factor: every model's (overall, factor)
    accuracy on probit axes, coloured by model group, and the reference line."""
    pts = [ChartPoint(subs[m].meta.name, group_label(subs[m]), x, y, m in base)
           for m, x in overall.items() if x is not None
           and (y := accs.get(m, {}).get(factor)) is not None]
    lines = ([ChartLine("reference line", line.fit.slope, line.fit.intercept, REFERENCE_COLOUR,
                        reference=True)] if line.fit is not None else [])
    groups = list(dict.fromkeys(sorted(p.group for p in pts)))
    return shift_chart(pts, lines, group_colours=colours(groups), chance=chance,
                       transform=transform, x_name="ImageNet-X (all annotated)",
                       y_name=factor, title=f"{factor}: factor vs overall accuracy")


def holistic_sections(lb: Leaderboard) -> list[Section]:
    """Every registered section, in :data:`ORDER` then by name."""
    names = [n for n in ORDER if n in SECTIONS] + [n for n in SECTIONS if n not in ORDER]
    return [sec for n in names for sec in SECTIONS.get(n)(lb)]

