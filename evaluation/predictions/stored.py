"""The form in which ``submit`` stores predictions of the option kinds: the
parquet file itself when it carries its metadata, else the same rows as
parquet with the metadata embedded (vlmrobust.evaluation.submissions)."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import read_bytes_bounded
from vlmrobust.core.writer import WRITE_CHECKSUMS
from vlmrobust.evaluation.predictions.meta import attach_meta
from vlmrobust.evaluation.predictions.read import DEFAULT_MAX_BYTES, TEXT_COLUMNS, PredictionsFile


def predictions_parquet_bytes(pf: PredictionsFile, meta: Mapping[str, Any]) -> bytes:
    """The stored form of any valid predictions: parquet with the metadata embedded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, Any] = {"id": pa.array(pf.ids.tolist(), pa.string())}
    if pf.has_logits:
        assert pf.logits_flat is not None
        cols["logits"] = pa.ListArray.from_arrays(pa.array(pf.offsets.astype("int64"), pa.int64()),
                                                  pa.array(pf.logits_flat, pa.float64())
                                                  ).cast(pa.list_(pa.float64()))
    if pf.prediction is not None and not pf.has_logits:
        cols["prediction"] = pa.array([None if v != v else int(v) for v in pf.prediction.tolist()],
                                      pa.int64())
    for name, (lens, flat) in pf.logp.items():  # CFG's terms: re-scoring sweeps t from them
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(np.maximum(lens, 0), out=offsets[1:])
        cols[name] = pa.ListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(flat, pa.float64()),
                                              mask=pa.array(lens < 0)).cast(pa.list_(pa.float64()))
    if pf.truncated is not None:  # re-scoring leaves the same rows out (predictions.truncation)
        cols["truncated"] = pa.array([None if v != v else int(v) for v in pf.truncated.tolist()],
                                     pa.int64())
    for name in TEXT_COLUMNS:  # the audit trail travels with the stored file
        values = getattr(pf, name)
        if values is not None:
            cols[name] = pa.array(values.tolist(), pa.string())
    buf = io.BytesIO()
    pq.write_table(attach_meta(pa.table(cols), meta), buf, compression="zstd", **WRITE_CHECKSUMS)
    return buf.getvalue()


def option_stored_bytes(report: Any, predictions: Path) -> bytes:
    """What ``submit`` stores of a validated report of an option kind
    (evaluation.validate.check.ValidationReport)."""
    if report.file.format == "parquet" and report.file.embedded_meta is not None:
        stored = read_bytes_bounded(predictions, DEFAULT_MAX_BYTES, "predictions file",
                                    SubmissionError)
        if hashlib.sha256(stored).hexdigest() != report.sha256:
            raise SubmissionError(f"{predictions} changed while it was being submitted; submit again")
        return stored
    return predictions_parquet_bytes(report.file, report.meta)
