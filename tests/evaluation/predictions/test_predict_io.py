"""The resumable journal and the predictions writers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.write import (
    JournalWriter,
    predictions_table,
    read_journal,
    read_journal_rows,
    start_journal,
    write_predictions,
)

float32s = st.floats(width=32, allow_nan=False)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(float32s, min_size=1, max_size=6), min_size=1, max_size=5))
def test_journal_round_trips_float32_exactly(tmp_path_factory: pytest.TempPathFactory,
                                             logits: list[list[float]]) -> None:
    pdir = tmp_path_factory.mktemp("j")
    writer = JournalWriter(pdir / "rank-0-of-1.jsonl")
    rows = [(i, f"id{i}", np.asarray(v, np.float32)) for i, v in enumerate(logits)]
    writer.append(rows[:2])
    writer.append(rows[2:])
    writer.close()
    done = read_journal(pdir)
    assert sorted(done) == list(range(len(logits)))
    for i, v in enumerate(logits):
        assert done[i][0] == f"id{i}"
        np.testing.assert_array_equal(np.asarray(done[i][1], np.float32),
                                      np.asarray(v, np.float32))


def test_cut_line_is_dropped_and_truncated(tmp_path: Path) -> None:
    path = tmp_path / "rank-0-of-1.jsonl"
    w = JournalWriter(path)
    w.append([(0, "a", np.array([1.5], np.float32))])
    w.close()
    with path.open("ab") as f:
        f.write(b'{"rows": [[1, "b", [2.0')
    assert set(read_journal(tmp_path)) == {0}
    w = JournalWriter(path)  # truncates the cut line before appending
    w.append([(1, "b", np.array([2.0], np.float32))])
    w.close()
    assert path.read_text().count("\n") == 2
    assert read_journal(tmp_path)[1] == ("b", [2.0])


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "rank-0-of-1.jsonl").write_text('{"rows": [[0, "a", [1.0]]]}\nnot json\n')
    with pytest.raises(VlmrobustError, match="line 2: corrupt journal line"):
        read_journal(tmp_path)


def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rank-0-of-1.jsonl"
    first = JournalWriter(path)
    with pytest.raises(VlmrobustError, match="another running predict"):
        JournalWriter(path)
    first.close()
    JournalWriter(path).close()


def test_run_key_mismatch(tmp_path: Path) -> None:
    start_journal(tmp_path / "p", {"model": "m", "limit": None})
    start_journal(tmp_path / "p", {"model": "m", "limit": None})  # same run: resume
    with pytest.raises(VlmrobustError, match="different model"):
        start_journal(tmp_path / "p", {"model": "other", "limit": None})


def test_parquet_and_jsonl_writers(tmp_path: Path) -> None:
    table = predictions_table(["a", "b"], ["c1", "c2"], [[1.0, 2.0], [3.0]])
    meta = {"model": "m", "family": "other",
            "dataset": {"name": "d", "version": "1", "fingerprint": "ab" * 32}}
    write_predictions(tmp_path / "p.parquet", table, meta)
    assert read_prediction_meta(tmp_path / "p.parquet") == meta  # embedded, no sidecar
    assert not (tmp_path / "p.parquet.meta.yaml").exists()
    back = pq.read_table(tmp_path / "p.parquet")
    assert back.to_pylist() == [{"id": "a", "logits": [1.0, 2.0], "config": "c1"},
                                {"id": "b", "logits": [3.0], "config": "c2"}]
    assert str(back.schema.field("logits").type) == "list<element: float>"
    write_predictions(tmp_path / "p.jsonl", table, meta)
    assert read_prediction_meta(tmp_path / "p.jsonl") == meta  # from p.jsonl.meta.yaml
    lines = [json.loads(x) for x in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert lines == back.to_pylist()
    assert not list(tmp_path.glob(".*tmp"))


def test_journal_of_an_earlier_version_is_still_read(tmp_path: Path) -> None:
    """Logits journaled as a decimal list (before base64 float32) read back as float32."""
    (tmp_path / "rank-0-of-1.jsonl").write_text('{"rows": [[0, "a", [1.5, -0.1]]]}\n')
    logits = read_journal_rows(tmp_path)[0][1]
    assert logits is not None and logits.dtype == np.float32
    np.testing.assert_array_equal(logits, np.array([1.5, -0.1], np.float32))


def test_journal_logits_are_base64_float32(tmp_path: Path) -> None:
    import base64

    w = JournalWriter(tmp_path / "rank-0-of-1.jsonl")
    v = np.array([0.1, -3e38, np.float32(1) / 3], np.float32)
    w.append([(0, "a", v)])
    w.close()
    entry = json.loads((tmp_path / "rank-0-of-1.jsonl").read_text())["rows"][0][2]
    assert np.frombuffer(base64.b64decode(entry["f32"]), "<f4").tolist() == v.tolist()


def test_large_tables_are_written_in_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    from vlmrobust.evaluation.predictions import write as predictions_io
    from vlmrobust.evaluation.predictions.read import read_predictions

    monkeypatch.setattr(predictions_io, "ROW_GROUP_BYTES", 3 * (4 * 1000 + 64))  # 3 rows
    z = np.random.default_rng(0).normal(size=(10, 1000)).astype(np.float32)
    table = predictions_table([f"r{i}" for i in range(10)], ["c"] * 10, list(z))
    out = tmp_path / "p.parquet"
    write_predictions(out, table, {"model": "m", "family": "other"})
    assert pq.ParquetFile(out).metadata.num_row_groups == 4  # 3 + 3 + 3 + 1 rows
    pf = read_predictions(out)
    assert pf.logits_flat is not None
    np.testing.assert_array_equal(pf.logits_flat.reshape(10, 1000), z)


def test_streamed_logits_keep_nulls_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    """Logits read batch by batch: a null list has length -1, a null value is NaN,
    integer logits widen, across read batches (as the whole-table read gave)."""
    import pyarrow as pa

    from vlmrobust.evaluation.predictions import parquet as predictions_parquet
    from vlmrobust.evaluation.predictions.read import predictions_from_table, read_predictions

    monkeypatch.setattr(predictions_parquet, "LOGIT_BATCH_ROWS", 2)
    values = [[1, 2], None, [3, None], [], [4, 5, 6]]
    table = pa.table({"id": [f"r{i}" for i in range(5)],
                      "logits": pa.array(values, pa.list_(pa.int32()))})
    out = tmp_path / "p.parquet"
    pq.write_table(table, out)
    pf = read_predictions(out)
    whole = predictions_from_table(table)
    assert pf.logits_len is not None and pf.logits_flat is not None
    assert pf.logits_len.tolist() == [2, -1, 2, 0, 3] == whole.logits_len.tolist()  # type: ignore[union-attr]
    np.testing.assert_array_equal(pf.logits_flat, [1, 2, 3, np.nan, 4, 5, 6])
    np.testing.assert_array_equal(pf.logits_flat, whole.logits_flat)  # type: ignore[arg-type]
