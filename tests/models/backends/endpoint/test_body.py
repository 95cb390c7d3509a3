"""Request bodies with their images spliced in (endpoint/body.py, issue 39.3):
the bytes sent, the cache key and the audit trail's rendering are exactly
those of plain json.dumps over the body, while the image's data URL is not
scanned per request."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.models.backends.base import Prompt
from vlmrobust.models.backends.endpoint import protocol as proto
from vlmrobust.models.backends.endpoint.body import DataURL, json_bytes, json_sha256
from vlmrobust.models.backends.endpoint.cache import request_key


def data_url(seed: int, n: int = 300) -> DataURL:
    raw = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()
    return DataURL("data:image/png;base64," + base64.b64encode(raw).decode("ascii"))


def body_of(texts: list[str], urls: list[DataURL]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": u}} for u in urls]
    content += [{"type": "text", "text": t} for t in texts]
    return {"model": "m", "messages": [{"role": "user", "content": content}],
            "temperature": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(), max_size=3), st.lists(st.integers(0, 9), max_size=3),
       st.booleans())
def test_spliced_json_is_plain_json(texts: list[str], seeds: list[int], canonical: bool) -> None:
    body = body_of(texts, [data_url(s) for s in seeds])
    kw: dict[str, Any] = ({"sort_keys": True, "separators": (",", ":")} if canonical else {})
    plain = json.dumps(body, ensure_ascii=False, **kw).encode("utf-8")
    assert json_bytes(body, **kw) == plain
    assert json_sha256(body, **kw) == hashlib.sha256(plain).hexdigest()


def test_cache_key_and_rendering_are_unchanged() -> None:
    url = data_url(1)
    body = body_of(["What is this? data:image/png;base64,QUJD"], [url, url])
    canon = json.dumps({"path": "chat/completions", "body": body}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=False)
    assert request_key("/chat/completions", body) == hashlib.sha256(canon.encode()).hexdigest()
    # the rendering before issue 39.3: every data URL found by its pattern in the dump
    old = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+",
                 lambda m: f"<image/png sha256={hashlib.sha256(m.group(0).encode()).hexdigest()[:16]}>",
                 json.dumps(body, sort_keys=True, ensure_ascii=False))
    assert proto.render(body) == old
    assert old.count(f"<image/png sha256={url.sha256[:16]}>") == 2  # and the text's one too
    assert "<image/png sha256=" + hashlib.sha256(b"data:image/png;base64,QUJD").hexdigest()[:16] \
        in old


@pytest.mark.parametrize("bad", ['data:x,"', "data:x,\\n", "data:é", "data:x\n"])
def test_a_data_url_json_would_escape_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        DataURL(bad)


def test_a_photo_is_not_scanned_per_request() -> None:
    """Sending, keying and rendering a request with a 640x480 photo's data URL
    (~1.2 MB) costs CPU on the order of one pass over it (the sha256 of the
    cache key), where three json.dumps scans and a regex used to."""
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    prompt = Prompt(text="What is in this image?", image=Image.fromarray(pixels))
    url = proto.image_data_url(prompt.image)
    assert isinstance(url, DataURL) and len(url) > 1_000_000
    body = {"model": "m", "messages": proto.messages(prompt), "max_tokens": 1}

    def old() -> None:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
        canon = json.dumps({"path": "p", "body": body}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
        hashlib.sha256(canon.encode("utf-8")).hexdigest()
        re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+",
               lambda m: hashlib.sha256(m.group(0).encode()).hexdigest()[:16],
               json.dumps(body, sort_keys=True, ensure_ascii=False))

    def new() -> None:
        json_bytes(body)
        request_key("p", body)
        proto.render(body)

    def cpu(fn: Any) -> float:
        best = []
        for _ in range(5):
            start = time.thread_time()
            fn()
            best.append(time.thread_time() - start)
        return min(best)

    assert cpu(new) < 0.5 * cpu(old), (cpu(new), cpu(old))
