"""Reading a predictions file (parquet or JSONL) into flat numpy columns without
trusting it: structural failures raise :class:`SubmissionError` naming the file
(and line), row-level type problems are collected as :class:`Problem` records
so that validation can report every kind of problem at once.

Columns: ``id`` (string), and at least one answer column: ``logits`` (list of
numbers, one per option), ``text`` (the model's raw output, a string; the
scorer derives the answer from it with vlmrobust.core.text.matcher) or
``prediction`` (int option index). ``prompt_text`` (the exact text sent to the
model, after its chat template) is optional audit trail. ``text`` and
``prompt_text`` may be null on some rows; each value is at most
``MAX_TEXT_CHARS`` characters.

Nothing is read without a bound: the file must be a regular file of at most
``max_bytes``, hold at most ``max_rows`` rows (validation passes a multiple of
the dataset's row count), a parquet file's columns must fit a decoded-size
bound computed from its footer before they are decoded (predictions_parquet),
and a JSONL file is streamed with a cap per line (predictions_jsonl).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import MIB, open_bounded
from vlmrobust.evaluation.predictions.jsonl import MAX_TEXT_CHARS, TEXT_COLUMNS
from vlmrobust.evaluation.predictions.parquet import LOGP_COLUMNS
from vlmrobust.evaluation.predictions.truncation import int_column

# Defaults when no dataset bounds the file (score_tables, direct calls); validate
# derives tighter ones from the dataset's row count.
DEFAULT_MAX_ROWS = 10_000_000
DEFAULT_MAX_BYTES = 2048 * MIB
# Logits beyond this magnitude overflow softmax differences and temperature fits;
# real models give |logit| < 1e4.
MAX_ABS_LOGIT = 1e12


PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
# How many offending rows a problem lists (the count is always complete).
MAX_EXAMPLES = 5
FORMAT_HINT = (
    "a predictions file is parquet or JSONL with columns id (string) and logits "
    "(list of floats, one per option), text (the raw model output) or prediction (int); "
    "prompt_text optional"
)


@dataclass(frozen=True)
class Problem:
    """One kind of problem: a short ``kind``, a ``detail`` with the fix, the
    first few offending rows as "row 3 (id 'x')" strings, and the total count."""

    kind: str
    detail: str
    examples: tuple[str, ...] = ()
    count: int = 0

    def __post_init__(self) -> None:
        if not self.kind:
            raise ValueError("Problem.kind must not be empty")
        if self.count < len(self.examples):
            raise ValueError("Problem.count must be >= the number of examples")

    def one_line(self) -> str:
        rows = ""
        if self.count:
            shown = ", ".join(self.examples)
            more = f", … {self.count - len(self.examples)} more" if self.count > len(self.examples) else ""
            rows = f" [{self.count} row{'s' if self.count != 1 else ''}: {shown}{more}]"
        return f"{self.kind}: {self.detail}{rows}"


@dataclass(frozen=True)
class PredictionsFile:
    """Columns of a predictions file, one entry per data row.

    ``logits_len[i]`` is the number of logits of row i (−1 when the row has no
    usable list); row i's logits are ``logits_flat[offsets[i]:offsets[i] + len]``
    (null entries read as NaN). ``prediction`` is float so that a missing or
    malformed value can be NaN.
    """

    path: Path
    format: str
    ids: NDArray[np.object_]
    logits_len: NDArray[np.int64] | None
    logits_flat: NDArray[np.float64] | None
    prediction: NDArray[np.float64] | None
    line_numbers: NDArray[np.int64] | None = None
    problems: tuple[Problem, ...] = field(default=())
    sha256: str | None = None  # of the file's bytes, as read
    embedded_meta: bytes | None = None  # parquet key-value metadata (predictions_meta)
    # per row a str or None (null, absent, or not a string: then also a problem)
    text: NDArray[np.object_] | None = None
    prompt_text: NDArray[np.object_] | None = None
    # CFG's per-option terms (predictions_parquet.LOGP_COLUMNS), those present:
    # name -> (lengths, flat) as logits_len / logits_flat
    logp: Mapping[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = field(default_factory=dict)
    # per row the options whose log-prob a server did not list (NaN: null, all
    # listed; evaluation/predictions/truncation.py) and a reasoning model's text
    truncated: NDArray[np.float64] | None = None
    reasoning: NDArray[np.object_] | None = None

    def __post_init__(self) -> None:
        if self.format not in ("parquet", "jsonl"):
            raise ValueError(f"format must be parquet or jsonl, got {self.format!r}")
        n = self.ids.shape[0]
        for name in ("logits_len", "prediction", "line_numbers", "text", "prompt_text",
                     "truncated", "reasoning"):
            arr = getattr(self, name)
            if arr is not None and arr.shape != (n,):
                raise ValueError(f"{name} has shape {arr.shape}, expected ({n},)")
        for name, (lens, _) in self.logp.items():
            if name not in LOGP_COLUMNS or lens.shape != (n,):
                raise ValueError(f"logp {name!r}: lengths of shape {lens.shape}, expected ({n},)")

    @property
    def n_rows(self) -> int:
        return int(self.ids.shape[0])

    @property
    def has_logits(self) -> bool:
        return self.logits_len is not None

    @property
    def has_text(self) -> bool:
        return self.text is not None

    @property
    def offsets(self) -> NDArray[np.int64]:
        assert self.logits_len is not None
        out = np.zeros(self.n_rows + 1, dtype=np.int64)
        np.cumsum(np.maximum(self.logits_len, 0), out=out[1:])
        return out

    def where(self, row: int) -> str:
        """Human locator of data row ``row``: JSONL line number or parquet row."""
        return row_locator(self.ids, self.line_numbers, row)


def row_locator(ids: Any, line_numbers: Any, row: int) -> str:
    """``line N (id 'x')`` of a JSONL file, ``row N (id 'x')`` of a parquet one.

    >>> import numpy as np
    >>> row_locator(np.array(["a", "b"], dtype=object), None, 1)
    "row 1 (id 'b')"
    >>> row_locator(np.array(["a"], dtype=object), np.array([7]), 0)
    "line 7 (id 'a')"
    """
    rid = ids[row]
    tag = f" (id {rid!r})" if isinstance(rid, str) else ""
    if line_numbers is not None:
        return f"line {int(line_numbers[row])}{tag}"
    return f"row {row}{tag}"


def row_problem(pf: PredictionsFile, kind: str, detail: str, rows: Sequence[int] | NDArray[Any]) -> Problem:
    """A Problem listing the first few of ``rows`` (data row indices) of ``pf``."""
    rows = list(rows)
    return Problem(kind, detail, tuple(pf.where(int(r)) for r in rows[:MAX_EXAMPLES]), len(rows))


def sniff_format(path: Path, head: bytes) -> str:
    """"parquet" or "jsonl": by suffix, else by content (parquet starts with PAR1)."""
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if head[:4] == b"PAR1":
        return "parquet"
    if head.lstrip()[:1] in (b"{", b""):
        return "jsonl"
    raise SubmissionError(f"{path}: neither parquet nor JSONL (unknown suffix, unrecognised content); {FORMAT_HINT}")


@contextmanager
def opened_predictions(path: Path, max_bytes: int, hint: str) -> Iterator[tuple[BinaryIO, str]]:
    """``path`` opened within its size bound (core.bounded.open_bounded) and its
    format (:func:`sniff_format`); an empty file is refused with ``hint``. Each
    reader then reads the bytes its own way (predictions: in 1 MiB blocks)."""
    with open_bounded(path, max_bytes, "predictions file", SubmissionError) as fh:
        head = fh.peek(64)[:64]
        if not head:
            raise SubmissionError(f"{path}: the file is empty; {hint}")
        yield fh, sniff_format(path, head)


def read_predictions(path: Path | str, max_rows: int = DEFAULT_MAX_ROWS,
                     max_bytes: int = DEFAULT_MAX_BYTES,
                     max_logits: int | None = None) -> PredictionsFile:
    """Read ``path`` (format by suffix, else sniffed). Raises SubmissionError for
    a missing, empty, oversized, unreadable or column-less file. The bytes are
    read once, so the returned ``sha256`` is of exactly what was parsed.

    Parquet: only the format's columns, their decoded size bounded from the
    footer before decoding, page checksums verified (predictions_parquet).
    JSONL: streamed line by line (predictions_jsonl), a row of more than
    ``max_logits`` logits refused when met (parquet: more than that many per
    row on average, from the footer)."""
    import hashlib

    path = Path(path)
    with opened_predictions(path, max_bytes, FORMAT_HINT) as (fh, fmt):
        if fmt == "jsonl":
            return _read_jsonl(path, fh, max_rows, max_bytes, max_logits)
        chunks = []
        left = max_bytes + 1
        while left > 0 and (block := fh.read(min(left, MIB))):
            chunks.append(block)
            left -= len(block)
    data = b"".join(chunks)
    del chunks  # one copy of the file's bytes, not two, while its columns decode
    if len(data) > max_bytes:  # grew while being read
        raise SubmissionError(f"{path}: more than the {max_bytes} bytes allowed for a predictions file")
    digest = hashlib.sha256(data).hexdigest()
    pf = _read_parquet(path, data, max_rows, max_logits)
    return dataclasses.replace(pf, sha256=digest)


def _read_parquet(path: Path, data: bytes, max_rows: int,
                  max_logits: int | None = None) -> PredictionsFile:
    from vlmrobust.evaluation.predictions.parquet import read_parquet_predictions

    table, embedded, lists = read_parquet_predictions(path, data, max_rows, max_logits)
    try:
        pf = predictions_from_table(table, path, logits=lists.pop("logits", None), logp=lists)
    except UnicodeDecodeError as exc:
        # parquet stores names and strings as bytes: a damaged file can decode to
        # invalid UTF-8 only once a column is touched
        raise SubmissionError(
            f"{path}: a column name or string value is not valid UTF-8 (byte {exc.start}); "
            "the file is damaged — write it again (pyarrow.parquet.write_table)"
        ) from None
    return dataclasses.replace(pf, embedded_meta=embedded)


def predictions_from_table(table: Any, path: Path | str = "<table>",
                           logits: tuple[NDArray[np.int64], NDArray[np.float64]] | None = None,
                           logp: Mapping[str, tuple[NDArray[np.int64], NDArray[np.float64]]]
                           | None = None) -> PredictionsFile:
    """Turn a pyarrow Table with id / logits / prediction / text / prompt_text
    (/ CFG's logp_with_image, logp_without_image) columns into a
    PredictionsFile (schema errors raise SubmissionError; text values that are
    too long are row problems). ``logits`` / ``logp``: list columns already read
    as ``(lengths, flat float64)`` (predictions_parquet.read_logits), in place
    of those columns of ``table``."""
    import pyarrow as pa

    path = Path(path)
    if (table.num_rows if logits is None or table.num_columns else len(logits[0])) == 0:
        raise SubmissionError(f"{path}: the file has no rows; {FORMAT_HINT}")
    logp = dict(logp or {})
    names = set(table.column_names) | ({"logits"} if logits is not None else set()) | set(logp)
    if "id" not in names:
        raise SubmissionError(f"{path}: no 'id' column (columns: {sorted(names)}); {FORMAT_HINT}")
    if not names & {"logits", "prediction", "text"}:
        raise SubmissionError(
            f"{path}: no 'logits', 'text' or 'prediction' column (columns: {sorted(names)}); {FORMAT_HINT}"
        )
    id_col = table.column("id")
    if pa.types.is_dictionary(id_col.type) and pa.types.is_string(id_col.type.value_type):
        id_col = id_col.cast(pa.string())
    if not (pa.types.is_string(id_col.type) or pa.types.is_large_string(id_col.type)):
        raise SubmissionError(
            f"{path}: column 'id' has type {id_col.type}, expected string; write the dataset ids as strings"
        )
    ids = np.asarray(id_col.to_pylist(), dtype=object)
    logits_len = logits_flat = prediction = None
    if logits is not None:
        logits_len, logits_flat = logits
        if logits_len.shape != (len(ids),):
            raise SubmissionError(f"{path}: {logits_len.shape[0]} rows of logits for {len(ids)} ids")
    elif "logits" in names:
        logits_len, logits_flat = _number_lists(table, "logits", path)
    logp.update({name: _number_lists(table, name, path) for name in LOGP_COLUMNS
                 if name in table.column_names and name not in logp})
    for name, (lens, _) in logp.items():
        if lens.shape != (len(ids),):
            raise SubmissionError(f"{path}: {lens.shape[0]} rows of {name} for {len(ids)} ids")
    if "prediction" in names:
        prediction = int_column(table, "prediction", path, "an int option index",
                                allow_null=False)
    truncated = int_column(table, "truncated", path) if "truncated" in names else None
    texts = {name: _text_column(table, name, path) for name in TEXT_COLUMNS if name in names}
    pf = PredictionsFile(path, "parquet", ids, logits_len, logits_flat, prediction,
                         text=texts.get("text"), prompt_text=texts.get("prompt_text"), logp=logp,
                         truncated=truncated, reasoning=texts.get("reasoning"))
    problems = [row_problem(pf, f"{name} too long", f"at most {MAX_TEXT_CHARS} characters per value",
                            np.flatnonzero([v is not None and len(v) > MAX_TEXT_CHARS for v in col]))
                for name, col in texts.items()]
    return dataclasses.replace(pf, problems=tuple(p for p in problems if p.count))


def _number_lists(table: Any, name: str, path: Path) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """A list-of-numbers column as (lengths, flat float64); a null list has length -1."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    t = col.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) or not (
        pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)
    ):
        raise SubmissionError(
            f"{path}: column {name!r} has type {t}, expected a list of floats (one per option)"
        )
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    lengths = pc.list_value_length(arr).fill_null(-1)
    values = pc.list_flatten(arr).cast(pa.float64())
    return (np.asarray(lengths.to_numpy(zero_copy_only=False), dtype=np.int64),
            np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64))


def _text_column(table: Any, name: str, path: Path) -> NDArray[np.object_]:
    """A string column (nulls allowed) as an object array of str | None."""
    import pyarrow as pa

    col = table.column(name)
    t = col.type
    if pa.types.is_dictionary(t):
        t = t.value_type
        col = col.cast(t)
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)):
        raise SubmissionError(f"{path}: column {name!r} has type {col.type}, expected string "
                              "(the text itself; null where a row has none)")
    out = np.empty(len(col), dtype=object)
    out[:] = col.to_pylist()
    return out


def _read_jsonl(path: Path, fh: BinaryIO, max_rows: int, max_bytes: int,
                max_logits: int | None) -> PredictionsFile:
    from vlmrobust.evaluation.predictions.jsonl import read_jsonl_rows

    rows, digest = read_jsonl_rows(path, fh, max_rows, max_bytes, FORMAT_HINT, max_logits)
    if not rows.ids and not rows.not_json:
        raise SubmissionError(f"{path}: the file holds no JSON lines; {FORMAT_HINT}")
    problems: list[Problem] = []
    if rows.not_json:
        problems.append(Problem(
            "line is not a JSON object",
            "each line must be one JSON object such as {\"id\": \"...\", \"logits\": [0.1, 2.3]}",
            tuple(rows.not_json[:MAX_EXAMPLES]), rows.n_not_json,
        ))
    if rows.ids and not rows.seen_logits and not rows.seen_pred and "text" not in rows.seen_text:
        raise SubmissionError(f"{path}: no line has 'logits', 'text' or 'prediction'; {FORMAT_HINT}")
    cols = rows.arrays()
    pf = PredictionsFile(path, "jsonl", cols["ids"], cols["logits_len"], cols["logits_flat"],
                         cols["prediction"], cols["line_numbers"], text=cols["text"],
                         prompt_text=cols["prompt_text"], logp=cols["logp"],
                         truncated=cols["truncated"], reasoning=cols["reasoning"])
    bad = rows.bad
    if rows.seen_logits:
        malformed = set(bad.get("logits not a list of numbers", []))
        missing = [r for r, n in enumerate(rows.lengths) if n < 0 and r not in malformed]
        if missing:
            bad.setdefault("logits missing", []).extend(missing)
    fixes = {
        "id missing or not a string": "every line needs \"id\": the dataset row id as a string",
        "logits not a list of numbers": "\"logits\" must be a list of numbers, one per option",
        "logits missing": "other lines give logits, so every line must",
        "truncated not a number": "\"truncated\" must be the count of options the server "
                                  "did not list (or null)",
        **{f"{name} not a list of numbers": f"\"{name}\" must be a list of numbers, one per "
           "option" for name in LOGP_COLUMNS},
    }
    for name in TEXT_COLUMNS:
        fixes[f"{name} not a string"] = f"\"{name}\" must be a string (or null)"
        fixes[f"{name} too long"] = f"at most {MAX_TEXT_CHARS} characters per value"
    for kind, bad_rows in bad.items():
        problems.append(row_problem(pf, kind, fixes[kind], bad_rows))
    return dataclasses.replace(pf, problems=tuple(problems), sha256=digest)
