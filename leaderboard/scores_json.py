"""Parse a submission's ``scores.json`` (docs/internals.md, schema_version 1) into
:class:`DatasetScores` records; every problem raises
:class:`LeaderboardInputError` naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.core.files.bounded import MAX_SCORES_BYTES, parse_json_bounded, read_bytes_bounded
from vlmrobust.core.kinds import MCQ, SectionReader
from vlmrobust.leaderboard.fields import Where
from vlmrobust.leaderboard.pages.bench_c_stats import load_extras
from vlmrobust.leaderboard.pages.holistic.scores import load_shape_bias
from vlmrobust.leaderboard.registration import reader_for
from vlmrobust.leaderboard.submission import (
    BENCH_C_METRICS,
    CALIBRATION_FIELDS,
    CLEAN_METRICS,
    METRIC_BOUNDS,
    QUADRANTS,
    TRANSITIONS,
    WEIGHTINGS,
    BenchCCell,
    BenchCScores,
    ConfigScore,
    DatasetScores,
    LeaderboardInputError,
    PerturbationSets,
)

SCHEMA_VERSION = 1
# kind classification: what a config's numbers are over (evaluation/scoring/classification.py)
OVER = ("label-space", "k-options")


def _interval(w: Where, c: Any, key: str, where: str) -> tuple[float, float] | None:
    ci_raw = c.get(key)
    # The scorer writes [null, null] when the interval is undefined (e.g. n = 0).
    if ci_raw is None or (isinstance(ci_raw, list) and all(x is None for x in ci_raw)):
        return None
    if (not isinstance(ci_raw, list) or len(ci_raw) != 2
            or any(isinstance(x, bool) or not isinstance(x, int | float) for x in ci_raw)):
        raise w.fail(f"{where}.{key}", f"expected [low, high], got {ci_raw!r}",
                     "write the interval as a list of two numbers")
    lo, hi = float(ci_raw[0]), float(ci_raw[1])
    if not (0.0 <= lo <= hi <= 1.0):
        raise w.fail(f"{where}.{key}", f"{ci_raw!r} is not an interval in [0, 1]",
                     "rescore the submission")
    return lo, hi


def _perturbation(w: Where, c: Any, where: str) -> PerturbationSets | None:
    """ImageNet-Vid-Robust's benign / pm-k block of a config, when it has one."""
    if c.get("anchors") is None:
        return None
    benign = w.number(c, "benign_accuracy", where, lo=0.0, hi=1.0)
    pmk = w.number(c, "pmk_accuracy", where, lo=0.0, hi=1.0)
    if benign is not None and pmk is not None and pmk > benign:
        raise w.fail(f"{where}.pmk_accuracy", f"{pmk!r} exceeds benign_accuracy {benign!r}",
                     "rescore the submission (a set right on every frame is right on its anchor)")
    return PerturbationSets(int(w.integer(c, "anchors", where) or 0), benign,
                            _interval(w, c, "benign_accuracy_ci", where), pmk,
                            _interval(w, c, "pmk_accuracy_ci", where))


def _load_config(w: Where, name: str, raw: Any, where: str,
                 reader: SectionReader | None) -> ConfigScore:
    c = w.mapping(raw, where)
    return ConfigScore(
        config=name,
        n=int(w.integer(c, "n", where) or 0),
        accuracy=w.number(c, "accuracy", where, lo=0.0, hi=1.0),
        accuracy_ci=_interval(w, c, "accuracy_ci", where),
        variant=w.text(c, "variant", where),
        strategy=w.text(c, "strategy", where),
        calibration={k: w.number(c, k, where) for k in CALIBRATION_FIELDS},
        factors=_load_factors(w, c.get("factors"), f"{where}.factors"),
        over=_over(w, c, where),
        k=w.integer(c, "k", where, required=False),
        n_classes=w.integer(c, "n_classes", where, required=False),
        mean_per_class=w.number(c, "mean_per_class_accuracy", where, lo=0.0, hi=1.0),
        accuracy_valid_labels=w.number(c, "accuracy_valid_labels", where, lo=0.0, hi=1.0),
        perturbation=_perturbation(w, c, where),
        text_rules=_text_rules(w, c, where),
        retrieval=dict(reader.config(w, c, where)) if reader and reader.config else {},
    )


def _text_rules(w: Where, c: Any, where: str) -> dict[str, float | None]:
    """A text-answered classification config's accuracy per text rule."""
    raw = c.get("text_rules")
    if raw is None:
        return {}
    table = w.mapping(raw, f"{where}.text_rules")
    return {str(k): w.number(table, k, f"{where}.text_rules", lo=0.0, hi=1.0) for k in table}


def _over(w: Where, c: Any, where: str) -> str | None:
    over = w.text(c, "over", where)
    if over is not None and over not in OVER:
        raise w.fail(f"{where}.over", f"{over!r} is not one of {list(OVER)}", "rescore the submission")
    return over


def _load_factors(w: Where, raw: Any, where: str) -> dict[str, tuple[int, float | None]]:
    if raw is None:
        return {}
    table = w.mapping(raw, where)
    out: dict[str, tuple[int, float | None]] = {}
    for name, entry in table.items():
        fw = f"{where}.{name}"
        f = w.mapping(entry, fw)
        out[str(name)] = (int(w.integer(f, "n", fw) or 0),
                          w.number(f, "accuracy", fw, lo=0.0, hi=1.0))
    return out


def _load_bench_c(w: Where, raw: Any, where: str, nested: bool = False) -> BenchCScores:
    b = w.mapping(raw, where)
    cells_raw = b.get("cells") or []
    if not isinstance(cells_raw, list):
        raise w.fail(f"{where}.cells", "expected a list", "see docs/internals.md")
    cells = []
    seen: set[tuple[str, int]] = set()
    for i, cr in enumerate(cells_raw):
        cw = f"{where}.cells[{i}]"
        c = w.mapping(cr, cw)
        corruption = w.text(c, "corruption", cw, required=True) or ""
        severity = w.integer(c, "severity", cw) or 0
        if not 1 <= severity <= 5:
            raise w.fail(f"{cw}.severity", f"{severity} is not in 1..5", "fix the cell")
        if (corruption, severity) in seen:
            raise w.fail(cw, f"duplicate cell ({corruption}, {severity})",
                         "keep one cell per (corruption, severity)")
        seen.add((corruption, severity))
        cells.append(BenchCCell(
            corruption=corruption, severity=severity, n=int(w.integer(c, "n", cw) or 0),
            metrics=_metrics(w, c, BENCH_C_METRICS, cw),
            quadrants=w.counts(c, "quadrants", QUADRANTS, cw),
            transitions=w.counts(c, "transitions", TRANSITIONS, cw),
            plain=_numbers(w, c.get("plain"), BENCH_C_METRICS, f"{cw}.plain"),
        ))
    agg = w.mapping(b.get("aggregate") or {}, f"{where}.aggregate")
    aw = f"{where}.aggregate"
    clean_raw = w.mapping(b.get("clean") or {}, f"{where}.clean")
    cats_raw = w.mapping(b.get("categories") or {}, f"{where}.categories")
    if nested and cats_raw:
        raise w.fail(f"{where}.categories", "a category holds categories",
                     "rescore with `vlmrobust score`")
    return BenchCScores(
        clean_accuracy=w.number(b, "clean_accuracy", where, lo=0.0, hi=1.0),
        cells=tuple(cells),
        aggregate=_metrics(w, agg, BENCH_C_METRICS, aw),
        quadrants=w.counts(agg, "quadrants", QUADRANTS, aw),
        transitions=w.counts(agg, "transitions", TRANSITIONS, aw),
        plain_aggregate=_numbers(w, agg.get("plain"), BENCH_C_METRICS, f"{aw}.plain"),
        clean={k: _numbers(w, clean_raw.get(k), CLEAN_METRICS, f"{where}.clean.{k}")
               for k in WEIGHTINGS if k in clean_raw},
        categories={str(k): _load_bench_c(w, v, f"{where}.categories.{k}", nested=True)
                    for k, v in cats_raw.items()},
        extras=None if nested else load_extras(w, b, where),
    )


def _numbers(w: Where, raw: Any, keys: tuple[str, ...], where: str) -> dict[str, float | None]:
    """An optional block of metrics (``plain``, ``clean.<weighting>``)."""
    if raw is None:
        return {}
    return _metrics(w, w.mapping(raw, where), keys, where)


def _metrics(w: Where, m: Any, keys: tuple[str, ...], where: str) -> dict[str, float | None]:
    """``keys`` of ``m``, each a number inside its metric's range or null."""
    return {k: w.number(m, k, where, lo=METRIC_BOUNDS[k][0], hi=METRIC_BOUNDS[k][1])
            for k in keys}


def load_scores(folder: Path, model_id: str) -> dict[str, DatasetScores]:
    return parse_scores(read_scores(folder), folder / "scores.json", model_id)


def read_scores(folder: Path) -> Any:
    """A submission folder's scores.json as parsed JSON, not yet checked (parse_scores)."""
    path = folder / "scores.json"
    if not (path.exists() or path.is_symlink()):
        raise Where(path).fail("", "missing", "score the predictions with `vlmrobust score` or "
                               "`vlmrobust submit`")
    return parse_json_bounded(read_bytes_bounded(path, MAX_SCORES_BYTES, "scores.json",
                                                 LeaderboardInputError), f"{path} (rescore the "
                              "submission)", LeaderboardInputError)


def parse_scores(raw: Any, path: Path, model_id: str) -> dict[str, DatasetScores]:
    """Scores content (parsed JSON) -> records; ``path`` names it in errors."""
    w = Where(path)
    top = w.mapping(raw, "")
    if top.get("schema_version") != SCHEMA_VERSION:
        raise w.fail("schema_version", f"{top.get('schema_version')!r} is not supported",
                     f"this leaderboard reads schema_version {SCHEMA_VERSION}; rescore")
    if top.get("model_id") != model_id:
        raise w.fail("model_id", f"{top.get('model_id')!r} differs from meta.yaml {model_id!r}",
                     "rescore into the right folder")
    out: dict[str, DatasetScores] = {}
    for key, draw in w.mapping(top.get("datasets") or {}, "datasets").items():
        where = f"datasets.{key}"
        d = w.mapping(draw, where)
        info = w.mapping(d.get("dataset") or {}, f"{where}.dataset")
        kind = w.text(d, "kind", where) or MCQ
        reader = reader_for(kind)
        configs_raw = w.mapping(d.get("configs") or {}, f"{where}.configs")
        configs = tuple(_load_config(w, str(n), c, f"{where}.configs.{n}", reader)
                        for n, c in configs_raw.items())
        ref = w.text(d, "reference_variant", where)
        if ref is not None and not any(c.variant == ref for c in configs):
            raise w.fail(f"{where}.reference_variant", f"no config has variant {ref!r}",
                         "rescore so the reference variant is included")
        bench_c = d.get("bench_c")
        out[str(key)] = DatasetScores(
            key=str(key),
            name=w.text(info, "name", f"{where}.dataset") or str(key),
            version=w.text(info, "version", f"{where}.dataset"),
            fingerprint=w.text(info, "fingerprint", f"{where}.dataset"),
            sample=bool(info.get("sample", False)),
            has_logits=bool(d.get("has_logits", False)),
            reference_variant=ref,
            configs=configs,
            bench_c=None if bench_c is None else _load_bench_c(w, bench_c, f"{where}.bench_c"),
            shape_bias=load_shape_bias(w, d.get("shape_bias"), f"{where}.shape_bias"),
            kind=kind,
            blocks=dict(reader.blocks(w, d, where)) if reader and reader.blocks else {},
        )
    return out
