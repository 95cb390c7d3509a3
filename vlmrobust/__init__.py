"""vlmrobust: robustness benchmarks and leaderboard for VLMs and CLIP-style encoders."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("vlmrobust")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
