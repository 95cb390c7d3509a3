"""Transformers CLIP (``CLIPModel`` and models with the same interface:
``get_image_features``, ``get_text_features``, ``logit_scale``) behind the clip
adapter: ``clip:hf:<hub id or saved folder>``. The model, tokenizer and image
processor are wrapped to look like an open_clip model (``encode_image``,
``encode_text``, ``logit_scale``, a preprocess of one PIL image, a tokenizer
of a list of texts), so :class:`vlmrobust.models.clip.openclip.ClipAdapter` scores
options and label spaces the same way for both: ``logit_scale·cos``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError

PREFIX = "hf:"


def check_target(name: str, target: str) -> None:
    """A saved folder with config.json, or a hub id (OWNER/NAME)."""
    path = Path(target)
    if path.exists():
        if not (path / "config.json").is_file():
            raise VlmrobustError(f"{name}: {path}/config.json not found; point clip:hf: at a "
                                 "saved transformers CLIP folder or a hub id")
    elif target.startswith((".", "/", "~")) or target.count("/") != 1:
        raise VlmrobustError(f"{name}: {target!r} is neither a model folder nor a hub id "
                             "(OWNER/NAME)")


def _features(out: Any) -> Any:
    """The projected embeddings: a tensor (transformers 4) or the pooled output
    of the returned model output (transformers 5)."""
    import torch

    if torch.is_tensor(out):
        return out
    pooled = getattr(out, "pooler_output", None)
    if pooled is None:
        raise VlmrobustError("the model's get_image_features/get_text_features returned no "
                             "pooled embeddings; it is not a CLIP-style model")
    return pooled


def wrap(model: Any) -> Any:
    """An ``nn.Module`` holding ``model`` with open_clip's method names."""
    import torch

    class OpenClipLike(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        @property
        def logit_scale(self) -> Any:
            return self.inner.logit_scale

        def encode_image(self, pixels: Any) -> Any:
            return _features(self.inner.get_image_features(pixel_values=pixels))

        def encode_text(self, tokens: Any) -> Any:
            return _features(self.inner.get_text_features(
                input_ids=tokens["input_ids"], attention_mask=tokens.get("attention_mask")))

    return OpenClipLike(model)


def load_hf_clip(target: str, device: Any) -> tuple[Any, Any, Any]:
    """(open_clip-like model, preprocess, tokenizer) of a transformers CLIP."""
    from vlmrobust.models.hub_access import require_target

    require_target(f"clip:hf:{target}", target)
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    try:
        model = AutoModel.from_pretrained(target).to(device)
        tok = AutoTokenizer.from_pretrained(target)
        images = AutoImageProcessor.from_pretrained(target)
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(f"clip:hf:{target}: could not load the model ({first})") from None
    if not all(hasattr(model, a) for a in ("get_image_features", "get_text_features",
                                           "logit_scale")):
        raise VlmrobustError(f"clip:hf:{target}: {type(model).__name__} is not a CLIP-style "
                             "model (get_image_features, get_text_features, logit_scale)")
    text_cfg = getattr(model.config, "text_config", model.config)
    max_len = int(getattr(text_cfg, "max_position_embeddings", 77))

    def preprocess(image: Any) -> Any:
        return images(images=image.convert("RGB"), return_tensors="pt")["pixel_values"][0]

    def tokenizer(texts: list[str]) -> Any:
        return tok(list(texts), padding=True, truncation=True, max_length=max_len,
                   return_tensors="pt")

    return wrap(model), preprocess, tokenizer
