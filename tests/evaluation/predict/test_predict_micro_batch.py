"""predict's CPU micro-batch (issue 39.2): a run long enough to repay it
probes for the fastest, a short one takes the default; the choice is recorded
in the resume journal and the metadata, and a resumed run keeps the
journal's, whatever a probe would choose now (the rounding depends on it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vlmrobust.evaluation.predict.micro_batch as micro_mod
from tests.fixtures.predict import write_mcq
from tests.fixtures.threads import one_torch_thread
from vlmrobust.evaluation.predict.dataset import predict_dataset
from vlmrobust.evaluation.predict.spec import RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.read import read_predictions
from vlmrobust.evaluation.predictions.write import partial_dir
from vlmrobust.models.classifiers import adapter as clf

pytestmark = pytest.mark.usefixtures(one_torch_thread.__name__)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", {"photo": 6})


@pytest.fixture(scope="module")
def lite0() -> clf.ClassifierAdapter:
    from vlmrobust.models import load_adapter

    adapter = load_adapter("classifier:efficientnet-lite0", device="cpu")
    assert isinstance(adapter, clf.ClassifierAdapter)
    return adapter


def probing(monkeypatch: pytest.MonkeyPatch, choice: int) -> list[int]:
    """Every run counts as long; the probe 'finds' ``choice``; returns its calls."""
    calls: list[int] = []
    monkeypatch.setattr(micro_mod, "PROBE_MIN_ROWS", 1)
    monkeypatch.setattr(clf, "_PROBED", {})
    monkeypatch.setattr(clf, "fastest_micro_batch",
                        lambda forward, **kw: (calls.append(choice), (choice, {}))[1])
    clf._LOGITS_CACHE.clear()
    return calls


def logits(path: Path) -> np.ndarray:
    pf = read_predictions(path)
    assert pf.logits_flat is not None
    return np.asarray(pf.logits_flat, np.float32)


def test_short_run_keeps_the_default_long_run_probes(
        tmp_path: Path, dataset: Path, lite0: clf.ClassifierAdapter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    short = predict_dataset(RunSpec.from_keywords(lite0, dataset, tmp_path / "short.parquet", batch_size=4,
                            progress=False, threads=1))
    assert read_prediction_meta(short)["micro_batch"] == clf.CPU_MICRO_BATCH
    calls = probing(monkeypatch, 4)
    long = predict_dataset(RunSpec.from_keywords(lite0, dataset, tmp_path / "long.parquet", batch_size=4,
                           progress=False, threads=1))
    assert calls == [4] and read_prediction_meta(long)["micro_batch"] == 4
    # the same rows either way, up to the rounding of another batch size
    np.testing.assert_allclose(logits(long), logits(short), rtol=0, atol=1e-5)
    monkeypatch.setattr(micro_mod, "PROBE_MIN_ROWS", 10**9)
    again = predict_dataset(RunSpec.from_keywords(lite0, dataset, tmp_path / "again.parquet", batch_size=4,
                            progress=False, threads=1))
    assert read_prediction_meta(again)["micro_batch"] == clf.CPU_MICRO_BATCH  # not the last probe's
    np.testing.assert_array_equal(logits(again), logits(short))


def test_resume_keeps_the_journal_micro_batch(
        tmp_path: Path, dataset: Path, lite0: clf.ClassifierAdapter,
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = probing(monkeypatch, 4)
    whole = predict_dataset(RunSpec.from_keywords(lite0, dataset, tmp_path / "whole.parquet", batch_size=2,
                            progress=False, threads=1))
    out = tmp_path / "p.parquet"
    seen: list[Any] = []

    def stop(n: int) -> None:
        seen.append(lite0.micro_batch)
        raise KeyboardInterrupt

    probing(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec.from_keywords(lite0, dataset, out, batch_size=2, progress=False, threads=1),
                        after_batch=stop)
    assert json.loads((partial_dir(out) / "run.json").read_text())["micro_batch"] == 4
    calls = probing(monkeypatch, 8)  # a probe now would choose 8
    predict_dataset(RunSpec.from_keywords(lite0, dataset, out, batch_size=2, progress=False, threads=1),
                    after_batch=lambda n: seen.append(lite0.micro_batch))
    assert calls == [] and seen == [4, 4, 4]
    assert read_prediction_meta(out)["micro_batch"] == 4
    np.testing.assert_array_equal(logits(out), logits(whole))
