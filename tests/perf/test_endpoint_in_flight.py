"""Requests in flight through the CLI (issue 39.3 target: >= 0.8 N at N = 1,
8, 32, 64): `vlmrobust predict --model endpoint:...` as a subprocess against
a server that answers every request after a fixed 100 ms (a threaded
http.server in this process: a canned letter log-probs answer, nothing
parsed, so that it is not the bottleneck), --batch-size 4 whatever N is.

Throughput is the server's count of requests over the span from the first
request's arrival to the last answer (the CLI's start-up and the file's
writing are outside it, and printed beside it); the ideal is N / 100 ms. Each
N reads its own first 20 N + 20 rows (distinct 48 px images) of one dataset.

Run: python -m pytest tests/perf/test_endpoint_in_flight.py -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from tests.fixtures.endpoint import completion
from tests.fixtures.predict import mcq_features, png

LATENCY_S = 0.1
IN_FLIGHT = (1, 8, 32, 64)
TARGET = 0.8
BATCH = 4
LETTERS = [(" A", -0.2), (" B", -1.9), (" C", -2.6), (" D", -3.1), (" E", -3.9)]


def rows_for(n: int) -> int:
    return 20 * n + 20


class CannedServer:
    """Answers each POST after LATENCY_S with one canned completion; records
    (arrival, departure) times."""

    def __init__(self) -> None:
        body = {"model": "tiny", "logprobs": True, "top_logprobs": 5,
                "messages": [{"role": "user", "content": "x"}]}
        answer = json.dumps(completion(body, top=LETTERS)).encode()
        self.times: list[tuple[float, float]] = []
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                start = time.perf_counter()
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(LATENCY_S)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                with lock:
                    server.times.append((start, time.perf_counter()))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 256
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_dataset(out: Path, n: int) -> Path:
    from vlmrobust.core.writer import BuildInfo, write_dataset

    rng = np.random.default_rng(0)
    rows = [{"id": f"r{i:05d}", "question": "What is in this image?",
             "image": {"bytes": png(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)),
                       "path": None},
             "options": ["cat", "dog", "cup", "car"], "answer": 0} for i in range(n)]
    write_dataset(out, configs={"default": rows}, features=mcq_features(with_class_ids=False),
                  card="perf", info=BuildInfo("imagenet-mcq", "perf", 0))
    return out


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_in_flight_through_the_cli(tmp_path: Path) -> None:
    exe = shutil.which("vlmrobust", path=str(Path(sys.executable).parent))
    assert exe is not None, "the vlmrobust CLI is not installed next to this python"
    ds = write_dataset(tmp_path / "ds", rows_for(max(IN_FLIGHT)))
    server = CannedServer()
    lines = []
    ratios: dict[int, float] = {}
    cpus: dict[int, tuple[float, int]] = {}
    try:
        for n in IN_FLIGHT:
            server.times.clear()
            out = tmp_path / f"n{n}.parquet"
            t0, c0 = time.perf_counter(), _children_cpu()
            proc = subprocess.run(
                [exe, "predict", "--model", "endpoint:tiny", "--endpoint-url", server.url,
                 "--api-key-env", "NO_KEY_HERE", "--dataset", str(ds), "--out", str(out),
                 "--mode", "letter", "--endpoint-concurrency", str(n), "--batch-size",
                 str(BATCH), "--limit", str(rows_for(n)), "--no-endpoint-cache",
                 "--no-progress"], capture_output=True, text=True, check=False)
            wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
            assert proc.returncode == 0, proc.stderr[-2000:]
            times = sorted(server.times)
            work = times[1:]  # the first is the load-time probe for log-probs
            assert len(work) == rows_for(n)
            span = max(t[1] for t in work) - min(t[0] for t in work)
            rate = len(work) / span
            ratios[n] = rate * LATENCY_S / n
            lines.append(f"  N={n:3d}: {len(work)} requests in {span:.2f} s = {rate:.1f} req/s, "
                         f"{ratios[n]:.2f} N ({'meets' if ratios[n] >= TARGET else 'does NOT meet'}"
                         f" >= {TARGET} N); CLI wall {wall:.1f} s, CPU {cpu:.1f} s with start-up")
            cpus[n] = (cpu, len(work))
    finally:
        server.close()
    try:
        import os

        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    print(f"\nendpoint requests in flight through `vlmrobust predict` (--batch-size {BATCH}, "
          f"{LATENCY_S * 1000:.0f} ms per request, {load}):")
    print("\n".join(lines))
    # the two largest runs: both start warm (the first also fills the OS file cache)
    (c1, r1), (c2, r2) = cpus[IN_FLIGHT[-2]], cpus[IN_FLIGHT[-1]]
    per_request = (c2 - c1) / (r2 - r1)
    print(f"  the CLI's CPU per request (N={IN_FLIGHT[-1]} run less N={IN_FLIGHT[-2]} run, "
          f"start-up cancels): {1000 * per_request:.2f} ms, so one free core sustains "
          f"{1 / per_request:.0f} req/s ({max(IN_FLIGHT) / LATENCY_S:.0f} needed at "
          f"N={max(IN_FLIGHT)})")
    assert all(r > 0 for r in ratios.values())
