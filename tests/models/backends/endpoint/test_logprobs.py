"""Log-prob reading of the endpoint backend from servers that return them, in
the formats those servers publish: OpenAI chat ``logprobs.content[].top_logprobs``
(OpenAI, vLLM, llama.cpp server, TGI) and vLLM's ``prompt_logprobs``. A fake
server stands in, as transformers serve returns neither. Also: the API key
never leaves the Authorization header, even when a server echoes it back."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.endpoint import FakeServer, completion
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import (
    CONTINUATION,
    GENERATE,
    NEXT_TOKEN,
    GenerationConfig,
    Prompt,
)
from vlmrobust.models.backends.endpoint.backend import (
    TOP_LOGPROBS,
    EndpointBackend,
    EndpointOptions,
)

TOP = [("B", -0.4), (" A", -1.6), ("A", -2.3), ("C", -3.0), ("\n", -4.0)]


def options(url: str, cache: Path | None, **kw: Any) -> EndpointOptions:
    kw.setdefault("api_key_env", None)
    return EndpointOptions(url=url, model="tiny", cache_dir=cache, use_cache=cache is not None,
                           **kw)


def logprob_server(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    if "prompt_logprobs" in body:
        return 400, {}, b'{"error": {"message": "unknown field prompt_logprobs"}}'
    return 200, {}, json.dumps(completion(body, top=TOP)).encode()


def test_next_token_logprobs_from_top_logprobs(tmp_path: Path) -> None:
    with FakeServer(logprob_server) as fake:
        b = EndpointBackend(options(fake.url, tmp_path))
        assert b.capabilities == frozenset({GENERATE, NEXT_TOKEN})
        probes = len(fake.received)
        from PIL import Image

        prompts = [Prompt(text="Which?", image=Image.new("RGB", (8, 8), (9, 9, 9))),
                   Prompt(text="Which?", assistant_prefix="Thought done. Answer:")]
        got = b.next_token_logprobs(prompts, ["A", "B", "C", "D"])
        # chat requests only (the /tokenize ask this fake does not serve aside)
        sent = [x for x in fake.received[probes:] if "max_tokens" in x]
    assert got.dtype == np.float32 and got.shape == (2, 4)
    # "A" and " A" both spell A: its likeliest listed spelling (one token, as in
    # process, never their sum); D was not among the top tokens
    want = [-1.6, -0.4, -3.0, -math.inf]
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    np.testing.assert_allclose(got[1], want, rtol=1e-6)
    for body in sent:
        assert body["logprobs"] is True and body["top_logprobs"] == TOP_LOGPROBS
        assert body["max_tokens"] == 1 and body["temperature"] == 0
    # requests run concurrently: tell them apart by their messages
    (with_image,) = [x for x in sent if len(x["messages"][0]["content"]) == 2]
    (cued,) = [x for x in sent if len(x["messages"]) == 2]
    image_part = with_image["messages"][0]["content"][0]
    assert image_part["type"] == "image_url"
    assert image_part["image_url"]["url"].startswith("data:image/png;base64,")
    assert "continue_final_message" not in with_image
    # an answer cue after a finished thought: the assistant turn is continued
    assert cued["messages"][-1] == {"role": "assistant", "content": "Thought done. Answer:"}
    assert cued["continue_final_message"] is True and cued["add_generation_prompt"] is False


def test_continuation_refused_when_prompt_logprobs_refused(tmp_path: Path) -> None:
    with FakeServer(logprob_server) as fake:
        b = EndpointBackend(options(fake.url, tmp_path))
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt(text="x")], [["cat"]])
    msg = str(exc.value)
    assert "\n" not in msg and fake.url in msg
    assert "refuses prompt_logprobs" in msg and "likelihood reader" in msg


def vllm_prompt_logprobs(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """vLLM's format: one {token_id: {logprob, rank, decoded_token}} per prompt token
    (null first). The prompt is 3 template tokens, then one token per character of
    the assistant message; token k's log-prob is -(k + 1) / 10."""
    resp = completion(body)
    msgs = body["messages"]
    tail = msgs[-1]["content"] if msgs[-1]["role"] == "assistant" else ""
    n_tokens = 3 + len(tail)
    resp["prompt_logprobs"] = [None] + [
        {str(100 + k): {"logprob": -(k + 1) / 10, "rank": 1, "decoded_token": "x"}}
        for k in range(1, n_tokens)]
    return 200, {}, json.dumps(resp).encode()


def test_continuation_logprobs_from_vllm_prompt_logprobs(tmp_path: Path) -> None:
    with FakeServer(vllm_prompt_logprobs) as fake:
        b = EndpointBackend(options(fake.url, tmp_path, concurrency=3))
        assert CONTINUATION in b.capabilities
        got = b.continuation_logprobs([Prompt(text="q1"), Prompt(text="q2", assistant_prefix="so")],
                                      [["cat", "ox"], ["dog"]])
        bodies = [x for x in fake.received if x["messages"][0]["content"][0]["text"] != "Hi"]
    # prompt 1: base 3 tokens; "cat" adds tokens 3..5, "ox" tokens 3..4
    np.testing.assert_allclose(got[0][0], [-0.4, -0.5, -0.6], rtol=1e-6)
    np.testing.assert_allclose(got[0][1], [-0.4, -0.5], rtol=1e-6)
    # prompt 2: the prefix "so" is part of the base (5 tokens); "dog" adds 5..7
    np.testing.assert_allclose(got[1][0], [-0.6, -0.7, -0.8], rtol=1e-6)
    assert all(x["prompt_logprobs"] == 0 and x["max_tokens"] == 1 for x in bodies)
    assert {x["messages"][-1]["content"] for x in bodies if len(x["messages"]) == 2} == \
        {"cat", "ox", "so", "sodog"}


def thinking_template(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A server whose chat template opens the assistant turn with an empty think
    block (2 tokens, ids 900 and 901) when it generates, but not when it
    continues a final assistant message: the prompt without the option is not a
    token prefix of the prompt with it. Token ids: 100 + position otherwise."""
    resp = completion(body)
    msgs = body["messages"]
    continued = msgs[-1]["role"] == "assistant"
    ids = [100 + k for k in range(3)]
    ids += [200 + k for k in range(len(msgs[-1]["content"]))] if continued else [900, 901]
    resp["prompt_logprobs"] = [None] + [
        {str(t): {"logprob": -(k + 1) / 10, "rank": 1, "decoded_token": "x"}}
        for k, t in enumerate(ids[1:], start=1)]
    return 200, {}, json.dumps(resp).encode()


def test_continuation_refused_when_the_prompt_is_not_a_token_prefix(tmp_path: Path) -> None:
    """Issue 36 item 1: with a thinking template, subtracting token counts took
    "cat"'s last token alone and "goldfish"'s last 6 of 8, silently; the prefix
    check refuses the row in one line instead."""
    with FakeServer(thinking_template) as fake:
        b = EndpointBackend(options(fake.url, None))
        with pytest.raises(VlmrobustError) as exc:
            b.continuation_logprobs([Prompt(text="What?\nSay")], [["cat", "goldfish"]])
    msg = str(exc.value)
    assert "\n" not in msg and "not a token prefix" in msg and "'cat'" in msg
    assert "thinking template" in msg and fake.url in msg


def test_api_key_never_leaves_the_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    secret = "sk-live-00112233445566778899"
    monkeypatch.setenv("MY_PROVIDER_KEY", secret)

    def echo_auth(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if body.get("max_tokens") == 7:  # a server that quotes the request's headers
            auth = fake.headers[n].get("Authorization", "")
            return 401, {}, json.dumps({"error": {"message": f"bad key {auth}"}}).encode()
        return 200, {}, json.dumps(completion(body)).encode()

    with FakeServer(echo_auth) as fake:
        b = EndpointBackend(options(fake.url, tmp_path, api_key_env="MY_PROVIDER_KEY"),
                            features=frozenset())
        b.generate([Prompt(text="hello")], GenerationConfig(max_new_tokens=3))
        assert fake.headers[0]["Authorization"] == f"Bearer {secret}"
        with pytest.raises(VlmrobustError) as exc:
            b.generate([Prompt(text="hello")], GenerationConfig(max_new_tokens=7))
    assert "bad key Bearer ***" in str(exc.value) and secret not in str(exc.value)
    files = [p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not any(secret.encode() in f for f in files)
    assert secret not in repr(b.server_record()) + b.render(Prompt(text="hello"))
    out = capsys.readouterr()
    assert secret not in out.out + out.err


def test_key_on_the_command_line_is_refused() -> None:
    with pytest.raises(VlmrobustError, match="NAME of an environment variable"):
        EndpointOptions(url="http://localhost:1/v1", model="m", api_key_env="sk-abc-123")
    with pytest.raises(VlmrobustError, match="credentials and query strings"):
        EndpointOptions(url="http://user:pw@localhost:1/v1", model="m")


def test_redirects_are_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib would forward the Authorization header to the host a redirect names."""
    monkeypatch.setenv("MY_PROVIDER_KEY", "sk-live-redirect-0123456789")
    with FakeServer() as elsewhere:
        moved = (302, {"Location": elsewhere.url + "/chat/completions"}, b"{}")
        with FakeServer(lambda n, body: moved) as fake:
            b = EndpointBackend(options(fake.url, None, api_key_env="MY_PROVIDER_KEY"),
                                features=frozenset())
            with pytest.raises(VlmrobustError) as exc:
                b.generate([Prompt(text="hello")], GenerationConfig(max_new_tokens=3))
        assert elsewhere.received == [] and elsewhere.gets == []
    assert "HTTP 302" in str(exc.value) and "\n" not in str(exc.value)
