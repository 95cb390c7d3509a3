"""What a server says about itself: its version, asked once per run from the
routes the engines expose (vLLM and SGLang ``/version``, TGI ``/info``,
llama.cpp ``/props``); None where none answers (proprietary APIs)."""

from __future__ import annotations

from typing import Any

from vlmrobust.core.text.display import control_char
from vlmrobust.models.backends.endpoint.client import HttpClient

# route (relative to the server root) -> how to read a version string out of its JSON
_ROUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("version", ("version",)),
    ("info", ("version", "model_id")),
    ("props", ("build_info",)),
)


def server_root(base_url: str) -> str:
    """The server root of an OpenAI base URL (``.../v1`` removed).

    >>> server_root("http://localhost:8000/v1"), server_root("https://x.ai/api/v1")
    ('http://localhost:8000', 'https://x.ai/api')
    """
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _text(value: Any) -> str | None:
    r"""A short printable version string, or None (metadata text holds no control
    characters: core.text).

    >>> _text(" 0.11.0\n"), _text("b1\x1b[31m"), _text(True)
    ('0.11.0', None, None)
    """
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = " ".join(str(value).split())[:80]
        return text if text and control_char(text) is None else None
    return None


def server_version(client: HttpClient) -> str | None:
    """``"<route>: <version>"`` from the first route that answers with one."""
    root = server_root(client.base_url)
    for route, fields in _ROUTES:
        try:
            obj = client.get_json(f"{root}/{route}", timeout_s=min(client.timeout_s, 5.0))
        except Exception:  # optional information: any failure means "unknown"
            continue
        if isinstance(obj, dict):
            parts = [t for t in (_text(obj.get(f)) for f in fields) if t]
            if parts:
                return client.scrub(f"{route}: {' '.join(parts)}")
    return None
