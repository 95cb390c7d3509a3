"""Checking a predictions file against the dataset it claims to answer."""

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    # vlmrobust.evaluation.validate was one module until issue 38; its names resolve here for one minor version.
    if name.startswith("__"):
        raise AttributeError(name)
    module = importlib.import_module("vlmrobust.evaluation.validate.check")
    if not hasattr(module, name):
        raise AttributeError(f"module 'vlmrobust.evaluation.validate' has no attribute {name!r}")
    warnings.warn(
        f"vlmrobust.evaluation.validate.{name} moved to vlmrobust.evaluation.validate.check.{name}; the old path goes in the next minor version",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(module, name)
