"""Predictions in dataset order: each dataset row's predictions row, its
logits in a padded (rows × K_max) matrix built in blocks, and its answer (the
logits' argmax, a ``prediction``, or what the matcher reads in its ``text``);
plus the block scan for non-finite or out-of-range logits. Used by
:mod:`.validate` after its checks pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vlmrobust.evaluation.predictions.read import MAX_ABS_LOGIT, PredictionsFile
from vlmrobust.evaluation.predictions.truncation import counts
from vlmrobust.evaluation.scoring.text_answers import NO_ANSWER, text_answers
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

# Logits aligned per block of dataset rows (_align_values) and scanned (wild_rows).
ALIGN_CELLS = 1 << 20


@dataclass(frozen=True)
class Alignment:
    """Predictions in dataset order: ``row_of[i]`` is the predictions row answering
    dataset row i; ``logits`` is (N, K_max) with −inf padding, ``predicted`` ŷ
    (``NO_ANSWER``, −1, where a row's text answers no option: wrong, and
    counted); ``from_text`` marks the rows whose ŷ the matcher read in the text;
    ``truncated`` per row the options a server did not list (None: the file has
    no such column; evaluation/predictions/truncation.py)."""

    row_of: NDArray[np.int64]
    logits: NDArray[np.float64] | None
    predicted: NDArray[np.int64]
    from_text: NDArray[np.bool_] | None = None
    truncated: NDArray[np.int64] | None = None

    @property
    def no_answer(self) -> NDArray[np.bool_]:
        return np.asarray(self.predicted == NO_ANSWER)


def wild_rows(flat: NDArray[np.float64], offsets: NDArray[np.int64]) -> NDArray[np.int64]:
    """The rows holding a logit that is NaN or of magnitude above MAX_ABS_LOGIT,
    scanned in blocks (a per-value row index over 50,000 × 1,000 logits would be
    400 MB); ``offsets`` is the row starts plus the end (PredictionsFile.offsets)."""
    found = []
    for lo in range(0, flat.size, ALIGN_CELLS):
        block = flat[lo:lo + ALIGN_CELLS]
        with np.errstate(invalid="ignore"):
            wild = np.flatnonzero(~(np.abs(block) <= MAX_ABS_LOGIT))  # NaN compares False
        if wild.size:
            found.append(np.searchsorted(offsets, wild + lo, side="right") - 1)
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)


def align(index: DatasetIndex, pf: PredictionsFile,
          matched: NDArray[np.float64] | None = None, open_world: bool = False) -> Alignment:
    """Predictions in dataset order (call only after check_predictions found
    nothing). A row with text is answered by what the matcher reads in it
    (``matched``: text_answers, computed here when not given); other rows by
    their logits' argmax, else their prediction."""
    lookup = {rid: i for i, rid in enumerate(pf.ids.tolist())}
    row_of = np.fromiter((lookup[r] for r in index.ids.tolist()), dtype=np.int64, count=index.n_rows)
    if pf.text is not None and matched is None:
        pos = np.full(pf.n_rows, -1, dtype=np.int64)
        pos[row_of] = np.arange(index.n_rows)
        matched = text_answers(index, pf, pos, open_world)
    from_text = np.isfinite(matched[row_of]) if matched is not None else None
    truncated = None if pf.truncated is None else counts(pf.truncated, row_of)
    base = dataclasses.replace(_align_values(index, pf, row_of), truncated=truncated)
    if from_text is None or not from_text.any():
        return base
    assert matched is not None
    predicted = np.where(from_text, np.nan_to_num(matched[row_of], nan=NO_ANSWER),
                         base.predicted).astype(np.int64)
    return Alignment(row_of, base.logits, predicted, from_text, truncated)


def align_lists(index: DatasetIndex, pf: PredictionsFile, row_of: NDArray[np.int64],
                column: str) -> NDArray[np.float64]:
    """A per-option list column other than the logits (CFG's ``pf.logp`` terms)
    in dataset order, (N, K_max) with −inf padding, as the logits are."""
    lens, flat = pf.logp[column]
    values = _align_values(index, dataclasses.replace(pf, logits_len=lens, logits_flat=flat),
                           row_of).logits
    assert values is not None
    return values


def _align_values(index: DatasetIndex, pf: PredictionsFile, row_of: NDArray[np.int64]) -> Alignment:
    if not pf.has_logits:
        p = pf.prediction if pf.prediction is not None else np.full(pf.n_rows, float(NO_ANSWER))
        # rows with text and no prediction are answered from the text by align
        return Alignment(row_of, None, np.nan_to_num(p[row_of], nan=NO_ANSWER).astype(np.int64))
    assert pf.logits_len is not None and pf.logits_flat is not None
    k_max = int(index.n_options.max()) if index.n_rows else 1
    if pf.n_rows and bool((pf.logits_len == k_max).all()):
        # every row holds K_max logits (a whole label space): one gather, nothing to pad
        full = pf.logits_flat.reshape(pf.n_rows, k_max)[row_of].astype(np.float64, copy=False)
        return Alignment(row_of, full, np.asarray(full.argmax(axis=1), dtype=np.int64))
    logits = np.full((index.n_rows, k_max), -np.inf, dtype=np.float64)
    lens = pf.logits_len[row_of]
    starts = pf.offsets[row_of]
    # In blocks of dataset rows: per-value index arrays for 50,000 rows of 1,000
    # logits would be 400 MB each (issue 23's full label spaces).
    step = max(1, ALIGN_CELLS // k_max)
    for lo in range(0, index.n_rows, step):
        hi = min(index.n_rows, lo + step)
        n_b, s_b = lens[lo:hi], starts[lo:hi]
        dest_row = np.repeat(np.arange(lo, hi), n_b)
        col = np.arange(dest_row.size) - np.repeat(np.cumsum(n_b) - n_b, n_b)
        logits[dest_row, col] = pf.logits_flat[np.repeat(s_b, n_b) + col]
    return Alignment(row_of, logits, np.asarray(logits.argmax(axis=1), dtype=np.int64))
