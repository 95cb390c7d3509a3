"""The endpoint backend's response cache: one JSON file per successful response,
named by the sha256 of the canonical request content (endpoint path and JSON
body, keys sorted). The body carries the served model name, every generation
parameter and the image bytes (as a data URL), so an entry is reused only for
exactly the same request; the API key is never part of a request body and so
never reaches the cache. Entries are written atomically; a damaged entry is a
miss and is overwritten.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic
from vlmrobust.core.files.bounded import MIB, parse_json_bounded, read_bytes_bounded
from vlmrobust.models.backends.endpoint.body import json_sha256

CACHE_FORMAT = 1


def request_key(path: str, body: Mapping[str, Any]) -> str:
    """sha256 of the canonical request: the same content always gives the same key.

    >>> a = request_key("chat/completions", {"model": "m", "max_tokens": 4})
    >>> a == request_key("chat/completions", {"max_tokens": 4, "model": "m"})
    True
    >>> a == request_key("chat/completions", {"model": "m", "max_tokens": 5})
    False
    """
    # = sha256 of json.dumps(..., sort_keys=True, separators=(",", ":"),
    # ensure_ascii=False), with the images spliced in unscanned (endpoint.body)
    return json_sha256({"path": path.strip("/"), "body": body}, sort_keys=True,
                       separators=(",", ":"))


def default_cache_dir() -> Path:
    """``$VLMROBUST_ENDPOINT_CACHE``, else ``$XDG_CACHE_HOME/vlmrobust/endpoint``
    (``~/.cache/vlmrobust/endpoint``)."""
    env = os.environ.get("VLMROBUST_ENDPOINT_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vlmrobust" / "endpoint"


class ResponseCache:
    """Responses on disk under ``root/<key[:2]>/<key>.json``; ``root=None`` disables it.
    Counts hits and misses (``stats``) so callers can show that a re-run was free."""

    def __init__(self, root: Path | None, max_entry_bytes: int = 16 * MIB) -> None:
        self.root = Path(root) if root is not None else None
        self.max_entry_bytes = max_entry_bytes
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        if self.root is None:
            return None
        path = self._path(key)
        found: Any = None
        if path.is_file():
            try:
                data = read_bytes_bounded(path, self.max_entry_bytes, "cache entry")
                entry = parse_json_bounded(data, str(path))
            except VlmrobustError:
                entry = None
            if (isinstance(entry, dict) and entry.get("format") == CACHE_FORMAT
                    and entry.get("key") == key and "response" in entry):
                found = entry["response"]
        with self._lock:
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, key: str, response: Any) -> None:
        if self.root is None:
            return
        entry = {"format": CACHE_FORMAT, "key": key, "response": response}
        try:
            write_text_atomic(self._path(key), json.dumps(entry, ensure_ascii=False))
        except OSError as exc:
            raise VlmrobustError(f"{self.root}: cannot write the endpoint response cache "
                                 f"({exc.strerror or exc}); pass --endpoint-cache DIR "
                                 "with a writable folder") from None

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses}
