"""Any timm ImageNet-1k classifier: ``classifier:timm:<arch>`` (pretrained weights
from the local Hugging Face cache) or ``classifier:timm:<arch>:<checkpoint file>``.
Preprocessing is timm's own eval transform for the model's pretrained config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.classifiers.adapter import NUM_CLASSES, ClassifierModel


def split_timm_target(target: str) -> tuple[str, str | None]:
    """(arch, checkpoint) from ``<arch>[:<checkpoint>]``.

    >>> split_timm_target("resnet50:/ckpt/r50.pth")
    ('resnet50', '/ckpt/r50.pth')
    """
    arch, _, ckpt = target.partition(":")
    return arch, ckpt or None


def check_timm_target(name: str, target: str) -> None:
    try:
        import timm
    except ImportError:
        raise VlmrobustError(f"{name} needs timm: pip install 'vlmrobust[metadata]'") from None
    arch, ckpt = split_timm_target(target)
    if not timm.is_model(arch):
        import difflib

        close = difflib.get_close_matches(arch, timm.list_models(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise VlmrobustError(f"unknown timm architecture {arch!r}{hint}")
    if ckpt is not None and not Path(ckpt).is_file():
        raise VlmrobustError(f"{name}: checkpoint {ckpt} not found")


def load_timm(target: str, device: Any) -> ClassifierModel:
    import timm
    import torch
    from timm.data import create_transform, resolve_data_config

    arch, ckpt = split_timm_target(target)
    model: Any
    try:
        if ckpt is None:
            model = timm.create_model(arch, pretrained=True, num_classes=NUM_CLASSES)
        else:
            model = timm.create_model(arch, pretrained=False, num_classes=NUM_CLASSES,
                                      checkpoint_path=ckpt)
    except (RuntimeError, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(
            f"timm:{target}: could not load weights ({first}); download them into the "
            "Hugging Face cache first or give a checkpoint file"
        ) from None
    head = model.get_classifier()
    if not isinstance(head, torch.nn.Linear):
        raise VlmrobustError(f"timm:{arch}: classifier head is {type(head).__name__}, "
                             "only linear heads are supported")
    model.eval().to(device)
    transform = create_transform(**resolve_data_config({}, model=model))

    def features(x: Any) -> Any:
        return model.forward_head(model.forward_features(x), pre_logits=True)

    def preprocess(image: Any) -> np.ndarray:
        return np.asarray(transform(image.convert("RGB")).numpy(), dtype=np.float32)

    return ClassifierModel(module=model, features=features, head=head, preprocess=preprocess,
                           vision_encoder=arch)
