"""The endpoint backend under injected failures (a fake server, used only for
that): server down, a 429 storm, 5xx, a timeout, malformed JSON each end in one
line; a resumed run then completes with nothing lost or duplicated, and the
response cache makes a re-run free."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.endpoint import FakeServer, completion, fake_text, free_port, ok
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions
from vlmrobust.models.backends.endpoint.client import RetryPolicy

GEN = GenerationConfig(max_new_tokens=4)


def backend(url: str, cache: Path | None, tries: int = 4, concurrency: int = 4,
            timeout_s: float = 10.0, waits: list[float] | None = None) -> EndpointBackend:
    opts = EndpointOptions(url=url, model="tiny", concurrency=concurrency, timeout_s=timeout_s,
                           retry=RetryPolicy(max_tries=tries, base_s=0.25, max_wait_s=8.0),
                           cache_dir=cache, use_cache=cache is not None, api_key_env=None)
    record = waits if waits is not None else []
    return EndpointBackend(opts, sleep=record.append, features=frozenset())


def prompts(n: int) -> list[Prompt]:
    return [Prompt(text=f"question {i}") for i in range(n)]


def one_line(exc: pytest.ExceptionInfo[VlmrobustError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_server_down_is_one_line_after_the_retries(tmp_path: Path) -> None:
    waits: list[float] = []
    b = backend(f"http://127.0.0.1:{free_port()}/v1", tmp_path, tries=3, waits=waits)
    with pytest.raises(VlmrobustError) as exc:
        b.generate(prompts(1), GEN)
    msg = one_line(exc)
    assert "cannot connect" in msg and "gave up after 3 tries" in msg
    assert "/v1/chat/completions" in msg
    assert waits == [0.25, 0.5]  # exponential backoff between the three tries
    assert not any(tmp_path.rglob("*.json"))  # nothing cached from a failure


def test_429_storm_honours_retry_after_then_succeeds(tmp_path: Path) -> None:
    def storm(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if n < 5:
            return 429, {"Retry-After": "2"}, b'{"error": {"message": "rate limited"}}'
        return ok(n, body)

    waits: list[float] = []
    with FakeServer(storm) as fake:
        b = backend(fake.url, tmp_path, tries=6, concurrency=1, waits=waits)
        assert b.generate(prompts(1), GEN) == [fake_text(fake.received[0])]
        assert len(fake.received) == 6
    assert waits == [2.0] * 5


def test_429_storm_that_never_ends_is_one_line(tmp_path: Path) -> None:
    def storm(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        return 429, {}, b'{"error": {"message": "Rate limit reached for requests"}}'

    waits: list[float] = []
    with FakeServer(storm) as fake:
        b = backend(fake.url, tmp_path, tries=4, concurrency=1, waits=waits)
        with pytest.raises(VlmrobustError) as exc:
            b.generate(prompts(1), GEN)
    msg = one_line(exc)
    assert "HTTP 429: Rate limit reached for requests" in msg and "after 4 tries" in msg
    assert waits == [0.25, 0.5, 1.0]


def test_timeout_is_retried_then_one_line(tmp_path: Path) -> None:
    def slow(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        time.sleep(1.5)
        return ok(n, body)

    with FakeServer(slow) as fake:
        b = backend(fake.url, tmp_path, tries=2, concurrency=1, timeout_s=0.3)
        with pytest.raises(VlmrobustError) as exc:
            b.generate(prompts(1), GEN)
        assert len(fake.received) == 2
    msg = one_line(exc)
    assert "no response within 0.3 s" in msg and "gave up after 2 tries" in msg


@pytest.mark.parametrize("payload", [b"<html>502 Bad Gateway</html>", b'{"choices": [',
                                     b'{"object": "list"}', b'[1, 2]'])
def test_malformed_response_is_one_line_and_not_cached(tmp_path: Path, payload: bytes) -> None:
    with FakeServer(lambda n, body: (200, {}, payload)) as fake:
        b = backend(fake.url, tmp_path, concurrency=1)
        with pytest.raises(VlmrobustError) as exc:
            b.generate(prompts(1), GEN)
        assert len(fake.received) == 1  # a malformed answer is not retried
    msg = one_line(exc)
    assert fake.url in msg
    assert "not valid JSON" in msg or "no choices[0]" in msg
    assert not any(tmp_path.rglob("*.json"))


def test_client_errors_are_not_retried(tmp_path: Path) -> None:
    with FakeServer(lambda n, body: (400, {}, b'{"error": {"message": "bad model"}}')) as fake:
        with pytest.raises(VlmrobustError) as exc:
            backend(fake.url, tmp_path).generate(prompts(1), GEN)
        assert len(fake.received) == 1
    assert one_line(exc).endswith("HTTP 400: bad model")


def test_resume_after_failures_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """Requests 0-5 succeed, then the server fails for good: the run ends in one
    line. The resumed run sends exactly the requests that had not succeeded, its
    texts equal an uninterrupted run's, and a third run sends nothing."""
    n = 24
    healthy = {"on": False}

    def flaky(i: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if healthy["on"] or i < 6:
            return ok(i, body)
        return 503, {}, b'{"error": {"message": "overloaded"}}'

    with FakeServer(flaky) as fake:
        first = backend(fake.url, tmp_path / "cache", tries=2)
        with pytest.raises(VlmrobustError) as exc:
            first.generate(prompts(n), GEN)
        assert "HTTP 503: overloaded" in one_line(exc)
        answered = [json.dumps(b, sort_keys=True) for b in fake.received[:6]]
        cached = len(list((tmp_path / "cache").rglob("*.json")))
        assert cached == 6

        healthy["on"] = True
        before = len(fake.received)
        resumed = backend(fake.url, tmp_path / "cache")
        texts = resumed.generate(prompts(n), GEN)
        second = [json.dumps(b, sort_keys=True) for b in fake.received[before:]]
        assert resumed.sent == len(second) == n - 6
        assert not set(second) & set(answered)  # nothing answered twice
        assert len(set(second)) == len(second)

        clean = backend(fake.url, None).generate(prompts(n), GEN)
        assert texts == clean  # nothing lost, in order
        assert len(set(texts)) == n

        again = backend(fake.url, tmp_path / "cache")
        before = len(fake.received)
        assert again.generate(prompts(n), GEN) == texts
        assert again.sent == 0 and len(fake.received) == before
        assert again.cache.stats() == {"hits": n, "misses": 0}


def test_damaged_cache_entry_is_a_miss_and_rewritten(tmp_path: Path) -> None:
    with FakeServer() as fake:
        b = backend(fake.url, tmp_path)
        text = b.generate(prompts(1), GEN)
        (entry,) = tmp_path.rglob("*.json")
        entry.write_text('{"format": 1, "key": "')
        again = backend(fake.url, tmp_path)
        assert again.generate(prompts(1), GEN) == text and again.sent == 1
        assert json.loads(entry.read_text())["response"]["choices"][0]["message"]["content"] \
            == text[0]


def test_response_size_is_bounded(tmp_path: Path) -> None:
    huge = json.dumps(completion({"messages": [{"content": "x"}], "model": "tiny"}) |
                      {"padding": "x" * 50_000}).encode()
    with FakeServer(lambda n, body: (200, {}, huge)) as fake:
        opts = EndpointOptions(url=fake.url, model="tiny", max_response_bytes=10_000,
                               use_cache=False, api_key_env=None)
        with pytest.raises(VlmrobustError) as exc:
            EndpointBackend(opts, features=frozenset()).generate(prompts(1), GEN)
    assert "larger than 10000 bytes" in one_line(exc)


def test_stop_strings_are_sent_and_applied(tmp_path: Path) -> None:
    with FakeServer() as fake:
        b = backend(fake.url, None)
        (text,) = b.generate(prompts(1), GenerationConfig(max_new_tokens=9, stop=(" ",)))
        # the first request asks once whether the server takes stop strings
        assert len(fake.received) == 2 and fake.received[0]["max_tokens"] == 1
        assert fake.received[1]["stop"] == [" "]
        assert fake.received[1]["max_tokens"] == 9 and fake.received[1]["temperature"] == 0
    assert text == "echo"  # the fake ignores stop; the backend cuts at the first one


def test_first_failure_stops_further_requests(tmp_path: Path) -> None:
    def fail_fourth(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.02)
        return (400, {}, b'{"error": {"message": "bad image"}}') if n == 3 else ok(n, body)

    with FakeServer(fail_fourth) as fake:
        b = backend(fake.url, tmp_path, concurrency=2)
        with pytest.raises(VlmrobustError, match="HTTP 400: bad image"):
            b.generate(prompts(40), GEN)
        time.sleep(0.3)
        assert len(fake.received) <= 4 + 2  # at most the requests already in flight


@pytest.mark.parametrize(("status", "payload"), [
    (401, b'{"error": {"message": "Incorrect API key provided"}}'),
    (429, b'{"error": {"message": "Rate limit reached"}}'),
])
def test_probe_failures_that_are_not_refusals_stop_the_load(tmp_path: Path, status: int,
                                                            payload: bytes) -> None:
    """A bad key or a rate limit while asking what the server offers is an error,
    not 'the server lacks logprobs'."""
    with FakeServer(lambda n, body: (status, {}, payload)) as fake:
        opts = EndpointOptions(url=fake.url, model="tiny", use_cache=False, api_key_env=None,
                               retry=RetryPolicy(max_tries=2, base_s=0.0))
        with pytest.raises(VlmrobustError) as exc:
            EndpointBackend(opts)
    msg = one_line(exc)
    assert f"HTTP {status}" in msg and "refuses" not in msg


def test_probe_asks_only_about_what_the_mode_needs(tmp_path: Path) -> None:
    with FakeServer() as fake:
        opts = EndpointOptions(url=fake.url, model="tiny", use_cache=False, api_key_env=None)
        b = EndpointBackend(opts, probe=())
        assert fake.received == [] and b.capabilities == frozenset({"generate"})
        EndpointBackend(opts, probe=("next_token_logprobs",))
        assert len(fake.received) == 1 and fake.received[0]["logprobs"] is True


def test_ctrl_c_does_not_wait_for_requests_in_flight(tmp_path: Path) -> None:
    import os
    import signal
    import threading

    def slow(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        time.sleep(4.0)
        return ok(n, body)

    # a process started in the background (nohup, `cmd &` without job control)
    # inherits SIGINT ignored; this test is about Ctrl-C reaching Python
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with FakeServer(slow) as fake:
            b = backend(fake.url, tmp_path, concurrency=3, timeout_s=30.0)
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            start = time.monotonic()
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                b.generate(prompts(6), GEN)
            waited = time.monotonic() - start
            timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert waited < 3.0  # not the 4 s the requests in flight still need
