"""Loading a transformers image-text-to-text model for the ``hf`` backend: on one
device, or sharded over a node's devices with accelerate's ``device_map``
(a model larger than one GPU), optionally running the modelling code a
checkpoint ships with (``trust_remote_code``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.hub_access import require_target
from vlmrobust.models.runtime import preferred_dtype, resolve_device

DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


@dataclass(frozen=True)
class HfLoadOptions:
    """``device``: one torch device (None: CUDA when present, else CPU);
    ``device_map``: accelerate's placement (auto, balanced, balanced_low_0,
    sequential) across every visible device instead of one;
    ``trust_remote_code``: let transformers run a checkpoint's own code."""

    device: str | None = None
    device_map: str | None = None
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        if self.device_map is not None and self.device_map not in DEVICE_MAPS:
            raise VlmrobustError(f"--device-map {self.device_map!r}: use one of "
                                 f"{', '.join(DEVICE_MAPS)}")
        if self.device_map is not None and self.device is not None:
            raise VlmrobustError("--device-map places the model on every visible device; "
                                 "drop --device (or --device-map)")

    @classmethod
    def from_mapping(cls, name: str, options: Mapping[str, Any]) -> HfLoadOptions:
        unknown = sorted(set(options) - {"device", "device_map", "trust_remote_code"})
        if unknown:
            raise VlmrobustError(f"{name}: unexpected options {unknown}")
        return cls(device=options.get("device"), device_map=options.get("device_map"),
                   trust_remote_code=bool(options.get("trust_remote_code", False)))


def load_model(name: str, target: str, opts: HfLoadOptions) -> tuple[Any, Any, Any]:
    """(model, processor, input device) for ``target`` (hub id or folder)."""
    require_target(name, target)  # offline and not cached: one line, no retries
    from transformers import AutoModelForImageTextToText, AutoProcessor

    if opts.device_map is not None:
        import importlib.util

        if importlib.util.find_spec("accelerate") is None:
            raise VlmrobustError(f"--device-map needs accelerate: pip install 'vlmrobust[predict]'"
                                 f" (or pip install accelerate) to load {name} sharded")
        import torch

        dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    else:
        dev = resolve_device(opts.device)
    trust = opts.trust_remote_code
    extra: dict[str, Any] = {} if opts.device_map is None else {"device_map": opts.device_map}
    try:
        processor = AutoProcessor.from_pretrained(target, trust_remote_code=trust)
        model = _auto_model(target, AutoModelForImageTextToText, preferred_dtype(dev), trust,
                            extra)
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if not trust and "trust_remote_code" in str(exc):
            raise VlmrobustError(
                f"{name}: the model's code ships with the checkpoint; if you trust it, "
                "pass --trust-remote-code (or set trust_remote_code: true in the spec)"
            ) from None
        raise VlmrobustError(f"{name}: could not load the model ({first})") from None
    if opts.device_map is None:
        model = model.to(dev)
    else:
        # accelerate placed the layers; inputs go where the embeddings live
        dev = model.get_input_embeddings().weight.device
    return model, processor, dev


def _auto_model(target: str, auto: Any, dtype: Any, trust: bool, extra: dict[str, Any]) -> Any:
    """The image-text-to-text class; a remote-code checkpoint that registers only
    a causal-LM class (MoonDream2 does) is tried as that."""
    try:
        return auto.from_pretrained(target, dtype=dtype, trust_remote_code=trust, **extra)
    except ValueError as exc:
        if not trust or "Unrecognized configuration class" not in str(exc):
            raise
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(target, dtype=dtype, trust_remote_code=True,
                                                **extra)
