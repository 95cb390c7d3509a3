"""Hostile inputs to the endpoint backend (issue 40 item 11): flags and URLs that
used to give tracebacks, a ``Retry-After: nan``, and servers that hold a request
past any timeout by dripping bytes or sending ``100 Continue`` forever."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.endpoint import FakeServer, completion, ok
from tests.fixtures.predict import write_mcq
from vlmrobust.cli.main import main
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions
from vlmrobust.models.backends.endpoint.client import RetryPolicy

GEN = GenerationConfig(max_new_tokens=4)


def run_predict(tmp_path: Path, *flags: str) -> tuple[int, str]:
    dataset = write_mcq(tmp_path / "ds", {"default": 2}, with_class_ids=False)
    rc = main(["predict", "--model", "endpoint:m", "--dataset", str(dataset), "--out",
               str(tmp_path / "p.parquet"), "--mode", "generate", "--no-progress",
               "--no-endpoint-cache", *flags])
    assert not (tmp_path / "p.parquet").exists()
    return rc, ""


@pytest.mark.parametrize(("flags", "message"), [
    (["--endpoint-timeout", "nan"], "--endpoint-timeout nan: give seconds > 0"),
    (["--endpoint-timeout", "inf"], "--endpoint-timeout inf: give seconds > 0"),
    (["--endpoint-timeout", "1e308"], "and at most 86400"),
    (["--endpoint-max-response-mib", "nan"], "--endpoint-max-response-mib 0"),
    (["--endpoint-max-response-mib", "5000"], "at most 1024"),
    (["--endpoint-url", "http://127.0.0.1:70000/v1"], "a port of 1 to 65535"),
    (["--endpoint-url", "http://127.0.0.1:0/v1"], "a port of 1 to 65535"),
    (["--endpoint-url", "http://exämple.com/v1"], "write the URL in ASCII"),
])
def test_bad_flags_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                flags: list[str], message: str) -> None:
    url = [] if "--endpoint-url" in flags else ["--endpoint-url", "http://127.0.0.1:9/v1"]
    rc, _ = run_predict(tmp_path, *url, *flags)
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err.count("\n") == 0 and message in err, err
    assert "Traceback" not in err


def backend(url: str, timeout_s: float, waits: list[float] | None = None,
            tries: int = 1) -> EndpointBackend:
    opts = EndpointOptions(url=url, model="tiny", timeout_s=timeout_s, use_cache=False,
                           retry=RetryPolicy(max_tries=tries, base_s=0.25), api_key_env=None)
    sleep: Callable[[float], None] = (waits.append if waits is not None else time.sleep)
    return EndpointBackend(opts, sleep=sleep, features=frozenset())


def test_retry_after_nan_is_ignored_not_slept(tmp_path: Path) -> None:
    def nan_then_ok(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if n == 0:
            return 429, {"Retry-After": "nan"}, b'{"error": "busy"}'
        return ok(n, body)

    waits: list[float] = []
    with FakeServer(nan_then_ok) as fake:
        texts = backend(fake.url, 10.0, waits, tries=3).generate([Prompt(text="q")], GEN)
    assert len(texts) == 1
    # time.sleep(nan) raises: the server's nan must give the ordinary backoff
    assert waits == [0.25] and all(math.isfinite(w) for w in waits)


@contextmanager
def raw_server(talk: Callable[[socket.socket, threading.Event], None]) -> Iterator[str]:
    """A TCP server that reads a request's first bytes, then runs ``talk`` on it."""
    stop = threading.Event()
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    def handle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                talk(conn, stop)
            except OSError:
                pass  # the client hung up: what the deadline does

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    finally:
        stop.set()
        srv.close()


def drip(conn: socket.socket, stop: threading.Event) -> None:
    body = json.dumps(completion({"messages": [{"content": "q"}], "model": "tiny"})).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body))
    for byte in body:
        if stop.wait(0.5):
            return
        conn.sendall(bytes([byte]))


def endless_continue(conn: socket.socket, stop: threading.Event) -> None:
    while not stop.wait(0.1):
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")


@pytest.mark.parametrize("talk", [drip, endless_continue], ids=["drip", "100-continue"])
def test_a_stalling_server_cannot_hold_a_request_past_the_timeout(
        talk: Callable[[socket.socket, threading.Event], None]) -> None:
    with raw_server(talk) as url:
        b = backend(url, 1.5)
        start = time.monotonic()
        with pytest.raises(VlmrobustError) as exc:
            b.generate([Prompt(text="q")], GEN)
        took = time.monotonic() - start
    msg = str(exc.value)
    assert "\n" not in msg and "no response within 1.5 s" in msg
    assert took < 6.0, took


def test_oversized_response_names_a_flag_predict_has(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    huge = json.dumps(completion({"messages": [{"content": "x"}], "model": "m"})
                      | {"padding": "x" * 300_000}).encode()
    with FakeServer(lambda n, body: (200, {}, huge)) as fake:
        rc, _ = run_predict(tmp_path, "--endpoint-url", fake.url,
                            "--endpoint-max-response-mib", "0.25", "--endpoint-retries", "0")
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err.count("\n") == 0
    assert "larger than 262144 bytes" in err and "--endpoint-max-response-mib" in err
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    assert "--endpoint-max-response-mib" in capsys.readouterr().out
