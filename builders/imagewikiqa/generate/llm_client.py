"""A minimal client for OpenAI-compatible chat completion endpoints (OpenAI,
vLLM, llama.cpp server, Ollama's /v1, ...) over urllib, with retries.

The transport is injectable so that tests can run without a network."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmrobust.core.errors import VlmrobustError

# (url, body, headers, timeout) -> (status, response body)
Transport = Callable[[str, bytes, Mapping[str, str], float], tuple[int, bytes]]


class EndpointError(VlmrobustError):
    """The chat endpoint could not be reached or answered with an error."""


def urllib_transport(url: str, body: bytes, headers: Mapping[str, str],
                     timeout: float) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read() or b""


@dataclass(frozen=True)
class ChatClient:
    base_url: str
    model: str
    api_key: str | None = None
    temperature: float = 0.0
    timeout_s: float = 120.0
    max_retries: int = 3
    backoff_s: float = 1.0
    transport: Transport = field(default=urllib_transport, repr=False)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"LLM base URL must start with http:// or https://, "
                             f"got {self.base_url!r}")
        if not self.model:
            raise ValueError("LLM model name is empty")
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def complete(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The assistant message text; retries connection errors, timeouts,
        429 and 5xx with exponential backoff, fails at once on other 4xx."""
        body = json.dumps({"model": self.model, "messages": list(messages),
                           "temperature": self.temperature}).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                status, data = self.transport(self.url, body, headers, self.timeout_s)
            except (OSError, TimeoutError) as exc:  # URLError is an OSError
                last = f"cannot reach {self.url} ({getattr(exc, 'reason', exc)})"
                continue
            if status == 429 or status >= 500:
                last = f"{self.url} answered HTTP {status}"
                continue
            if status != 200:
                snippet = data[:200].decode("utf-8", "replace").replace("\n", " ")
                raise EndpointError(f"{self.url} answered HTTP {status}: {snippet}; check the "
                                    "model name and API key (VLMROBUST_LLM_API_KEY)")
            return _message_text(data, self.url)
        raise EndpointError(f"{last} after {self.max_retries + 1} attempts; fix: start the "
                            "server or set generator.llm.base_url / VLMROBUST_LLM_BASE_URL")


def _message_text(data: bytes, url: str) -> str:
    try:
        payload: Any = json.loads(data)
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise EndpointError(f"{url}: not an OpenAI chat completion response "
                            f"({data[:120]!r}); is the base URL the /v1 root?") from None
    if not isinstance(content, str):
        raise EndpointError(f"{url}: message content is not text")
    return content
