"""The Holistic page's 3D-corruption section (seed 001 §VIII-B, Fig. 8, Table
IV): per model with 3DCC configs in a classification dataset, ImageNet-val
accuracy, accuracy on Fig. 8's six corruptions at severity 5 and their mean
(Table IV's "3D robustness"), the mean at the other severities, and the slope
gap tan(Δ_S) between the CNN-based and the ViT-based zero-shot CLIP lines
(vlmrobust.metrics.holistic.corruption_3d). Registered as the ``3dcc`` section of
:data:`vlmrobust.leaderboard.pages.holistic.page.SECTIONS`.

Lines: corrupted mean accuracy against ImageNet-val accuracy on linear axes
(Fig. 8's axes are accuracies), over zero-shot CLIP models trained on LAION
("examine only CLIP models pre-trained on LAION to maintain consistency in
training dataset distributions"), one per ``architecture`` (cnn, vit), fitted by
baselines.yaml's ``holistic_fit`` (Huber by default: the seed does not say how
Fig. 8's lines are fitted; its other trend lines are robust fits) when the group
has ``min_models`` models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from markupsafe import Markup

from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.charts import svg
from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.pages.holistic.table import (
    SECTIONS,
    Section,
    acc_cell,
    grouped,
    make_row,
)
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.metrics.holistic.corruption_3d import (
    SEED_CORRUPTIONS,
    SEED_SEVERITY,
    mean_3d_accuracy,
    parse_config,
    slope_gap,
)

REFERENCE_CONFIG = "imagenet-val"
LABEL_SPACE = "label-space"
ARCHITECTURES = ("cnn", "vit")

Cells = dict[tuple[str, int], float | None]


def _runs(lb: Leaderboard) -> dict[str, list[tuple[Submission, float | None, Cells]]]:
    """dataset -> [(submission, ImageNet-val accuracy, 3DCC cells)] for the
    classification sections with a 3DCC config scored over the label space."""
    out: dict[str, list[tuple[Submission, float | None, Cells]]] = {}
    for s in lb.submissions:
        for key, d in sorted(s.datasets.items()):
            full = [c for c in d.configs if c.over == LABEL_SPACE]
            cells: Cells = {p: c.accuracy for c in full if (p := parse_config(c.config))}
            if d.kind != "classification" or not cells:
                continue
            ref = next((c.accuracy for c in full if c.config == REFERENCE_CONFIG), None)
            out.setdefault(key, []).append((s, ref, cells))
    return out


def laion_zero_shot_clip(s: Submission) -> str | None:
    """The architecture group (cnn / vit) of a zero-shot CLIP trained on LAION, else None."""
    m = s.meta
    data = getattr(m, "training_data", None) or ""
    arch = getattr(m, "architecture", None)
    if m.family != "clip" or getattr(m, "fine_tuned_on", None) or not data.startswith("laion"):
        return None
    return arch if arch in ARCHITECTURES else None


def arch_lines(runs: Sequence[tuple[Submission, float | None, Cells]], sev: int, method: str,
               min_models: int) -> dict[str, tuple[float, float, int] | int]:
    """arch -> (slope, intercept, models) of its line at ``sev``, or the number of
    models when there are too few for one."""
    out: dict[str, tuple[float, float, int] | int] = {}
    for arch in ARCHITECTURES:
        pts = [(x, y) for s, x, cells in runs if laion_zero_shot_clip(s) == arch
               and x is not None and (y := mean_3d_accuracy(cells, sev)) is not None]
        a, b = (fit.line_params(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]),
                                method=method) if len(pts) >= min_models else (np.nan, np.nan))
        out[arch] = ((float(a), float(b), len(pts)) if np.isfinite(a) and np.isfinite(b)
                     else len(pts))
    return out


def gap_notes(runs: Sequence[tuple[Submission, float | None, Cells]], severities: Sequence[int],
              method: str, min_models: int) -> list[str]:
    """Per severity: the CNN and ViT lines' slopes and tan(Δ_S), or why there is none."""
    notes = []
    for sev in severities:
        slopes: dict[str, tuple[float, int]] = {}
        missing = []
        for arch, got in arch_lines(runs, sev, method, min_models).items():
            if isinstance(got, tuple):
                slopes[arch] = (got[0], got[2])
            else:
                missing.append(f"{got} {arch.upper()}-based")
        if missing:
            notes.append(f"severity {sev}: no slope gap: {', '.join(missing)} zero-shot LAION "
                         f"CLIP model(s) with all six cells and ImageNet val; a line needs "
                         f"{min_models}")
            continue
        (a_c, n_c), (a_v, n_v) = slopes["cnn"], slopes["vit"]
        deg, tan = slope_gap(a_c, a_v)
        notes.append(f"severity {sev}: CNN slope {a_c:.3f} ({n_c} models), ViT slope {a_v:.3f} "
                     f"({n_v} models), Δ_S = {deg:+.1f}°, tan(Δ_S) = {tan:+.3f} ({method})")
    return notes


@SECTIONS.register("3dcc")
def threedcc_sections(lb: Leaderboard) -> list[Section]:
    """One section per classification dataset with 3DCC configs."""
    out = []
    for key, runs in sorted(_runs(lb).items()):
        severities = sorted({sev for _, _, cells in runs for (_, sev) in cells})
        others = [s for s in severities if s != SEED_SEVERITY]
        rows = []
        for s, ref, cells in runs:
            row = [acc_cell(ref, f"{REFERENCE_CONFIG}, over the label space")]
            row += [acc_cell(cells.get((c, SEED_SEVERITY)), f"3dcc-{c}-{SEED_SEVERITY}")
                    for c in SEED_CORRUPTIONS]
            row += [acc_cell(mean_3d_accuracy(cells, sev), _mean_title(cells, sev))
                    for sev in (SEED_SEVERITY, *others)]
            rows.append(make_row(lb, s, row))
        columns = ("ImageNet val acc. %",
                   *[f"{c} s{SEED_SEVERITY} %" for c in SEED_CORRUPTIONS],
                   f"3D mean s{SEED_SEVERITY} % (Table IV)", *[f"3D mean s{s} %" for s in others])
        out.append(Section(
            f"3dcc-{key}", f"3D corruptions (3DCC): {key}",
            "Accuracy over the whole label space on seed 001's six 3D corruptions (Fig. 8: fog, "
            "near focus, z-motion blur, flash, xy-motion blur, far focus) at severity 5 and "
            "their mean, Table IV's \"3D robustness\" (\"mean performance on six 3D-related "
            "corruptions with severity level 5\"), with the mean at each other severity scored; "
            "a mean needs all six cells. Notes: the slope gap of Fig. 8, the lines of "
            "CNN-based and ViT-based zero-shot CLIP trained on LAION (3D mean accuracy against "
            "ImageNet-val accuracy, linear axes, "
            f"{'Huber-robust' if lb.spec.holistic_fit == 'huber' else 'least-squares'} fits "
            "(the seed does not say how Fig. 8's lines are fitted), architecture from meta.yaml) "
            "and tan(Δ_S) = tan(arctan a_cnn − arctan a_vit), positive when the CNN line is "
            "steeper. Fig. 8 draws a line per corruption; this gap is on the six's mean.",
            columns, grouped(rows),
            tuple(gap_notes(runs, severities, lb.spec.holistic_fit, lb.spec.min_models)),
            (fig8_chart(runs, lb.spec.holistic_fit, lb.spec.min_models),)))
    return out


def fig8_chart(runs: Sequence[tuple[Submission, float | None, Cells]], method: str,
               min_models: int) -> Markup:
    """Fig. 8 at severity 5 on the six's mean: ImageNet-val accuracy (x) against
    the 3D mean (y), linear axes, CNN / ViT zero-shot LAION CLIP coloured and
    lined, every other model grey."""
    palette = {"cnn": "#D55E00", "vit": "#0072B2"}
    pts, cols = [], []
    for s, x, cells in runs:
        y = mean_3d_accuracy(cells, SEED_SEVERITY)
        if x is not None and y is not None:
            arch = laion_zero_shot_clip(s)
            pts.append((f"{s.meta.name} ({f'LAION CLIP, {arch}' if arch else s.meta.family})",
                        x, y))
            cols.append(palette.get(arch or "", "#999999"))
    lines = [(f"{arch.upper()}-based LAION CLIP ({method}, {got[2]} models)", got[0], got[1],
              palette[arch])
             for arch, got in arch_lines(runs, SEED_SEVERITY, method, min_models).items()
             if isinstance(got, tuple)]
    return svg.linear_scatter(pts, x_label="ImageNet val accuracy",
                              y_label=f"3D mean accuracy, severity {SEED_SEVERITY}",
                              title=f"3DCC severity {SEED_SEVERITY}: six-corruption mean vs "
                                    "ImageNet val (seed 001 Fig. 8)",
                              identity=False, point_colours=cols, lines=lines)


def _mean_title(cells: Mapping[tuple[str, int], float | None], sev: int) -> str:
    have = sum(cells.get((c, sev)) is not None for c in SEED_CORRUPTIONS)
    return f"mean over the six at severity {sev}" if have == 6 else (
        f"{have} of the six cells at severity {sev} scored: no mean")
