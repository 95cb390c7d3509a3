"""Shared test setup: an isolated, offline Hugging Face cache for every test
session (like huggingface/datasets' own conftest) and no global RNG use."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
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


def _share_cpus_among_workers() -> None:
    """Under pytest-xdist each worker is one of N processes on the same CPUs:
    each gets its share of OpenMP threads (tests/fixtures/workers.py); a test
    that pins its own thread count (torch_threads) still gets exactly that."""
    from tests.fixtures.workers import worker_threads
    from vlmrobust.core.cpus import available_cpus

    os.environ.update(worker_threads(os.environ, available_cpus()))


def pytest_configure(config: pytest.Config) -> None:
    _hypothesis_profile()
    _share_cpus_among_workers()
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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``: the longest tests first (tests/fixtures/workers.py
    FIRST; the test command keeps this order with ``--no-loadscope-reorder``), and
    the grouping kept on pytest 9.2: pytest-xdist 3.8 tags a grouped test by
    appending ``@group`` to ``item._nodeid``, which pytest 9.2's structured node
    ids no longer read (pytest-xdist#1386), so every group was spread over the
    workers and its session fixture built on each. The same tag, through the
    structured id; a no-op where xdist's own tag took."""
    from tests.fixtures.workers import first_order, group_tag

    if not getattr(config.option, "loadgroup", False):
        return
    items[:] = [items[i] for i in first_order([item.nodeid for item in items])]
    for item in items:
        tagged = group_tag(item.nodeid, [m.args[0] if m.args else m.kwargs.get("name", "default")
                                         for m in item.iter_markers("xdist_group")])
        if tagged != item.nodeid and hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id

            item._id = coerce_node_id(tagged)


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


@pytest.fixture(scope="session")
def light_python(tmp_path_factory: pytest.TempPathFactory, vlmrobust_wheel: Path) -> Path:
    """A fresh venv with the wheel and only its core closure (no extras), made
    once for the light-install and the wheel tests; returns its python."""
    from tests.fixtures.light_env import make_light_venv

    return make_light_venv(tmp_path_factory.mktemp("light"), REPO, vlmrobust_wheel)


@pytest.fixture(scope="session")
def served_llava(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A tiny random LLaVA served by a real `transformers serve`: (model folder,
    base URL). Started once per session (per xdist worker; its users share the
    group "served-llava") and read-only to the tests: each passes its own
    response cache."""
    from tests.fixtures.endpoint import serve_tiny_llava

    yield from serve_tiny_llava(tmp_path_factory)
