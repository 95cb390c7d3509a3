"""Images/second of the EfficientNet-Lite0 classifier adapter on this machine
(preprocessing + forward + option gather), batch 1 and batch 32, with one torch
thread and with torch's default thread count.

Run: python -m pytest tests/perf/test_classifier_speed.py --benchmark-only -s
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import skimage.data
import torch
from PIL import Image

from vlmrobust.models import load_adapter
from vlmrobust.models.classifiers import adapter as clf

DEFAULT_THREADS = torch.get_num_threads()


@pytest.fixture(scope="module")
def lite0() -> Any:
    return load_adapter("classifier:efficientnet-lite0", device="cpu")


@pytest.fixture(params=sorted({1, DEFAULT_THREADS}))
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(previous)


@pytest.mark.parametrize("batch", [1, 32])
def test_lite0_images_per_second(benchmark: Any, lite0: Any, batch: int, threads: int) -> None:
    photo = Image.fromarray(skimage.data.chelsea())
    w, h = photo.size
    # distinct pixels per row: identical images would be computed once per call
    rows = [{"image": photo.crop((i, 0, w - 32 + i, h)),
             "options": ["tabby", "tiger cat", "Egyptian cat", "cup", "goldfish"],
             "option_class_ids": [281, 282, 285, 968, 1]} for i in range(batch)]
    lite0.option_logits(rows)  # warm-up (allocator, oneDNN primitives)

    def uncached() -> tuple[tuple[Any, ...], dict[str, Any]]:
        # the adapter caches logits per pixels; time real forward passes
        clf._LOGITS_CACHE.clear()
        return (rows,), {}

    out = benchmark.pedantic(lite0.option_logits, setup=uncached,
                             rounds=2 if batch > 1 else 10, iterations=1)
    assert out.shape == (batch, 5) and np.isfinite(out).all()
    images_per_s = batch / benchmark.stats.stats.mean
    benchmark.extra_info["images_per_second"] = round(images_per_s, 1)
    print(f"\nEfficientNet-Lite0 batch {batch}, {threads} thread(s): {images_per_s:.1f} images/s")


def test_lite0_cached_rows_per_second(benchmark: Any, lite0: Any) -> None:
    """The same image in 3 configs (MCQ strategies) or 2 stages: cache hits."""
    photo = Image.fromarray(skimage.data.chelsea())
    rows = [{"image": photo, "options": ["tabby", "tiger cat", "Egyptian cat", "cup", "goldfish"],
             "option_class_ids": [281, 282, 285, 968, 1]}] * 32
    lite0.option_logits(rows)
    out = benchmark.pedantic(lite0.option_logits, args=(rows,), rounds=5, iterations=1)
    assert out.shape == (32, 5)
    rows_per_s = 32 / benchmark.stats.stats.mean
    benchmark.extra_info["rows_per_second"] = round(rows_per_s, 1)
    print(f"\nEfficientNet-Lite0 cached rows: {rows_per_s:.1f} rows/s")
