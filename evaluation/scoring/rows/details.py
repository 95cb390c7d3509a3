"""Per-row details: one (model, dataset) config of the leaderboard's details
dataset (leaderboard/site/details.py; issue 37 item 1).

A config holds, in dataset order, the per-row results of
:mod:`vlmrobust.evaluation.scoring.rows.results` under the same names and with
the same values (what ``submit`` stores as ``rows.jsonl``), plus what the model
answered and what the row is:

- ``logits`` (list of float64): the row's logits as submitted, one per option
  (the probabilities are their softmax; ``confidence`` is its maximum); null
  for a row without logits or with more than :data:`MAX_DETAIL_LOGITS` of them
  (a whole label space: those stay in the submission's predictions file, so a
  config does not grow by 4 kB a row);
- ``text``: the model's raw output, where the predictions carry one;
- the dataset's family columns the scorer reads (``variant``, ``distractors``,
  ``source``, ``source_id``, ``corruption``, ``severity``, ``kappa``, ...), so a
  config alone supports the site's paired tests (``vlmrobust compare``).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.evaluation.scoring.rows.results import PAIR_FIELDS
from vlmrobust.evaluation.validate.dataset_index import FAMILY_COLUMNS

MAX_DETAIL_LOGITS = 100


def _types() -> dict[str, Any]:
    import pyarrow as pa

    return {"id": pa.string(), "config": pa.string(), "answer": pa.int64(), "label": pa.int64(),
            "predicted": pa.int64(), "correct": pa.bool_(), "no_answer": pa.bool_(),
            "from_text": pa.bool_(), "confidence": pa.float64(), "clean_id": pa.string(),
            **{name: pa.float64() for name in PAIR_FIELDS}}


def _logits_column(report: Any, n: int) -> Any:
    """The rows' logits in dataset order as a list<float64> column (null where
    absent or longer than MAX_DETAIL_LOGITS)."""
    import pyarrow as pa

    pf, aligned = report.file, report.aligned
    row_of = aligned.row_of
    lens = pf.logits_len[row_of]
    starts = pf.offsets[:-1][row_of]
    keep = (lens >= 0) & (lens <= MAX_DETAIL_LOGITS)
    kept_lens = np.where(keep, lens, 0)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept_lens, out=offsets[1:])
    within = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], kept_lens)
    values = pf.logits_flat[np.repeat(starts, kept_lens) + within]
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(values),
                                    mask=pa.array(~keep))


def details_table(report: Any, records: Sequence[Mapping[str, Any]]) -> Any:
    """The details of a validated report as an Arrow table: ``records`` (its
    per-row results, in dataset order) plus logits, text and family columns."""
    import pyarrow as pa

    names: dict[str, None] = {}
    for r in records:
        names.update(dict.fromkeys(r))
    types = _types()
    columns: dict[str, Any] = {}
    for name in names:
        values = [r.get(name) for r in records]
        columns[name] = pa.array(values, types.get(name))
    index = getattr(report, "index", None)
    aligned = getattr(report, "aligned", None)
    n = len(records)
    for name in FAMILY_COLUMNS:
        if index is not None and name in index.columns and name not in columns:
            columns[name] = pa.array(np.asarray(index.columns[name]).tolist())
    if aligned is not None and report.file.has_logits:
        columns["logits"] = _logits_column(report, n)
    else:
        columns["logits"] = pa.nulls(n, pa.list_(pa.float64()))
    text = None if aligned is None else report.file.text
    columns["text"] = (pa.array(text[aligned.row_of].tolist(), pa.string())
                       if aligned is not None and text is not None else pa.nulls(n, pa.string()))
    return pa.table(columns)


def parquet_bytes(table: Any) -> bytes:
    """``table`` as one parquet file, byte-identical for the same table."""
    import pyarrow.parquet as pq

    from vlmrobust.core.writer import WRITE_CHECKSUMS

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", **WRITE_CHECKSUMS)
    return buf.getvalue()


def details_parquet(report: Any, records: Sequence[Mapping[str, Any]]) -> bytes:
    """:func:`details_table` as parquet bytes."""
    return parquet_bytes(details_table(report, records))
