"""`vlmrobust import vlmevalkit`: a ``prediction`` cell that is not the model's
answer text (a JSON list or object, a null, an xlsx date or true/false cell) is
refused in one line naming the result file and the row as an editor shows it
(the .jsonl/.tsv line, the xlsx sheet row), and nothing is written. A FIFO given
as a result or samples file is named as a FIFO, never opened."""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.evaluation.harness.vlmevalkit.test_bridge import _export, _result_rows, _write_result
from tests.fixtures.score import write_mcq
from tests.fixtures.trust import one_line_error, run_cli

FIX = "the prediction column holds the model's answer text"


@pytest.fixture
def exported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    ds = write_mcq(tmp_path / "ds", n=6, k=4)
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    return ds, tsv


def _import(result: Path, ds: Path, tmp_path: Path,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    preds = tmp_path / "preds.jsonl"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    return rc, err, preds


@pytest.mark.parametrize(("cell", "what"), [(["B"], "a list"), ({"answer": "B"}, "a mapping"),
                                            (None, "empty (null)"), (True, "a true/false")])
def test_jsonl_prediction_that_is_not_text_names_file_and_line(
        exported: tuple[Path, Path], tmp_path: Path, cell: Any, what: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    ds, tsv = exported
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[3]["prediction"] = cell
    result = _write_result(rows, tmp_path / "M_vr-mcq.jsonl")
    # a blank line before the damage: the message counts lines, not records
    lines = result.read_text(encoding="utf-8").splitlines(keepends=True)
    result.write_text("".join([*lines[:2], "\n", *lines[2:]]), encoding="utf-8")
    assert json.loads(result.read_text().splitlines()[4])["prediction"] == cell
    rc, err, preds = _import(result, ds, tmp_path, capsys)
    assert rc == 1, err
    one_line_error(err)
    assert f"{result} line 5 (id {rows[3]['vlmrobust_id']!r})" in err, err
    assert what in err and FIX in err, err
    assert not preds.exists() and not Path(f"{preds}.meta.yaml").exists()


@pytest.mark.parametrize(("cell", "what"), [(datetime.datetime(2026, 11, 26), "a datetime"),
                                            (None, "empty (null)"), (False, "a true/false")])
def test_xlsx_prediction_cell_that_is_not_text_names_the_sheet_row(
        exported: tuple[Path, Path], tmp_path: Path, cell: Any, what: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("openpyxl")
    ds, tsv = exported
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[4]["prediction"] = cell
    result = _write_result(rows, tmp_path / "M_vr-mcq.xlsx")
    rc, err, preds = _import(result, ds, tmp_path, capsys)
    assert rc == 1, err
    one_line_error(err)
    # header in sheet row 1, the fifth record in sheet row 6
    assert f"{result} sheet row 6 (id {rows[4]['vlmrobust_id']!r})" in err, err
    assert what in err and FIX in err, err
    assert not preds.exists()


def test_xlsx_number_cell_is_read_as_the_text_the_sheet_shows(
        exported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pandas writes an all-digit prediction column as numbers: 2.0 is the answer "2"."""
    pytest.importorskip("openpyxl")
    ds, tsv = exported
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[0]["prediction"] = 2.0
    result = _write_result(rows, tmp_path / "M_vr-mcq.xlsx")
    rc, err, preds = _import(result, ds, tmp_path, capsys)
    assert rc == 0, err
    texts = {json.loads(line)["id"]: json.loads(line).get("text")
             for line in preds.read_text().splitlines() if line.strip()}
    assert texts[rows[0]["vlmrobust_id"]] == "2"
    assert texts[rows[1]["vlmrobust_id"]] == rows[1]["answer"]


def test_tsv_row_spanning_lines_is_named_by_its_last_line(
        exported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A quoted TSV cell may hold a newline; the refusal names the physical line."""
    ds, tsv = exported
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[0]["prediction"] = "B\nbecause it is a cat"
    rows[2]["vlmrobust_fingerprint"] = "0" * 64  # refused as another build, on its own line
    result = _write_result(rows, tmp_path / "M_vr-mcq.tsv")
    from vlmrobust.evaluation.harness.vlmevalkit.bridge import located_result_rows

    where = [w for w, _ in located_result_rows(result)]
    assert where[:3] == ["line 3", "line 4", "line 5"]
    rc, err, _ = _import(result, ds, tmp_path, capsys)
    assert rc == 1 and "record 3" in err, err


def test_a_fifo_result_or_samples_file_is_named_a_fifo(
        exported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds, _ = exported
    result = tmp_path / "M_vr-mcq.jsonl"
    os.mkfifo(result)
    rc, err, preds = _import(result, ds, tmp_path, capsys)  # would block if it opened the FIFO
    assert rc == 1
    one_line_error(err)
    assert f"{result}: a FIFO, not a regular file" in err and "no such file" not in err, err
    samples = tmp_path / "20261126_063610_samples_vr_mcq.jsonl"
    os.mkfifo(samples)
    rc, err = run_cli(["import", "lmms-eval", str(samples), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{samples}: a FIFO, not a regular file" in err and "no such file" not in err, err
    assert not preds.exists()


def test_a_fifo_results_json_beside_the_samples_is_named_a_fifo(
        exported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds, _ = exported
    samples = tmp_path / "20261126_063610_samples_vr_mcq.jsonl"
    samples.write_text('{"doc_id": 0}\n')
    results = tmp_path / "20261126_063610_results.json"
    os.mkfifo(results)
    preds = tmp_path / "preds.jsonl"
    rc, err = run_cli(["import", "lmms-eval", str(samples), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert str(results) in err and "not a regular file" in err and "beside it" not in err, err


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_a_result_over_the_bound_is_refused_before_parsing(
        exported: tuple[Path, Path], tmp_path: Path, suffix: str,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import vlmrobust.evaluation.harness.vlmevalkit.results as hv

    ds, tsv = exported
    result = _write_result(_result_rows(tsv, lambda r: r["answer"]), tmp_path / f"M_vr-mcq{suffix}")
    monkeypatch.setattr(hv, "MAX_RESULT_BYTES", result.stat().st_size - 1)
    rc, err, preds = _import(result, ds, tmp_path, capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{result}: {result.stat().st_size} bytes" in err and "result file" in err, err
    assert not preds.exists()
