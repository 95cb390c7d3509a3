"""Deprecated import path: moved to :mod:`vlmrobust.evaluation.scoring.dataset` (issue 38). This re-export
stays for one minor version and warns on use."""

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    warnings.warn(
        f"vlmrobust.evaluation.score.{name} moved to vlmrobust.evaluation.scoring.dataset.{name}; the old path goes in the next minor version",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("vlmrobust.evaluation.scoring.dataset"), name)
