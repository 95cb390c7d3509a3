"""Deprecated import path: moved to :mod:`vlmrobust.leaderboard.site.publish` (issue 38). Its names
resolve here for one minor version and warn on use."""

from vlmrobust.core.deprecation import deprecated_forward

__getattr__ = deprecated_forward(__name__, "vlmrobust.leaderboard.site.publish")
