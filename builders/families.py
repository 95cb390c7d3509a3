"""Registry of benchmark families -> builder entry points.

A builder is ``build(raw_spec: dict, spec_path: Path, options: BuildOptions) -> dict``
(returns the manifest). Entry points are imported lazily so that
``vlmrobust --help`` does not import torch."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.core.registry import Registry


@dataclass(frozen=True)
class BuildOptions:
    """Command-line choices shared by every family (defaults live here only)."""

    out: Path
    sample: bool = False
    source_root: Path | None = None
    workers: int = 1
    progress: bool = True
    device: str | None = None
    limit: int | None = None
    trust_remote_code: bool = False  # vlm selectors may run their checkpoint's own code

    def __post_init__(self) -> None:
        if self.sample and self.source_root is not None:
            raise ValueError("choose either --sample or --source-root, not both")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit}")


Builder = Callable[[dict[str, Any], Path, BuildOptions], dict[str, Any]]

FAMILIES: Registry[str] = Registry("benchmark family")
FAMILIES.add("imagenet-mcq", "vlmrobust.builders.imagenet_mcq.build:build")
FAMILIES.add("bench-c", "vlmrobust.builders.bench_c.build:build")
FAMILIES.add("imagewikiqa", "vlmrobust.builders.imagewikiqa.build:build")
FAMILIES.add("ood", "vlmrobust.builders.ood.build:build")
FAMILIES.add("cue-conflict", "vlmrobust.builders.cue_conflict.build:build")
FAMILIES.add("retrieval", "vlmrobust.builders.retrieval.build:build")
FAMILIES.add("classification", "vlmrobust.builders.classification.build:build")
FAMILIES.add("failure-discovery", "vlmrobust.builders.failure_discovery.build:build")


def get_builder(family: str) -> Builder:
    target = FAMILIES.get(family)
    module_name, attr = target.split(":")
    fn: Builder = getattr(importlib.import_module(module_name), attr)
    return fn
