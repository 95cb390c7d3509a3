"""Predictions of kind ``retrieval``: per dataset row (one image) its image
embedding and one embedding per caption.

Format (parquet, or JSONL with a ``<file>.meta.yaml`` sidecar; the metadata
travels as for every predictions file, evaluation/predictions/meta.py):

- ``id``: the dataset row's id (string);
- ``image_embedding``: list of D numbers;
- ``text_embeddings``: list of lists of D numbers, one per caption, in the
  row's ``captions`` order.

Embeddings need not be normalised (the scorer normalises them); D is the same
for every vector of the file, 1 <= D <= :data:`MAX_DIM`. Reading is bounded as
for the other kinds: the file by bytes, a parquet file by its footer-declared
decoded size (predictions_parquet, only these three columns decoded), a JSONL
file line by line (at most ``MAX_LINE_BYTES`` a line).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.errors import SubmissionError
from vlmrobust.core.files.bounded import MIB
from vlmrobust.evaluation.predictions.jsonl import MAX_LINE_BYTES
from vlmrobust.evaluation.predictions.read import (
    MAX_EXAMPLES,
    Problem,
    opened_predictions,
    row_locator,
)

MAX_DIM = 16_384
# bytes a predictions file may hold per allowed row (7 captions x 4096 dims as
# JSON text is ~0.6 MB)
BYTES_PER_ROW = 1 * MIB
FORMAT_HINT = ("retrieval predictions are parquet or JSONL with columns id (string), "
               "image_embedding (list of D floats) and text_embeddings (one list of D floats "
               "per caption, in the row's caption order)")


@dataclass(frozen=True)
class EmbeddingFile:
    """The rows of a retrieval predictions file. Row i's caption embeddings are
    ``text[text_offsets[i]:text_offsets[i + 1]]``; ``text_counts[i]`` is −1 for a
    row without a usable list (then also a problem)."""

    path: Path
    format: str
    ids: NDArray[np.object_]
    image: NDArray[np.float32]  # (n, D); NaN rows where unusable
    text_counts: NDArray[np.int64]
    text: NDArray[np.float32]  # (sum of counts, D)
    dim: int
    problems: tuple[Problem, ...] = field(default=())
    sha256: str | None = None
    embedded_meta: bytes | None = None
    line_numbers: NDArray[np.int64] | None = None

    @property
    def n_rows(self) -> int:
        return int(self.ids.shape[0])

    @property
    def text_offsets(self) -> NDArray[np.int64]:
        out = np.zeros(self.n_rows + 1, dtype=np.int64)
        np.cumsum(np.maximum(self.text_counts, 0), out=out[1:])
        return out

    def where(self, row: int) -> str:
        return row_locator(self.ids, self.line_numbers, row)

    def problem(self, kind: str, detail: str, rows: Any) -> Problem:
        rows = [int(r) for r in rows]
        return Problem(kind, detail, tuple(self.where(r) for r in rows[:MAX_EXAMPLES]), len(rows))


def read_embeddings(path: Path | str, max_rows: int, max_bytes: int) -> EmbeddingFile:
    """Read ``path`` (parquet or JSONL, by suffix or content). Structural
    failures raise SubmissionError naming the file; row problems are collected."""
    path = Path(path)
    with opened_predictions(path, max_bytes, FORMAT_HINT) as (fh, fmt):
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise SubmissionError(f"{path}: more than the {max_bytes} bytes allowed for a predictions file")
    digest = hashlib.sha256(data).hexdigest()
    if fmt == "parquet":
        from vlmrobust.evaluation.predictions.parquet import RETRIEVAL_COLUMNS, read_parquet_columns

        table, embedded = read_parquet_columns(path, data, max_rows, columns=RETRIEVAL_COLUMNS)
        ef = embeddings_from_table(table, path)
        return dataclasses.replace(ef, sha256=digest, embedded_meta=embedded)
    return dataclasses.replace(_from_jsonl(path, data, max_rows), sha256=digest)


def _check_columns(path: Path, names: set[str]) -> None:
    missing = [c for c in ("id", "image_embedding", "text_embeddings") if c not in names]
    if missing:
        raise SubmissionError(f"{path}: no {', '.join(repr(m) for m in missing)} column; "
                              f"{FORMAT_HINT}")


def embeddings_from_table(table: Any, path: Path | str = "<table>") -> EmbeddingFile:
    """A pyarrow Table with id / image_embedding / text_embeddings -> EmbeddingFile."""
    import pyarrow as pa
    import pyarrow.compute as pc

    path = Path(path)
    if table.num_rows == 0:
        raise SubmissionError(f"{path}: the file has no rows; {FORMAT_HINT}")
    _check_columns(path, set(table.column_names))
    id_col = table.column("id").combine_chunks()
    if pa.types.is_dictionary(id_col.type):
        id_col = id_col.cast(id_col.type.value_type)
    if not (pa.types.is_string(id_col.type) or pa.types.is_large_string(id_col.type)):
        raise SubmissionError(f"{path}: column 'id' has type {id_col.type}, expected string")
    ids = np.asarray(id_col.to_pylist(), dtype=object)
    img = table.column("image_embedding").combine_chunks()
    txt = table.column("text_embeddings").combine_chunks()
    img_len = np.asarray(pc.list_value_length(img).fill_null(-1), dtype=np.int64)
    counts = np.asarray(pc.list_value_length(txt).fill_null(-1), dtype=np.int64)
    inner = pc.list_flatten(txt)
    inner_len = np.asarray(pc.list_value_length(inner).fill_null(-1), dtype=np.int64)
    img_vals = np.asarray(pc.list_flatten(img).cast(pa.float32()).to_numpy(zero_copy_only=False),
                          dtype=np.float32)
    txt_vals = np.asarray(pc.list_flatten(inner).cast(pa.float32()).to_numpy(zero_copy_only=False),
                          dtype=np.float32)
    flat = _Flat(img_len, img_vals, counts, inner_len, txt_vals)
    return _assemble(path, "parquet", ids, flat, None, [])


@dataclass(frozen=True)
class _Flat:
    """A file's embeddings as read, before shaping: per row its image embedding's
    length (-1: none) and caption count (-1: no list), per caption its
    embedding's length, and the numbers of each, concatenated."""

    img_len: NDArray[np.int64]
    img_vals: NDArray[np.float32]
    counts: NDArray[np.int64]
    inner_len: NDArray[np.int64]
    txt_vals: NDArray[np.float32]


def _assemble(path: Path, fmt: str, ids: NDArray[np.object_], flat: _Flat,
              line_numbers: NDArray[np.int64] | None, problems: list[Problem]) -> EmbeddingFile:
    """Shape the flat values into (n, D) and (m, D), recording rows whose lengths
    disagree with D (the most common image-embedding length)."""
    img_len, img_vals, counts = flat.img_len, flat.img_vals, flat.counts
    inner_len, txt_vals = flat.inner_len, flat.txt_vals
    n = ids.shape[0]
    valid = img_len[img_len > 0]
    dim = int(np.bincount(valid).argmax()) if valid.size else 0
    if not 1 <= dim <= MAX_DIM:
        raise SubmissionError(f"{path}: no usable image_embedding (the embedding width must be "
                              f"1..{MAX_DIM}); {FORMAT_HINT}")
    stub = EmbeddingFile(path, fmt, ids, np.empty((0, dim), np.float32), counts,
                         np.empty((0, dim), np.float32), dim, line_numbers=line_numbers)
    bad_img = np.flatnonzero(img_len != dim)
    if bad_img.size:
        problems.append(stub.problem("image_embedding not D numbers", f"every image_embedding "
                                     f"must be a list of D = {dim} numbers", bad_img))
    row_of_text = np.repeat(np.arange(n), np.maximum(counts, 0))
    bad_txt = np.unique(row_of_text[inner_len != dim]) if inner_len.size else np.empty(0, int)
    no_list = np.flatnonzero(counts < 0)
    bad_rows = np.union1d(bad_txt, no_list)
    if bad_rows.size:
        problems.append(stub.problem("text_embeddings not lists of D numbers",
                                     f"text_embeddings must be one list of D = {dim} numbers per "
                                     "caption", bad_rows))
    image = np.full((n, dim), np.nan, dtype=np.float32)
    ok_img = img_len == dim
    starts = np.concatenate([[0], np.cumsum(np.maximum(img_len, 0))[:-1]])
    if ok_img.all():
        image = img_vals.reshape(n, dim)
    else:
        for r in np.flatnonzero(ok_img):
            image[r] = img_vals[starts[r]:starts[r] + dim]
    m = int(np.maximum(counts, 0).sum())
    if inner_len.size and (inner_len == dim).all():
        text = txt_vals.reshape(m, dim)
    else:
        text = np.full((m, dim), np.nan, dtype=np.float32)
        t_starts = np.concatenate([[0], np.cumsum(np.maximum(inner_len, 0))[:-1]])
        for j in np.flatnonzero(inner_len == dim):
            text[j] = txt_vals[t_starts[j]:t_starts[j] + dim]
    return dataclasses.replace(stub, image=image, text=text, problems=tuple(problems))


def _numbers(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)


def _from_jsonl(path: Path, data: bytes, max_rows: int) -> EmbeddingFile:
    ids: list[Any] = []
    lines: list[int] = []
    img_len: list[int] = []
    img_vals: list[float] = []
    counts: list[int] = []
    inner_len: list[int] = []
    txt_vals: list[float] = []
    not_json: list[str] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise SubmissionError(f"{path}: line {number} is longer than {MAX_LINE_BYTES} bytes; "
                                  f"{FORMAT_HINT}")
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            not_json.append(f"line {number}")
            continue
        if len(ids) >= max_rows:
            raise SubmissionError(f"{path}: more than the {max_rows} rows allowed for this dataset; "
                                  "give one line per dataset row")
        ids.append(obj.get("id"))
        lines.append(number)
        im, tx = obj.get("image_embedding"), obj.get("text_embeddings")
        if isinstance(im, list) and _numbers(im):
            img_len.append(len(im))
            img_vals.extend(im)
        else:
            img_len.append(-1)
        if isinstance(tx, list) and all(_numbers(t) for t in tx):
            counts.append(len(tx))
            for t in tx:
                inner_len.append(len(t))
                txt_vals.extend(t)
        else:
            counts.append(-1)
    if not ids:
        raise SubmissionError(f"{path}: the file holds no JSON lines; {FORMAT_HINT}")
    problems = [Problem("line is not a JSON object", "each line must be one JSON object with id, "
                        "image_embedding and text_embeddings", tuple(not_json[:MAX_EXAMPLES]),
                        len(not_json))] if not_json else []
    id_arr = np.empty(len(ids), dtype=object)
    id_arr[:] = ids
    flat = _Flat(np.asarray(img_len, np.int64), np.asarray(img_vals, np.float32),
                 np.asarray(counts, np.int64), np.asarray(inner_len, np.int64),
                 np.asarray(txt_vals, np.float32))
    ef = _assemble(path, "jsonl", id_arr, flat, np.asarray(lines, np.int64), problems)
    bad_ids = [i for i, v in enumerate(ids) if not isinstance(v, str)]
    if bad_ids:
        ef = dataclasses.replace(ef, problems=(*ef.problems, ef.problem(
            "id missing or not a string", "every line needs \"id\": the dataset row id", bad_ids)))
    return ef
