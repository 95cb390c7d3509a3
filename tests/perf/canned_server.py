"""A stand-in for a served model in its own process, for the in-flight
benchmark (issue 39.3): a threaded HTTP/1.1 keep-alive server that answers
every POST with one canned chat completion after a fixed latency, reading
the body but parsing nothing, so that it costs little CPU and never shares
the client's GIL.

    python -m tests.perf.canned_server LATENCY_S

prints ``PORT`` on its first stdout line, then serves until stdin closes.
``GET /stats`` answers with what it saw since the last ``GET /reset``: each
request's (arrival, departure) on its own ``time.perf_counter`` clock, the
TCP connections it accepted, and its own CPU seconds (user + system).
"""

from __future__ import annotations

import json
import resource
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# the first token's letter log-probs, as a server with logprobs answers
LETTERS = [(" A", -0.2), (" B", -1.9), (" C", -2.6), (" D", -3.1), (" E", -3.9)]


def canned_answer() -> bytes:
    first = {"token": LETTERS[0][0], "logprob": LETTERS[0][1],
             "top_logprobs": [{"token": t, "logprob": v} for t, v in LETTERS]}
    return json.dumps({
        "id": "chatcmpl-canned", "object": "chat.completion", "created": 0, "model": "tiny",
        "choices": [{"index": 0, "finish_reason": "length", "logprobs": {"content": [first]},
                     "message": {"role": "assistant", "content": LETTERS[0][0]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.times: list[tuple[float, float]] = []
            self.accepts = 0
            self.cpu0 = _cpu()

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"times": list(self.times), "accepts": self.accepts,
                    "cpu_s": _cpu() - self.cpu0}


def serve(latency_s: float) -> None:
    answer = canned_answer()
    stats = Stats()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a client may reuse its connection
        # headers and body go out in two writes: with Nagle on, the second waits for
        # the client's delayed ACK (~40 ms) once a kept-alive connection leaves quick-ACK
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/reset":
                stats.reset()
                self._send(b"{}")
            else:
                self._send(json.dumps(stats.snapshot()).encode())

        def do_POST(self) -> None:
            start = time.perf_counter()
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            self._send(answer)
            with stats.lock:
                stats.times.append((start, time.perf_counter()))

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

        def get_request(self) -> Any:
            got = super().get_request()
            with stats.lock:
                stats.accepts += 1
            return got

    httpd = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(httpd.server_address[1], flush=True)
    sys.stdin.read()  # the parent closes stdin (or exits): stop
    httpd.shutdown()


if __name__ == "__main__":
    serve(float(sys.argv[1]))
