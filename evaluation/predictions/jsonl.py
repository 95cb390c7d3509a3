"""Reading a predictions JSONL file as a stream (issue 28.10, 28.17).

One line at a time from the open file, each hashed as it is read (so the
digest is of exactly the bytes parsed): no copy of the whole file, its text or
its lines is ever held. Values go straight into compact arrays (8 bytes per
logit, not a Python float object), a line longer than ``MAX_LINE_BYTES`` is
refused when it is met, and so is the file once it holds more rows, lines or
malformed lines than it could if it were a real predictions file.

Lines end at ``\\n`` only: JSON strings may hold U+2028 and other characters
that ``str.splitlines`` would split on.
"""

from __future__ import annotations

import hashlib
import json
import math
from array import array
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.predictions.parquet import LOGP_COLUMNS

# The text columns and the bound on one value: a long reasoning trace fits
# (~32k tokens); the file-level byte bound still caps the total.
TEXT_COLUMNS = ("text", "prompt_text", "reasoning")
MAX_TEXT_CHARS = 128 * 1024

# One row: an id, one logit per option (a label space of 1000 classes is ~20 KB
# of text) and the optional text columns (three of MAX_TEXT_CHARS characters,
# up to 6 bytes each as JSON \u escapes). Far above any row the tools write.
MAX_LINE_BYTES = 4 << 20
# Malformed lines are listed (the first few) and counted; this many stop the read.
MAX_BAD_LINES = 1000
# Blank lines are tolerated, not unbounded.
SPARE_LINES = 1000


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _to_float(v: Any) -> float:
    """A JSON number as float; null -> NaN; an int too large for a float -> ±inf
    (both are then reported as non-finite / out of range, never a traceback)."""
    if v is None:
        return float("nan")
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _float_array(values: list[Any], no_bools: bool) -> array[float] | None:
    """``values`` as float64 (null -> NaN, huge ints -> ±inf), or None when one is
    not a number. Converted in C when the line holds no bool (True is an int)."""
    if no_bools:
        try:
            return array("d", values)
        except (TypeError, OverflowError):
            pass  # a null, a non-number or an int beyond float range: the slow path decides
    if not all(_is_number(v) or v is None for v in values):
        return None
    return array("d", (_to_float(v) for v in values))


class JsonlRows:
    """The columns of a predictions JSONL, filled line by line."""

    def __init__(self) -> None:
        self.ids: list[str | None] = []
        self.lines = array("q")
        self.lengths = array("q")
        self.flat = array("d")
        self.preds = array("d")
        self.truncated = array("d")  # NaN: absent or null (all options listed)
        self.seen_logits = False
        self.seen_pred = False
        self.seen_truncated = False
        self.texts: dict[str, list[str | None]] = {name: [] for name in TEXT_COLUMNS}
        # CFG's per-option terms: name -> (lengths, flat), filled once a line has one
        self.logp = {name: (array("q"), array("d")) for name in LOGP_COLUMNS}
        self.seen_logp: set[str] = set()
        self.seen_text: set[str] = set()
        self.bad: dict[str, list[int]] = {}  # kind -> data row indices
        self.not_json: list[str] = []
        self.n_not_json = 0

    def add(self, lineno: int, obj: dict[str, Any], no_bools: bool) -> None:
        row = len(self.ids)
        self.lines.append(lineno)
        rid = obj.get("id")
        self.ids.append(rid if isinstance(rid, str) else None)
        if not isinstance(rid, str):
            self.bad.setdefault("id missing or not a string", []).append(row)
        logits = obj.get("logits")
        if "logits" in obj:
            self.seen_logits = True
        values = _float_array(logits, no_bools) if isinstance(logits, list) else None
        if values is not None:
            self.lengths.append(len(values))
            self.flat.extend(values)
        else:
            self.lengths.append(-1)
            if "logits" in obj:
                self.bad.setdefault("logits not a list of numbers", []).append(row)
        for name, (lengths, flat) in self.logp.items():
            value = obj.get(name)
            if name in obj:
                self.seen_logp.add(name)
            numbers = _float_array(value, no_bools) if isinstance(value, list) else None
            lengths.append(-1 if numbers is None else len(numbers))
            if numbers is not None:
                flat.extend(numbers)
            elif value is not None:
                self.bad.setdefault(f"{name} not a list of numbers", []).append(row)
        pred = obj.get("prediction")
        if "prediction" in obj:
            self.seen_pred = True
        self.preds.append(_to_float(pred) if _is_number(pred) else float("nan"))
        cut = obj.get("truncated")
        self.seen_truncated = self.seen_truncated or "truncated" in obj
        self.truncated.append(_to_float(cut) if _is_number(cut) else float("nan"))
        if cut is not None and not _is_number(cut):
            self.bad.setdefault("truncated not a number", []).append(row)
        for name in TEXT_COLUMNS:
            value = obj.get(name)
            if name in obj:
                self.seen_text.add(name)
            if value is not None and not isinstance(value, str):
                self.bad.setdefault(f"{name} not a string", []).append(row)
                value = None
            elif isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                self.bad.setdefault(f"{name} too long", []).append(row)
            self.texts[name].append(value)

    def reject(self, path: Path, lineno: int, why: str, hint: str) -> None:
        self.n_not_json += 1
        if len(self.not_json) < 5:
            self.not_json.append(f"line {lineno} ({why})")
        if self.n_not_json > MAX_BAD_LINES:
            raise SubmissionError(
                f"{path}: more than {MAX_BAD_LINES} lines are not JSON objects (first: "
                f"{', '.join(self.not_json)}); stopped reading — {hint}")

    def arrays(self) -> dict[str, Any]:
        return {
            "ids": np.asarray(self.ids, dtype=object),
            "logits_len": np.frombuffer(self.lengths, dtype=np.int64).copy() if self.seen_logits else None,
            "logits_flat": np.frombuffer(self.flat, dtype=np.float64).copy() if self.seen_logits else None,
            "prediction": np.frombuffer(self.preds, dtype=np.float64).copy() if self.seen_pred else None,
            "truncated": (np.frombuffer(self.truncated, dtype=np.float64).copy()
                          if self.seen_truncated else None),
            "line_numbers": np.frombuffer(self.lines, dtype=np.int64).copy(),
            **{name: _objects(self.texts[name]) if name in self.seen_text else None
               for name in TEXT_COLUMNS},
            "logp": {name: (np.frombuffer(lengths, dtype=np.int64).copy(),
                            np.frombuffer(flat, dtype=np.float64).copy())
                     for name, (lengths, flat) in self.logp.items() if name in self.seen_logp},
        }


def _objects(values: list[str | None]) -> Any:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def read_jsonl_rows(path: Path, fh: BinaryIO, max_rows: int, max_bytes: int,
                    hint: str, max_logits: int | None = None) -> tuple[JsonlRows, str]:
    """Parse the open file ``fh`` line by line; returns the rows and the sha256
    of the bytes read. Structural failures raise SubmissionError naming the line,
    among them a row with more than ``max_logits`` logits (the most options any
    question of the dataset has): refused when met, not after the whole file."""
    sha = hashlib.sha256()
    rows = JsonlRows()
    total = 0
    lineno = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            break
        lineno += 1
        total += len(raw)
        sha.update(raw)
        if total > max_bytes:  # the file grew while being read
            raise SubmissionError(f"{path}: more than the {max_bytes} bytes allowed for a "
                                  "predictions file")
        if len(raw) > MAX_LINE_BYTES:
            raise SubmissionError(
                f"{path}: line {lineno} is longer than {MAX_LINE_BYTES} bytes; each line is one "
                "row: {\"id\": ..., \"logits\": [...]} — check that it is a predictions file")
        if lineno > max_rows + SPARE_LINES:
            raise SubmissionError(
                f"{path}: more than {max_rows + SPARE_LINES} lines, more than the {max_rows} rows "
                "allowed for this dataset (a small multiple of its row count); give one row per "
                "dataset row")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SubmissionError(f"{path}: line {lineno} is not UTF-8 text; {hint}") from None
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            rows.reject(path, lineno, f"{exc.msg} at column {exc.colno}", hint)
            continue
        except (ValueError, RecursionError) as exc:  # e.g. an int of > 4300 digits, deep nesting
            rows.reject(path, lineno, f"{type(exc).__name__}: {str(exc)[:80]}", hint)
            continue
        if not isinstance(obj, dict):
            rows.reject(path, lineno, f"a JSON {type(obj).__name__}, not an object", hint)
            continue
        if len(rows.ids) >= max_rows:
            raise SubmissionError(
                f"{path}: {len(rows.ids) + 1} rows, more than the {max_rows} allowed for this "
                "dataset (a small multiple of its row count); give one row per dataset row")
        for name in ("logits", *LOGP_COLUMNS):
            values = obj.get(name)
            if max_logits is not None and isinstance(values, list) and len(values) > max_logits:
                what = "logits" if name == "logits" else f"{name} values"
                raise SubmissionError(
                    f"{path}: line {lineno} has {len(values)} {what}, more than the "
                    f"{max_logits} options of any question of this dataset; give one value "
                    "per option")
        # true/false absent from the line: no value can be a bool (fast path below)
        rows.add(lineno, obj, b"true" not in raw and b"false" not in raw)
    return rows, sha.hexdigest()
