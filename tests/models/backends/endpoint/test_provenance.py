"""What the endpoint backend records about the server: the URL without
credentials, the served model name, and the version from whichever route the
engine exposes (vLLM/SGLang /version, TGI /info, llama.cpp /props)."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.endpoint import FakeServer
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions


def backend(url: str) -> EndpointBackend:
    return EndpointBackend(EndpointOptions(url=url, model="served/name", use_cache=False,
                                           api_key_env=None), features=frozenset())


@pytest.mark.parametrize(("route", "body", "want"), [
    ("/version", b'{"version": "0.11.0"}', "version: 0.11.0"),            # vLLM, SGLang
    ("/info", b'{"model_id": "Qwen/Qwen2-VL", "version": "3.3.4"}',        # TGI
     "info: 3.3.4 Qwen/Qwen2-VL"),
    ("/props", b'{"build_info": "b6123-abc1234"}', "props: b6123-abc1234"),  # llama.cpp
    ("/nothing", b"{}", None),                                               # an API
])
def test_server_version_from_the_engines_route(route: str, body: bytes, want: str | None) -> None:
    with FakeServer(routes={route: body}) as fake:
        b = backend(fake.url)
        record = b.server_record()
        assert b.server_version() == want
    assert record == {"backend": "endpoint", "server_url": fake.url,
                      "served_model": "served/name", "server_version": want,
                      "chat_template": "applied by the server; prompt_text is the request "
                                       "as sent", "api": "openai", "reasoning_effort": None,
                      "image_bytes": {"send": "png", "png_level": 6}}


def test_render_is_the_request_as_sent() -> None:
    from PIL import Image

    with FakeServer() as fake:
        b = backend(fake.url)
        prompt = Prompt(text="Which?", image=Image.new("RGB", (4, 4), (1, 2, 3)))
        rendered = b.render(prompt)
        b.generate([prompt], GenerationConfig())
        sent = fake.received[0]
    shown = json.loads(rendered)
    assert shown["messages"][0]["content"][1] == {"type": "text", "text": "Which?"}
    assert shown["messages"][0]["content"][0]["image_url"]["url"].startswith("<image/png sha256=")
    assert shown["model"] == sent["model"] and shown["temperature"] == sent["temperature"] == 0
