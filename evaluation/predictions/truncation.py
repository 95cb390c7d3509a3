"""Rows whose option log-probs a server did not all list (issue 36 item 3).

A server that returns only its top-20 log-probs (OpenAI, SGLang's chat route,
llama.cpp, TGI; vLLM without ``logprob_token_ids``) may leave letters out. The
letter reader (vlmrobust/models/readers/letter.py) gives them a placeholder
below every listed letter and counts them in the row's ``truncated`` column
(null or 0: every option observed; old files without the column: all rows
observed). A placeholder is never a probability:

- calibration (ECE, NLL, temperature scaling) and the probability pair metrics
  of Bench-C (S, C, their deltas, RAS, quadrants) leave out every row with
  ``truncated > 0`` (a Bench-C pair when either of its rows is), and scores.json
  says how many (``truncated_excluded``);
- accuracy keeps a truncated row when its answer is still determined: a listed
  token outranks every unlisted one, so the argmax over the listed letters is
  the argmax over all of them. A row with no option listed (``truncated`` = K)
  has no determined argmax and is left out of accuracy too
  (``undetermined_excluded``), unless its answer was read from its text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

TRUNCATION_RULE = ("rows with options the server did not list: out of calibration and of "
                   "Bench-C's S, C and RAS; kept in accuracy unless no option was listed "
                   "(a listed token outranks every unlisted one)")


def int_column(table: Any, name: str, path: Any, expected: str = "an int",
               allow_null: bool = True) -> NDArray[np.float64]:
    """An integer column of a pyarrow table as float64, null entries as NaN (via
    numpy: an int64 beyond 2**53 becomes a wrong float that the checks refuse,
    not an error here). A column of type null is all NaN where ``allow_null``."""
    import pyarrow as pa

    from vlmrobust.core.errors import SubmissionError

    col = table.column(name)
    if allow_null and pa.types.is_null(col.type):
        return np.full(len(col), np.nan)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise SubmissionError(f"{path}: column {name!r} has type {col.type}, expected {expected}")
    raw = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return np.asarray(raw.to_numpy(zero_copy_only=False), dtype=np.float64)


def bad_counts(truncated: NDArray[np.float64], k_of_row: NDArray[np.int64]) -> NDArray[np.int64]:
    """The rows whose ``truncated`` is not null and not an integer in [0, K]
    (``k_of_row`` < 0: a row not matched to the dataset, checked elsewhere).

    >>> bad_counts(np.array([np.nan, 0, 2, 3, 1.5, -1]), np.array([4, 4, 4, 2, 4, 4])).tolist()
    [3, 4, 5]
    """
    t = np.asarray(truncated, dtype=np.float64)
    k = np.asarray(k_of_row)
    with np.errstate(invalid="ignore"):
        wrong = ~np.isnan(t) & ((t != np.round(t)) | (t < 0) | ((k >= 0) & (t > k)))
    return np.flatnonzero(wrong)


def counts(truncated: NDArray[np.float64] | None, row_of: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per dataset row, the options its server did not list (0: all, or no column)."""
    if truncated is None:
        return np.zeros(row_of.shape, dtype=np.int64)
    return np.nan_to_num(truncated[row_of], nan=0.0).astype(np.int64)


def partial_rows(truncated: NDArray[np.int64] | None, n: int) -> NDArray[np.bool_]:
    """The rows whose logits hold a placeholder: out of every probability metric.

    >>> partial_rows(np.array([0, 2, 0]), 3).tolist(), partial_rows(None, 2).tolist()
    ([False, True, False], [False, False])
    """
    return np.zeros(n, dtype=bool) if truncated is None else np.asarray(truncated > 0)


def undetermined_rows(truncated: NDArray[np.int64] | None, n_options: NDArray[np.int64],
                      from_text: NDArray[np.bool_] | None) -> NDArray[np.bool_]:
    """The rows answered by an argmax over placeholders only (no option listed):
    out of accuracy too. A row answered from its text keeps its answer.

    >>> undetermined_rows(np.array([3, 2, 3]), np.array([3, 3, 3]),
    ...                   np.array([False, False, True])).tolist()
    [True, False, False]
    """
    n = np.asarray(n_options).shape[0]
    if truncated is None:
        return np.zeros(n, dtype=bool)
    out = np.asarray((truncated > 0) & (truncated >= n_options))
    return out if from_text is None else out & ~from_text
