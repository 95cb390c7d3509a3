"""Image-embedding hook for the builders (visual-distractor mining, Bench-C's
diversity term): batched, cached adapter loading, one call.

>>> import numpy as np
>>> batched_rows(list(range(5)), 2)
[[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import Adapter

T = TypeVar("T")


def batched_rows(items: Sequence[T], size: int) -> list[list[T]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


@functools.lru_cache(maxsize=4)
def cached_adapter(model: str, device: str | None = None) -> Adapter:
    """One loaded adapter per (model, device) per process."""
    from vlmrobust.models.lookup import load_adapter

    return load_adapter(model, device=device)


def embed_images(model: str | Adapter, images: Sequence[Any], device: str | None = None,
                 batch_size: int = 32, progress: bool = False) -> np.ndarray:
    """L2-normalised image embeddings, float32 (N, D), in input order.

    ``model`` is an adapter name (e.g. ``classifier:efficientnet-lite0``: pooled
    penultimate features; ``clip:...``: the joint image-text space) or an adapter.
    Images are PIL images, HF ``{"bytes", "path"}`` dicts or encoded bytes.
    """
    if batch_size < 1:
        raise VlmrobustError(f"batch_size must be >= 1, got {batch_size}")
    adapter = cached_adapter(model, device) if isinstance(model, str) else model
    from tqdm.auto import tqdm

    parts = [adapter.embed_images(batch)
             for batch in tqdm(batched_rows(images, batch_size), disable=not progress,
                               desc=f"embed {adapter.name}", unit="batch")]
    if not parts:
        raise VlmrobustError("embed_images needs at least one image")
    return np.concatenate(parts).astype(np.float32, copy=False)


def class_prototypes(model: str | Adapter = "classifier:efficientnet-lite0",
                     device: str | None = None) -> np.ndarray:
    """float32 (1000, D) L2-normalised classifier weight rows, in the space of
    :func:`embed_images` for the same classifier."""
    adapter = cached_adapter(model, device) if isinstance(model, str) else model
    protos = getattr(adapter, "class_prototypes", None)
    if protos is None:
        raise VlmrobustError(f"{adapter.name} has no class prototypes (use a classifier)")
    return np.asarray(protos(), dtype=np.float32)
