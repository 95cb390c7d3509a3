"""Ids and limits: model ids and links are matched whole, and no input is read
without a bound (row-count bombs, devices, FIFOs, oversized metadata)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.score import (
    dataset_rows,
    random_logits,
    write_jsonl,
    write_mcq,
)
from tests.fixtures.trust import one_line_error, perfect_predictions, run_cli
from vlmrobust.core.errors import SubmissionError
from vlmrobust.evaluation.model_meta import validate_model_id
from vlmrobust.evaluation.predictions.meta import PARQUET_META_KEY, read_prediction_meta
from vlmrobust.evaluation.validate.check import validate


@pytest.fixture(scope="module")
def mcq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "imagenet-mcq")


@pytest.mark.parametrize("bad", ["abc\n", "abc\r\n", "\nabc", "a\nb", "abc\x00"])
def test_model_ids_are_matched_whole(bad: str, tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="invalid model id"):
        validate_model_id(bad)
    with pytest.raises(SubmissionError, match="model_id"):
        from vlmrobust.evaluation.schemas import check_schema

        check_schema({"model_id": bad, "name": "x", "family": "vlm"}, "submission-meta", "m")


def test_ids_and_links_elsewhere_are_matched_whole() -> None:
    from vlmrobust.evaluation.model_meta import check_link
    from vlmrobust.leaderboard.trust.baselines import BaselineSpec

    with pytest.raises(SubmissionError, match="not an http"):
        check_link("https://arxiv.org/abs/1\n", "paper_url")
    for bad in ("model-0 and more", "model-0\n"):
        with pytest.raises(ValueError, match="invalid model ids"):
            BaselineSpec(version="t", reference_models=(bad,))


def test_parquet_expanding_to_millions_of_rows_is_refused(mcq: Path, tmp_path: Path) -> None:
    n = 2_000_000
    table = pa.table({"id": pa.array(["x"] * n), "logits": pa.array([[0.0]] * n)})
    meta = read_prediction_meta(perfect_predictions(mcq, tmp_path / "ok.parquet"))
    table = table.replace_schema_metadata({PARQUET_META_KEY: json.dumps(meta).encode()})
    p = tmp_path / "bomb.parquet"
    pq.write_table(table, p, compression="zstd")
    assert p.stat().st_size < 200_000
    with pytest.raises(SubmissionError, match=r"2000000 rows, more than the 100 allowed"):
        validate(mcq, p)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_metadata_linked_to_a_device_is_refused(mcq: Path, tmp_path: Path, target: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    if not Path(target).exists():
        pytest.skip(f"{target} not available")
    rows = dataset_rows(mcq)
    p = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "logits": x}
                                           for r, x in zip(rows, random_logits(rows), strict=True)])
    (tmp_path / "p.jsonl.meta.yaml").symlink_to(target)
    rc, err = run_cli(["validate", "--dataset", str(mcq), "--predictions", str(p)], capsys)
    assert rc == 1 and "not a regular file" in err
    one_line_error(err)
    # the predictions file itself, and a leaderboard's meta.yaml
    (tmp_path / "q.jsonl").symlink_to(target)
    rc, err = run_cli(["validate", "--dataset", str(mcq), "--predictions",
                    str(tmp_path / "q.jsonl")], capsys)
    assert rc == 1 and "not a regular file" in err
    import shutil

    ds = shutil.copytree(mcq, tmp_path / "ds")
    (ds / "manifest.json").unlink()
    (ds / "manifest.json").symlink_to(target)
    rc, err = run_cli(["validate", "--dataset", str(ds), "--predictions", str(p)], capsys)
    assert rc == 1 and "manifest.json: not a regular file" in err
    one_line_error(err)


def test_fifo_is_refused_without_blocking(mcq: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SubmissionError, match="not a regular file"):
        validate(mcq, fifo)


def test_oversized_metadata_is_refused(mcq: Path, tmp_path: Path) -> None:
    p = perfect_predictions(mcq, tmp_path / "p.jsonl")
    side = tmp_path / "p.jsonl.meta.yaml"
    side.write_text(side.read_text() + "notes: " + "x" * 300_000 + "\n")
    with pytest.raises(SubmissionError, match="more than the 262144 allowed"):
        validate(mcq, p)
