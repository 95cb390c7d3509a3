"""Images of endpoint requests (endpoint/images.py): each image's pixels are
hashed once per request path (the body sent and its audit-trail rendering),
and the bytes sent are unchanged by that."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fixtures.endpoint import FakeServer
from vlmrobust.models import runtime
from vlmrobust.models.backends.base import GenerationConfig, Prompt
from vlmrobust.models.backends.endpoint import images as endpoint_images
from vlmrobust.models.backends.endpoint.backend import EndpointBackend, EndpointOptions


def photo(seed: int, shape: tuple[int, int] = (48, 64)) -> Any:
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 256, (*shape, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def backend(url: str, **options: Any) -> EndpointBackend:
    opts = EndpointOptions(url=url, model="tiny", use_cache=False, api_key_env=None, **options)
    return EndpointBackend(opts, features=frozenset())


def test_pixels_hashed_once_per_request_and_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = runtime.pixel_digest

    def counted(image: Any) -> bytes:
        calls.append(1)
        return real(image)

    monkeypatch.setattr(runtime, "pixel_digest", counted)
    endpoint_images.ENCODED.__init__()  # type: ignore[misc]  # a fresh cache
    prompts = [Prompt(text="What is this?", image=photo(s)) for s in (1, 2, 3)]
    with FakeServer() as fake:
        b = backend(fake.url)
        b.generate(prompts, GenerationConfig(max_new_tokens=4))
        texts = [b.render(p) for p in prompts]
    assert len(calls) == 3  # before: 6, once for the request and once for the rendering
    assert all("<image/png sha256=" in t for t in texts)
    # the digest carried is the one pixel_digest gives
    assert [endpoint_images.image_digest(p.image) for p in prompts] == \
        [real(p.image) for p in prompts]
    assert len(calls) == 3


def test_a_dict_image_is_hashed_each_time() -> None:
    import io

    buf = io.BytesIO()
    photo(4).save(buf, format="PNG")
    row = {"bytes": buf.getvalue(), "path": None}
    assert endpoint_images.image_digest(row) == runtime.pixel_digest(photo(4))
    assert set(row) == {"bytes", "path"}
