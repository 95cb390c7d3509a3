"""Reading a predictions parquet file with its decoded size bounded before any
column is decoded (issue 28.10), and its page checksums verified (28.11).

Why the footer's ``total_byte_size`` is not enough: a dictionary-encoded column
stores a value once however many rows repeat it, so 63 KB of parquet holding a
0.5 MB string in every row decodes to gigabytes. Three rules close that:

- only the columns the predictions format defines are read (an extra column
  is never decoded, whatever it holds);
- fixed-width columns (logits, prediction) decode to at most their leaf value
  count times the value width, both in the footer, checked before reading;
- string columns are read as dictionaries (the dictionary page and one index
  per row: both bounded by the footer) and their dense size is computed from
  the dictionary's value lengths before they are expanded. Prefix-shared
  strings (``DELTA_BYTE_ARRAY``) can expand like a dictionary and cannot be read
  as one, so they are refused.

What stays trusted: the footer's value counts. A footer that lies about them
(a hand-crafted file) could still make the reader decode more than counted;
the byte cap on the file and the checksums of what pyarrow writes do not
cover that case.

Checksums: the writers of this project set ``write_page_checksum`` (parquet's
CRC32 per page) and every read verifies them. A file written without them
(older vlmrobust, other tools) has no checksum to verify and is read as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.core.errors import SubmissionError

# The columns a predictions file may hold that are read at all, and what each
# must be (checked on the schema before anything is decoded). Add a column
# here when the format gains one.
STRING_COLUMNS = ("id", "text", "prompt_text", "reasoning")
# truncated: the options whose log-prob a server did not list (readers/letter.py)
NUMBER_COLUMNS = ("prediction", "truncated")
# CFG's two terms per option, log p(option | image, prompt) and log p(option |
# prompt) (vlmrobust/models/readers/likelihood.py), beside the logits they combine
LOGP_COLUMNS = ("logp_with_image", "logp_without_image")
LIST_COLUMNS = ("logits", *LOGP_COLUMNS)
FORMAT_COLUMNS = (*STRING_COLUMNS, *LIST_COLUMNS, *NUMBER_COLUMNS)
# Kind retrieval (evaluation/predictions/retrieval.py): per image row its embedding
# and one embedding per caption; read only when the caller asks for them.
EMBEDDING_COLUMNS = ("image_embedding", "text_embeddings")
RETRIEVAL_COLUMNS = ("id", *EMBEDDING_COLUMNS)
# The columns read may decode to this many times their stored bytes (compressed logits
# rarely shrink beyond 4x; ids of one repeated string can shrink 1000x).
MAX_EXPANSION = 64
MIN_DECODED_CAP = 1 << 26  # 64 MiB: small files may still hold long ids
_WIDTH = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12}
REWRITE = "write it again with pyarrow.parquet.write_table (default settings) or submit JSONL"


def decoded_cap(n_bytes: int) -> int:
    """How many bytes read columns stored in ``n_bytes`` may decode to."""
    return max(MAX_EXPANSION * n_bytes, MIN_DECODED_CAP)


def _damaged(path: Path, exc: BaseException) -> SubmissionError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "checksum" in first.lower():
        return SubmissionError(
            f"{path}: a page checksum does not match ({first[:160]}): the file changed after it "
            "was written (a damaged disk or copy); copy or write it again")
    return SubmissionError(f"{path}: not a readable parquet file ({first[:200]}); it may be "
                           f"truncated — {REWRITE}")


def _is_number_list(t: Any, depth: int) -> bool:
    import pyarrow as pa

    for _ in range(depth):
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
            return False
        t = t.value_type
    return bool(pa.types.is_floating(t) or pa.types.is_integer(t))


def _check_types(path: Path, schema: Any, columns: tuple[str, ...] = FORMAT_COLUMNS) -> list[str]:
    """The columns of ``columns`` present in ``schema``, refusing wrong types up front
    (before reading, so a list of strings posing as logits is never decoded)."""
    import pyarrow as pa

    names = set(schema.names)
    for name, depth in (("image_embedding", 1), ("text_embeddings", 2)):
        if name in columns and name in names and not _is_number_list(schema.field(name).type, depth):
            what = "a list of floats" if depth == 1 else "a list of lists of floats (one per caption)"
            raise SubmissionError(f"{path}: column {name!r} has type {schema.field(name).type}, "
                                  f"expected {what}")
    for name in columns:
        if schema.names.count(name) > 1:
            raise SubmissionError(f"{path}: column {name!r} appears twice; {REWRITE}")
    for name in STRING_COLUMNS:
        if name not in names or name not in columns:
            continue
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if name != "id" and pa.types.is_null(t):
            continue  # a text column with no value at all
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            what = "the dataset ids as strings" if name == "id" else "the text itself (null where none)"
            raise SubmissionError(f"{path}: column {name!r} has type {schema.field(name).type}, "
                                  f"expected string; write {what}")
    for name in LIST_COLUMNS:
        if name not in names or name not in columns:
            continue
        t = schema.field(name).type
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) \
                or not (pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)):
            raise SubmissionError(f"{path}: column {name!r} has type {t}, expected a list of "
                                  "floats (one per option)")
    for name in NUMBER_COLUMNS:
        if name in names and name in columns:
            t = schema.field(name).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
                what = "option index" if name == "prediction" else "count of options"
                raise SubmissionError(f"{path}: column {name!r} has type {t}, expected an int "
                                      f"{what}")
    return [n for n in columns if n in names]


def _stored_bytes(md: Any, selected: list[str]) -> int:
    """The compressed bytes of the column chunks of ``selected`` (footer only)."""
    return sum(md.row_group(g).column(j).total_compressed_size
               for g in range(md.num_row_groups) for j in range(md.row_group(g).num_columns)
               if md.row_group(g).column(j).path_in_schema.split(".")[0] in selected)


def _footer_bound(path: Path, md: Any, selected: list[str], cap: int,
                  max_logits: int | None = None) -> None:
    """Refuse a file whose read columns the footer says decode beyond ``cap``, or
    whose list columns hold more values than ``max_logits`` per row on average."""
    bound = 0
    counts = dict.fromkeys(LIST_COLUMNS, 0)
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            col = rg.column(j)
            # a leaf's path starts with its top-level column's name ("logits.list.element")
            if col.path_in_schema.split(".")[0] not in selected:
                continue
            bound += col.total_uncompressed_size
            if col.path_in_schema.split(".")[0] in counts:
                counts[col.path_in_schema.split(".")[0]] += col.num_values
            width = _WIDTH.get(col.physical_type)
            if width is not None:
                bound += 8 * col.num_values  # values widen to float64/int64 in memory
            elif col.physical_type == "BYTE_ARRAY" and "DELTA_BYTE_ARRAY" in col.encodings:
                raise SubmissionError(
                    f"{path}: column {col.path_in_schema!r} uses the prefix-sharing "
                    f"DELTA_BYTE_ARRAY encoding, which can expand without bound; {REWRITE}")
            bound += 8 * col.num_values  # list offsets, validity, string offsets
            if bound > cap:
                raise SubmissionError(
                    f"{path}: its columns decode to more than {cap} bytes ({md.num_rows} rows); "
                    f"refusing a file that expands this much — {REWRITE}")
    for name, n in counts.items():
        if max_logits is not None and n > max_logits * max(md.num_rows, 1):
            what = "logits" if name == "logits" else f"{name} values"
            raise SubmissionError(
                f"{path}: {n} {what} in {md.num_rows} rows, more than the {max_logits} options "
                "of any question of this dataset per row; give one value per option")


def _dense_strings(path: Path, table: Any, names: list[str], cap: int) -> Any:
    """Expand the dictionary-read string columns of ``table`` once their dense
    size (summed from the dictionary's value lengths) is known to fit ``cap``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for name in names:
        for chunk in table.column(name).chunks:
            if pa.types.is_dictionary(chunk.type):
                lengths = pc.binary_length(chunk.dictionary)
                total += pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0
            else:
                total += chunk.nbytes
            if total > cap:
                raise SubmissionError(
                    f"{path}: column {name!r} decodes to more than {cap} bytes (one long value "
                    f"repeated in many rows); refusing it — {REWRITE}")
    for name in names:
        i = table.schema.get_field_index(name)
        col = table.column(i)
        if pa.types.is_dictionary(col.type):
            table = table.set_column(i, name, col.cast(pa.string()))
    return table


def read_parquet_columns(path: Path, data: bytes, max_rows: int,
                         max_logits: int | None = None,
                         columns: tuple[str, ...] = FORMAT_COLUMNS) -> tuple[Any, bytes | None]:
    """The format's columns (``columns``: those of the MCQ format, or
    :data:`RETRIEVAL_COLUMNS`) of the parquet ``data`` as a pyarrow Table (size
    bounded, checksums verified) and its ``vlmrobust.meta`` key-value entry."""
    table, embedded, _ = _read(path, data, max_rows, max_logits, columns, stream_logits=False)
    return table, embedded


def read_parquet_predictions(path: Path, data: bytes, max_rows: int,
                             max_logits: int | None = None) -> tuple[Any, bytes | None, Any]:
    """As :func:`read_parquet_columns` for the predictions format, with the
    list columns (``logits``, CFG's :data:`LOGP_COLUMNS`) left out of the table
    and returned as {name: ``(lengths, flat)``} (:func:`read_logits`), those
    present only."""
    return _read(path, data, max_rows, max_logits, FORMAT_COLUMNS, stream_logits=True)


def _read(path: Path, data: bytes, max_rows: int, max_logits: int | None,
          columns: tuple[str, ...], stream_logits: bool) -> tuple[Any, bytes | None, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        first = pq.ParquetFile(pa.BufferReader(data))
        md = first.metadata
        if md.num_rows > max_rows:
            raise SubmissionError(
                f"{path}: {md.num_rows} rows, more than the {max_rows} allowed for this dataset "
                "(a small multiple of its row count); give one row per dataset row")
        schema = first.schema_arrow
        selected = _check_types(path, schema, columns)
        # the expansion bound counts the stored bytes of the columns read, not the
        # file's: an incompressible column never read raised it (issue 40.9: a
        # 39.5 MB file of 1 MB texts and such a pad peaked at 6.8 GB in validate)
        cap = decoded_cap(_stored_bytes(md, selected))
        _footer_bound(path, md, selected, cap, max_logits)
        strings = [n for n in selected if n in STRING_COLUMNS]
        pfile = pq.ParquetFile(pa.BufferReader(data), read_dictionary=strings,
                               page_checksum_verification=True)
        embedded = (pfile.schema_arrow.metadata or {}).get(b"vlmrobust.meta")
        streamed = [n for n in selected if n in LIST_COLUMNS] if stream_logits else []
        table = pfile.read(columns=[n for n in selected if n not in streamed])
        table = _dense_strings(path, table, strings, cap)
        logits = {n: read_logits(path, pfile, md, n) for n in streamed}
    except SubmissionError:
        raise
    # A damaged file can fail anywhere inside the parquet reader (Arrow errors,
    # OSError, ValueError, even MemoryError on a corrupt length): all mean the same.
    except Exception as exc:
        raise _damaged(path, exc) from None
    return table, embedded, logits


LOGIT_BATCH_ROWS = 4096


def read_logits(path: Path, pfile: Any, md: Any, column: str = "logits") -> tuple[Any, Any]:
    """``(lengths int64, flat float64)`` of the ``column`` list column, streamed
    batch by batch into one array sized from the footer's value count: the
    file's float32 lists are never held whole beside their float64 copy
    (50,000 × 1,000 logits: 1.17 GB peak read as a table, ~0.8 GB this way).
    A null list has length -1; a null value inside a list is NaN."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    total = sum(md.row_group(g).column(j).num_values
                for g in range(md.num_row_groups) for j in range(md.row_group(g).num_columns)
                if md.row_group(g).column(j).path_in_schema.split(".")[0] == column)
    flat = np.empty(total, dtype=np.float64)
    lengths = np.empty(md.num_rows, dtype=np.int64)
    row = pos = 0
    for batch in pfile.iter_batches(batch_size=LOGIT_BATCH_ROWS, columns=[column]):
        arr = batch.column(0)
        n = len(arr)
        lengths[row:row + n] = pc.list_value_length(arr).fill_null(-1).to_numpy(
            zero_copy_only=False)
        values = pc.list_flatten(arr).cast(pa.float64()).to_numpy(zero_copy_only=False)
        if pos + len(values) > total or row + n > md.num_rows:
            raise SubmissionError(f"{path}: column {column!r} holds more values than the file's "
                                  f"footer counts; {REWRITE}")
        flat[pos:pos + len(values)] = values
        row += n
        pos += len(values)
    if row != md.num_rows:
        raise SubmissionError(f"{path}: {row} rows of {column} for {md.num_rows} rows; {REWRITE}")
    return lengths, flat[:pos]
