"""VLMEvalKit bridge: export a dataset as VLMEvalKit's custom-MCQ TSV, turn a
result file in VLMEvalKit's layout (the exported columns minus the image, plus
its raw ``prediction``) back into predictions, and score them."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.score import dataset_rows, write_mcq
from tests.fixtures.trust import one_line_error, run_cli
from vlmrobust.evaluation.predictions.meta import read_prediction_meta as read_meta

LETTERS = "ABCDE"


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    return write_mcq(tmp_path / "ds", n=6, k=4)


def _export(ds: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    from vlmrobust.cli import main

    assert main(["export", "vlmevalkit", str(ds), "--out", str(out), *extra]) == 0
    return capsys.readouterr().out


def _tsv(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 24)
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _result_rows(tsv: Path, answer: Any) -> list[dict[str, Any]]:
    """What VLMEvalKit's inference writes: every TSV column but the image, plus
    ``prediction``, the model's raw output (here ``answer(row)``)."""
    rows = []
    for r in _tsv(tsv):
        r = {k: v for k, v in r.items() if k != "image"}
        r["prediction"] = answer(r)
        rows.append(r)
    return rows


def _write_result(rows: list[dict[str, Any]], path: Path) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".tsv":
        with path.open("w", encoding="utf-8", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
            w.writeheader()
            w.writerows(rows)
    else:
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(list(rows[0]))
        for r in rows:
            sheet.append([int(v) if k == "index" else v for k, v in r.items()])
        book.save(path)
    return path


def test_export_is_vlmevalkit_mcq_tsv(ds: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "vr-mcq.tsv"
    printed = _export(ds, out, capsys)
    assert hashlib.md5(out.read_bytes(), usedforsecurity=False).hexdigest() in printed
    rows = _tsv(out)
    truth = dataset_rows(ds)
    assert [r["vlmrobust_id"] for r in rows] == [t["id"] for t in truth]
    assert [r["index"] for r in rows] == [str(i) for i in range(len(truth))]
    from vlmrobust.core.datadir import read_manifest, read_table

    fingerprint = read_manifest(ds)["fingerprint"]
    images = {}
    for config in ("sample-photo-random", "sample-rendition-random"):
        for r in read_table(ds, config, ["id", "image", "options"]).to_pylist():
            images[r["id"]] = (r["image"]["bytes"], r["options"])
    for r, t in zip(rows, truth, strict=True):
        raw, options = images[t["id"]]
        assert base64.b64decode(r["image"]) == raw
        assert [r[x] for x in LETTERS[: t["k"]]] == options
        assert r["answer"] == LETTERS[t["answer"]]
        assert r["category"] == r["vlmrobust_config"] == t["config"]
        assert r["vlmrobust_fingerprint"] == fingerprint and r["vlmrobust_tsv"] == "vr-mcq"


def test_export_prompt_rewrites_options(ds: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.models.prompts import SEED_PROMPTS

    out = tmp_path / "p.tsv"
    _export(ds, out, capsys, "--prompt", "photo-of")
    first = _tsv(out)[0]
    _, options = SEED_PROMPTS["photo-of"].vlm_texts("q", ["class 0", "class 1"])
    assert [first["A"], first["B"]] == options and first["A"] != "class 0"


@pytest.mark.parametrize("suffix", [".xlsx", ".tsv", ".jsonl"])
def test_result_round_trip_scores_by_our_matcher(ds: Path, tmp_path: Path, suffix: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    truth = {t["id"]: t for t in dataset_rows(ds)}

    def answer(r: dict[str, str]) -> str:
        i = int(r["index"])
        right = LETTERS.index(r["answer"])
        if i % 3 == 0:
            return f"The answer is {r['answer']}."      # right, by letter
        if i % 3 == 1:
            return r[LETTERS[(right + 1) % 4]]           # wrong, by option text
        return "I cannot tell from this picture."        # no answer

    rows = _result_rows(tsv, answer)
    result = _write_result(rows, tmp_path / f"Tiny-VLM_vr-mcq{suffix}")
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds), "--harness-version", "v0.2"], capsys)
    assert rc == 0, err
    meta = read_meta(preds)
    assert meta["model"] == "Tiny-VLM" and meta["family"] == "vlm"
    assert meta["harness"]["name"] == "vlmevalkit" and meta["harness"]["version"] == "v0.2"
    assert meta["harness"]["result_sha256"] == hashlib.sha256(result.read_bytes()).hexdigest()
    scores_path = tmp_path / "scores.json"
    rc, err = run_cli(["score", "--dataset", str(ds), "--predictions", str(preds), "--out",
                       str(scores_path)], capsys)
    assert rc == 0, err
    n = len(truth)
    expected_right = sum(1 for i in range(n) if i % 3 == 0)
    expected_none = sum(1 for i in range(n) if i % 3 == 2)
    section = json.loads(scores_path.read_text())["datasets"]["imagenet-mcq"]
    assert section["has_text"] and not section["has_logits"]
    assert section["no_answer"] == expected_none
    per = section["configs"].values()
    right = sum(c["accuracy"] * c["n"] for c in per)
    assert sum(c["n"] for c in per) == n and right == pytest.approx(expected_right)


def test_refuses_another_build_and_writes_nothing(ds: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[3]["vlmrobust_fingerprint"] = "0" * 64
    result = _write_result(rows, tmp_path / "M_vr-mcq.jsonl")
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1 and "record 4 (id " in err and "000000000000" in err, err
    one_line_error(err)
    assert not preds.exists()


@pytest.mark.parametrize("damage", ["missing_row", "unknown_id", "no_id_column"])
def test_refuses_rows_validate_would_refuse(ds: Path, tmp_path: Path, damage: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    rows = _result_rows(tsv, lambda r: r["answer"])
    if damage == "missing_row":
        rows.pop(2)
    elif damage == "unknown_id":
        rows[2]["vlmrobust_id"] = "not-a-row"
    else:
        for r in rows:
            del r["vlmrobust_id"]
    result = _write_result(rows, tmp_path / "M_vr-mcq.tsv")
    preds = tmp_path / "preds.jsonl"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1, err
    one_line_error(err)
    expect = {"missing_row": "sample-photo-002", "unknown_id": "not-a-row",
              "no_id_column": "vlmrobust_id"}[damage]
    assert expect in err
    assert str(preds) not in err  # the result file is named, not the unwritten output
    if damage != "no_id_column":
        assert err.startswith(f"error: {result} does not match"), err
    assert not preds.exists() and not Path(f"{preds}.meta.yaml").exists()


def test_model_name_needed_when_file_name_does_not_give_it(
        ds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    result = _write_result(_result_rows(tsv, lambda r: r["answer"]), tmp_path / "results.jsonl")
    preds = tmp_path / "preds.parquet"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1 and "--model" in err
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds), "--model", "My VLM"], capsys)
    assert rc == 0, err
    assert read_meta(preds)["model"] == "My VLM"


@pytest.mark.parametrize("suffix", [".xlsx", ".jsonl"])
@pytest.mark.parametrize("column", ["question", "B", "answer"])
def test_refuses_a_result_whose_shown_row_was_edited(ds: Path, tmp_path: Path, suffix: str,
                                                     column: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A forged row (its question, an option or the answer edited after the run)
    is refused in one line naming the record and the column; nothing is written."""
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    rows = _result_rows(tsv, lambda r: r["answer"])
    rows[2][column] = {"question": "What is this really?", "B": "a forged option",
                       "answer": "D" if rows[2]["answer"] != "D" else "A"}[column]
    result = _write_result(rows, tmp_path / f"M_vr-mcq{suffix}")
    preds = tmp_path / "preds.jsonl"
    rc, err = run_cli(["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out",
                       str(preds)], capsys)
    assert rc == 1, err
    one_line_error(err)
    assert "record 3" in err and f"its {column!r} differs" in err
    assert not preds.exists()


def test_a_prompt_rewritten_export_imports_with_its_prompt(ds: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys, "--prompt", "photo-of")
    result = _write_result(_result_rows(tsv, lambda r: r["answer"]), tmp_path / "M_vr-mcq.jsonl")
    argv = ["import", "vlmevalkit", str(result), "--dataset", str(ds), "--out"]
    rc, err = run_cli([*argv, str(tmp_path / "a.jsonl")], capsys)
    assert rc == 1 and "--prompt" in err, err
    assert not (tmp_path / "a.jsonl").exists()
    rc, err = run_cli([*argv, str(tmp_path / "b.jsonl"), "--prompt", "photo-of"], capsys)
    assert rc == 0, err
    meta = read_meta(tmp_path / "b.jsonl")
    assert meta["prompt_id"] == "photo-of" and meta["dataset"]["name"] == "imagenet-mcq"
    truth = {t["id"]: LETTERS[t["answer"]] for t in dataset_rows(ds)}
    lines = (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(x)["id"]: json.loads(x)["text"] for x in lines} == truth


def test_an_exported_tsv_converts_back_to_the_same_questions(ds: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Done-when of issue 26: an exported TSV read back by our own `convert
    vlmevalkit-tsv` gives the same questions, options, answers and image bytes."""
    from vlmrobust.cli import main
    from vlmrobust.core.datadir import config_names, read_table

    tsv = tmp_path / "vr-mcq.tsv"
    _export(ds, tsv, capsys)
    out = tmp_path / "back"
    assert main(["convert", "vlmevalkit-tsv", str(tsv), "--out", str(out)]) == 0, \
        capsys.readouterr().err
    cols = ["question", "options", "answer", "image"]
    want = [r for c in config_names(ds) for r in read_table(ds, c, cols).to_pylist()]
    got = [r for c in config_names(out) for r in read_table(out, c, cols).to_pylist()]
    assert len(got) == len(want) == 12  # 2 configs x 6 rows
    key = lambda r: (r["question"], tuple(r["options"]))  # noqa: E731
    for a, b in zip(sorted(want, key=key), sorted(got, key=key), strict=True):
        assert (a["question"], a["options"], a["answer"]) == (b["question"], b["options"], b["answer"])
        assert a["image"]["bytes"] == b["image"]["bytes"]


def test_export_refuses_a_label_space_dataset_in_one_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A classification dataset has no options to letter: one line, no file (it
    raised KeyError 'options' once)."""
    from tests.fixtures.classification import write_classification

    cls = write_classification(tmp_path / "cls", n=2, k=3)
    out = tmp_path / "out" / "cls.tsv"
    out.parent.mkdir()
    rc, err = run_cli(["export", "vlmevalkit", str(cls), "--out", str(out)], capsys)
    assert rc == 1 and "no answer, options, question column" in err, err
    assert "multiple-choice datasets" in err
    one_line_error(err)
    assert list(out.parent.iterdir()) == []
