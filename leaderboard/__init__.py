"""Static leaderboard: read scored submissions, fit effective-robustness baselines,
render a self-contained HTML site and publish it atomically."""

from vlmrobust.leaderboard.aggregate import aggregate
from vlmrobust.leaderboard.board import Leaderboard
from vlmrobust.leaderboard.load import load_submissions
from vlmrobust.leaderboard.site.publish import build_site, publish_site
from vlmrobust.leaderboard.submission import Submission
from vlmrobust.leaderboard.trust.baselines import BaselineSpec, load_baselines

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
