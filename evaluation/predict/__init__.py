"""Running a model over a dataset: the run, its batches, distributed ranks, the
rows it plans and how it records provenance."""

import importlib
import warnings
from typing import Any


def __getattr__(name: str) -> Any:
    # vlmrobust.evaluation.predict was one module until issue 38; its names resolve here for one minor version.
    if name.startswith("__"):
        raise AttributeError(name)
    module = importlib.import_module("vlmrobust.evaluation.predict.dataset")
    if not hasattr(module, name):
        raise AttributeError(f"module 'vlmrobust.evaluation.predict' has no attribute {name!r}")
    warnings.warn(
        f"vlmrobust.evaluation.predict.{name} moved to vlmrobust.evaluation.predict.dataset.{name}; the old path goes in the next minor version",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(module, name)
