"""What the overview table shows beyond the aggregated numbers: the headline
metric that ranks models, per-strategy switch values, what a partial
submission is missing, size buckets and the filters' choices, and its rows as
:class:`.paged.Row` cells (index.html renders the first page, the site script
every row of data/overview.json; issue 37.2).

Ranking goes through :func:`headline_metric` alone, so that changing the
headline (metric, strategy, reference line) is a one-function change.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlmrobust.benchmarks.families import LABELS as DATASET_LABELS
from vlmrobust.leaderboard.aggregate import headline_er
from vlmrobust.leaderboard.board import BENCH_C, IMAGENET, Leaderboard, Row
from vlmrobust.leaderboard.fits.pairwise import LEVEL, RANK_COLUMN
from vlmrobust.leaderboard.pages.completeness import Completeness, default_completeness
from vlmrobust.leaderboard.pages.formatting import data_v, params, pct, signed, tone
from vlmrobust.leaderboard.site.paged import Cell, Mark
from vlmrobust.leaderboard.site.paged import Row as TableRow
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.provenance import Provenance

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


def overview_rows(lb: Leaderboard, strats: list[str],
                   prov: Mapping[str, Provenance]) -> list[dict[str, Any]]:
    """Per row: rank, headline, partial notes, badge and the switch values
    (index-keyed: strategy names are submission data, never attribute names)."""
    heads = {r.model_id: headline_metric(lb, r) for r in lb.rows}
    rank = ranks({m: h.value for m, h in heads.items()})
    ers = mean_er_by_strategy(lb)
    subs = {s.model_id: s for s in lb.submissions}
    out = []
    for r in lb.rows:
        s = subs[r.model_id]
        h = heads[r.model_id]
        accs = accuracy_by_strategy(s)
        acc_sw = {v: [(data_v(accs.get((st, v))), pct(accs.get((st, v)))) for st in strats]
                  for v in lb.variants}
        er_sw = []
        for st in strats:
            v, ci = (h.value, h.ci) if st == h.strategy else ers.get(r.model_id, {}).get(
                st, (None, None))
            why = (h.reason or "") if st == h.strategy else ""
            er_sw.append((data_v(v), signed(v, 1, 100.0), tone(v),
                          f"{signed(ci[0], 1, 100.0)} … {signed(ci[1], 1, 100.0)}" if ci else why))
        out.append({"r": r, "s": s, "rank": rank[r.model_id], "headline": h,
                    "missing": missing(lb, s, strats), "prov": prov[r.model_id],
                    "size": size_bucket(r.params), "acc_sw": acc_sw, "er_sw": er_sw,
                    "search": " ".join(x for x in (r.name, r.model_id, r.vision_encoder or "",
                                                   s.meta.prompt_id or "") if x).lower()})
    out.sort(key=lambda o: (o["rank"] is None, o["rank"] or 0, o["r"].model_id))
    _mark_ties(lb, out)
    return out


def _ci_text(ci: tuple[float, float] | None, fmt: Any) -> str:
    return "" if ci is None else f"{round(LEVEL * 100)}% interval {fmt(ci[0])} … {fmt(ci[1])}"


def _mark_ties(lb: Leaderboard, rows: list[dict[str, Any]]) -> None:
    """Per row: the rank shown (a model within noise of the one above shares its
    rank) and, per column, a tie mark and the hover text of its paired test
    against the next model above in that column (leaderboard.pairwise)."""
    tests = {(t.column, t.lower): t for t in lb.pairwise}
    names = {s.model_id: s.meta.name for s in lb.submissions}
    shown: dict[str, int | None] = {}
    for o in rows:
        m = o["r"].model_id
        t = tests.get((RANK_COLUMN, m))
        o["rank_title"] = ""
        o["rank_tie"] = False
        shown[m] = o["rank"]
        if t is not None and o["rank"] is not None:
            o["rank_title"] = f"vs {names[t.higher]} (first of its rank group): {t.summary()}"
            if t.tie and shown.get(t.higher) is not None:
                shown[m] = shown[t.higher]
                o["rank_tie"] = True
        o["shown_rank"] = shown[m]
    for o in rows:
        r = o["r"]
        notes: dict[str, tuple[bool, str]] = {}
        cis = {"er": _ci_text(r.mean_er_ci, lambda v: signed(v, 1, 100.0)),
               "imagewikiqa": _ci_text(r.iwqa_ci, pct)}
        cis.update({f"imagenet-mcq:{v}": _ci_text(r.imagenet_ci.get(v), pct) for v in lb.variants})
        cis.update({f"bench-c:{k}": _ci_text(r.benchc_ci.get(k), fmt) for k, fmt in (
            ("acc", pct), ("delta_acc", lambda v: signed(v, 1, 100.0)),
            ("ras", lambda v: signed(v, 3)))})
        for key, ci in cis.items():
            t = tests.get((key, r.model_id))
            parts = [ci] if ci else []
            if t is not None:
                parts.append(f"vs {names[t.higher]} (next above in this column): {t.summary()}")
            if key == "er" and r.er_warning:
                parts.append(r.er_warning)
            notes[key] = (t is not None and t.tie, "; ".join(parts))
        o["notes"] = notes


def _tie(mark: bool, sign: str = "≈") -> tuple[Mark, ...]:
    return (("tie", sign, ""),) if mark else ()


def table_rows(lb: Leaderboard, rows: list[dict[str, Any]], strategies: list[str],
               prompt_key: Mapping[str, str], headline_strategy: str) -> list[TableRow]:
    """The overview's columns, in header order, for every row of
    :func:`overview_rows` (ranked)."""
    hi = strategies.index(headline_strategy) if headline_strategy in strategies else 0
    out = []
    for o in rows:
        r, h, notes = o["r"], o["headline"], o["notes"]
        enc = r.vision_encoder or ""
        bc = r.benchc
        er_sw = o["er_sw"]
        cells = [
            Cell(data_v(o["rank"]), str(o["shown_rank"] or "—"), h=o["rank_title"],
                 m=_tie(o["rank_tie"], "=")),
            Cell(r.name, r.name, c="t name", h=r.name, a=r.page),
            Cell(r.family, "", c="t", m=((f"fam fam-{r.family}", r.family, ""),)),
            Cell(enc, enc or "—", c="t name enc", h=enc),
            Cell(data_v(r.params), params(r.params)),
            Cell(er_sw[hi][0], er_sw[hi][1], c=f"sw er {er_sw[hi][2]}".strip(), h=er_sw[hi][3],
                 s=tuple((raw, text, ci, tn) for raw, text, tn, ci in er_sw))
            if er_sw else Cell("", "—", c="sw er"),
            Cell(data_v(h.ci[0] if h.ci else None), signed(h.ci[0] if h.ci else None, 1, 100.0),
                 c="ci", h=notes["er"][1],
                 m=_tie(notes["er"][0]) + ((("warn", "⚠", r.er_warning),) if r.er_warning
                                           else ())),
            Cell(data_v(h.ci[1] if h.ci else None), signed(h.ci[1] if h.ci else None, 1, 100.0),
                 c="ci"),
        ]
        for v in lb.variants:
            sw, nt = o["acc_sw"][v], notes[f"imagenet-mcq:{v}"]
            cells.append(Cell(sw[hi][0], sw[hi][1], c="sw tied" if nt[0] else "sw", h=nt[1],
                              s=tuple((raw, text) for raw, text in sw)))
        for key, value, text, cls in (
                ("bench-c:acc", bc.get("acc"), pct(bc.get("acc")), ""),
                ("bench-c:delta_acc", bc.get("delta_acc"), signed(bc.get("delta_acc"), 1, 100.0),
                 tone(bc.get("delta_acc"))),
                ("bench-c:ras", bc.get("ras"), signed(bc.get("ras"), 3), tone(bc.get("ras"))),
                ("imagewikiqa", r.iwqa, pct(r.iwqa), "")):
            nt = notes[key]
            cells.append(Cell(data_v(value), text, c=cls, h=nt[1], m=_tie(nt[0])))
        prov: Provenance = o["prov"]
        miss = o["missing"]
        status: tuple[Mark, ...] = (("badge ref" if prov.reference else "badge self", prov.label,
                                     prov.detail),)
        if miss:
            status += (("", " ", ""), ("badge partial", "partial", "; ".join(miss)), ("", " ", ""),
                       ("missing", "; ".join(miss), ""))
        cells.append(Cell(prov.label + (" partial" if miss else ""), "", c="t status", m=status))
        out.append(TableRow({"model": r.model_id, "family": r.family, "size": o["size"] or "?",
                        "prompt": prompt_key[o["s"].meta.prompt_id or ""],
                        "search": o["search"]}, tuple(cells)))
    return out
