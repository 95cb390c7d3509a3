"""What the overview table shows beyond the aggregated numbers: the headline
metric that ranks models, per-strategy switch values, what a partial
submission is missing, size buckets and the filters' choices.

Ranking goes through :func:`headline_metric` alone, so that changing the
headline (metric, strategy, reference line) is a one-function change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlmrobust.benchmarks.families import LABELS as DATASET_LABELS
from vlmrobust.leaderboard.aggregate import headline_er
from vlmrobust.leaderboard.board import BENCH_C, IMAGENET, Leaderboard, Row
from vlmrobust.leaderboard.pages.completeness import Completeness, default_completeness
from vlmrobust.leaderboard.submission import Submission

# (key, label, upper bound in parameters, exclusive); None = unknown size.
SIZE_BUCKETS = (("s", "< 100M", 100e6), ("m", "100M – 1B", 1e9), ("l", "1B – 10B", 10e9),
                ("xl", "≥ 10B", math.inf))


@dataclass(frozen=True)
class Headline:
    """The ranking metric of one model: value, interval and what it is."""

    value: float | None
    ci: tuple[float, float] | None
    strategy: str
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.value is not None and not math.isfinite(self.value):
            raise ValueError("headline value must be finite or None")


def headline_metric(lb: Leaderboard, row: Row) -> Headline:
    """The aggregation's headline (:func:`aggregate.headline_er`): mean ER against the
    reference line over the shifted ImageNet-MCQ variants on the headline strategy,
    with its joint bootstrap interval."""
    h = headline_er(lb, row.model_id)
    ci = h.get("ci")
    return Headline(h.get("value"), None if ci is None else (float(ci[0]), float(ci[1])),
                    str(h.get("strategy")), h.get("reason"))


def headline_strategy(lb: Leaderboard) -> str:
    return lb.spec.headline_strategy


def ranks(vals: Mapping[str, float | None]) -> dict[str, int | None]:
    """1-based rank by headline value, best first (ties share the better rank,
    "competition ranking" 1, 2, 2, 4); models without a headline get None.

    >>> ranks({"a": 0.1, "b": 0.3, "c": None, "d": 0.1})
    {'b': 1, 'a': 2, 'd': 2, 'c': None}
    """
    ordered = sorted((v, m) for m, v in vals.items() if v is not None)
    ordered.sort(key=lambda vm: (-vm[0], vm[1]))
    out: dict[str, int | None] = {}
    prev: float | None = None
    rank = 0
    for i, (v, m) in enumerate(ordered, start=1):
        if v != prev:
            rank, prev = i, v
        out[m] = rank
    out.update({m: None for m, v in vals.items() if v is None})
    return out


def strategies(lb: Leaderboard) -> list[str]:
    """Distractor strategies with ImageNet-MCQ scores, the overview's first."""
    names = {c.strategy or "" for s in lb.submissions if IMAGENET in s.datasets
             for c in s.datasets[IMAGENET].configs if c.variant is not None}
    return sorted(names, key=lambda st: (st != headline_strategy(lb), st))


def mean_er_by_strategy(lb: Leaderboard,
                        ) -> dict[str, dict[str, tuple[float | None, tuple[float, float] | None]]]:
    """model id -> strategy -> (mean ER against the reference line, its interval)."""
    return {m: {x.strategy: (x.value, x.ci) for x in vals} for m, vals in lb.mean_er.items()}


def accuracy_by_strategy(s: Submission) -> dict[tuple[str, str], float | None]:
    """(strategy, variant) -> ImageNet-MCQ accuracy."""
    d = s.datasets.get(IMAGENET)
    if d is None:
        return {}
    return {(c.strategy or "", c.variant): c.accuracy for c in d.configs if c.variant}


def missing(lb: Leaderboard, s: Submission, strats: Sequence[str],
            complete: Completeness | None = None) -> list[str]:
    """What keeps a submission from being complete: a family its model's kind
    answers in the completeness suite (:mod:`.completeness`) without scores,
    ImageNet-MCQ variant × strategy pairs other models have, predictions without
    logits (accuracy only) or Bench-C without per-cell scores."""
    expected = (complete or default_completeness()).of(s.meta.family)
    out = [f"no {DATASET_LABELS.get(k, k)}" for k in expected if k not in s.datasets]
    accs = accuracy_by_strategy(s)
    if IMAGENET in s.datasets:
        for st in strats:
            gone = [v for v in lb.variants if accs.get((st, v)) is None]
            if gone:
                out.append(f"{st}: no {', '.join(gone)}")
    out += [f"{DATASET_LABELS.get(k, k)}: accuracy only (no logits)"
            for k, d in sorted(s.datasets.items()) if not d.has_logits]
    d = s.datasets.get(BENCH_C)
    if d is not None and (d.bench_c is None or not d.bench_c.cells):
        out.append("Bench-C: no per-cell scores")
    return out


def size_bucket(params: int | None) -> str:
    """Filter key of a parameter count ("" = unknown).

    >>> size_bucket(5_300_000), size_bucket(7_000_000_000), size_bucket(None)
    ('s', 'l', '')
    """
    if params is None:
        return ""
    return next(key for key, _, hi in SIZE_BUCKETS if params < hi)


def choices(values: Mapping[str, str]) -> list[tuple[str, str]]:
    """Distinct (key, label) filter choices in label order."""
    return sorted(set(values.items()), key=lambda kv: kv[1])
