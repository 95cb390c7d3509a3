"""The one module that imports every implementation and so fills the registries:
adapter families (classifier, clip, vlm, moondream, endpoint, pipeline, describe), backends (``hf``,
``endpoint``) and
readers (answer modes), as lm-evaluation-harness's ``models/__init__.py``
does. The protocol modules (models.base, models.backends.base,
models.readers.base) never import their implementations.

An adapter name is ``<family>:<target>``, e.g. ``classifier:efficientnet-lite0``,
``clip:ViT-B-32:openai`` or ``vlm:/models/llava``. Parsing validates the family
and, where it can be checked without loading anything, the target, so that bad
input fails before any model is loaded.
"""

from __future__ import annotations

from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models import describe, moondream, pipeline, readers, vlm  # noqa: F401
from vlmrobust.models.backends import endpoint, endpoint_adapter, hf  # noqa: F401
from vlmrobust.models.backends.base import BACKENDS
from vlmrobust.models.base import ADAPTER_FAMILIES, Adapter, AdapterSpec
from vlmrobust.models.classifiers import adapter as classifier  # noqa: F401
from vlmrobust.models.clip import openclip as clip  # noqa: F401

if "hf" not in BACKENDS:
    BACKENDS.add("hf", hf.HF_FAMILY)
if "endpoint" not in BACKENDS:
    BACKENDS.add("endpoint", endpoint.ENDPOINT_FAMILY)


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
