"""Any image encoder as an embedder for the builders (visual distractors, class
prototypes): L2-normalised float32 embeddings, one row per image.

Names (``visual.encoder`` in the imagenet-mcq spec):

- ``hf:<folder or hub id>``: a transformers vision backbone (DINOv2, DINOv3,
  ViT, ...) via ``AutoModel`` + ``AutoImageProcessor``; the embedding is the
  model's ``pooler_output`` (DINOv2/DINOv3: the final-layer-normed CLS token),
  else the first token of ``last_hidden_state``.
- ``timm:<arch>[:<checkpoint file> | :random]``: a timm backbone without its head
  (``num_classes=0``: pooled pre-logits features); ``random`` initialises it
  (tests), no suffix loads timm's pretrained weights from the hub cache.
- any adapter name (``classifier:...``, ``clip:...`` = the open_clip image tower,
  ``vlm:...``): that adapter's ``embed_images``.

>>> encoder_kind("hf:facebook/dinov3-vitb16-pretrain-lvd1689m"), encoder_kind("clip:ViT-B-32:openai")
('hf', 'adapter')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.hub_access import require_target
from vlmrobust.models.runtime import resolve_device, to_pil


def encoder_kind(name: str) -> str:
    prefix = name.partition(":")[0]
    return prefix if prefix in ("hf", "timm") else "adapter"


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.where(n > 0, n, 1.0), dtype=np.float32)


class HFImageEncoder:
    """transformers backbone: pooler_output (CLS after the final norm) per image."""

    def __init__(self, name: str, model: Any, processor: Any, device: Any) -> None:
        import torch

        self._torch = torch
        self.name = name
        self.model = model.eval().to(device)
        self.processor = processor
        self.device = device

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        torch = self._torch
        batch = self.processor(images=[to_pil(im) for im in images], return_tensors="pt")
        pixels = batch["pixel_values"].to(self.device, dtype=next(self.model.parameters()).dtype)
        with torch.inference_mode():
            out = self.model(pixel_values=pixels)
        feats = getattr(out, "pooler_output", None)
        if feats is None:
            feats = out.last_hidden_state[:, 0]
        return _normalise(feats.float().cpu().numpy())


class TimmImageEncoder:
    """timm backbone without its classifier: pooled pre-logits features."""

    def __init__(self, name: str, model: Any, transform: Any, device: Any) -> None:
        import torch

        self._torch = torch
        self.name = name
        self.model = model.eval().to(device)
        self.transform = transform
        self.device = device

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        torch = self._torch
        x = torch.stack([self.transform(to_pil(im)) for im in images]).to(self.device)
        with torch.inference_mode():
            feats = self.model(x)
        return _normalise(feats.float().cpu().numpy())


def _load_hf(name: str, target: str, device: Any) -> HFImageEncoder:
    require_target(name, target)
    from transformers import AutoImageProcessor, AutoModel

    try:
        processor = AutoImageProcessor.from_pretrained(target)
        model = AutoModel.from_pretrained(target)
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(f"{name}: could not load the transformers image encoder ({first}); "
                             "download it into the Hugging Face cache or give a local folder") from None
    return HFImageEncoder(name, model, processor, device)


def _load_timm(name: str, target: str, device: Any) -> TimmImageEncoder:
    import timm
    from timm.data import create_transform, resolve_data_config

    arch, _, weights = target.partition(":")
    if not timm.is_model(arch):
        raise VlmrobustError(f"{name}: unknown timm architecture {arch!r}")
    try:
        if weights == "random":
            model = timm.create_model(arch, pretrained=False, num_classes=0)
        elif weights:
            if not Path(weights).is_file():
                raise VlmrobustError(f"{name}: checkpoint {weights} not found")
            model = timm.create_model(arch, pretrained=False, num_classes=0,
                                      checkpoint_path=weights)
        else:
            model = timm.create_model(arch, pretrained=True, num_classes=0)
    except (RuntimeError, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(f"{name}: could not load timm weights ({first}); download them "
                             "into the Hugging Face cache first or give a checkpoint file") from None
    transform = create_transform(**resolve_data_config({}, model=model))
    return TimmImageEncoder(name, model, transform, device)


def load_image_encoder(name: str, device: str | None = None) -> Any:
    """An object with ``name`` and ``embed_images(images) -> (N, D)`` float32 rows
    (L2-normalised) for any of the names in the module docstring."""
    kind = encoder_kind(name)
    target = name.partition(":")[2]
    if kind != "adapter" and not target:
        raise VlmrobustError(f"image encoder {name!r}: give a model after '{kind}:'")
    if kind == "adapter":
        from vlmrobust.models.lookup import load_adapter

        return load_adapter(name, device=device)
    dev = resolve_device(device)
    return _load_hf(name, target, dev) if kind == "hf" else _load_timm(name, target, dev)
