"""Offline, a model whose weights are on the Hub and not in the cache fails in
one line within seconds, before any network access or library retry (issue 40
item 5: `clip:ViT-B-32:openai` took 97 s and a `vlm:` hub id 179 s)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main

MODELS = ["clip:ViT-B-32:openai", "vlm:Qwen/Qwen2-VL-2B-Instruct", "clip:hf:openai/clip-vit-base-patch32"]


def _no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every connect attempt is recorded and refused."""
    tried: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        tried.append(args)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return tried


def _isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    home = tmp_path / "hf-home"
    home.mkdir()
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    return home


@pytest.mark.parametrize("model", MODELS)
def test_offline_uncached_model_fails_in_one_line(
        model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    home = _isolated_cache(monkeypatch, tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ds = write_mcq(tmp_path / "ds", {"a": 2})
    tried = _no_network(monkeypatch)
    out = tmp_path / "p.parquet"
    start = time.monotonic()
    rc = main(["predict", "--model", model, "--dataset", str(ds), "--out", str(out),
               "--no-progress"])
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err.strip()
    assert rc != 0 and not out.exists()
    assert len(err.splitlines()) == 1, err
    assert "HF_HUB_OFFLINE is set" in err and "not in the Hugging Face cache" in err, err
    assert str(home / "hub") in err and "local model folder" in err
    assert not tried
    assert not (tmp_path / "p.parquet.partial").exists()
    assert elapsed < 30, elapsed  # imports only; the hub libraries' retries took 97-179 s


def test_unreachable_hub_is_probed_once_and_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.models import hub_access

    _isolated_cache(monkeypatch, tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(hub_access, "_probe", {})
    ds = write_mcq(tmp_path / "ds", {"a": 2})
    tried = _no_network(monkeypatch)
    rc = main(["predict", "--model", "vlm:Qwen/Qwen2-VL-2B-Instruct", "--dataset", str(ds),
               "--out", str(tmp_path / "p.parquet"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1, err
    assert "the Hugging Face Hub (huggingface.co) cannot be reached" in err, err
    assert len(tried) == 1  # the one probe, then no library call


def test_cached_repo_is_not_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.models.hub_access import repo_folder, require_hub_repo

    home = _isolated_cache(monkeypatch, tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snap = home / "hub" / repo_folder("org/m") / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    require_hub_repo("vlm:org/m", "org/m")  # cached: the loader reads it offline
