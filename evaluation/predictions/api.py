"""``vlmrobust.write_predictions``: the way for researchers running their own
models to write a predictions file that carries its metadata (the dataset's
fingerprint filled in from its manifest) and is checked before it is written."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust import __version__
from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.text.display import check_text_fields
from vlmrobust.evaluation.model_groups import GROUP_FIELDS, group_problems


def write_predictions(dataset_dir: str | Path, ids: Sequence[str], logits: Any = None, *,
                      model: str, family: str, out: str | Path | None = None,
                      prediction: Sequence[int] | None = None, prompt_id: str | None = None,
                      vision_encoder: str | None = None, params: int | None = None,
                      model_id: str | None = None, configs: Sequence[str] | None = None,
                      text: Sequence[str | None] | None = None,
                      prompt_text: Sequence[str | None] | None = None,
                      harness: dict[str, str] | None = None,
                      groups: Mapping[str, Any] | None = None, mode: str | None = None,
                      source: str | Path | None = None) -> Path:
    """Validate ``ids`` + ``logits`` (one list of K floats per id, in the
    dataset's option order; or ``prediction``, option indices, for text-only
    models; or ``text``, each row's raw model output, from which the scorer
    reads the answer with vlmrobust.core.text.matcher) against the dataset at
    ``dataset_dir`` and write them to ``out``
    (default ``predictions.parquet`` in the working directory): parquet with the
    metadata embedded, or JSONL + ``<out>.meta.yaml`` when ``out`` ends in
    .jsonl. Raises SubmissionError naming the first offending rows and writes
    nothing when they do not answer the dataset. Returns the written path.

    ``configs`` limits the check to some configs (default: every config).
    ``prompt_text`` (optional, any mode) is the exact text each row sent to the
    model, kept as the audit trail a model page links. ``harness`` names the
    harness whose per-sample output these predictions were imported from
    (``vlmrobust import``): name, version, result file and its sha256.
    ``groups`` gives the model's groups (evaluation/model_groups.py:
    architecture, training_data, training_size, fine_tuned_on, loss), e.g.
    ``{"training_data": "imagenet-1k"}`` for a classifier that belongs on the
    effective-robustness reference line.
    ``mode`` records how the answers were read (as ``predict --mode`` does).
    ``source`` is the file the rows were read from (an imported harness result),
    named in the errors instead of ``out``, which is not written then.
    """
    import pyarrow as pa

    from vlmrobust.core.files.output_guard import check_file_output
    from vlmrobust.evaluation.predictions.meta import sidecar_path
    from vlmrobust.evaluation.predictions.read import predictions_from_table
    from vlmrobust.evaluation.predictions.write import write_predictions_file
    from vlmrobust.evaluation.schemas import check_schema
    from vlmrobust.evaluation.validate.check import validate_against
    from vlmrobust.evaluation.validate.dataset_index import load_dataset_index

    dataset_dir = Path(dataset_dir)
    out = Path(out) if out is not None else Path("predictions.parquet")
    if logits is None and prediction is None and text is None:
        raise SubmissionError("write_predictions: give logits, text or prediction")
    if logits is not None and prediction is not None:
        raise SubmissionError("write_predictions: give logits or prediction, not both "
                              "(with logits the answer is their argmax)")
    check_file_output(out, "out", input_dirs=[dataset_dir])
    if out.suffix == ".jsonl":
        check_file_output(sidecar_path(out), "out (its metadata sidecar)", input_dirs=[dataset_dir])
    index = load_dataset_index(dataset_dir, list(configs) if configs is not None else None)
    cols: dict[str, Any] = {"id": pa.array([str(i) for i in ids], pa.string())}
    if logits is not None:
        rows = [np.asarray(v, dtype=np.float64).ravel() for v in logits]
        cols["logits"] = pa.array(rows, pa.list_(pa.float64()))
    elif prediction is not None:
        cols["prediction"] = pa.array([None if v is None else int(v) for v in prediction], pa.int64())
    for name, values in (("text", text), ("prompt_text", prompt_text)):
        if values is not None:
            if isinstance(values, str) or len(values) != len(ids):
                raise SubmissionError(f"write_predictions: {name} needs one string (or None) per id")
            cols[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    table = pa.table(cols)
    manifest = index.manifest
    meta: dict[str, Any] = {
        "model": model, "family": family, "vision_encoder": vision_encoder, "params": params,
        "prompt_id": prompt_id,
        "dataset": {"name": index.name, "version": str(manifest.get("spec", {}).get("version", "")),
                    "fingerprint": str(manifest.get("fingerprint", ""))},
        "configs": list(index.configs), "n_rows": table.num_rows,
        "date": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "tool_version": __version__,
    }
    if model_id is not None:
        meta["model_id"] = model_id
    if harness is not None:
        meta["harness"] = dict(harness)
    if groups is not None:
        unknown = sorted(set(groups) - set(GROUP_FIELDS))
        problems = [f"unknown field {unknown[0]!r} (known: {', '.join(GROUP_FIELDS)})"] \
            if unknown else group_problems(groups)
        if problems:
            raise SubmissionError(f"write_predictions: groups: {problems[0]}")
        meta.update({k: v for k, v in groups.items() if v is not None})
    if mode is not None:
        meta["mode"] = mode
    check_schema(meta, "predictions-meta", "write_predictions metadata")
    check_text_fields(meta, "write_predictions metadata", SubmissionError)
    validate_against(index, predictions_from_table(table, source if source is not None else out),
                     dataset_dir=dataset_dir, meta=meta)
    write_predictions_file(out, table, meta)
    return out
