"""Endpoint backend throughput: N requests in flight vs one at a time.

1. Against a real local server (``transformers serve`` on a tiny random LLaVA,
   CPU, cache off): requests per second with concurrency 1 and 8, and their
   ratio. transformers serve runs generation on one inference thread, so the
   gain here is only the overlap of HTTP, JSON and image decoding with the
   model's compute; engines that batch concurrent requests (vLLM, SGLang, TGI)
   gain far more.
2. Against a stand-in for a remote API (a local server that answers after a
   fixed 100 ms, as a network round trip would): the same two figures; here
   the ratio approaches the concurrency.

Run: python -m pytest tests/perf/test_endpoint_throughput.py --benchmark-only -s \
         -p no:doctest -o addopts=""
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from tests.fixtures.endpoint import FakeServer, completion, transformers_serve
from tests.fixtures.vlm import make_llava
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions

N_REQUESTS = 32
IN_FLIGHT = 8
GEN = GenerationConfig(max_new_tokens=16)


def _prompts(n: int) -> list[Prompt]:
    from PIL import Image

    return [Prompt(text=f"What is in this image? {i}",
                   image=Image.fromarray(np.random.default_rng([3, i]).integers(
                       0, 256, (48, 48, 3), dtype=np.uint8)))
            for i in range(n)]


def _rate(url: str, model: str, concurrency: int, items: list[Prompt]) -> float:
    opts = EndpointOptions(url=url, model=model, concurrency=concurrency, use_cache=False,
                           api_key_env=None, server_stop=False)
    backend = EndpointBackend(opts, features=frozenset())
    backend.generate(items[:2], GEN)  # warm the server's kernels and connections
    start = time.perf_counter()
    texts = backend.generate(items, GEN)
    rate = len(items) / (time.perf_counter() - start)
    assert len(texts) == len(items) and backend.sent == len(items) + 2
    return rate


def _report(benchmark: Any, label: str, url: str, model: str) -> dict[str, float]:
    items = _prompts(N_REQUESTS)
    # interleaved and repeated: on a shared machine a burst of load hits one run
    seq = _rate(url, model, 1, items)
    par = _rate(url, model, IN_FLIGHT, items)
    seq2 = _rate(url, model, 1, items)
    par = max(par, _rate(url, model, IN_FLIGHT, items))
    figures = {"sequential req/s": round(max(seq, seq2), 2),
               f"{IN_FLIGHT} in flight req/s": round(par, 2),
               "ratio": round(par / max(seq, seq2), 2)}
    print(f"\n[endpoint throughput] {label}: {N_REQUESTS} requests, sequential "
          f"{seq:.2f} / {seq2:.2f} req/s, {IN_FLIGHT} in flight {par:.2f} req/s, "
          f"ratio {figures['ratio']:.2f}x (best runs)")
    benchmark.extra_info.update({f"{label} {k}": v for k, v in figures.items()})
    return figures


def test_endpoint_throughput_real_server(benchmark: Any, tmp_path: Path) -> None:
    model_dir = make_llava(tmp_path / "llava")
    with transformers_serve(model_dir, tmp_path / "server.log") as url:
        figures = _report(benchmark, "transformers serve (CPU)", url, str(model_dir))
        # the benchmark's own timing: one in-flight run of the 32 requests
        benchmark.pedantic(_rate, args=(url, str(model_dir), IN_FLIGHT, _prompts(N_REQUESTS)),
                           rounds=1, iterations=1)
    assert figures["ratio"] > 0.8  # concurrency must not cost throughput


def test_endpoint_throughput_remote_latency(benchmark: Any) -> None:
    def answer_after_100ms(n: int, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        time.sleep(0.1)
        return 200, {}, json.dumps(completion(body)).encode()

    with FakeServer(answer_after_100ms) as fake:
        figures = _report(benchmark, "100 ms round trip", fake.url, "tiny")
        benchmark.pedantic(_rate, args=(fake.url, "tiny", IN_FLIGHT, _prompts(N_REQUESTS)),
                           rounds=1, iterations=1)
    assert figures["ratio"] > IN_FLIGHT / 2
