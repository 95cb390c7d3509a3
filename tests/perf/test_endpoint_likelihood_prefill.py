"""``likelihood`` over a served model: prefill tokens per row for K = 5, 100
and 1,000 options (issue 36 item 1 goal: <= 2x the in-process count, the
prompt once plus every option's tokens), against the counting stand-in of an
engine's prefix cache (tests/fixtures/engine_cache.py; the image is 256
tokens, as a 448 px image is to Qwen2-VL), for both request patterns:

- ``--endpoint-engine sglang``: SGLang's /generate, one image prefill per row
  plus each option's tokens and one more (endpoint/sglang.py);
- the default (chat completions with vLLM's ``prompt_logprobs``): one full
  prefill per option plus one for the prompt, as vLLM recomputes any request
  that asks for prompt log-probs.

Wall time is printed beside (localhost HTTP, no model: it measures requests,
not compute).

Run: python -m pytest tests/perf/test_endpoint_likelihood_prefill.py -s -p no:doctest -o addopts=""
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures.engine_cache import CountingEngine, in_process, make_qwen_processor, sglang
from tests.perf.test_likelihood_prefix_reuse import class_names
from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions

IMAGE_TOKENS = 256
GOAL = 2.0


def cost(backend: Any, fake: CountingEngine, prompt: Prompt, options: list[str]
         ) -> tuple[int, float, list[np.ndarray]]:
    before = len(fake.prefilled)
    t0 = time.perf_counter()
    got = backend.continuation_logprobs([prompt], [options])[0]
    return sum(fake.prefilled[before:]), time.perf_counter() - t0, got


@pytest.mark.parametrize("k", [5, 100, 1000])
def test_prefill_tokens_per_row(tmp_path: Path, k: int) -> None:
    from PIL import Image

    processor = make_qwen_processor(tmp_path / "qwen")
    rng = np.random.default_rng(36)
    prompt = Prompt("What is in this image?",
                    image=Image.fromarray(rng.integers(0, 255, (56, 56, 3), dtype=np.uint8)))
    options = class_names(k)
    with CountingEngine(image_tokens=IMAGE_TOKENS) as fake:
        fast, t_fast, got = cost(sglang(fake.url, processor, concurrency=8), fake, prompt, options)
        local, want = in_process(fake, processor, prompt, options)
    with CountingEngine(image_tokens=IMAGE_TOKENS) as fake:
        chat = EndpointBackend(EndpointOptions(url=fake.url, model="tiny", use_cache=False,
                                               api_key_env=None, concurrency=8))
        slow, t_slow, _ = cost(chat, fake, prompt, options)
    print(f"\nK={k}: prefill tokens per row: in process {local}; --endpoint-engine sglang "
          f"{fast} ({fast / local:.2f}x, {t_fast:.2f} s); chat + prompt_logprobs {slow} "
          f"({slow / local:.1f}x, {t_slow:.2f} s)")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert fast <= GOAL * local
