"""Every line of one distractor strategy and each model's effective robustness
against the reference line.

Per (reference variant, shift) ONE reference line is fitted in transformed
(probit) space on the reference baseline of baselines.yaml, plus each family's
line and, where a family was run with several prompts, each prompt's line (the
seed's Fig. 3). The reference line takes only the reference family's models
trained on the reference data (baselines.yaml ``training_data``); the family's
other models get one line per training data. ER = acc_shift − t⁻¹(a·t(acc_ref) + b) against the reference line.

The bootstrap redraws every model's accuracy (:mod:`.bootstrap`) and the line's
models with replacement: one multiplicity vector per line group, shared by all
shifts so that a mean over shifts has a proper joint interval.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.leaderboard.board import (
    CHANCE,
    IMAGENET,
    REFERENCE,
    SELF_REPORTED,
    UNSPECIFIED_PROMPT,
    ERValue,
    MeanER,
    Point,
    ShiftFit,
    family_key,
    variant_key,
)
from vlmrobust.leaderboard.fits import lines as fit
from vlmrobust.leaderboard.fits.bootstrap import (
    MIN_BOOTSTRAP_MODELS,
    interval,
    resampled_accuracy,
    seeded_rng,
)
from vlmrobust.leaderboard.submission import DatasetScores, Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.evidence import model_identity


def imagenet_acc(d: DatasetScores) -> dict[tuple[str, str], float]:
    """(strategy, variant) -> accuracy for configs that have one."""
    out = {}
    for c in d.configs:
        if c.variant is not None and c.accuracy is not None:
            out[(c.strategy or "", c.variant)] = c.accuracy
    return out


def imagenet_n(d: DatasetScores) -> dict[tuple[str, str], int]:
    return {(c.strategy or "", c.variant): c.n for c in d.configs
            if c.variant is not None and c.accuracy is not None}


class Accuracies:
    """Point accuracies and their (lazily drawn, cached) bootstrap replicates:
    (strategy, variant) -> accuracy of each submission's ``dataset`` section, as
    ``acc_of`` and ``n_of`` read them (imagenet-mcq's by default; the
    classification page passes its full-label-space configs)."""

    def __init__(self, subs: Sequence[Submission], spec: BaselineSpec, dataset: str = IMAGENET,
                 acc_of: Callable[[DatasetScores], dict[tuple[str, str], float]] = imagenet_acc,
                 n_of: Callable[[DatasetScores], dict[tuple[str, str], int]] = imagenet_n) -> None:
        self.spec = spec
        self.dataset = dataset
        self.acc = {s.model_id: acc_of(s.datasets[dataset]) for s in subs}
        self.n = {s.model_id: n_of(s.datasets[dataset]) for s in subs}
        self._boot: dict[tuple[str, str, str], NDArray[np.float64]] = {}

    def boot(self, model: str, strategy: str, variant: str) -> NDArray[np.float64]:
        key = (model, strategy, variant)
        if key not in self._boot:
            self._boot[key] = resampled_accuracy(
                self.acc[model][(strategy, variant)], self.n[model][(strategy, variant)],
                self.spec.n_bootstrap, seeded_rng(self.spec.seed, "questions", *key))
        return self._boot[key]


@dataclass
class _Group:
    """The models that define one line (for every shift of one strategy), with one
    shared draw of model multiplicities."""

    kind: str
    label: str
    family: str
    ids: list[str]
    missing: tuple[str, ...]
    weights: NDArray[np.float64]
    absent_reason: str | None = None
    # representative id -> the other submissions of the same model (not counted)
    copies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # said when the group has too few models (e.g. runs missing from the record)
    hint: str = ""


def _fit_shift(g: _Group, strategy: str, ref: str, shift: str, accs: Accuracies,
               points: tuple[Point, ...], spec: BaselineSpec,
               ) -> tuple[ShiftFit, NDArray[np.float64], NDArray[np.float64]]:
    """The group's line on (ref, shift) and its bootstrap slopes/intercepts
    (empty arrays when there is no line)."""
    kind = spec.transform
    have = {p.model_id for p in points}
    base = [m for m in g.ids if m in have]
    line: fit.LineFit | None = None
    reason = g.absent_reason
    if reason is None and len(base) < spec.min_models:
        n_copies = sum(len(c) for m, c in g.copies.items() if m in base)
        reason = (f"no line: {len(base)} {g.label} model(s) with accuracies on {ref} and "
                  f"{shift}; a line needs at least {spec.min_models}" + (
                      f" (another {n_copies} submission(s) repeat one of these models: same "
                      "adapter, checkpoint and predictions)" if n_copies else "") + g.hint)
    elif reason is None:
        line = fit.fit_line([accs.acc[m][(strategy, ref)] for m in base],
                            [accs.acc[m][(strategy, shift)] for m in base], kind, spec.fit)
        if line is None:
            reason = f"no line: the {g.label} models share one {ref} accuracy"
    boot_a = boot_b = np.empty(0)
    slope_ci = intercept_ci = None
    ci_reason = None
    if line is not None:
        if spec.n_bootstrap and base:
            mask = np.array([m in have for m in g.ids], dtype=np.float64)
            b = spec.n_bootstrap
            x = np.stack([accs.boot(m, strategy, ref) if m in have else np.full(b, 0.5)
                          for m in g.ids], axis=1)
            y = np.stack([accs.boot(m, strategy, shift) if m in have else np.full(b, 0.5)
                          for m in g.ids], axis=1)
            boot_a, boot_b = fit.line_params(fit.transform(x, kind), fit.transform(y, kind),
                                             g.weights * mask, spec.fit,
                                             min_points=MIN_BOOTSTRAP_MODELS)
        slope_ci, ci_reason = interval(boot_a, spec.level, spec.n_bootstrap)
        intercept_ci, _ = interval(boot_b, spec.level, spec.n_bootstrap)
        if slope_ci is None or intercept_ci is None:
            slope_ci = intercept_ci = None
            ci_reason = ci_reason or "not estimable: every resample gives the same intercept"
    in_base = set(base)
    pts = tuple(Point(p.model_id, p.name, p.acc_ref, p.acc_shift, p.model_id in in_base,
                      p.family, p.prompt_id, p.group) for p in points)
    copies = {m: c for m, c in g.copies.items() if m in in_base}
    f = ShiftFit(g.kind, g.label, strategy, ref, shift, kind, tuple(base), g.missing, line,
                 reason, CHANCE.get(accs.dataset, 0.0), pts, slope_ci, intercept_ci, ci_reason,
                 g.family, copies, accs.dataset)
    return f, boot_a, boot_b


# the group label of a reference-family model without training_data in its meta.yaml
UNSTATED_DATA = "training data unstated"
# a model's value of a group field its meta.yaml leaves out
UNSTATED = "unstated"


def group_value(meta: Any, field_name: str) -> str:
    """A model's value of the chart's group field (baselines.yaml ``group_by``).

    >>> from types import SimpleNamespace as M
    >>> group_value(M(family="clip", loss=None), "loss"), group_value(M(family="clip"), "family")
    ('unstated', 'clip')
    """
    value = getattr(meta, field_name, None)
    return UNSTATED if value is None else str(value)
# answer modes that are each family's usual reading: no line of their own
USUAL_MODES = frozenset({"letter", "class-logits", "embedding"})


def line_prompt(meta: Any) -> str:
    """The prompt key of a model's lines: its prompt id, and its answer mode
    where that is not the family's usual reading (a VLM read by likelihood or
    generation is drawn as its own line, as prompts are).

    >>> from types import SimpleNamespace as M
    >>> line_prompt(M(prompt_id="what-type", mode="likelihood:sum")), line_prompt(M(prompt_id=None, mode="letter"))
    ('what-type · likelihood:sum', 'unspecified')
    """
    prompt = meta.prompt_id or UNSPECIFIED_PROMPT
    mode = getattr(meta, "mode", None)
    return prompt if not mode or mode in USUAL_MODES else f"{prompt} · {mode}"


def distinct_models(ids: Sequence[str], identity: Mapping[str, tuple[str, ...]],
                    ) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """One model per (adapter, checkpoint, predictions content): the first id of
    each identity in sorted order stands for it; returns the representatives and
    each one's other copies (a classifier submitted under several prompt ids is
    one point of a line, not several).

    >>> distinct_models(["a", "b", "c"], {"a": ("x",), "b": ("y",), "c": ("x",)})
    (['a', 'b'], {'a': ('c',)})
    """
    reps: dict[tuple[str, ...], list[str]] = {}
    for m in sorted(ids):
        reps.setdefault(identity.get(m, ("submission", m)), []).append(m)
    firsts = sorted(group[0] for group in reps.values())
    copies = {group[0]: tuple(group[1:]) for group in reps.values() if len(group) > 1}
    return firsts, copies


def _groups(subs: Sequence[Submission], spec: BaselineSpec, strategy: str,
            recorded: frozenset[str] | None) -> list[_Group]:
    family_of = {s.model_id: s.meta.family for s in subs}
    prompt_of = {s.model_id: line_prompt(s.meta) for s in subs}
    identity = {s.model_id: model_identity(s.model_id, s.evidence) for s in subs}
    b = spec.n_bootstrap

    def group(kind: str, label: str, family: str, ids: list[str], *parts: str,
              missing: tuple[str, ...] = (), reason: str | None = None) -> _Group:
        reps, copies = distinct_models(ids, identity)
        w = fit.bootstrap_weights(len(reps), b, seeded_rng(spec.seed, "models", strategy, *parts))
        return _Group(kind, label, family, reps, missing, w, reason, copies)

    training_of = {s.model_id: s.meta.training_data for s in subs}
    listed = spec.reference_ids(family_of, training_of)
    submitted = [m for m in listed if m in family_of]
    # The line's models are the maintainers': only runs in the reference-run record
    # (recorded is None: in-memory records the caller vouches for, e.g. site tests).
    ref_ids = submitted if recorded is None else [m for m in submitted if m in recorded]
    unrecorded = [m for m in submitted if m not in ref_ids]
    ref = group(REFERENCE, REFERENCE, "", ref_ids, REFERENCE,
                missing=tuple(m for m in listed if m not in family_of))
    if unrecorded:
        ref.hint = (f"; {len(unrecorded)} submission(s) of {spec.reference_label} are not in the "
                    "maintainers' reference-run record, so they do not count (a maintainer "
                    "records runs with `vlmrobust leaderboard record-reference`)")
    # the reference family's models trained on other (or unstated) data: one line each
    others: dict[str, list[str]] = defaultdict(list)
    if not spec.reference_models:
        for m, f in family_of.items():
            if f == spec.reference_family and not spec.trained_on_reference(training_of[m]):
                others[training_of[m] or UNSTATED_DATA].append(m)
    if others:
        n_other = sum(len(v) for v in others.values())
        ref.hint += (f"; {n_other} {spec.reference_family} submission(s) are not trained on "
                     f"{spec.reference_training_data} only (meta.yaml training_data), so they "
                     "are drawn on their own line")
    out = [ref]
    for data in sorted(others):
        out.append(group("group", f"{spec.reference_family} · {data}", spec.reference_family,
                         sorted(others[data]), "group", data))
    if unrecorded:
        out.append(group(SELF_REPORTED, f"{spec.reference_label} · self-reported", "",
                         unrecorded, SELF_REPORTED))
    if spec.group_by != "family":
        # one line per value of the group field, in place of the family lines
        value_of = {s.model_id: group_value(s.meta, spec.group_by) for s in subs}
        for value in sorted(set(value_of.values())):
            ids = sorted(m for m, v in value_of.items() if v == value)
            out.append(group("family", f"{spec.group_by}: {value}", "", ids, spec.group_by,
                             value))
        return out
    for fam in sorted(set(family_of.values()), key=family_key):
        ids = sorted(m for m, f in family_of.items() if f == fam)
        out.append(group("family", fam, fam, ids, "family", fam))
        prompts = sorted({prompt_of[m] for m in ids})
        if len(prompts) > 1:
            for p in prompts:
                pids = [m for m in ids if prompt_of[m] == p]
                out.append(group("prompt", f"{fam} · {p}", fam, pids, "prompt", fam, p))
    return out


def strategy_fits(subs: Sequence[Submission], accs: Accuracies, strategy: str, spec: BaselineSpec,
                  recorded: frozenset[str] | None = None,
                  ) -> tuple[list[ShiftFit], dict[str, list[ERValue]], dict[str, MeanER]]:
    """All lines of one strategy, every model's ER against the reference line per
    shift, and its mean ER over shifts with the joint interval. ``recorded``: the
    model ids whose ImageNet-MCQ run is in the maintainers' reference-run record."""
    refs = {s.model_id: s.datasets[accs.dataset].reference_variant for s in subs}
    meta = {s.model_id: s.meta for s in subs}
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)
    for m, a in accs.acc.items():
        ref = refs[m]
        if ref is None or (strategy, ref) not in a:
            continue
        for (st, v) in a:
            if st == strategy and v != ref:
                pairs[(ref, v)].append(m)
    groups = _groups(subs, spec, strategy, recorded)
    fits: list[ShiftFit] = []
    er: dict[str, list[ERValue]] = defaultdict(list)
    boot_er: dict[str, list[NDArray[np.float64]]] = defaultdict(list)
    point_er: dict[str, list[float]] = defaultdict(list)
    kind = spec.transform
    for (ref, shift), models in sorted(pairs.items(),
                                       key=lambda kv: (kv[0][0], variant_key(kv[0][1]))):
        all_points = tuple(Point(
            m, meta[m].name, accs.acc[m][(strategy, ref)], accs.acc[m][(strategy, shift)], False,
            meta[m].family, line_prompt(meta[m]),
            "" if spec.group_by == "family" else f"{spec.group_by}: "
            f"{group_value(meta[m], spec.group_by)}") for m in sorted(models))
        for g in groups:
            ids = set(g.ids) | {c for cs in g.copies.values() for c in cs}
            pts = all_points if g.kind == REFERENCE else tuple(
                p for p in all_points if p.model_id in ids)
            if not pts and g.kind != REFERENCE:
                continue
            f, boot_a, boot_b = _fit_shift(g, strategy, ref, shift, accs, pts, spec)
            fits.append(f)
            if g.kind != REFERENCE:
                continue
            for p in all_points:
                if f.line is None:
                    er[p.model_id].append(ERValue(strategy, shift, p.acc_ref, p.acc_shift,
                                                  None, None, f.reason, f.reason))
                    continue
                value = float(fit.effective_robustness(p.acc_ref, p.acc_shift, f.line.slope,
                                                       f.line.intercept, kind))
                samples = np.empty(0)
                if boot_a.size:
                    samples = fit.effective_robustness(
                        accs.boot(p.model_id, strategy, ref),
                        accs.boot(p.model_id, strategy, shift), boot_a, boot_b, kind)
                ci, why = interval(samples, spec.level, spec.n_bootstrap)
                er[p.model_id].append(ERValue(strategy, shift, p.acc_ref, p.acc_shift, value,
                                              ci, None, why))
                point_er[p.model_id].append(value)
                if samples.size:
                    boot_er[p.model_id].append(samples)
    means: dict[str, MeanER] = {}
    for m, vals in er.items():
        pv = point_er.get(m, [])
        if not pv:
            means[m] = MeanER(strategy, None, None, 0, vals[0].reason)
            continue
        if len(pv) != len(vals):
            missing = [v.shift for v in vals if v.er is None]
            means[m] = MeanER(strategy, None, None, len(vals),
                              f"no reference line on {', '.join(missing)}")
            continue
        if boot_er.get(m) and len(boot_er[m]) == len(pv):
            # A resample degenerate on any shift has no mean (NaN): dropped by interval().
            ci, why = interval(np.mean(np.vstack(boot_er[m]), axis=0), spec.level,
                               spec.n_bootstrap)
        else:
            ci, why = interval(np.empty(0), spec.level, spec.n_bootstrap)
        means[m] = MeanER(strategy, float(np.mean(pv)), ci, len(pv), why)
    return fits, er, means
