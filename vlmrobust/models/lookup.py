"""Finding an adapter family by the prefix of a model name, over the registry
:data:`vlmrobust.models.base.ADAPTER_FAMILIES`. It imports no implementation:
:mod:`vlmrobust.models.registration` does, and the package's ``__init__`` imports
that, so the registry is full before any of these runs. Families built on another
family (describe, pipeline, the encoders) look it up here, below the module that
registers them (issue 38.4: no import circles).

An adapter name is ``<family>:<target>``, e.g. ``classifier:efficientnet-lite0``,
``clip:ViT-B-32:openai`` or ``vlm:/models/llava``. Parsing validates the family
and, where it can be checked without loading anything, the target, so that bad
input fails before any model is loaded.
"""

from __future__ import annotations

from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import ADAPTER_FAMILIES, Adapter, AdapterSpec


def parse_adapter_name(name: str) -> AdapterSpec:
    """Validate ``name`` without loading any model.

    >>> parse_adapter_name("classifier:efficientnet-lite0").required_columns[-1]
    'option_class_ids'
    """
    family, sep, target = name.partition(":")
    if not sep or not target:
        known = ", ".join(f"{f}:..." for f in ADAPTER_FAMILIES)
        raise VlmrobustError(
            f"model name {name!r} must look like FAMILY:MODEL "
            f"(e.g. classifier:efficientnet-lite0; families: {known})"
        )
    return ADAPTER_FAMILIES.get(family).parse(name, target)


def load_adapter(name: str, device: str | None = None, **opts: Any) -> Adapter:
    """Load the adapter called ``name`` on ``device`` (None: CUDA when present, else CPU)."""
    spec = parse_adapter_name(name)
    # the registry is keyed by the name's prefix; spec.family is the model family
    # reported in meta.yaml (a pipeline's is "other")
    return ADAPTER_FAMILIES.get(name.partition(":")[0]).load(spec, device, **opts)
