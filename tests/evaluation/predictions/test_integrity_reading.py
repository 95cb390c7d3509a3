"""Issue 28.10/28.11/28.17: predictions are read within a decoded-size bound
(only the format's columns, dictionary expansion counted before decoding,
JSONL streamed), parquet page checksums are written and verified, and a JSONL
string may hold U+2028."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vlmrobust
from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_bench_c,
    write_jsonl,
    write_mcq,
    write_meta,
)
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.datadir import read_table, shard_paths
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.evaluation.predictions.jsonl import MAX_LINE_BYTES
from vlmrobust.evaluation.predictions.meta import PARQUET_META_KEY, read_prediction_meta
from vlmrobust.evaluation.validate.check import validate


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


def _with_meta(mcq: Path, tmp: Path, table: pa.Table) -> pa.Table:
    meta = read_prediction_meta(perfect_predictions(mcq, tmp / "meta-source.parquet"))
    return table.replace_schema_metadata({PARQUET_META_KEY: json.dumps(meta).encode()})


def _perfect_table(mcq: Path) -> pa.Table:
    rows = dataset_rows(mcq)
    return pa.table({"id": [r["id"] for r in rows],
                     "logits": [[10.0 if j == r["answer"] else 0.0 for j in range(r["k"])]
                                for r in rows]})


def _flip_middle(path: Path, n: int = 64) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    for i in range(mid, mid + n):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _flip_in_column(path: Path, column: int, n: int = 64) -> None:
    """Flip ``n`` bytes at the end of a column chunk's last page: its values,
    not a page header, so that the damage decodes unless a checksum catches it."""
    md = pq.ParquetFile(path).metadata.row_group(0).column(column)
    start = md.dictionary_page_offset if md.has_dictionary_page else md.data_page_offset
    end = start + md.total_compressed_size
    data = bytearray(path.read_bytes())
    for i in range(end - n - 8, end - 8):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_extra_column_is_never_decoded(mcq: Path, tmp_path: Path) -> None:
    """An extra column whose pages are damaged does not stop a valid file: it
    is not read at all (today every column was decoded, so a 0.5 MB string in
    every row of an extra column cost gigabytes)."""
    table = _perfect_table(mcq)
    table = table.append_column("junk", pa.array([f"{i}" + "x" * 20_000 for i in range(table.num_rows)]))
    p = tmp_path / "extra.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p, compression="none", use_dictionary=False,
                   write_page_checksum=True)
    md = pq.ParquetFile(p).metadata.row_group(0).column(2)
    data = bytearray(p.read_bytes())
    for i in range(md.data_page_offset, md.data_page_offset + 16):  # its page header
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(OSError):  # the damage is real: reading every column fails
        pq.read_table(p)
    report = validate(mcq, p)
    assert report.index.n_rows == table.num_rows


def test_dictionary_id_bomb_is_refused_before_expansion(mcq: Path, tmp_path: Path) -> None:
    """A 2 MB id repeated in 100 rows is stored once (dictionary) and would
    decode to 200 MB: refused from the dictionary's lengths."""
    n = 100
    table = pa.table({"id": pa.array(["i" * (2 << 20)] * n), "logits": pa.array([[0.0] * 5] * n)})
    p = tmp_path / "bomb.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p, compression="zstd")
    assert p.stat().st_size < 1 << 20
    with pytest.raises(SubmissionError, match="column 'id' decodes to more than"):
        validate(mcq, p)


def test_prefix_shared_strings_are_refused(mcq: Path, tmp_path: Path) -> None:
    n = 100
    table = pa.table({"id": pa.array(["i" * (1 << 20)] * n), "logits": pa.array([[0.0] * 5] * n)})
    p = tmp_path / "delta.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p, compression="zstd", use_dictionary=False,
                   column_encoding={"id": "DELTA_BYTE_ARRAY"})
    with pytest.raises(SubmissionError, match="DELTA_BYTE_ARRAY"):
        validate(mcq, p)


def test_run_length_logits_bomb_is_refused_from_the_footer(mcq: Path, tmp_path: Path) -> None:
    """Ten million zeros in one row's logits compress to almost nothing."""
    table = pa.table({"id": pa.array(["x"]), "logits": pa.array([[0.0] * 10_000_000])})
    p = tmp_path / "rle.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p, compression="zstd")
    assert p.stat().st_size < 1 << 20
    with pytest.raises(SubmissionError, match="decode to more than"):
        validate(mcq, p)


def test_parquet_with_more_logits_than_options_is_refused_from_the_footer(mcq: Path, tmp_path: Path) -> None:
    rows = _perfect_table(mcq).num_rows
    table = pa.table({"id": [f"r{i}" for i in range(rows)], "logits": pa.array([[0.0] * 500] * rows)})
    p = tmp_path / "wide.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p)
    with pytest.raises(SubmissionError, match=f"{rows * 500} logits in {rows} rows, more than the 5"):
        validate(mcq, p)


def test_wrong_column_type_is_refused_before_reading(mcq: Path, tmp_path: Path) -> None:
    table = pa.table({"id": pa.array(["a"]), "logits": pa.array([["x" * 100]])})
    p = tmp_path / "strs.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, table), p)
    with pytest.raises(SubmissionError, match="expected a list of floats"):
        validate(mcq, p)


def test_predictions_are_written_with_page_checksums(mcq: Path, tmp_path: Path) -> None:
    p = perfect_predictions(mcq, tmp_path / "p.parquet")
    _flip_in_column(p, 1, 8)
    with pytest.raises(OSError, match="CRC checksum"):
        pq.read_table(p, page_checksum_verification=True)


@pytest.mark.parametrize("command", ["validate", "score", "submit"])
def test_flipped_bytes_are_refused_in_one_line(command: str, mcq: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """64 bytes flipped in the middle of a predictions file (logits pages, zstd
    that still decodes) are refused by every command that reads it."""
    p = tmp_path / "p.parquet"
    table = _perfect_table(mcq)
    meta = read_prediction_meta(perfect_predictions(mcq, tmp_path / "src.parquet"))
    big = table.set_column(1, "logits", pa.array(
        [[float(i % 7) + j / 10 for j in range(len(v))] for i, v in enumerate(table.column("logits").to_pylist())],
        pa.list_(pa.float64())))
    pq.write_table(big.replace_schema_metadata({PARQUET_META_KEY: json.dumps(meta).encode()}), p,
                   compression="none", use_dictionary=False, write_page_checksum=True)
    _flip_in_column(p, 1)
    assert pq.read_table(p).num_rows == table.num_rows  # unverified, it reads
    argv = {"validate": ["validate", "--dataset", str(mcq), "--predictions", str(p)],
            "score": ["score", "--dataset", str(mcq), "--predictions", str(p),
                      "--out", str(tmp_path / "s.json")],
            "submit": ["submit", "--dataset", str(mcq), "--predictions", str(p),
                       "--submissions", str(tmp_path / "subs"), "--model-id", "m"]}[command]
    rc, err = run_cli(argv, capsys)
    assert rc == 1
    one_line_error(err)
    assert "checksum does not match" in err
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "subs" / "m").exists()


def test_old_files_without_checksums_are_accepted(mcq: Path, tmp_path: Path) -> None:
    p = tmp_path / "old.parquet"
    pq.write_table(_with_meta(mcq, tmp_path, _perfect_table(mcq)), p, write_page_checksum=False)
    assert validate(mcq, p).index.n_rows == len(dataset_rows(mcq))


def test_dataset_shards_carry_and_verify_checksums(tmp_path: Path) -> None:
    ds = write_bench_c(tmp_path / "bc")
    shard = shard_paths(ds, "default")[0]
    _flip_middle(shard)
    with pytest.raises(VlmrobustError, match="damaged"):
        read_table(ds, "default")


def test_jsonl_string_with_line_separator_is_accepted(mcq: Path, tmp_path: Path) -> None:
    """U+2028 inside a JSON string is one line (json.loads per \\n-ended line)."""
    rows = dataset_rows(mcq)
    recs = [{"id": r["id"], "logits": [1.0 if j == r["answer"] else 0.0 for j in range(r["k"])],
             "note": "a\u2028b\u0085c"} for r in rows]
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    write_meta(p, mcq)
    assert "\u2028" in p.read_text(encoding="utf-8")
    assert validate(mcq, p).index.n_rows == len(rows)


def test_jsonl_overlong_line_is_refused_when_met(mcq: Path, tmp_path: Path) -> None:
    p = tmp_path / "long.jsonl"
    p.write_bytes(b'{"id": "a", "logits": [' + b"0," * MAX_LINE_BYTES + b"0]}\n")
    write_meta(p, mcq)
    with pytest.raises(SubmissionError, match="line 1 is longer than"):
        validate(mcq, p)


def test_jsonl_row_with_more_logits_than_options_stops_the_read(mcq: Path, tmp_path: Path) -> None:
    """Refused at the line that holds it (the dataset has 5 options per question),
    not after the rest of the file has been parsed."""
    p = tmp_path / "wide.jsonl"
    p.write_bytes(b'{"id": "a", "logits": [' + b"0," * 5000 + b'0]}\n' + b"not json\n" * 20)
    write_meta(p, mcq)
    with pytest.raises(SubmissionError, match="line 1 has 5001 logits, more than the 5 options"):
        validate(mcq, p)


def test_jsonl_many_junk_lines_stop_early(mcq: Path, tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "junk.jsonl", [])
    p.write_bytes(b"[1]\n" * 50)
    write_meta(p, mcq)
    with pytest.raises(SubmissionError, match="line is not a JSON object"):
        validate(mcq, p)
    p.write_bytes(b"[1]\n" * 1_050)
    with pytest.raises(SubmissionError, match=r"more than .* rows allowed|more than 1000 lines"):
        validate(mcq, p)


def test_any_64_flipped_bytes_are_refused_or_harmless(mcq: Path, tmp_path: Path) -> None:
    """Flip 64 bytes at every 64th offset of a predictions file as the project
    writes it: each copy is refused in one SubmissionError, or (damage in unread
    statistics) validates to exactly the original logits. Never a changed logit."""
    rows = dataset_rows(mcq)
    # random float32 logits: zstd stores them as a raw block, where a flip decodes
    src = vlmrobust.write_predictions(mcq, [r["id"] for r in rows], random_logits(rows),
                                      model="m", family="other", out=tmp_path / "p.parquet")
    good = validate(mcq, src).aligned.logits
    data = src.read_bytes()
    refused = harmless = 0
    for start in range(0, len(data) - 64, 64):
        bad = bytearray(data)
        for i in range(start, start + 64):
            bad[i] ^= 0xFF
        p = tmp_path / "flip.parquet"
        p.write_bytes(bytes(bad))
        try:
            logits = validate(mcq, p).aligned.logits
        except SubmissionError:
            refused += 1
            continue
        assert logits is not None and good is not None and (logits == good).all(), start
        harmless += 1
    assert refused > 0
    print(f"{refused} damaged copies refused, {harmless} harmless")
