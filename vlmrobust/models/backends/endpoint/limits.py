"""A served model's context limit as its server advertises it, and the token
count of one request as the server counts it, both optional: where a server
says nothing (proprietary APIs, ``transformers serve``), no check is made and
the server itself refuses an over-long request.

- limit: ``GET <base>/models``, the entry whose ``id`` is the served model,
  its ``max_model_len`` (vLLM, SGLang), ``context_length`` (OpenRouter,
  llama.cpp's ``/v1/models`` meta) or ``context_window``;
- count: ``POST <server root>/tokenize`` with the chat request's ``model`` and
  ``messages`` (vLLM's and SGLang's route), its ``count``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vlmrobust.models.backends.endpoint.client import HttpClient
from vlmrobust.models.backends.endpoint.server import server_root

LIMIT_KEYS = ("max_model_len", "context_length", "context_window")
ASK_TIMEOUT_S = 10.0


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def model_limit(listing: Any, model: str) -> tuple[int, str] | None:
    """(limit, where it comes from) from a ``/models`` listing.

    >>> model_limit({"data": [{"id": "m", "max_model_len": 4096}]}, "m")
    (4096, "the server's advertised max_model_len 4096")
    >>> model_limit({"data": [{"id": "other", "max_model_len": 4096}]}, "m") is None
    True
    """
    data = listing.get("data") if isinstance(listing, Mapping) else None
    for entry in data if isinstance(data, list) else ():
        if isinstance(entry, Mapping) and entry.get("id") == model:
            raw = entry.get("meta")
            meta: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
            for key in LIMIT_KEYS:
                n = _positive_int(entry.get(key)) or _positive_int(meta.get(key))
                if n is not None:
                    return n, f"the server's advertised {key} {n}"
    return None


def advertised_limit(client: HttpClient, model: str) -> tuple[int, str] | None:
    try:
        listing = client.get_json(client.url("models"), timeout_s=min(client.timeout_s,
                                                                      ASK_TIMEOUT_S))
    except Exception:  # optional information: any failure means "not advertised"
        return None
    return model_limit(listing, model)


def served_token_count(client: HttpClient, body: Mapping[str, Any]) -> int | None:
    """The server's token count of a chat request (None: it offers no count)."""
    try:
        resp = client.post_json_once(f"{server_root(client.base_url)}/tokenize",
                                     {"model": body["model"], "messages": body["messages"]},
                                     timeout_s=min(client.timeout_s, ASK_TIMEOUT_S))
    except Exception:
        return None
    return _positive_int(resp.get("count")) if isinstance(resp, Mapping) else None
