"""Scoring: a validated predictions file -> ``scores.json`` (schema_version 1,
docs/internals.md) and, beside it, the per-row results (:mod:`.row_results`).
Every kind's validator and scorer is found through the registries
(evaluation/validate/registration.py, evaluation/scoring/registration.py).
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

from vlmrobust.core.kinds import dataset_kind
from vlmrobust.evaluation.predictions.read import PredictionsFile, predictions_from_table
from vlmrobust.evaluation.scoring.bench_c.block import (
    BENCH_C_NOTE,
    BENCH_C_PAIR_METRICS,
    bench_c_scores,
)
from vlmrobust.evaluation.scoring.common import DEFAULT_SEED, SCHEMA_VERSION, derived_seed
from vlmrobust.evaluation.scoring.guidance import DEFAULT_CFG_GRID
from vlmrobust.evaluation.scoring.mcq import CELL_METRICS
from vlmrobust.evaluation.scoring.registration import ScoreOptions, scorer_for
from vlmrobust.evaluation.validate.check import ValidationReport, validate_against
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex
from vlmrobust.evaluation.validate.registration import dataset_kind_of, validator_for

# Re-exported: callers import these from here.
__all__ = ["BENCH_C_NOTE", "BENCH_C_PAIR_METRICS", "CELL_METRICS", "DEFAULT_SEED",
           "SCHEMA_VERSION", "bench_c_scores", "derived_seed", "dumps_scores", "row_results",
           "score", "score_report", "score_tables"]


def score_report(report: ValidationReport, model_id: str | None = None, seed: int = DEFAULT_SEED,
                 imagenet_x: Path | str | None = None, ood_score: str | None = None,
                 cfg_grid: Sequence[float] = DEFAULT_CFG_GRID) -> dict[str, Any]:
    """scores.json content (one dataset section) for a validated report, by its
    kind's scorer. ``imagenet_x``: ImageNet-X annotations (default: the
    installed package's) for the per-factor accuracies of imagenet-val configs;
    ``ood_score``: an ood dataset's headline score (default MCM for zero-shot
    CLIP, else MSP); ``cfg_grid``: the guidance weights a CFG run's accuracy is
    swept over (section ``cfg``, evaluation/scoring/guidance.py)."""
    opts = ScoreOptions(seed, imagenet_x, ood_score, tuple(cfg_grid))
    return scorer_for(dataset_kind(report.index.manifest)).scores(report, model_id, opts)


def row_results(report: ValidationReport, ood_score: str | None = None) -> list[dict[str, Any]]:
    """The per-row records of a validated report, in dataset order, by its kind's
    scorer (``ood_score``: an ood dataset's headline score, as :func:`score`)."""
    return scorer_for(dataset_kind(report.index.manifest)).rows(
        report, ScoreOptions(ood_score=ood_score))


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
    from vlmrobust.evaluation.scoring.rows.results import rows_jsonl, rows_path

    # beside --imagenet-x, its prototypical_paths.csv is read too (core/imagenet_x.py)
    inputs = [Path(predictions), sidecar_path(predictions),
              *(() if imagenet_x is None else (Path(imagenet_x),
                                               Path(imagenet_x).parent / PROTOTYPES_FILE))]
    check_output(Path(out), files=inputs, dirs=[Path(dataset_dir)])
    check_output(rows_path(out), files=inputs, dirs=[Path(dataset_dir)])
    kind = dataset_kind_of(dataset_dir)
    report = validator_for(kind)(dataset_dir, predictions, config, None)
    scorer = scorer_for(kind)
    opts = ScoreOptions(seed, imagenet_x, ood_score, tuple(cfg_grid))
    scores = scorer.scores(report, model_id, opts)
    rows_text = rows_jsonl(scorer.rows(report, opts))
    write_text_output(rows_path(out), rows_text)
    write_text_output(Path(out), dumps_scores(scores))
    return scores
