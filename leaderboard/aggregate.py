"""Aggregate validated submissions into what the site shows (the seed's protocol,
"Does language training improve VLM robustness?", after Taori et al. 2020 and
Miller et al. 2021):

- ONE reference line per (strategy, reference variant, shift), fitted in
  transformed (probit) space on the reference baseline of baselines.yaml (the
  standard ImageNet-trained ``classifier`` family, or a listed set);
- every model of every family gets its effective robustness against that line,
  ER = acc_shift − t⁻¹(a·t(acc_ref) + b);
- each family's own line (and, where a family was run with several prompts, each
  prompt's line, the seed's Fig. 3) is fitted and reported with slope, intercept,
  R², n and bootstrap CIs, so a reader can see which line is closer to y = x;
- the headline is the mean ER over shifts against the reference line on the
  ``wordnet`` strategy (:func:`headline_er`).

Confidence intervals come from one joint bootstrap: resample b redraws every
model's accuracy on every config from its questions and the line's models with
replacement (one multiplicity vector per line group, shared by all shifts so that
a mean over shifts has a proper joint interval). The lines and ERs are fitted in
:mod:`.shift_fits`, the resampling and intervals live in :mod:`.bootstrap`, and
the records this returns in :mod:`.board`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from vlmrobust.leaderboard.board import (
    BENCH_C,
    IMAGENET,
    IMAGEWIKIQA,
    REFERENCE,
    ERValue,
    Leaderboard,
    MeanER,
    Row,
    ShiftFit,
    variant_key,
)
from vlmrobust.leaderboard.fits.bootstrap import interval, resampled_accuracy, seeded_rng
from vlmrobust.leaderboard.fits.pairwise import adjacent_tests
from vlmrobust.leaderboard.fits.shifts import Accuracies, imagenet_acc, strategy_fits
from vlmrobust.leaderboard.pages.classification.numbers import classification_board
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec
from vlmrobust.leaderboard.trust.provenance import provenances
from vlmrobust.leaderboard.trust.reference_runs import ReferenceRuns


def headline_er(lb: Leaderboard, model_id: str) -> dict[str, Any]:
    """THE headline number of a model: its ER against the reference line on the
    headline strategy (``wordnet``), averaged over its shifts, with the joint
    bootstrap CI: ``{"value": float|None, "ci": [lo, hi]|None, "strategy": str,
    "n_shifts": int, "reason": str|None}`` (``reason`` says why value or CI is None)."""
    return _headline(lb.mean_er.get(model_id, ()), lb.spec)


def page_names(model_ids: list[str]) -> dict[str, str]:
    """``models/<id>.html``; ids that differ only in case get a hash suffix so that
    case-insensitive file systems (macOS, Windows) keep them apart.

    >>> page_names(["a", "A", "b"])["b"]
    'models/b.html'
    >>> len(set(page_names(["a", "A"]).values()))
    2
    """
    lower = Counter(m.lower() for m in model_ids)
    out = {}
    for m in model_ids:
        stem = m
        if lower[m.lower()] > 1:
            stem = f"{m}-{hashlib.sha256(m.encode()).hexdigest()[:8]}"
        out[m] = f"models/{stem}.html"
    return out


def _benchc(s: Submission) -> dict[str, float | None]:
    d = s.datasets.get(BENCH_C)
    if d is None or d.bench_c is None:
        return {"acc": None, "delta_acc": None, "ras": None}
    return {k: d.bench_c.aggregate.get(k) for k in ("acc", "delta_acc", "ras")}


def _benchc_ci(s: Submission) -> dict[str, tuple[float, float] | None]:
    d = s.datasets.get(BENCH_C)
    ex = d.bench_c.extras if d is not None and d.bench_c is not None else None
    kw = ex.intervals.get("kappa_weighted", {}) if ex is not None else {}
    return {k: kw.get(k) for k in ("acc", "delta_acc", "ras")}


def _imagenet_ci(s: Submission, strategy: str) -> dict[str, tuple[float, float] | None]:
    d = s.datasets.get(IMAGENET)
    return {c.variant: c.accuracy_ci for c in (d.configs if d is not None else ())
            if c.variant is not None and (c.strategy or "") == strategy}


def _iwqa_ci(s: Submission, spec: BaselineSpec) -> tuple[float, float] | None:
    """The pooled accuracy's interval: the config's own with one config; with
    several, each config's accuracy redrawn (Binomial(n, acc)/n, seeded per model
    and config) and pooled n-weighted."""
    d = s.datasets.get(IMAGEWIKIQA)
    cfgs = [c for c in (d.configs if d is not None else ()) if c.accuracy is not None and c.n]
    if len(cfgs) == 1:
        return cfgs[0].accuracy_ci
    if not cfgs or not spec.n_bootstrap:
        return None
    total = sum(c.n for c in cfgs)
    pooled = sum(resampled_accuracy(c.accuracy or 0.0, c.n, spec.n_bootstrap,
                                    seeded_rng(spec.seed, "iwqa", s.model_id, c.config)) * c.n
                 for c in cfgs) / total
    ci, _ = interval(pooled, spec.level, spec.n_bootstrap)
    return ci


def _er_warning(fits: Sequence[ShiftFit], model_id: str, strategy: str) -> str | None:
    notes = [f.warning for f in fits if f.kind == REFERENCE and f.strategy == strategy
             and f.warning and any(p.model_id == model_id for p in f.points)]
    return "; ".join(dict.fromkeys(n for n in notes if n)) or None


def _iwqa(s: Submission) -> float | None:
    """n-weighted accuracy over the imagewikiqa configs (normally one: default)."""
    d = s.datasets.get(IMAGEWIKIQA)
    if d is None:
        return None
    num = sum(c.accuracy * c.n for c in d.configs if c.accuracy is not None)
    den = sum(c.n for c in d.configs if c.accuracy is not None)
    return num / den if den else None


def aggregate(submissions: tuple[Submission, ...], spec: BaselineSpec,
              record: ReferenceRuns | None = None) -> Leaderboard:
    """Everything the site shows, computed once (pure; deterministic given the seed).

    ``record`` is the maintainers' reference-run record: it alone gives the
    ``reference`` badge and the reference line's models (reference-family models
    outside it get their own ``self-reported`` line). None is for in-memory
    records the caller vouches for (tests of the site mechanics): the reference
    line then takes every model of the reference family, and no badge is given."""
    recorded = None if record is None else frozenset(
        s.model_id for s in submissions if IMAGENET in s.evidence
        and record.covers(s.model_id, IMAGENET, s.evidence[IMAGENET].predictions_sha256))
    with_in = [s for s in submissions if IMAGENET in s.datasets]
    strategies = Counter(c.strategy or "" for s in with_in for c in s.datasets[IMAGENET].configs)
    # The overview's accuracy columns use the headline strategy when it was run.
    strategy = spec.headline_strategy
    if strategy not in strategies and strategies:
        strategy = sorted(strategies, key=lambda k: (-strategies[k], k))[0]
    accs = Accuracies(with_in, spec)
    fits: list[ShiftFit] = []
    er: dict[str, list[ERValue]] = defaultdict(list)
    mean_er: dict[str, list[MeanER]] = defaultdict(list)
    for st in sorted(strategies):
        f, e, means = strategy_fits(with_in, accs, st, spec, recorded)
        fits.extend(f)
        for m, vals in e.items():
            er[m].extend(vals)
        for m, me in means.items():
            mean_er[m].append(me)
    variants = sorted({v for s in with_in for (st, v) in imagenet_acc(s.datasets[IMAGENET])
                       if st == strategy}, key=variant_key)
    refs = Counter(s.datasets[IMAGENET].reference_variant for s in with_in)
    ref_order = [r for r, _ in refs.most_common() if r is not None]
    variants = [v for v in ref_order if v in variants] + [v for v in variants
                                                          if v not in ref_order]
    pages = page_names([s.model_id for s in submissions])
    mean_map = {k: tuple(v) for k, v in mean_er.items()}
    rows = []
    for s in submissions:
        acc = imagenet_acc(s.datasets[IMAGENET]) if IMAGENET in s.datasets else {}
        head = _headline(mean_map.get(s.model_id, ()), spec)
        rows.append(Row(
            model_id=s.model_id, name=s.meta.name, family=s.meta.family,
            vision_encoder=s.meta.vision_encoder, params=s.meta.params,
            page=pages[s.model_id],
            imagenet={v: acc.get((strategy, v)) for v in variants},
            mean_er=head["value"],
            mean_er_ci=None if head["ci"] is None else (head["ci"][0], head["ci"][1]),
            benchc=_benchc(s), iwqa=_iwqa(s), headline_er=head, prompt_id=s.meta.prompt_id,
            imagenet_ci=_imagenet_ci(s, strategy), benchc_ci=_benchc_ci(s),
            iwqa_ci=_iwqa_ci(s, spec),
            er_warning=_er_warning(fits, s.model_id, spec.headline_strategy),
        ))
    lb = Leaderboard(
        submissions=submissions, spec=spec, strategy=strategy, variants=tuple(variants),
        fits=tuple(fits), er={k: tuple(v) for k, v in er.items()}, rows=tuple(rows),
        pages=pages, mean_er=mean_map,
        provenance=provenances(submissions, record or ReferenceRuns("none")),
        record=record,
        classification=classification_board(submissions, spec, record),
    )
    return dataclasses.replace(lb, pairwise=tuple(adjacent_tests(lb)))


def _headline(means: Sequence[MeanER], spec: BaselineSpec) -> dict[str, Any]:
    for m in means:
        if m.strategy == spec.headline_strategy:
            return m.as_headline()
    return MeanER(spec.headline_strategy, None, None, 0,
                  f"no {spec.headline_strategy} shift accuracies against a reference "
                  "line").as_headline()
