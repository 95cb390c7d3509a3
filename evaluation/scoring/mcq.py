"""Scoring the option kinds (vlmrobust.core.kinds ``mcq`` and
``classification``): per config accuracy with its bootstrap interval and, with
logits, calibration (ECE, NLL, temperature-scaled by cross-fitting and by seed
001's reference-variant protocol); the family blocks (ImageNet-X factors,
Bench-C, shape bias, CFG sweep). Kind classification adds its own configs,
temperature and label spaces (evaluation/scoring/classification.py).
Registered in evaluation/scoring/registration.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.imagenet_x import Annotations
from vlmrobust.evaluation.predictions.truncation import (
    TRUNCATION_RULE,
    partial_rows,
    undetermined_rows,
)
from vlmrobust.evaluation.scoring.bench_c.block import bench_c_scores
from vlmrobust.evaluation.scoring.bench_c.stats import clustered_mean_ci, question_clusters
from vlmrobust.evaluation.scoring.classification import classification_section
from vlmrobust.evaluation.scoring.common import dataset_entry, derived_seed, scores_document
from vlmrobust.evaluation.scoring.common import json_num as _num
from vlmrobust.evaluation.scoring.factors import (
    annotation_record,
    annotations_for,
    factor_block,
    has_factor_rows,
)
from vlmrobust.evaluation.scoring.family import add_family_blocks
from vlmrobust.evaluation.scoring.guidance import guidance_sweep
from vlmrobust.evaluation.validate.check import ValidationReport, partial_note
from vlmrobust.metrics.accuracy import accuracy, accuracy_ci
from vlmrobust.metrics.calibration import (
    calibration_report,
    reference_temperature,
    scaled_calibration,
)

CELL_METRICS = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras")
#: kind classification's own section: (report, seed) -> configs, temperature, label spaces
KindSection = Callable[[ValidationReport, int], dict[str, Any]]


def _only_value(values: NDArray[Any]) -> Any:
    uniq = list(dict.fromkeys(values.tolist()))
    return uniq[0] if len(uniq) == 1 else None


def _config_scores(report: ValidationReport, rows: NDArray[np.int64], config: str, seed: int,
                   annotations: Annotations | None = None,
                   clusters: NDArray[np.int64] | None = None) -> dict[str, Any]:
    index = report.index
    all_rows = rows
    partial, undetermined = _truncation(report)
    rows = all_rows[~undetermined[all_rows]]  # accuracy: answers still determined
    y = index.answer[rows]
    correct = report.aligned.predicted[rows] == y
    if clusters is None:
        lo, hi = accuracy_ci(correct, seed=derived_seed(seed, "accuracy", config))
    else:  # Bench-C: a question's copies are one sample (bench_c_stats)
        lo, hi = clustered_mean_ci(correct.astype(np.float64), clusters[rows],
                                   derived_seed(seed, "accuracy", config))
    out: dict[str, Any] = {"n": int(all_rows.size), "accuracy": _num(accuracy(correct)), "accuracy_ci": [_num(lo), _num(hi)],
                           "no_answer": int(report.aligned.no_answer[all_rows].sum())}
    if report.aligned.truncated is not None:
        out["truncated_excluded"] = int(partial[all_rows].sum())
        out["undetermined_excluded"] = int(undetermined[all_rows].sum())
    if index.name == "imagenet-mcq":
        out["variant"] = _only_value(index.columns["variant"][all_rows]) if "variant" in index.columns else None
        out["strategy"] = (_only_value(index.columns["distractors"][all_rows])
                           if "distractors" in index.columns else None)
        factors = factor_block(index, rows, correct, annotations)
        if factors is not None and annotations is not None:
            out["factors"] = factors
            out["factor_annotations"] = annotation_record(annotations)
    logits = report.aligned.logits
    rows = all_rows[~partial[all_rows]]  # calibration: full distributions only
    if logits is not None:
        cal = calibration_report(logits[rows], index.answer[rows], seed=derived_seed(seed, "temperature", config))
        out.update(ece=cal.ece, nll=cal.nll, ece_ts=cal.ece_ts, nll_ts=cal.nll_ts, temperature=cal.temperature,
                   ts_note=cal.ts_reason)
    else:
        out.update(ece=None, nll=None, ece_ts=None, nll_ts=None, temperature=None, ts_note=None)
    return out


def _truncation(report: ValidationReport) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """(rows out of calibration, rows out of accuracy too) by their truncated
    counts (evaluation/predictions/truncation.py)."""
    a, index = report.aligned, report.index
    return (partial_rows(a.truncated, index.n_rows),
            undetermined_rows(a.truncated, index.n_options, a.from_text))


def _reference_calibration(report: ValidationReport, configs: dict[str, dict[str, Any]]) -> None:
    """Seed 001's protocol beside the per-config cross-fit: per distractor strategy,
    T is fitted on every row of the reference variant (ImageNet val) and applied
    unchanged to each shifted config (``ece_ref_ts``, ``nll_ref_ts``,
    ``temperature_ref``). On the reference config itself those fields repeat its
    cross-fitted numbers, so no row is scaled by a T it helped fit. Not estimable
    (the reference rows have no errors, T on its bound, or the reference variant
    not scored in this run): None with ``ref_ts_note``."""
    index = report.index
    logits = report.aligned.logits
    ref = index.manifest.get("reference_variant")
    if index.name != "imagenet-mcq" or "variant" not in index.columns:
        return
    variant = index.columns["variant"]
    strategy = (index.columns["distractors"] if "distractors" in index.columns
                else np.full(index.n_rows, "", dtype=object))
    full = ~_truncation(report)[0]
    fitted: dict[str, tuple[float | None, str | None]] = {}
    for config, out in configs.items():
        fields: dict[str, Any] = {"ece_ref_ts": None, "nll_ref_ts": None, "temperature_ref": None,
                                  "ref_ts_note": None}
        if logits is None:
            out.update(fields)
            continue
        st = str(out.get("strategy") or "")
        if out.get("variant") == ref:
            fields.update(ece_ref_ts=out["ece_ts"], nll_ref_ts=out["nll_ts"],
                          temperature_ref=out["temperature"], ref_ts_note=out["ts_note"])
            out.update(fields)
            continue
        if st not in fitted:
            rows = np.flatnonzero((variant == ref) & (strategy == st) & full)
            fitted[st] = (reference_temperature(logits[rows], index.answer[rows]) if rows.size
                          else (None, f"not estimable: reference variant {ref!r} ({st}) not scored in this run"))
        t, why = fitted[st]
        if t is None:
            fields["ref_ts_note"] = why
        else:
            rows = np.flatnonzero((index.config == config) & full)
            ece, nll = scaled_calibration(logits[rows], index.answer[rows], t)
            fields.update(ece_ref_ts=_num(ece), nll_ref_ts=_num(nll), temperature_ref=t)
        out.update(fields)


def no_ood_score(ood_score: str | None, dataset: str) -> None:
    if ood_score is not None:
        raise SubmissionError(f"--ood-score {ood_score}: {dataset} is not an ood dataset (kind "
                              "ood); drop --ood-score")


def refuse_imagenet_x(report: ValidationReport, opts: Any) -> None:
    """``--imagenet-x`` on a dataset without ImageNet-X rows was silently
    ignored (issue 40.5): refuse it, naming the fix."""
    if opts.imagenet_x is not None and not has_factor_rows(report.index):
        raise SubmissionError(f"--imagenet-x {opts.imagenet_x}: {report.index.name} has no "
                              "imagenet-val rows with a source_file to join ImageNet-X factors "
                              "to; drop --imagenet-x")


def option_scores(report: ValidationReport, model_id: str | None, opts: Any,
                  kind_section: KindSection | None = None) -> dict[str, Any]:
    """scores.json content (one dataset section) of a validated report of an
    option kind; ``kind_section`` adds a kind's own blocks (classification's)
    in place of the per-config MCQ numbers. ``opts``: ScoreOptions
    (evaluation/scoring/registration.py)."""
    index = report.index
    manifest = index.manifest
    seed, imagenet_x = opts.seed, opts.imagenet_x
    refuse_imagenet_x(report, opts)
    no_ood_score(opts.ood_score, report.index.name)
    extra = kind_section(report, seed) if kind_section is not None else {}
    if extra:
        configs = extra.pop("configs")
        add_family_blocks(report, configs, extra, seed, imagenet_x)  # factors, shape bias
    else:
        annotations = (annotations_for(index, imagenet_x) if index.name == "imagenet-mcq"
                       else None)
        configs = {}
        clusters = question_clusters(index)
        for config in index.configs:
            rows = np.flatnonzero(index.config == config)
            configs[config] = _config_scores(report, rows, config, seed, annotations, clusters)
        _reference_calibration(report, configs)
    section = {
        "dataset": dataset_entry(index.name, manifest),
        "predictions_sha256": report.sha256,
        "has_logits": report.has_logits,
        "has_text": report.file.has_text,
        "no_answer": int(report.aligned.no_answer.sum()),
        **_truncated_counts(report),
        "reference_variant": manifest.get("reference_variant") if index.name == "imagenet-mcq" else None,
        "configs": configs,
        "bench_c": None if extra else bench_c_scores(report, seed),
        **extra,
    }
    sweep = guidance_sweep(report, opts.cfg_grid)
    if sweep is not None:
        section["cfg"] = sweep
    if report.partial is not None:
        section["partial"] = dict(report.partial)
    withheld = accuracy_only(report)
    if withheld is not None:
        section["accuracy_only"] = withheld
    return scores_document(index.name, section, model_id, report.meta)


def accuracy_only(report: ValidationReport) -> str | None:
    """The predictions' ``harness.accuracy_only`` (an imported lmms-eval log whose
    values are no log-likelihoods: evaluation/harness/lmms_eval/llava_hf.py). Its
    import writes choices only, so no logit figure is computed; a file that
    carries logits beside the mark was edited and is refused."""
    harness = (report.meta or {}).get("harness")
    reason = harness.get("accuracy_only") if isinstance(harness, Mapping) else None
    if reason is None:
        return None
    if report.has_logits:
        raise SubmissionError(f"{report.predictions}: its metadata marks it accuracy only "
                              f"({str(reason)[:80]}...) but it carries logits; import the "
                              "harness log again")
    return str(reason)


def _truncated_counts(report: ValidationReport) -> dict[str, Any]:
    """The section's ``truncated`` block, where the predictions have the column."""
    if report.aligned.truncated is None:
        return {}
    partial, undetermined = _truncation(report)
    return {"truncated": {"rows": int(partial.sum()), "calibration_excluded": int(partial.sum()),
                          "accuracy_excluded": int(undetermined.sum()),
                          "rule": TRUNCATION_RULE}}


def mcq_scores(report: ValidationReport, model_id: str | None, opts: Any) -> dict[str, Any]:
    return option_scores(report, model_id, opts)


def classification_scores(report: ValidationReport, model_id: str | None,
                          opts: Any) -> dict[str, Any]:
    """Kind classification (issue 23): its own configs, temperature and label spaces."""
    return option_scores(report, model_id, opts, classification_section)


def _fmt(x: object) -> str:
    return f"{x:.3f}" if isinstance(x, (int, float)) else "n/a"


def option_summary(name: str, section: Mapping[str, Any]) -> list[str]:
    """What `vlmrobust score` prints for a section of an option kind (ood's too:
    an OOD config has no accuracy, its rows have no label: "n/a" there)."""
    accs = ", ".join(f"{c} {_fmt(v.get('accuracy'))}" for c, v in section["configs"].items())
    line = f"{name}: accuracy {accs}"
    ood = section.get("ood")
    if ood and ood.get("sets"):
        line += f"; OOD ({ood['score']}) AUROC " + ", ".join(
            f"{s} {_fmt(v.get('auroc'))}" for s, v in ood["sets"].items())
    bench_c = section.get("bench_c")
    if bench_c and bench_c["aggregate"]["ras"] is not None:
        line += f"; RAS {bench_c['aggregate']['ras']:.4f}"
    cfg = section.get("cfg")
    if cfg:
        line += f"; CFG t={cfg['headline_t']:g} (headline), " + ", ".join(
            f"{c} " + " ".join(f"t={r['t']:g}:{_fmt(r['accuracy'])}" for r in v["accuracy_by_t"])
            for c, v in cfg["configs"].items())
    if section.get("no_answer"):
        line += f"; no answer in {section['no_answer']} rows (counted as wrong)"
    lines = [line]
    if section.get("partial"):
        lines.append(f"{name}: {partial_note(section['partial'])}")
    if section.get("accuracy_only"):
        lines.append(f"{name}: accuracy only: {section['accuracy_only']}")
    return lines
