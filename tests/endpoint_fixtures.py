"""Servers for the endpoint backend's tests: a REAL OpenAI-compatible server
(``transformers serve`` on a tiny random local VLM, started as a separate process
on a free localhost port) and a small fake used ONLY to inject failures
(429 storms, 5xx, timeouts, malformed JSON) and to return logprobs in OpenAI's
published response format, which transformers serve does not."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def transformers_serve(model_dir: Path, log: Path, timeout_s: float = 300.0) -> Iterator[str]:
    """``transformers serve MODEL_DIR`` on a free port; yields the base URL
    (``http://127.0.0.1:PORT/v1``) once /health answers; stopped afterwards."""
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
    if exe is None:
        raise RuntimeError("the transformers CLI is not installed next to this python")
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [exe, "serve", str(model_dir), "--host", "127.0.0.1", "--port", str(port),
             "--device", "cpu", "--log-level", "warning"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"transformers serve exited ({proc.returncode}): "
                                   f"{log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("transformers serve did not come up") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        # its own process group (start_new_session): stop exactly what was started
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def served_llava(factory: Any) -> Iterator[tuple[Path, str]]:
    """A tiny random LLaVA saved to a module temp folder and served by a real
    `transformers serve`: (model folder, base URL). A module fixture yields from it."""
    from tests.vlm_fixtures import make_llava

    root = factory.mktemp("served")
    model_dir = make_llava(root / "llava")
    with transformers_serve(model_dir, root / "server.log") as url:
        yield model_dir, url


def fake_text(body: dict[str, Any]) -> str:
    """The fake's deterministic answer: a digest of the user turn's text."""
    user = body["messages"][0]["content"]
    text = user if isinstance(user, str) else "".join(c.get("text", "") for c in user)
    return "echo " + hashlib.sha256(text.encode()).hexdigest()[:8]


def completion(body: dict[str, Any], top: list[tuple[str, float]] | None = None
               ) -> dict[str, Any]:
    """A chat completion in OpenAI's published format; with ``top`` (and a request
    that asked for logprobs) the first token's ``logprobs.content`` is filled."""
    choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": fake_text(body)},
                              "logprobs": None}
    if top is not None and body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        first = top[0]
        choice["logprobs"] = {"content": [{
            "token": first[0], "logprob": first[1], "bytes": list(first[0].encode()),
            "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode())}
                             for t, v in top[:k]]}]}
        choice["message"]["content"] = first[0]
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
            "model": body.get("model"), "choices": [choice],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


# What the fake does with request number n (0-based) and its body.
Action = Callable[[int, dict[str, Any]], tuple[int, dict[str, str], bytes]]


DROP = 0  # an action's status that closes the connection without answering


def ok(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, json.dumps(completion(body)).encode()


@dataclass
class FakeServer:
    action: Action = ok
    delay_s: float = 0.0
    received: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    routes: dict[str, bytes] = field(default_factory=dict)  # GET path -> JSON body
    gets: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # path, headers

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the test output clean
                pass

            def do_GET(self) -> None:
                with fake._lock:
                    fake.gets.append((self.path, dict(self.headers)))
                body = fake.routes.get(self.path)
                if body is None:
                    self._send(404, {}, b'{"detail": "Not Found"}')
                else:
                    self._send(200, {}, body)

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size))
                with fake._lock:
                    n = len(fake.received)
                    fake.received.append(body)
                    fake.headers.append(dict(self.headers))
                status, extra, payload = fake.action(n, body)
                if fake.delay_s:
                    time.sleep(fake.delay_s)
                if status == DROP:  # the server goes away mid-request: no answer at all
                    self.close_connection = True
                    return
                self._send(status, extra, payload)

            def _send(self, status: int, extra: dict[str, str], payload: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for k, v in extra.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
