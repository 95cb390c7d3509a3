"""Read the Bench-C statistics of a ``scores.json`` beyond the point estimates
(evaluation/scoring/bench_c/stats.py, bench_c_sensitivity.py): ``intervals`` (clustered
bootstrap), seed 003's ``sensitivity`` analysis (Table 2), the
``corruption_effect`` t-tests and the ``accuracy_gain`` cells (Table 3). Every
value is checked (numbers finite and in range, names known); a problem names
the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.score_records import BenchCExtras
from vlmrobust.leaderboard.submission import METRIC_BOUNDS, QUADRANTS, WEIGHTINGS

EFFECT_METRICS = ("acc", "S", "C")
_EFFECT_FIELDS = ("mean_change", "t", "p", "z")
_E_ABS_Z = ("e_abs_z_ras", "e_abs_z_delta_acc")
_GAIN_NUMBERS = ("delta_acc", "delta_S", "delta_C")
CLEAN_PREFIX = "clean:"


def _interval(w: Where, raw: Any, where: str, bounds: tuple[float, float],
              ) -> tuple[float, float] | None:
    if raw is None:
        return None
    if (not isinstance(raw, list) or len(raw) != 2
            or any(isinstance(x, bool) or not isinstance(x, int | float) for x in raw)):
        raise w.fail(where, f"expected [low, high], got {raw!r:.80}", "rescore the submission")
    lo, hi = float(raw[0]), float(raw[1])
    if not (bounds[0] <= lo <= hi <= bounds[1]):
        raise w.fail(where, f"{raw!r} is not an interval in {list(bounds)}",
                     "rescore the submission")
    return lo, hi


def _intervals(w: Where, raw: Any, where: str) -> dict[str, dict[str, tuple[float, float] | None]]:
    if raw is None:
        return {}
    m = w.mapping(raw, where)
    out: dict[str, dict[str, tuple[float, float] | None]] = {}
    for wt in WEIGHTINGS:
        if wt not in m:
            continue
        block = w.mapping(m[wt], f"{where}.{wt}")
        vals: dict[str, tuple[float, float] | None] = {}
        for k, v in block.items():
            if k == "clean":
                for ck, cv in w.mapping(v, f"{where}.{wt}.clean").items():
                    if ck not in METRIC_BOUNDS:
                        raise w.fail(f"{where}.{wt}.clean.{ck}", "unknown metric",
                                     "rescore the submission")
                    vals[CLEAN_PREFIX + ck] = _interval(w, cv, f"{where}.{wt}.clean.{ck}",
                                                        METRIC_BOUNDS[ck])
            elif k in METRIC_BOUNDS:
                vals[k] = _interval(w, v, f"{where}.{wt}.{k}", METRIC_BOUNDS[k])
            else:
                raise w.fail(f"{where}.{wt}.{k}", "unknown metric", "rescore the submission")
        out[wt] = vals
    return out


def _probability(w: Where, vals: Mapping[str, Any], where: str) -> None:
    p = vals["p"]
    if p is not None and not 0.0 <= p <= 1.0:
        raise w.fail(f"{where}.p", f"{p!r} is not a probability", "rescore the submission")


def _sensitivity(w: Where, raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    m = w.mapping(raw, where)
    out: dict[str, Any] = {k: w.number(m, k, where, lo=0.0) for k in _E_ABS_Z}
    out.update(t=w.number(m, "t", where), p=w.number(m, "p", where))
    _probability(w, out, where)
    out.update(df=w.integer(m, "df", where), n_pairs=w.integer(m, "n_pairs", where))
    corruptions: dict[str, dict[str, float | int | None]] = {}
    for name, r in w.mapping(m.get("corruptions", {}), f"{where}.corruptions").items():
        rw = f"{where}.corruptions.{name}"
        entry = w.mapping(r, rw)
        vals: dict[str, float | int | None] = {k: w.number(entry, k, rw, lo=0.0) for k in _E_ABS_Z}
        vals["n_pairs"] = w.integer(entry, "n_pairs", rw)
        corruptions[str(name)] = vals
    out["corruptions"] = corruptions
    for key in ("tested", "left_out"):
        names = m.get(key, [])
        if not isinstance(names, list) or not all(str(n) in corruptions for n in names):
            raise w.fail(f"{where}.{key}", "expected a list of the block's corruptions",
                         "rescore the submission")
        out[key] = [str(n) for n in names]
    return out


def _corruption_effect(w: Where, raw: Any, where: str,
                       ) -> dict[str, dict[str, dict[str, float | int | None]]]:
    if raw is None:
        return {}
    m = w.mapping(raw, where)
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for metric in EFFECT_METRICS:
        if m.get(metric) is None:
            continue
        rows = w.mapping(m[metric], f"{where}.{metric}")
        parsed: dict[str, dict[str, float | int | None]] = {}
        for name, r in rows.items():
            rw = f"{where}.{metric}.{name}"
            entry = w.mapping(r, rw)
            vals: dict[str, float | int | None] = {k: w.number(entry, k, rw)
                                                   for k in _EFFECT_FIELDS}
            _probability(w, vals, rw)
            vals["n_questions"] = w.integer(entry, "n_questions", rw)
            vals["df"] = w.integer(entry, "df", rw)
            parsed[str(name)] = vals
        out[metric] = parsed
    return out


def _gains(w: Where, raw: Any, where: str) -> tuple[dict[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise w.fail(where, "expected a list", "rescore the submission")
    out = []
    for i, item in enumerate(raw):
        iw = f"{where}[{i}]"
        g = w.mapping(item, iw)
        category = w.text(g, "category", iw)
        if category is not None and category not in QUADRANTS:
            raise w.fail(f"{iw}.category", f"{category!r} is not one of {list(QUADRANTS)}",
                         "rescore the submission")
        rec: dict[str, Any] = {"corruption": w.text(g, "corruption", iw, required=True),
                               "severity": w.integer(g, "severity", iw), "category": category}
        for k in ("n", "WR", "RW"):
            rec[k] = w.integer(g, k, iw, required=False)
        for k in _GAIN_NUMBERS:
            rec[k] = w.number(g, k, iw, lo=-1.0, hi=1.0)
        out.append(rec)
    return tuple(out)


def load_extras(w: Where, b: Mapping[str, Any], where: str) -> BenchCExtras:
    return BenchCExtras(intervals=_intervals(w, b.get("intervals"), f"{where}.intervals"),
                        sensitivity=_sensitivity(w, b.get("sensitivity"), f"{where}.sensitivity"),
                        corruption_effect=_corruption_effect(w, b.get("corruption_effect"),
                                                             f"{where}.corruption_effect"),
                        accuracy_gain=_gains(w, b.get("accuracy_gain"), f"{where}.accuracy_gain"))
