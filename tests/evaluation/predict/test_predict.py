"""predict_dataset / `vlmrobust predict` with the real EfficientNet-Lite0 on a tiny
dataset built with vlmrobust.core.writer: output layout, resume, errors before load."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import vlmrobust.evaluation.predict.dataset as predict_mod
import vlmrobust.evaluation.predict.model as predict_model
from tests.fixtures.predict import write_mcq
from vlmrobust.cli import main
from vlmrobust.core.datadir import read_table
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, ReaderOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.write import partial_dir
from vlmrobust.models import load_adapter
from vlmrobust.models.classifiers.adapter import _LOGITS_CACHE, ClassifierAdapter, pixel_digest

MODEL = "classifier:efficientnet-lite0"
BUSY = 1e6  # a load average no machine has idle cores under


@pytest.fixture(scope="module", autouse=True)
def idle_host() -> Any:
    """The default thread count follows the host's load; these tests compare runs
    with each other, so they see an idle host unless a test says otherwise."""
    import vlmrobust.core.cpus as cpus

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpus, "other_load", lambda: 0.0)
        yield


@pytest.fixture(scope="module")
def lite0() -> Any:
    return load_adapter(MODEL, device="cpu")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", {"photo": 7, "other": 5})


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, dataset: Path, lite0: Any) -> Path:
    out = tmp_path_factory.mktemp("ref") / "predictions.parquet"
    _LOGITS_CACHE.clear()  # computed here, not served by whatever ran before
    return predict_dataset(RunSpec(
        lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=3)))


@pytest.fixture
def forwards(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The process-wide logits cache emptied, and the images each forward of any
    classifier adapter runs, counted: a test comparing runs compares logits the
    network computed in each run, not one cached value with itself."""
    original = ClassifierAdapter._class_logits

    def counting(self: ClassifierAdapter, images: Any) -> Any:
        seen.append(len(images))
        return original(self, images)

    seen: list[int] = []
    _LOGITS_CACHE.clear()
    monkeypatch.setattr(ClassifierAdapter, "_class_logits", counting)
    yield seen
    _LOGITS_CACHE.clear()


def distinct_images(dataset: Path, ids: set[str]) -> int:
    """How many different images (by pixels, as the cache keys them) ``ids`` show."""
    from vlmrobust.core.datadir import config_names
    from vlmrobust.models.runtime import to_pil

    digests = set()
    for config in config_names(dataset):
        for row in read_table(dataset, config, ["id", "image"]).to_pylist():
            if row["id"] in ids:
                digests.add(pixel_digest(to_pil(row["image"])))
    return len(digests)


def test_predictions_layout_and_values(reference: Path, dataset: Path, lite0: Any,
                                       forwards: list[int]) -> None:
    table = pq.read_table(reference)
    assert table.column_names == ["id", "logits", "config"]
    assert str(table.schema.field("logits").type) == "list<element: float>"
    ids = table.column("id").to_pylist()
    expected = (read_table(dataset, "photo", ["id"]).column("id").to_pylist()
                + read_table(dataset, "other", ["id"]).column("id").to_pylist())
    assert ids == expected  # one row per dataset row, dataset order
    src = read_table(dataset, "photo").to_pylist()
    for got, row in zip(table.to_pylist(), src, strict=False):
        assert len(got["logits"]) == len(row["options"])
        assert np.isfinite(got["logits"]).all()
    # values are the adapter's own option logits for that row
    from vlmrobust.models.runtime import to_pil

    direct = lite0.option_logits([dict(src[3], image=to_pil(src[3]["image"]))])[0]
    assert forwards == [1]  # the network ran on that image here (the cache was empty)
    np.testing.assert_allclose(table.column("logits")[3].as_py(), direct, rtol=1e-5, atol=1e-5)
    # real photos: the classifier answers every question right
    answers = [r["answer"] for r in src]
    preds = [int(np.argmax(v)) for v in table.column("logits").to_pylist()[:7]]
    assert preds == answers
    assert not partial_dir(reference).exists()


def assert_same_predictions(a: Path, b: Path) -> None:
    """Identical rows and metadata; only the metadata's run date may differ."""
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.replace_schema_metadata(None).equals(tb.replace_schema_metadata(None))
    ma, mb = read_prediction_meta(a), read_prediction_meta(b)
    ma.pop("date"), mb.pop("date")
    assert ma == mb


def test_meta_yaml(reference: Path, dataset: Path) -> None:
    meta = read_prediction_meta(reference)
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert meta["model"] == MODEL and meta["family"] == "classifier"
    assert meta["vision_encoder"] == "efficientnet-lite0"
    assert isinstance(meta["params"], int) and 4_000_000 < meta["params"] < 6_000_000
    assert meta["dataset"]["fingerprint"] == manifest["fingerprint"]
    assert meta["dataset"]["name"] == "imagenet-mcq" and meta["dataset"]["version"] == "0.0.1"
    assert meta["configs"] == ["photo", "other"] and meta["n_rows"] == 12
    assert meta["tool_version"] and meta["date"]


def test_resume_after_crash_is_identical(tmp_path: Path, dataset: Path, reference: Path,
                                         lite0: Any, forwards: list[int]) -> None:
    out = tmp_path / "predictions.parquet"

    class Crash(Exception):
        pass

    def crash_after_two(n: int) -> None:
        if n == 2:
            raise Crash

    with pytest.raises(Crash):
        predict_dataset(RunSpec(
            lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=3)
        ), after_batch=crash_after_two)
    assert not out.exists()
    journal = list(partial_dir(out).glob("rank-*.jsonl"))
    assert len(journal) == 1 and journal[0].read_text().count("\n") == 2
    # simulate a kill in the middle of writing the third batch
    with journal[0].open("a") as f:
        f.write('{"rows": [[6, "photo-006", [1.0')
    done = {r[1] for line in journal[0].read_text().splitlines()[:2]
            for r in json.loads(line)["rows"]}
    remaining = {r["id"] for r in pq.read_table(reference).to_pylist()} - done
    assert len(remaining) == 6
    _LOGITS_CACHE.clear()
    forwards.clear()
    seen: list[int] = []
    predict_dataset(RunSpec(
        lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=3)
    ), after_batch=seen.append)
    assert seen == [1, 2]  # only the 6 remaining rows were predicted
    # ... and their images went through the network again (no cached logits)
    assert sum(forwards) == distinct_images(dataset, remaining) > 0
    assert_same_predictions(out, reference)
    assert not partial_dir(out).exists()


def test_limit_and_single_config_and_jsonl(tmp_path: Path, dataset: Path, lite0: Any,
                                           reference: Path, forwards: list[int]) -> None:
    _LOGITS_CACHE.clear()
    forwards.clear()
    out = predict_dataset(RunSpec(
        lite0, dataset, tmp_path / "p.jsonl", configs="other", limit=3, progress=False,
        backend=BackendOptions(batch_size=2)))
    wanted = {"other-000", "other-001", "other-002"}
    assert sum(forwards) == distinct_images(dataset, wanted) > 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["other-000", "other-001", "other-002"]
    ref = {r["id"]: r["logits"] for r in pq.read_table(reference).to_pylist()}
    for x in lines:
        np.testing.assert_allclose(x["logits"], ref[x["id"]], rtol=1e-5, atol=1e-5)


@pytest.fixture
def no_model_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a model was loaded before the input was validated")

    monkeypatch.setattr(predict_model, "load_adapter", refuse)


def test_errors_before_model_load(tmp_path: Path, dataset: Path, no_model_load: None) -> None:
    out = tmp_path / "p.parquet"
    with pytest.raises(VlmrobustError, match="did you mean 'efficientnet-lite0'"):
        predict_dataset(RunSpec("classifier:efficientnet_lite0", dataset, out))
    bare = write_mcq(tmp_path / "bare", {"default": 3}, with_class_ids=False)
    with pytest.raises(VlmrobustError, match=r"missing column.*option_class_ids"):
        predict_dataset(RunSpec(MODEL, bare, out))
    with pytest.raises(VlmrobustError, match="no config 'phto'; did you mean 'photo'"):
        predict_dataset(RunSpec(MODEL, dataset, out, configs="phto"))
    with pytest.raises(VlmrobustError, match="not a hub id"):
        predict_dataset(RunSpec(MODEL, tmp_path / "nowhere", out))
    with pytest.raises(VlmrobustError, match="--limit"):
        predict_dataset(RunSpec(MODEL, dataset, out, limit=0))
    with pytest.raises(VlmrobustError, match="unknown prompt 'photo-off'; did you mean 'photo-of'"):
        predict_dataset(RunSpec(MODEL, dataset, out, reader=ReaderOptions(prompt="photo-off")))
    assert not out.exists() and not partial_dir(out).exists()


def test_mismatched_options_named(tmp_path: Path, no_model_load: None) -> None:
    import pyarrow as pa

    ds = write_mcq(tmp_path / "bad", {"default": 4})
    shard = next((ds / "data" / "default").glob("*.parquet"))
    table = pq.read_table(shard)
    ids = table.column("option_class_ids").to_pylist()
    ids[2] = ids[2][:-1]
    idx = table.column_names.index("option_class_ids")
    table = table.set_column(idx, "option_class_ids", pa.array(ids, table.schema.field(idx).type))
    pq.write_table(table, shard)
    with pytest.raises(VlmrobustError, match=r"row 2 \(id 'default-002'\): 4 options but 3"):
        predict_dataset(RunSpec(MODEL, ds, tmp_path / "p.parquet"))


def test_other_run_in_partial_dir_refused(tmp_path: Path, dataset: Path, lite0: Any) -> None:
    out = tmp_path / "p.parquet"

    def stop(n: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec(
            lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=2)
        ), after_batch=stop)
    with pytest.raises(VlmrobustError, match=r"unfinished run with different .*limit"):
        predict_dataset(RunSpec(lite0, dataset, out, limit=2, progress=False))


def test_cli(tmp_path: Path, dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    out = tmp_path / "cli" / "predictions.parquet"
    threads = torch.get_num_threads()
    rc = main(["predict", "--model", MODEL, "--dataset", str(dataset), "--out", str(out),
               "--limit", "2", "--batch-size", "4", "--no-progress", "--device", "cpu",
               "--threads", "1"])
    assert rc == 0 and pq.read_table(out).num_rows == 4
    assert torch.get_num_threads() == threads  # restored after the call
    rc = main(["predict", "--model", "clasifier:efficientnet-lite0", "--dataset", str(dataset),
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("error: ") and "did you mean 'classifier'" in err
    assert err.count("\n") == 1


def test_resume_after_sigkill(tmp_path: Path, dataset: Path, reference: Path,
                              monkeypatch: pytest.MonkeyPatch, forwards: list[int]) -> None:
    """A process SIGKILLed after its second batch (no cleanup runs) resumes to the
    same bytes as an uninterrupted run, although the host got busy in between
    (a new run would now default to fewer threads: the resume keeps the
    journal's count, since the logits' rounding depends on it)."""
    import os
    import signal
    import subprocess
    import sys

    import vlmrobust.core.cpus as cpus

    out = tmp_path / "predictions.parquet"
    script = (
        "import os, signal, sys\n"
        "import vlmrobust.core.cpus as cpus\n"
        "cpus.other_load = lambda: 0.0  # an idle host at the first start\n"
        "from vlmrobust.evaluation.predict.dataset import predict_dataset\n"
        "from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec\n"
        "def hook(n):\n"
        "    if n == 2:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        f"predict_dataset(RunSpec({MODEL!r}, sys.argv[1], sys.argv[2], progress=False,\n"
        "                         backend=BackendOptions(batch_size=3, device='cpu')),\n"
        "                after_batch=hook)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[3]))
    proc = subprocess.run([sys.executable, "-c", script, str(dataset), str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert not out.exists()
    journal = next(partial_dir(out).glob("rank-*.jsonl"))
    assert journal.read_text().count("\n") == 2
    first = json.loads((partial_dir(out) / "run.json").read_text())["threads"]
    assert first == cpus.available_cpus() == read_prediction_meta(reference)["threads"]
    monkeypatch.setattr(cpus, "other_load", lambda: BUSY)
    assert predict_mod.choose_threads(None, tmp_path / "no-journal") == 1 <= first
    done = {r[1] for line in journal.read_text().splitlines() for r in json.loads(line)["rows"]}
    _LOGITS_CACHE.clear()
    forwards.clear()
    seen: list[int] = []
    predict_dataset(RunSpec(
        MODEL, dataset, out, progress=False, backend=BackendOptions(batch_size=3, device="cpu")
    ), after_batch=seen.append)
    assert seen == [1, 2]
    remaining = {r["id"] for r in pq.read_table(reference).to_pylist()} - done
    assert sum(forwards) == distinct_images(dataset, remaining) > 0  # recomputed here
    assert_same_predictions(out, reference)  # threads in the metadata included


def test_hub_dataset_path(tmp_path: Path, dataset: Path, reference: Path, lite0: Any,
                          monkeypatch: pytest.MonkeyPatch, forwards: list[int]) -> None:
    """A hub id goes through datasets.load_dataset + the hub manifest; here both are
    served from the local copy (tests never touch the network)."""
    import datasets

    import vlmrobust.evaluation.predict.rows as rows_mod

    real_load = datasets.load_dataset
    calls: list[tuple[str, str, str | None]] = []

    def fake_load(repo: str, config: str, split: str, revision: str | None = None) -> Any:
        calls.append((repo, config, revision))
        return real_load(str(dataset), config, split=split)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.setattr(rows_mod, "_hub_manifest",
                        lambda source: json.loads((dataset / "manifest.json").read_text()))
    out = predict_dataset(RunSpec(
        lite0, "someorg/tiny-mcq@v0.0.1", tmp_path / "predictions.parquet", progress=False,
        backend=BackendOptions(batch_size=3)))
    assert {c for _, c, _ in calls} == {"photo", "other"}
    assert sum(forwards) == distinct_images(dataset, set(pq.read_table(reference)["id"].to_pylist()))
    assert {(r, v) for r, _, v in calls} == {("someorg/tiny-mcq", "v0.0.1")}
    a, b = pq.read_table(reference), pq.read_table(out)
    assert a.column("id").to_pylist() == b.column("id").to_pylist()
    for x, y in zip(a.column("logits").to_pylist(), b.column("logits").to_pylist(), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
    meta = read_prediction_meta(out)
    assert meta["dataset"]["source"] == "someorg/tiny-mcq@v0.0.1"


def test_checked_id_refuses_empty_and_repeated_ids_in_one_line() -> None:
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.evaluation.predict.rows import checked_id

    seen: dict[str, str] = {}
    assert checked_id(7, "ds/a row 0", seen, "a") == ("7", "ds/a row 0 (id 7)")
    assert seen == {"7": "a"}
    with pytest.raises(VlmrobustError, match=r"ds/b row 3 \(id '7'\): duplicate id, also in config 'a'"):
        checked_id("7", "ds/b row 3", seen, "b")
    for empty in (None, ""):
        with pytest.raises(VlmrobustError, match="empty id; rebuild the dataset"):
            checked_id(empty, "ds/a row 1", seen, "a")
