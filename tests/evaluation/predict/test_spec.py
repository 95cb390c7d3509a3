"""The run spec (issue 38.3): every option is checked once, when the frozen
RunSpec is built, and refused in one line naming the bad value; the keyword
call of before it still works for one minor version, with a DeprecationWarning,
and writes the same predictions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.fixtures.predict import write_mcq
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.models.readers.base import ReadOptions


class LastOption:
    """Deterministic logits without a model: the last option scores 5, the others 0."""

    name = "toy:last"
    family = "other"

    def option_logits(self, rows: Any) -> np.ndarray:
        k = max(len(r["options"]) for r in rows)
        out = np.full((len(rows), k), np.nan, dtype=np.float32)
        for i, r in enumerate(rows):
            out[i, : len(r["options"])] = 0.0
            out[i, len(r["options"]) - 1] = 5.0
        return out

    def embed_images(self, images: Any) -> np.ndarray:  # pragma: no cover - unused
        raise NotImplementedError


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", {"photo": 5, "other": 3})


@pytest.mark.parametrize(("build", "named"), [
    (lambda: RunSpec("m:x", "d", "p.csv"), "--out p.csv"),
    (lambda: RunSpec("m:x", "d", "p.parquet", limit=0), "--limit must be >= 1, got 0"),
    (lambda: RunSpec("m:x", "d", "p.parquet", limit=True), "--limit must be >= 1, got True"),
    (lambda: RunSpec("m:x", "d", "p.parquet", name="  "), "--name must be 1-300"),
    (lambda: RunSpec("m:x", "d", "p.parquet", name="n" * 301), "--name must be 1-300"),
    (lambda: RunSpec("m:x", "d", "p.parquet", configs=" , "), "--config ' , '"),
    (lambda: RunSpec("m:x", "d", "p.parquet", configs=[1]), "--config [1]"),
    (lambda: RunSpec(" ", "d", "p.parquet"), "--model"),
    (lambda: RunSpec(object(), "d", "p.parquet"), "model <object"),
    (lambda: RunSpec("m:x", "", "p.parquet"), "--dataset ''"),
    (lambda: RunSpec("m:x", "d", "p.parquet", backend=ReaderOptions()), "backend ReaderOptions("),
    (lambda: BackendOptions(batch_size=0), "--batch-size must be >= 1, got 0"),
    (lambda: BackendOptions(batch_size=2.0), "--batch-size must be >= 1, got 2.0"),
    (lambda: BackendOptions(threads=0), "--threads 0"),
    (lambda: BackendOptions(device="cpu", device_map="auto"), "drop --device"),
    (lambda: BackendOptions(endpoint=["url"]), "endpoint ['url']"),
    (lambda: ReaderOptions(class_order="shuffled"), "--class-order 'shuffled'"),
    (lambda: ReaderOptions(mode=""), "--mode ''"),
    (lambda: ReaderOptions(read_options={"stop": "x"}), "read_options {'stop': 'x'}"),
])
def test_a_bad_value_is_refused_when_the_spec_is_built(build: Any, named: str) -> None:
    with pytest.raises(VlmrobustError) as err:
        build()
    assert named in str(err.value) and "\n" not in str(err.value)


def test_the_spec_is_frozen_and_normalised() -> None:
    endpoint = {"url": "http://localhost:8000/v1"}
    spec = RunSpec("endpoint:m", Path("d"), "out/p.jsonl", configs="b, a,b",
                   backend=BackendOptions(endpoint=endpoint))
    endpoint["url"] = "http://elsewhere/v1"  # the caller's dict cannot change a built spec
    assert spec.backend.endpoint == {"url": "http://localhost:8000/v1"}
    with pytest.raises(TypeError):
        spec.backend.endpoint["url"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.limit = 3  # type: ignore[misc]
    # the CLI's comma list, repeats kept for the dataset reader to drop in order
    assert spec.out == Path("out/p.jsonl") and spec.configs == ("b", "a", "b")
    assert spec.config_arg == "b,a,b" and RunSpec("m:x", "d", "p.parquet").config_arg is None
    assert RunSpec("m:x", "d", "p.parquet", configs=["a", "b"]).configs == ("a", "b")


def test_from_keywords_sorts_each_old_keyword_into_its_record() -> None:
    ro = ReadOptions(max_new_tokens=8)
    spec = RunSpec.from_keywords(
        "vlm:x", "d", "p.parquet", config="a", batch_size=3, device="cpu", limit=2,
        progress=False, prompt="what-type", threads=1, overwrite=True, trust_remote_code=True,
        mode="generate", read_options=ro, endpoint={"url": "u"}, name="X", class_order="fixed")
    assert spec == RunSpec(
        "vlm:x", "d", Path("p.parquet"), configs=("a",), limit=2, name="X", overwrite=True,
        progress=False,
        reader=ReaderOptions(prompt="what-type", mode="generate", read_options=ro,
                             class_order="fixed"),
        backend=BackendOptions(batch_size=3, device="cpu", threads=1, trust_remote_code=True,
                               endpoint={"url": "u"}))
    with pytest.raises(VlmrobustError, match="unknown option 'batchsize'"):
        RunSpec.from_keywords("vlm:x", "d", "p.parquet", batchsize=3)


def _without_date(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "date"}


def test_the_keyword_call_is_deprecated_and_writes_the_same_file(
        tmp_path: Path, dataset: Path) -> None:
    spec = RunSpec(LastOption(), dataset, tmp_path / "a.parquet", configs="photo", limit=4,
                   progress=False, backend=BackendOptions(batch_size=3, threads=1))
    batches: list[int] = []
    new = predict_dataset(spec, after_batch=batches.append)
    assert batches == [1, 2]
    with pytest.warns(DeprecationWarning, match="pass a RunSpec"):
        old = predict_dataset(LastOption(), dataset, tmp_path / "b.parquet", "photo",
                              batch_size=3, limit=4, progress=False, threads=1,
                              after_batch=batches.append)
    assert batches == [1, 2, 1, 2]
    assert pq.read_table(old).equals(pq.read_table(new))
    assert _without_date(read_prediction_meta(old)) == _without_date(read_prediction_meta(new))
    assert read_prediction_meta(new)["batch_size"] == 3 and pq.read_table(new).num_rows == 4


def test_a_spec_call_takes_no_loose_options(tmp_path: Path, dataset: Path) -> None:
    spec = RunSpec(LastOption(), dataset, tmp_path / "a.parquet")
    with pytest.raises(TypeError, match="belong in the RunSpec"):
        predict_dataset(spec, batch_size=2)  # type: ignore[arg-type]
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="limit given twice"):
        predict_dataset(LastOption(), dataset, tmp_path / "a.parquet", "photo", 2, None, 3,
                        limit=3)
    assert not any(tmp_path.iterdir())
