"""When lmms-eval's multiple_choice values are not log-likelihoods of the
option: ``llava_hf`` (issue 36.6).

lmms-eval 0.7.3's ``llava_hf.loglikelihood`` (models/simple/llava_hf.py) scores
the prompt with its image and masks the labels by the prompt tokenised
*without* the image::

    model_inputs = self._image_processor(text=formatted_continuation, images=visuals, ...)
    contxt_id = self._image_processor(text=formatted_contexts, return_tensors="pt")["input_ids"]
    labels[:, : contxt_id.shape[1]] = -100

LLaVA's processor writes ``<image>`` as one token per image feature only when it
is given the image, so with N image tokens the loss it returns is the mean over
the option's tokens *and* the prompt's last N - 1 tokens. That value ranks the
options as lmms-eval ranks them (its ``acc`` is the argmin), but it is neither
our ``likelihood:avg`` nor a probability: on a 16-token tiny LLaVA the logits
differ by up to 0.147 and 3 of 12 rows pick another option (issue 36; 0.040 on
the 3 rows of tests/evaluation/harness/lmms_eval/test_run.py), and on a 576-token
LLaVA-1.5 the option is a small part of the mean. Such a log is imported with
lmms-eval's choice as ``prediction`` and no logits (accuracy only; the scorer
then computes no RAS, ΔS/ΔC, calibration or CFG figures), and the reason is
recorded as ``harness.accuracy_only``. With one image token (N = 1) nothing
extra is averaged and the logits are kept (measured equal to ``likelihood:avg``
to < 1e-6 in tests/evaluation/harness/lmms_eval/test_run.py).

N is read from the model's ``config.json`` (lmms-eval's ``--model_args
pretrained=``: a local folder, or the Hugging Face cache for a hub id; nothing
is downloaded). A model whose N cannot be read is treated as N > 1: every
published LLaVA has hundreds of image tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vlmrobust.evaluation.harness.lmms_eval.task import MULTIPLE_CHOICE

#: lmms-eval model classes that mask the prompt by its length without image tokens
MEAN_OVER_PROMPT_CLASSES = ("llava_hf",)
#: llava_hf's ``pretrained`` when --model_args names none (its __init__ default)
DEFAULT_PRETRAINED = "llava-hf/llava-1.5-7b-hf"
MAX_CONFIG_BYTES = 1 << 20


def parse_model_args(value: Any) -> dict[str, str]:
    """lmms-eval's ``--model_args`` as its results JSON records it: the command
    line's ``k=v,k=v`` string, or a mapping.

    >>> parse_model_args("pretrained=llava-hf/llava-1.5-7b-hf,device=cpu")
    {'pretrained': 'llava-hf/llava-1.5-7b-hf', 'device': 'cpu'}
    >>> parse_model_args(None)
    {}
    """
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if not isinstance(value, str):
        return {}
    out: dict[str, str] = {}
    for part in value.split(","):
        key, eq, val = part.partition("=")
        if eq and key.strip():
            out[key.strip()] = val.strip()
    return out


def image_tokens(config: Mapping[str, Any]) -> int | None:
    """Tokens one image takes in a LLaVA (``model_type`` llava, CLIP vision
    tower) prompt, as its processor expands ``<image>``: one per patch,
    (image_size // patch_size)², plus the CLS token under
    ``vision_feature_select_strategy`` "full" ("default" drops it). None for any
    other model (LLaVA-NeXT's any-resolution tiles: many more, by image size).

    >>> image_tokens({"model_type": "llava", "vision_config": {"image_size": 336, "patch_size": 14}})
    576
    >>> image_tokens({"model_type": "llava", "vision_feature_select_strategy": "full",
    ...               "vision_config": {"image_size": 8, "patch_size": 8}})
    2
    >>> image_tokens({"model_type": "llava_next"}) is None
    True
    """
    vision = config.get("vision_config")
    if config.get("model_type") != "llava" or not isinstance(vision, Mapping) \
            or vision.get("model_type", "clip_vision_model") != "clip_vision_model":
        return None
    # LlavaConfig's and CLIPVisionConfig's defaults where the saved config omits them
    size, patch = vision.get("image_size", 224), vision.get("patch_size", 32)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (size, patch)):
        return None
    cls = config.get("vision_feature_select_strategy", "default") == "full"
    return int((size // patch) ** 2 + cls)


def model_config(pretrained: str, revision: str | None) -> dict[str, Any] | None:
    """``pretrained``'s config.json: in its folder, or in the Hugging Face cache
    (never downloaded); None when neither holds a readable one."""
    from vlmrobust.core.errors import VlmrobustError
    from vlmrobust.core.files.bounded import read_json_bounded

    local = Path(pretrained).expanduser() / "config.json"
    path = local if local.is_file() else _cached_config(pretrained, revision)
    if path is None:
        return None
    try:
        obj = read_json_bounded(path, MAX_CONFIG_BYTES, "model config")
    except (VlmrobustError, OSError):
        return None
    return obj if isinstance(obj, dict) else None


def _cached_config(repo_id: str, revision: str | None) -> Path | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except (ImportError, ValueError, OSError):  # ValueError: not a repo id (a missing folder)
        return None
    return Path(found) if isinstance(found, str) else None


def accuracy_only_reason(results: Mapping[str, Any], output_type: str) -> str | None:
    """Why the logged values of a log are not our logits (module doc), or None
    when they are: another model class, a generate_until log, or a LLaVA whose
    image is one token."""
    config = results.get("config")
    model_class = config.get("model") if isinstance(config, Mapping) else None
    if output_type != MULTIPLE_CHOICE or model_class not in MEAN_OVER_PROMPT_CLASSES:
        return None
    args = parse_model_args(config.get("model_args") if isinstance(config, Mapping) else None)
    found = model_config(args.get("pretrained", DEFAULT_PRETRAINED), args.get("revision"))
    n = image_tokens(found) if found is not None else None
    if n == 1:
        return None
    why = ("no config.json of the model was found here" if found is None else
           "its config.json is no LLaVA with a CLIP tower, e.g. LLaVA-NeXT's image tiles")
    counted = (f"the prompt's last {n - 1} token{'s' if n > 2 else ''} too (the image is {n} "
               "tokens)" if n is not None and n > 1 else
               f"the prompt's last tokens too (the image's token count is unknown: {why})")
    return (f"lmms-eval's {model_class} averages each option's loss over {counted}; "
            "lmms-eval's choice (the argmin) is kept as the prediction and the values are "
            "withheld: accuracy only")
