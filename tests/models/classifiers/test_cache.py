"""The classifier's per-pixel logits cache: same pixels -> one forward, same rows."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

from vlmrobust.models import load_adapter
from vlmrobust.models.classifiers import adapter as clf


def _img(seed: int) -> Image.Image:
    arr = np.random.default_rng(seed).integers(0, 256, size=(40, 52, 3), dtype=np.uint8)
    return Image.fromarray(arr)


def test_repeated_pixels_run_the_model_once(monkeypatch: Any) -> None:
    adapter = load_adapter("classifier:efficientnet-lite0")
    seen: list[int] = []
    real = adapter._class_logits

    def counting(images: Any) -> np.ndarray:
        seen.append(len(images))
        return real(images)

    monkeypatch.setattr(adapter, "_class_logits", counting)
    monkeypatch.setattr(clf, "_LOGITS_CACHE", type(clf._LOGITS_CACHE)())
    a, b = _img(1), _img(2)
    # a PNG round trip has the same pixels, so it is the same cache entry
    buf = io.BytesIO()
    a.save(buf, format="PNG")
    a_png = Image.open(io.BytesIO(buf.getvalue()))
    first = adapter.class_logits([a, b, a_png])
    assert seen == [2]
    np.testing.assert_array_equal(first[0], first[2])
    assert not np.allclose(first[0], first[1])
    again = adapter.class_logits([b, a])
    assert seen == [2]  # no new forward pass
    np.testing.assert_array_equal(again, first[[1, 0]])
    # the cache is bounded
    monkeypatch.setattr(clf, "LOGITS_CACHE_SIZE", 1)
    adapter.class_logits([_img(3)])
    assert len(clf._LOGITS_CACHE) == 1
