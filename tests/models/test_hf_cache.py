"""The test session's Hugging Face caches are private temporary folders, already
in force when test modules import `datasets` / `huggingface_hub` at collection."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def test_hf_cache_is_isolated() -> None:
    import datasets
    import huggingface_hub.constants as hub

    home = Path(os.environ["HF_HOME"]).resolve()
    assert home.name.startswith("vlmrobust-hf-home-")
    # huggingface_hub reads HF_HOME once, at import (collection time here).
    assert Path(hub.HF_HOME).resolve() == home
    cache = Path(datasets.config.HF_DATASETS_CACHE).resolve()
    user = (Path.home() / ".cache" / "huggingface").resolve()
    assert not cache.is_relative_to(user)
    assert cache.is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"
