"""The endpoint client keeps one HTTP/1.1 connection per worker thread
(issue 39.3): requests reuse it, a connection the server closes between
requests or as a request goes out costs no failed row, and the deadline,
the bound on responses and the no-proxy rule hold on a reused connection
as on a new one. The server here is a raw socket server that counts the TCP
connections it accepts and runs a script per request on each."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from tests.fixtures.endpoint import FakeServer, completion
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions
from vlmrobust.models.backends.endpoint.client import RetryPolicy

GEN = GenerationConfig(max_new_tokens=4)
ANSWER = "answer"  # what a script returns: answer and keep the connection open
CLOSE = "close"  # answer, then close the connection without saying so
DROP = "drop"  # close without answering (the server's idle timeout as the request arrives)
DRIP = "drip"  # the status line and headers, then a byte of the body every 0.5 s

# (connection number, request number on that connection) -> what the server does
Script = Callable[[int, int], str]


@dataclass
class RawServer:
    accepts: int = 0
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes] | None:
    """(body, bytes left over) of the next request on ``conn``, None at its end."""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return rest[:length], rest[length:]


def _answer(conn: socket.socket, body: bytes, stop: threading.Event, drip: bool) -> None:
    payload = json.dumps(completion(json.loads(body))).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(payload))
    if not drip:
        conn.sendall(payload)
        return
    for byte in payload:
        if stop.wait(0.5):
            return
        conn.sendall(bytes([byte]))


@contextmanager
def raw_server(script: Script) -> Iterator[tuple[str, RawServer]]:
    """An HTTP/1.1 keep-alive server on a raw socket, run by ``script``."""
    stats = RawServer()
    stop = threading.Event()
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.1)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with stats.lock:
                number = stats.accepts
                stats.accepts += 1
            threading.Thread(target=handle, args=(conn, number), daemon=True).start()

    def handle(conn: socket.socket, number: int) -> None:
        buf = b""
        with conn:
            try:
                for k in range(1_000_000):
                    got = _read_request(conn, buf)
                    if got is None:
                        return
                    body, buf = got
                    with stats.lock:
                        stats.requests += 1
                    what = script(number, k)
                    if what == DROP:
                        return
                    _answer(conn, body, stop, drip=what == DRIP)
                    if what == CLOSE:
                        return
            except OSError:
                pass  # the client hung up (its deadline)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1", stats
    finally:
        stop.set()
        srv.close()


def backend(url: str, concurrency: int = 1, timeout_s: float = 30.0,
            tries: int = 1) -> EndpointBackend:
    opts = EndpointOptions(url=url, model="tiny", concurrency=concurrency, timeout_s=timeout_s,
                           use_cache=False, api_key_env=None,
                           retry=RetryPolicy(max_tries=tries, base_s=0.01))
    return EndpointBackend(opts, features=frozenset())


def prompts(n: int) -> list[Prompt]:
    return [Prompt(text=f"question {i}") for i in range(n)]


def test_one_thread_sends_its_requests_over_one_connection() -> None:
    with raw_server(lambda c, k: ANSWER) as (url, stats):
        b = backend(url)
        for p in prompts(12):  # one at a time, as a run with one in flight sends them
            assert b.generate([p], GEN)[0].startswith("echo ")
        assert (stats.requests, stats.accepts) == (12, 1)  # urllib: 12 connections
        assert b.client.connections.opened == 1


def test_requests_in_flight_keep_one_connection_per_worker() -> None:
    with raw_server(lambda c, k: ANSWER) as (url, stats):
        b = backend(url, concurrency=4)
        for _ in range(3):
            assert len(b.generate(prompts(16), GEN)) == 16
        assert stats.requests == 48 and stats.accepts <= 4


def test_a_server_closing_between_requests_fails_no_row() -> None:
    # it answers two requests per connection, then hangs up without a word
    with raw_server(lambda c, k: CLOSE if k == 1 else ANSWER) as (url, stats):
        b = backend(url, tries=1)  # no retries: a stale connection would fail a row
        texts = [b.generate([p], GEN)[0] for p in prompts(10)]
        assert all(t.startswith("echo ") for t in texts)
        assert (stats.requests, stats.accepts) == (10, 5)


def test_a_connection_closed_as_the_request_goes_out_is_sent_again_at_once() -> None:
    # the second request of every connection meets a server that just closed it
    with raw_server(lambda c, k: DROP if k == 1 else ANSWER) as (url, stats):
        b = backend(url, tries=1)
        texts = [b.generate([p], GEN)[0] for p in prompts(5)]
        assert all(t.startswith("echo ") for t in texts)
        # 5 answered, 4 dropped (each resent once on a new connection, at once)
        assert (stats.requests, stats.accepts) == (9, 5)


def test_a_server_dropping_a_new_connection_is_not_resent_at_once() -> None:
    with raw_server(lambda c, k: DROP) as (url, stats):
        with pytest.raises(VlmrobustError, match="connection lost"):
            backend(url, tries=2).generate(prompts(1), GEN)
        assert stats.requests == 2  # the two tries, no extra resend


def test_the_deadline_ends_a_stall_on_a_reused_connection() -> None:
    # the first connection answers once, then drips; later connections answer
    with raw_server(lambda c, k: DRIP if (c, k) == (0, 1) else ANSWER) as (url, stats):
        b = backend(url, timeout_s=1.5)
        assert b.generate(prompts(1), GEN)
        start = time.monotonic()
        with pytest.raises(VlmrobustError) as exc:
            b.generate([Prompt(text="stalled")], GEN)
        took = time.monotonic() - start
        assert "no response within 1.5 s" in str(exc.value) and took < 6.0, took
        # the shut connection is dropped: the next request opens a new one
        assert b.generate([Prompt(text="after")], GEN)[0].startswith("echo ")
        assert stats.accepts == 2


def test_a_half_read_response_does_not_poison_the_connection() -> None:
    big = json.dumps(completion({"messages": [{"content": "x"}], "model": "m"})
                     | {"padding": "x" * 4096}).encode()

    def answer(n: int, body: dict[str, object]) -> tuple[int, dict[str, str], bytes]:
        if n == 0:
            return 200, {}, big
        if n == 1:  # an error body longer than the 64 KiB read of it
            return 400, {}, b'{"error": "' + b"y" * 100_000 + b'"}'
        return 200, {}, json.dumps(completion(body)).encode()

    with FakeServer(answer, keep_alive=True) as fake:
        opts = EndpointOptions(url=fake.url, model="tiny", use_cache=False, api_key_env=None,
                               retry=RetryPolicy(max_tries=1), max_response_bytes=2048)
        b = EndpointBackend(opts, features=frozenset())
        with pytest.raises(VlmrobustError, match="larger than 2048 bytes"):
            b.generate(prompts(1), GEN)
        with pytest.raises(VlmrobustError, match="HTTP 400"):
            b.generate(prompts(1), GEN)
        assert b.generate(prompts(1), GEN)[0].startswith("echo ")
        assert b.generate(prompts(1), GEN)[0].startswith("echo ")
        assert fake.accepts == 3  # both broken connections replaced; the last one kept


def test_an_endless_body_without_a_length_is_cut_at_the_bound() -> None:
    stop = threading.Event()
    srv = socket.create_server(("127.0.0.1", 0))

    def endless() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
            try:
                while not stop.is_set():
                    conn.sendall(b"[" * 4096)
            except OSError:
                pass

    threading.Thread(target=endless, daemon=True).start()
    try:
        opts = EndpointOptions(url=f"http://127.0.0.1:{srv.getsockname()[1]}/v1", model="m",
                               use_cache=False, api_key_env=None, timeout_s=20,
                               retry=RetryPolicy(max_tries=1), max_response_bytes=1 << 20)
        start = time.monotonic()
        with pytest.raises(VlmrobustError, match="larger than 1048576 bytes"):
            EndpointBackend(opts, features=frozenset()).generate(prompts(1), GEN)
        assert time.monotonic() - start < 10
    finally:
        stop.set()
        srv.close()


def test_no_proxy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer() as proxy, FakeServer(keep_alive=True) as server:
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
                     "all_proxy"):
            monkeypatch.setenv(name, proxy.url.removesuffix("/v1"))
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert backend(server.url).generate(prompts(2), GEN)
        assert len(server.received) == 2 and proxy.received == [] and proxy.gets == []
