"""validate/score on a corpus of broken predictions files: never a traceback,
always a clear one-line message, exit code 1 through the CLI, nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_bench_c,
    write_jsonl,
    write_mcq,
    write_meta,
    write_parquet,
)
from vlmrobust.cli import main
from vlmrobust.core.errors import SubmissionError, VlmrobustError
from vlmrobust.evaluation.validate.check import validate


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq")


@pytest.fixture(scope="module")
def bench_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bench_c(tmp_path_factory.mktemp("ds") / "bench-c")


def _valid(dataset: Path) -> tuple[list[str], list[list[float]]]:
    rows = dataset_rows(dataset)
    return [r["id"] for r in rows], random_logits(rows)


def _truncated(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    p = write_parquet(d / "p.parquet", ids, logits)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    return p


def _int_ids(d: Path, ds: Path) -> Path:
    _, logits = _valid(ds)
    return write_parquet(d / "p.parquet", list(range(len(logits))), logits)


def _string_logits(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    return write_parquet(d / "p.parquet", ids, [json.dumps(x) for x in logits])


def _jsonl_string_logits(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    recs: list[dict[str, Any]] = [{"id": i, "logits": x} for i, x in zip(ids, logits, strict=True)]
    recs[3]["logits"] = ["a", "b"]
    recs[5]["id"] = 17
    return write_jsonl(d / "p.jsonl", recs)


def _nan_inf(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    logits[2][0] = float("nan")
    logits[4][1] = float("inf")
    return write_parquet(d / "p.parquet", ids, logits)


def _null_in_list(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    logits[1][0] = None  # type: ignore[call-overload]
    return write_parquet(d / "p.parquet", ids, logits)


def _duplicate(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    return write_parquet(d / "p.parquet", [*ids, ids[0]], [*logits, logits[0]])


def _missing(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    return write_parquet(d / "p.parquet", ids[:-3], logits[:-3])


def _unknown(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    return write_parquet(d / "p.parquet", [*ids, "nope"], [*logits, logits[0]])


def _wrong_k(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    logits[0] = logits[0][:-1]
    return write_parquet(d / "p.parquet", ids, logits)


def _not_json(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    p = write_jsonl(d / "p.jsonl", [{"id": i, "logits": x} for i, x in zip(ids, logits, strict=True)])
    lines = p.read_text().splitlines()
    lines[2] = '{"id": "broken", "logits": [1.0,'
    p.write_text("\n".join(lines) + "\n")
    return p


def _array_line(d: Path, ds: Path) -> Path:
    p = d / "p.jsonl"
    p.write_text('[1, 2, 3]\n')
    return p


def _empty(suffix: str) -> Callable[[Path, Path], Path]:
    def make(d: Path, ds: Path) -> Path:
        p = d / f"p{suffix}"
        p.write_bytes(b"")
        return p
    return make


def _blank_jsonl(d: Path, ds: Path) -> Path:
    p = d / "p.jsonl"
    p.write_text("\n  \n\n")
    return p


def _zero_rows(d: Path, ds: Path) -> Path:
    p = d / "p.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.string()),
                             "logits": pa.array([], pa.list_(pa.float32()))}), p)
    return p


def _no_answer_column(d: Path, ds: Path) -> Path:
    ids, _ = _valid(ds)
    p = d / "p.parquet"
    pq.write_table(pa.table({"id": ids, "score": [0.0] * len(ids)}), p)
    return p


def _prediction_out_of_range(d: Path, ds: Path) -> Path:
    ids, _ = _valid(ds)
    preds: list[Any] = [0] * len(ids)
    preds[1], preds[2] = 5, -1
    return write_parquet(d / "p.parquet", ids, prediction=preds)


def _prediction_not_int(d: Path, ds: Path) -> Path:
    ids, _ = _valid(ds)
    return write_jsonl(d / "p.jsonl", [{"id": i, "prediction": "B" if n == 0 else 1.5 if n == 1 else 0}
                                      for n, i in enumerate(ids)])


def _fingerprint(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    p = write_parquet(d / "p.parquet", ids, logits)
    meta = write_meta(p, ds)
    data = yaml.safe_load(meta.read_text())
    data["dataset"]["fingerprint"] = "0" * 64
    meta.write_text(yaml.safe_dump(data))
    return p


def _bad_meta(d: Path, ds: Path) -> Path:
    ids, logits = _valid(ds)
    p = write_parquet(d / "p.parquet", ids, logits)
    (d / "p.parquet.meta.yaml").write_text("model: [unclosed\n")
    return p


def _garbage(d: Path, ds: Path) -> Path:
    p = d / "predictions.bin"
    p.write_bytes(b"\x00\x01garbage\xff")
    return p


CORPUS: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "truncated parquet": (_truncated, "not a readable parquet file"),
    "int ids": (_int_ids, "column 'id' has type int64"),
    "string logits": (_string_logits, "column 'logits' has type string"),
    "jsonl wrong types": (_jsonl_string_logits, "logits not a list of numbers"),
    "nan and inf": (_nan_inf, "non-finite logits"),
    "null inside list": (_null_in_list, "non-finite logits"),
    "duplicate ids": (_duplicate, "duplicate id"),
    "missing ids": (_missing, "missing id"),
    "unknown ids": (_unknown, "unknown id"),
    "wrong K": (_wrong_k, "wrong number of logits"),
    "jsonl not json": (_not_json, "line 3"),
    "jsonl array line": (_array_line, "not an object"),
    "empty parquet file": (_empty(".parquet"), "the file is empty"),
    "empty jsonl file": (_empty(".jsonl"), "the file is empty"),
    "blank jsonl": (_blank_jsonl, "no JSON lines"),
    "zero rows": (_zero_rows, "no rows"),
    "no logits or prediction": (_no_answer_column, "no 'logits', 'text' or 'prediction' column"),
    "prediction out of range": (_prediction_out_of_range, "prediction out of range"),
    "prediction not int": (_prediction_not_int, "prediction out of range"),
    "fingerprint mismatch": (_fingerprint, "dataset fingerprint mismatch"),
    "bad meta.yaml": (_bad_meta, "not valid YAML"),
    "garbage": (_garbage, "neither parquet nor JSONL"),
}


@pytest.mark.parametrize("case", sorted(CORPUS))
def test_corpus_rejected_through_cli(case: str, mcq: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    make, expected = CORPUS[case]
    folder = tmp_path / "sub"
    folder.mkdir()
    pred = make(folder, mcq)
    out = tmp_path / "scores.json"
    assert main(["validate", "--dataset", str(mcq), "--predictions", str(pred)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert expected in err
    assert "Traceback" not in err
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(["score", "--dataset", str(mcq), "--predictions", str(pred), "--out", str(out)]) == 1
    assert expected in capsys.readouterr().err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_every_kind_reported_with_rows(mcq: Path, tmp_path: Path) -> None:
    ids, logits = _valid(mcq)
    logits[2][0] = float("nan")
    logits[6] = [1.0, 2.0]
    p = write_parquet(tmp_path / "p.parquet", [*ids[1:], ids[3], "ghost"], [*logits[1:], logits[3], logits[0]])
    write_meta(p, mcq)
    with pytest.raises(SubmissionError) as info:
        validate(mcq, p)
    msg = str(info.value)
    for kind in ("unknown id", "duplicate id", "missing id", "wrong number of logits", "non-finite logits"):
        assert kind in msg
    assert "5 kinds of problem" in msg
    # duplicate: row len(ids) - 1 repeats ids[3]; missing: ids[0]
    assert f"row {len(ids) - 1} (id {ids[3]!r})" in msg
    assert repr(ids[0]) in msg and "'ghost'" in msg
    assert f"row 1 (id {ids[2]!r})" in msg  # the NaN row
    assert "has 2 logits for 5 options" in msg


def test_many_offenders_are_counted_not_all_listed(mcq: Path, tmp_path: Path) -> None:
    ids, logits = _valid(mcq)
    p = write_parquet(tmp_path / "p.parquet", ids, [[float("nan")] * len(x) for x in logits])
    with pytest.raises(SubmissionError, match=rf"non-finite logits: .*\[{len(ids)} rows: .*… {len(ids) - 5} more\]"):
        validate(mcq, p)


def test_valid_files_pass_both_formats(mcq: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids, logits = _valid(mcq)
    order = np.random.default_rng(0).permutation(len(ids))  # any row order is fine
    pq_path = write_parquet(tmp_path / "a" / "p.parquet", [ids[i] for i in order], [logits[i] for i in order])
    write_meta(pq_path, mcq)
    js = write_jsonl(tmp_path / "b" / "preds.txt", [{"id": i, "logits": x} for i, x in zip(ids, logits, strict=True)])
    write_meta(js, mcq)
    for path in (pq_path, js):
        report = validate(mcq, path)
        assert report.index.n_rows == len(ids) and report.has_logits
        assert report.aligned.logits is not None
        assert np.allclose(report.aligned.logits[0], logits[0])
    assert main(["validate", "--dataset", str(mcq), "--predictions", str(pq_path)]) == 0
    assert "valid" in capsys.readouterr().out


def test_config_selection_and_other_config_hint(mcq: Path, tmp_path: Path) -> None:
    rows = dataset_rows(mcq)
    photo = [r for r in rows if r["config"] == "sample-photo-random"]
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in photo], random_logits(photo))
    write_meta(p, mcq)
    assert validate(mcq, p, config="sample-photo-random").index.n_rows == len(photo)
    with pytest.raises(SubmissionError, match="missing id"):
        validate(mcq, p)
    everything = write_parquet(tmp_path / "all.parquet", [r["id"] for r in rows], random_logits(rows))
    write_meta(everything, mcq)
    with pytest.raises(SubmissionError, match=r"config\(s\) sample-rendition-random which were not selected"):
        validate(mcq, everything, config="sample-photo-random")
    with pytest.raises(VlmrobustError, match="did you mean"):
        validate(mcq, p, config="sample-photo-randm")


def test_bench_c_missing_clean_copy(bench_c: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in dataset_rows(bench_c) if r["id"] != "q1-none-0"]
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], random_logits(rows))
    assert main(["validate", "--dataset", str(bench_c), "--predictions", str(p)]) == 1
    err = capsys.readouterr().err
    assert "missing clean copy" in err and "of toy/q1" in err and "'q1-fog-1'" in err


def test_dataset_dir_errors_are_clean(tmp_path: Path) -> None:
    p = write_parquet(tmp_path / "p.parquet", ["a"], [[1.0]])
    assert main(["validate", "--dataset", str(tmp_path / "nowhere"), "--predictions", str(p)]) == 1
    assert main(["validate", "--dataset", str(tmp_path), "--predictions", str(tmp_path / "none.parquet")]) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_bytes_never_traceback(mcq: Path, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    ids, logits = _valid(mcq)
    folder = tmp_path_factory.mktemp("fuzz")
    fmt = data.draw(st.sampled_from(["parquet", "jsonl"]))
    if fmt == "parquet":
        p = write_parquet(folder / "p.parquet", ids, logits)
    else:
        p = write_jsonl(folder / "p.jsonl", [{"id": i, "logits": x} for i, x in zip(ids, logits, strict=True)])
    raw = bytearray(p.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        pos = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[pos] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[pos: pos + data.draw(st.integers(1, 64))]
        else:
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
    p.write_bytes(bytes(raw))
    try:
        validate(mcq, p)
    except SubmissionError as exc:
        assert "\n" not in str(exc) and str(p) in str(exc)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_jsonl_values_never_traceback(mcq: Path, tmp_path_factory: pytest.TempPathFactory,
                                             data: st.DataObject) -> None:
    ids, logits = _valid(mcq)
    recs: list[Any] = [{"id": i, "logits": x} for i, x in zip(ids, logits, strict=True)]
    for _ in range(data.draw(st.integers(1, 3))):
        row = data.draw(st.integers(0, len(recs) - 1))
        field = data.draw(st.sampled_from(["id", "logits", "prediction", "whole"]))
        value = data.draw(json_values)
        if field == "whole":
            recs[row] = value
        elif isinstance(recs[row], dict):
            recs[row][field] = value
    p = tmp_path_factory.mktemp("jfuzz") / "p.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    try:
        validate(mcq, p)
    except SubmissionError as exc:
        assert "\n" not in str(exc)


def test_huge_numbers_and_deep_nesting(mcq: Path, tmp_path: Path) -> None:
    ids, logits = _valid(mcq)
    lines = [json.dumps({"id": i, "logits": x}) for i, x in zip(ids, logits, strict=True)]
    lines[0] = '{"id": "' + ids[0] + '", "logits": [' + "9" * 5000 + ", 1, 2, 3, 4]}"
    lines[1] = '{"id": "' + ids[1] + '", "logits": [1e999, 1, 2, 3, 4]}'
    lines[2] = "[" * 100_000 + "]" * 100_000
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(SubmissionError) as info:
        validate(mcq, p)
    msg = str(info.value)
    assert "line 1" in msg and "line 3" in msg and "non-finite logits" in msg


def test_meta_configs_select_what_was_predicted(mcq: Path, tmp_path: Path) -> None:
    rows = [r for r in dataset_rows(mcq) if r["config"] == "sample-rendition-random"]
    p = write_parquet(tmp_path / "p.parquet", [r["id"] for r in rows], random_logits(rows))
    meta = write_meta(p, mcq)
    with pytest.raises(SubmissionError, match="missing id"):
        validate(mcq, p)  # meta lists every config
    data = yaml.safe_load(meta.read_text())
    data["configs"] = ["sample-rendition-random"]
    meta.write_text(yaml.safe_dump(data))
    assert validate(mcq, p).index.configs == ("sample-rendition-random",)
    data["configs"] = ["not-a-config"]  # unknown names: fall back to every config
    meta.write_text(yaml.safe_dump(data))
    with pytest.raises(SubmissionError, match="missing id"):
        validate(mcq, p)


def test_invalid_utf8_strings_in_parquet(mcq: Path, tmp_path: Path) -> None:
    # found by the byte fuzzer: a damaged file whose strings are not UTF-8 must
    # give a message, not a UnicodeDecodeError
    offsets = pa.py_buffer(np.array([0, 2], dtype=np.int32).tobytes())
    bad_ids = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\x80\x81")])
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": bad_ids, "prediction": pa.array([0], pa.int64())}), path)
    with pytest.raises(SubmissionError, match="not valid UTF-8"):
        validate(mcq, path)
