"""vlmrobust: robustness benchmarks and leaderboard for VLMs and CLIP-style encoders."""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("vlmrobust")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "write_predictions"]


def __getattr__(name: str) -> Any:
    # Lazy, so that `import vlmrobust` stays light (no pyarrow, numpy or yaml),
    # and by name, so that the layers below (which import __version__ from here)
    # do not statically depend on evaluation.
    if name == "write_predictions":
        import importlib

        return importlib.import_module("vlmrobust.evaluation.predictions.api").write_predictions
    raise AttributeError(f"module 'vlmrobust' has no attribute {name!r}")
