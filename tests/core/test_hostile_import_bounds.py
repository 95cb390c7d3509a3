"""Hostile harness logs (issue 40.14, 41.1): a loss of 400 digits and a
response longer than validate allows are one line naming the file and line,
nothing written; samples are streamed (tests/perf has the memory figure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.evaluation.harness.lmms_eval.test_bridge import CONFIGS, _export, _import, _log, _losses
from tests.fixtures.trust import one_line_error
from vlmrobust.evaluation.predictions.jsonl import MAX_TEXT_CHARS


@pytest.mark.parametrize("damage", ["400-digit-int", "long-text"])
def test_lmms_eval_hostile_values(tmp_path: Path, damage: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fixtures.score import write_mcq

    ds = write_mcq(tmp_path / "ds", n=6, k=4)
    tasks = tmp_path / "tasks"
    _export(ds, tasks, capsys)
    if damage == "400-digit-int":
        (path,) = _log(ds, tasks, tmp_path / "logs", "multiple_choice", _losses,
                       configs=CONFIGS[:1])
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        lines[1]["filtered_resps"][0] = [int("9" * 400), False]  # float() overflows
        expect = "line 2: a log-likelihood response is"
    else:
        (path,) = _log(ds, tasks, tmp_path / "logs", "generate_until",
                       lambda i, doc: "A", configs=CONFIGS[:1])
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        lines[2]["filtered_resps"] = "A" + "x" * MAX_TEXT_CHARS
        expect = f"line 3: row 'sample-photo-002'\\'s response is over {MAX_TEXT_CHARS}"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    preds = tmp_path / "preds.parquet"
    rc, err = _import([path], ds, preds, capsys)
    assert rc == 1, err
    one_line_error(err)
    assert expect.replace("\\'", "'") in err and "Traceback" not in err, err
    assert not preds.exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".tsv"])
def test_vlmevalkit_rows_beyond_the_dataset_stop_the_read(
        tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]) -> None:
    """41.1: every row was read and kept before any check (a 10 MB TSV: 3.0 GB);
    the read now stops at the first row the dataset cannot have."""
    from tests.fixtures.score import write_mcq
    from tests.fixtures.trust import run_cli

    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    n = sum(json.loads((ds / "manifest.json").read_text())["configs"].values())
    result = tmp_path / f"M_vr-mcq{suffix}"
    if suffix == ".jsonl":
        result.write_text("".join(json.dumps({"vlmrobust_id": f"x{i}", "prediction": "A",
                                              "pad": "p" * 100}) + "\n" for i in range(n + 5)))
    else:
        result.write_text("vlmrobust_id\tprediction\tpad\n"
                          + "".join(f"x{i}\tA\t{'p' * 100}\n" for i in range(n + 5)))
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{result}: more than {n} rows at line {n + 2 - (suffix == '.jsonl')}" in err, err
    assert not preds.exists()


def test_vlmevalkit_xlsx_that_unpacks_beyond_the_bound(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """41.1: a 280 KB xlsx peaked at 0.9 GB inside openpyxl; its unpacked size is
    read from the zip directory and refused first."""
    import zipfile

    from tests.fixtures.score import write_mcq
    from tests.fixtures.trust import run_cli
    from vlmrobust.evaluation.harness.vlmevalkit.results import XLSX_EXPANSION
    from vlmrobust.evaluation.validate.dataset_index import BYTES_BASE, BYTES_PER_ROW

    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    n = sum(json.loads((ds / "manifest.json").read_text())["configs"].values())
    bound = XLSX_EXPANSION * (BYTES_BASE + BYTES_PER_ROW * n)
    result = tmp_path / "M_vr-mcq.xlsx"
    block = b"<si><t>x</t></si>" * 4096
    with zipfile.ZipFile(result, "w", compression=zipfile.ZIP_DEFLATED) as z, \
            z.open("xl/sharedStrings.xml", "w") as part:
        for _ in range(bound // len(block) + 1):
            part.write(block)
    assert result.stat().st_size < bound // 100
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{result}: unpacks to" in err and "zip bomb" in err, err
    assert not preds.exists()
