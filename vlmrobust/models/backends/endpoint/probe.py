"""One-shot questions to a served model about what it accepts, asked with no
retries so that a refusal costs one request, not a retry storm."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vlmrobust.models.backends.base import CONTINUATION, NEXT_TOKEN, Prompt
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.cache import ResponseCache, request_key
from vlmrobust.models.backends.endpoint.client import EndpointError, HttpClient
from vlmrobust.models.backends.endpoint.protocol import CHAT

OPTIONAL = (NEXT_TOKEN, CONTINUATION)

# answers that mean "this request is refused" rather than "the server is unwell":
# transformers serve fails a VLM's stop string with 500, APIs refuse with 400/422
REFUSAL_STATUS = frozenset({400, 404, 422, 500, 501})


class _Served(Protocol):
    client: HttpClient
    cache: ResponseCache

    def prepare(self, body: Mapping[str, Any]) -> dict[str, Any]: ...

    def asks_for_reasoning(self, exc: EndpointError, sent: Mapping[str, Any]) -> bool: ...

    def post(self, path: str, body: Mapping[str, Any], parse: Callable[[Any], Any]) -> Any: ...

    def _body(self, prompt: Prompt, **params: Any) -> dict[str, Any]: ...


def feature_refusals(backend: _Served, which: set[str]) -> dict[str, str | None]:
    """Why each optional primitive in ``which`` is missing (None where the server
    offers it): one one-token text-only request each, answered by the cache on a
    re-run. A 400/404/422 answer means "not offered"; any other failure stops."""
    ask = Prompt(text="Hi")
    where = backend.client.url(CHAT)
    asks = {
        NEXT_TOKEN: ({"logprobs": True, "top_logprobs": 1},
                     lambda r: proto.first_token_logprobs(r, where),
                     "returns no logprobs for chat completions",
                     "refuses logprobs/top_logprobs in chat completions"),
        CONTINUATION: ({"prompt_logprobs": 0},
                       lambda r: proto.prompt_token_logprobs(r, where),
                       "returns no prompt_logprobs",
                       "refuses prompt_logprobs (a vLLM extension)"),
    }
    found: dict[str, str | None] = {}
    for primitive in OPTIONAL:
        params, parse, absent, refused = asks[primitive]
        if primitive not in which:
            found[primitive] = "was not asked for (this run's mode does not use it)"
            continue
        try:
            got = backend.post(CHAT, backend._body(ask, max_tokens=1, **params), parse)
            found[primitive] = None if got is not None else absent
        except EndpointError as exc:
            if exc.status not in (400, 404, 422):
                raise
            found[primitive] = refused
    return found


def stop_refusal(backend: _Served, body: Mapping[str, Any]) -> str | None:
    """Why the server refuses ``body`` (a one-token request carrying ``stop``),
    or None where it answers; an accepted answer is cached like any other."""
    sent = backend.prepare(body)
    key = request_key(CHAT, sent)
    if backend.cache.get(key) is not None:
        return None
    try:
        resp = backend.client.post_json_once(backend.client.url(CHAT), sent)
    except EndpointError as exc:
        if backend.asks_for_reasoning(exc, sent):
            return stop_refusal(backend, body)
        if exc.status not in REFUSAL_STATUS:
            raise
        return str(exc).split(": ", 1)[-1]
    if isinstance(resp, dict) and "error" in resp and "choices" not in resp:
        return str(resp["error"])[:200]
    backend.cache.put(key, resp)
    return None
