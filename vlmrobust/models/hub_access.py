"""Fail fast when a model's weights must come from the Hugging Face Hub and
cannot: offline mode is set (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE``) or
one quick probe of the Hub's host fails, and the repository is not in the local
cache. Without this check transformers and open_clip try each file with their
own timeouts and retries: offline, ``clip:ViT-B-32:openai`` failed after 97 s
and a ``vlm:`` hub id after 179 s, with a multi-line log (issue 40 item 5).

Only the cache folder is looked at here (no library call that could reach the
network); when the repository is cached the loaders run as before.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit

from vlmrobust.core.errors import VlmrobustError

PROBE_TIMEOUT_S = 3.0
_TRUE = {"1", "on", "yes", "true"}
_probe: dict[str, bool] = {}  # host -> reachable, once per process


def offline_flag() -> str | None:
    """The offline variable set (huggingface_hub's and transformers' own rule:
    1/ON/YES/TRUE), or None."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(key, "").strip().lower() in _TRUE:
            return key
    return None


def hub_cache() -> Path:
    """huggingface_hub's cache folder: HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub (read now, so a changed environment counts)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or str(Path(os.environ.get("XDG_CACHE_HOME", "~/.cache"))
                                            / "huggingface")
    return Path(home).expanduser() / "hub"


def repo_folder(repo_id: str) -> str:
    """The cache folder name of a model repository.

    >>> repo_folder("timm/vit_base_patch32_clip_224.openai")
    'models--timm--vit_base_patch32_clip_224.openai'
    """
    return f"models--{repo_id.replace('/', '--')}"


def is_cached(repo_id: str) -> bool:
    """Whether ``repo_id`` (a model repository) has any snapshot file in the cache."""
    snapshots = hub_cache() / repo_folder(repo_id) / "snapshots"
    try:
        return any(p.is_file() for p in snapshots.rglob("*"))
    except OSError:
        return False


def hub_reachable(timeout: float = PROBE_TIMEOUT_S) -> bool:
    """One TCP connect to the Hub's host (HF_ENDPOINT), remembered per process."""
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = url.hostname or "huggingface.co"
    port = url.port or (80 if url.scheme == "http" else 443)
    key = f"{host}:{port}"
    if key not in _probe:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                _probe[key] = True
        except (OSError, ValueError):
            _probe[key] = False
    return _probe[key]


def require_hub_repo(name: str, repo_id: str) -> None:
    """Raise one line when ``repo_id`` is not cached and the Hub cannot be used
    (offline mode set, or the probe failed); otherwise return and let the
    loader download or read the cache."""
    if is_cached(repo_id):
        return
    flag = offline_flag()
    if flag is not None:
        why = f"{flag} is set"
    elif not hub_reachable():
        host = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
        why = f"the Hugging Face Hub ({host}) cannot be reached"
    else:
        return
    raise VlmrobustError(
        f"{name}: {why} and {repo_id} is not in the Hugging Face cache ({hub_cache()}); "
        f"download it where there is network (`hf download {repo_id}`) and point HF_HOME at "
        "that cache, or give a local model folder"
    )


def require_target(name: str, target: str) -> None:
    """:func:`require_hub_repo` for a loader's target unless it is a local folder."""
    if not Path(target).expanduser().exists() and target.count("/") == 1:
        require_hub_repo(name, target)
