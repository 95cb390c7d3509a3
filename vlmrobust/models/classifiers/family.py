"""The ``classifier:`` adapter family: a name's target picks a classifier known by
short name (:data:`~vlmrobust.models.classifiers.adapter.CLASSIFIERS`, filled by
EfficientNet-Lite) or timm's. Above the adapter and the implementations, which
import the adapter's records and never this (issue 38.4: no import circles)."""

from __future__ import annotations

from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.models.base import ADAPTER_FAMILIES, AdapterFamily, AdapterSpec
from vlmrobust.models.classifiers.adapter import (
    CLASSIFIER_COLUMNS,
    CLASSIFIERS,
    ClassifierAdapter,
)
from vlmrobust.models.prompts import resolve_classifier_prompt
from vlmrobust.models.runtime import resolve_device


def _parse(name: str, target: str) -> AdapterSpec:
    if target.startswith("timm:"):
        from vlmrobust.models.classifiers.timm_models import check_timm_target

        check_timm_target(name, target[len("timm:"):])
    else:
        _ensure_registered()
        CLASSIFIERS.get(target)  # raises with the closest known name
    return AdapterSpec(name=name, family="classifier", target=target,
                       required_columns=CLASSIFIER_COLUMNS)


def _load(spec: AdapterSpec, device: str | None, prompt: str | None = None,
          **opts: Any) -> ClassifierAdapter:
    if opts:
        raise VlmrobustError(f"{spec.name}: unexpected options {sorted(opts)}")
    prompt_id = resolve_classifier_prompt(prompt)
    dev = resolve_device(device)
    if spec.target.startswith("timm:"):
        from vlmrobust.models.classifiers.timm_models import load_timm

        model = load_timm(spec.target[len("timm:"):], dev)
    else:
        _ensure_registered()
        model = CLASSIFIERS.get(spec.target)(dev)
    adapter = ClassifierAdapter(spec.name, model, dev)
    adapter.prompt_id = prompt_id
    return adapter


def _ensure_registered() -> None:
    from vlmrobust.models.classifiers import efficientnet_lite  # noqa: F401


ADAPTER_FAMILIES.add(
    "classifier",
    AdapterFamily("classifier", _parse, _load, help="ImageNet-1k classifiers"),
)
