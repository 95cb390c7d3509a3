"""Scoring: a validated predictions file -> ``scores.json`` (schema_version 1,
docs/internals.md) and, beside it, the per-row results (:mod:`.row_results`).
Nothing is written unless validation passes; both files are written
atomically. The core, :func:`score_report`, works on in-memory arrays so that
a Bench-C-sized submission scores in well under a second.

A row with ``text`` is answered by what vlmrobust.core.text.matcher reads in it
(validation has refused a ``prediction`` that says otherwise); a text that
answers no option is wrong and counted in ``no_answer``. Without logits there
is accuracy only (no calibration, S, C or RAS).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.imagenet_x import Annotations
from vlmrobust.core.kinds import CLASSIFICATION, OOD, dataset_kind
from vlmrobust.evaluation.predictions.read import PredictionsFile, predictions_from_table
from vlmrobust.evaluation.scoring.bench_c import BENCH_C_NOTE, BENCH_C_PAIR_METRICS, bench_c_scores
from vlmrobust.evaluation.scoring.bench_c_stats import clustered_mean_ci, question_clusters
from vlmrobust.evaluation.scoring.classification import classification_section
from vlmrobust.evaluation.scoring.common import (
    DEFAULT_SEED,
    SCHEMA_VERSION,
    dataset_entry,
    derived_seed,
    scores_document,
)
from vlmrobust.evaluation.scoring.common import json_num as _num
from vlmrobust.evaluation.scoring.factors import (
    annotation_record,
    annotations_for,
    factor_block,
    has_factor_rows,
)
from vlmrobust.evaluation.scoring.family import add_family_blocks
from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID, guidance_sweep
from vlmrobust.evaluation.validate.check import ValidationReport, validate, validate_against
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex
from vlmrobust.metrics.accuracy import accuracy, accuracy_ci
from vlmrobust.metrics.calibration import (
    calibration_report,
    reference_temperature,
    scaled_calibration,
)

# Re-exported: callers import these from here.
__all__ = ["BENCH_C_NOTE", "BENCH_C_PAIR_METRICS", "DEFAULT_SEED", "SCHEMA_VERSION",
           "bench_c_scores", "derived_seed", "dumps_scores", "score", "score_report",
           "score_tables"]

CELL_METRICS = ("acc", "delta_acc", "S", "delta_S", "C", "delta_C", "ras")


def _only_value(values: NDArray[Any]) -> Any:
    uniq = list(dict.fromkeys(values.tolist()))
    return uniq[0] if len(uniq) == 1 else None


def _config_scores(report: ValidationReport, rows: NDArray[np.int64], config: str, seed: int,
                   annotations: Annotations | None = None,
                   clusters: NDArray[np.int64] | None = None) -> dict[str, Any]:
    index = report.index
    y = index.answer[rows]
    correct = report.aligned.predicted[rows] == y
    if clusters is None:
        lo, hi = accuracy_ci(correct, seed=derived_seed(seed, "accuracy", config))
    else:  # Bench-C: a question's copies are one sample (bench_c_stats)
        lo, hi = clustered_mean_ci(correct.astype(np.float64), clusters[rows],
                                   derived_seed(seed, "accuracy", config))
    out: dict[str, Any] = {"n": int(rows.size), "accuracy": _num(accuracy(correct)), "accuracy_ci": [_num(lo), _num(hi)],
                           "no_answer": int(report.aligned.no_answer[rows].sum())}
    if index.name == "imagenet-mcq":
        out["variant"] = _only_value(index.columns["variant"][rows]) if "variant" in index.columns else None
        out["strategy"] = (_only_value(index.columns["distractors"][rows])
                           if "distractors" in index.columns else None)
        factors = factor_block(index, rows, correct, annotations)
        if factors is not None and annotations is not None:
            out["factors"] = factors
            out["factor_annotations"] = annotation_record(annotations)
    logits = report.aligned.logits
    if logits is not None:
        cal = calibration_report(logits[rows], y, seed=derived_seed(seed, "temperature", config))
        out.update(ece=cal.ece, nll=cal.nll, ece_ts=cal.ece_ts, nll_ts=cal.nll_ts, temperature=cal.temperature,
                   ts_note=cal.ts_reason)
    else:
        out.update(ece=None, nll=None, ece_ts=None, nll_ts=None, temperature=None, ts_note=None)
    return out


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
            rows = np.flatnonzero((variant == ref) & (strategy == st))
            fitted[st] = (reference_temperature(logits[rows], index.answer[rows]) if rows.size
                          else (None, f"not estimable: reference variant {ref!r} ({st}) not scored in this run"))
        t, why = fitted[st]
        if t is None:
            fields["ref_ts_note"] = why
        else:
            rows = np.flatnonzero(index.config == config)
            ece, nll = scaled_calibration(logits[rows], index.answer[rows], t)
            fields.update(ece_ref_ts=_num(ece), nll_ref_ts=_num(nll), temperature_ref=t)
        out.update(fields)


def _no_ood_score(ood_score: str | None, dataset: str) -> None:
    if ood_score is not None:
        raise SubmissionError(f"--ood-score {ood_score}: {dataset} is not an ood dataset (kind "
                              "ood); drop --ood-score")


def score_report(report: ValidationReport, model_id: str | None = None, seed: int = DEFAULT_SEED,
                 imagenet_x: Path | str | None = None, ood_score: str | None = None,
                 cfg_grid: Sequence[float] = DEFAULT_CFG_GRID) -> dict[str, Any]:
    """scores.json content (one dataset section) for a validated report.
    ``imagenet_x``: ImageNet-X annotations (default: the installed package's) for
    the per-factor accuracies of imagenet-val configs; ``ood_score``: an ood
    dataset's headline score (default MCM for zero-shot CLIP, else MSP);
    ``cfg_grid``: the guidance weights a CFG run's accuracy is swept over
    (section ``cfg``, evaluation/scoring/guidance.py)."""
    index = report.index
    manifest = index.manifest
    if imagenet_x is not None and not has_factor_rows(index):
        # it was silently ignored (issue 40.5)
        raise SubmissionError(f"--imagenet-x {imagenet_x}: {index.name} has no imagenet-val rows "
                              "with a source_file to join ImageNet-X factors to; drop --imagenet-x")
    if dataset_kind(manifest) == OOD:  # OOD rows have no answer: scored in ood_score.py
        from vlmrobust.evaluation.scoring.ood import ood_score_report
        return ood_score_report(report, model_id, seed, ood_score)
    _no_ood_score(ood_score, report.index.name)
    # kind classification (issue 23): its own configs, temperature and label spaces
    extra = (classification_section(report, seed) if dataset_kind(manifest) == CLASSIFICATION
             else {})
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
        "reference_variant": manifest.get("reference_variant") if index.name == "imagenet-mcq" else None,
        "configs": configs,
        "bench_c": None if extra else bench_c_scores(report, seed),
        **extra,
    }
    sweep = guidance_sweep(report, cfg_grid)
    if sweep is not None:
        section["cfg"] = sweep
    if report.partial is not None:
        section["partial"] = dict(report.partial)
    return scores_document(index.name, section, model_id, report.meta)


def score_tables(dataset: Any, manifest: Mapping[str, Any], predictions: Any,
                 model_id: str | None = None, seed: int = DEFAULT_SEED,
                 imagenet_x: Path | str | None = None) -> dict[str, Any]:
    """Score in memory: ``dataset`` a pyarrow Table (id, options or n_options,
    answer, family columns; an optional ``config`` column), ``predictions`` a
    pyarrow Table (id, logits | prediction). Validation applies as for files."""
    config_col = "config" if "config" in dataset.column_names else None
    index = DatasetIndex.from_table(dataset, manifest, config_col)
    pf: PredictionsFile = predictions_from_table(predictions)
    return score_report(validate_against(index, pf), model_id, seed, imagenet_x)


def dumps_scores(scores: Mapping[str, Any]) -> str:
    """Canonical JSON text: numbers as numbers, NaN refused (null instead)."""
    return json.dumps(scores, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def score(dataset_dir: Path | str, predictions: Path | str, out: Path | str, config: str | None = None,
          model_id: str | None = None, seed: int = DEFAULT_SEED,
          imagenet_x: Path | str | None = None, ood_score: str | None = None,
          cfg_grid: Sequence[float] = DEFAULT_CFG_GRID) -> dict[str, Any]:
    """Validate ``predictions`` against ``dataset_dir`` and write scores.json to
    ``out`` and the per-row results to :func:`rows_path` (``out``), both
    atomically (the rows first); on any problem raise SubmissionError and write
    nothing. Neither output may be an input (the predictions, their sidecar,
    the dataset) or a directory."""
    from vlmrobust.core.imagenet_x import PROTOTYPES_FILE
    from vlmrobust.evaluation.outputs import check_output, write_text_output
    from vlmrobust.evaluation.predictions.meta import sidecar_path
    from vlmrobust.evaluation.scoring.row_results import row_results, rows_jsonl, rows_path

    # beside --imagenet-x, its prototypical_paths.csv is read too (core/imagenet_x.py)
    inputs = [Path(predictions), sidecar_path(predictions),
              *(() if imagenet_x is None else (Path(imagenet_x),
                                               Path(imagenet_x).parent / PROTOTYPES_FILE))]
    check_output(Path(out), files=inputs, dirs=[Path(dataset_dir)])
    check_output(rows_path(out), files=inputs, dirs=[Path(dataset_dir)])
    from vlmrobust.evaluation.validate.retrieval import is_retrieval

    if is_retrieval(dataset_dir):  # kind retrieval: embeddings, Recall@K (retrieval_scores.py)
        from vlmrobust.evaluation.scoring.retrieval import retrieval_rows, retrieval_scores
        from vlmrobust.evaluation.validate.retrieval import validate_retrieval

        _no_ood_score(ood_score, str(dataset_dir))
        rreport = validate_retrieval(dataset_dir, predictions, config)
        scores = retrieval_scores(rreport, model_id, seed)
        rows_text = rows_jsonl(retrieval_rows(rreport))
    else:
        report = validate(dataset_dir, predictions, config)
        scores = score_report(report, model_id, seed, imagenet_x, ood_score, cfg_grid)
        rows_text = rows_jsonl(row_results(report, ood_score))
    write_text_output(rows_path(out), rows_text)
    write_text_output(Path(out), dumps_scores(scores))
    return scores
