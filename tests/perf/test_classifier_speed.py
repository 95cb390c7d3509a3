"""Images/second of the EfficientNet-Lite0 classifier adapter on this machine
(preprocessing + forward + option gather), batch 1 and batch 32.

Run: python -m pytest tests/perf/test_classifier_speed.py --benchmark-only
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import skimage.data
from PIL import Image

from evaluation.adapters import load_adapter


@pytest.fixture(scope="module")
def lite0() -> Any:
    return load_adapter("classifier:efficientnet-lite0", device="cpu")


@pytest.mark.parametrize("batch", [1, 32])
def test_lite0_images_per_second(benchmark: Any, lite0: Any, batch: int) -> None:
    photo = Image.fromarray(skimage.data.chelsea())
    rows = [{"image": photo, "options": ["tabby", "tiger cat", "Egyptian cat", "cup", "goldfish"],
             "option_class_ids": [281, 282, 285, 968, 1]}] * batch
    lite0.option_logits(rows)  # warm-up (allocator, thread pool)
    out = benchmark.pedantic(lite0.option_logits, args=(rows,), rounds=3 if batch > 1 else 10,
                             iterations=1)
    assert out.shape == (batch, 5) and np.isfinite(out).all()
    images_per_s = batch / benchmark.stats.stats.mean
    benchmark.extra_info["images_per_second"] = round(images_per_s, 1)
    print(f"\nEfficientNet-Lite0 batch {batch}: {images_per_s:.1f} images/s")
