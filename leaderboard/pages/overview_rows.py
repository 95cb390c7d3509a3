"""The overview table's rows (index.html and data/overview.json, issue 37.2):
rank with ties, headline ER and its interval, the strategy-switch values, each
column's interval and paired-test note, the provenance and partial badges, as
:class:`.paged.Row` cells that the page renders (first page) and the script pages
through (every row)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.fits.pairwise import LEVEL, RANK_COLUMN
from vlmrobust.leaderboard.pages import overview
from vlmrobust.leaderboard.pages.formatting import data_v, params, pct, signed, tone
from vlmrobust.leaderboard.pages.paged import Cell, Mark, Row
from vlmrobust.leaderboard.trust.provenance import Provenance


def overview_rows(lb: Leaderboard, strats: list[str],
                   prov: Mapping[str, Provenance]) -> list[dict[str, Any]]:
    """Per row: rank, headline, partial notes, badge and the switch values
    (index-keyed: strategy names are submission data, never attribute names)."""
    heads = {r.model_id: overview.headline_metric(lb, r) for r in lb.rows}
    rank = overview.ranks({m: h.value for m, h in heads.items()})
    ers = overview.mean_er_by_strategy(lb)
    subs = {s.model_id: s for s in lb.submissions}
    out = []
    for r in lb.rows:
        s = subs[r.model_id]
        h = heads[r.model_id]
        accs = overview.accuracy_by_strategy(s)
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
                    "missing": overview.missing(lb, s, strats), "prov": prov[r.model_id],
                    "size": overview.size_bucket(r.params), "acc_sw": acc_sw, "er_sw": er_sw,
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
               prompt_key: Mapping[str, str], headline_strategy: str) -> list[Row]:
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
                              s=tuple((raw, text, nt[1], "") for raw, text in sw)))
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
        out.append(Row({"model": r.model_id, "family": r.family, "size": o["size"] or "?",
                        "prompt": prompt_key[o["s"].meta.prompt_id or ""],
                        "search": o["search"]}, tuple(cells)))
    return out
