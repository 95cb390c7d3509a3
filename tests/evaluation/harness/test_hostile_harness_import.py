"""Hostile harness result files (`vlmrobust import vlmevalkit|lmms-eval`): bytes
that are not UTF-8, JSON nested past Python's recursion limit and integers of
more digits than Python converts are one line naming the file and the line,
with nothing written, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.score import write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.harness.lmms_eval.import_ import read_samples

GOOD = json.dumps({"index": 0, "prediction": "A"}).encode() + b"\n"
DAMAGE = {
    "not-utf8": (GOOD + b'{"index": 1, "prediction": "\xff\xfe"}\n', "line 2"),
    "deep": (GOOD + b"[" * 100_000 + b"]" * 100_000 + b"\n", "line 2"),
    "big-int": (GOOD + b'{"index": ' + b"9" * 5000 + b"}\n", "line 2"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_vlmevalkit_jsonl_damage_is_one_line(tmp_path: Path, damage: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    content, where = DAMAGE[damage]
    result = tmp_path / "M_vr-mcq.jsonl"
    result.write_bytes(content)
    preds = tmp_path / "out" / "preds.parquet"
    preds.parent.mkdir()
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{result} {where}: not JSON" in err and len(err) < 600, err
    assert not any(preds.parent.iterdir())


def test_vlmevalkit_tsv_not_utf8_is_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    result = tmp_path / "M_vr-mcq.tsv"
    result.write_bytes(b"index\tprediction\n0\tA\n1\t\xff\n")
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"{result}: not UTF-8 text (" in err, err
    assert not preds.exists()


@pytest.mark.parametrize("damage", ["deep", "big-int"])
def test_lmms_eval_samples_damage_is_one_line(tmp_path: Path, damage: str) -> None:
    content, where = DAMAGE[damage]
    samples = tmp_path / "20261126_063610_samples_t.jsonl"
    samples.write_bytes(content.replace(b'"index"', b'"doc_id"'))
    with pytest.raises(VlmrobustError, match=rf"{samples} {where}: not JSON") as exc:
        read_samples(samples, max_rows=10)
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 600


@pytest.mark.parametrize("harness", ["vlmevalkit", "lmms-eval"])
def test_import_out_must_be_a_predictions_file_name(tmp_path: Path, harness: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_mcq(tmp_path / "ds", n=3, k=4)
    result = tmp_path / ("M_vr-mcq.jsonl" if harness == "vlmevalkit"
                         else "20261126_063610_samples_t.jsonl")
    result.write_bytes(GOOD)
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    rc, err = run_cli(["import", harness, str(result), "--dataset", str(ds), "--out",
                       str(notes)], capsys)
    assert rc == 1
    one_line_error(err)
    assert f"--out {notes}: use a .parquet (or .jsonl) file name" in err, err
    assert notes.read_text() == "mine\n"
