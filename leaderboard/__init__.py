"""Static leaderboard: read scored submissions, fit effective-robustness baselines,
render a self-contained HTML site and publish it atomically."""

from leaderboard.aggregate import Leaderboard, aggregate
from leaderboard.baselines import BaselineSpec, load_baselines
from leaderboard.load import Submission, load_submissions
from leaderboard.publish import build_site, publish_site

__all__ = [
    "BaselineSpec",
    "Leaderboard",
    "Submission",
    "aggregate",
    "build_site",
    "load_baselines",
    "load_submissions",
    "publish_site",
]
