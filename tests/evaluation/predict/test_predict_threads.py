"""predict's thread count: chosen once per run from the quota'd CPUs and the
host's load, kept in the resume journal and the metadata; an explicit
``threads`` wins, but cannot resume a run begun with another count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vlmrobust.core.cpus as cpus
import vlmrobust.evaluation.predict.model as predict_model
from tests.fixtures.predict import write_mcq
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.dataset import choose_threads, predict_dataset
from vlmrobust.evaluation.predict.spec import BackendOptions, RunSpec
from vlmrobust.evaluation.predictions.meta import read_prediction_meta
from vlmrobust.evaluation.predictions.write import partial_dir

MODEL = "classifier:efficientnet-lite0"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_mcq(tmp_path_factory.mktemp("ds") / "mcq", {"photo": 5})


@pytest.fixture
def eight_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host of 8 CPUs, all of them ours, without a cgroup quota."""
    monkeypatch.setattr(cpus, "available_cpus", lambda root=cpus._CGROUP: 8)
    monkeypatch.setattr(cpus.os, "cpu_count", lambda: 8)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)


def test_default_is_lower_under_load_and_explicit_wins(tmp_path: Path, eight_cpus: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pdir = tmp_path / ".p.parquet.partial"  # no journal: a new run
    counts = {}
    for load in (0.0, 4.0, 6.5, 100.0):
        monkeypatch.setattr(cpus, "other_load", lambda load=load: load)
        counts[load] = choose_threads(None, pdir)
        assert choose_threads(3, pdir) == 3  # explicit wins at any load
    # idle 8, half busy 4, 6.5 of 8 busy 2, saturated 1
    assert counts == {0.0: 8, 4.0: 4, 6.5: 2, 100.0: 1}
    monkeypatch.setattr(cpus, "other_load", lambda: None)  # no load average: the quota'd CPUs
    assert choose_threads(None, pdir) == 8
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "3")  # torchrun: 3 processes share the host
    assert choose_threads(None, pdir) == 2


def test_journal_keeps_the_count(tmp_path: Path, dataset: Path, eight_cpus: None,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A run stopped midway under no load resumes, under heavy load, with the
    journal's count; an explicit different count is refused before the model
    loads, with the fix in one line."""
    import torch

    monkeypatch.setattr(cpus, "other_load", lambda: 0.0)
    lite0 = predict_model.load_adapter(MODEL, device="cpu")
    out = tmp_path / "p.parquet"
    seen: list[int] = []

    def stop(n: int) -> None:
        seen.append(torch.get_num_threads())
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec(
            lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=2)
        ), after_batch=stop)
    assert seen == [8]
    run = json.loads((partial_dir(out) / "run.json").read_text())
    assert run["threads"] == 8

    monkeypatch.setattr(cpus, "other_load", lambda: 100.0)
    assert choose_threads(None, tmp_path / "other") == 1  # a new run would take 1
    monkeypatch.setattr(predict_model, "load_adapter", lambda *a, **k: pytest.fail("loaded"))
    with pytest.raises(VlmrobustError) as err:
        predict_dataset(RunSpec(
            MODEL, dataset, out, progress=False, backend=BackendOptions(batch_size=2, threads=1)))
    msg = str(err.value)
    assert "--threads 8" in msg and "--overwrite" in msg and "\n" not in msg
    from vlmrobust.cli import main

    rc = main(["predict", "--model", MODEL, "--dataset", str(dataset), "--out", str(out),
               "--batch-size", "2", "--no-progress", "--threads", "2"])
    cli_err = capsys.readouterr().err
    assert rc == 1 and cli_err.startswith("error: ") and cli_err.count("\n") == 1
    assert "--threads 8" in cli_err
    assert json.loads((partial_dir(out) / "run.json").read_text()) == run  # untouched

    before = torch.get_num_threads()
    predict_dataset(RunSpec(
        lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=2)
    ), after_batch=lambda n: seen.append(torch.get_num_threads()))
    assert seen == [8, 8, 8]  # the two remaining batches, with the journal's count
    assert torch.get_num_threads() == before  # restored after the call
    assert read_prediction_meta(out)["threads"] == 8
    assert not partial_dir(out).exists()

    # --overwrite discards the journal, so the count is chosen afresh
    with pytest.raises(KeyboardInterrupt):
        predict_dataset(RunSpec(
            lite0, dataset, out, progress=False, backend=BackendOptions(batch_size=2)
        ), after_batch=stop)
    assert json.loads((partial_dir(out) / "run.json").read_text())["threads"] == 1
    predict_dataset(RunSpec(
        lite0, dataset, out, progress=False, overwrite=True,
        backend=BackendOptions(batch_size=2, threads=5)))
    assert read_prediction_meta(out)["threads"] == 5


def test_unreadable_journal_threads_fall_back(tmp_path: Path, eight_cpus: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A run.json without a usable count (an older run, a hand edit) gives no
    count to reuse; the run-key check then refuses that journal."""
    monkeypatch.setattr(cpus, "other_load", lambda: 0.0)
    pdir = tmp_path / ".p.parquet.partial"
    pdir.mkdir()
    for bad in ('{"threads": 0}', '{"threads": true}', '{"threads": "2"}', "[1]", "{"):
        (pdir / "run.json").write_text(bad)
        assert choose_threads(None, pdir) == 8
        assert choose_threads(2, pdir) == 2


def test_build_threads_default(monkeypatch: pytest.MonkeyPatch, eight_cpus: None) -> None:
    from vlmrobust.cli.commands import build

    got: list[int] = []
    monkeypatch.setattr(build, "set_torch_threads", got.append)
    monkeypatch.setattr(build, "resolve_spec", lambda spec: Path(spec))
    monkeypatch.setattr(build, "load_spec_yaml", lambda path: {"family": "x"})

    class Stop(Exception):
        pass

    def builder(raw: Any, path: Any, options: Any) -> Any:
        raise Stop

    monkeypatch.setattr(build, "get_builder", lambda family: builder)
    import argparse

    args = argparse.Namespace(spec="s", out=Path("o"), sample=True, source_root=None,
                              workers=None, threads=None, no_progress=True, device=None,
                              limit=None, trust_remote_code=False)
    for load, expected in ((0.0, 8), (100.0, 1)):
        monkeypatch.setattr(cpus, "other_load", lambda load=load: load)
        with pytest.raises(Stop):
            build.run(args)
        assert got[-1] == expected
    args.threads = 3
    with pytest.raises(Stop):
        build.run(args)
    assert got[-1] == 3
