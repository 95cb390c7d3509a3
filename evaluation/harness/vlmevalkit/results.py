"""Reading a VLMEvalKit result file (.tsv, .jsonl or .xlsx) as a stream of rows
bounded by the dataset it answers (issue 41.1).

A result file was read whole and every row kept before anything was checked:
a 10 MB TSV peaked at 3.0 GB and a 280 KB xlsx at 0.9 GB. Now:

- the file's bytes are bounded as ``validate`` bounds a predictions file of
  the dataset (``BYTES_BASE + BYTES_PER_ROW`` per row), and an xlsx's
  unpacked parts likewise, from the zip directory, before openpyxl opens it;
- rows are read one at a time (a physical line of at most ``MAX_FIELD``
  characters), only the columns the import uses are kept, and the read stops
  at the first row beyond the dataset's row count (such a file cannot be a
  result of that dataset: every id appears once).
"""

from __future__ import annotations

import csv
import io
import json
import stat
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
OUR_COLUMNS = ("vlmrobust_id", "vlmrobust_config", "vlmrobust_fingerprint", "vlmrobust_tsv")
# what the import reads of a row; any other column is dropped as it is read
KEPT_COLUMNS = frozenset((*OUR_COLUMNS, "prediction", "question", "answer", *LETTERS))
# a result file holds no images: 256 MiB is far above any real one
MAX_RESULT_BYTES = 256 << 20
MAX_FIELD = 4 << 20
# openpyxl holds an xlsx's shared strings whole: its unpacked parts may be this
# many times the byte bound of the sheet's text
XLSX_EXPANSION = 4
WHAT = "VLMEvalKit result file (which holds no images)"

Located = tuple[str, dict[str, Any]]


def refuse_not_a_file(path: Path, fix: str) -> None:
    """Refuse a path that is absent or not a regular file (a FIFO, a device, a
    folder), by what it is; stat only, so a FIFO is never opened and never blocks."""
    from vlmrobust.core.files.output_guard import kind_of

    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):  # absent, a dangling link, a NUL in the name
        raise VlmrobustError(f"{path}: no such file ({fix})") from None
    if not stat.S_ISREG(mode):
        raise VlmrobustError(f"{path}: {kind_of(mode)}, not a regular file ({fix})")


def located_result_rows(path: str | Path, max_rows: int | None = None,
                        max_bytes: int = MAX_RESULT_BYTES) -> list[Located]:
    """The rows of a result file (the columns the import reads), each with where
    it stands in the file (``line N`` of a .jsonl or .tsv, ``sheet row N`` of an
    .xlsx, 1-based as an editor shows); more than ``max_rows`` rows or
    ``max_bytes`` bytes are refused when met."""
    from vlmrobust.core.files.bounded import open_bounded

    path = Path(path)
    refuse_not_a_file(path, "give VLMEvalKit's <model>_<dataset>.xlsx")
    max_bytes = min(max_bytes, MAX_RESULT_BYTES)
    if path.suffix not in {".tsv", ".jsonl"}:
        with closing(_xlsx_rows(path, max_bytes)) as sheet:
            return _bounded(path, sheet, max_rows)
    # opened without blocking, fstat-checked and bounded: a file swapped for a FIFO
    # or grown after the check above still cannot hang or flood the reader
    with open_bounded(path, max_bytes, WHAT) as fh, \
            closing(_tsv_rows(path, fh) if path.suffix == ".tsv" else _jsonl_rows(path, fh)) as rows:
        return _bounded(path, rows, max_rows)  # a refusal closes the rows before the file


def _bounded(path: Path, rows: Iterable[Located], max_rows: int | None) -> list[Located]:
    out: list[Located] = []
    for loc, row in rows:
        out.append((loc, {k: v for k, v in row.items() if k in KEPT_COLUMNS}))
        if max_rows is not None and len(out) > max_rows:
            raise VlmrobustError(f"{path}: more than {max_rows} rows at {loc}, more than the "
                                 "dataset has; not a result file of this dataset")
    return out


def _lines(path: Path, text: io.TextIOBase) -> Iterator[str]:
    n = 0
    while line := text.readline(MAX_FIELD + 1):
        n += 1
        if len(line) > MAX_FIELD:
            raise VlmrobustError(f"{path} line {n}: over {MAX_FIELD} characters; not a "
                                 "result file VLMEvalKit writes")
        yield line


def _tsv_rows(path: Path, fh: Any) -> Generator[Located, None, None]:
    csv.field_size_limit(MAX_FIELD)
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
    reader = csv.reader(_lines(path, text), delimiter="\t")
    try:
        header = next(reader, [])
        for cells in reader:
            # line_num after a row is its last physical line; a quoted cell may span lines
            yield f"line {reader.line_num}", dict(zip(header, cells, strict=False))
    except csv.Error as exc:
        raise VlmrobustError(f"{path}: not a well-formed TSV ({exc})") from None
    except UnicodeDecodeError:
        raise VlmrobustError(f"{path}: not UTF-8 text (after line {reader.line_num}); save "
                             "the result file as UTF-8") from None
    finally:
        text.detach()  # the caller's context closes the file


def _jsonl_rows(path: Path, fh: Any) -> Generator[Located, None, None]:
    n = 0
    while line := fh.readline(MAX_FIELD + 1):
        n += 1
        if len(line) > MAX_FIELD:
            raise VlmrobustError(f"{path} line {n}: over {MAX_FIELD} bytes")
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise VlmrobustError(f"{path} line {n}: not JSON ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # not UTF-8, a 5,000-digit int,
            # nesting past the recursion limit
            raise VlmrobustError(f"{path} line {n}: not JSON ({type(exc).__name__}: "
                                 f"{str(exc)[:80]})") from None
        if not isinstance(obj, dict):
            raise VlmrobustError(f"{path} line {n}: expected a JSON object")
        yield f"line {n}", obj


def _xlsx_rows(path: Path, max_bytes: int) -> Generator[Located, None, None]:
    import zipfile

    if path.suffix != ".xlsx":
        raise VlmrobustError(f"{path}: VLMEvalKit results are .xlsx, .tsv or .jsonl")
    size = path.stat().st_size
    if size > max_bytes:
        raise VlmrobustError(f"{path}: {size} bytes, over the {max_bytes} byte bound "
                             "for a result file of this dataset (which holds no images)")
    try:
        with zipfile.ZipFile(path) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise VlmrobustError(f"{path}: not a readable .xlsx ({type(exc).__name__})") from None
    if unpacked > XLSX_EXPANSION * max_bytes:
        raise VlmrobustError(f"{path}: unpacks to {unpacked} bytes, over the "
                             f"{XLSX_EXPANSION * max_bytes} allowed for a result file of this "
                             "dataset (a zip bomb, or not this dataset's result)")
    try:
        import openpyxl
    except ModuleNotFoundError:
        raise VlmrobustError(f"{path}: reading .xlsx needs openpyxl (pip install "
                             "'vlmrobust[harness]'), or export the sheet as .tsv") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds on a damaged file
        raise VlmrobustError(f"{path}: not a readable .xlsx ({type(exc).__name__})") from None
    try:
        sheet = book.worksheets[0]
        first = sheet.min_row or 1
        it = sheet.iter_rows(values_only=True)
        header = [str(h) if h is not None else "" for h in next(it, ())]
        for i, r in enumerate(it, start=1):
            if any(v is not None for v in r):
                yield f"sheet row {first + i}", dict(zip(header, r, strict=False))
    finally:
        book.close()
