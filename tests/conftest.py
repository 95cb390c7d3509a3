"""Shared test setup: an isolated, offline Hugging Face cache for every test
session (like huggingface/datasets' own conftest) and no global RNG use."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_HF_KEYS = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE",
            "TRANSFORMERS_OFFLINE")
_saved: dict[str, str | None] = {}
_home: list[Path] = []


def _hypothesis_profile() -> None:
    """No per-example deadline: on a shared 2-core machine one example can take
    longer than hypothesis's 200 ms default without anything being wrong."""
    try:
        from hypothesis import settings
    except ImportError:  # pragma: no cover - dev extra missing
        return
    settings.register_profile("vlmrobust", deadline=None)
    settings.load_profile("vlmrobust")


def pytest_configure(config: pytest.Config) -> None:
    _hypothesis_profile()
    # Before collection: `datasets` and `huggingface_hub` read their cache paths
    # when first imported, and test modules import them at collection time. A
    # session fixture would come too late and leave the shared user cache in use.
    home = Path(tempfile.mkdtemp(prefix="vlmrobust-hf-home-"))
    _home.append(home)
    _saved.update({k: os.environ.get(k) for k in _HF_KEYS})
    os.environ["HF_HOME"] = str(home)
    os.environ["HF_DATASETS_CACHE"] = str(home / "datasets")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    for k, v in _saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    for home in _home:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(autouse=True)
def _fresh_datasets_cache(tmp_path_factory: pytest.TempPathFactory,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A datasets cache per test. The session's private cache (pytest_configure)
    is shared by every test, and offline `datasets` keys a local directory's
    cache by the folder name and config, not by content: two tests loading
    different dirs named "bench-c" got the first one's rows. Pointing the module's setting at a fresh folder per test
    keeps every load_dataset honest."""
    import sys

    if "datasets" in sys.modules:
        import datasets

        monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE",
                            tmp_path_factory.mktemp("hf_datasets"))


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def vlmrobust_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the checkout, built once per session from a copy of its sources."""
    from tests.fixtures.light_env import build_wheel

    return build_wheel(REPO, tmp_path_factory.mktemp("wheel"))
