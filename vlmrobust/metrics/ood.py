"""Deprecated import path: moved to :mod:`vlmrobust.metrics.holistic.ood` (issue 38). This re-export
stays for one minor version and warns on use."""

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    warnings.warn(
        f"vlmrobust.metrics.ood.{name} moved to vlmrobust.metrics.holistic.ood.{name}; the old path goes in the next minor version",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("vlmrobust.metrics.holistic.ood"), name)
